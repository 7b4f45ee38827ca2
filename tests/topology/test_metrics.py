"""Distribution metrics: W2, Frechet distance, density/coverage, bond lengths, the protocol."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.linalg import sqrtm
from sklearn.neighbors import KernelDensity

from geolearn.datasets import make_circle_points, make_cyclooctane
from geolearn.topology.metrics import (
    bond_length_error,
    density_coverage,
    empirical_wasserstein2,
    frechet_distance,
    wasserstein2_protocol,
)

coords = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


def clouds(n_min=1, n_max=6, d_max=3):
    return st.tuples(st.integers(n_min, n_max), st.integers(1, d_max)).flatmap(
        lambda s: arrays(np.float64, s, elements=coords))


@given(clouds(), st.data())
def test_w2_shift_identity_and_permutation_invariance(X, data):
    c = data.draw(arrays(np.float64, X.shape[1], elements=coords))
    perm = data.draw(st.permutations(range(len(X))))
    assert empirical_wasserstein2(X, X + c) == pytest.approx(np.linalg.norm(c), rel=1e-9,
                                                              abs=1e-9)
    Y = data.draw(arrays(np.float64, X.shape, elements=coords))
    w = empirical_wasserstein2(X, Y)
    assert empirical_wasserstein2(X[list(perm)], Y) == pytest.approx(w, rel=1e-9, abs=1e-12)
    assert empirical_wasserstein2(Y, X) == pytest.approx(w, rel=1e-9, abs=1e-12)


@given(clouds(n_max=5), st.data())
def test_w2_is_the_best_permutation(X, data):
    Y = data.draw(arrays(np.float64, X.shape, elements=coords))
    best = min(np.sqrt(((X - Y[list(p)]) ** 2).sum(1).mean())
               for p in itertools.permutations(range(len(X))))
    assert empirical_wasserstein2(X, Y) == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_w2_bad_inputs():
    X = np.zeros((5, 2))
    with pytest.raises(ValueError, match="same number of samples"):
        empirical_wasserstein2(X, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="same number of features"):
        empirical_wasserstein2(X, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="NaN"):
        empirical_wasserstein2(X, np.full((5, 2), np.nan))


def test_frechet_distance_of_gaussians():
    rng = np.random.RandomState(0)
    A = rng.normal(size=(400, 3)) @ rng.normal(size=(3, 3))
    B = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 3)) + 1
    S1, S2 = np.cov(A, rowvar=False), np.cov(B, rowvar=False)
    mu = A.mean(0) - B.mean(0)
    expected = mu @ mu + np.trace(S1 + S2 - 2 * sqrtm(S1 @ S2).real)
    assert frechet_distance(A, B) == pytest.approx(expected, rel=1e-8)
    assert frechet_distance(A, A) == pytest.approx(0, abs=1e-9)
    assert frechet_distance(A, B) == pytest.approx(frechet_distance(B, A), rel=1e-9)


def test_frechet_distance_warns_on_singular_covariances():
    rng = np.random.RandomState(0)
    with pytest.warns(UserWarning, match="fewer samples"):
        value = frechet_distance(rng.normal(size=(5, 10)), rng.normal(size=(5, 10)))
    assert np.isfinite(value)
    with pytest.raises(ValueError, match="same number of features"):
        frechet_distance(rng.normal(size=(5, 2)), rng.normal(size=(5, 3)))
    with pytest.raises(ValueError, match="2"):
        frechet_distance(rng.normal(size=(1, 2)), rng.normal(size=(5, 2)))


def _brute_density_coverage(R, F, k):
    d_rr = np.linalg.norm(R[:, None] - R[None], axis=2)
    radii = np.sort(d_rr, axis=1)[:, k]
    inside = np.linalg.norm(F[:, None] - R[None], axis=2) < radii
    return inside.sum() / (k * len(F)), inside.any(axis=0).mean()


@given(st.integers(0, 10_000), st.integers(1, 4))
def test_density_coverage_against_brute_force(seed, k):
    rng = np.random.RandomState(seed)
    R, F = rng.normal(size=(30, 2)), rng.normal(size=(25, 2)) * 1.5
    d, c = density_coverage(R, F, k=k)
    ed, ec = _brute_density_coverage(R, F, k)
    assert d == pytest.approx(ed) and c == pytest.approx(ec)


def test_density_coverage_values():
    R = np.random.RandomState(0).normal(size=(300, 2))
    density, coverage = density_coverage(R, R)
    assert coverage == 1.0 and density > 1.0          # each point lies in its own ball
    d, c = density_coverage(R, R + 100.0)
    assert d == 0.0 and c == 0.0
    with pytest.raises(ValueError, match="k \\+ 1"):
        density_coverage(R[:5], R, k=5)
    with pytest.raises(ValueError, match="k must"):
        density_coverage(R, R, k=0)


def test_bond_length_error():
    X = make_cyclooctane(30, random_state=0)
    assert bond_length_error(X) < 1e-8
    # scaling every coordinate by s scales each bond: |1.52 s - 1.52|
    assert bond_length_error(1.1 * X) == pytest.approx(0.152)
    with pytest.raises(ValueError, match="24"):
        bond_length_error(X[:, :12])


def test_wasserstein2_protocol():
    circle = lambda n, rs: make_circle_points(n, random_state=rs)   # noqa: E731
    mean, std, values = wasserstein2_protocol(circle, circle, n=150, n_repeats=4,
                                              random_state=0, return_values=True)
    assert values.shape == (4,) and mean == pytest.approx(values.mean())
    assert std == pytest.approx(values.std(ddof=1))
    again = wasserstein2_protocol(circle, circle, n=150, n_repeats=4, random_state=0)
    assert again == (mean, std)
    # an array reference is subsampled without replacement; a KDE that fills the hole is farther
    X = make_circle_points(600, noise=0.03, random_state=1)
    sharp = KernelDensity(bandwidth=0.03).fit(X)
    blurred = KernelDensity(bandwidth=0.5).fit(X)
    w_sharp = wasserstein2_protocol(sharp, X, n=200, n_repeats=3, random_state=0)[0]
    w_blur = wasserstein2_protocol(blurred, X, n=200, n_repeats=3, random_state=0)[0]
    assert w_sharp < w_blur
    with pytest.raises(ValueError, match="without replacement"):
        wasserstein2_protocol(sharp, X[:100], n=200)
    with pytest.raises(ValueError, match="n_repeats"):
        wasserstein2_protocol(sharp, X, n=10, n_repeats=0)
    with pytest.raises(TypeError, match="sample"):
        wasserstein2_protocol(object(), X, n=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert wasserstein2_protocol(sharp, X, n=10, n_repeats=1)[1] == 0.0
