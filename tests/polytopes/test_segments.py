"""Regions along segments: exact breakpoints against dense sampling and bit identities."""

import numpy as np
import pytest

from geolearn.polytopes import ReLUPolytopes, segment_region_counts

from ._nets import gaussian_net, sequential


def _runs(bits):
    """Patterns of the maximal runs of equal consecutive rows."""
    keep = np.concatenate([[True], np.any(bits[1:] != bits[:-1], axis=1)])
    return bits[keep]


@pytest.fixture(scope="module")
def poly():
    X = np.random.default_rng(0).normal(size=(40, 5))
    return ReLUPolytopes(gaussian_net((5, 12, 12, 12, 2), seed=1), bounds=None).fit(X), X


def test_exact_matches_dense_sampling(poly):
    est, X = poly
    for a, b in zip(X[:3], X[3:6]):
        seg = est.segment_regions(a, b)
        t = np.linspace(0, 1, 100_001)
        runs = _runs(est.transform(a + t[:, None] * (b - a)).astype(bool))
        # every sampled run is an exact interval, in order
        pos = 0
        for r in runs:
            while pos < seg.n_regions and np.any(seg.patterns[pos] != r):
                pos += 1
            assert pos < seg.n_regions, "a sampled pattern is missing from the exact sequence"
        widths = np.diff(np.concatenate([[0], seg.t_breaks, [1]]))
        if widths.min() > 1e-5:
            assert len(runs) == seg.n_regions
        np.testing.assert_array_equal(seg.patterns[0], est.transform(a[None])[0])
        np.testing.assert_array_equal(seg.patterns[-1], est.transform(b[None])[0])


def test_flip_identities_and_bisection_bound(poly):
    est, X = poly
    exact = est.segment_region_counts(X[:20], X[20:])
    for a, b, n in zip(X[:20], X[20:], exact):
        seg = est.segment_regions(a, b)
        assert seg.n_regions == n
        assert seg.n_flips.sum() >= seg.hamming
        assert (seg.n_flips.sum() - seg.hamming) % 2 == 0
        assert seg.hamming == est.hamming_distances(a[None], b[None])[0, 0]
        bis = est.segment_regions(a, b, method="bisection")
        assert bis.n_regions <= n
        assert np.all(bis.n_flips == 1)


def test_degenerate_segments():
    est = ReLUPolytopes(gaussian_net((3, 4, 1), seed=0), bounds=None).fit(np.eye(3))
    x = np.array([0.3, -0.2, 0.5])
    assert est.segment_regions(x, x).n_regions == 1
    # no hidden layer: one region, no bits
    lin = ReLUPolytopes(sequential([np.ones((1, 3))], [[0.0]]), bounds=None).fit(np.eye(3))
    seg = lin.segment_regions(x, -x)
    assert seg.n_regions == 1 and seg.patterns.shape == (1, 0)
    with pytest.raises(ValueError, match="method"):
        est.segment_regions(x, -x, method="nope")


def test_multibit_crossing_counted_once():
    # two identical units flip together: one crossing of two bits
    net = sequential([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    est = ReLUPolytopes(net, bounds=None).fit(np.eye(2))
    seg = est.segment_regions([-1, 0], [1, 0])
    assert seg.n_regions == 2 and seg.n_flips.tolist() == [2] and seg.hamming == 2
    assert seg.t_breaks == pytest.approx([0.5])


def test_batched_counts_equal_each_segments_exact_regions():
    """``segment_region_counts`` runs every segment at once; each count is the one segment's."""
    est = ReLUPolytopes(gaussian_net((6, 12, 9, 7, 2), seed=3), bounds=None).fit(np.eye(6))
    rng = np.random.default_rng(1)
    XA, XB = 3 * rng.normal(size=(2, 25, 6))
    XB[0] = XA[0]  # a point: one region
    counts = est.segment_region_counts(XA, XB)
    assert counts[0] == 1 and counts.max() > 3
    np.testing.assert_array_equal(
        counts, [est.segment_regions(a, b).n_regions for a, b in zip(XA, XB)])


def test_segment_region_counts_function_needs_no_fitted_estimator():
    """The function counts what the fitted estimator's method counts, from the network alone."""
    net = gaussian_net((6, 12, 9, 7, 2), seed=3)
    rng = np.random.default_rng(2)
    XA, XB = 3 * rng.normal(size=(2, 25, 6))
    expected = ReLUPolytopes(net, bounds=None).fit(XA).segment_region_counts(XA, XB)
    np.testing.assert_array_equal(segment_region_counts(net, XA, XB), expected)
    with pytest.raises(ValueError, match="same shape"):
        segment_region_counts(net, XA, XB[:3])
    with pytest.raises(ValueError, match="XA has 5 features, but the network is expecting 6"):
        segment_region_counts(net, XA[:, :5], XB[:, :5])
