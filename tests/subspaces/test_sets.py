"""check_sets: every accepted form of a set array gives the same zero-padded sets."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geolearn.subspaces._sets import check_sets


@given(seed=st.integers(0, 2**31 - 1), r=st.integers(1, 5), n=st.integers(1, 6),
       l=st.integers(1, 3))
def test_the_forms_of_a_set_array_agree(seed, r, n, l):
    X = np.random.default_rng(seed).standard_normal((r, n, l))
    if l > n:
        with pytest.raises(ValueError, match="more vectors"):
            check_sets(X)
        return
    sets, dims = check_sets(X)
    np.testing.assert_array_equal(sets, X)
    np.testing.assert_array_equal(dims, np.full(r, l))
    for other in (check_sets(list(X)), check_sets(X.reshape(r, n * l), set_shape=(n, l)),
                  check_sets(X.transpose(0, 2, 1).reshape(r, l, 1, n, 1))):  # image sets
        np.testing.assert_array_equal(other[0], sets)
        np.testing.assert_array_equal(other[1], dims)
    ragged = [x[:, : 1 + i % l] for i, x in enumerate(X)]
    padded, sizes = check_sets(ragged)
    np.testing.assert_array_equal(sizes, [x.shape[1] for x in ragged])
    for x, p, size in zip(ragged, padded, sizes):
        np.testing.assert_array_equal(p[:, :size], x)
        assert not p[:, size:].any()  # zero padding
    with pytest.raises(ValueError, match="columns per row"):
        check_sets(X.reshape(r, n * l), set_shape=(n + 1, l))
    table = check_sets(X[:, :, 0])
    np.testing.assert_array_equal(table[0], X[:, :, :1])
