"""make_two_digit_composites and make_point_shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from geolearn.datasets import make_point_shapes, make_two_digit_composites


def test_two_digit_composites_are_digit_pairs():
    Xtr, ytr, ctr, Xte, yte, cte = make_two_digit_composites(300, 200, random_state=0)
    assert Xtr.shape == (300, 128) and Xte.shape == (200, 128)
    assert Xtr.min() >= 0 and Xtr.max() <= 1
    np.testing.assert_array_equal(ytr, ctr[:, 0] * 6 + ctr[:, 1])
    digits = load_digits()
    keep = digits.target < 6
    pool = {d: (digits.images[keep][digits.target[keep] == d] / 16).reshape(-1, 64)
            for d in range(6)}
    left = Xtr.reshape(300, 8, 16)[:, :, :8].reshape(300, 64)
    right = Xtr.reshape(300, 8, 16)[:, :, 8:].reshape(300, 64)
    for i in range(0, 300, 37):  # each half is a real image of its labelled digit
        assert np.any(np.all(pool[ctr[i, 0]] == left[i], axis=1))
        assert np.any(np.all(pool[ctr[i, 1]] == right[i], axis=1))
    # test composites never reuse a training digit image
    halves = lambda X: {r.tobytes() for r in np.concatenate(  # noqa: E731
        [X.reshape(-1, 8, 16)[:, :, :8].reshape(-1, 64), X.reshape(-1, 8, 16)[:, :, 8:]
         .reshape(-1, 64)])}
    assert not halves(Xtr) & halves(Xte)
    assert len(np.unique(ytr)) == 36
    again = make_two_digit_composites(300, 200, random_state=0)
    np.testing.assert_array_equal(again[0], Xtr)


def test_two_digit_composites_bad_input():
    with pytest.raises(ValueError, match="digits"):
        make_two_digit_composites(10, 10, digits=(1, 1))
    with pytest.raises(ValueError, match="n_train"):
        make_two_digit_composites(0, 10)


def test_point_shapes_share_one_scale():
    pts = make_point_shapes(1000, random_state=0)
    for X in pts.values():
        assert X.shape == (1000, 2)
        np.testing.assert_allclose(X.mean(0), 0, atol=1e-12)
        assert (X ** 2).sum(1).mean() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="shapes"):
        make_point_shapes(10, shapes=("torus",))


@settings(max_examples=10, deadline=None)
@given(digits=st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True),
       n_train=st.integers(1, 40), n_test=st.integers(1, 40), seed=st.integers(0, 100))
def test_two_digit_composite_labels_are_their_codes(digits, n_train, n_test, seed):
    Xtr, ytr, ctr, Xte, yte, cte = make_two_digit_composites(n_train, n_test, digits,
                                                             random_state=seed)
    k = len(digits)
    for X, y, codes, n in ((Xtr, ytr, ctr, n_train), (Xte, yte, cte, n_test)):
        assert X.shape == (n, 128) and codes.shape == (n, 2)
        assert codes.min() >= 0 and codes.max() < k
        np.testing.assert_array_equal(y, codes[:, 0] * k + codes[:, 1])
    np.testing.assert_array_equal(make_two_digit_composites(n_train, n_test, digits,
                                                            random_state=seed)[3], Xte)
