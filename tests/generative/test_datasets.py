"""make_two_digit_composites, make_point_shapes and make_rotating_shape_images."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from geolearn.datasets import (
    _generative,
    make_point_shapes,
    make_rotating_shape_images,
    make_two_digit_composites,
)
from geolearn.topology import persistence_diagrams


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


# ------------------------------------------------------------- rotating-glyph images
def _centroid(weights):
    """Mass centre ``(x, y)`` of an image in image-side units about the centre, y down."""
    L = weights.shape[-1]
    k = (np.arange(L) + 0.5) / L - 0.5
    total = weights.sum()
    return np.array([(weights.sum(0) * k).sum(), (weights.sum(1) * k).sum()]) / total


def test_rotating_shapes_shapes_range_and_params():
    X, params = make_rotating_shape_images(30, image_size=16, random_state=0,
                                           return_params=True)
    assert X.shape == (30, 3, 16, 16) and X.dtype == np.float64
    assert X.min() == 0.0 and X.max() == 1.0    # black background, fully covered pixels
    assert np.all((params["theta"] >= 0) & (params["theta"] < 2 * np.pi))
    assert np.all((params["scale"] >= 0.7) & (params["scale"] <= 1.0))
    np.testing.assert_array_equal(X[:, 1], 0.5 * X[:, 0])    # orange (1, 0.5, 0)
    grey = make_rotating_shape_images(30, image_size=16, n_channels=1, random_state=0)
    assert grey.shape == (30, 1, 16, 16)
    np.testing.assert_allclose(grey[:, 0], np.tensordot([0.299, 0.587, 0.114], X, (0, 1)),
                               atol=1e-12)
    assert make_rotating_shape_images(2, image_size=64).shape[1:] == (3, 64, 64)  # 12,288


def test_rotating_shapes_are_reproducible_and_chunked_alike(monkeypatch):
    X = make_rotating_shape_images(40, image_size=8, random_state=3)
    np.testing.assert_array_equal(make_rotating_shape_images(40, image_size=8, random_state=3), X)
    assert not np.array_equal(make_rotating_shape_images(40, image_size=8, random_state=4), X)
    monkeypatch.setattr(_generative, "_CHUNK_SUBPIXELS", 3 * 32 * 32)   # 3 images a chunk
    np.testing.assert_array_equal(make_rotating_shape_images(40, image_size=8, random_state=3), X)


@pytest.mark.parametrize("scale", [1.0, 0.8])
def test_rotating_shapes_geometry(scale):
    """theta = 0: disc above the triangle's centroid; pi / 2: to its left (counter-clockwise)."""
    X = _generative._render_glyphs(np.array([0.0, np.pi / 2]), np.array([scale, scale]), 32, 3)
    red, blue = X[:, 0], X[:, 2]
    glyph = red + blue                      # the triangle, the disc drawn on it
    np.testing.assert_allclose(_centroid(blue[0]), [0, -0.15 * scale], atol=0.01)
    np.testing.assert_allclose(_centroid(glyph[0]), [0, 0.06 * scale], atol=0.01)
    np.testing.assert_allclose(_centroid(blue[1]), [-0.15 * scale, 0], atol=0.01)
    np.testing.assert_allclose(_centroid(glyph[1]), [0.06 * scale, 0], atol=0.01)
    area = 32**2 * scale**2
    assert blue[0].sum() == pytest.approx(np.pi * 0.1**2 * area, rel=0.03)
    assert glyph[0].sum() == pytest.approx(0.5 * 0.72 * 0.72 * area, rel=0.02)


def test_rotating_shapes_are_asymmetric_and_periodic():
    theta = np.array([0.3, 0.3 + np.pi, 0.3 + 2 * np.pi])
    X = _generative._render_glyphs(theta, np.full(3, 0.9), 16, 3)
    assert np.abs(X[0] - X[1]).max() > 0.5
    np.testing.assert_allclose(X[0], X[2], atol=1e-12)


def test_rotating_shapes_form_a_circle():
    X = make_rotating_shape_images(150, image_size=16, scale_range=(0.85, 0.85),
                                   random_state=0).reshape(150, -1)
    h1 = persistence_diagrams(X, maxdim=1)[1]
    bars = np.sort(h1[:, 1] - h1[:, 0])[::-1]
    assert bars[0] > 1.0 and bars[0] > 4 * bars[1:].max(initial=0.0)
    # every image's nearest neighbour has a nearby angle (never the glyph turned by pi)
    X, params = make_rotating_shape_images(150, image_size=16, random_state=1,
                                           return_params=True)
    X = X.reshape(150, -1)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    theta = params["theta"]
    gap = np.abs(np.angle(np.exp(1j * (theta - theta[D.argmin(1)]))))
    assert gap.max() < 0.3


@pytest.mark.parametrize("kwargs, message", [
    ({"n_samples": 0}, "n_samples"), ({"image_size": 0}, "image_size"),
    ({"image_size": 2.5}, "image_size"), ({"n_channels": 2}, "n_channels"),
    ({"n_channels": True}, "n_channels"), ({"scale_range": (1.0, 0.5)}, "scale_range"),
    ({"scale_range": (0.0, 1.0)}, "scale_range"),
    ({"scale_range": (0.9, 1.2)}, "leave the image"),
    ({"scale_range": (np.nan, 1.0)}, "scale_range"), ({"scale_range": 0.5}, "scale_range"),
])
def test_rotating_shapes_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_rotating_shape_images(**{"n_samples": 3, **kwargs})
