"""Principal angles, Schubert distances and the flag mean against closed forms and scipy."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

from geolearn.subspaces import flag_mean, principal_angles, schubert_distance

from ._data import haar_sets, orth, projector


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 12), l=st.integers(1, 6),
       k=st.integers(1, 6), raw=st.booleans())
def test_principal_angles_match_scipy(seed, n, l, k, raw):
    l, k = min(l, n), min(k, n)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3, n, l))
    X = X if raw else np.stack([orth(x) for x in X])
    K = rng.standard_normal((n, k))
    got = principal_angles(X, K)
    want = np.stack([np.sort(scipy.linalg.subspace_angles(x, K)) for x in X])
    assert got.shape == (3, min(l, k))
    # scipy resolves angles near 0 only to ~sqrt(eps) (see the small-angle test)
    np.testing.assert_allclose(got, want, atol=1e-7)
    np.testing.assert_allclose(np.cos(got), np.cos(want), atol=1e-12)
    assert np.all(np.diff(got, axis=1) >= 0)
    assert np.all((got >= 0) & (got <= np.pi / 2))


def test_small_angles_keep_their_digits():
    """theta = 1e-11 rad: arccos of the cosine would return 0 (or ~1e-8)."""
    n = 6
    e = np.eye(n)
    for theta in (1e-11, 1e-7, 1e-3):
        K = (np.cos(theta) * e[:, 0] + np.sin(theta) * e[:, 3])[:, None]
        got = principal_angles(e[None, :, :2], K)
        np.testing.assert_allclose(got, [[theta]], rtol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_small_angles_between_nearly_equal_multidimensional_subspaces(seed):
    """Sines of tiny angles in dimension > 1 against a 60-digit reference.

    The cosines cluster at 1 there, so the principal vectors are ill-determined and
    their residuals gave sines wrong by up to 40% relative; the singular values of the
    residual ``(I - K K^T) X`` are well-determined.
    """
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    rng = np.random.default_rng(seed)
    n, l, k = 8, 2 + seed % 2, 3 + seed % 3
    Q = orth(rng.standard_normal((n, n)))
    A = rng.standard_normal((n, n))
    X = scipy.linalg.expm(10.0 ** -(4 + seed) * (A - A.T)) @ Q[:, :l]
    K = Q[:, :k]
    Qx = mpmath.qr(mpmath.matrix(X.tolist()))[0][:, :l]
    Qk = mpmath.qr(mpmath.matrix(K.tolist()))[0][:, :k]
    sines = mpmath.svd_r(Qx - Qk * (Qk.T * Qx), compute_uv=False)
    want = np.sort([float(mpmath.asin(s)) for s in sines])
    assert want.max() < 1e-3
    np.testing.assert_allclose(principal_angles(X[None], K)[0], want, rtol=1e-5)


def test_ragged_sets_and_pi_over_two_padding():
    e = np.eye(5)
    X = [e[:, :1], e[:, 1:4]]
    K = e[:, [0, 1, 2]]
    got = principal_angles(X, K)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got[0], [0, np.pi / 2, np.pi / 2], atol=1e-12)
    np.testing.assert_allclose(got[1], [0, 0, np.pi / 2], atol=1e-12)


def test_schubert_distance_closed_forms():
    e = np.eye(4)
    theta = 0.3
    # V = span(e0, e1); W = span(e1, cos t e2 + sin t e0): angles (0, t)
    X = e[None, :, :2]
    K = np.column_stack([e[:, 1], np.cos(theta) * e[:, 2] + np.sin(theta) * e[:, 0]])
    np.testing.assert_allclose(principal_angles(X, K),
                               [[0, np.pi / 2 - theta]], atol=1e-12)
    t2 = np.pi / 2 - theta
    assert schubert_distance(X, K, 1)[0] == pytest.approx(0, abs=1e-12)
    cases = {"chordal": np.sin(t2), "geodesic": t2, "cos2": (1 - np.cos(t2) ** 2) / 2,
             "cos": (1 - np.cos(t2)) / 2}
    for metric, want in cases.items():
        got = schubert_distance(X, K, 2, metric=metric)[0]
        assert got == pytest.approx(want, abs=1e-12), metric
    assert schubert_distance(X, K, 2, "geodesic", p=1)[0] == pytest.approx(t2)


def test_schubert_distance_rejects_bad_arguments():
    X = haar_sets(6, 3, 2)
    K = np.eye(6)[:, :3]
    with pytest.raises(ValueError, match="intersection_dim"):
        schubert_distance(X, K, 3)
    with pytest.raises(ValueError, match="metric"):
        schubert_distance(X, K, 1, metric="frobenius")
    with pytest.raises(ValueError, match="K must be an"):
        principal_angles(X, np.eye(5)[:, :2])
    with pytest.raises(ValueError, match="rank-deficient"):
        principal_angles(X, np.ones((6, 2)))


@pytest.mark.parametrize("k", [1, 2, 4])
def test_flag_mean_is_top_eigenvectors_of_projector_sum(k):
    X = haar_sets(10, 15, 3, seed=1)
    P = sum(x @ x.T for x in X)
    U = np.linalg.eigh(P)[1][:, ::-1][:, :k]
    K = flag_mean(X, k)
    np.testing.assert_allclose(K.T @ K, np.eye(k), atol=1e-12)
    np.testing.assert_allclose(projector(K), projector(U), atol=1e-10)


def test_flag_mean_rejects_bad_n_components():
    with pytest.raises(ValueError, match="n_components"):
        flag_mean(haar_sets(5, 3, 2), 6)
