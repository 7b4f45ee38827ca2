"""Issue #14 for the polytopes family: models reached through ``geolearn.models`` only.

Regression tests: no model-type switch of its own (``as_model`` once per network and
fit, no deep copy of a float64 module, a float32 one copied once and never cast in
place), the one fitting policy (``fit_or_use``), and a clear error for an absent CUDA.
"""

import copy

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.neural_network import MLPClassifier
from torch import nn

import geolearn.polytopes._local_linear as local_linear_module
import geolearn.polytopes._network as network_module
from geolearn.polytopes import (
    LocalLinearClustering,
    LocalLinearMap,
    ReLUPolytopes,
    as_relu_network,
    local_rows,
)
from tests.test_architecture import ROOT, _model_type_branches, _private_imports

from ._nets import Wrapped, gaussian_net


@pytest.fixture
def as_model_calls(monkeypatch):
    """Every ``as_model`` call the polytopes modules make."""
    calls = []
    for module in (network_module, local_linear_module):
        real = module.as_model
        monkeypatch.setattr(module, "as_model",
                            lambda *a, _real=real, **k: calls.append(a[0]) or _real(*a, **k))
    return calls


def test_polytopes_and_riemannian_reach_models_only_through_the_adapter():
    """Regression: ``as_relu_network`` switched on MLPClassifier/NeuralNet/FrozenEstimator/
    nn.Module itself, and imported ``BinaryProba`` from ``geolearn.models._sklearn``."""
    ours = ("polytopes/", "riemannian/")
    assert [f for f in _model_type_branches(ROOT) if f.startswith(ours)] == []
    assert [f for f, _ in _private_imports() if f.startswith(ours)] == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a torch without CUDA")
def test_absent_cuda_is_a_clear_error_before_any_work(monkeypatch):
    """Regression: ``device="cuda"`` on a CPU-only torch raised torch's raw AssertionError
    (``local_rows``), or a ValueError only after fitting the network (``ReLUPolytopes``)."""
    net = gaussian_net((3, 5, 2), seed=0)
    X = np.random.default_rng(0).uniform(-1, 1, (20, 3))
    y = (X[:, 0] > 0).astype(int)
    monkeypatch.setattr(network_module, "fit_or_use",
                        lambda *a, **k: pytest.fail("the network was fitted before the error"))
    unfitted = MLPClassifier((4,), max_iter=5)
    for est in (ReLUPolytopes(net, device="cuda"), ReLUPolytopes(unfitted, device="cuda"),
                LocalLinearMap(unfitted, net, device="cuda:0"),
                LocalLinearClustering(unfitted, n_clusters=2, device="cuda")):
        with pytest.raises(ValueError, match="CUDA is not available"):
            est.fit(X, y)
    for network in (net, Wrapped(net)):
        with pytest.raises(ValueError, match="CUDA is not available"):
            local_rows(network, X, device="cuda")


def test_one_adapter_per_network_and_fit(as_model_calls):
    """Regression: ``local_rows`` re-read (and deep-copied) each network at every call."""
    net = gaussian_net((3, 6, 2), seed=0)
    X = np.random.default_rng(0).uniform(-1, 1, (30, 3))
    llm = LocalLinearMap(net, Wrapped(gaussian_net((3, 5, 2), seed=1))).fit(X)
    llm.transform(X)
    llm.coefficient_r2(X)
    # source: as_relu_network (1 call); target: as_relu_network refuses it, autograd (1 call)
    assert len(as_model_calls) == 3
    as_model_calls.clear()
    as_relu_network(FrozenEstimator(MLPClassifier((3,), max_iter=300, random_state=0)
                                     .fit(X, (X[:, 0] > 0).astype(int))))
    assert len(as_model_calls) == 1


def test_float64_module_is_not_copied_and_float32_copied_once(monkeypatch):
    """Regression: the autograd route deep-copied every module to make it float64."""
    copies = []
    real = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: copies.append(a[0]) or real(*a, **k))
    net = gaussian_net((4, 6, 3), seed=0)
    X = np.random.default_rng(0).normal(size=(10, 4))
    W64, b64 = local_rows(Wrapped(net), X)
    assert copies == []
    net32 = Wrapped(gaussian_net((4, 6, 3), seed=0).float()).train()
    W32, b32 = local_rows(net32, X)
    assert len(copies) == 1
    assert next(net32.parameters()).dtype == torch.float32 and net32.training
    np.testing.assert_allclose(W32, W64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b32, b64, rtol=1e-6, atol=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fitting_policy():
    """Unfitted estimators are fitted by ``fit`` on ``(X, y)`` as given; prefit ones and
    ``FrozenEstimator`` (which survives ``clone``) are used as they are."""
    X = np.random.default_rng(0).uniform(-1, 1, (60, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    mlp = MLPClassifier((5,), max_iter=50, random_state=0)
    fitted = ReLUPolytopes(mlp).fit(X, y)
    assert not hasattr(mlp, "coefs_")
    prefit = clone(mlp).fit(X, y)
    refit = clone(ReLUPolytopes(FrozenEstimator(prefit))).fit(X)  # no y: not refitted
    for a, b in zip(refit.network_.weights, as_relu_network(prefit).weights):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(refit.network_.weights[0], fitted.network_.weights[0])
    np.testing.assert_array_equal(refit.network_.classes, [0, 1])
    llc = LocalLinearClustering(FrozenEstimator(prefit), n_clusters=2, random_state=0).fit(X)
    assert llc.network_.estimator is prefit
    np.testing.assert_array_equal(llc.classes_, [0, 1])


def test_skorch_net_is_fitted_on_the_data_as_given():
    """An unfitted skorch net is fitted on X as passed (float32 for a float32 module)."""
    from skorch import NeuralNetClassifier

    X = np.random.default_rng(0).uniform(-1, 1, (40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    torch.manual_seed(0)
    net = NeuralNetClassifier(nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 2),
                                            nn.Softmax(dim=1)), max_epochs=2, verbose=0,
                              train_split=None)
    est = ReLUPolytopes(net).fit(X, y)
    assert not getattr(net, "initialized_", False)
    assert est.layer_sizes_ == (3, 6, 2) and est.output_activation_ == "softmax"
    np.testing.assert_array_equal(as_relu_network(net.fit(X, y)).classes, [0, 1])


@settings(max_examples=20, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 8), st.just(4)),
              elements=st.floats(-5, 5, allow_subnormal=False)))
def test_autograd_rows_of_any_dtype_reproduce_the_network(X):
    """``W(x) x + b(x) = G(x)`` through the adapter's Jacobians, float32 modules included."""
    net = gaussian_net((4, 6, 5, 3), seed=2)
    for module, rtol in ((Wrapped(net), 1e-9), (Wrapped(copy.deepcopy(net).float()), 1e-4)):
        W, b = local_rows(module, X)
        G = net(torch.as_tensor(X)).detach().numpy()
        np.testing.assert_allclose(np.einsum("nom,nm->no", W, X) + b, G, rtol=rtol,
                                   atol=rtol * (1 + np.abs(G).max()))
