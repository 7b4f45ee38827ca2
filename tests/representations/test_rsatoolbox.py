"""Cross-checks against rsatoolbox (the RSA toolbox the paper used for its fMRI RDMs)."""

import numpy as np
import pytest

from geolearn.representations import bootstrap_compare_rdms, compare_rdms, compute_rdm

rsatoolbox = pytest.importorskip("rsatoolbox")
from rsatoolbox.data import Dataset
from rsatoolbox.inference import eval_bootstrap_pattern
from rsatoolbox.model import ModelFixed
from rsatoolbox.rdm import RDMs, calc_rdm, compare


@pytest.fixture
def V():
    return np.random.default_rng(0).normal(size=(30, 9))


@pytest.fixture
def pair(V):
    """Two condensed RDMs of the same stimuli; the second rounded to create ties."""
    rng = np.random.default_rng(1)
    a = compute_rdm(V, condensed=True)
    b = np.round(compute_rdm(V + rng.normal(size=V.shape), condensed=True), 1)
    return a, b


@pytest.mark.parametrize("ours, theirs", [("correlation", "correlation"),
                                          ("sqeuclidean_per_feature", "euclidean")])
def test_compute_rdm_matches_calc_rdm(V, ours, theirs):
    expected = calc_rdm(Dataset(V), method=theirs).get_vectors()[0]
    np.testing.assert_allclose(compute_rdm(V, ours, condensed=True), expected, atol=1e-12)


@pytest.mark.parametrize("ours, theirs", [("pearson", "corr"), ("spearman", "spearman"),
                                          ("cosine", "cosine"), ("kendall_tau_a", "tau-a")])
def test_compare_rdms_matches_compare(pair, ours, theirs):
    a, b = pair
    expected = compare(RDMs(a[None]), RDMs(b[None]), method=theirs)[0, 0]
    assert compare_rdms(a, b, ours) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("ours, theirs", [("pearson", "corr"), ("spearman", "spearman")])
def test_bootstrap_distribution_matches_eval_bootstrap_pattern(pair, ours, theirs):
    """Same draws (numpy's legacy RNG, seed 0) give the same resampled comparisons.

    rsatoolbox marks the pairs of two copies of one stimulus NaN and drops them; so do we.
    """
    a, b = pair
    np.random.seed(0)
    theirs_res = eval_bootstrap_pattern(ModelFixed("model", RDMs(b[None])), RDMs(a[None]),
                                        method=theirs, N=60, boot_noise_ceil=False)
    ours_res = bootstrap_compare_rdms(a, b, ours, n_boot=60, random_state=0)
    np.testing.assert_allclose(ours_res.distribution, theirs_res.evaluations.ravel(),
                               atol=1e-12)
