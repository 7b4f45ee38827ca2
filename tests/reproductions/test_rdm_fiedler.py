"""Acceptance experiments 2 and 3 of the RDM spec: Fiedler partitioning.

Paper: "Exploring fMRI RDMs: enhancing model robustness through neurobiological data"
(Frontiers in Computer Science 5:1275026, 2023), Algorithm 1, Table 2 and Figs. 8-9. The
BOLD5000 RDMs need a download, so experiment 3 reproduces the paper's central relation at
reduced scale on scikit-learn's digits: clustered representations score higher on both the
categorical-model correlation and the Fiedler accuracy, degraded ones fall to chance, and
averaging noisy "subjects" raises the accuracy.
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy.linalg import eigh
from sklearn.datasets import load_digits

from geolearn.representations import (
    FiedlerPartition,
    FiedlerWarning,
    categorical_rdm,
    compare_rdms,
    compute_rdm,
    fiedler_accuracy,
    fiedler_pairwise,
    mean_rdm,
)

# --- experiment 2: the two-block closed form ---------------------------------------------------

P, Q, R_IN, R_OUT = 30, 50, 0.2, 0.9


@pytest.fixture
def two_block():
    codes = np.repeat([0, 1], [P, Q])
    R = np.where(codes[:, None] == codes[None, :], R_IN, R_OUT)
    np.fill_diagonal(R, 0.0)
    return R, codes


def test_two_block_spectrum_and_fiedler_vector(two_block):
    """Algorithm 1 on a two-block RDM: eigenvalues 0, n b = 8, p a + q b = 29; the Fiedler
    vector is q on block 1 and -p on block 2, so the partition is the blocks (accuracy 1)."""
    R, codes = two_block
    fp = FiedlerPartition().fit(R)
    np.testing.assert_allclose(fp.eigenvalues_, [0.0, 8.0, 29.0], rtol=0, atol=1e-9)
    e2 = fp.fiedler_vector_
    ratio = e2[:P, None] / e2[None, P:]
    np.testing.assert_allclose(ratio, -Q / P, rtol=0, atol=1e-9)
    assert fiedler_accuracy(R, codes) == 1.0
    assert not fp.degenerate_


def test_two_block_equivariance_and_self_loops(two_block):
    """The same after a random stimulus permutation (labels permuted alike); the adjacency
    diagonal (self-loops, 0 or 1) cancels in L = D - A."""
    R, codes = two_block
    perm = np.random.default_rng(0).permutation(P + Q)
    fp = FiedlerPartition().fit(R)
    fq = FiedlerPartition().fit(R[np.ix_(perm, perm)])
    np.testing.assert_allclose(fq.eigenvalues_, fp.eigenvalues_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fq.fiedler_vector_, fp.fiedler_vector_[perm], atol=1e-9)
    assert fiedler_accuracy(R[np.ix_(perm, perm)], codes[perm]) == 1.0
    spectra = []
    for diag in (0.0, 1.0):
        A = 1.0 - R
        np.fill_diagonal(A, diag)
        spectra.append(eigh(np.diag(A.sum(1)) - A, eigvals_only=True)[:3])
    np.testing.assert_allclose(spectra[0], spectra[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(fp.eigenvalues_, spectra[0], rtol=0, atol=1e-12)


def test_two_identical_blocks_warn_about_the_eigengap():
    """A 3-block RDM with two identical blocks: lambda_2 = lambda_3, the Fiedler vector is not
    unique (warned, degenerate)."""
    codes = np.repeat([0, 1, 2], [20, 20, 30])
    R = np.where(codes[:, None] == codes[None, :], R_IN, R_OUT)
    np.fill_diagonal(R, 0.0)
    with pytest.warns(FiedlerWarning, match="not unique"):
        fp = FiedlerPartition().fit(R)
    assert fp.degenerate_
    assert fp.eigenvalues_[2] - fp.eigenvalues_[1] < 1e-9


def test_negative_correlations_kept_warn_about_an_indefinite_laplacian(two_block):
    """Noise with negative correlations, kept as negative weights (the paper's literal
    A = 1 - R): the Laplacian is indefinite and says so; clipping makes it PSD again."""
    R, _ = two_block
    noise_corr = 1.0 - compute_rdm(np.random.default_rng(0).normal(size=(P + Q, 3)))
    Rn = np.clip(R - noise_corr, 0.0, 2.0)
    np.fill_diagonal(Rn, 0.0)
    with pytest.warns(FiedlerWarning, match="indefinite"):
        fp = FiedlerPartition(negative_weights="keep").fit(Rn)
    assert fp.eigenvalues_[0] < -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clipped = FiedlerPartition().fit(Rn)
    assert abs(clipped.eigenvalues_[0]) < 1e-9 and clipped.eigenvalues_[1] > 0


# --- experiment 3: digits ---------------------------------------------------------------------

REPRESENTATIONS = ("pixels", "noise sd 8", "noise sd 16", "pure noise")
BCA_PAIRS = [(0, 1), (3, 8), (1, 7), (4, 9), (5, 6)]


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    reps = {"pixels": X}
    reps["noise sd 8"] = X + rng.normal(0, 8, X.shape)
    reps["noise sd 16"] = X + rng.normal(0, 16, X.shape)
    reps["pure noise"] = rng.normal(size=X.shape)
    subjects = [X + np.random.default_rng(seed).normal(0, 12, X.shape) for seed in (1, 2, 3)]
    return y, reps, subjects


def first_per_digit(y, n):
    return np.concatenate([np.flatnonzero(y == d)[:n] for d in range(10)])


def mean_pair_accuracy(R, y, negative_weights="clip"):
    """Mean Fiedler accuracy over the 45 digit pairs, 100 images of each digit."""
    sub = first_per_digit(y, 100)
    Rs, ys = R[np.ix_(sub, sub)], y[sub]
    accs = []
    for a, b in itertools.combinations(range(10), 2):
        s = np.flatnonzero((ys == a) | (ys == b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FiedlerWarning)  # chance-level pairs may be
            accs.append(fiedler_accuracy(Rs[np.ix_(s, s)], ys[s],  # degenerate: counted as
                                         negative_weights=negative_weights))  # they score
    return float(np.mean(accs))


@pytest.fixture(scope="module")
def rdms(digits):
    _, reps, _ = digits
    return {name: compute_rdm(V) for name, V in reps.items()}


@pytest.mark.slow
def test_digits_categorical_correlation_and_fiedler_accuracy(digits, rdms):
    """Table 2 and Figs. 8-9 at digits scale: the representation that clusters the categories
    correlates with the categorical model and partitions the pairs; noise degrades both to
    chance. Reference run: correlations 0.449, 0.202, 0.071, -0.001; accuracies 0.823, 0.716,
    0.574, 0.531 (measured here: 0.449, 0.202, 0.071, -0.001; 0.823, 0.701, 0.564, 0.530 with
    "clip", and 0.823, 0.716, 0.574, 0.531 with "keep")."""
    y, _, _ = digits
    model = categorical_rdm(y)
    corr = np.array([compare_rdms(rdms[k], model, "pearson") for k in REPRESENTATIONS])
    acc = np.array([mean_pair_accuracy(rdms[k], y) for k in REPRESENTATIONS])
    keep = np.array([mean_pair_accuracy(rdms[k], y, "keep") for k in REPRESENTATIONS])
    assert np.all(np.diff(corr) < 0) and np.all(np.diff(acc) < 0), (corr, acc)
    assert 0.40 <= corr[0] <= 0.50 and acc[0] >= 0.78, (corr, acc)
    assert acc[-1] <= 0.57 and abs(corr[-1]) < 0.02, (corr, acc)
    np.testing.assert_allclose(keep, acc, atol=0.02)


@pytest.fixture(scope="module")
def bca(digits, rdms):
    """The BCa part: 60 images per digit, n_boot=300, Bonferroni over the 5 pairs."""
    y, _, _ = digits
    sub = first_per_digit(y, 60)
    out = {}
    for name in ("pixels", "pure noise"):
        with pytest.warns(FiedlerWarning, match="n_boot=300 < 500"):
            out[name] = fiedler_pairwise(rdms[name][np.ix_(sub, sub)], y[sub], pairs=BCA_PAIRS,
                                         n_boot=300, n_permutations=999, random_state=0)
    return out


@pytest.mark.slow
def test_digits_bca_pixels_separate_every_pair(bca):
    """Figs. 8-9: a well-clustered representation partitions every pair significantly
    (Bonferroni-corrected BCa lower bound above chance). Reference-run lower bounds 0.98,
    0.67, 0.62, 0.97, 0.93; measured 0.983, 0.705, 0.596, 0.966, 0.950. Its time is
    measured in benchmarks/bench_rdm.py, not asserted here."""
    results = bca
    lows = [r["ci_low"] for r in results["pixels"]]
    assert all(low > 0.55 for low in lows), lows
    assert all(r["confidence_level"] == pytest.approx(1 - 0.05 / 5) for r in results["pixels"])


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "measured: pure-noise pair (4, 9) has accuracy 0.575 (the max over the two assignments "
    "lifts chance above 0.5), 75% of its resamples below it, so BCa's bias correction "
    "(z0 = 0.76) lifts the interval to [0.508, 0.658]; the other four pairs give [0.5, ...]. "
    "The same for random_state 0-5; the BCa formulas agree with scipy.stats.bootstrap."))
def test_digits_bca_pure_noise_intervals_contain_chance(bca):
    """Figs. 8-9 (EfficientNet-b0 'not significantly above noise'): for pure noise every
    Bonferroni-corrected BCa interval contains 0.5 (reference-run lower bounds 0.5)."""
    results = bca
    intervals = [(r["ci_low"], r["ci_high"]) for r in results["pure noise"]]
    assert all(low <= 0.5 <= high for low, high in intervals), intervals


@pytest.mark.slow
def test_digits_pure_noise_not_significant_by_permutation(bca):
    """The same claim through the label-permutation p-value, which accounts for the chance
    level above 0.5: no pure-noise pair is significant at the Bonferroni level 0.01 (measured
    p = 0.85, 0.84, 0.85, 0.13, 0.71), while every pixel pair is (p = 0.001)."""
    results = bca
    assert all(r["p_permutation"] > 0.01 for r in results["pure noise"])
    assert all(r["p_permutation"] <= 0.01 for r in results["pixels"])
    assert not any(r["significant"] for r in results["pure noise"])
    assert all(r["significant"] for r in results["pixels"])


@pytest.mark.slow
def test_digits_mean_subject_beats_every_subject(digits):
    """Fig. 9 caption: the mean subject has higher accuracy than each single participant.
    Three noisy 'subjects' X + N(0, 12^2) (seeds 1, 2, 3); the mean of their RDMs beats each
    by >= 0.05. Reference run: 0.620, 0.586, 0.578, mean 0.708 (measured identical)."""
    y, _, subjects = digits
    subject_rdms = [compute_rdm(V) for V in subjects]
    single = [mean_pair_accuracy(R, y) for R in subject_rdms]
    mean_subject = mean_pair_accuracy(mean_rdm(np.stack(subject_rdms)), y)
    assert mean_subject >= max(single) + 0.05, (single, mean_subject)
