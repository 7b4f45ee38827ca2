"""PullbackMetric's first-order Jacobians come from the one adapter, with its memory bound."""

import warnings

import numpy as np
import pytest
import torch
from torch import nn

from geolearn.models import ModelAdapter, as_model
from geolearn.riemannian import (
    PullbackMetric,
    RiemannianFeatureGeometry,
    _metrics,  # its iter_batches is patched to see the chunks
)

F64 = torch.float64


def _mlp(d=3, m=5, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 7), nn.Tanh(), nn.Linear(7, m), nn.Sigmoid()).double()


@pytest.fixture
def calls(monkeypatch):
    """Every ModelAdapter.jacobian call, with its keywords (the real method still runs)."""
    seen = []
    real = ModelAdapter.jacobian

    def spy(self, X, *args, **kwargs):
        seen.append({"n": len(X), "dtype": X.dtype, **kwargs})
        return real(self, X, *args, **kwargs)

    monkeypatch.setattr(ModelAdapter, "jacobian", spy)
    return seen


@pytest.mark.parametrize("d, m", [(3, 5), (5, 3), (4, 4)])
def test_pullback_jacobians_go_through_the_adapter(calls, d, m):
    net = _mlp(d, m)
    X = torch.randn(6, d, dtype=F64)
    for mode, resolved in [("auto", "fwd" if d <= m else "rev"), ("fwd", "fwd"), ("rev", "rev")]:
        calls.clear()
        pm = PullbackMetric(net, jacobian=mode, batch_size=4, max_memory=12345)
        J = pm.jacobian(X)
        # the engine's chunks of at most batch_size points, each one adapter call
        assert [(c["n"], c["dtype"], c["mode"], c["max_memory"]) for c in calls] == [
            (4, F64, resolved, 12345), (2, F64, resolved, 12345)]
        assert isinstance(J, torch.Tensor) and J.dtype == F64 and J.shape == (6, m, d)
        torch.testing.assert_close(J, torch.as_tensor(as_model(net).jacobian(
            X.numpy(), mode=resolved)), rtol=0, atol=0)
        calls.clear()
        pm.metric(X), pm.log_volume(X), pm.metric_eigvals(X)
        assert len(calls) == 6
    calls.clear()
    PullbackMetric(net, jacobian="fd").metric(X)  # the engine's own finite differences
    with pytest.warns(UserWarning, match="looping"):
        PullbackMetric(lambda Z: Z * 2 if float(Z.sum()) > 0 else Z, scale="none").jacobian(X)
    PullbackMetric(net, vectorize=False).jacobian(X)  # the loop never tries vmap
    assert len(calls) == 1  # only the untraceable map's attempt


def test_the_estimator_passes_max_memory_to_the_adapter(calls):
    X = np.random.RandomState(0).randn(5, 3)
    geo = RiemannianFeatureGeometry(_mlp(), max_memory=4096, batch_size=3).fit(X)
    calls.clear()
    geo.metric_tensor(X)
    assert [(c["n"], c["mode"], c["max_memory"]) for c in calls] == [(3, "fwd", 4096),
                                                                      (2, "fwd", 4096)]


def test_a_tiny_max_memory_gives_the_same_metric(monkeypatch):
    net = _mlp(3, 5)
    X = torch.randn(9, 3, dtype=F64)
    ref = PullbackMetric(net)
    chunks = []
    iter_batches = _metrics.iter_batches
    monkeypatch.setattr(_metrics, "iter_batches",
                        lambda n, size: chunks.append(size) or iter_batches(n, size))
    # one point's Jacobian (5 x 3) three times, plus 3 tangents of 12 saved intermediates
    per_point = 3 * 5 * 3 * 8 + 3 * 12 * 8
    for max_memory, size in ((1, 1), (2 * per_point, 2)):  # one point per chunk, then two
        tiny = PullbackMetric(net, max_memory=max_memory)
        with warnings.catch_warnings():  # max_memory=1: one point at a time, with a warning
            warnings.filterwarnings("ignore", "the Jacobian of one point", UserWarning)
            for name in ("jacobian", "metric", "log_volume", "ricci_scalar"):
                chunks.clear()
                torch.testing.assert_close(getattr(tiny, name)(X), getattr(ref, name)(X),
                                           rtol=1e-13, atol=1e-15)
                assert size in chunks
    Xn = X.numpy()
    geo = RiemannianFeatureGeometry(net, quantities=("log_volume", "ricci_scalar")).fit(Xn)
    tiny = RiemannianFeatureGeometry(net, quantities=("log_volume", "ricci_scalar"),
                                     max_memory=1).fit(Xn)
    with pytest.warns(UserWarning, match="one point at a time"):
        np.testing.assert_allclose(tiny.metric_tensor(Xn), geo.metric_tensor(Xn), rtol=1e-13,
                                   atol=1e-15)
        np.testing.assert_allclose(tiny.transform(Xn), geo.transform(Xn), rtol=1e-12,
                                   atol=1e-14)


def test_a_module_map_is_evaluated_frozen_and_its_modes_restored():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Dropout(0.5), nn.Linear(6, 3),
                        nn.Tanh()).double()
    net.train()
    X = torch.randn(4, 2, dtype=F64)
    pm = PullbackMetric(net, scale="none")
    J, H, R = pm.jacobian(X), pm.hessian(X), pm.ricci_scalar(X, method="christoffel")
    assert net.training and all(p.requires_grad for p in net.parameters())
    eval_pm = PullbackMetric(net.eval(), scale="none")
    torch.testing.assert_close(J, eval_pm.jacobian(X), rtol=0, atol=0)
    torch.testing.assert_close(H, eval_pm.hessian(X), rtol=0, atol=0)
    torch.testing.assert_close(R, eval_pm.ricci_scalar(X, method="christoffel"), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("conv", [False, True])
def test_the_estimators_batched_reverse_jacobians_equal_the_adapters(calls, dtype, conv):
    # a fitted estimator has checked that its map treats samples independently: its reverse
    # mode is one batched backward pass of the whole chunk, bit for bit the adapter's vmap
    torch.manual_seed(0)
    if conv:
        net = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(48, 4))
    else:
        net = nn.Sequential(nn.Linear(36, 16), nn.ReLU(), nn.Linear(16, 4))
    net = net.to(dtype)
    X = np.random.RandomState(0).rand(7, 36)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # m < d and ReLU: the pseudo-volume warnings
        geo = RiemannianFeatureGeometry(net, image_shape=(1, 6, 6) if conv else None,
                                        dtype=dtype, device=None).fit(X)
        calls.clear()
        J = geo.feature_jacobian(X)
        logv = geo.log_volume_element(X)
    assert not calls  # no vmap over single samples
    reference = as_model(net).jacobian(torch.as_tensor(X, dtype=dtype).reshape(
        7, *((1, 6, 6) if conv else (36,))), mode="rev").reshape(7, 4, 36)
    np.testing.assert_array_equal(J, reference.double().numpy())
    engine = PullbackMetric(geo.feature_map_, dtype=dtype, device=None)  # the adapter's route
    np.testing.assert_array_equal(logv, engine.log_volume(torch.as_tensor(X, dtype=dtype))
                                  .double().numpy())
    assert calls  # the bare engine went through the adapter


def test_the_batched_reverse_jacobian_of_a_constant_map_is_zero():
    X = np.random.RandomState(0).rand(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # m < d: the pseudo-volume warning
        geo = RiemannianFeatureGeometry(lambda Z: torch.zeros(len(Z), 2, dtype=Z.dtype)).fit(X)
        np.testing.assert_array_equal(geo.feature_jacobian(X), np.zeros((4, 2, 5)))
