"""CIDM's exact neighbour queries (scipy's KD-tree in a few dimensions, rows grouped by tree
leaf) give the transform of brute-force neighbours to 1e-12, whatever the row order."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import NearestNeighbors

from geolearn.datasets import make_torus_points
from geolearn.manifold import CIDM
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


def test_the_query_structure_follows_the_dimension():
    rng = np.random.default_rng(0)
    assert ExactNeighbors().fit(rng.standard_normal((50, 4))).tree_ is not None
    wide = ExactNeighbors().fit(rng.standard_normal((50, 64)))
    assert wide.tree_ is None and isinstance(wide.nn_, NearestNeighbors)


def _with_brute_neighbours(cidm):
    """The same fitted CIDM whose queries use scikit-learn's brute-force search."""
    brute = ExactNeighbors()
    brute.X_, brute.tree_ = cidm.X_fit_, None
    brute.nn_ = NearestNeighbors(algorithm="brute").fit(cidm.X_fit_)
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
