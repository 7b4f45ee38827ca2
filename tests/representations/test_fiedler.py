"""Fiedler partitioning: closed forms, conventions, degeneracy flags, BCa intervals, errors."""

import pickle
import warnings

import networkx as nx
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import stats
from scipy.linalg import eigh
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from geolearn.representations import (
    FiedlerPartition,
    FiedlerWarning,
    compute_rdm,
    fiedler_accuracy,
    fiedler_pairwise,
    fiedler_vector,
)
from geolearn.representations._fiedler import _bca_interval, _laplacian, _score
from tests.helpers import check_bad_inputs


def block_rdm(sizes, r_in, r_out):
    """RDM of blocks: ``r_in`` inside a block, ``r_out`` between blocks, 0 on the diagonal."""
    codes = np.repeat(np.arange(len(sizes)), sizes)
    R = np.where(codes[:, None] == codes[None, :], r_in, r_out).astype(float)
    np.fill_diagonal(R, 0.0)
    return R, codes


def clustered_features(rng, n_per_class, n_features=10, shift=3.0):
    codes = np.repeat(np.arange(len(n_per_class)), n_per_class)
    X = rng.normal(size=(len(codes), n_features)) + shift * np.eye(n_features)[codes]
    return X, codes


def messages(record):
    return " ".join(str(w.message) for w in record)


def brute_accuracy(e2, y):
    """The accuracy's definition, by enumerating both assignments of the parts."""
    best = 0
    for a, b in ((0, 1), (1, 0)):
        best = max(best, np.sum((e2 < 0) & (y == a)) + np.sum((e2 > 0) & (y == b)))
    return best / len(y)


# ---------------------------------------------------------------- closed forms


@given(p=st.integers(2, 12), q=st.integers(2, 12), r_in=st.floats(0.0, 0.6),
       gap=st.floats(0.05, 0.9))
def test_two_block_closed_form(p, q, r_in, gap):
    """Spectrum 0, n b, min(p a + q b, q a + p b); Fiedler vector q on block 1, -p on block 2."""
    r_out = r_in + gap
    assume(r_out < 0.98)  # b > 0: a connected graph
    R, codes = block_rdm([p, q], r_in, r_out)
    a, b, n = 1 - r_in, 1 - r_out, p + q
    e2, ev = fiedler_vector(R)
    third = min(p * a + q * b if p > 1 else np.inf, q * a + p * b if q > 1 else np.inf)
    np.testing.assert_allclose(ev, [0.0, n * b, third], atol=1e-9)
    expected = np.where(codes == 0, q, -p) / np.sqrt(p * q**2 + q * p**2)
    expected *= np.sign(expected[np.argmax(np.abs(expected))])  # largest entry positive
    np.testing.assert_allclose(e2, expected, atol=1e-9)
    assert fiedler_accuracy(R, codes) == 1.0


def test_laplacian_rows_sum_to_zero_and_ignore_self_loops():
    rng = np.random.default_rng(0)
    R = compute_rdm(rng.normal(size=(15, 4)))
    for mode in ("clip", "keep"):
        L, _ = _laplacian(R, mode)
        np.testing.assert_allclose(L @ np.ones(15), 0.0, atol=1e-12)
        A = 1 - R if mode == "keep" else np.maximum(1 - R, 0)
        for diag in (0.0, 1.0):  # self-loops cancel in D - A
            np.fill_diagonal(A, diag)
            np.testing.assert_allclose(L, np.diag(A.sum(1)) - A, atol=1e-12)


def test_fiedler_vector_matches_dense_eigh():
    rng = np.random.default_rng(1)
    R = compute_rdm(rng.normal(size=(25, 6)))
    A = np.maximum(1 - R, 0)  # with its self-loops A_ii = 1, as the paper writes it
    ev, U = eigh(np.diag(A.sum(1)) - A)
    e2, ev3 = fiedler_vector(R)
    np.testing.assert_allclose(ev3, ev[:3], atol=1e-10)
    np.testing.assert_allclose(abs(e2 @ U[:, 1]), 1.0, atol=1e-10)


def test_sign_convention():
    rng = np.random.default_rng(2)
    R = compute_rdm(rng.normal(size=(20, 5)))
    e2, _ = fiedler_vector(R)
    assert e2[np.argmax(np.abs(e2))] > 0
    assert np.isclose(np.linalg.norm(e2), 1.0)
    # exact ties of magnitude: the first index of largest magnitude is positive
    R, _ = block_rdm([3, 3], 0.1, 0.8)
    for perm in ([0, 1, 2, 3, 4, 5], [3, 4, 5, 0, 1, 2], [4, 0, 5, 1, 3, 2]):
        e2, _ = fiedler_vector(R[np.ix_(perm, perm)])
        assert e2[0] > 0 and np.allclose(np.abs(e2), 1 / np.sqrt(6))


@given(seed=st.integers(0, 10_000), m=st.integers(5, 30))
def test_permuting_stimuli_permutes_the_partition(seed, m):
    rng = np.random.default_rng(seed)
    R = compute_rdm(rng.normal(size=(m, 6)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FiedlerWarning)  # degenerate draws are assumed away
        fp = FiedlerPartition().fit(R)
    ev = fp.eigenvalues_
    # a near-repeated eigenvalue makes the eigenvector itself ill-conditioned
    assume(not fp.degenerate_ and ev[2] - ev[1] > 1e-6 * max(1, ev[2]))
    perm = rng.permutation(m)
    fq = FiedlerPartition().fit(R[np.ix_(perm, perm)])
    np.testing.assert_allclose(fq.fiedler_vector_, fp.fiedler_vector_[perm], atol=1e-8)
    np.testing.assert_array_equal(fq.labels_, fp.labels_[perm])
    np.testing.assert_allclose(fq.eigenvalues_, ev, atol=1e-10)


def test_networkx_agrees():
    rng = np.random.default_rng(3)
    R = compute_rdm(rng.normal(size=(30, 5)))
    A = np.maximum(1 - R, 0)
    np.fill_diagonal(A, 0)
    G = nx.from_numpy_array(A)
    e2, ev = fiedler_vector(R)
    f = nx.fiedler_vector(G, method="lanczos", tol=1e-12)
    assert abs(e2 @ f) / np.linalg.norm(f) == pytest.approx(1.0, abs=1e-8)
    assert ev[1] == pytest.approx(nx.algebraic_connectivity(G, method="lanczos", tol=1e-12),
                                  rel=1e-8)
    # normalised: networkx returns u2 of I - D^-1/2 A D^-1/2; we return D^-1/2 u2
    e2n, evn = fiedler_vector(R, normalized=True)
    fn = nx.fiedler_vector(G, normalized=True, method="lanczos", tol=1e-12) / np.sqrt(A.sum(1))
    assert abs(e2n @ fn) / np.linalg.norm(fn) == pytest.approx(1.0, abs=1e-8)
    assert evn[1] == pytest.approx(
        nx.algebraic_connectivity(G, normalized=True, method="lanczos", tol=1e-12), rel=1e-8)


# ------------------------------------------------------------ degeneracy, warnings


def test_disconnected_graph_is_degenerate():
    R, _ = block_rdm([4, 5], 0.2, 1.0)  # no edges between the blocks
    with pytest.warns(FiedlerWarning) as record:
        fp = FiedlerPartition().fit(R)
    assert "disconnected" in messages(record)
    assert fp.degenerate_ and fp.algebraic_connectivity_ == pytest.approx(0, abs=1e-12)


def test_repeated_eigenvalue_warns():
    R, _ = block_rdm([5, 5, 5], 0.2, 0.9)  # three identical blocks: lambda_2 = lambda_3
    with pytest.warns(FiedlerWarning, match="not unique"):
        fp = FiedlerPartition().fit(R)
    assert fp.degenerate_


def test_indefinite_and_one_sided_with_keep():
    """A = [[0, .9, -.9], [.9, 0, -.9], [-.9, -.9, 0]]: L has eigenvalues -2.7, 0, 0.9 and the
    constant vector as its 'Fiedler' vector: every stimulus on one side."""
    R = np.array([[0, 0.1, 1.9], [0.1, 0, 1.9], [1.9, 1.9, 0]])
    with pytest.warns(FiedlerWarning) as record:
        fp = FiedlerPartition(negative_weights="keep").fit(R)
    assert "indefinite" in messages(record) and "one side" in messages(record)
    np.testing.assert_allclose(fp.eigenvalues_, [-2.7, 0, 0.9], atol=1e-12)
    assert fp.degenerate_ and np.all(fp.labels_ == 1)
    with pytest.warns(FiedlerWarning) as record:
        assert fiedler_accuracy(R, [0, 0, 1], negative_weights="keep") == 2 / 3
    assert "one side" in messages(record)
    with pytest.raises(ValueError, match="negative_weights='clip'"):
        fiedler_vector(R, negative_weights="raise")
    with pytest.warns(FiedlerWarning) as record:  # clipped: stimulus 2 isolated
        _, ev = fiedler_vector(R)
    assert "disconnected" in messages(record)
    assert ev[1] == pytest.approx(0, abs=1e-12)


def test_normalized_needs_non_negative_degrees():
    R = np.array([[0, 0.1, 1.9], [0.1, 0, 1.9], [1.9, 1.9, 0]])
    with pytest.raises(ValueError, match="non-negative degrees"):
        fiedler_vector(R, negative_weights="keep", normalized=True)


def test_stimulus_on_the_cut_is_in_neither_part():
    """Paper's Algorithm 1, step 6: P1 = {e2 < 0}, P2 = {e2 > 0}; an exact 0 is in neither
    and counts as misclassified (putting it in P2 would score 1.0 here)."""
    e2 = np.array([-0.5, -0.5, 0.0, 0.5, 0.5])
    assert _score(e2, np.array([0, 0, 1, 1, 1])) == (0.8, 1.0, 2 / 3)


def test_no_warning_for_a_clean_partition():
    R, codes = block_rdm([6, 8], 0.2, 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fp = FiedlerPartition().fit(R)
    assert not fp.degenerate_ and adjusted_rand_score(codes, fp.labels_) == 1.0


# -------------------------------------------------------------------- accuracy


def test_accuracy_matches_definition_and_ignores_label_names():
    rng = np.random.default_rng(4)
    X, codes = clustered_features(rng, [15, 15], shift=1.0)
    R = compute_rdm(X)
    e2, _ = fiedler_vector(R)
    acc = fiedler_accuracy(R, codes)
    assert acc == brute_accuracy(e2, codes)
    assert 0.5 <= acc < 1.0  # a weak signal: a partial split
    assert fiedler_accuracy(R, np.where(codes == 0, "dog", "cat")) == acc
    assert fiedler_accuracy(R, 1 - codes) == acc


def test_undersampling_balances_the_pair():
    """The larger class is subsampled without replacement by a seeded RandomState."""
    rng = np.random.default_rng(5)
    X, codes = clustered_features(rng, [6, 20], shift=0.8)
    R = compute_rdm(X)
    large = np.random.RandomState(0).choice(np.flatnonzero(codes == 1), 6, replace=False)
    keep = np.sort(np.r_[np.flatnonzero(codes == 0), large])
    expected = fiedler_accuracy(R[np.ix_(keep, keep)], codes[keep])
    assert fiedler_accuracy(R, codes, balance="undersample", random_state=0) == expected
    assert expected * 12 == round(expected * 12)


# ----------------------------------------------------------------- BCa, pairwise


def test_bca_matches_scipy_given_the_same_distribution():
    """scipy's BCa (its z0 with half-counted ties and its jackknife acceleration) on our
    bootstrap distribution, with the statistic re-evaluated on scipy's jackknife samples."""
    rng = np.random.default_rng(6)
    X, codes = clustered_features(rng, [12, 12], shift=2.0)
    R = compute_rdm(X)
    res = fiedler_pairwise(R, codes, n_boot=500, bonferroni=False, random_state=0)[0]

    def statistic(idx, axis=-1):
        idx = np.asarray(idx, dtype=int)
        return fiedler_accuracy(R[np.ix_(idx, idx)], codes[idx])

    class Previous:
        bootstrap_distribution = res["distribution"]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FiedlerWarning)  # jackknife samples may be degenerate
        ref = stats.bootstrap((np.arange(24),), statistic, vectorized=False, n_resamples=0,
                              bootstrap_result=Previous, method="BCa", confidence_level=0.95)
    assert 0.5 < res["accuracy"] < 1 and np.ptp(res["distribution"]) > 0
    assert res["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert res["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_bca_constant_distribution_and_clipping():
    assert _bca_interval(1.0, np.ones(100), np.ones(10), 0.05) == (1.0, 1.0)
    boot = np.linspace(0.5, 0.7, 200)
    jack = np.linspace(0.6, 0.62, 10)
    with pytest.warns(FiedlerWarning, match="clipped"):
        low, high = _bca_interval(0.9, boot, jack, 0.05)  # above every resample
    # proportion clipped to 1 - 0.5/B: z0 = Phi^-1(0.9975) puts both ends near the top
    assert 0.68 < low < high <= 0.7


def test_pairwise_separated_classes():
    R, codes = block_rdm([10, 14, 12], 0.2, 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fiedler_pairwise(R, np.array(["x", "y", "z"])[codes], n_boot=500,
                               n_permutations=99, random_state=0)
    assert [(r["class_a"], r["class_b"]) for r in res] == [("x", "y"), ("x", "z"), ("y", "z")]
    assert set(res[0]) == {"class_a", "class_b", "n_a", "n_b", "accuracy", "recall_a",
                           "recall_b", "ci_low", "ci_high", "confidence_level",
                           "p_permutation", "chance_level", "significant", "lambda2",
                           "degenerate", "distribution", "degenerate_fraction"}
    for r, n in zip(res, (10, 10, 12)):
        assert r["n_a"] == r["n_b"] == n  # undersampled to the smaller class
        assert r["accuracy"] == r["recall_a"] == r["recall_b"] == 1.0
        assert (r["ci_low"], r["ci_high"]) == (1.0, 1.0)  # every resample separates
        assert r["confidence_level"] == pytest.approx(1 - 0.05 / 3)
        assert r["p_permutation"] == pytest.approx(1 / 100) and r["significant"]
        assert 0.5 < r["chance_level"] < 0.8
        assert r["lambda2"] == pytest.approx(2 * n * 0.1)  # n b of the balanced pair
        assert not r["degenerate"] and r["degenerate_fraction"] == 0


def test_pairwise_is_reproducible_per_pair_and_independent_of_n_jobs():
    rng = np.random.default_rng(7)
    X, codes = clustered_features(rng, [12, 9, 11], shift=1.0)
    R = compute_rdm(X)
    kw = {"n_boot": 500, "random_state": 3, "n_permutations": 20}
    all_pairs = fiedler_pairwise(R, codes, bonferroni=False, **kw)
    one = fiedler_pairwise(R, codes, pairs=[(1, 2)], **kw)[0]
    par = fiedler_pairwise(R, codes, pairs=[(1, 2)], n_jobs=2, **kw)[0]
    for key in ("accuracy", "ci_low", "ci_high", "p_permutation", "n_a"):
        assert one[key] == all_pairs[2][key] == par[key]
    np.testing.assert_array_equal(one["distribution"], par["distribution"])
    assert one["n_a"] == one["n_b"] == 9


def test_pairwise_unbalanced_recall():
    """Without balancing, an all-correct split of unequal classes still has recall 1 each."""
    R, codes = block_rdm([5, 9], 0.2, 0.9)
    r = fiedler_pairwise(R, codes, balance="none", n_boot=500, random_state=0)[0]
    assert (r["n_a"], r["n_b"], r["accuracy"], r["recall_a"], r["recall_b"]) == (5, 9, 1, 1, 1)
    r = fiedler_pairwise(R, codes, n_boot=500, n_permutations=0)[0]
    assert np.isnan(r["p_permutation"]) and np.isnan(r["chance_level"])
    assert r["significant"] is None


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_pure_noise_is_not_called_significant(seed):
    """The accuracy is a max over two label assignments, so its chance level sits above 0.5
    (the BCa interval of noise excluded 0.5 in up to 3 of 5 pairs); the permutation test
    of the default has the right null."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(60, 30)), np.repeat(np.arange(4), 15)
    res = fiedler_pairwise(compute_rdm(X), y, n_boot=500, random_state=seed)
    assert not any(r["significant"] for r in res)
    assert all(0.52 < r["chance_level"] < 0.65 for r in res)
    assert all(r["p_permutation"] > 0.05 / 6 for r in res)


def test_too_few_permutations_for_significance_warn():
    R, codes = block_rdm([5, 5, 5], 0.2, 0.9)
    with pytest.warns(FiedlerWarning, match="n_permutations >= 60"):
        res = fiedler_pairwise(R, codes, n_boot=500, n_permutations=20, random_state=0)
    assert not any(r["significant"] for r in res)


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_functions():
    R, codes = block_rdm([4, 4, 4], 0.2, 0.9)
    two = codes[codes < 2]
    R2 = R[:8, :8]
    with pytest.raises(ValueError, match=r"labels must hold one label per stimulus, shape \(8,\)"):
        fiedler_accuracy(R2, two[:-1])
    with pytest.raises(ValueError, match="exactly two classes"):
        fiedler_accuracy(R, codes)
    with pytest.raises(ValueError, match="exactly two classes"):
        fiedler_accuracy(R2, np.zeros(8))
    with pytest.raises(ValueError, match="negative_weights must be one of"):
        fiedler_vector(R, negative_weights="abs")
    with pytest.raises(ValueError, match="balance must be one of"):
        fiedler_accuracy(R2, two, balance="oversample")
    with pytest.raises(ValueError, match="not symmetric"):
        fiedler_vector(R + np.triu(np.full(R.shape, 0.1), 1))
    with pytest.raises(ValueError, match="nonzero diagonal"):
        fiedler_vector(R + np.eye(12))
    with pytest.raises(ValueError, match="NaN"):
        fiedler_vector(np.where(R == 0.9, np.nan, R))
    with pytest.raises(ValueError, match="at least 3"):
        fiedler_vector(R[:2, :2])
    with pytest.raises(ValueError, match="n_boot must be an integer >= 1"):
        fiedler_pairwise(R, codes, n_boot=0)
    for level in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence_level must be a finite number > 0"):
            fiedler_pairwise(R, codes, confidence_level=level)
    with pytest.raises(ValueError, match=r"classes \[2\] have fewer than 2 stimuli"):
        fiedler_pairwise(R, np.r_[codes[:-4], 0, 0, 0, 2])
    with pytest.raises(ValueError, match="pairs must hold pairs of two distinct classes"):
        fiedler_pairwise(R, codes, pairs=[(0, 5)])
    with pytest.raises(ValueError, match="pairs must hold pairs of two distinct classes"):
        fiedler_pairwise(R, codes, pairs=[(1, 1)])
    with pytest.warns(FiedlerWarning, match="n_boot=100 < 500"):
        fiedler_pairwise(R, codes, pairs=[(0, 1)], n_boot=100)


def test_bad_inputs_estimator():
    rng = np.random.default_rng(8)
    X, _ = clustered_features(rng, [6, 6])
    check_bad_inputs(FiedlerPartition(metric="correlation"), X,
                     cases=("nan", "inf", "ndim", "few_samples"), min_samples=3)
    check_bad_inputs(FiedlerPartition(), compute_rdm(X), cases=("nan", "inf", "ndim"))
    with pytest.raises(ValueError, match="constant row"):
        FiedlerPartition(metric="correlation").fit(np.r_[X, np.ones((1, 10))])
    with pytest.raises(ValueError, match="The 'metric' parameter of FiedlerPartition must be"):
        FiedlerPartition(metric="manhattan").fit(X)
    with pytest.raises(ValueError, match="must be a square"):
        FiedlerPartition().fit(X)


def test_estimator_features_equal_precomputed_and_pickles():
    rng = np.random.default_rng(9)
    X, codes = clustered_features(rng, [8, 7], shift=3.0)
    fp = FiedlerPartition(metric="correlation").fit(X)
    pre = FiedlerPartition().fit(compute_rdm(X))
    np.testing.assert_allclose(fp.fiedler_vector_, pre.fiedler_vector_, atol=1e-12)
    np.testing.assert_array_equal(fp.fit_predict(X), fp.labels_)
    assert adjusted_rand_score(codes, fp.labels_) == 1.0
    again = pickle.loads(pickle.dumps(fp))
    np.testing.assert_array_equal(again.labels_, fp.labels_)
    assert clone(fp).get_params() == fp.get_params()


@pytest.mark.parametrize("metric", ["precomputed", "correlation", "euclidean"])
def test_fit_leaves_the_input_unchanged(metric):
    rng = np.random.default_rng(10)
    X, _ = clustered_features(rng, [8, 7], shift=3.0)
    # distances below 1 (a connected graph) for euclidean; an offset to centre away
    X = compute_rdm(X) if metric == "precomputed" else 0.05 * X + 5.0
    X0 = X.copy()
    FiedlerPartition(metric=metric).fit(X)
    np.testing.assert_array_equal(X, X0)
