"""compute_rdm, check_rdm and the RDM conversions, model RDMs and averaging."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist, squareform

from geolearn.representations import (
    categorical_rdm,
    category_rdms,
    compute_rdm,
    condense_rdm,
    mean_rdm,
    squareform_rdm,
    stack_condensed,
)
from geolearn.representations._rdm import METRICS, check_condensed, check_rdm
from tests.helpers import assert_message

SCIPY = {"correlation": "correlation", "cosine": "cosine", "euclidean": "euclidean",
         "sqeuclidean_per_feature": "sqeuclidean"}


def _reference(V, metric):
    """The RDM by scipy's pdist (zscore: z-score the columns first, Net2Brain's recipe)."""
    if metric == "zscore_correlation":
        return squareform(pdist((V - V.mean(0)) / (V.std(0) + 1e-7), "correlation"))
    R = squareform(pdist(V, SCIPY[metric]))
    return R / V.shape[1] if metric == "sqeuclidean_per_feature" else R


@pytest.fixture
def V():
    return np.random.default_rng(0).normal(size=(25, 17)) + 3.0


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("chunk_size", [None, 1, 5, 17, 100])
def test_compute_rdm_matches_pdist(V, metric, chunk_size):
    R = compute_rdm(V, metric, chunk_size=chunk_size)
    np.testing.assert_allclose(R, _reference(V, metric), rtol=0, atol=1e-12)
    assert R.dtype == np.float64
    np.testing.assert_array_equal(R, R.T)
    np.testing.assert_array_equal(np.diagonal(R), 0.0)


@pytest.mark.parametrize("metric", METRICS)
def test_compute_rdm_float32_and_condensed(V, metric):
    R32 = compute_rdm(V, metric, dtype=np.float32)
    assert R32.dtype == np.float32
    np.testing.assert_allclose(R32, _reference(V, metric), atol=2e-5 * max(1, R32.max()))
    r = compute_rdm(V, metric, condensed=True)
    np.testing.assert_allclose(r, squareform(compute_rdm(V, metric), checks=False),
                               rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("chunk_size", [None, 4])
def test_input_is_not_modified_and_may_be_read_only(V, metric, chunk_size):
    X = V.copy()
    X.flags.writeable = False
    R = compute_rdm(X, metric, chunk_size=chunk_size)
    np.testing.assert_array_equal(X, V)
    np.testing.assert_allclose(R, _reference(V, metric), atol=1e-12)


def test_chunked_float32_input_keeps_float64_accuracy():
    # float32 features, float64 accumulation: identical to the float64 RDM of the same values
    V = np.random.default_rng(1).normal(size=(20, 300)).astype(np.float32) + 100
    R = compute_rdm(V, chunk_size=64)
    np.testing.assert_allclose(R, squareform(pdist(V.astype(np.float64), "correlation")),
                               atol=1e-12)


def test_correlation_is_one_minus_pearson(V):
    R = compute_rdm(V)
    np.testing.assert_allclose(R, 1.0 - np.corrcoef(V), atol=1e-12)


def test_euclidean_of_near_duplicates_has_no_cancellation():
    # large offset, tiny differences: |a|^2 + |b|^2 - 2ab would lose every digit
    rng = np.random.default_rng(0)
    V = 1e6 + rng.normal(scale=1e-3, size=(6, 50))
    np.testing.assert_allclose(compute_rdm(V, "euclidean"), squareform(pdist(V)), rtol=1e-7)


@pytest.mark.parametrize("metric", ["correlation", "zscore_correlation"])
def test_constant_rows_are_listed(V, metric):
    V = V.copy()
    if metric == "correlation":
        V[[2, 7]] = 4.2
    else:  # rows at the feature means z-score to exactly 0
        V[[2, 7]] = np.delete(V, [2, 7], axis=0).mean(0)
    with pytest.raises(ValueError, match=r"constant row\(s\) \(indices \[2, 7\]\)") as exc:
        compute_rdm(V, metric)
    assert_message(exc, metric)


def test_constant_rows_at_most_ten_listed():
    V = np.random.default_rng(0).normal(size=(30, 5))
    V[:12] = 1.0
    with pytest.raises(ValueError, match=r"12 constant row\(s\) \(indices \[0, 1, 2, 3, 4, 5, "
                       r"6, 7, 8, 9\] \.\.\.\)"):
        compute_rdm(V, chunk_size=2)


def test_cosine_refuses_zero_rows_only(V):
    V = V.copy()
    V[3] = 5.0  # constant but not zero: cosine is defined
    compute_rdm(V, "cosine")
    V[4] = 0.0
    with pytest.raises(ValueError, match=r"zero row\(s\) \(indices \[4\]\)"):
        compute_rdm(V, "cosine")


def test_zscore_constant_feature_becomes_zero(V):
    W = np.column_stack([V, np.full(len(V), 7.0)])
    Z = np.column_stack([(V - V.mean(0)) / (V.std(0) + 1e-7), np.zeros(len(V))])
    np.testing.assert_allclose(compute_rdm(W, "zscore_correlation"),
                               squareform(pdist(Z, "correlation")), atol=1e-12)


@pytest.mark.parametrize("X, match", [
    (np.arange(10.0), "2-D"),
    (np.ones((2, 4)) + np.eye(2, 4), "minimum of 3"),
    (np.array([[1.0, np.nan, 2], [1, 2, 3], [3, 1, 2]]), "NaN"),
    (np.array([[1.0, np.inf, 2], [1, 2, 3], [3, 1, 2]]), "infinity"),
    (np.ones((3, 3)) * (1 + 1j), "complex"),
    (np.array([["a", "b"], ["c", "d"], ["e", "f"]]), "numeric"),
])
def test_compute_rdm_bad_inputs(X, match):
    with pytest.raises(ValueError, match=match):
        compute_rdm(X)


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": "manhattan"}, r"metric must be one of \['correlation'"),
    ({"chunk_size": 0}, "chunk_size"),
    ({"dtype": np.int64}, "dtype"),
])
def test_compute_rdm_bad_parameters(V, kwargs, match):
    with pytest.raises(ValueError, match=match):
        compute_rdm(V, **kwargs)


_rows = arrays(np.float64, st.tuples(st.integers(3, 8), st.integers(2, 6)),
               elements=st.floats(-1e3, 1e3, allow_subnormal=False))


@given(_rows, st.sampled_from(METRICS))
def test_compute_rdm_is_a_valid_rdm_or_refuses(X, metric):
    """Any finite matrix gives a valid RDM, or a ValueError naming constant/zero rows."""
    try:
        R = compute_rdm(X, metric)
    except ValueError as exc:
        assert metric != "euclidean" and metric != "sqeuclidean_per_feature"
        assert "row(s)" in str(exc)
        return
    assert np.isfinite(R).all()
    np.testing.assert_array_equal(R, check_rdm(R))
    if metric in ("correlation", "cosine", "zscore_correlation"):
        assert R.max() <= 2.0


# ---- check_rdm and conversions ----

def test_check_rdm_accepts_square_and_condensed():
    R = compute_rdm(np.random.default_rng(0).normal(size=(6, 4)))
    np.testing.assert_array_equal(check_rdm(R), R)
    np.testing.assert_array_equal(check_rdm(condense_rdm(R)), R)
    np.testing.assert_array_equal(squareform_rdm(condense_rdm(R)), R)


def test_check_rdm_clips_rounding_and_symmetrises():
    R = np.array([[0.0, -1e-13, 1.0], [0.0, 0.0, 0.5], [1.0, 0.5 + 1e-12, 0.0]])
    out = check_rdm(R)
    assert out[0, 1] == 0.0 and out[1, 0] == 0.0
    np.testing.assert_array_equal(out, out.T)
    # condensed, with and without pairs marked undefined (the mask-free route)
    for r in ([-1e-13, 1.0, 0.5], [-1e-13, np.nan, 0.5]):
        out = check_condensed(np.array(r), allow_nan=True)[0]
        assert out[0] == 0.0


@pytest.mark.parametrize("R, match", [
    (np.zeros((3, 4)), "square"),
    (np.zeros((3, 3, 3)), "square"),
    (np.zeros(4), "not triangular"),
    (np.array([[0.0, 1, 2], [1, 0, 3], [2, 3.1, 0]]), "not symmetric"),
    (np.array([[0.1, 1, 2], [1, 0, 3], [2, 3, 0]]), "nonzero diagonal"),
    (np.array([[0.0, -1e-9, 2], [-1e-9, 0, 3], [2, 3, 0]]), "negative"),
    (np.array([[0.0, np.nan, 2], [np.nan, 0, 3], [2, 3, 0]]), "NaN"),
    (np.array([[0.0, np.inf, 2], [np.inf, 0, 3], [2, 3, 0]]), "infinite"),
    (np.array([[0.0, 1], [1, 0]]), "at least 3"),
    (np.zeros((3, 3), dtype=complex), "real-valued"),
])
def test_check_rdm_refuses(R, match):
    with pytest.raises(ValueError, match=match) as exc:
        check_rdm(R, name="rdm_target")
    assert_message(exc, "rdm_target")


@given(arrays(np.float64, st.tuples(st.integers(3, 7), st.integers(3, 7)).map(lambda t: (t[0],) * 2),
              elements=st.floats(0, 100)),
       st.integers(0, 48), st.floats(1e-6, 10), st.sampled_from(["asym", "diag", "neg"]))
def test_check_rdm_accepts_valid_and_refuses_each_defect(A, where, delta, defect):
    """A symmetric, zero-diagonal, non-negative matrix passes unchanged; one defect fails."""
    m = len(A)
    R = A + A.T
    np.fill_diagonal(R, 0.0)
    np.testing.assert_array_equal(check_rdm(R), R)
    i, j = divmod(where % (m * m), m)
    if i == j:
        j = (i + 1) % m
    bad = R.copy()
    scale = max(R.max(), 1.0)
    if defect == "asym":
        bad[i, j] += delta * scale
        match = "not symmetric"
    elif defect == "diag":
        bad[i, i] = delta * scale
        match = "nonzero diagonal"
    else:
        bad[i, j] = bad[j, i] = -delta
        match = "negative"
    with pytest.raises(ValueError, match=match):
        check_rdm(bad)


def test_check_rdm_nan_must_be_symmetric_off_diagonal():
    R = np.array([[0.0, np.nan, 2], [np.nan, 0, 3], [2, 3, 0]])
    assert np.isnan(check_rdm(R, allow_nan=True)[0, 1])
    R[1, 0] = 1.0
    with pytest.raises(ValueError, match="not symmetric"):
        check_rdm(R, allow_nan=True)
    R = np.array([[np.nan, 1, 2], [1, 0, 3], [2, 3, 0]])
    with pytest.raises(ValueError, match="diagonal"):
        check_rdm(R, allow_nan=True)


@given(arrays(np.float64, st.sampled_from([3, 6, 10, 15]),
              elements=st.floats(0, 10) | st.just(np.nan)))
def test_condense_squareform_round_trip(r):
    np.testing.assert_array_equal(condense_rdm(squareform_rdm(r, allow_nan=True)), r)


def test_squareform_rdm_needs_a_vector():
    with pytest.raises(ValueError, match="condensed"):
        squareform_rdm(np.zeros((3, 3)))


def test_squareform_rdm_refuses_nan_unless_allowed():
    """NaN passed through squareform_rdm silently; undefined pairs are now opt-in."""
    with pytest.raises(ValueError, match="NaN"):
        squareform_rdm([0.2, np.nan, 0.4])
    assert np.isnan(squareform_rdm([0.2, np.nan, 0.4], allow_nan=True)[0, 2])


def test_condense_rdm_unchecked_reads_the_triangle():
    R = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(condense_rdm(R, check=False), [1, 2, 3, 6, 7, 11])


# ---- averaging and model RDMs ----

def test_mean_rdm_policies():
    a = np.array([0.2, 0.4, np.nan])
    b = np.array([0.4, np.nan, np.nan])
    np.testing.assert_allclose(condense_rdm(mean_rdm([a, b])), [0.3, 0.4, np.nan])
    both = np.stack([squareform_rdm(a, allow_nan=True), squareform_rdm(b, allow_nan=True)])
    np.testing.assert_allclose(condense_rdm(mean_rdm(both, nan_policy="propagate")),
                               [0.3, np.nan, np.nan])
    with pytest.raises(ValueError, match="NaN"):
        mean_rdm([a, b], nan_policy="raise")
    with pytest.raises(ValueError, match="nan_policy"):
        mean_rdm([a, b], nan_policy="skip")


def test_mean_rdm_refuses_mixed_sizes_and_empty():
    with pytest.raises(ValueError, match="different numbers of stimuli"):
        mean_rdm([np.ones(3), np.ones(6)])
    with pytest.raises(ValueError, match="at least one"):
        mean_rdm([])
    with pytest.raises(ValueError, match="sequence of RDMs"):
        mean_rdm(np.ones(3))


def test_mean_rdm_of_one_subject_is_that_subject():
    R = compute_rdm(np.random.default_rng(0).normal(size=(7, 5)))
    np.testing.assert_array_equal(mean_rdm([R]), R)
    np.testing.assert_array_equal(mean_rdm(R[None]), R)


def test_category_rdms_closed_form():
    labels = np.array(["b", "a", "b", "c", "a"])
    rdms, cats = category_rdms(labels)
    assert cats.tolist() == ["a", "b", "c"]
    for C, g in zip(rdms, cats):
        inside = (labels[:, None] == g) & (labels[None, :] == g)
        expected = np.where(inside, 0.0, 1.0)
        np.fill_diagonal(expected, 0.0)
        np.testing.assert_array_equal(C, expected)
        check_rdm(C)
    # the simple categorical RDM is the pairwise minimum of the category RDMs
    np.testing.assert_array_equal(rdms.min(0), categorical_rdm(labels))


def test_categorical_rdm_and_stack():
    labels = [1, 1, 2, 2, 2]
    C = categorical_rdm(labels)
    np.testing.assert_array_equal(C, 1.0 - np.equal.outer(labels, labels))
    rdms, _ = category_rdms(labels)
    X = stack_condensed(rdms)
    assert X.shape == (10, 2)
    np.testing.assert_array_equal(X[:, 1], condense_rdm(rdms[1]))
    np.testing.assert_array_equal(stack_condensed([condense_rdm(r) for r in rdms]), X)


@pytest.mark.parametrize("labels", [[0, 1], [[0, 1, 2]], [0.0, np.nan, 1.0]])
def test_labels_refused(labels):
    with pytest.raises(ValueError, match="labels"):
        categorical_rdm(labels)


@pytest.mark.parametrize("m", [5, 64, 200])
def test_symmetrize_by_blocks_equals_the_mean_with_the_transpose(m):
    # the blocks (sized for the cache) do not change a bit of (R + R^T) / 2
    from geolearn.representations._rdm import _symmetrize

    R = np.random.default_rng(m).random((m, m))
    np.testing.assert_array_equal(_symmetrize(R.copy()), (R + R.T) / 2)


def _unfused_sqeuclidean_rdm(V):
    """The square ``sqeuclidean_per_feature`` RDM as computed before the fused pass: centred
    copy, ``(-2 G + |a_i|^2) + |a_j|^2`` row by row, cancelled entries ``i < j`` recomputed
    and mirrored, clip, ``/ n``, ``(R + R^T) / 2``, clip, zero diagonal."""
    A = V - V.mean(0)
    sq = np.einsum("ij,ij->i", A, A)
    D = (-2.0 * (A @ A.T) + sq[:, None]) + sq[None, :]
    i, j = np.nonzero(np.triu(D <= 1e-6 * (sq[:, None] + sq[None, :]), 1))
    D[i, j] = D[j, i] = np.einsum("ij,ij->i", V[i] - V[j], V[i] - V[j])
    R = np.maximum(D, 0.0) / V.shape[1]
    R = np.clip((R + R.T) / 2, 0.0, np.inf)
    np.fill_diagonal(R, 0.0)
    return R


def _pairwise_sqeuclidean(V):
    """Brute force in float64: ``sum((v_i - v_j)^2) / n`` for every pair (pairwise sums)."""
    return np.array([np.sum((V - v) ** 2, axis=1) for v in V]) / V.shape[1]


def _data_sets():
    rng = np.random.default_rng(7)
    near = rng.normal(size=(600, 40))
    near[300:] = near[:300] + 1e-9 * rng.normal(size=(300, 40))  # pairs in different blocks
    near[1] = near[0] + 1e-9  # and one inside a block
    return {"normal": rng.normal(size=(600, 300)),
            "offset": 1e3 + rng.normal(size=(600, 100)),
            "uniform": rng.uniform(size=(400, 300)),
            "clustered": (rng.normal(size=(5, 64))[np.arange(600) % 5]
                          + 0.01 * rng.normal(size=(600, 64))),
            "near-duplicates": near[rng.permutation(600)]}


@pytest.mark.parametrize("name", list(_data_sets()))
def test_sqeuclidean_rdm_is_no_worse_than_the_unfused_pipeline(name):
    # The fused pass computes |a_i|^2 + |a_j|^2 - 2 a_i a_j in another order than the old
    # code (symmetric by construction, no averaging with the transpose): every entry stays
    # within a few ulps of the old one, and no further from brute force than the old one.
    # Blocks of rows: m = 600 spans two, with cancelled pairs across and inside them.
    V = _data_sets()[name]
    R = compute_rdm(V, "sqeuclidean_per_feature")
    old = _unfused_sqeuclidean_rdm(V)
    exact = _pairwise_sqeuclidean(V)
    A = V - V.mean(0)
    sq = np.einsum("ij,ij->i", A, A)
    eps = np.finfo(np.float64).eps
    scale = (sq[:, None] + sq[None, :]) / V.shape[1]
    assert np.all(np.abs(R - old) <= 4 * eps * scale)
    iu = np.triu_indices(len(V), 1)
    err_new = np.abs(R - exact)[iu] / exact[iu]
    err_old = np.abs(old - exact)[iu] / exact[iu]
    assert err_new.max() <= max(err_old.max(), 8 * eps)
    if name in ("normal", "offset", "uniform"):  # no cancellation: a few ulps
        assert err_new.max() <= 8 * eps
    np.testing.assert_array_equal(R, R.T)
    np.testing.assert_array_equal(np.diagonal(R), 0.0)
    assert R.min() >= 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cancelled_pairs_across_blocks_are_recomputed(dtype):
    # near-duplicates far apart (different blocks of rows) come from the rows themselves
    V = _data_sets()["near-duplicates"]
    R = compute_rdm(V, "euclidean", dtype=dtype)
    exact = np.sqrt(_pairwise_sqeuclidean(V) * V.shape[1])
    close = exact < 1e-6
    assert close.sum() > 600  # 300 pairs, both triangles
    np.testing.assert_allclose(R[close], exact[close], rtol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(R, R.T)


def test_centred_chunks_equal_the_copy_then_subtract():
    # the centring is one pass (subtract into a new float64 array): same bits as the copy
    # followed by an in-place subtraction, for float64 and float32 chunks
    from geolearn.representations._rdm import _transformed_chunk

    V = np.random.default_rng(3).normal(size=(50, 30)) * 10 + 5
    for X in (V, V.astype(np.float32)):
        for cols in (slice(0, 30), slice(7, 19)):
            ref = np.array(X[:, cols], dtype=np.float64)
            ref -= ref.mean(0)
            got = _transformed_chunk(X, cols, "euclidean", None, np.dtype(np.float64))
            np.testing.assert_array_equal(got, ref)
