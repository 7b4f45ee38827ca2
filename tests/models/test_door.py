"""The adapter as the one door: response resolver, frozen(), input gradients, layers,
chunked Jacobians, device resolution, the fitting policy and the training base."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC

from geolearn._utils import resolve_device
from geolearn.models import as_model, fit_or_use, frozen, resolve_response
from geolearn.models._internal import is_prefit


@pytest.fixture(scope="module")
def data():
    return make_classification(60, 5, n_informative=3, random_state=0)


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Dropout(0.5),
                               torch.nn.Linear(8, 3))


# -- response -------------------------------------------------------------------------------

def test_auto_order_is_decision_function_then_clr_then_predict(data):
    X, y = data
    assert resolve_response(LogisticRegression().fit(X, y)) == "decision_function"
    assert resolve_response(RandomForestClassifier(3).fit(X, y)) == "clr_proba"
    assert resolve_response(LinearRegression().fit(X, y)) == "predict"
    assert resolve_response(SVC(probability=True).fit(X, y), "predict_proba") == "predict_proba"


def test_clr_response_recovers_softmax_logits(data):
    """For a softmax model the centred log-probabilities are the logits up to their mean."""
    X, y = data
    y3 = np.arange(len(y)) % 3
    lr = LogisticRegression(max_iter=500).fit(X, y3)
    z = lr.decision_function(X)
    out = as_model(lr, response="clr_proba").forward(X)
    np.testing.assert_allclose(out, z - z.mean(1, keepdims=True), atol=1e-8)


def test_response_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="only class labels"):
        resolve_response(MLPClassifier().fit(X, y), "predict")
    with pytest.raises(ValueError, match="no decision_function"):
        resolve_response(RandomForestClassifier(2).fit(X, y), "decision_function")
    with pytest.raises(ValueError, match="response must be one of"):
        resolve_response(LogisticRegression(), "logits")


# -- frozen ---------------------------------------------------------------------------------

def test_frozen_restores_mixed_modes_and_flags():
    net = _net()
    net[2].eval()  # a dropout the user put in eval mode on purpose
    net[0].weight.requires_grad_(False)
    modes = [m.training for m in net.modules()]
    flags = [p.requires_grad for p in net.parameters()]
    with frozen(net):
        assert not any(m.training for m in net.modules())
        assert not any(p.requires_grad for p in net.parameters())
    assert [m.training for m in net.modules()] == modes
    assert [p.requires_grad for p in net.parameters()] == flags


def test_frozen_restores_after_an_error():
    net = _net()
    with pytest.raises(RuntimeError):
        with frozen(net):
            raise RuntimeError
    assert net.training and all(p.requires_grad for p in net.parameters())


# -- input gradients ------------------------------------------------------------------------

@given(arrays(np.float32, (6, 5), elements=st.floats(-3, 3, width=32)),
       st.lists(st.integers(0, 2), min_size=6, max_size=6), st.sampled_from([1, 2, 6]))
def test_input_gradient_matches_autograd_and_ignores_batching(X, targets, batch_size):
    net = _net()
    m = as_model(net)
    g = m.input_gradient(X, targets=targets, batch_size=batch_size)
    # brute force, one sample at a time
    for i in range(len(X)):
        x = torch.tensor(X[i:i + 1], requires_grad=True)
        with frozen(net):
            net(x)[0, targets[i]].backward()
        np.testing.assert_allclose(g[i], x.grad[0].numpy(), rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in net.parameters())


def test_input_gradient_of_a_loss_on_tensors():
    net = _net()
    x, y = torch.randn(4, 5), torch.tensor([0, 1, 2, 0])
    loss = lambda out, t: torch.nn.functional.cross_entropy(out, t, reduction="sum")  # noqa: E731
    g = as_model(net).input_gradient(x, loss, targets=y)
    assert isinstance(g, torch.Tensor) and g.shape == x.shape
    eps = 1e-3
    e = torch.zeros_like(x)
    e[1, 2] = eps
    with torch.no_grad(), frozen(net):
        fd = (loss(net(x + e), y) - loss(net(x - e), y)) / (2 * eps)
    assert abs(float(fd) - float(g[1, 2])) < 1e-3


def test_input_gradient_refused_for_a_black_box(data):
    X, y = data
    with pytest.raises(TypeError, match="needs gradients"):
        as_model(SVC().fit(X, y)).input_gradient(X)


# -- layers ---------------------------------------------------------------------------------

def test_layers_by_name_index_or_callable():
    net = _net()
    m = as_model(net)
    X = np.random.RandomState(0).randn(7, 5).astype(np.float32)
    by_name = m.features(X, layer="1")
    np.testing.assert_array_equal(m.features(X, layer=1), by_name)
    np.testing.assert_array_equal(m.features(X, layer=lambda mod: mod[1]), by_name)
    np.testing.assert_array_equal(m.features(X, layer=-1), m.forward(X))
    for bad in (4, "nope", lambda mod: torch.nn.Linear(1, 1), True):
        with pytest.raises(ValueError, match="is not a layer"):
            m.features(X, layer=bad)


# -- Jacobians ------------------------------------------------------------------------------

def test_jacobian_chunks_to_the_memory_bound_with_identical_results():
    net = _net()
    m = as_model(net)
    X = np.random.RandomState(1).randn(9, 5).astype(np.float32)
    full = m.jacobian(X)
    per_sample = 3 * 5 * 4  # bytes of one sample's Jacobian
    # float32 matrix products may round differently with the batch size
    np.testing.assert_allclose(m.jacobian(X, max_memory=per_sample), full, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(m.jacobian(X, max_memory=2 * per_sample + 1), full, rtol=1e-5,
                               atol=1e-7)
    m64 = as_model(_net().double())
    np.testing.assert_allclose(m64.jacobian(X, max_memory=per_sample * 2), m64.jacobian(X),
                               rtol=1e-12, atol=1e-14)
    # and it is the Jacobian: a linear net's is its weight
    lin = torch.nn.Linear(5, 3)
    J = as_model(lin).jacobian(X, max_memory=1)
    np.testing.assert_allclose(J, np.broadcast_to(lin.weight.detach().numpy(), J.shape))


# -- device ---------------------------------------------------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a CPU-only machine")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(ValueError, match="device='cuda' but CUDA is not available"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="my_device='cuda:0'"):
        resolve_device("cuda:0", name="my_device")


def test_bad_device_string_is_named():
    with pytest.raises(ValueError, match="device must be 'auto'"):
        resolve_device("gpu please")


# -- fitting policy -------------------------------------------------------------------------

def test_fitting_policy(data):
    X, y = data
    unfitted = LogisticRegression()
    fitted = fit_or_use(unfitted, X, y)
    assert fitted is not unfitted and not is_prefit(unfitted) and is_prefit(fitted)
    assert fit_or_use(fitted, X[:10], y[:10]) is fitted  # prefit: never refitted
    frozen_est = FrozenEstimator(fitted)
    assert fit_or_use(frozen_est, X, y) is frozen_est
    # FrozenEstimator survives clone, a plain fitted model does not
    assert is_prefit(clone(frozen_est)) and not is_prefit(clone(fitted))
    net = _net()
    assert fit_or_use(net, X, y) is net
    with pytest.raises(ValueError, match="model is None"):
        fit_or_use(None, X, y)


def test_a_model_unfitted_by_clone_says_how_to_keep_it():
    """Defect: a fitted model that GridSearchCV's clone unfitted failed with a bare sklearn error."""
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    X, y = np.random.RandomState(0).randn(30, 3), np.arange(30) % 2
    fitted = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"y.*FrozenEstimator\(model\)"):
        fit_or_use(clone(fitted), X)  # a wrapper fitted without y: the clone cannot refit
    assert fit_or_use(clone(FrozenEstimator(fitted)), X) is not None
