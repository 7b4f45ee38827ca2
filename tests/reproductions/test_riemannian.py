"""Acceptance experiments of the riemannian family (spec §6.2, A1–A4; optional A5 not here).

Paper: Zavatone-Veth, Yang, Rubinfien, Pehlevan, "How does training shape the
Riemannian geometry of neural network representations?" (and Amari & Wu for A4).
"""

import itertools
import math

import numpy as np
import pytest
import torch
from sklearn.svm import SVC

from geolearn.datasets import make_sinusoid_boundary
from geolearn.riemannian import (
    ConformalKernelSVC,
    KernelMetric,
    MetricField,
    PullbackMetric,
    RiemannianFeatureGeometry,
    ShallowNet,
    ShallowNetworkGeometry,
    analytic,
    erf_nngp_kernel,
    laplacian_kernel,
    mahalanobis_rbf_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from geolearn.riemannian._curvature import hessian_metric_ricci
from geolearn.riemannian._shallow import ACTIVATIONS

F64 = torch.float64


def _t(x):
    return torch.tensor(x, dtype=F64)


# --- A1: closed forms and curvature routes --------------------------------------------------

def _sphere(a):
    def f(X):
        t, p = X[:, 0], X[:, 1]
        return a * torch.stack([t.sin() * p.cos(), t.sin() * p.sin(), t.cos()], 1)
    return f


def _torus(R0, r):
    def f(X):
        u, v = X[:, 0], X[:, 1]
        return torch.stack([(R0 + r * v.cos()) * u.cos(), (R0 + r * v.cos()) * u.sin(),
                            r * v.sin()], 1)
    return f


def _s3(a):
    def f(X):
        al, be, ga = X[:, 0], X[:, 1], X[:, 2]
        return a * torch.stack([al.cos(), al.sin() * be.cos(), al.sin() * be.sin() * ga.cos(),
                                al.sin() * be.sin() * ga.sin()], 1)
    return f


@pytest.mark.parametrize("fmap, X, expected", [
    (_sphere(1.7), [[0.9, 0.3]], [0.692042]),
    (_torus(2.0, 0.7), [[0.4, 0.0], [0.4, 1.0], [0.4, 2.5]], [1.058201, 0.649110, -1.590455]),
    (_s3(1.7), [[0.8, 1.1, 0.4]], [2.076125]),
])
def test_a1a_immersions_gauss_and_christoffel(fmap, X, expected):
    """A1(a): sphere R = 2/a², torus R = 2cos v/(r(R₀ + r cos v)), S³ R = 6/a² (sign: S² → +2)."""
    pm = PullbackMetric(fmap, scale="none")
    X = _t(X)
    for method in ("gauss", "christoffel"):
        np.testing.assert_allclose(pm.ricci_scalar(X, method=method), expected, atol=1e-6)
    # the two routes agree to 1e-8 absolute (the spec figures are rounded to 1e-6)
    np.testing.assert_allclose(pm.ricci_scalar(X, method="gauss"),
                               pm.ricci_scalar(X, method="christoffel"), rtol=0, atol=1e-8)


@pytest.mark.parametrize("activation", ["erf", "sigmoid"])
@pytest.mark.parametrize("d, n, seed", [(2, 6, 0), (3, 7, 1), (2, 9, 2), (3, 9, 3)])
def test_a1b_shallow_network_routes_agree(activation, d, n, seed):
    """A1(b), paper App. C–D: all Ricci routes agree; the public code's −3/4 is 3× too large."""
    g = torch.Generator().manual_seed(seed)
    W, b = torch.randn(n, d, generator=g, dtype=F64), torch.randn(n, generator=g, dtype=F64)
    X = 0.8 * torch.randn(5, d, generator=g, dtype=F64)
    sigma = ACTIVATIONS[activation]()
    pm = PullbackMetric(lambda Z: sigma(Z @ W.T + b))
    geo = ShallowNetworkGeometry(W, b, activation)

    J = pm.jacobian(X)
    np.testing.assert_allclose(J, geo.jacobian(X), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(torch.linalg.det(pm.metric(X)), geo.det_cauchy_binet(X), rtol=1e-10)
    np.testing.assert_allclose(pm.log_volume(X), geo.log_volume(X), rtol=1e-12)

    R = pm.ricci_scalar(X, method="gauss")
    others = [pm.ricci_scalar(X, method="christoffel"), pm.ricci_scalar(X, method="hessian_metric"),
              geo.ricci_scalar(X)]
    if d == 2:
        others.append(geo.ricci_scalar_2d_minors(X))
    for other in others:
        np.testing.assert_allclose(other, R, rtol=1e-7)
    wrong = hessian_metric_ricci(pm.metric(X), pm.metric_derivative(X), coefficient=-0.75)
    np.testing.assert_allclose(wrong / R, 3.0, atol=1e-6)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("activation", ["erf", "sigmoid", "tanh"])
def test_a1c_square_network_is_flat(d, activation):
    """A1(c), paper App. D: n = d is a change of coordinates: R = 0, V = |det W|Π|σ'_j|/n^{d/2}."""
    g = torch.Generator().manual_seed(d)
    W, b = torch.randn(d, d, generator=g, dtype=F64), torch.randn(d, generator=g, dtype=F64)
    X = torch.randn(4, d, generator=g, dtype=F64)
    geo = ShallowNetworkGeometry(W, b, activation)
    sigma = ACTIVATIONS[activation]()
    pm = PullbackMetric(lambda Z: sigma(Z @ W.T + b))
    assert pm.ricci_scalar(X).abs().max() < 1e-10
    assert geo.ricci_scalar(X).abs().max() < 1e-10
    z = (X @ W.T + b).requires_grad_()
    (dsig,) = torch.autograd.grad(sigma(z).sum(), z)
    expected = (torch.linalg.slogdet(W)[1] + dsig.abs().log().sum(1) - d / 2 * math.log(d))
    np.testing.assert_allclose(pm.log_volume(X), expected.detach(), rtol=1e-12)


def _rotation(angle):
    return _t([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])


@pytest.mark.parametrize("bias, log_v, ricci", [(0.0, -1.254462, -0.194133),
                                                (0.5, -1.477178, 0.780989)])
def test_a1d_symmetric_three_unit_network(bias, log_v, ricci):
    """A1(d), paper D.65: 3 erf units at 120°: V, R have 3-fold symmetry, 6-fold iff b = 0."""
    theta = torch.tensor([0.0, 2 * math.pi / 3, 4 * math.pi / 3], dtype=F64)
    W = torch.stack([theta.cos(), theta.sin()], 1)
    b = torch.full((3,), bias, dtype=F64)
    pm = PullbackMetric(lambda Z: torch.erf((Z @ W.T + b) / math.sqrt(2)))
    x = _t([[0.4, 0.25]])
    np.testing.assert_allclose(pm.log_volume(x), [log_v], atol=1e-6)
    np.testing.assert_allclose(pm.ricci_scalar(x), [ricci], atol=1e-6)
    z = x @ W.T + b
    pairs = itertools.combinations(range(3), 2)
    det = sum(torch.exp(-(z[0, j] ** 2 + z[0, k] ** 2)) for j, k in pairs) / (3 * math.pi**2)
    np.testing.assert_allclose(pm.log_volume(x), 0.5 * torch.log(det), rtol=1e-12)

    def change(angle):
        xr = x @ _rotation(angle).T
        return (float((pm.log_volume(xr) - pm.log_volume(x)).abs()),
                float((pm.ricci_scalar(xr) - pm.ricci_scalar(x)).abs()))

    assert max(change(2 * math.pi / 3)) < 1e-10
    if bias == 0.0:
        assert max(change(math.pi / 3)) < 1e-10
    else:
        dv, dr = change(math.pi / 3)
        assert dv > 1e-3 and dr > 1e-3


# --- A2: infinite width and kernels ---------------------------------------------------------

@pytest.mark.parametrize("x, sigmas, ricci, log_v", [
    ([0.5, -0.3], (1.0, 1.0), -0.371205, -1.205189),
    ([0.5, -0.3, 0.8], (0.7, 0.3), -4.369307, -2.615883),
    ([0.5, -0.3, 0.8, -0.2], (1.3, 0.0), -23.110875, -2.092255),
])
def test_a2a_erf_nngp_kernel_matches_closed_forms(x, sigmas, ricci, log_v):
    """A2(a), paper E.10–E.23: the erf NNGP kernel's metric, volume and R in closed form."""
    sw, sb = sigmas
    km = KernelMetric(erf_nngp_kernel(sw, sb))
    rng = np.random.default_rng(len(x))
    X = np.vstack([x, rng.uniform(-1, 1, (4, len(x)))])
    T = _t(X)
    kw = dict(activation="erf", sigma_w=sw, sigma_b=sb)
    np.testing.assert_allclose(km.metric(T), analytic.nngp_metric(X, **kw), rtol=0, atol=1e-12)
    np.testing.assert_allclose(km.log_volume(T), analytic.nngp_log_volume(X, **kw), rtol=1e-10)
    closed = analytic.nngp_ricci_scalar(X, **kw)
    for method in ("kernel_gauss", "christoffel"):
        np.testing.assert_allclose(km.ricci_scalar(T, method=method), closed, rtol=1e-8)
    np.testing.assert_allclose([closed[0], analytic.nngp_log_volume(X, **kw)[0]], [ricci, log_v],
                               atol=1e-6)
    d, u = len(x), (X**2).sum(1)
    D = 1 + 2 * sb**2 + 2 * sw**2 * u
    erf_form = -(math.pi / 2) * (d - 1) * (d + 2) * sw**2 * u / ((1 + 2 * sb**2) * np.sqrt(D))
    np.testing.assert_allclose(closed, erf_form, rtol=1e-10)


def test_a2b_kernels_with_known_geometry():
    """A2(b), Burges / paper App. H: translation-invariant kernels are flat; polynomial det g."""
    rng = np.random.default_rng(0)
    X = _t(rng.uniform(-1, 1, (5, 3)))
    rbf = KernelMetric(rbf_kernel(0.7))
    np.testing.assert_allclose(rbf.metric(X), np.broadcast_to(1.4 * np.eye(3), (5, 3, 3)),
                               atol=1e-12)
    assert rbf.ricci_scalar(X).abs().max() < 1e-9
    A = rng.standard_normal((3, 3))
    M = A @ A.T + 0.5 * np.eye(3)
    np.testing.assert_allclose(KernelMetric(mahalanobis_rbf_kernel(M, 0.3)).metric(X),
                               np.broadcast_to(0.6 * M, (5, 3, 3)), atol=1e-12)
    gamma, c0, p, d = 0.5, 1.0, 3, 3
    u = (X**2).sum(1).numpy()
    s = gamma * u + c0
    expected = (p * gamma) ** d * s ** (d * (p - 1) - 1) * (c0 + p * gamma * u)
    poly = KernelMetric(polynomial_kernel(gamma, c0, p))
    np.testing.assert_allclose(torch.linalg.det(poly.metric(X)), expected, rtol=1e-10)
    with pytest.raises(ValueError, match="twice differentiable"):
        laplacian_kernel(1.0)
    with pytest.raises(ValueError, match="twice differentiable"):
        RiemannianFeatureGeometry(kernel=_laplace).fit(X.numpy())
    RiemannianFeatureGeometry(kernel="poly", kernel_params={"gamma": gamma}).fit(X.numpy())


def _laplace(x, y):
    return torch.exp(-torch.linalg.norm(x - y))


def _monomial_metric(k, sw=1.0):
    def g(x):
        u = x @ x
        f = sw**2 * k**2 * (sw**2 * u) ** (k - 1) / (2 * k - 1)
        fp = sw**4 * k**2 * (k - 1) * (sw**2 * u) ** (k - 2) / (2 * k - 1)
        return f * torch.eye(len(x), dtype=x.dtype) + 2 * fp * torch.outer(x, x)
    return g


@pytest.mark.parametrize("k, ricci", [(2, -1.020408), (3, -2.591513), (6, -11.805361)])
def test_a2c_monomial_metric_field(k, ricci):
    """A2(c), paper App. E: monomial NNGP, σ_b = 0: R = −(d−1)(d−2)(k−1)²/(k²σ_w^{2k}|x|^{2k})."""
    x = np.array([[0.6, -0.5, 0.3]])
    closed = analytic.nngp_ricci_scalar(x, "monomial", sigma_b=0.0, degree=k)
    np.testing.assert_allclose(closed, [ricci], atol=1e-6)
    field = MetricField(_monomial_metric(k))
    np.testing.assert_allclose(field.ricci_scalar(_t(x)), closed, rtol=1e-8)
    np.testing.assert_allclose(field.ricci_scalar(_t(x), method="hessian_metric"), closed,
                               rtol=1e-8)
    u = 0.7
    np.testing.assert_allclose(closed, -2 * (k - 1) ** 2 / (k**2 * u**k), rtol=1e-10)
    assert abs(analytic.nngp_ricci_scalar(x[:, :2], "monomial", sigma_b=0.0, degree=k)[0]) < 1e-12
    if k <= 3:  # a 4·10⁵-unit Monte-Carlo network reproduces the metric
        rng = np.random.default_rng(k)
        W = rng.standard_normal((400_000, 3))
        z = W @ x[0]
        dsig = k * z ** (k - 1) / math.sqrt(np.prod(np.arange(1, 2 * k, 2)))
        g_mc = (dsig[:, None] ** 2 * W).T @ W / len(W)
        g = analytic.nngp_metric(x, "monomial", sigma_b=0.0, degree=k)[0]
        assert np.linalg.norm(g_mc - g) / np.linalg.norm(g) < 0.02


def _radial_r2(X, log_v, n_bins=20):
    r = np.linalg.norm(X, axis=1)
    bins = np.minimum((r - r.min()) / (r.max() - r.min()) * n_bins, n_bins - 1).astype(int)
    means = np.bincount(bins, log_v) / np.bincount(bins)
    return 1 - np.var(log_v - means[bins]) / np.var(log_v)


@pytest.mark.slow
def test_a2d_width_convergence_at_init():
    """A2(d), paper App. E.1: wide random sigmoid nets approach the spherically symmetric NNGP."""
    X = np.array(list(itertools.product(np.linspace(-1.5, 1.5, 40), repeat=2)))
    nngp = analytic.nngp_log_volume(X, "sigmoid", sigma_w=1.0, sigma_b=1.0)
    for seed in range(3):
        err = {}
        for width in (250, 2000):
            torch.manual_seed(seed)
            net = torch.nn.Sequential(torch.nn.Linear(2, width), torch.nn.Sigmoid()).double()
            for p in net.parameters():
                torch.nn.init.normal_(p)
            log_v = RiemannianFeatureGeometry(net).fit(X).transform(X)[:, 0]
            err[width] = np.abs(log_v - nngp)
            if width == 2000:
                assert _radial_r2(X, log_v) >= 0.9
        assert err[2000].max() <= 0.15 and err[2000].mean() <= 0.05
        assert err[250].mean() / err[2000].mean() >= 1.5


def test_a2e_singular_rank():
    """A2(e), paper §2: m < d: the pseudo volume uses the r = m non-zero singular values."""
    A = torch.randn(3, 5, dtype=F64, generator=torch.Generator().manual_seed(0))
    pm = PullbackMetric(lambda Z: Z @ A.T, scale="none")
    logv, r = pm.log_volume(torch.zeros(2, 5, dtype=F64), return_rank=True)
    np.testing.assert_allclose(logv, torch.linalg.svdvals(A).log().sum().repeat(2), rtol=1e-12)
    assert r.tolist() == [3, 3]


# --- A3: sine task ----------------------------------------------------------------------------

_T = np.linspace(-1.6, 1.6, 4001)


def _distance_to_curve(P, sign):
    curve = np.column_stack([_T, sign * 0.6 * np.sin(7 * _T - 1)])
    from scipy.spatial import cKDTree

    return cKDTree(curve).query(P)[0]


def _boundary_contrast(P, log_v, sign):
    dist = _distance_to_curve(P, sign)
    return np.median(log_v[dist < 0.1]) - np.median(log_v[dist > 0.4])


def _train_sine_net(seed, sign):
    from skorch import NeuralNetClassifier

    X, y = make_sinusoid_boundary(400, sign=sign, random_state=42)
    torch.manual_seed(seed)
    net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=250,
                              module__n_classes=2, criterion=torch.nn.CrossEntropyLoss,
                              optimizer=torch.optim.Adam, lr=0.02,
                              batch_size=-1, max_epochs=2000, train_split=None, verbose=0,
                              callbacks="disable")
    net.initialize()
    grid = np.array(list(itertools.product(np.linspace(-1.5, 1.5, 40), repeat=2)))
    geo = RiemannianFeatureGeometry(net, layer="features")
    init = geo.fit(grid).transform(grid)[:, 0]
    net.partial_fit(X, y)
    trained = geo.fit(grid).transform(grid)[:, 0]
    X_test, y_test = make_sinusoid_boundary(2000, sign=sign, random_state=999)
    return net.score(X, y), net.score(X_test, y_test), grid, init, trained


@pytest.mark.slow
def test_a3_training_magnifies_the_boundary():
    """A3, paper §4.1 / Fig. 1: training magnifies areas along the sine decision boundary."""
    for seed, sign in [(0, 1.0), (1, 1.0), (2, 1.0), (0, -1.0), (1, -1.0)]:
        train_acc, test_acc, grid, init, trained = _train_sine_net(seed, sign)
        assert train_acc >= 0.97 and test_acc >= 0.95
        inner = np.abs(grid).max(1) <= 1
        P = grid[inner]
        d_init = _boundary_contrast(P, init[inner], sign)
        d_trained = _boundary_contrast(P, trained[inner], sign)
        d_other = _boundary_contrast(P, trained[inner], -sign)
        assert d_trained >= 0.5
        assert d_trained - d_init >= 0.4
        assert d_trained - d_other >= 1.0
        assert _radial_r2(grid, init) >= 0.9
        assert _radial_r2(grid, trained) <= 0.75


# --- A4: ConformalKernelSVC -------------------------------------------------------------------

def test_a4a_conformal_volume_matches_kernel_metric():
    """A4(a), paper App. H.1 (H.3–H.8): the rbf closed form equals the metric of the torch K̃."""
    X, y = make_sinusoid_boundary(120, random_state=0)
    clf = ConformalKernelSVC(gamma=2.0, n_refits=1).fit(X, y)
    centers, tau, gamma = _t(clf.centers_[0]), clf.tau_[0], clf.gamma_

    def k_tilde(x, z):
        def log_c(p):
            return torch.logsumexp(-((p - centers) ** 2).sum(1) / (2 * tau**2), 0)
        return torch.exp(log_c(x) + log_c(z) - gamma * ((x - z) ** 2).sum())

    P = np.random.default_rng(1).uniform(-1.2, 1.2, (30, 2))
    np.testing.assert_allclose(clf.log_volume_element(P), KernelMetric(k_tilde).log_volume(_t(P)),
                               rtol=1e-10)
    np.testing.assert_allclose(clf.log_volume_element(P),
                               analytic.conformal_rbf_log_volume(P, clf.centers_[0], tau,
                                                                 clf.sigma_), rtol=1e-12)


def test_a4a_zero_iterations_is_svc():
    """A4(a): n_refits=0 reproduces sklearn's SVC exactly."""
    X, y = make_sinusoid_boundary(150, random_state=3)
    X_test, _ = make_sinusoid_boundary(300, random_state=4)
    ours = ConformalKernelSVC(gamma=2.0, C=3.0, n_refits=0).fit(X, y)
    ref = SVC(gamma=2.0, C=3.0).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X_test), ref.predict(X_test))
    np.testing.assert_allclose(ours.decision_function(X_test), ref.decision_function(X_test),
                               atol=1e-8)


@pytest.mark.parametrize("d", [2, 5])
def test_a4a_single_support_vector_profile(d):
    """A4(a), paper H.8: V(r) peaks at the SV iff τ ≥ σ/√d; else a ring at r*² = τ²/d − τ⁴/σ²."""
    sigma = 0.8
    r = np.linspace(0, 3, 30001)
    P = np.zeros((len(r), d))
    P[:, 0] = r
    for factor in (1.0, 1.5, 0.5):
        tau = factor * sigma / math.sqrt(d)
        log_v = analytic.conformal_rbf_log_volume(P, np.zeros((1, d)), tau, sigma)
        peak = r[np.argmax(log_v)]
        if factor >= 1.0:
            assert peak == 0.0
        else:
            assert peak > 0.0
            np.testing.assert_allclose(peak, math.sqrt(tau**2 / d - tau**4 / sigma**2), atol=2e-4)
            if d == 2:
                np.testing.assert_allclose(peak / tau, 0.612, atol=1e-3)


@pytest.mark.slow
def test_a4b_conformal_svc_on_the_sine_task():
    """A4(b), Amari & Wu: one conformal step raises accuracy and cuts support vectors at C = 1."""
    data = [(make_sinusoid_boundary(200, random_state=s),
             make_sinusoid_boundary(2000, random_state=1000 + s)) for s in range(10)]
    for gamma, gap in [(0.5, 0.3), (2.0, 0.7)]:
        acc_svc, acc_conf, sv_svc, sv_conf, contrast = [], [], [], [], []
        for (X, y), (X_test, y_test) in data:
            svc = SVC(gamma=gamma, C=1.0).fit(X, y)
            conf = ConformalKernelSVC(gamma=gamma, C=1.0).fit(X, y)
            acc_svc.append(svc.score(X_test, y_test))
            acc_conf.append(conf.score(X_test, y_test))
            sv_svc.append(len(svc.support_))
            sv_conf.append(conf.n_support_history_[-1])
            log_v = conf.log_volume_element(X)
            first = np.zeros(len(X), bool)
            first[svc.support_] = True
            contrast.append(np.median(log_v[first]) - np.median(log_v[~first]))
        assert np.mean(acc_conf) - np.mean(acc_svc) >= 0.05
        assert np.mean(sv_conf) <= 0.7 * np.mean(sv_svc)
        assert min(contrast) >= gap
        best = {}
        for name, make in [("svc", lambda C: SVC(gamma=gamma, C=C)),
                           ("conf", lambda C: ConformalKernelSVC(gamma=gamma, C=C))]:
            best[name] = max(np.mean([make(C).fit(X, y).score(Xt, yt)
                                      for (X, y), (Xt, yt) in data])
                             for C in (1.0, 10.0, 100.0, 1e3, 1e4))
        assert best["conf"] >= best["svc"] - 0.005

