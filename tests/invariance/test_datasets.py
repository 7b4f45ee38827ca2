import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geolearn.datasets import load_digits_images, make_transforming_mnist


@pytest.mark.parametrize("group, order", [("rot4", 4), ("xtrans3", 3)])
def test_transforming_digits_are_padded_digits_moved_by_the_recorded_element(group, order):
    data = make_transforming_mnist(group=group, random_state=0)
    X, y = load_digits_images(return_X_y=True)
    keep = y != 9
    padded = np.pad(X[keep], ((0, 0), (0, 0), (2, 2), (2, 2)))
    assert data.data.shape == (1617, 1, 12, 12) and data.data.dtype == np.float32
    np.testing.assert_array_equal(data.target, y[keep])
    assert set(np.unique(data.element)) == set(range(order))
    for k in range(order):
        sel = data.element == k
        moved = (np.rot90(padded[sel], k, axes=(2, 3)) if group == "rot4"
                 else np.roll(padded[sel], 4 * k, axis=3))
        np.testing.assert_array_equal(data.data[sel], moved)
    plain = make_transforming_mnist(group=group, transform=False, return_X_y=True)[0]
    np.testing.assert_array_equal(plain, padded)


def test_transforming_mnist_options_and_errors():
    X, y = make_transforming_mnist(image_size=16, drop_classes=(), random_state=0,
                                   return_X_y=True)
    assert X.shape == (1797, 1, 16, 16) and len(np.unique(y)) == 10
    with pytest.raises(ValueError, match="divisible by 3"):
        make_transforming_mnist(group="xtrans3", image_size=14)
    with pytest.raises(ValueError, match="image_size"):
        make_transforming_mnist(image_size=11)
    with pytest.raises(ValueError, match="source"):
        make_transforming_mnist(source="fashion")
    with pytest.raises(ValueError, match="group"):
        make_transforming_mnist(group="rot8")


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["rot4", "xtrans3"]), st.integers(0, 3))
def test_undoing_the_recorded_elements_gives_the_padded_digits(seed, group, pad):
    """Property: moving each image back by the inverse of its ``element`` gives ``transform=False``
    images, for any seed and any admissible image size."""
    size = 12 + 6 * pad if group == "xtrans3" else 8 + 2 * pad
    data = make_transforming_mnist(group=group, image_size=size, random_state=seed)
    plain = make_transforming_mnist(group=group, image_size=size, transform=False).data
    back = np.empty_like(data.data)
    for k in range(4 if group == "rot4" else 3):
        sel = data.element == k
        back[sel] = (np.rot90(data.data[sel], -k, axes=(2, 3)) if group == "rot4"
                     else np.roll(data.data[sel], -k * size // 3, axis=3))
    np.testing.assert_array_equal(back, plain)
    assert data.data.shape[1:] == (1, size, size) == data.image_shape
