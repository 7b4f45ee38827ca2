"""compare_rdms and bootstrap_compare_rdms: closed forms, brute force, masking, refusals."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from sklearn.utils import Bunch

from geolearn.representations import (
    bootstrap_compare_rdms,
    categorical_rdm,
    compare_rdms,
    compute_rdm,
    condense_rdm,
    squareform_rdm,
)
from geolearn.representations._rdm_compare import METHODS, _rank


def _tau_a_brute(a, b):
    """Kendall's tau-a by the O(p^2) count over all pairs of entries."""
    s = sum(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j])
            for i, j in itertools.combinations(range(len(a)), 2))
    return s / (len(a) * (len(a) - 1) / 2)


def _brute(a, b, method):
    if method == "pearson":
        return stats.pearsonr(a, b).statistic
    if method == "spearman":
        return stats.spearmanr(a, b).statistic
    if method == "cosine":
        return a @ b / np.sqrt((a @ a) * (b @ b))
    return _tau_a_brute(a, b)


def _rdms(m, seed=0, noise=1.0, rounding=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 6))
    R1 = compute_rdm(X)
    R2 = compute_rdm(X + noise * rng.normal(size=X.shape))
    if rounding is not None:  # ties
        R1, R2 = np.round(R1, rounding), np.round(R2, rounding)
    return R1, R2


@pytest.mark.parametrize("method", METHODS)
def test_compare_matches_brute_force_with_ties(method):
    R1, R2 = _rdms(12, rounding=1)
    a, b = condense_rdm(R1), condense_rdm(R2)
    assert len(np.unique(a)) < len(a)  # the example has ties
    expected = _brute(a, b, method)
    assert compare_rdms(R1, R2, method) == pytest.approx(expected, abs=1e-12)
    assert compare_rdms(a, b, method) == pytest.approx(expected, abs=1e-12)
    assert compare_rdms(R2, R1, method) == pytest.approx(expected, abs=1e-12)


def test_tau_a_differs_from_tau_b_under_ties():
    C = categorical_rdm([0, 0, 0, 1, 1, 1, 2, 2])
    R, _ = _rdms(8)
    tau_b = stats.kendalltau(condense_rdm(C), condense_rdm(R)).statistic
    tau_a = compare_rdms(C, R, "kendall_tau_a")
    assert tau_a == pytest.approx(_tau_a_brute(condense_rdm(C), condense_rdm(R)), abs=1e-12)
    assert abs(tau_a) < abs(tau_b)


def test_nan_pairs_are_masked_in_both():
    R1, R2 = _rdms(10)
    a, b = condense_rdm(R1), condense_rdm(R2)
    a[[3, 17]] = np.nan
    b[30] = np.nan
    keep = np.ones(a.size, bool)
    keep[[3, 17, 30]] = False
    for method in METHODS:
        assert compare_rdms(a, b, method) == pytest.approx(
            _brute(a[keep], b[keep], method), abs=1e-12)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall_tau_a"])
def test_constant_vector_is_an_error(method):
    R1, _ = _rdms(6)
    with pytest.raises(ValueError, match="R2 is constant"):
        compare_rdms(R1, np.ones(15), method)


def test_cosine_refuses_only_zero_vectors():
    R1, _ = _rdms(6)
    a = condense_rdm(R1)
    assert compare_rdms(a, np.ones(15), "cosine") == pytest.approx(
        a.sum() / np.sqrt(15 * (a @ a)))
    with pytest.raises(ValueError, match="all zeros"):
        compare_rdms(np.zeros(15), a, "cosine")


@pytest.mark.parametrize("R1, R2, match", [
    (np.ones(3), np.ones(6), "different numbers of stimuli"),
    (np.ones(5), np.ones(6), "not triangular"),
    (np.array([1.0, np.nan, np.nan]), np.ones(3), "share 1 defined pairs"),
    (np.array([1.0, -0.5, 2.0]), np.ones(3), "negative"),
])
def test_compare_refuses(R1, R2, match):
    with pytest.raises(ValueError, match=match):
        compare_rdms(R1, R2)


def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"method must be one of \['pearson', 'spearman'"):
        compare_rdms(np.arange(1.0, 4), np.arange(1.0, 4), "tau_b")


_vec = st.lists(st.integers(0, 20).map(lambda k: k / 10), min_size=10, max_size=10)


@given(_vec, _vec, st.floats(0.1, 10), st.floats(0, 5))
def test_invariances(a, b, scale, shift):
    """Pearson is invariant under positive affine maps; rank methods under monotone ones."""
    a, b = np.array(a), np.array(b)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return
    assert compare_rdms(a, b) == pytest.approx(compare_rdms(scale * a + shift, b), abs=1e-9)
    for method in ("spearman", "kendall_tau_a"):
        assert compare_rdms(a, b, method) == pytest.approx(
            compare_rdms(np.exp(3 * a), b, method), abs=1e-12)
    assert compare_rdms(a, b, "cosine") == pytest.approx(
        compare_rdms(scale * a, b, "cosine"), abs=1e-12)


# ---- bootstrap ----

def _explicit_bootstrap(R1, R2, method, draws):
    """Each resample built explicitly: sub-RDMs, duplicate pairs and NaN pairs left out."""
    m = R1.shape[0]
    I, J = np.triu_indices(m, 1)
    out = []
    for idx in draws:
        a = R1[idx][:, idx][I, J]
        b = R2[idx][:, idx][I, J]
        keep = (idx[I] != idx[J]) & ~np.isnan(a) & ~np.isnan(b)
        a, b = a[keep], b[keep]
        out.append(_brute(a, b, method))
    return np.array(out)


@pytest.mark.parametrize("method", METHODS)
def test_bootstrap_equals_explicit_resampling(method):
    """The weighted O(p) computation equals rebuilding every resample (ties and NaN too)."""
    R1, R2 = _rdms(9, rounding=1)
    R1[2, 5] = R1[5, 2] = np.nan
    n_boot = 40
    res = bootstrap_compare_rdms(R1, R2, method, n_boot=n_boot, random_state=3)
    draws = np.random.RandomState(3).randint(9, size=(n_boot, 9))
    np.testing.assert_allclose(res.distribution, _explicit_bootstrap(R1, R2, method, draws),
                               atol=1e-12)
    assert res.statistic == compare_rdms(R1, R2, method)


def test_bootstrap_summaries():
    R1, R2 = _rdms(30, noise=0.7)
    res = bootstrap_compare_rdms(R1, R2, "spearman", n_boot=300, confidence_level=0.9,
                                 random_state=0)
    assert isinstance(res, Bunch) and res.se is res["se"]
    d = res.distribution
    assert d.shape == (300,)
    assert res.se == pytest.approx(np.std(d, ddof=1))
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(np.quantile(d, [0.05, 0.95])))
    assert res.p_value == pytest.approx(stats.t.sf(res.statistic / res.se, 29))
    pct = bootstrap_compare_rdms(R1, R2, "spearman", n_boot=300, p_method="percentile",
                                 random_state=0)
    np.testing.assert_array_equal(pct.distribution, d)
    assert pct.p_value == pytest.approx((1 + np.sum(d <= 0)) / 301)


def test_bootstrap_is_seeded_and_centred_on_the_statistic():
    R1, R2 = _rdms(40, noise=0.5)
    a = bootstrap_compare_rdms(R1, R2, n_boot=200, random_state=1)
    b = bootstrap_compare_rdms(R1, R2, n_boot=200, random_state=1)
    c = bootstrap_compare_rdms(R1, R2, n_boot=200, random_state=2)
    np.testing.assert_array_equal(a.distribution, b.distribution)
    assert not np.array_equal(a.distribution, c.distribution)
    assert a.ci_low < a.statistic < a.ci_high
    assert a.p_value < 1e-3


def test_bootstrap_of_unrelated_rdms_is_not_significant():
    R1, _ = _rdms(40, seed=0)
    R2, _ = _rdms(40, seed=1)
    res = bootstrap_compare_rdms(R1, R2, n_boot=300, random_state=0)
    assert res.ci_low < 0 < res.ci_high or res.p_value > 0.05


def test_duplicated_stimulus_pairs_are_left_out():
    """Zeros pairing two copies of one stimulus would pull a rank correlation upwards."""
    R1, R2 = _rdms(10)
    draws = np.random.RandomState(0).randint(10, size=(50, 10))
    res = bootstrap_compare_rdms(R1, R2, "spearman", n_boot=50, random_state=0)
    I, J = np.triu_indices(10, 1)
    with_zeros = [stats.spearmanr(R1[d][:, d][I, J], R2[d][:, d][I, J]).statistic
                  for d in draws]
    assert np.nanmean(with_zeros) > np.nanmean(res.distribution) + 0.05


def test_undefined_resamples_warn_and_are_left_out():
    C = categorical_rdm([0, 0, 1, 1])
    R, _ = _rdms(4)
    with pytest.warns(UserWarning, match="resamples gave a constant RDM vector"):
        res = bootstrap_compare_rdms(C, R, n_boot=200, random_state=0)
    bad = np.isnan(res.distribution)
    assert 0 < bad.sum() < 200
    assert res.se == pytest.approx(np.std(res.distribution[~bad], ddof=1))


@pytest.mark.parametrize("kwargs, match", [
    ({"n_boot": 0}, "n_boot"),
    ({"n_boot": 2.5}, "n_boot"),
    ({"confidence_level": 1.0}, "confidence_level"),
    ({"p_method": "bca"}, "p_method"),
    ({"method": "kendall"}, "method"),
])
def test_bootstrap_bad_parameters(kwargs, match):
    R1, R2 = _rdms(5)
    with pytest.raises(ValueError, match=match):
        bootstrap_compare_rdms(R1, R2, **kwargs)


def test_bootstrap_accepts_condensed_input():
    R1, R2 = _rdms(8)
    a = bootstrap_compare_rdms(R1, R2, n_boot=20, random_state=0)
    b = bootstrap_compare_rdms(condense_rdm(R1), squareform_rdm(condense_rdm(R2)), n_boot=20,
                               random_state=0)
    np.testing.assert_allclose(a.distribution, b.distribution, atol=1e-12)


_near_one = st.integers(-40, 40).map(lambda k: 1.0 + k * 2.0**-52)  # equal key prefixes
_value = (st.integers(0, 6).map(float) | st.floats(-5, 5, allow_subnormal=False)
          | _near_one | _near_one.map(lambda x: -x) | st.sampled_from([0.0, -0.0]))


@given(st.lists(_value, min_size=1, max_size=60))
def test_rank_is_rankdata(values):
    """The packed-key sort is exact: near-equal values, ties, signs and signed zeros."""
    v = np.array(values)
    np.testing.assert_array_equal(_rank(v), stats.rankdata(v))


def test_rank_of_a_large_vector_with_prefix_collisions():
    rng = np.random.default_rng(0)
    v = 1.0 + rng.integers(0, 2**20, size=300_000) * 2.0**-52  # all collide in the prefix
    v[::3] = rng.random(100_000)
    np.testing.assert_array_equal(_rank(v), stats.rankdata(v))


@pytest.mark.parametrize("seed", range(5))
def test_tau_a_counts_pairs_exactly_under_ties_and_signed_zeros(seed):
    # tau-a is an exact ratio of integers: counted from two stable sorts, it equals the
    # brute-force count to the last bit (-0.0 and 0.0 tie, though their bit patterns differ)
    rng = np.random.default_rng(seed)
    a, b = np.abs(np.round(rng.normal(size=(2, 45)), 1))
    a[::7], a[::11], b[::5] = -0.0, 0.0, -0.0
    assert compare_rdms(squareform_rdm(a), squareform_rdm(b), "kendall_tau_a") == (
        _tau_a_brute(a, b))
