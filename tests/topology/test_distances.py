"""Diagram distances and Betti numbers: known values, brute force and metric properties."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geolearn.topology import (
    _distances,
    betti_curve,
    betti_numbers,
    diagram_bottleneck,
    diagram_wasserstein,
)

EMPTY = np.empty((0, 2))


@st.composite
def diagrams(draw, max_points=4, essential=0):
    """Small diagrams on a coarse grid (ties included), with ``essential`` infinite points."""
    m = draw(st.integers(0, max_points))
    b = np.array(draw(st.lists(st.integers(0, 8), min_size=m, max_size=m)), float) / 2
    pers = np.array(draw(st.lists(st.integers(0, 8), min_size=m, max_size=m)), float) / 2
    eb = np.array(draw(st.lists(st.integers(0, 8), min_size=essential, max_size=essential)),
                  float)
    return np.r_[np.c_[b, b + pers], np.c_[eb, np.full(essential, np.inf)]].reshape(-1, 2)


def brute_force(A, B, p, q=np.inf):
    """Every partial matching of two finite diagrams, the rest sent to the diagonal."""
    def diag(x):
        return (x[1] - x[0]) / 2 * (1 if np.isinf(q) else 2 ** (1 / q))

    def cost(x, y):
        return np.linalg.norm(x - y, ord=q)

    best = np.inf
    m1, m2 = len(A), len(B)
    for k in range(min(m1, m2) + 1):
        for rows in itertools.combinations(range(m1), k):
            for cols in itertools.permutations(range(m2), k):
                c = [cost(A[i], B[j]) for i, j in zip(rows, cols)]
                c += [diag(A[i]) for i in range(m1) if i not in rows]
                c += [diag(B[j]) for j in range(m2) if j not in cols]
                total = max(c, default=0.0) if np.isinf(p) else sum(v**p for v in c) ** (1 / p)
                best = min(best, total)
    return best


def test_known_values():
    assert diagram_wasserstein([[0, 2]], EMPTY) == 1.0
    assert diagram_wasserstein([[0, 2]], [[0, 3]], p=1) == 1.0
    assert diagram_wasserstein([[0, 2]], [[0, 2]]) == 0.0
    assert diagram_wasserstein([[0, 2]], EMPTY, internal_p=2) == pytest.approx(np.sqrt(2))
    assert diagram_wasserstein([[0, 2], [0, 4]], EMPTY, p=2) == pytest.approx(np.sqrt(1 + 4))
    assert diagram_bottleneck([[0, 2], [0, 10]], [[0, 3]]) == 5.0
    assert diagram_bottleneck(EMPTY, []) == 0.0


def test_essential_points():
    inf = np.inf
    # matched among themselves by sorted birth, finite parts matched apart
    assert diagram_wasserstein([[0, inf], [5, inf]], [[6, inf], [1, inf]], p=1) == 2.0
    assert diagram_wasserstein([[0, inf], [0, 2]], [[1, inf]], p=1) == 2.0
    assert diagram_bottleneck([[0, inf], [0, 2]], [[3, inf]]) == 3.0
    # different numbers of essential classes: infinite, never finite
    assert diagram_wasserstein([[0, inf]], EMPTY) == inf
    assert diagram_bottleneck([[0, inf], [1, inf]], [[0, inf]]) == inf


@given(diagrams(), diagrams(), st.sampled_from([1.0, 2.0, 3.0, np.inf]),
       st.sampled_from([1.0, 2.0, np.inf]))
def test_matches_brute_force(A, B, p, q):
    expected = brute_force(A, B, p, q)
    assert diagram_wasserstein(A, B, p=p, internal_p=q) == pytest.approx(expected, abs=1e-12)


@given(diagrams(essential=1), diagrams(essential=1), diagrams(essential=1),
       st.sampled_from([1.0, 2.0, np.inf]))
def test_metric_properties(A, B, C, p):
    d = lambda x, y: diagram_wasserstein(x, y, p=p)   # noqa: E731
    assert d(A, A) == 0.0
    assert d(A, B) == pytest.approx(d(B, A), abs=1e-12)
    assert d(A, C) <= d(A, B) + d(B, C) + 1e-9
    assert diagram_bottleneck(A, B) <= diagram_wasserstein(A, B, p=p) + 1e-12


@given(diagrams(max_points=6), st.permutations(range(6)))
def test_order_of_points_does_not_matter(A, perm):
    B = A[[i for i in perm if i < len(A)]]
    assert diagram_wasserstein(A, B) == 0.0
    assert diagram_bottleneck(A, B) == 0.0


@pytest.mark.parametrize("bad, word", [
    ([[1.0, 0.0]], "birth > death"), ([[np.nan, 1.0]], "NaN"), ([[np.inf, np.inf]], "birth"),
    ([[0.0, 1.0, 2.0]], "shape"),
])
def test_bad_diagrams(bad, word):
    with pytest.raises(ValueError, match=word):
        diagram_wasserstein(bad, EMPTY)
    with pytest.raises(ValueError, match=word):
        betti_numbers([bad])


@pytest.mark.parametrize("p", [0.5, np.nan, None])
def test_bad_orders(p):
    with pytest.raises(ValueError, match="p must"):
        diagram_wasserstein([[0, 1]], EMPTY, p=p)
    with pytest.raises(ValueError, match="internal_p"):
        diagram_wasserstein([[0, 1]], EMPTY, internal_p=p)


def test_large_diagrams_warn(monkeypatch):
    from geolearn.topology import _distances

    monkeypatch.setattr(_distances, "_WARN_SIZE", 100)
    A = np.c_[np.zeros(101), np.linspace(0.1, 1, 101)]
    with pytest.warns(UserWarning, match="O\\(\\(m1 \\+ m2\\)\\^3\\)"):
        diagram_wasserstein(A[:1], A, p=1)


needs_gudhi = pytest.mark.skipif(_distances._hera() is None, reason="needs gudhi (tda extra)")


@needs_gudhi
@given(diagrams(essential=1), diagrams(essential=1), st.sampled_from([1.0, 2.0, 3.0, np.inf]),
       st.sampled_from([1.0, 2.0, np.inf]))
def test_gudhi_backend_matches_the_exact_one(A, B, p, q):
    if np.isinf(p) and not np.isinf(q):
        return  # hera's bottleneck has the L_inf ground norm only (refused below)
    exact = diagram_wasserstein(A, B, p=p, internal_p=q, backend="exact")
    hera = diagram_wasserstein(A, B, p=p, internal_p=q, backend="gudhi")
    assert hera == pytest.approx(exact, rel=1e-6, abs=1e-12)


@needs_gudhi
@pytest.mark.parametrize("p", [1.0, 2.0, np.inf])
def test_gudhi_backend_on_large_diagrams(p):
    rng = np.random.RandomState(0)
    A, B = (np.c_[b, b + rng.exponential(1.0, 400)] for b in rng.uniform(0, 5, (2, 400)))
    exact = diagram_wasserstein(A, B, p=p, backend="exact")
    assert diagram_wasserstein(A, B, p=p, backend="gudhi") == pytest.approx(exact, rel=1e-6)
    if np.isinf(p):
        assert diagram_bottleneck(A, B, backend="gudhi") == exact


@needs_gudhi
def test_auto_backend_uses_gudhi_beyond_its_size(monkeypatch):
    calls = []
    hera_cost = _distances._hera_cost
    monkeypatch.setattr(_distances, "_hera_cost", lambda *a: calls.append(1) or hera_cost(*a))
    monkeypatch.setattr(_distances, "_GUDHI_SIZE", 4)
    A, B = [[0, 1], [0, 2]], [[0, 1.5], [1, 3], [0, 0.5]]
    assert diagram_wasserstein(A, B[:2]) == diagram_wasserstein(A, B[:2], backend="exact")
    assert calls == []  # 4 finite points: exact
    assert diagram_wasserstein(A, B) == pytest.approx(diagram_wasserstein(A, B, backend="exact"))
    assert calls == [1]
    diagram_bottleneck(A, B)  # hera's bottleneck is the slower one: never chosen by auto
    assert calls == [1]


def test_backend_choices(monkeypatch):
    with pytest.raises(ValueError, match="backend"):
        diagram_wasserstein([[0, 1]], EMPTY, backend="hera")
    monkeypatch.setattr(_distances, "_GUDHI_SIZE", 0)
    monkeypatch.setattr(_distances, "_hera", lambda: None)  # GUDHI not installed
    assert diagram_wasserstein([[0, 2]], EMPTY) == 1.0  # auto: exact
    with pytest.raises(ImportError, match="backend='gudhi' needs GUDHI"):
        diagram_wasserstein([[0, 2]], EMPTY, backend="gudhi")


@needs_gudhi
def test_gudhi_bottleneck_needs_the_linf_ground_norm():
    with pytest.raises(ValueError, match="internal_p=2"):
        diagram_wasserstein([[0, 2]], EMPTY, p=np.inf, internal_p=2, backend="gudhi")
    assert diagram_wasserstein([[0, 2]], EMPTY, p=np.inf, internal_p=2) == pytest.approx(
        np.sqrt(2))  # auto: exact


def test_betti_numbers():
    dgms = [[[0, 1], [0, np.inf]], [[0.2, 1.5], [0.3, 0.4]], EMPTY]
    np.testing.assert_array_equal(betti_numbers(dgms), [2, 2, 0])
    np.testing.assert_array_equal(betti_numbers(dgms, 0.5), [2, 1, 0])
    np.testing.assert_array_equal(betti_numbers(dgms, [2.0, 0.0, 0.0]), [1, 2, 0])
    np.testing.assert_array_equal(betti_numbers(np.array([[0, 1.0]])), [1])
    # essential classes count at every threshold, infinity included (inf - 0 > inf is False)
    np.testing.assert_array_equal(betti_numbers(dgms, np.inf), [1, 0, 0])
    np.testing.assert_array_equal(betti_numbers(dgms, [np.inf, 1.0, 0.0]), [1, 1, 0])
    with pytest.raises(ValueError, match="min_persistence"):
        betti_numbers(dgms, [1.0, 2.0])
    with pytest.raises(ValueError, match="diagrams"):
        betti_numbers(3)


@given(diagrams(max_points=6, essential=2), st.lists(st.integers(-2, 20), max_size=8))
def test_betti_curve_counts_alive_features(D, radii):
    r = np.array(radii, dtype=float) / 2
    expected = [int(((D[:, 0] <= x) & (x < D[:, 1])).sum()) for x in r]
    np.testing.assert_array_equal(betti_curve(D, r), expected)


def test_betti_curve_scalar_and_nan():
    assert betti_curve([[0, 1]], 0.5) == 1
    with pytest.raises(ValueError, match="radii"):
        betti_curve([[0, 1]], [np.nan])
