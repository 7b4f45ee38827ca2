"""Set-array input forms, make_subspace_sets and SubspaceEmbedding."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geolearn.subspaces import SubspaceEmbedding, make_subspace_sets, principal_angles
from geolearn.subspaces._sets import check_sets
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

from ._data import projector


def test_input_forms_are_equivalent():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4, 6, 2))
    ref, dims = check_sets(X)
    assert ref.shape == (4, 6, 2) and dims.tolist() == [2] * 4
    np.testing.assert_array_equal(check_sets(list(X))[0], ref)
    np.testing.assert_array_equal(check_sets(X.reshape(4, 12), set_shape=(6, 2))[0], ref)
    # image sets (r, l, C, H, W): image j of set i becomes column j
    images = X.transpose(0, 2, 1).reshape(4, 2, 1, 2, 3)
    np.testing.assert_array_equal(check_sets(images)[0], ref)
    rows, dims = check_sets(X[:, :, 0])
    np.testing.assert_array_equal(rows, X[:, :, :1])


def test_ragged_lists_are_zero_padded():
    rng = np.random.default_rng(0)
    sets, dims = check_sets([rng.standard_normal((5, 1)), rng.standard_normal((5, 3))])
    assert sets.shape == (2, 5, 3) and dims.tolist() == [1, 3]
    assert np.all(sets[0, :, 1:] == 0)


@pytest.mark.parametrize("X, match", [
    ([np.ones((64, 2))] * 7 + [np.ones((63, 2))], "set 7 has 63, expected 64"),
    (np.ones((4, 8, 64)), r"set 0 has more vectors \(64\) than features \(8\).*transpose"),
    ([np.ones((5, 2)), np.ones((5, 0))], "no vectors"),
    (np.ones((2, 3, 4, 5)), "ndim=4"),
    ([], "0 sample"),
])
def test_malformed_sets_raise(X, match):
    with pytest.raises(ValueError, match=match):
        check_sets(X)


def test_set_shape_must_fit_rows():
    with pytest.raises(ValueError, match="set_shape"):
        check_sets(np.ones((3, 10)), set_shape=(4, 2))
    with pytest.raises(ValueError, match="set_shape"):
        check_sets(np.ones((3, 10)), set_shape=(5,))


def test_make_subspace_sets_follows_the_protocol():
    X = np.arange(46.0)[:, None] * np.ones((1, 3))
    y = np.array([0] * 20 + [1] * 26)
    sets, labels = make_subspace_sets(X, y, 4, random_state=0)
    assert sets.shape == (11, 3, 4)
    assert (labels == 0).sum() == 5 and (labels == 1).sum() == 6   # leftovers dropped
    used = sets[:, 0, :].ravel()
    assert len(np.unique(used)) == used.size                         # each vector once
    for s, label in zip(sets, labels):                                # classes never mixed
        assert np.all(y[s[0].astype(int)] == label)
    again = make_subspace_sets(X, y, 4, random_state=0)[0]
    np.testing.assert_array_equal(again, sets)
    with pytest.raises(ValueError, match="set_size"):
        make_subspace_sets(X, y, 0)
    with pytest.raises(ValueError, match="set_size"):
        make_subspace_sets(X, y, 30)


@given(seed=st.integers(0, 2**31 - 1), m=st.integers(1, 5), n_dims=st.integers(1, 5))
def test_embedding_spans_the_top_singular_subspace(seed, m, n_dims):
    n_dims = min(n_dims, m)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3, 7, m))
    B = SubspaceEmbedding(n_dims=n_dims).fit_transform(X)
    assert B.shape == (3, 7, n_dims)
    for b, x in zip(B, X):
        np.testing.assert_allclose(b.T @ b, np.eye(n_dims), atol=1e-12)
        U = np.linalg.svd(x, full_matrices=False)[0][:, :n_dims]
        np.testing.assert_allclose(projector(b), projector(U), atol=1e-8)


def test_embedding_rank_and_centering():
    rng = np.random.default_rng(0)
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))   # rank 2, 4 vectors
    full = rng.standard_normal((6, 4))
    B = SubspaceEmbedding().fit_transform([low, full])
    assert [b.shape[1] for b in B] == [2, 4]
    with pytest.raises(ValueError, match="set 0 of X has numerical rank 2"):
        SubspaceEmbedding(n_dims=3).fit_transform([low, full])
    with pytest.raises(ValueError, match="rank 0"):
        SubspaceEmbedding().fit_transform(np.zeros((2, 4, 2)))
    # centering: points on an affine line x0 + t d span only d after centering
    x0, d = rng.standard_normal(6), rng.standard_normal(6)
    pts = x0[:, None] + d[:, None] * rng.standard_normal(5)[None, :]
    B = SubspaceEmbedding(center=True).fit_transform(pts[None])
    assert B.shape == (1, 6, 1)
    assert principal_angles(B, d[:, None])[0, 0] < 1e-7


def test_embedding_sklearn_integration():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 6, 3))
    check_bad_inputs(SubspaceEmbedding(n_dims=2), X, min_samples=1)
    check_pipeline_gridsearch_pickle(SubspaceEmbedding(n_dims=2), X,
                                     param_grid={"n_dims": [1, 2]},
                                     scoring=lambda est, X, y=None: 0.0)
