"""Metric engines: Jacobian modes, scaling, log volume, curvature guards."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geolearn.riemannian import (
    KernelMetric,
    MetricField,
    PullbackMetric,
    ShallowNet,
    ShallowNetworkGeometry,
    analytic,
    rbf_kernel,
)

F64 = torch.float64


def _mlp(d, m, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d, 7), torch.nn.Tanh(),
                               torch.nn.Linear(7, m), torch.nn.Sigmoid()).double()


def _fd(f, X, h=1e-6):
    eye = torch.eye(X.shape[1], dtype=F64)
    return torch.stack([(f(X + h * e) - f(X - h * e)) / (2 * h) for e in eye], -1)


@pytest.mark.parametrize("d, m", [(2, 5), (6, 3)])
def test_jacobian_modes_agree_with_finite_differences(d, m):
    net = _mlp(d, m)
    X = torch.randn(9, d, dtype=F64)
    with torch.no_grad():
        ref = _fd(net, X)
    for mode in ("auto", "fwd", "rev", "fd"):
        J = PullbackMetric(net, jacobian=mode).jacobian(X)
        assert J.shape == (9, m, d)
        np.testing.assert_allclose(J, ref, atol=1e-7)
    loop = PullbackMetric(net, vectorize=False).jacobian(X)
    with pytest.warns(UserWarning, match="more than max_memory=1: computing one point"):
        tiny = PullbackMetric(net, max_memory=1, batch_size=2).jacobian(X)
    np.testing.assert_allclose(loop, ref, atol=1e-7)
    np.testing.assert_allclose(tiny, PullbackMetric(net).jacobian(X), rtol=1e-13, atol=1e-16)


def test_hessian_fd_matches_autodiff_and_warns():
    net = _mlp(2, 4)
    X = torch.randn(3, 2, dtype=F64)
    H = PullbackMetric(net).hessian(X)
    with pytest.warns(UserWarning, match="finite differences"):
        H_fd = PullbackMetric(net, jacobian="fd").hessian(X)
    np.testing.assert_allclose(H_fd, H, atol=1e-5)
    np.testing.assert_allclose(H, H.transpose(2, 3), atol=1e-14)


def test_scale_conventions_are_consistent():
    """log V shifts by (r/2) log s, g scales by s, R by 1/s (spec §2.1)."""
    net = _mlp(2, 6)
    X = torch.randn(5, 2, dtype=F64)
    none, width, custom = (PullbackMetric(net, scale=s) for s in ("none", "width", 0.25))
    np.testing.assert_allclose(width.metric(X), none.metric(X) / 6, rtol=1e-13)
    np.testing.assert_allclose(width.log_volume(X), none.log_volume(X) + math.log(1 / 6),
                               rtol=1e-12)
    np.testing.assert_allclose(custom.ricci_scalar(X), none.ricci_scalar(X) / 0.25, rtol=1e-10)
    np.testing.assert_allclose(width.metric_eigvals(X),
                               torch.linalg.eigvalsh(width.metric(X)).flip(-1), rtol=1e-10)
    np.testing.assert_allclose(width.log_volume(X, method="cholesky"), width.log_volume(X),
                               rtol=1e-12)
    np.testing.assert_allclose(width.log_volume(X),
                               0.5 * torch.linalg.slogdet(width.metric(X))[1], rtol=1e-12)


@pytest.mark.parametrize("scale", [0, -1.0, "unit", float("nan"), True])
def test_bad_scale(scale):
    with pytest.raises(ValueError, match="scale"):
        PullbackMetric(torch.nn.Tanh(), scale=scale)


def test_rank_and_rtol():
    A = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1e-3, 0.0]], dtype=F64)
    pm = PullbackMetric(lambda Z: Z @ A.T, scale="none")
    X = torch.zeros(2, 3, dtype=F64)
    logv, r = pm.log_volume(X, return_rank=True)
    assert r.tolist() == [2, 2]
    np.testing.assert_allclose(logv, math.log(1e-3))
    logv, r = pm.log_volume(X, rtol=1e-2, return_rank=True)
    assert r.tolist() == [1, 1] and float(logv.abs().max()) == 0.0
    np.testing.assert_allclose(pm.log_volume(X, rank=1), [0.0, 0.0])
    with pytest.raises(ValueError, match="rank"):
        pm.log_volume(X, rank=3)
    with pytest.raises(ValueError, match="rtol"):
        pm.log_volume(X, rtol=1.0)
    with pytest.raises(ValueError, match="m >= d"):
        pm.ricci_scalar(X)


def test_curvature_is_nan_on_singular_metrics_with_one_warning():
    pm = PullbackMetric(lambda Z: torch.stack([Z[:, 0] ** 3, Z[:, 1], Z[:, 0] * 0], 1),
                        scale="none")
    X = torch.tensor([[0.0, 0.3], [0.5, 0.3]], dtype=F64)
    with pytest.warns(RuntimeWarning, match="1 of 2 points"):
        R = pm.ricci_scalar(X)
    assert torch.isnan(R[0]) and torch.isfinite(R[1])


def test_non_finite_jacobian_is_an_error():
    pm = PullbackMetric(lambda Z: torch.sqrt(Z.abs()))
    with pytest.raises(ValueError, match="not finite at 1 of 2 points"):
        pm.jacobian(torch.tensor([[0.0, 1.0], [1.0, 1.0]], dtype=F64))


def test_finite_check_is_exact_where_the_sum_overflows():
    # the check sums J first: a sum that overflows on finite entries must not be an error,
    # and an infinity or a NaN among them must still be counted per point
    pm = PullbackMetric(lambda Z: 3e38 * Z, dtype=torch.float32, scale="none")
    J = pm.jacobian(torch.ones(2, 2))
    assert torch.isinf(J.sum()) and torch.isfinite(J).all()
    for bad in (float("inf"), float("nan")):
        values = torch.full((3, 2), 3e38)
        values[1, 0] = bad
        with pytest.raises(ValueError, match="not finite at 1 of 3 points"):
            pm._check_finite(values, "Jacobian")
    with pytest.raises(ValueError, match="NaN or infinity"):
        pm.jacobian(torch.tensor([[3e38, 3e38], [3e38, float("inf")]]))


def test_non_finite_wide_float32_jacobian_is_an_error_of_log_volume():
    # the Gram route of wide float32 Jacobians checks finiteness on J Jᵀ's diagonal
    pm = PullbackMetric(lambda Z: torch.sqrt(Z.abs()).sum(1, keepdim=True), dtype=torch.float32)
    X = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
    for quantity in (pm.log_volume, pm.metric_eigvals):
        with pytest.raises(ValueError, match="not finite at 1 of 2 points"):
            quantity(X)


def test_wide_float32_log_volume_is_as_accurate_as_the_float32_svd():
    """The Gram route of wide float32 Jacobians against the SVD of the same J in float64.

    Dead ReLUs give some points a rank below m, and the layers are scaled to
    spread the singular values: the ranks must agree with the reference, and
    the log volumes err no more than the float32 SVD's, the eigenvalues much less.
    """
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(40, 16), torch.nn.ReLU(), torch.nn.Linear(16, 6))
    with torch.no_grad():
        net[0].bias.sub_(0.8)  # most hidden units dead at each point: ranks below 6
        net[2].weight.mul_(torch.logspace(0, -3, 6)[:, None])
    X = torch.randn(200, 40)
    pm = PullbackMetric(net, scale="none", dtype=torch.float32)
    J = pm.jacobian(X)
    tol = 40 * torch.finfo(torch.float32).eps

    def volumes(sv):
        r = (sv > tol * sv[:, :1]).sum(1)
        keep = torch.arange(6)[None] < r[:, None]
        return torch.where(keep, sv.log(), 0).sum(1).double(), r

    ref_sv = torch.linalg.svdvals(J.double())
    ref, ref_rank = volumes(ref_sv)
    old, _ = volumes(torch.linalg.svdvals(J))
    new, rank = pm.log_volume(X, return_rank=True)
    assert new.dtype == torch.float32 and len(set(rank.tolist())) > 1
    assert torch.equal(rank, ref_rank)
    assert (new.double() - ref).abs().max() <= (old.double() - ref).abs().max()
    # eigenvalues above the rank threshold, relative to the reference
    above = ref_sv > tol * ref_sv[:, :1]
    err_new = ((pm.metric_eigvals(X).double() - ref_sv**2) / ref_sv**2)[above].abs().max()
    err_old = ((torch.linalg.svdvals(J).double() ** 2 - ref_sv**2) / ref_sv**2)[above].abs().max()
    assert err_new < err_old / 4  # about 5e-8 against 1e-6: float64 sums of exact products


def test_hessian_metric_route_refuses_non_hessian_metrics():
    def sphere(X):
        t, p = X[:, 0], X[:, 1]
        return torch.stack([t.sin() * p.cos(), t.sin() * p.sin(), t.cos()], 1)

    with pytest.raises(ValueError, match="fully symmetric"):
        PullbackMetric(sphere).ricci_scalar(torch.tensor([[0.9, 0.3]], dtype=F64),
                                            method="hessian_metric")


def test_christoffel_symbols_agree_between_routes():
    net = _mlp(3, 5)
    X = torch.randn(4, 3, dtype=F64)
    pm = PullbackMetric(net)
    field = MetricField(lambda x: pm._metric_single(x))
    np.testing.assert_allclose(pm.christoffel(X), field.christoffel(X), atol=1e-10)


def test_points_are_validated():
    pm = PullbackMetric(torch.nn.Tanh())
    with pytest.raises(ValueError, match="NaN or infinity"):
        pm.metric(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match=r"\(N, d\)"):
        pm.metric(torch.zeros(3))
    with pytest.raises(ValueError, match="non-empty"):
        pm.metric(torch.zeros(0, 2))


def test_kernel_metric_log_volume_and_eigvals():
    km = KernelMetric(rbf_kernel(2.0))
    X = torch.randn(3, 4, dtype=F64)
    np.testing.assert_allclose(km.log_volume(X), 2 * math.log(4.0) * np.ones(3), rtol=1e-12)
    np.testing.assert_allclose(km.metric_eigvals(X), 4.0 * np.ones((3, 4)), rtol=1e-12)


@given(arrays(np.float64, (3, 2), elements=st.floats(-3, 3)),
       st.floats(0.1, 3.0), st.floats(0.05, 2.0))
def test_rotation_and_dilation_invariants(X, angle, dilation):
    """An isometry has log V = 0 and R = 0; a dilation by a has log V = d log a."""
    Q = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]],
                     dtype=F64)
    X = torch.as_tensor(X)
    iso = PullbackMetric(lambda Z: Z @ Q.T, scale="none")
    assert float(iso.log_volume(X).abs().max()) < 1e-12
    dil = PullbackMetric(lambda Z: dilation * Z, scale="none")
    np.testing.assert_allclose(dil.log_volume(X), 2 * math.log(dilation), atol=1e-12)


@settings(max_examples=10)
@given(arrays(np.float64, (4, 2), elements=st.floats(-2, 2)))
def test_nngp_sigmoid_quadrature_is_radial(X):
    """Infinite-width geometry depends on |x| only (paper §3)."""
    lv = analytic.nngp_log_volume(X, "sigmoid")
    rot = X[:, ::-1] * np.array([1.0, -1.0])
    np.testing.assert_allclose(analytic.nngp_log_volume(rot, "sigmoid"), lv, rtol=1e-12)


def test_sigmoid_nngp_metric_matches_a_wide_network():
    rng = np.random.default_rng(0)
    W, b = rng.standard_normal((200_000, 2)), rng.standard_normal(200_000)
    geo = ShallowNetworkGeometry(W, b, "sigmoid")
    X = np.array([[0.3, -0.7], [1.2, 0.1]])
    g = analytic.nngp_metric(X, "sigmoid")
    g_mc = geo.metric(torch.as_tensor(X)).numpy()
    assert np.linalg.norm(g_mc - g) / np.linalg.norm(g) < 0.02


def test_analytic_validation():
    with pytest.raises(ValueError, match="degree"):
        analytic.nngp_metric(np.zeros((1, 2)), "monomial")
    with pytest.raises(ValueError, match="activation"):
        analytic.nngp_metric(np.zeros((1, 2)), "relu")
    with pytest.raises(ValueError, match="NaN"):
        analytic.nngp_log_volume(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="centers"):
        analytic.conformal_rbf_log_volume(np.zeros((1, 2)), np.zeros((1, 3)), 1.0, 1.0)
    with pytest.raises(ValueError, match="tau"):
        analytic.conformal_rbf_log_volume(np.zeros((1, 2)), np.zeros((1, 2)), 0.0, 1.0)
    # torch in, torch out
    assert isinstance(analytic.nngp_ricci_scalar(torch.zeros(1, 2, dtype=F64)), torch.Tensor)


def test_shallow_net_and_geometry_from_module():
    torch.manual_seed(0)
    net = ShallowNet(3, 11, 2, activation="tanh")
    geo = ShallowNetworkGeometry.from_module(net)
    X = torch.randn(4, 3, dtype=F64)
    np.testing.assert_allclose(geo.log_volume(X), PullbackMetric(net.features).log_volume(X),
                               rtol=1e-12)
    with torch.no_grad():
        np.testing.assert_allclose(net(X), net.readout(net.features(X)) / math.sqrt(11))
    with pytest.raises(ValueError, match="activation"):
        ShallowNet(2, 3, 2, activation="relu")
    with pytest.raises(ValueError, match="activation module"):
        ShallowNetworkGeometry.from_module(torch.nn.Sequential(torch.nn.Linear(2, 3),
                                                               torch.nn.ReLU()))
    with pytest.raises(ValueError, match="weights"):
        ShallowNetworkGeometry(np.zeros((3, 2)), np.zeros(2))


def test_untraceable_map_falls_back_to_a_loop():
    def branchy(X):  # data-dependent control flow: vmap cannot trace it
        return X * 2 if float(X.sum()) > 0 else X * 3

    pm = PullbackMetric(branchy, scale="none")
    X = torch.tensor([[1.0, 2.0], [-3.0, -1.0]], dtype=F64)
    with pytest.warns(UserWarning, match="looping over points"):
        logv = pm.log_volume(X)
    np.testing.assert_allclose(logv, [2 * math.log(2), 2 * math.log(3)], rtol=1e-12)
