"""Peak memory of the RDMs: about one output array, not several (measured with tracemalloc).

At 5,000 x 20, RDMTransformer peaked at about 3 copies of its 200 MB output (1.0 - G and
the clip each made one) and compute_rdm at 2 (R + R.T.copy(), and an (m, m) temporary in
the squared distances). The condensed RDM was cut from the square one: 3 times the memory
of scipy's ``pdist``; it is now computed by blocks of rows.
"""

import tracemalloc

import numpy as np
import pytest
from scipy.spatial.distance import pdist

from geolearn.representations import RDMTransformer, compute_rdm, condense_rdm

METRICS = ["correlation", "cosine", "euclidean", "sqeuclidean_per_feature",
           "zscore_correlation"]

X = np.random.default_rng(0).random((1500, 20))
OUTPUT = 1500 * 1500 * 8


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("metric", METRICS)
def test_rdm_transformer_peaks_at_about_its_output(metric):
    est = RDMTransformer(metric=metric).fit(X)
    assert _peak(lambda: est.transform(X)) < 1.3 * OUTPUT


@pytest.mark.parametrize("metric", ["correlation", "euclidean"])
def test_compute_rdm_peaks_at_about_its_output(metric):
    assert _peak(lambda: compute_rdm(X, metric)) < 1.3 * OUTPUT


@pytest.mark.parametrize("chunk_size", [None, 7])
@pytest.mark.parametrize("metric", METRICS)
def test_condensed_compute_rdm_peaks_at_about_pdist(metric, chunk_size):
    """The condensed RDM peaked at 3x pdist's memory (the square RDM and its triangle)."""
    scipy_peak = _peak(lambda: pdist(X, "correlation"))
    assert _peak(lambda: compute_rdm(X, metric, condensed=True, chunk_size=chunk_size)) \
        < 1.25 * scipy_peak


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("metric", METRICS)
def test_condensed_compute_rdm_is_the_square_ones_triangle(metric, chunk_size, dtype):
    rng = np.random.default_rng(1)
    # near-duplicate rows exercise the cancellation fix of the squared distances
    Y = np.r_[rng.normal(size=(300, 9)), rng.normal(size=(40, 9)).repeat(2, 0)]
    Y[-80:] += 1e-9 * rng.normal(size=(80, 9))
    got = compute_rdm(Y, metric, condensed=True, chunk_size=chunk_size, dtype=dtype)
    square = compute_rdm(Y, metric, chunk_size=chunk_size, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, condense_rdm(square, check=False), rtol=0,
                               atol=1e-12 if dtype == np.float64 else 1e-5)
