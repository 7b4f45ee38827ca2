"""Peak memory of the RDMs: about one output array, not several (measured with tracemalloc).

At 5,000 x 20, RDMTransformer peaked at about 3 copies of its 200 MB output (1.0 - G and
the clip each made one) and compute_rdm at 2 (R + R.T.copy(), and an (m, m) temporary in
the squared distances).
"""

import tracemalloc

import numpy as np
import pytest

from geolearn.representations import RDMTransformer, compute_rdm

X = np.random.default_rng(0).random((1500, 20))
OUTPUT = 1500 * 1500 * 8


def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("metric", ["correlation", "cosine", "euclidean",
                                    "sqeuclidean_per_feature", "zscore_correlation"])
def test_rdm_transformer_peaks_at_about_its_output(metric):
    est = RDMTransformer(metric=metric).fit(X)
    assert _peak(lambda: est.transform(X)) < 1.3 * OUTPUT


@pytest.mark.parametrize("metric", ["correlation", "euclidean"])
def test_compute_rdm_peaks_at_about_its_output(metric):
    assert _peak(lambda: compute_rdm(X, metric)) < 1.3 * OUTPUT
    # condensed: the square and its triangle, no index arrays
    assert _peak(lambda: compute_rdm(X, metric, condensed=True)) < 1.3 * 1.5 * OUTPUT
