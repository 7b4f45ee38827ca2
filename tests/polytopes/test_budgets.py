"""Enumeration budgets: max_regions and max_time stop cleanly, say how far they got, and leave a
consistent part of the whole enumeration (whole regions with their own statistics and the graph
between them), marked ``complete=False``.

Before, ``max_regions`` truncated a 2-D subdivision in the middle of a layer (its cells had the
bits of the first layers only and the result failed to build), and nothing bounded the time.
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from geolearn.exceptions import PartialResultWarning
from geolearn.polytopes import ReLUPolytopes

from ._nets import gaussian_net

METHODS = ("subdivision", "traversal")


@pytest.fixture(scope="module")
def est():
    X = np.random.default_rng(0).uniform(-1, 1, size=(20, 2))
    return ReLUPolytopes(gaussian_net((2, 6, 5, 1), seed=0), bounds=(-1, 1),
                         random_state=0).fit(X)


@pytest.fixture(scope="module")
def whole(est):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return {m: est.enumerate_regions(method=m) for m in METHODS}


def _assert_part_of(part, whole):
    """``part`` is the first regions of ``whole``, with their statistics and graph."""
    n = part.n_regions
    assert not part.complete and 1 <= n < whole.n_regions
    assert part.patterns.shape == (n, whole.patterns.shape[1])
    np.testing.assert_array_equal(part.patterns, whole.patterns[:n])
    np.testing.assert_allclose(part.chebyshev_radius, whole.chebyshev_radius[:n])
    np.testing.assert_array_equal(part.bounded, whole.bounded[:n])
    np.testing.assert_allclose(part.W, whole.W[:n])
    np.testing.assert_array_equal(part.adjacency.toarray(), whole.adjacency[:n, :n].toarray())
    if whole.areas is not None:
        np.testing.assert_allclose(part.areas, whole.areas[:n])


@pytest.mark.parametrize("method", METHODS)
def test_max_time_stops_with_a_warning_and_a_consistent_part(est, whole, method):
    with pytest.warns(PartialResultWarning, match=r"stopped at max_time=0 after .* s with 1 region"
                                            r".*complete is False.*Raise max_time"):
        part = est.enumerate_regions(method=method, max_time=0)
    assert part.n_regions == 1
    _assert_part_of(part, whole[method])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a generous budget changes nothing
        full = est.enumerate_regions(method=method, max_time=600)
    assert full.complete
    np.testing.assert_array_equal(full.patterns, whole[method].patterns)


@settings(max_examples=8, deadline=None)
@given(k=st.integers(1, 12), method=st.sampled_from(METHODS))
def test_max_regions_gives_the_first_regions(est, whole, k, method):
    assume(k < whole[method].n_regions)
    with pytest.warns(PartialResultWarning, match=rf"stopped at max_regions={k} .* with {k} region"):
        part = est.enumerate_regions(method=method, max_regions=k)
    assert part.n_regions == k
    if method == "subdivision":  # the traversal also expands the regions it already found
        _assert_part_of(part, whole[method])
    else:
        assert not part.complete and np.all(np.isfinite(part.chebyshev_radius))


def test_exactly_enough_regions_is_complete(est, whole):
    n = whole["subdivision"].n_regions
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert est.enumerate_regions(method="subdivision", max_regions=n).complete


@pytest.mark.parametrize("kwargs, word", [
    ({"max_time": -1.0}, "max_time"), ({"max_time": np.nan}, "max_time"),
    ({"max_regions": 0}, "max_regions"), ({"max_regions": 2.5}, "max_regions"),
])
def test_budgets_are_validated(est, kwargs, word):
    with pytest.raises(ValueError, match=word):
        est.enumerate_regions(**kwargs)
