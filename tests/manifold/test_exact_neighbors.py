"""CIDM's exact neighbour queries (scipy's KD-tree in a few dimensions, rows grouped by tree
leaf) give the transform of brute-force neighbours to 1e-12, whatever the row order."""

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import NearestNeighbors

from geolearn.datasets import make_torus_points
from geolearn.manifold import CIDM
from geolearn.manifold import _neighbors as neighbors_module
from geolearn.manifold._neighbors import ExactNeighbors


def _brute(X, Q, k):
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    idx = np.argsort(d, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(d, idx, axis=1), idx


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 4), st.integers(1, 20), st.sampled_from([2, 4, 20]))
def test_exact_neighbors_equal_brute_force(seed, n_jobs, k, dim):
    rng = np.random.default_rng(seed)
    X, Q = rng.standard_normal((60, dim)), rng.standard_normal((25, dim))
    dist, idx = ExactNeighbors().fit(X).kneighbors(Q, k, n_jobs=n_jobs)
    d_ref, i_ref = _brute(X, Q, k)
    np.testing.assert_allclose(dist, d_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(idx, i_ref)


def _torus(n, seed, noise=0.0):
    X = make_torus_points(n, R=1.0, r=1.0, random_state=seed)
    return X + noise * np.random.default_rng(seed).standard_normal(X.shape)


class _CountingTree:
    """A KD-tree that counts the k-NN queries it answers (k > 1)."""

    def __init__(self, tree):
        self.tree, self.rows = tree, 0

    def query(self, X, k=1, **kwargs):
        if not np.isscalar(k):
            self.rows += len(X)
        return self.tree.query(X, k=k, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tree, name)


def _seeded_query(X, Q, k, n_jobs=1):
    """Seeded neighbours of ``Q``, and how many rows the tree had to answer."""
    nn = ExactNeighbors()
    nn.fit_kneighbors(X, 3, n_query=k)
    assert nn.seeds_ is not None
    nn.tree_ = _CountingTree(nn.tree_)
    dist, idx = nn.kneighbors(Q, k, n_jobs=n_jobs, nearest=nn.nearest(Q))
    return dist, idx, nn.tree_.rows


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**16), st.integers(2, 40), st.sampled_from([0.0, 0.03]),
       st.integers(1, 3), st.booleans())
def test_seeded_queries_equal_brute_force(seed, k, noise, n_jobs, duplicates):
    X = _torus(400, seed, noise)
    if duplicates:  # ties at every rank of the duplicated points
        X[200:260] = X[:60]
    Q = np.concatenate([_torus(150, seed + 1, noise), 2.5 * _torus(20, seed + 2)])  # on, off
    with mock.patch.object(neighbors_module, "_SEED_MIN_SHARE", 0.0):  # seeds at any k
        dist, idx, tree_rows = _seeded_query(X, Q, k, n_jobs)
    d_ref, i_ref = _brute(X, Q, k)
    np.testing.assert_allclose(dist, d_ref, rtol=0, atol=1e-12)
    # the same neighbours; among equal distances (duplicates) either point is right
    np.testing.assert_allclose(np.linalg.norm(X[idx] - Q[:, None], axis=2), d_ref,
                               rtol=0, atol=1e-12)
    if not duplicates:
        np.testing.assert_array_equal(idx, i_ref)
    assert tree_rows >= 20  # the rows far off the manifold are beyond any seed list


def test_seeds_answer_most_queries_on_a_manifold():
    X, Q = _torus(2000, 0), _torus(500, 1)
    dist, idx, tree_rows = _seeded_query(X, Q, 60)
    d_ref, i_ref = _brute(X, Q, 60)
    np.testing.assert_array_equal(idx, i_ref)
    np.testing.assert_allclose(dist, d_ref, rtol=0, atol=1e-12)
    assert tree_rows < 100  # 40 of the 500 rows at this size


def test_fit_kneighbors_ranks_the_fitted_rows_and_keeps_seeds_only_where_they_pay():
    X = _torus(500, 0)
    nn = ExactNeighbors()
    dist, idx = nn.fit_kneighbors(X, 10, n_query=30)
    d_ref, i_ref = _brute(X, X, 10)
    np.testing.assert_allclose(dist, d_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(idx, i_ref)
    d_seed, i_seed = _brute(X, X, 45)
    np.testing.assert_array_equal(nn.seeds_, i_seed)
    # every row left out in turn (500 <= the sample): its 30 neighbours without it lie
    # within 30th distance + d(row, t) of its nearest other row t
    held_out = d_seed[:, 30] + d_seed[:, 1] < d_seed[i_seed[:, 1], 44]
    assert nn.seed_share_ == held_out.mean() > 0.5
    # six intrinsic dimensions: a held-out point's neighbours are rarely all in its
    # nearest point's list, so no seeds are kept and queries go to the tree
    gauss = ExactNeighbors()
    gauss.fit_kneighbors(np.random.default_rng(0).standard_normal((2000, 6)), 10, n_query=30)
    assert gauss.seed_share_ < 0.05
    assert gauss.seeds_ is None and gauss.nearest(np.zeros((5, 6))) is None


def test_the_query_structure_follows_the_dimension():
    rng = np.random.default_rng(0)
    assert ExactNeighbors().fit(rng.standard_normal((50, 4))).tree_ is not None
    wide = ExactNeighbors().fit(rng.standard_normal((50, 64)))
    assert wide.tree_ is None and isinstance(wide.nn_, NearestNeighbors)


def _with_brute_neighbours(cidm):
    """The same fitted CIDM whose queries use scikit-learn's brute-force search."""
    brute = ExactNeighbors().fit(cidm.X_fit_)  # no seeds
    brute.tree_, brute.nn_ = None, NearestNeighbors(algorithm="brute").fit(cidm.X_fit_)
    cidm.nn_ = brute
    return cidm


def test_transform_equals_the_brute_force_computation():
    # more query rows than the locality threshold, so the grouped-rows path runs
    X = make_torus_points(800, R=1.0, r=1.0, random_state=0)
    Q = make_torus_points(5000, R=1.0, r=1.0, random_state=1)
    cidm = CIDM(n_eigenpairs=8, n_neighbors=45, batch_size=700, random_state=0).fit(X)
    Z = cidm.transform(Q)
    Z_ref = _with_brute_neighbours(cidm).transform(Q)
    np.testing.assert_allclose(Z, Z_ref, rtol=0, atol=1e-12)


@settings(max_examples=5, deadline=None)
@given(st.permutations(range(40)))
def test_a_rows_result_does_not_depend_on_the_row_order(perm):
    X = make_torus_points(500, R=1.0, r=1.0, random_state=0)
    Q = np.tile(make_torus_points(40, R=1.0, r=1.0, random_state=1), (110, 1))  # 4400 rows
    cidm = CIDM(n_eigenpairs=6, n_neighbors=40, batch_size=300, random_state=0).fit(X)
    Z = cidm.transform(Q)
    order = np.concatenate([np.asarray(perm) + 40 * i for i in range(110)])
    np.testing.assert_array_equal(cidm.transform(Q[order]), Z[order])
