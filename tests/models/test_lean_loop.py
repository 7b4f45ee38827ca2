"""LeanLoopMixin trains exactly as skorch's own loop: the same batches, draws, weights, history."""

import numpy as np
import pytest
import torch
from skorch import NeuralNet
from skorch.callbacks import Callback
from torch.utils.data import DataLoader

from geolearn._utils import TensorBatches, TensorDataset, collate_batch
from geolearn.generative import GridVAE
from geolearn.invariance import InvariantClassifier
from geolearn.models._training import LeanLoopMixin
from geolearn.subspaces import SVBF, SVBFNetClassifier, _adam

#: what LeanLoopMixin overrides; skorch's own versions give skorch's loop back
LEAN_METHODS = ("get_iterator", "run_single_epoch", "train_step", "_set_training", "notify")


def skorchs_loop(net_class):
    """``net_class`` with skorch's own loop (DataLoader, closure, every notification)."""
    return type(f"Skorch{net_class.__name__}", (net_class,),
                {name: getattr(NeuralNet, name) for name in LEAN_METHODS})


class BatchCounter(Callback):
    """Counts the batch hooks it hears (it overrides them, so the lean loop calls it)."""

    def initialize(self):
        self.calls_ = {"begin": 0, "end": 0, "grad": 0}
        return self

    def on_batch_begin(self, net, **kwargs):
        self.calls_["begin"] += 1

    def on_batch_end(self, net, **kwargs):
        self.calls_["end"] += 1

    def on_grad_computed(self, net, named_parameters, **kwargs):
        assert all(p.grad is not None for _, p in named_parameters)
        self.calls_["grad"] += 1


def _same_fit(a, b):
    """Bit-identical weights and history (without the clock) of two fitted nets."""
    sa, sb = a.module_.state_dict(), b.module_.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key

    def rows(history):
        return [{k: v for k, v in row.items() if k != "dur"} for row in history]

    assert rows(a.history) == rows(b.history)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 10, 13])
def test_tensor_batches_are_the_dataloaders_batches_from_the_same_draws(shuffle, drop_last,
                                                                        batch_size):
    ds = TensorDataset(torch.arange(20.0).reshape(10, 2), torch.arange(10),
                       torch.linspace(0.5, 1.0, 10))

    def epochs(iterator):
        torch.manual_seed(0)
        batches = [batch for _ in range(2) for batch in iterator]
        return batches, torch.get_rng_state()

    ours, state = epochs(TensorBatches(ds, batch_size, shuffle=shuffle, drop_last=drop_last))
    loader = DataLoader(ds, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                        collate_fn=collate_batch)
    theirs, loader_state = epochs(loader)
    assert torch.equal(state, loader_state)  # the training noise after it is the same too
    assert len(ours) == len(theirs) == 2 * len(loader)
    assert len(TensorBatches(ds, batch_size, drop_last=drop_last)) == len(loader)
    for (X, (y, w)), (X2, (y2, w2)) in zip(ours, theirs):
        assert torch.equal(X, X2) and torch.equal(y, y2) and torch.equal(w, w2)


def test_only_the_default_loader_of_a_tensor_dataset_is_replaced():
    ds = TensorDataset(torch.zeros(8, 2))

    class Net(LeanLoopMixin, NeuralNet):
        pass

    def iterator(**settings):
        net = Net(torch.nn.Linear(2, 1), criterion=torch.nn.MSELoss, batch_size=4,
                  iterator_train__collate_fn=collate_batch, **settings).initialize()
        return net.get_iterator(ds, training=True)

    assert isinstance(iterator(), TensorBatches)
    assert iterator().batch_size == 4
    assert iterator(iterator_train__batch_size=-1).batch_size == 8
    # settings the whole-batch iterator does not reproduce keep torch's DataLoader
    assert isinstance(iterator(iterator_train__num_workers=0), DataLoader)
    sampler = torch.utils.data.SequentialSampler(ds)
    assert isinstance(iterator(iterator_train__sampler=sampler), DataLoader)


def test_gridvae_trains_as_through_skorchs_loop():
    X = np.random.default_rng(0).random((70, 8))
    counter = BatchCounter()
    kwargs = {"hidden_layer_sizes": (8,), "batch_size": 16, "max_epochs": 3, "random_state": 0}
    lean = GridVAE(callbacks=[("counter", counter)], **kwargs).fit(X)
    plain = GridVAE(net_class=skorchs_loop(GridVAE.net_class), **kwargs).fit(X)
    _same_fit(lean.net_, plain.net_)
    assert isinstance(lean.net_.get_iterator(lean.net_.get_dataset(
        TensorDataset(torch.zeros(4, 8))), training=True), TensorBatches)
    assert counter.calls_ == {"begin": 15, "end": 15, "grad": 15}  # 5 batches, 3 epochs


def test_a_fit_inside_no_grad_still_trains():
    """skorch's closure ran under the optimiser's enable_grad; the closure-free step too."""
    X = np.random.default_rng(0).random((40, 6))
    kwargs = {"hidden_layer_sizes": (8,), "batch_size": 16, "max_epochs": 2, "random_state": 0}
    with torch.no_grad():
        inside = GridVAE(**kwargs).fit(X)
    _same_fit(inside.net_, GridVAE(**kwargs).fit(X).net_)


@pytest.mark.parametrize("params", [{"nu": 1.0}, {"weight_tying": True}])
def test_invariant_classifier_trains_as_through_skorchs_loop(params):
    rng = np.random.default_rng(0)
    X, y = rng.random((60, 6, 6)).astype(np.float32), np.arange(60) % 3
    kwargs = dict(group="rot4", hidden_layer_sizes=(16, 16), batch_size=16, max_epochs=3,
                  random_state=0, **params)
    lean = InvariantClassifier(**kwargs).fit(X, y)
    plain = InvariantClassifier(net_class=skorchs_loop(InvariantClassifier.net_class),
                                **kwargs).fit(X, y)
    _same_fit(lean.net_, plain.net_)


@pytest.mark.parametrize("weighted", [False, True])
def test_skorch_classifier_trains_as_through_skorchs_loop(weighted):
    rng = np.random.default_rng(0)
    X = np.stack([np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(20)])
    y = np.arange(20) % 2
    sample_weight = rng.random(20) if weighted else None
    kwargs = {"n_components": 2, "max_epochs": 3, "batch_size": 8, "random_state": 0}
    lean = SVBFNetClassifier(**kwargs).fit(X, y, sample_weight=sample_weight)
    plain = SVBFNetClassifier(net_class=skorchs_loop(SVBFNetClassifier.net_class),
                              **kwargs).fit(X, y, sample_weight=sample_weight)
    _same_fit(lean.net_, plain.net_)


@pytest.mark.parametrize("weights", [None, "uneven"])
def test_svbf_adam_trains_as_through_skorchs_loop(monkeypatch, weights):
    rng = np.random.default_rng(0)
    X = np.stack([np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(9)])
    sample_weight = None if weights is None else rng.random(9) + 0.5

    def fit():
        est = SVBF(1, solver="adam", init="uniform", n_init=1, max_iter=300, tol=None,
                   random_state=0)
        return est.fit(X, sample_weight=sample_weight)

    lean = fit()
    monkeypatch.setattr(_adam.PenalisedAdam, "net_class",
                        skorchs_loop(_adam.PenalisedAdam.net_class))
    plain = fit()
    assert np.array_equal(lean.basis_, plain.basis_)
    assert lean.objective_curve_ == plain.objective_curve_
    assert lean.history_[-1, "batches"] == plain.history_[-1, "batches"]
