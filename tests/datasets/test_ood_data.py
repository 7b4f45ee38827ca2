"""OOD test images: the shapes are the drawn shapes, the patches are the photographs' pixels."""

import numpy as np
import pytest

from geolearn.datasets import load_natural_patches, make_shape_images


def brute_pool(images, pool):
    """Block means by explicit loops over the output pixels."""
    n, H, W = images.shape
    out = np.empty((n, H // pool, W // pool))
    for i in range(H // pool):
        for j in range(W // pool):
            out[:, i, j] = images[:, i * pool:(i + 1) * pool, j * pool:(j + 1) * pool].mean(
                axis=(1, 2))
    return out


def test_shapes_are_deterministic_and_pooled_from_their_rendering():
    b = make_shape_images(40, random_state=0)
    assert b.data.shape == (40, 1, 8, 8) and b.data.dtype == np.float32
    assert b.data.min() >= 0 and b.data.max() <= 1 and b.image_shape == (1, 8, 8)
    assert set(b.target) == {0, 1} and b.target_names == ["ellipse", "rectangle"]
    np.testing.assert_array_equal(make_shape_images(40, random_state=0).data, b.data)
    assert not np.array_equal(make_shape_images(40, random_state=1).data, b.data)
    full = make_shape_images(40, pool=1, random_state=0)
    assert full.data.shape == (40, 1, 32, 32)
    assert set(np.unique(full.data)) <= {0.0, 1.0}  # the rendering is binary
    np.testing.assert_array_equal(full.angles, b.angles)
    np.testing.assert_allclose(b.data[:, 0], brute_pool(full.data[:, 0], 4), atol=1e-7)
    np.testing.assert_allclose(make_shape_images(40, pool=2, random_state=0).data[:, 0],
                               brute_pool(full.data[:, 0], 2), atol=1e-7)
    X, y = make_shape_images(40, random_state=0, return_X_y=True)
    np.testing.assert_array_equal(X, b.data)
    np.testing.assert_array_equal(y, b.target)


def test_shapes_have_their_drawn_area_centre_and_orientation():
    b = make_shape_images(400, pool=1, random_state=3)
    assert (b.centres >= 10).all() and (b.centres <= 22).all()
    assert (b.half_axes >= 4).all() and (b.half_axes <= 11).all()
    img = b.data[:, 0].astype(float)
    a, c = b.half_axes[:, 0], b.half_axes[:, 1]
    reach = np.hypot(a, c)  # the farthest a shape reaches from its centre
    inside = ((b.centres - reach[:, None] >= 0) & (b.centres + reach[:, None] <= 32)).all(axis=1)
    assert inside.sum() > 30
    area = np.where(b.target == 0, np.pi * a * c, 4 * a * c)
    rel = img.sum(axis=(1, 2))[inside] / area[inside] - 1
    assert np.abs(rel).max() < 0.1 and abs(rel.mean()) < 0.02
    # centroid of the pixel centres (column, row) is the drawn centre
    grid = np.arange(32) + 0.5
    mass = img.sum(axis=(1, 2))
    centroid = np.c_[(img.sum(axis=1) * grid).sum(1) / mass, (img.sum(axis=2) * grid).sum(1) / mass]
    np.testing.assert_allclose(centroid[inside], b.centres[inside], atol=0.35)
    # the long axis of an elongated ellipse points along (cos angle, sin angle) in (column, row)
    long = inside & (b.target == 0) & (a > 1.5 * c)
    assert long.sum() >= 3
    for k in np.flatnonzero(long):
        rows, cols = np.nonzero(img[k])
        major = np.linalg.eigh(np.cov(np.c_[cols, rows].T))[1][:, -1]
        assert abs(major @ [np.cos(b.angles[k]), np.sin(b.angles[k])]) > 0.98


def test_single_kind_of_shape():
    b = make_shape_images(30, shapes=("rectangle",), pool=1, random_state=0)
    assert (b.target == 0).all() and b.target_names == ["rectangle"]
    e = make_shape_images(30, shapes=("ellipse",), pool=1, random_state=0)
    # the same draws: each rectangle covers its inscribed ellipse
    assert (b.data >= e.data).all() and (b.data.sum() > e.data.sum())


def test_natural_patches_are_pooled_crops_of_the_photographs():
    from sklearn.datasets import load_sample_images

    photos = [img.mean(axis=2) / 255 for img in load_sample_images().images]
    p = load_natural_patches(25, random_state=0)
    assert p.data.shape == (25, 1, 8, 8) and p.data.dtype == np.float32
    assert p.data.min() >= 0 and p.data.max() <= 1
    crops = np.stack([photos[k][r:r + 32, c:c + 32] for k, (r, c) in zip(p.target, p.corners)])
    np.testing.assert_allclose(p.data[:, 0], brute_pool(crops, 4), atol=1e-6)
    assert set(p.target) == {0, 1}
    np.testing.assert_array_equal(load_natural_patches(25, random_state=0).data, p.data)
    assert not np.array_equal(load_natural_patches(25, random_state=1).data, p.data)
    raw = load_natural_patches(5, patch_size=16, pool=1, random_state=2)
    assert raw.data.shape == (5, 1, 16, 16)
    r, c = raw.corners[0]
    np.testing.assert_allclose(raw.data[0, 0], photos[raw.target[0]][r:r + 16, c:c + 16],
                               atol=1e-6)
    # patches vary in content, unlike a constant image
    assert p.data.reshape(25, -1).std(axis=1).max() > 0.05


@pytest.mark.parametrize("call, match", [
    (lambda: make_shape_images(0), "n_samples"),
    (lambda: make_shape_images(5, pool=3), "pool must divide"),
    (lambda: make_shape_images(5, shapes=("triangle",)), "shapes"),
    (lambda: make_shape_images(5, shapes=()), "shapes"),
    (lambda: load_natural_patches(5, patch_size=24, pool=5), "pool must divide"),
    (lambda: load_natural_patches(5, patch_size=1000), "patch_size"),
    (lambda: load_natural_patches(-1), "n_samples"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()
