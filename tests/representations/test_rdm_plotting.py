"""RDMDisplay, RDMComparisonDisplay and FiedlerDisplay: the drawn data is the computed data."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from geolearn.plotting import FiedlerDisplay, RDMComparisonDisplay, RDMDisplay
from geolearn.representations import (
    FiedlerPartition,
    RDMTransformer,
    bootstrap_compare_rdms,
    categorical_rdm,
    compute_rdm,
    condense_rdm,
    fiedler_accuracy,
)


@pytest.fixture
def clustered():
    rng = np.random.default_rng(0)
    y = rng.permutation(np.repeat(["b", "a", "c"], [5, 6, 4]))
    codes = np.searchsorted(["a", "b", "c"], y)
    X = rng.normal(size=(15, 8)) + 3 * np.eye(8)[codes]
    return X, y


def test_rdm_display_sorts_by_label_and_draws_boundaries(clustered):
    X, y = clustered
    R = compute_rdm(X)
    fig, ax = plt.subplots()
    disp = RDMDisplay.from_results(R, labels=y, ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    order = np.argsort(y, kind="stable")
    np.testing.assert_array_equal(disp.image_.get_array(), R[np.ix_(order, order)])
    np.testing.assert_array_equal(disp.boundaries_, [5.5, 10.5])  # a: 6, b: 5, c: 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    np.testing.assert_allclose(ax.get_xticks(), [2.5, 8.0, 12.5])
    horizontal = sorted(line.get_ydata()[0] for line in ax.lines[0::2])
    vertical = sorted(line.get_xdata()[0] for line in ax.lines[1::2])
    assert horizontal == vertical == [5.5, 10.5]
    plt.close(fig)


def test_rdm_display_unsorted_condensed_and_from_estimator(clustered):
    X, y = clustered
    R = compute_rdm(X)
    disp = RDMDisplay.from_results(condense_rdm(R), labels=y, sort=False, colorbar=False)
    np.testing.assert_array_equal(disp.image_.get_array(), R)
    assert disp.colorbar_ is None and len(disp.boundaries_) == np.sum(y[1:] != y[:-1])
    plt.close(disp.figure_)
    disp = RDMDisplay.from_estimator(RDMTransformer().fit(X))
    np.testing.assert_allclose(disp.image_.get_array(), R, atol=1e-12)
    plt.close(disp.figure_)
    with pytest.raises(ValueError, match=r"labels must hold one label per stimulus"):
        RDMDisplay.from_results(R, labels=y[:-1])
    with pytest.raises(TypeError, match="fitted NetworkRDM or RDMTransformer"):
        RDMDisplay.from_estimator(FiedlerPartition())


def test_comparison_display_bars_and_error_bars_are_the_results(clustered):
    X, y = clustered
    target = categorical_rdm(y)
    rng = np.random.default_rng(1)
    results = {
        "features": bootstrap_compare_rdms(compute_rdm(X), target, n_boot=200, random_state=0),
        "noise": bootstrap_compare_rdms(compute_rdm(rng.normal(size=X.shape)), target,
                                        n_boot=200, random_state=0),
    }
    disp = RDMComparisonDisplay.from_results(results)
    heights = [bar.get_height() for bar in disp.bars_]
    assert heights == [r.statistic for r in results.values()]
    segments = disp.errorbars_.lines[2][0].get_segments()
    for seg, r in zip(segments, results.values()):
        np.testing.assert_allclose(seg[:, 1], [r.ci_low, r.ci_high], atol=1e-12)
    assert [t.get_text() for t in disp.ax_.get_xticklabels()] == ["features", "noise"]
    expected = ["p<0.001" if r.p_value < 0.001 else f"p={r.p_value:.3f}"
                for r in results.values()]
    assert [t.get_text() for t in disp.texts_] == expected
    assert expected[0] == "p<0.001"  # the clustered features match the categorical model
    plt.close(disp.figure_)
    with pytest.raises(ValueError, match="at least one"):
        RDMComparisonDisplay.from_results({})


def test_fiedler_display_sorted_vector_threshold_and_accuracy(clustered):
    X, y = clustered
    two = y != "c"
    R = compute_rdm(X[two])
    fp = FiedlerPartition().fit(R)
    disp = FiedlerDisplay.from_estimator(fp, y[two])
    e2 = fp.fiedler_vector_
    np.testing.assert_array_equal(e2[disp.order_], np.sort(e2))
    assert sorted(disp.scatters_) == ["a", "b"]
    for name, coll in disp.scatters_.items():
        pts = coll.get_offsets()
        sel = y[two] == name
        np.testing.assert_array_equal(np.sort(pts[:, 1]), np.sort(e2[sel]))
        ranks = np.argsort(disp.order_)[sel]
        np.testing.assert_array_equal(np.sort(pts[:, 0]), np.sort(ranks))
    assert list(disp.threshold_.get_ydata()) == [0.0, 0.0]
    assert disp.accuracy_ == fiedler_accuracy(R, y[two]) > 0.8
    plt.close(disp.figure_)
    unlabelled = FiedlerDisplay.from_results(R)
    assert unlabelled.accuracy_ is None
    assert sum(len(c.get_offsets()) for c in unlabelled.scatters_.values()) == two.sum()
    assert len(unlabelled.scatters_["e2 < 0"].get_offsets()) == np.sum(fp.labels_ == 0)
    plt.close(unlabelled.figure_)
    with pytest.raises(TypeError, match="fitted FiedlerPartition"):
        FiedlerDisplay.from_estimator(FiedlerPartition())
