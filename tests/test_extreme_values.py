"""Huge finite inputs (1e300) get a clear error or a finite, correct result, never NaN.

The reliability audit found NaN from inputs of 1e300 in CIDM.transform and its gradient,
integrated_gradients, ConformalKernelSVC.log_volume_element, and fits of FlowDensity and
DiffusionDensity that "succeeded" with infinite state. Squared distances of values beyond
about 1e154 overflow float64; float32 torch code cannot hold values beyond 3.4e38.
"""

import decimal
import functools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from skorch.callbacks import Callback

from geolearn._utils import check_dtype_range, check_squares_finite
from geolearn.generative import DiffusionDensity, FlowDensity
from geolearn.invariance import integrated_gradients
from geolearn.manifold import CIDM
from geolearn.riemannian import ConformalKernelSVC
from tests.helpers import assert_message

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(int)


def _with(value, row=0, col=0):
    B = X[:4].copy()
    B[row, col] = value
    return B


@functools.lru_cache
def _cidm():
    return CIDM(n_eigenpairs=5).fit(X)


@functools.lru_cache
def _svc():
    return ConformalKernelSVC().fit(X, Y)


@pytest.mark.parametrize("method", ["transform", "gradient"])
def test_cidm_queries_of_1e300_are_refused(method):
    with pytest.raises(ValueError) as exc:
        getattr(_cidm(), method)(_with(1e300))
    assert_message(exc, "1e+300", "squared distances overflow float64")


def test_cidm_fit_on_1e300_names_the_overflow():
    with pytest.raises(ValueError) as exc:
        CIDM(n_eigenpairs=5).fit(np.vstack([X, _with(-1e300)]))
    assert_message(exc, "overflow float64")


def test_cidm_far_points_below_the_limit_stay_finite():
    # beyond the data the Nyström extension tends to a limit: 1e150 gives it, not NaN
    far = _cidm().transform(_with(1e150))
    np.testing.assert_allclose(far, _cidm().transform(_with(1e10)), rtol=1e-6)
    assert np.isfinite(_cidm().gradient(_with(1e150))).all()


def test_integrated_gradients_of_a_float32_model_refuse_1e300():
    B = np.hstack([_with(1e300), np.ones((4, 1))])
    with pytest.raises(ValueError) as exc:
        integrated_gradients(torch.nn.Linear(4, 2), B, 1, image_shape=(2, 2))
    assert_message(exc, "1e+300", "float32 range", "model")


def test_integrated_gradients_of_a_float64_model_take_1e300_exactly():
    torch.manual_seed(0)
    net = torch.nn.Linear(3, 2).double()
    B = _with(1e300)
    ig = integrated_gradients(net, B, 1, image_shape=(1, 3))
    # a linear model: IG = (x - 0) * w, finite
    np.testing.assert_allclose(ig, B * net.weight[1].detach().numpy(), rtol=1e-12)


def test_log_volume_element_of_1e300_is_refused():
    with pytest.raises(ValueError) as exc:
        _svc().log_volume_element(_with(1e300))
    assert_message(exc, "1e+300", "overflow float64")


def test_log_volume_element_far_away_is_finite_and_quadratic():
    # below the limit the squared gradient norm used to overflow to +inf (1e153 gave inf)
    svc = _svc()
    far = np.array([svc.log_volume_element(_with(v))[0] for v in (1e100, 1e150, 3e153)])
    assert np.isfinite(far).all() and (far < 0).all()
    # d L(x) = -d |x - s|^2 / (2 tau^2) dominates: quadratic in the distance
    np.testing.assert_allclose(far[1] / far[0], 1e100, rtol=1e-6)
    np.testing.assert_allclose(far[2] / far[1], 9e6, rtol=1e-6)
    np.testing.assert_allclose(svc.log_volume_element(X[:5]),
                               _reference_log_volume(svc, X[:5]), rtol=1e-12)


def _reference_log_volume(svc, X):
    """The closed form with plain squares (fine for moderate inputs)."""
    L, grad = svc._log_factor_and_grad(X)
    s = svc.sigma_
    return X.shape[1] * (L - np.log(s)) + 0.5 * np.log1p(s**2 * (grad**2).sum(1))


@pytest.mark.filterwarnings("ignore:the conformal factor underflows")
@settings(max_examples=25, deadline=None)
@given(exponent=st.floats(0, 308), sign=st.sampled_from([-1.0, 1.0]),
       row=st.integers(0, 3), col=st.integers(0, 2))
def test_huge_values_give_finite_results_or_a_clear_error(exponent, sign, row, col):
    B = _with(sign * 10.0**exponent, row, col)
    for method in (_cidm().transform, _cidm().gradient, _svc().log_volume_element,
                   _svc().decision_function):
        try:
            out = method(B)
        except ValueError as exc:
            assert "overflow" in str(exc)
            assert exponent > 150
        else:
            assert np.isfinite(out).all()


_DENSITIES = [
    lambda: FlowDensity(n_layers=2, hidden_layer_sizes=(8,), max_epochs=2, random_state=0,
                        device="cpu"),
    lambda: DiffusionDensity(n_timesteps=50, hidden_layer_sizes=(8,), max_epochs=5, n_rounds=2,
                             random_state=0, device="cpu"),
]


def _decimal_mean_std(A):
    with decimal.localcontext(prec=50):
        cols = [[decimal.Decimal(float(v)) for v in col] for col in A.T]
        means = [sum(c) / len(c) for c in cols]
        stds = [(sum((v - m) ** 2 for v in c) / len(c)).sqrt() for c, m in zip(cols, means)]
        return np.array([float(m) for m in means]), np.array([float(s) for s in stds])


@pytest.mark.parametrize("make", _DENSITIES, ids=["FlowDensity", "DiffusionDensity"])
def test_density_fit_with_1e300_is_finite_and_standardised_exactly(make):
    B = np.vstack([X, _with(1e300)])
    est = make().fit(B)
    # the squares of 1e300 overflow float64: compare with 50-digit decimal arithmetic
    np.testing.assert_allclose(est.mean_, _decimal_mean_std(B)[0], rtol=1e-12)
    np.testing.assert_allclose(est.scale_, _decimal_mean_std(B)[1], rtol=1e-12)
    assert np.isfinite(est.score_samples(X)).all()
    assert all(torch.isfinite(p).all() for p in est.module_.parameters())


@pytest.mark.parametrize("make", _DENSITIES, ids=["FlowDensity", "DiffusionDensity"])
def test_density_scores_of_1e300_are_refused(make):
    est = make().fit(X)
    with pytest.raises(ValueError) as exc:
        est.score_samples(_with(1e300))
    assert_message(exc, "float32 range", "mean_ and scale_")


class _CorruptAtTheEnd(Callback):
    """Sets a weight to NaN after the last epoch's loss was recorded (finite)."""

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == net.max_epochs:
            with torch.no_grad():
                next(net.module_.parameters()).view(-1)[0] = float("nan")


def test_a_fit_ending_with_nan_parameters_raises():
    est = FlowDensity(n_layers=2, hidden_layer_sizes=(8,), max_epochs=2, random_state=0,
                      device="cpu", callbacks=[_CorruptAtTheEnd()])
    with pytest.raises(RuntimeError) as exc:
        est.fit(X)
    assert_message(exc, "NaN or infinite parameters")
    assert not hasattr(est, "net_")


def test_shared_checks():
    check_dtype_range(np.array([3e38]), np.float32)
    check_dtype_range(np.array([1e300]), torch.float64)
    with pytest.raises(ValueError, match="float32 range"):
        check_dtype_range(np.array([-1e39]), torch.float32)
    n = 10
    limit = np.sqrt(np.finfo(np.float64).max / (4 * n))
    A = np.full((2, n), limit * 0.999)
    A[1] *= -1
    check_squares_finite(A)
    assert np.isfinite(((A[0] - A[1]) ** 2).sum())  # the bound is the worst case
    with pytest.raises(ValueError, match="10 features"):
        check_squares_finite(A * 1.01)
