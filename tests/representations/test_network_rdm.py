"""NetworkRDM: layer RDMs of any model, checked against hand-extracted activations."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.random_projection import SparseRandomProjection
from sklearn.svm import SVC
from skorch import NeuralNetClassifier

from geolearn.models import GradientsUnavailableError, as_model
from geolearn.representations import (
    NetworkRDM,
    categorical_rdm,
    compute_rdm,
    make_rdm_scorer,
)
from geolearn.representations._network_rdm import layer_features
from geolearn.representations._rdm_compare import compare_rdms
from tests.helpers import assert_message
from tests.threads import check_all_equal, model_state, run_in_threads, small_net


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8),
                               torch.nn.Tanh(), torch.nn.Linear(8, 3))


class _CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.drop = torch.nn.Dropout(0.5)
        self.head = torch.nn.Linear(4 * 5 * 5, 3)
        self.unused = torch.nn.Linear(3, 3)

    def forward(self, x):
        h = self.drop(torch.relu(self.bn(self.conv(x))))
        return self.head(h.flatten(1))


def _X(m=20, n=6, seed=0):
    return np.random.default_rng(seed).normal(size=(m, n)).astype(np.float32)


def test_rdms_equal_compute_rdm_of_hand_extracted_features():
    net = _mlp()
    X = _X()
    est = NetworkRDM(net, batch_size=7).fit(X)
    with torch.no_grad():
        x = torch.as_tensor(X)
        by_hand = {"0": net[0](x), "2": net[2](net[1](net[0](x))), "4": net(x)}
    assert est.layer_names_ == ["0", "2", "4"]  # layers=None: the Linear modules, in order
    assert est.n_features_per_layer_ == {"0": 16, "2": 8, "4": 3}
    for name, F in by_hand.items():
        np.testing.assert_allclose(est.rdms_[name], compute_rdm(F.numpy()), atol=1e-12)
        assert est.rdms_[name].dtype == np.float64
    # named layers, any module (a ReLU), another metric
    est = NetworkRDM(net, layers=["3", "1"], metric="euclidean").fit(X)
    with torch.no_grad():
        h1 = net[1](net[0](x))
        h3 = net[3](net[2](h1))
    np.testing.assert_allclose(est.rdms_["1"], compute_rdm(h1.numpy(), "euclidean"), atol=1e-12)
    np.testing.assert_allclose(est.rdms_["3"], compute_rdm(h3.numpy(), "euclidean"), atol=1e-12)
    assert est.layer_names_ == ["3", "1"]


def test_images_flat_or_4d_eval_mode_and_restored_modes():
    net = _CNN()
    net.train()
    net.bn.eval()  # mixed modes must come back as they were
    with torch.no_grad():  # non-trivial running statistics
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
    images = _X(12, 25, seed=1).reshape(12, 1, 5, 5)
    modes = {name: m.training for name, m in net.named_modules()}
    params = {k: v.clone() for k, v in net.state_dict().items()}
    est = NetworkRDM(net, layers=["conv", "bn", "drop", "head"], batch_size=5).fit(images)
    assert {name: m.training for name, m in net.named_modules()} == modes
    for k, v in net.state_dict().items():
        assert torch.equal(v, params[k]), k
    net.eval()
    with torch.no_grad():
        x = torch.as_tensor(images)
        h = net.drop(torch.relu(net.bn(net.conv(x))))
        expected = {"conv": net.conv(x), "bn": net.bn(net.conv(x)), "drop": h,
                    "head": net.head(h.flatten(1))}
    for name, F in expected.items():  # eval mode: dropout off, batch norm on running stats
        np.testing.assert_allclose(est.rdms_[name], compute_rdm(F.flatten(1).numpy()),
                                   atol=1e-10, err_msg=name)
    flat = NetworkRDM(net, layers=["conv", "bn", "drop", "head"], image_shape=(1, 5, 5))
    flat.fit(images.reshape(12, -1))
    for name in expected:
        np.testing.assert_array_equal(flat.rdms_[name], est.rdms_[name])
    assert flat.n_features_per_layer_ == {"conv": 100, "bn": 100, "drop": 100, "head": 3}
    # layers=None: every Conv*d and Linear module the forward pass reaches... and the unused one
    with pytest.raises(ValueError) as exc:
        NetworkRDM(net).fit(images)
    assert_message(exc, "'unused'", "never")


def test_skorch_net_gives_its_module():
    X, y = _X(40), np.arange(40) % 3
    net = NeuralNetClassifier(_mlp(), criterion=torch.nn.CrossEntropyLoss, max_epochs=2,
                              train_split=None, verbose=0).fit(X, y)
    a = NetworkRDM(net).fit(X[:15])
    b = NetworkRDM(net.module_).fit(X[:15])
    for name in b.layer_names_:
        np.testing.assert_array_equal(a.rdms_[name], b.rdms_[name])


def test_rows_are_independent_of_batching_and_order():
    net, X = _mlp(), _X(17)
    a = NetworkRDM(net, batch_size=3).fit(X)
    perm = np.random.default_rng(2).permutation(len(X))
    b = NetworkRDM(net, batch_size=64).fit(X[perm])
    for name in a.layer_names_:
        np.testing.assert_allclose(b.rdms_[name], a.rdms_[name][np.ix_(perm, perm)], atol=1e-6)


def test_max_features_projects_wide_layers_with_a_seeded_projection():
    net, X = _mlp(), _X(30)
    est = NetworkRDM(net, layers=["0", "4"], max_features=5, random_state=3, batch_size=4).fit(X)
    assert est.n_features_per_layer_ == {"0": 16, "4": 3}  # widths before projection
    exact = NetworkRDM(net, layers=["0", "4"]).fit(X)
    # 3 <= 5: not projected (equal up to the float32 rounding of other batch sizes)
    np.testing.assert_allclose(est.rdms_["4"], exact.rdms_["4"], atol=1e-6)
    assert not np.allclose(est.rdms_["0"], exact.rdms_["0"])
    # the batch-wise projection is one SparseRandomProjection of the full feature matrix
    adapter = as_model(net)
    F, width = layer_features(adapter, X, "0", batch_size=64)
    P, _ = layer_features(adapter, X, "0", batch_size=4, max_features=5, seed=11)
    srp = SparseRandomProjection(5, random_state=11).fit(F)
    np.testing.assert_allclose(P, srp.transform(F), rtol=1e-5, atol=1e-6)
    assert width == 16 and P.shape == (30, 5)
    # reproducible; a layer's projection does not depend on the other layers read
    again = NetworkRDM(net, layers=["0"], max_features=5, random_state=3, batch_size=4).fit(X)
    np.testing.assert_array_equal(again.rdms_["0"], est.rdms_["0"])
    other = NetworkRDM(net, layers=["0"], max_features=5, random_state=4).fit(X)
    assert not np.allclose(other.rdms_["0"], est.rdms_["0"])


def test_projection_keeps_the_rdm_close_for_many_components():
    """Johnson-Lindenstrauss: 2,000 components of a 4,096-wide layer keep the RDM."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 4096))
    X = (centres[np.arange(25) % 5] + rng.normal(size=(25, 4096))).astype(np.float32)
    net = torch.nn.Sequential(torch.nn.Identity())
    exact = NetworkRDM(net, layers=["0"]).fit(X).rdms_["0"]
    proj = NetworkRDM(net, layers=["0"], max_features=2000, random_state=0).fit(X).rdms_["0"]
    assert compare_rdms(exact, proj) > 0.98
    assert np.abs(exact - proj).max() < 0.15


def test_compare_and_best_layer():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 8)
    X = (np.eye(3)[y] * 3 + rng.normal(scale=0.5, size=(24, 3))).astype(np.float32)
    net = torch.nn.Sequential(torch.nn.Identity(), _AddNoise(_X(24, 3, seed=5)))
    est = NetworkRDM(net, layers=["1", "0"]).fit(X)
    target = categorical_rdm(y)
    scores = est.compare(target)
    assert list(scores) == ["1", "0"]
    for name, value in scores.items():
        assert value == compare_rdms(est.rdms_[name], target)
    assert est.compare(target, "spearman")["0"] == compare_rdms(est.rdms_["0"], target, "spearman")
    assert scores["0"] > 0.5 > scores["1"]
    assert est.best_layer(target) == ("0", scores["0"])


class _AddNoise(torch.nn.Module):
    """Replaces each row by a fixed noise row (by position in the batch: batch_size >= m)."""

    def __init__(self, noise):
        super().__init__()
        self.noise = torch.as_tensor(noise) * 10

    def forward(self, x):
        return x + self.noise[: len(x)]


def test_pickle_and_clone():
    net, X = _mlp(), _X()
    est = NetworkRDM(net, layers=["2"]).fit(X)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.rdms_["2"], est.rdms_["2"])
    again = clone(est).fit(X)
    np.testing.assert_array_equal(again.rdms_["2"], est.rdms_["2"])


def test_bad_inputs():
    net, X = _mlp(), _X()
    with pytest.raises(ValueError) as exc:
        NetworkRDM(net, layers=["0", "nope"]).fit(X)
    assert_message(exc, "'nope'", "available", "'0'", "'4'")
    with pytest.raises(ValueError) as exc:
        NetworkRDM(_CNN(), image_shape=(1, 4, 5)).fit(_X(5, 25))
    assert_message(exc, "image_shape", "20", "25")
    with pytest.raises(ValueError) as exc:
        NetworkRDM(_CNN(), image_shape=(1, 4, 5)).fit(_X(5, 25).reshape(5, 1, 5, 5))
    assert_message(exc, "image_shape")
    with pytest.raises(ValueError) as exc:
        NetworkRDM(_CNN(), layers=["unused"]).fit(_X(5, 25).reshape(5, 1, 5, 5))
    assert_message(exc, "'unused'", "never")
    with pytest.raises(ValueError, match="at least 3|minimum of 3"):
        NetworkRDM(net).fit(X[:2])
    bad = X.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="(?i)nan"):
        NetworkRDM(net).fit(bad)
    with pytest.raises(ValueError):
        NetworkRDM(net).fit(X[0])
    with pytest.raises(ValueError, match="metric"):
        NetworkRDM(net, metric="manhattan").fit(X)
    # a ReLU layer whose output is zero for a stimulus: the row is named, never a NaN
    relu = torch.nn.Sequential(torch.nn.ReLU())
    Z = np.abs(_X(4, 3)) + 0.1
    Z[2] = -1.0
    with pytest.raises(ValueError) as exc:
        NetworkRDM(relu, layers=["0"]).fit(Z)
    assert_message(exc, "layer '0'", "[2]", "constant")
    with pytest.raises(ValueError, match="Conv1d/Conv2d/Conv3d and Linear"):
        NetworkRDM(relu).fit(Z)
    black_box = SVC().fit(X, np.arange(len(X)) % 2)
    with pytest.raises(GradientsUnavailableError):
        NetworkRDM(black_box).fit(X)
    with pytest.raises(NotFittedError):
        NetworkRDM(net).compare(np.zeros((3, 3)))


def test_layer_rdms_and_scorer_from_threads_match_serial_and_leave_the_model_unchanged():
    net = small_net()
    before = model_state(net)
    X = _X(30)
    target = categorical_rdm(np.arange(30) % 3)
    scorer = make_rdm_scorer(X, target, layer="2")
    calls = [("rdm", lambda: NetworkRDM(net, layers=["1", "4"], batch_size=7).fit(X).rdms_["4"]),
             ("score", lambda: scorer(net))]
    expected = {name: fn() for name, fn in calls}
    check_all_equal(run_in_threads(calls, repeats=8), expected)
    assert model_state(net) == before
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in net.modules())
