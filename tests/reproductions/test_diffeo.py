"""Reproductions of Petrini, Favero, Geiger & Wyart, "Relative stability toward
diffeomorphisms indicates performance in deep nets" (NeurIPS 2021), spec section 6.2."""

import math
import warnings

import numpy as np
import pytest
import torch
from scipy.stats import ortho_group
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from torch import nn

from geolearn.datasets import load_digits_images, make_stripes
from geolearn.diffeo import (
    StabilityWarning,
    deform,
    log_average,
    max_xi,
    relative_stability,
    sample_displacement_fields,
    subspace_relative_stability,
    temperature_range,
)
from geolearn.diffeo._sampler import _mode_count, _mode_sum, _sine_tables


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- A1 sampler
@pytest.mark.parametrize("n, c", [(28, 3), (32, 5), (8, 2)])
def test_A1a_mean_square_displacement(n, c):
    """Appendix B, Eq. 3 before approximation: <|d|^2> = (T/2)(n-1)^2 S(c) on the grid (5%)."""
    T = 1e-3
    d = sample_displacement_fields(n, T, c, size=2000, random_state=0)
    measured = float(d.square().sum(1).mean())
    assert measured == pytest.approx(T / 2 * (n - 1) ** 2 * _mode_sum(c), rel=0.05)


def test_A1b_c_frame_is_fixed_and_zero_temperature():
    """Eq. 2 (fixed boundary); T = 0 bilinear is the identity, Gaussian a fixed smoothing."""
    d = sample_displacement_fields(20, 0.01, 5, size=50, random_state=0)
    assert torch.all(d[..., [0, -1], :] == 0) and torch.all(d[..., :, [0, -1]] == 0)
    X = np.random.RandomState(0).rand(50, 3, 20, 20)
    zero = sample_displacement_fields(20, 0.0, 5, size=50, random_state=0)
    assert np.array_equal(deform(X, zero), X)
    smooth = deform(X, zero, interp="gaussian")
    assert np.array_equal(smooth, deform(X, zero, interp="gaussian"))
    assert not np.allclose(smooth, X)


def test_A1d_gaussian_participation_ratio():
    """Appendix C, Eq. 17: sigma = 0.4715 gives participation ratio 4.00 +- 0.01."""
    n = 12
    basis = np.eye(n * n).reshape(n * n, n, n)
    w = deform(basis, np.full((n * n, 2, n, n), -0.5), interp="gaussian")[:, 6, 6]
    assert (w**2).sum() ** 2 / (w**4).sum() == pytest.approx(4.0, abs=0.01)


@pytest.mark.parametrize("c", [3, 5])
def test_A1e_T_max(c):
    """Eq. 14: T_max = 4/(pi^3 c^2 ln c); empirical (homogeneity) within 30%, and the median
    max Xi at the asymptotic T_max lies in [0.85, 1.1] (about half the fields are diffeos)."""
    n = 32
    _, T_asym = temperature_range(n, c)
    _, T_emp = temperature_range(n, c, method="empirical", n_samples=1000)
    assert T_emp == pytest.approx(T_asym, rel=0.3)
    xi = max_xi(sample_displacement_fields(n, T_asym, c, size=1000, random_state=1))
    assert 0.85 <= np.median(xi) <= 1.1
    assert T_asym == pytest.approx(4 / (math.pi**3 * c**2 * math.log(c)))


@pytest.mark.parametrize("n, c", [(16, 3), (32, 5)])
def test_A1f_gradient_norm_equipartition(n, c):
    """Appendix Eq. 7: E|grad tau|^2 = (pi^2/2) T N(c) (equal energy in every mode), from
    coefficients recovered from the sampled fields by the discrete sine transform."""
    T = 1e-3
    d = sample_displacement_fields(n, T, c, size=4000, random_state=0)
    S, _ = _sine_tables(n, c, d.device, d.dtype)
    coeffs = (2 / (n - 1)) ** 2 * (S.T @ d @ S) / n  # unit-square units
    k2 = torch.arange(1, c + 1, dtype=torch.float64) ** 2
    grad2 = (math.pi**2 / 4) * (coeffs**2 * (k2[:, None] + k2[None, :])).sum((1, 2, 3))
    assert float(grad2.mean()) == pytest.approx(math.pi**2 / 2 * T * _mode_count(c), rel=0.05)


# --------------------------------------------------------------------------- A2 identities
def _linear(W, bias=None):
    lin = nn.Linear(W.shape[1], W.shape[0], bias=bias is not None, dtype=torch.float64)
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(W))
        if bias is not None:
            lin.bias.copy_(torch.as_tensor(bias))
    return lin


@pytest.mark.parametrize("interp", ["bilinear", "gaussian"])
@pytest.mark.parametrize("average", ["mean", "median"])
def test_A2a_orthogonal_maps_have_R_exactly_1(interp, average):
    """Eqs. 4-5 with per-sample noise norms: |Q(tau x - x)| = |Q eta| sample by sample, so
    R_f = 1 exactly for f = identity and f = Qx (Q orthogonal, d = 256)."""
    X = np.random.RandomState(0).rand(200, 256)
    Q = ortho_group.rvs(256, random_state=0)
    for W in (np.eye(256), Q):
        res = quiet(relative_stability, _linear(W), X, image_shape=(16, 16), interp=interp,
                    average=average, random_state=0)
        assert res.R == pytest.approx(1.0, rel=1e-10)


def test_A2a_median_per_unit_is_not_1():
    """The per-unit medians of (tau x - x)_k^2 and eta_k^2 differ: deformations move few
    pixels a lot, noise moves all pixels a little, so the reference code's average is not 1."""
    X = np.random.RandomState(0).rand(200, 256)
    res = quiet(relative_stability, _linear(np.eye(256)), X, image_shape=(16, 16),
                average="median_per_unit", random_state=0)
    assert abs(res.R - 1) > 1e-3


def test_A2b_affine_invariance():
    """R_f, D_f, G_f are unchanged by f -> a f + b."""
    X, _ = load_digits_images(upsample=2, return_X_y=True)
    torch.manual_seed(0)
    f = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8 * 14 * 14, 10)).double()
    g = nn.Sequential(f, _linear(3 * np.eye(10), 7 * np.ones(10)))
    a, b = (quiet(relative_stability, m, X[:300], random_state=0) for m in (f, g))
    for q in "RDG":
        assert b[q] == pytest.approx(a[q], rel=1e-10)


def test_A2c_linear_score_closed_form():
    """Eq. 6 for f = w.x, w = (1, 0.2, 0, ...), d = 30, mean: E R = (d/(d-1)) |w_perp|^2/|w|^2
    = 0.0398, within 5% with 20,000 Gaussian probes."""
    d = 30
    w = np.zeros((1, d))
    w[0, :2] = 1.0, 0.2
    X = np.random.RandomState(0).standard_normal((20000, d))
    res = subspace_relative_stability(_linear(w), X, parallel_dims=0, average="mean",
                                      random_state=0)
    assert res.R == pytest.approx(30 / 29 * 0.04 / 1.04, rel=0.05)


def test_A2d_clr_of_binary_logistic_equals_decision_function():
    """clr of a 2-class softmax is (-z/2, z/2), a rescaling of z: same R_f to 1e-8."""
    X, y = load_digits_images(n_class=2, upsample=2, return_X_y=True)
    Xf = X.reshape(len(X), -1)
    clf = LogisticRegression(C=0.01, max_iter=500).fit(Xf, y)
    assert clf.predict_proba(Xf).min() > 1e-12  # nothing clipped
    kw = dict(image_shape=(16, 16), random_state=0)
    auto = quiet(relative_stability, clf, Xf, **kw)
    clr = quiet(relative_stability, clf, Xf, response="clr_proba", **kw)
    assert auto.response == "decision_function"
    assert clr.R == pytest.approx(auto.R, rel=1e-8)


# --------------------------------------------------------------------------- A3 stripes
def _stripe_slope(label_noise, C=1.0):
    Ps = 2 ** np.arange(6, 14)
    X_test, _ = make_stripes(1000, 30, boundaries=(0.0,), random_state=1234)
    R = []
    for P in Ps:
        per_seed = []
        for seed in range(8):
            X, y = make_stripes(int(P), 30, boundaries=(0.0,), label_noise=label_noise,
                                random_state=seed)
            clf = LogisticRegression(C=C, max_iter=1000).fit(X, y)
            per_seed.append(subspace_relative_stability(clf, X_test, parallel_dims=0,
                                                        radius=1.0, random_state=seed).R)
        R.append(log_average(per_seed))
    return np.polyfit(np.log(Ps), np.log(R), 1)[0]


def test_A3_stripe_model_R_decreases_like_1_over_P():
    """Section 6, Fig. 7: in the stripe model the first layer's weights along the invariant
    directions shrink like 1/sqrt(P) (sampling noise), so R_f ~ 1/P: log-log slope in
    [-1.25, -0.85]. Control: separable data (label_noise=0) has a max-margin effect and a
    steeper slope, outside the band."""
    slope = _stripe_slope(0.5)
    assert -1.25 <= slope <= -0.85
    assert _stripe_slope(0.0) < -1.25


# --------------------------------------------------------------------------- A4 digits
def _fc():
    layers = [nn.Flatten()]
    width = 256
    for _ in range(4):
        layers += [nn.Linear(width, 64), nn.ReLU()]
        width = 64
    return nn.Sequential(*layers, nn.Linear(64, 10))


def _cnn_bn():
    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*block(1, 16), *block(16, 32), nn.MaxPool2d(2), *block(32, 64),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def _digits_split(seed):
    X, y = load_digits_images(upsample=2, return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=500, stratify=y,
                                              random_state=seed)
    mean, std = X_tr.mean(), X_tr.std()
    return (X_tr - mean) / std, (X_te - mean) / std, y_tr, y_te


def _train(module, X, y, seed):
    from skorch import NeuralNetClassifier

    torch.manual_seed(seed)
    net = NeuralNetClassifier(module, criterion=nn.CrossEntropyLoss,
                              optimizer=torch.optim.Adam, lr=1e-3, batch_size=64,
                              max_epochs=30, train_split=None, iterator_train__shuffle=True,
                              verbose=0)
    return net.fit(X, y)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_A4_fc_loses_and_cnn_gains_relative_stability(seed):
    """Figs. 3-4 (qualitative, reduced scale): R_f ~ 1 at initialisation (FC net, Fig. 3);
    after training a fully connected net is *less* relatively stable (R > 3) while a CNN with
    BatchNorm becomes much more stable (R < 0.5, 10x below the FC net) and more accurate.
    Digits upsampled to 16x16, c = 3, delta = 1 (T = 0.00726), bilinear, median."""
    X_tr, X_te, y_tr, y_te = _digits_split(seed)
    kw = dict(c=3, delta=1.0, random_state=seed)
    torch.manual_seed(seed)
    fc = _fc()
    R_init = relative_stability(fc, X_te, **kw).R
    fc_net = _train(fc, X_tr, y_tr, seed)
    torch.manual_seed(seed)
    cnn_net = _train(_cnn_bn(), X_tr, y_tr, seed)
    R_fc = relative_stability(fc_net, X_te, **kw).R
    R_cnn = relative_stability(cnn_net, X_te, **kw).R
    acc_fc, acc_cnn = fc_net.score(X_te, y_te), cnn_net.score(X_te, y_te)
    print(f"seed {seed}: FC R init {R_init:.3g}, trained {R_fc:.3g} (acc {acc_fc:.3f}); "
          f"CNN-BN R {R_cnn:.3g} (acc {acc_cnn:.3f})")
    assert 0.6 <= R_init <= 1.6
    assert R_fc > 3
    assert R_cnn < 0.5 and R_fc / R_cnn > 10
    assert acc_cnn > acc_fc
