"""Fault injection: a model that raises on its k-th call, given to every family that takes one.

For each estimator or function that calls a user's model (a torch module whose ``forward``
raises ``RuntimeError`` on call k, or a prefit scikit-learn black box whose
``predict_proba`` does), and for k = the first and the last call a clean run makes:

- the model's error propagates (it is not swallowed, retried or turned into NaN);
- a fresh estimator whose ``fit`` failed is unfitted (``check_is_fitted`` raises), and a
  fitted one whose refit failed is either unfitted or keeps its previous results exactly;
  one whose method failed (``transform``, ``stability``, ...) still gives its results;
- the user's model comes back with every submodule's ``training`` flag and every
  parameter's ``requires_grad`` as they were (a mixed state: train mode, one layer in eval
  mode, one parameter frozen).
"""

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNetClassifier
from torch import nn

from geolearn.adversarial import (
    ManifoldAdversarialClassifier,
    carlini_wagner_l2,
    fgsm,
    patch_attack,
    pgd,
)
from geolearn.diffeo import DiffeoStability, relative_stability, subspace_relative_stability
from geolearn.invariance import (
    distribution_invariance,
    integrated_gradients,
    jacobian_sigma_max,
    logit_invariance,
    normalized_logit_invariance,
    saliency_invariance,
    saliency_map,
)
from geolearn.manifold import OnManifoldPGD
from geolearn.polytopes import LocalLinearClustering, LocalLinearMap, ReLUPolytopes, local_rows
from geolearn.representations import (
    CanonicalAdversarialDetector,
    NetworkRDM,
    RDMRegularizedClassifier,
    TorchEmbedder,
    categorical_rdm,
    cross_model_detection,
    make_rdm_scorer,
)
from geolearn.riemannian import PullbackMetric, RiemannianFeatureGeometry
from tests.threads import model_state

#: The fault's schedule, global so that clones and deep copies of a model share it.
FAULT = {"calls": 0, "at": None}


def _count_and_maybe_raise():
    FAULT["calls"] += 1
    if FAULT["calls"] == FAULT["at"]:
        raise RuntimeError("injected fault")


class FaultySequential(nn.Sequential):
    """An ``nn.Sequential`` whose ``forward`` raises on call ``FAULT["at"]``."""

    def forward(self, x):
        _count_and_maybe_raise()
        return super().forward(x)


class FaultyProba(ClassifierMixin, BaseEstimator):
    """A prefit black box (no gradients) whose ``predict_proba`` raises on call ``FAULT["at"]``."""

    def __init__(self, inner=None):
        self.inner = inner

    def fit(self, X, y):
        self.inner_ = LogisticRegression(max_iter=500).fit(X, y)
        self.classes_ = self.inner_.classes_
        return self

    def predict_proba(self, X):
        _count_and_maybe_raise()
        return self.inner_.predict_proba(X)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(1)]


class FaultyDetector(FaultyProba):
    """A detector template whose ``fit`` and ``decision_function`` raise on call ``FAULT["at"]``."""

    def fit(self, X, y):
        _count_and_maybe_raise()
        return super().fit(X, y)

    def decision_function(self, X):
        _count_and_maybe_raise()
        return self.inner_.decision_function(X)


def _mixed(net):
    """Train mode, one layer in eval mode, one parameter frozen: a state to restore exactly."""
    net.train()
    net[-2].eval()
    next(net.parameters()).requires_grad_(False)
    return net


def _net(n_in, n_out=3, act=nn.Tanh, width=16, seed=0):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _mixed(FaultySequential(nn.Linear(n_in, width), act(), nn.Dropout(0.2),
                                       nn.Linear(width, n_out)))


rng = np.random.default_rng(0)
IMAGES = rng.random((24, 1, 8, 8)).astype(np.float32)  # diffeo, invariance
FLAT = IMAGES.reshape(24, -1)
LABELS = np.arange(24) % 3
X2 = rng.uniform(-1, 1, (40, 2))  # riemannian, manifold, polytopes
X2f = X2.astype(np.float32)
Y2 = (X2[:, 0] > 0).astype(int)
X6 = rng.random((60, 6)).astype(np.float32)  # representations, adversarial
Y6 = np.arange(60) % 3


def _black_box(X, y):
    FAULT["at"] = None
    return FaultyProba().fit(X.reshape(len(X), -1), y)


def _skorch(module):
    """An unfitted skorch net (the estimator fits it, and the fault comes in its training)."""
    return NeuralNetClassifier(module, max_epochs=3, batch_size=8, train_split=None, verbose=0)


def _image_net():
    return _mixed(FaultySequential(nn.Flatten(), nn.Linear(64, 8), nn.Tanh(), nn.Dropout(0.2),
                                   nn.Linear(8, 3)))


# A case is ("call", make_model, fn(model)): a function of the model; ("fit", make_model,
# build(model) -> unfitted estimator, fit arguments): a fit that calls the model; or
# ("method", make_model, build, fit arguments, fn(estimator)): a fitted estimator's method.
DIFFEO = {"image_shape": (8, 8), "c": 2, "random_state": 0}
CASES = {
    # diffeo
    "DiffeoStability.stability(module)": (
        "method", _image_net, lambda m: DiffeoStability(m, **DIFFEO), (IMAGES,),
        lambda e: e.stability(IMAGES).R),
    "DiffeoStability.fit(unfitted skorch net)": (
        "fit", lambda: _skorch(_image_net()), lambda m: DiffeoStability(m, **DIFFEO),
        (IMAGES, LABELS)),
    "DiffeoStability.stability(black box)": (
        "method", lambda: _black_box(FLAT, LABELS), lambda m: DiffeoStability(m, **DIFFEO),
        (FLAT, LABELS), lambda e: e.stability(FLAT).R),
    "relative_stability(module)": (
        "call", _image_net, lambda m: relative_stability(m, IMAGES, **DIFFEO).R),
    "relative_stability(black box)": (
        "call", lambda: _black_box(FLAT, LABELS),
        lambda m: relative_stability(m, FLAT, **DIFFEO).R),
    "subspace_relative_stability(module)": (
        "call", lambda: _net(6, 3),
        lambda m: subspace_relative_stability(m, X6, 0, random_state=0).R),
    "subspace_relative_stability(black box)": (
        "call", lambda: _black_box(X6, Y6),
        lambda m: subspace_relative_stability(m, X6, 0, random_state=0).R),
    # invariance
    "logit_invariance": ("call", _image_net, lambda m: logit_invariance(m, IMAGES, "rot4")),
    "logit_invariance(black box)": (
        "call", lambda: _black_box(FLAT, LABELS),
        lambda m: logit_invariance(m, FLAT, "rot4", image_shape=(8, 8))),
    "distribution_invariance(black box)": (
        "call", lambda: _black_box(FLAT, LABELS),
        lambda m: distribution_invariance(m, FLAT, "rot4", image_shape=(8, 8))),
    "normalized_logit_invariance": (
        "call", _image_net, lambda m: normalized_logit_invariance(m, IMAGES, "rot4")),
    "saliency_map": ("call", _image_net, lambda m: saliency_map(m, IMAGES, LABELS, steps=4)),
    "distribution_invariance": (
        "call", _image_net, lambda m: distribution_invariance(m, IMAGES, "rot4")),
    "jacobian_sigma_max": ("call", _image_net, lambda m: jacobian_sigma_max(m, IMAGES)),
    "integrated_gradients": (
        "call", _image_net, lambda m: integrated_gradients(m, IMAGES, LABELS, steps=4)),
    "saliency_invariance": (
        "call", _image_net, lambda m: saliency_invariance(m, IMAGES, "rot4", LABELS, steps=4)),
    # riemannian
    "RiemannianFeatureGeometry.fit": (
        "fit", lambda: _net(2, 4).double(),
        lambda m: RiemannianFeatureGeometry(m, quantities=("log_volume",)), (X2,)),
    "RiemannianFeatureGeometry.transform": (
        "method", lambda: _net(2, 4).double(),
        lambda m: RiemannianFeatureGeometry(m, quantities=("log_volume", "ricci_scalar")),
        (X2,), lambda e: e.transform(X2)),
    "PullbackMetric.log_volume": (
        "call", lambda: _net(2, 4).double(),
        lambda m: PullbackMetric(m).log_volume(torch.as_tensor(X2)).numpy()),
    "PullbackMetric.ricci_scalar": (
        "call", lambda: _net(2, 4).double(),
        lambda m: PullbackMetric(m).ricci_scalar(torch.as_tensor(X2[:5])).numpy()),
    # manifold
    "OnManifoldPGD.generate": (
        "method", lambda: _net(2, 2),
        lambda m: OnManifoldPGD(m, tangent="jacobian", intrinsic_dim=1, n_steps=5,
                                cidm_params={"n_eigenpairs": 10}, random_state=0),
        (X2, Y2), lambda e: e.generate(X2[:4], y=Y2[:4]).X_adv),
    "OnManifoldPGD.fit(unfitted skorch net)": (
        "fit", lambda: _skorch(_net(2, 2)),
        lambda m: OnManifoldPGD(m, tangent="jacobian", intrinsic_dim=1, n_steps=5,
                                cidm_params={"n_eigenpairs": 10}, random_state=0), (X2f, Y2)),
    # polytopes
    "ReLUPolytopes.fit(unfitted skorch net)": (
        "fit", lambda: _skorch(_net(2, 2, act=nn.ReLU)), lambda m: ReLUPolytopes(m), (X2f, Y2)),
    "LocalLinearMap.fit": (
        "fit", lambda: _net(2, 2), lambda m: LocalLinearMap(m, _net(2, 2, seed=1), device="cpu"),
        (X2,)),
    "LocalLinearMap.transform": (
        "method", lambda: _net(2, 2),
        lambda m: LocalLinearMap(_net(2, 2, seed=1), m, device="cpu"), (X2,),
        lambda e: e.transform(X2)),
    "LocalLinearClustering.fit": (
        "fit", lambda: _net(2, 2),
        lambda m: LocalLinearClustering(m, n_clusters=2, n_init=1, random_state=0), (X2,)),
    "local_rows": ("call", lambda: _net(2, 2), lambda m: local_rows(m, X2)[0]),
    # representations
    "TorchEmbedder.fit": ("fit", lambda: _net(6, 3), lambda m: TorchEmbedder(m), (X6,)),
    "TorchEmbedder.transform": (
        "method", lambda: _net(6, 3), lambda m: TorchEmbedder(m, batch_size=8), (X6,),
        lambda e: e.transform(X6)),
    "cross_model_detection": (
        "call", lambda: _net(6, 3),
        lambda m: cross_model_detection({"a": m, "b": _net(6, 3, seed=1)}, "a", X6, Y6,
                                        epsilon=0.3, random_state=0).auroc_native),
    "CanonicalAdversarialDetector.fit": (
        "fit", FaultyDetector, lambda m: CanonicalAdversarialDetector(detector=m),
        (X6, Y6 % 2)),
    "CanonicalAdversarialDetector.decision_function": (
        "method", FaultyDetector, lambda m: CanonicalAdversarialDetector(detector=m),
        (X6, Y6 % 2), lambda e: e.decision_function(X6)),
    "NetworkRDM.fit": (
        "call", lambda: _net(6, 3), lambda m: NetworkRDM(m, batch_size=8).fit(X6).rdms_["3"]),
    "make_rdm_scorer": (
        "call", lambda: _net(6, 3),
        lambda m: make_rdm_scorer(X6[:30], categorical_rdm(Y6[:30]), "3")(m, X6, Y6)),
    "RDMRegularizedClassifier.fit": (
        "fit", lambda: _net(6, 3),
        lambda m: RDMRegularizedClassifier(m, rdm_layer="1", rdm_stimuli=X6[:12],
                                           rdm_target=categorical_rdm(Y6[:12]), rdm_batch_size=6,
                                           max_epochs=2, batch_size=16, random_state=0),
        (X6, Y6)),
    # adversarial
    "ManifoldAdversarialClassifier.fit": (
        "fit", lambda: _net(6, 3),
        lambda m: ManifoldAdversarialClassifier(m, adversary="ambient", adv_n_steps=2,
                                                max_epochs=2, batch_size=16, random_state=0),
        (X6, Y6)),
    "fgsm": ("call", lambda: _net(6, 3), lambda m: fgsm(m, X6, Y6, 0.1)),
    "pgd": ("call", lambda: _net(6, 3),
            lambda m: pgd(m, X6, Y6, 0.1, n_steps=3, random_state=0)),
    "carlini_wagner_l2": (
        "call", lambda: _net(6, 3),
        lambda m: carlini_wagner_l2(m, X6[:8], Y6[:8], n_steps=3)[0]),
    "patch_attack": (
        "call", lambda: _net(6, 3),
        lambda m: patch_attack(m, X6, Y6, np.arange(6) < 2, n_steps=3, batch_size=16,
                               random_state=0)),
}


def _outputs(est, X):
    """What a fitted estimator gives (its first output method), with the model behaving."""
    FAULT["at"] = None
    for method in ("transform", "decision_function", "predict"):
        if hasattr(est, method):
            return np.asarray(getattr(est, method)(X))
    raise AssertionError(f"{type(est).__name__} has no output method")


def _state(model):
    return model_state(model.module if isinstance(model, NeuralNetClassifier) else model)


def _counted(fn, repeat=False):
    """``fn()`` with the model behaving, and how many times it called the model.

    ``repeat``: count a second run (a fitted estimator may cache what its first call found).
    """
    FAULT.update(calls=0, at=None)
    out = fn()
    if repeat:
        FAULT["calls"] = 0
        fn()
    assert FAULT["calls"] > 0, "the case never calls the model: it tests nothing"
    return out, FAULT["calls"]


def _raises(fn, at):
    FAULT.update(calls=0, at=at)
    with pytest.raises(RuntimeError, match="injected fault"):
        fn()
    FAULT["at"] = None


# tiny probe sets, Tanh nets' tangent maps, 3-step C&W: warnings beside the point here
@pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning",
                            "ignore:network contains Tanh", "ignore:carlini_wagner_l2")
@pytest.mark.parametrize("k", ["first", "last"])
@pytest.mark.parametrize("name", CASES)
def test_a_fault_of_the_model_propagates_and_leaves_everything_as_it_was(name, k):
    kind, make, *rest = CASES[name]
    FAULT.update(calls=0, at=None)
    model = make()
    before = None if isinstance(model, FaultyProba) else _state(model)
    if kind == "call":
        fn, = rest
        expected, n = _counted(lambda: fn(model), repeat=True)
        _raises(lambda: fn(model), 1 if k == "first" else n)
        np.testing.assert_array_equal(np.asarray(fn(model)), np.asarray(expected))
    elif kind == "method":
        build, args, fn = rest
        est = build(model).fit(*args)
        expected, n = _counted(lambda: fn(est), repeat=True)
        _raises(lambda: fn(est), 1 if k == "first" else n)
        np.testing.assert_array_equal(fn(est), expected)  # the estimator is untouched
    else:
        build, args = rest
        X = args[0]
        est, n = _counted(lambda: build(model).fit(*args))
        expected = _outputs(est, X)
        at = 1 if k == "first" else n
        fresh = build(model)
        _raises(lambda: fresh.fit(*args), at)
        with pytest.raises(NotFittedError):
            check_is_fitted(fresh)
        # a failed refit (rows reversed) leaves it unfitted, or as the previous fit left it
        _raises(lambda: est.fit(*(a[::-1] for a in args)), at)
        try:
            check_is_fitted(est)
        except NotFittedError:
            pass
        else:
            np.testing.assert_array_equal(_outputs(est, X), expected)
    if before is not None:
        assert _state(model) == before, "the model's modes or grad flags were not restored"
