"""Acceptance experiment 1 of the RDM spec: the RDM and comparison identities.

Paper: "Exploring fMRI RDMs: enhancing model robustness through neurobiological data"
(Frontiers in Computer Science 5:1275026, 2023). Random responses ``V`` (60 x 40, seed 0).
"""

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist, squareform

from geolearn.representations import (
    RDMTransformer,
    compare_rdms,
    compute_rdm,
    condense_rdm,
)


@pytest.fixture
def V():
    return np.random.default_rng(0).normal(size=(60, 40))


def test_correlation_rdm_is_paper_eq_2_and_3(V):
    """Eqs. 2-3: R_ij = 1 - Pearson(v_i, v_j), each row centred by its own mean (pdist)."""
    np.testing.assert_allclose(compute_rdm(V), squareform(pdist(V, "correlation")),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_other_metrics_match_pdist(V, metric):
    """The same RDM layout for the cosine and Euclidean dissimilarities."""
    np.testing.assert_allclose(compute_rdm(V, metric), squareform(pdist(V, metric)),
                               rtol=0, atol=1e-12)


def test_correlation_rdm_invariances(V):
    """psi is unchanged by v_i -> a_i v_i + b_i (a_i > 0) and by any feature permutation."""
    rng = np.random.default_rng(1)
    R = compute_rdm(V)
    a = rng.uniform(0.1, 10.0, size=(60, 1))
    b = rng.normal(scale=5.0, size=(60, 1))
    np.testing.assert_allclose(compute_rdm(a * V + b), R, rtol=0, atol=1e-12)
    np.testing.assert_allclose(compute_rdm(V[:, rng.permutation(40)]), R, rtol=0, atol=1e-12)


def test_comparison_is_paper_eq_4(V):
    """Eq. 4 (biological similarity) is Pearson of the condensed RDMs; HMS is Spearman."""
    rng = np.random.default_rng(2)
    R1 = compute_rdm(V)
    R2 = compute_rdm(V + rng.normal(size=V.shape), "euclidean")
    a, b = condense_rdm(R1), condense_rdm(R2)
    assert compare_rdms(R1, R2, "pearson") == pytest.approx(stats.pearsonr(a, b).statistic,
                                                            abs=1e-12)
    assert compare_rdms(R1, R2, "spearman") == pytest.approx(stats.spearmanr(a, b).statistic,
                                                             abs=1e-12)


def test_kendall_tau_a_with_ties_is_the_pair_count():
    """tau-a = (n_c - n_d) / (p(p-1)/2) over all pairs of entries, ties counted in p."""
    rng = np.random.default_rng(3)
    labels = np.repeat([0, 1, 2], 4)  # 12 stimuli
    C = (labels[:, None] != labels[None, :]).astype(float)  # categorical model: ties
    R = np.round(compute_rdm(rng.normal(size=(12, 5))), 1)  # rounded data RDM: ties
    a, b = condense_rdm(C), condense_rdm(R)
    assert len(np.unique(b)) < len(b)
    count = sum(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
                for i, j in itertools.combinations(range(len(a)), 2))
    expected = count / (len(a) * (len(a) - 1) / 2)
    assert compare_rdms(C, R, "kendall_tau_a") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("metric", ["correlation", "zscore_correlation"])
def test_transformer_on_references_is_the_rdm(V, metric):
    """RDMTransformer().fit_transform(V) is the RDM of the reference stimuli."""
    np.testing.assert_allclose(RDMTransformer(metric).fit_transform(V),
                               compute_rdm(V, metric), rtol=0, atol=1e-12)
