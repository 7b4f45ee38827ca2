"""GeometryTracker: the right epochs, the eval-mode model, and a model left as it was."""

import copy

import numpy as np
import pytest
import torch
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback

from geolearn.inspection import MEASURES, GeometryTracker
from geolearn.inspection._measures import evaluate_measure
from geolearn.models import as_model
from geolearn.polytopes import ReLUPolytopes, segment_region_counts
from tests.torch_estimators import IDS, TORCH_ESTIMATORS, data


def _data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int64)


def _net(module, callbacks, max_epochs=4):
    return NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss, max_epochs=max_epochs,
                               lr=0.1, batch_size=16, train_split=None, verbose=0,
                               callbacks=callbacks)


def _dropout_mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.Tanh(), torch.nn.Dropout(0.5),
                               torch.nn.Linear(32, 2))


class _SaveModule(Callback):
    """Keeps a copy of the module at the end of every epoch (runs after the tracker)."""

    def initialize(self):
        self.modules_ = {}
        return self

    def on_epoch_end(self, net, **kwargs):
        self.modules_[net.history[-1, "epoch"]] = copy.deepcopy(net.module_)


def test_measures_recorded_every_other_epoch_from_the_eval_mode_model():
    """every=2 records at epochs 2 and 4 only, the value of the eval-mode copy saved then."""
    X, y = _data()
    tracker = GeometryTracker(["log_volume", "region_density"], X[:32], every=2)
    saver = _SaveModule()
    module = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                                 torch.nn.Linear(32, 2))
    net = _net(module, [tracker, saver], max_epochs=5).fit(X, y)
    assert [e for e in range(1, 6) if "log_volume" in net.history[e - 1]] == [2, 4]
    assert [e for e in range(1, 6) if "region_density" in net.history[e - 1]] == [2, 4]
    for epoch in (2, 4):
        saved = saver.modules_[epoch].eval()
        for name in ("log_volume", "region_density"):
            expected, _ = evaluate_measure(name, MEASURES[name], saved, X[:32])
            assert net.history[epoch - 1, name] == pytest.approx(expected, rel=1e-6)
    # the values change between epochs: a measure of a stale copy would not
    assert net.history[1, "log_volume"] != net.history[3, "log_volume"]


def test_measure_sees_an_eval_mode_model_during_training():
    """A dropout net in train mode is measured frozen: equal to its eval-mode output."""
    X, y = _data()
    seen = []

    def mean_output(model, X, y=None):
        module = as_model(model).module
        seen.append((module.training, any(p.requires_grad for p in module.parameters())))
        with torch.no_grad():
            return float(module(torch.as_tensor(X)).mean())

    saver = _SaveModule()
    net = _net(_dropout_mlp(), [GeometryTracker(mean_output, X[:40]), saver],
               max_epochs=3).fit(X, y)
    assert seen == [(False, False)] * 3
    for epoch in (1, 2, 3):
        with torch.no_grad():
            expected = float(saver.modules_[epoch].eval()(torch.as_tensor(X[:40])).mean())
        assert net.history[epoch - 1, "mean_output"] == pytest.approx(expected, rel=1e-6)


def test_training_is_unchanged_by_the_tracker():
    """Same parameters, BatchNorm buffers and losses with and without the tracker (dropout,
    batch norm: the tracker draws nothing from the global generators and restores train mode)."""
    X, y = _data()

    def module():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.BatchNorm1d(16),
                                   torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 2))

    def randomised(model, X, y=None, random_state=None):
        torch.rand(3)  # draws from the global generator: it must be restored
        np.random.rand(3)
        return 0.0

    tracker = GeometryTracker({"log_volume": "log_volume", "r": randomised,
                               "density": "region_density"}, X[:24])
    torch.manual_seed(1)
    plain = _net(module(), []).fit(X, y)
    torch.manual_seed(1)
    tracked = _net(module(), [tracker]).fit(X, y)
    assert tracked.module_.training
    assert all(p.requires_grad for p in tracked.module_.parameters())
    for (k, a), (_, b) in zip(plain.module_.state_dict().items(),
                              tracked.module_.state_dict().items()):
        assert torch.equal(a, b), k
    assert plain.history[:, "train_loss"] == tracked.history[:, "train_loss"]
    assert len(tracked.history[:, "density"]) == 4


def test_measure_restores_mode_parameters_and_buffers():
    """Called directly on a train-mode module with batch norm, the tracker changes nothing."""
    X, _ = _data(32)
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.BatchNorm1d(8), torch.nn.Tanh(),
                                 torch.nn.Linear(8, 3))
    module(torch.as_tensor(X))  # running statistics away from their initial values
    module[0].weight.requires_grad_(False)  # a mixed state must come back as it was
    before = copy.deepcopy(module.state_dict())
    values = GeometryTracker(["log_volume", "rdm_similarity"], X,
                             y=np.arange(32) % 2).initialize().measure(module)
    assert set(values) == {"log_volume", "rdm_similarity"}
    assert module.training and module[1].training
    assert [p.requires_grad for p in module.parameters()] == [False, True, True, True, True, True]
    for k, v in module.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_max_probes_bounds_the_probe_set():
    X, y = _data(300)
    tracker = GeometryTracker("log_volume", X, y, max_probes=50, random_state=3).initialize()
    assert tracker.X_.shape == (50, 2) and tracker.y_.shape == (50,)
    rows = {tuple(r) for r in X}
    assert all(tuple(r) in rows for r in tracker.X_)
    again = GeometryTracker("log_volume", X, y, max_probes=50, random_state=3).initialize()
    np.testing.assert_array_equal(tracker.X_, again.X_)


def test_unknown_measure_names_the_registered_ones():
    X, _ = _data(8)
    with pytest.raises(ValueError, match="unknown measure 'curvature'.*log_volume.*"
                                         "region_density"):
        GeometryTracker("curvature", X).initialize()
    with pytest.raises(ValueError, match="measure_params names"):
        GeometryTracker("log_volume", X, measure_params={"region_density": {}}).initialize()
    with pytest.raises(ValueError, match="every"):
        GeometryTracker("log_volume", X, every=0).initialize()
    with pytest.raises(TypeError, match="must be a registered name or a callable"):
        GeometryTracker({"a": 3}, X).initialize()


def test_non_finite_measure_is_an_error():
    X, y = _data(16)

    def broken(model, X, y=None):
        return float("nan")

    with pytest.raises(ValueError, match="measure 'broken' returned nan"):
        _net(_dropout_mlp(), [GeometryTracker(broken, X)], max_epochs=1).fit(X, y)


@pytest.mark.parametrize(("estimator", "kind"), TORCH_ESTIMATORS, ids=IDS)
def test_tracker_is_a_callback_of_every_gradient_trained_estimator(estimator, kind):
    """Every geolearn SkorchTrainingMixin estimator takes it through callbacks=: a column of
    history_ at every epoch, measured on the frozen module."""
    X, y = data(kind)

    def weight_norm(model, X, y=None):
        module = as_model(model).module
        assert not module.training
        return float(sum(p.detach().norm() for p in module.parameters()))

    est = copy.deepcopy(estimator).set_params(
        callbacks=[GeometryTracker(weight_norm, np.zeros((4, 1)))])
    est.fit(X, y)
    assert len(est.history_) > 0
    assert all(np.isfinite(row["weight_norm"]) for row in est.history_)


def test_region_density_counts_the_exact_regions_of_its_segments():
    """The measure's value, from the segments its docstring names: crossings over total length."""
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8),
                                 torch.nn.ReLU(), torch.nn.Linear(8, 3))
    X = np.random.default_rng(0).normal(size=(40, 5))
    rng = np.random.RandomState(7)
    start = rng.randint(40, size=32)
    stop = (start + rng.randint(1, 40, size=32)) % 40
    poly = ReLUPolytopes(module, bounds=None).fit(X)
    crossings = sum(poly.segment_regions(X[a], X[b]).n_regions - 1 for a, b in zip(start, stop))
    length = np.linalg.norm(X[stop] - X[start], axis=1).sum()
    assert crossings > 32
    assert MEASURES["region_density"](module, X, random_state=7) == pytest.approx(
        crossings / length, rel=1e-12)
    # the fitted estimator's counts, which the measure took before
    counts = segment_region_counts(module, X[start], X[stop])
    np.testing.assert_array_equal(counts, poly.segment_region_counts(X[start], X[stop]))


def test_region_density_of_a_conv_relu_net():
    """Conv ReLU nets (max-pooling included) get the measure too, on images folded by
    image_shape; before, every conv net was 'not a ReLU net'."""
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                              torch.nn.Flatten(), torch.nn.Linear(32, 3))
    X = np.random.default_rng(0).normal(size=(20, 1, 6, 6))
    rng = np.random.RandomState(0)
    start = rng.randint(20, size=32)
    stop = (start + rng.randint(1, 20, size=32)) % 20
    flat = X.reshape(20, -1)
    poly = ReLUPolytopes(cnn, image_shape=(1, 6, 6)).fit(flat)
    crossings = sum(poly.segment_regions(flat[a], flat[b]).n_regions - 1
                    for a, b in zip(start, stop))
    length = np.linalg.norm(flat[stop] - flat[start], axis=1).sum()
    assert crossings > 32
    assert MEASURES["region_density"](cnn, X, image_shape=(1, 6, 6)) == pytest.approx(
        crossings / length, rel=1e-12)
