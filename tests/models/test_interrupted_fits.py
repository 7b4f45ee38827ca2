"""Fits that fail leave no fitted state; an interrupted fit keeps its weights and says so.

Faults are injected by a skorch callback that raises at the end of the second epoch,
through the ``callbacks`` parameter every torch-trained estimator shares.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback, EarlyStopping

from geolearn.disentanglement import DisentangledAttributeAutoencoder
from geolearn.generative import DiffusionDensity, FlowDensity, GridVAE, VAEClassifier, VAEGenerator
from geolearn.meta_learning import MetaManifoldAutoencoder
from geolearn.models import TrainingInterruptedWarning
from geolearn.subspaces import SVBFNetClassifier
from geolearn.subspaces._net import SVBFNet
from tests.torch_estimators import TORCH_ESTIMATORS, data

X = np.random.default_rng(0).random((40, 6)).astype(np.float32)
y = np.arange(40) % 2

ESTIMATORS = {
    "GridVAE": lambda cb: GridVAE(hidden_layer_sizes=(8,), max_epochs=5, callbacks=cb,
                                  device="cpu"),
    "VAEClassifier": lambda cb: VAEClassifier(hidden_layer_sizes=(8,), max_epochs=5, callbacks=cb,
                                              device="cpu"),
    "FlowDensity": lambda cb: FlowDensity(hidden_layer_sizes=(8,), n_layers=2, max_epochs=5,
                                          callbacks=cb, device="cpu"),
    "VAEGenerator": lambda cb: VAEGenerator(hidden_layer_sizes=(8,), max_epochs=5, callbacks=cb,
                                            device="cpu"),
    "MetaManifoldAutoencoder": lambda cb: MetaManifoldAutoencoder(
        hidden_layer_sizes=(8,), max_epochs=10, log_every=2, batch_size=4, callbacks=cb, device="cpu"),
    "DisentangledAttributeAutoencoder": lambda cb: DisentangledAttributeAutoencoder(
        image_shape=None, n_latent=4, attribute_dims=(2, 2), max_epochs=5, batch_size=8,
        callbacks=cb, device="cpu"),
}


class RaiseAt(Callback):
    """Raise ``exc`` at the end of epoch ``epoch`` (1-based)."""

    def __init__(self, exc, epoch=2):
        self.exc = exc
        self.epoch = epoch

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == self.epoch:
            raise self.exc


def _fit(est):
    return est.fit(X, y) if isinstance(est, VAEClassifier) else est.fit(X)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_fit_that_fails_leaves_the_estimator_unfitted(name):
    est = ESTIMATORS[name]([RaiseAt(RuntimeError("injected fault"))])
    with pytest.raises(RuntimeError, match="injected fault"):
        _fit(est)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    # a fitted estimator whose refit fails is unfitted too, not half old, half new
    est = _fit(ESTIMATORS[name](None))
    est.set_params(callbacks=[RaiseAt(RuntimeError("injected fault"))])
    with pytest.raises(RuntimeError):
        _fit(est)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_an_interrupted_fit_keeps_its_weights_and_says_so(name):
    est = ESTIMATORS[name]([RaiseAt(KeyboardInterrupt())])
    with pytest.warns(TrainingInterruptedWarning, match="interrupted during epoch 3 of 5"):
        _fit(est)
    check_is_fitted(est)
    assert len(est.net_.history) == 2
    _ = est.transform(X) if hasattr(est, "transform") else est.score_samples(X)


def test_early_stopping_is_not_an_interruption():
    import warnings

    est = GridVAE(hidden_layer_sizes=(8,), max_epochs=50, device="cpu", lr=1e-9,
                  callbacks=[EarlyStopping(monitor="train_loss", patience=2, threshold=1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingInterruptedWarning)
        est.fit(X)
    assert len(est.net_.history) < 50


def _boom(*args, **kwargs):
    raise RuntimeError("injected fault")


@pytest.mark.parametrize("where", ["cidm", "svbf"])
def test_fits_without_torch_training_are_transactions_too(where, monkeypatch):
    """CIDM and SVBF failed midway left attributes set; predicting then raised AttributeError."""
    rng = np.random.default_rng(0)
    if where == "cidm":
        from geolearn.manifold import CIDM

        monkeypatch.setattr(CIDM, "_fit_eigenproblem", _boom)  # after the kernel is set
        est, data = CIDM(n_eigenpairs=4), rng.normal(size=(60, 3))
    else:
        from geolearn.subspaces import SVBF

        monkeypatch.setattr(SVBF, "_coordinates", _boom)  # the last step of fit
        est, data = SVBF(n_components=1, input_type="data"), [rng.normal(size=(6, 2))
                                                               for _ in range(5)]
    with pytest.raises(RuntimeError, match="injected fault"):
        est.fit(data)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


def _svbf_net(**kwargs):
    return SVBFNetClassifier(n_components=2, max_epochs=5, batch_size=8, verbose=0,
                             random_state=0, **kwargs)


def _sets():
    rng = np.random.default_rng(0)
    return np.stack([np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(20)]), y[:20]


class _RaiseOnCall(SVBFNet):
    """SVBFNet whose ``forward`` raises on its third call (a fault inside epoch 2)."""

    calls = 0

    def forward(self, X):
        type(self).calls += 1
        if type(self).calls == 3:
            raise RuntimeError("injected fault")
        return super().forward(X)


@pytest.mark.parametrize("fault", ["callback", "module"])
def test_svbf_net_fit_that_fails_leaves_it_unfitted(fault):
    """SVBFNetClassifier (then a skorch net itself) kept half-trained weights passing as fitted."""
    Xs, ys = _sets()
    _RaiseOnCall.calls = 0
    faulty = ({"callbacks": [RaiseAt(RuntimeError("injected fault"))]} if fault == "callback"
              else {"module": _RaiseOnCall})
    est = _svbf_net(**faulty)
    with pytest.raises(RuntimeError, match="injected fault"):
        est.fit(Xs, ys)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    with pytest.raises(NotFittedError):
        est.predict(Xs)
    # a fitted net whose refit fails is unfitted too, and a later fit works from scratch
    est = _svbf_net().fit(Xs, ys)
    _RaiseOnCall.calls = 0
    est.set_params(**faulty)
    with pytest.raises(RuntimeError, match="injected fault"):
        est.fit(Xs, ys)
    with pytest.raises(NotFittedError):
        check_is_fitted(est)
    est.set_params(callbacks=None, module=_svbf_net().module)
    np.testing.assert_array_equal(est.fit(Xs, ys).predict_proba(Xs),
                                  _svbf_net().fit(Xs, ys).predict_proba(Xs))


def test_svbf_net_interrupted_fit_keeps_its_weights_and_says_so():
    Xs, ys = _sets()
    est = _svbf_net(callbacks=[RaiseAt(KeyboardInterrupt())])
    with pytest.warns(TrainingInterruptedWarning, match="SVBFNetClassifier: .* epoch 3 of 5") as w:
        est.fit(Xs, ys)
    assert w[0].filename == __file__  # points at the user's call
    check_is_fitted(est)
    assert len(est.history_) == 2
    assert est.predict_proba(Xs).shape == (20, 2)
    dict(est.net_.callbacks_)["RaiseAt"].epoch = 4  # interrupt the continued training too
    with pytest.warns(TrainingInterruptedWarning, match="epoch 3 of 5"):
        est.set_params(warm_start=True).fit(Xs, ys)
    assert len(est.history_) == 4


class InterruptAt(Callback):
    """Raise KeyboardInterrupt (Ctrl-C) as training batch ``batch`` of epoch ``epoch`` begins."""

    def __init__(self, epoch, batch=1):
        self.epoch = epoch
        self.batch = batch

    def on_batch_begin(self, net, training=False, **kwargs):
        # the net's own on_batch_begin (called first) has opened this batch's history row
        if (training and len(net.history) == self.epoch
                and len(net.history[-1]["batches"]) == self.batch):
            raise KeyboardInterrupt


def _trainable():
    """Every trainable estimator (a SkorchTrainingMixin or a skorch net), with its data."""
    return [(est, data(kind)) for est, kind in TORCH_ESTIMATORS]


TRAINABLE = _trainable()


@pytest.mark.parametrize("est, Xy", TRAINABLE, ids=[type(e).__name__ for e, _ in TRAINABLE])
def test_ctrl_c_in_any_estimator_keeps_completed_epochs_or_fits_nothing(est, Xy):
    """Ctrl-C in epoch 2 raised KeyError: 'train_loss' (9 estimators) and left them fitted.

    Interrupted in epoch 2, the estimator keeps the completed epoch and warns; interrupted
    in epoch 1, nothing was trained: the interrupt propagates and nothing is fitted.
    """
    X, y = Xy
    if isinstance(est, MetaManifoldAutoencoder):
        est = clone(est).set_params(log_every=2)  # an epoch is a block of log_every steps
    first = clone(est).set_params(callbacks=[InterruptAt(epoch=1)])
    with pytest.raises(KeyboardInterrupt):
        first.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(first)
    if isinstance(est, DiffusionDensity):
        return  # trains one epoch of max_iter batches: no epoch 2
    second = clone(est).set_params(callbacks=[InterruptAt(epoch=2)])
    with pytest.warns(TrainingInterruptedWarning, match="interrupted during epoch 2 of"):
        second.fit(X, y)
    check_is_fitted(second)
    if hasattr(second, "history_"):
        assert len(second.history_) == 1  # the completed epoch only
    for method in ("predict", "transform", "score_samples"):
        if hasattr(second, method):
            assert np.all(np.isfinite(getattr(second, method)(X)))
