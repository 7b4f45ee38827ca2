"""persistence_diagrams: analytic diagrams, both backends, thresholds and bad inputs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from geolearn.topology import _persistence, persistence_diagrams
from geolearn.topology._rips import MAX_SIMPLICES, mst_edges, rips_complex
from tests.helpers import assert_message

gph = pytest.importorskip("gph")


def _circle(n):
    t = 2 * np.pi * np.arange(n) / n
    return np.c_[np.cos(t), np.sin(t)]


def _same(a, b, atol):
    a, b = (d[np.lexsort((d[:, 1], d[:, 0]))] for d in (a, b))
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=atol)


def test_square_and_its_loop():
    X = np.array([[0, 0], [1, 0], [1, 1], [0, 1.0]])
    for backend in ("exact", "giotto-ph"):
        h0, h1 = persistence_diagrams(X, backend=backend)
        np.testing.assert_array_equal(h0, [[0, 1], [0, 1], [0, 1], [0, np.inf]])
        np.testing.assert_allclose(h1, [[1, np.sqrt(2)]])
        assert h0.dtype == h1.dtype == np.float64


def test_h0_is_the_minimum_spanning_tree():
    X = np.random.RandomState(0).normal(size=(60, 5))
    h0 = persistence_diagrams(X, maxdim=0)[0]
    mst = minimum_spanning_tree(squareform(pdist(X))).data
    np.testing.assert_allclose(h0[:-1, 1], np.sort(mst), rtol=1e-14)
    assert h0[-1, 1] == np.inf and (h0[:, 0] == 0).all()


@pytest.mark.parametrize("coeff", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_backend_agrees_with_giotto(seed, coeff):
    X = np.random.RandomState(seed).uniform(size=(25, 3))
    exact = persistence_diagrams(X, maxdim=2, coeff=coeff, backend="exact")
    ref = persistence_diagrams(X, maxdim=2, coeff=coeff, backend="giotto-ph")
    for a, b in zip(exact, ref):
        _same(a, b, atol=1e-12)      # giotto-ph's float32 values map back to exact distances
    raw = gph.ripser_parallel(X, maxdim=2, coeff=coeff)["dgms"]
    for a, b in zip(exact[1:], raw[1:]):
        _same(a, b[b[:, 1] > b[:, 0]].astype(float), atol=1e-5)


def test_threshold_makes_late_classes_essential():
    X = _circle(12)
    for backend in ("exact", "giotto-ph"):
        h0, h1 = persistence_diagrams(X, thresh=1.0, backend=backend)
        assert h1[:, 1].tolist() == [np.inf]          # the loop would die at sqrt(3) > 1
        assert np.isinf(h0[:, 1]).sum() == 1
        h0, _ = persistence_diagrams(X, thresh=0.1, backend=backend)
        assert np.isinf(h0[:, 1]).all() and len(h0) == 12   # no edge: 12 components


def _dense_ranks_route(D, maxdim, thresh, coeff):
    """The diagrams as computed before the thresholded route: giotto-ph on the ranks of all
    the distances (a dense matrix), H0 from Prim's tree of the rows of ``D``."""
    w, _ = mst_edges(D)
    finite, n_inf = np.sort(w[(w > 0) & (w <= thresh)]), 1 + int((w > thresh).sum())
    h0 = np.c_[np.zeros(len(finite) + n_inf), np.r_[finite, np.full(n_inf, np.inf)]]
    iu = np.triu_indices(len(D), 1)
    values, ranks = np.unique(D[iu], return_inverse=True)
    R = np.zeros(D.shape, dtype=np.float32)
    R[iu] = ranks
    R += R.T
    t = np.searchsorted(values, thresh, "right") - 1.0 if np.isfinite(thresh) else thresh
    out = [h0]
    for dgm in gph.ripser_parallel(R, maxdim=maxdim, thresh=t, coeff=coeff,
                                   metric="precomputed")["dgms"][1:]:
        dgm = dgm[dgm[:, 1] > dgm[:, 0]].astype(np.float64)
        finite = np.isfinite(dgm)
        dgm[finite] = values[dgm[finite].astype(np.int64)]
        out.append(dgm)
    return [d[np.lexsort((d[:, 1], d[:, 0]))] for d in out]


@pytest.mark.parametrize("coeff", [2, 3])
@pytest.mark.parametrize("thresh", [0.0, 0.3, 1.0, 1.5, np.inf])
def test_diagrams_are_those_of_the_dense_ranks_bit_for_bit(thresh, coeff):
    """Below a threshold only the distances up to it are ranked and passed to giotto-ph,
    and H0 comes from a spanning forest (single linkage without one): the diagrams are
    the previous route's to the last bit, on a grid with duplicate points and tied
    distances, an asymmetric precomputed matrix (Prim's tree) and a torus."""
    from geolearn.datasets import make_torus_points

    rng = np.random.RandomState(0)
    grid = rng.randint(0, 4, size=(60, 3)) / 2.0
    D = squareform(pdist(grid))
    asym = D + np.triu(rng.uniform(0, 1e-9, D.shape), 1)
    torus = make_torus_points(150, embedding="r3", random_state=0)
    for X, metric in ((grid, "euclidean"), (D, "precomputed"), (asym, "precomputed"),
                      (torus, "euclidean")):
        ref = _dense_ranks_route(X if metric == "precomputed" else squareform(pdist(X)), 2,
                                 thresh, coeff)
        got = persistence_diagrams(X, maxdim=2, thresh=thresh, coeff=coeff, metric=metric)
        assert [len(d) for d in got] == [len(d) for d in ref]
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("thresh", [0.6, 1.0])
def test_thresholded_diagrams_are_the_peers(thresh):
    """Thresholded H1 and H2 of a torus equal giotto-ph's (and ripser.py's) on the points,
    up to their float32 values."""
    from geolearn.datasets import make_torus_points

    X = make_torus_points(300, embedding="r3", random_state=0)
    ours = persistence_diagrams(X, maxdim=2, thresh=thresh)
    peers = [gph.ripser_parallel(X, maxdim=2, thresh=thresh)["dgms"]]
    try:
        from ripser import ripser
    except ImportError:                     # not a dependency of the tda extra
        pass
    else:
        peers.append(ripser(X, maxdim=2, thresh=thresh)["dgms"])
    for peer in peers:
        for a, b in zip(ours, peer):
            _same(a, b[b[:, 1] > b[:, 0]].astype(np.float64), atol=1e-6)


def test_precomputed_equals_points():
    X = np.random.RandomState(1).normal(size=(30, 3))
    a = persistence_diagrams(X, maxdim=1)
    b = persistence_diagrams(squareform(pdist(X)), maxdim=1, metric="precomputed")
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_other_metric():
    X = np.random.RandomState(2).normal(size=(20, 3))
    a = persistence_diagrams(X, metric="manhattan")
    b = persistence_diagrams(squareform(pdist(X, "cityblock")), metric="precomputed")
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_duplicates_give_no_zero_length_bars():
    X = np.repeat(_circle(8), 3, axis=0)
    h0, h1 = persistence_diagrams(X, backend="exact")
    assert len(h0) == 8 and (h0[:, 1] > h0[:, 0]).all()
    _same(h1, persistence_diagrams(_circle(8))[1], atol=1e-12)


@pytest.mark.parametrize("subsample", ["uniform", "maxmin"])
def test_subsampling(subsample):
    X = np.random.RandomState(3).normal(size=(200, 2))
    a = persistence_diagrams(X, n_subsample=40, subsample=subsample, random_state=0)
    b = persistence_diagrams(X, n_subsample=40, subsample=subsample, random_state=0)
    assert len(a[0]) <= 40
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    D = squareform(pdist(X))
    c = persistence_diagrams(D, metric="precomputed", n_subsample=40, subsample=subsample,
                             random_state=0)
    for u, v in zip(a, c):
        np.testing.assert_allclose(u, v, rtol=1e-12)


def test_maxmin_landmarks_cover_the_cloud():
    X = np.random.RandomState(4).uniform(size=(500, 2))
    h0 = persistence_diagrams(X, maxdim=0, n_subsample=30, subsample="maxmin", random_state=0)[0]
    uni = persistence_diagrams(X, maxdim=0, n_subsample=30, random_state=0)[0]
    # farthest-point landmarks are spread out: their nearest-neighbour gaps are more even
    assert np.ptp(h0[:-1, 1]) < np.ptp(uni[:-1, 1])


def test_exact_backend_refuses_large_complexes(monkeypatch):
    X = np.random.RandomState(0).normal(size=(120, 2))
    with pytest.raises(ValueError) as exc:
        persistence_diagrams(X, backend="exact")
    assert_message(exc, "200,000", "backend", "geolearn[tda]")
    monkeypatch.setattr(_persistence, "_giotto", lambda: None)
    with pytest.raises(ImportError) as exc:
        persistence_diagrams(X)
    assert_message(exc, 'pip install "geolearn[tda]"', "thresh", "n_subsample")
    with pytest.raises(ImportError, match="geolearn\\[tda\\]"):
        persistence_diagrams(X[:10], backend="giotto-ph")
    # auto falls back to the exact reduction on small inputs, and thresh makes room
    assert len(persistence_diagrams(X[:30])[1]) >= 0
    persistence_diagrams(X, thresh=0.3)
    assert persistence_diagrams(X, maxdim=0)[0].shape == (120, 2)   # H0 never needs it


def test_complex_size_limit_is_the_top_dimension():
    D = squareform(pdist(np.random.RandomState(0).normal(size=(48, 3))))
    levels = rips_complex(D, 2)
    assert [len(s) for s, _ in levels] == [48, 1128, 17296, 194580]
    assert len(levels[-1][0]) <= MAX_SIMPLICES
    # each level is in filtration order and values are diameters
    for S, v in levels[1:]:
        assert (np.diff(v) >= 0).all()
        diam = np.max([D[S[:, i], S[:, j]] for i in range(S.shape[1])
                       for j in range(i + 1, S.shape[1])], axis=0)
        np.testing.assert_array_equal(v, diam)


@pytest.mark.parametrize("kwargs, word", [
    (dict(maxdim=-1), "maxdim"), (dict(maxdim=1.5), "maxdim"), (dict(coeff=4), "coeff"),
    (dict(coeff=1), "coeff"), (dict(thresh=-1.0), "thresh"), (dict(thresh=np.nan), "thresh"),
    (dict(n_subsample=1), "n_subsample"), (dict(subsample="random"), "subsample"),
    (dict(backend="ripser"), "backend"), (dict(metric=3), "metric"),
])
def test_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        persistence_diagrams(_circle(6), **kwargs)


def test_bad_points():
    X = _circle(6)
    for value in (np.nan, np.inf):
        bad = X.copy()
        bad[2, 1] = value
        with pytest.raises(ValueError, match="X"):
            persistence_diagrams(bad)
    with pytest.raises(ValueError, match="at least 2"):
        persistence_diagrams(X[:1])
    with pytest.raises(ValueError, match="2D"):
        persistence_diagrams(X.ravel())


def test_bad_distance_matrices():
    D = squareform(pdist(_circle(6)))
    with pytest.raises(ValueError, match="square"):
        persistence_diagrams(D[:, :5], metric="precomputed")
    asym = D.copy()
    asym[0, 1] += 1e-6
    with pytest.raises(ValueError, match="symmetric"):
        persistence_diagrams(asym, metric="precomputed")
    diag = D + 1e-3 * np.eye(6)
    with pytest.raises(ValueError, match="diagonal"):
        persistence_diagrams(diag, metric="precomputed")
    with pytest.raises(ValueError, match="non-negative"):
        persistence_diagrams(-D, metric="precomputed")
    assert persistence_diagrams(D + 1e-10 * np.eye(6), metric="precomputed")[1].shape == (1, 2)


def test_h0_of_large_inputs_uses_blas_and_remeasures_the_tree():
    X = np.random.RandomState(5).normal(size=(300, 500))       # n^2 d above the pair-by-pair limit
    h0 = persistence_diagrams(X, maxdim=0)[0]
    mst = np.sort(minimum_spanning_tree(squareform(pdist(X))).data)
    np.testing.assert_allclose(h0[:-1, 1], mst, rtol=1e-13)


small_clouds = st.tuples(st.integers(3, 12), st.integers(1, 3)).flatmap(
    lambda s: arrays(np.float64, s, elements=st.integers(-20, 20).map(lambda v: v / 4)))


@given(small_clouds, st.data())
def test_diagrams_are_invariant_and_backends_agree(X, data):
    perm = data.draw(st.permutations(range(len(X))))
    scale = data.draw(st.sampled_from([0.5, 2.0, 3.0]))
    coeff = data.draw(st.sampled_from([2, 3]))
    ref = persistence_diagrams(X, maxdim=2, coeff=coeff, backend="exact")
    for a, b in zip(ref, persistence_diagrams(X, maxdim=2, coeff=coeff, backend="giotto-ph")):
        _same(a, b, atol=1e-6)
    for a, b in zip(ref, persistence_diagrams(X[list(perm)] + 1.5, maxdim=2, coeff=coeff,
                                              backend="exact")):
        _same(a, b, atol=1e-12)
    for a, b in zip(ref, persistence_diagrams(scale * X, maxdim=2, coeff=coeff,
                                              backend="exact")):
        _same(scale * a, b, atol=1e-12)
    for d in ref:
        assert (d[:, 1] > d[:, 0]).all()          # never a zero-length or negative bar


def test_giotto_values_are_the_exact_distances_when_float32_ties():
    """Two distances round to the same float32: the birth is the exact critical edge.

    A 4-cycle with sides 1, 1, 1, 1 + 3e-9 and diagonals 1.5: H1 is born at the longest
    side and dies at a diagonal. 1 and 1 + 3e-9 are one float32, so matching the float32
    birth back to the nearest float64 distance gave 1.0.
    """
    s = 1.0 + 3e-9
    D = np.array([[0, 1, 1.5, s], [1, 0, 1, 1.5], [1.5, 1, 0, 1], [s, 1.5, 1, 0]])
    for backend in ("exact", "giotto-ph"):
        h0, h1 = persistence_diagrams(D, metric="precomputed", maxdim=1, backend=backend)
        np.testing.assert_array_equal(h1, [[s, 1.5]])


def test_giotto_threads_give_the_one_threads_diagrams():
    """giotto-ph's generators need not follow its diagram's row order with several threads
    (a torus at maxdim 2 raised "generators that do not match its diagram")."""
    from geolearn.datasets import make_torus_points

    X = make_torus_points(300, embedding="r3", random_state=0)
    one = persistence_diagrams(X, maxdim=2, n_jobs=1, backend="giotto-ph")
    two = persistence_diagrams(X, maxdim=2, n_jobs=2, backend="giotto-ph")
    assert len(one[0]) == 300 and len(one[2]) >= 1
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_past_float32_ranks_giotto_values_come_from_its_critical_edges(monkeypatch):
    """The path for more than 2^24 distinct distances (forced here): the same diagrams."""
    X = np.random.RandomState(3).uniform(size=(40, 3))
    ranked = persistence_diagrams(X, maxdim=2, backend="giotto-ph")
    monkeypatch.setattr(_persistence, "_MAX_RANKS", 0)
    edges = persistence_diagrams(X, maxdim=2, backend="giotto-ph", n_jobs=2)
    for a, b in zip(ranked, edges):
        np.testing.assert_array_equal(a, b)
