"""The maximum-entropy sampler, the interpolations and the temperature utilities."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.bench_diffeo import peer_remap
from geolearn.diffeo import (
    deform,
    displacement_delta,
    max_xi,
    sample_displacement_fields,
    temperature_for_delta,
    temperature_range,
)
from geolearn.diffeo._sampler import _amplitudes, _mode_count, _mode_sum


def test_mode_set_follows_the_library_rule():
    # sqrt(i^2 + j^2) < c + 1/2 with 1 <= i, j <= c (spec 2.2)
    assert np.argwhere(_amplitudes(1, 1)).tolist() == [[0, 0]]
    assert {tuple(ij + 1) for ij in np.argwhere(_amplitudes(2, 2))} == {(1, 1), (1, 2), (2, 1)}
    assert {tuple(ij + 1) for ij in np.argwhere(_amplitudes(3, 3))} == {
        (1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (3, 1)}
    assert [_mode_count(c) for c in (1, 2, 3)] == [1, 3, 6]
    for c, S in [(1, 0.5), (2, 0.9), (3, 1.225), (5, 1.8779), (15, 3.3652), (30, 4.4055)]:
        assert _mode_sum(c) == pytest.approx(S, abs=1e-4)


def test_fields_shape_boundary_and_reproducibility():
    d = sample_displacement_fields(12, 0.01, 3, size=5, random_state=0)
    assert d.shape == (5, 2, 12, 12) and d.dtype == torch.float64
    for edge in (d[..., 0, :], d[..., -1, :], d[..., :, 0], d[..., :, -1]):
        assert torch.all(edge == 0)
    assert torch.equal(d, sample_displacement_fields(12, 0.01, 3, size=5, random_state=0))
    assert not torch.equal(d, sample_displacement_fields(12, 0.01, 3, size=5, random_state=1))
    # amplitude scales as sqrt(T) for the same coefficients
    d4 = sample_displacement_fields(12, 0.04, 3, size=5, random_state=0)
    torch.testing.assert_close(d4, 2 * d)


def test_field_is_the_sine_series():
    """Brute force: the field at a pixel is n * sum_ij C_ij sin(i pi v) sin(j pi u)."""
    n, c, T = 9, 2, 0.02
    z = np.random.RandomState(3).standard_normal((1, 2, c, c))
    d = sample_displacement_fields(n, T, c, random_state=3)[0].numpy()
    a = _amplitudes(c, c)
    for p, q in [(1, 2), (4, 4), (7, 3)]:
        u, v = q / (n - 1), p / (n - 1)
        for k in range(2):
            expected = n * sum(math.sqrt(T) * z[0, k, i, j] * a[i, j]
                               * math.sin((i + 1) * math.pi * v) * math.sin((j + 1) * math.pi * u)
                               for i in range(c) for j in range(c))
            assert d[k, p, q] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("interp", ["bilinear", "gaussian"])
def test_deform_matches_the_reference_per_image_algorithm(interp):
    rng = np.random.RandomState(0)
    X = rng.rand(3, 2, 10, 10)
    d = sample_displacement_fields(10, 0.05, 3, size=3, random_state=0)
    ours = deform(X, d, interp=interp)
    peer_interp = "linear" if interp == "bilinear" else "gaussian"
    for i in range(3):
        # the authors' per-image remap (pcsl-epfl/diffeomorphism), as re-implemented in the
        # benchmark that times it
        ref = peer_remap(torch.as_tensor(X[i]), d[i, 0], d[i, 1], peer_interp).numpy()
        np.testing.assert_allclose(ours[i], ref, rtol=0, atol=1e-10)


def test_deform_zero_field_and_types():
    X = np.random.RandomState(0).rand(4, 3, 8, 8).astype(np.float32)
    zero = np.zeros((4, 2, 8, 8))
    assert np.array_equal(deform(X, zero), X)  # bilinear, T = 0: exactly the input
    smooth = deform(X, zero, interp="gaussian")
    assert not np.allclose(smooth, X)
    assert np.array_equal(smooth, deform(X, zero, interp="gaussian"))
    Xt = torch.as_tensor(X)
    out = deform(Xt[:, 0], torch.as_tensor(zero))
    assert isinstance(out, torch.Tensor) and out.shape == (4, 8, 8)
    d = sample_displacement_fields(8, 0.02, 2, size=4, random_state=0)
    X_copy = X.copy()
    Y = deform(X, d)
    assert Y.dtype == np.float32 and Y.shape == X.shape
    assert np.array_equal(X, X_copy)  # never in place
    assert deform(np.ones((4, 8, 8), dtype=int), d).dtype == np.float64


def test_deform_translation_moves_content():
    """A constant field of +1 px along columns shifts the image right: y(p, q) = x(p, q - 1)."""
    X = np.random.RandomState(0).rand(1, 1, 8, 8)
    d = np.zeros((1, 2, 8, 8))
    d[:, 0] = 1.0
    np.testing.assert_array_equal(deform(X, d)[0, 0, :, 1:], X[0, 0, :, :-1])
    d = np.zeros((1, 2, 8, 8))
    d[:, 1] = 1.0
    np.testing.assert_array_equal(deform(X, d)[0, 0, 1:], X[0, 0, :-1])


def test_gaussian_participation_ratio_is_four():
    """Appendix C, Eq. 17: sigma = 0.4715 gives PR = 4 at a point equidistant from 4 pixels."""
    n = 16
    basis = np.eye(n * n).reshape(n * n, n, n)
    w = deform(basis, np.full((n * n, 2, n, n), -0.5), interp="gaussian")[:, 8, 8]
    assert w.sum() == pytest.approx(1.0)
    assert (w**2).sum() ** 2 / (w**4).sum() == pytest.approx(4.0, abs=0.01)


def test_max_xi_against_brute_force_derivatives():
    """Xi = lambda_max((J + J^T) / 2), J the pixel Jacobian of the sine series (Appendix B)."""
    n, c, T = 10, 3, 0.03
    z = np.random.RandomState(5).standard_normal((1, 2, c, c))
    d = sample_displacement_fields(n, T, c, random_state=5)
    a = _amplitudes(c, c)
    best = -np.inf
    for p in range(n):
        for q in range(n):
            u, v = q / (n - 1), p / (n - 1)
            J = np.zeros((2, 2))  # J[k, l] = d tau_k / d (u, v)_l in pixels
            for i in range(c):
                for j in range(c):
                    ci, cj = (i + 1) * math.pi, (j + 1) * math.pi
                    for k in range(2):
                        C = math.sqrt(T) * z[0, k, i, j] * a[i, j]
                        J[k, 0] += C * math.sin(ci * v) * cj * math.cos(cj * u)
                        J[k, 1] += C * ci * math.cos(ci * v) * math.sin(cj * u)
            J *= n / (n - 1)
            best = max(best, np.linalg.eigvalsh(0.5 * (J + J.T)).max())
    assert max_xi(d)[0] == pytest.approx(best, rel=1e-10)
    # positively homogeneous of degree 1
    np.testing.assert_allclose(max_xi(3 * d), 3 * max_xi(d), rtol=1e-12)


@given(delta=st.floats(0.05, 5.0), c=st.integers(2, 6), n=st.integers(8, 64))
def test_delta_and_temperature_are_inverse(delta, c, n):
    for formula in ("exact", "asymptotic"):
        T = temperature_for_delta(delta, c, n, formula)
        assert displacement_delta(T, c, n, formula) == pytest.approx(delta, rel=1e-12)


def test_delta_formulas_closed_forms():
    assert displacement_delta(1.0, 3, 16) ** 2 == pytest.approx(0.5 * 15**2 * 1.225)
    assert displacement_delta(1.0, 3, 16, "asymptotic") ** 2 == pytest.approx(
        math.pi / 4 * 256 * math.log(3))
    assert temperature_for_delta(1.0, 3, 16) == pytest.approx(0.00726, abs=1e-5)
    T_min, T_max = temperature_range(32, 3)
    assert T_min == pytest.approx(1 / (math.pi * 32**2 * math.log(3)))
    assert T_max == pytest.approx(4 / (math.pi**3 * 9 * math.log(3)))


def test_empirical_range_works_for_c_1():
    T_min, T_max = temperature_range(16, 1, method="empirical", n_samples=200)
    assert 0 < T_min < T_max
    assert displacement_delta(T_min, 1, 16) == pytest.approx(0.5)


@pytest.mark.parametrize("call, match", [
    (lambda: sample_displacement_fields(16, 0.01, 0), "c"),
    (lambda: sample_displacement_fields(16, 0.01, 2.5), "c"),
    (lambda: sample_displacement_fields(16, 0.01, 15), "n - 2"),
    (lambda: sample_displacement_fields(3, 0.01, 1), "n"),
    (lambda: sample_displacement_fields(16, -1.0, 3), "T"),
    (lambda: sample_displacement_fields(16, float("nan"), 3), "T"),
    (lambda: temperature_for_delta(0.0, 3, 16), "delta"),
    (lambda: temperature_for_delta(-1.0, 3, 16), "delta"),
    (lambda: displacement_delta(0.01, 3, 16, formula="paper"), "formula"),
    (lambda: displacement_delta(0.01, 1, 16, formula="asymptotic"), "c=1"),
    (lambda: temperature_range(16, 1), "c=1"),
    (lambda: temperature_range(16, 3, method="guess"), "method"),
    (lambda: deform(np.zeros((2, 8, 8)), np.zeros((2, 2, 8, 8)), interp="cubic"), "interp"),
    (lambda: deform(np.zeros((2, 8, 6)), np.zeros((2, 2, 8, 6))), "square"),
    (lambda: deform(np.zeros((2, 8, 8)), np.zeros((3, 2, 8, 8))), "fields"),
    (lambda: deform(np.zeros((8, 8)), np.zeros((1, 2, 8, 8))), "shape"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
