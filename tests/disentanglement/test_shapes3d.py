"""make_shapes3d_like and load_3dshapes (DAE-OG spec, section 4 "Data")."""

import colorsys
import itertools
import sys
import types

import numpy as np
import pytest

from geolearn.datasets import SHAPES3D_FACTORS, load_3dshapes, make_shapes3d_like

SMALL = (2, 3, 2, 2, 4, 3)


def _images(X, size):
    return X.reshape(len(X), 3, size, size)


def _scene(factors, sizes=(10, 10, 10, 8, 4, 15), size=64):
    """Images of chosen factor rows: draw all combinations of a one-row grid."""
    from geolearn.datasets import _generative

    return _generative._render_shapes3d(np.atleast_2d(factors), sizes, size)


def _alpha(img, background, colour):
    """Per-pixel object coverage, from x = (1 - a) background + a colour."""
    d = np.asarray(colour) - np.asarray(background)
    return np.tensordot(d, img - np.asarray(background)[:, None, None], axes=(0, 0)) / (d @ d)


def test_shapes_ranges_and_every_combination_once():
    X, factors = make_shapes3d_like(SMALL, image_size=16)
    total = int(np.prod(SMALL))
    assert X.shape == (total, 3 * 16 * 16) and X.dtype == np.float32
    assert factors.shape == (total, 6) and factors.dtype == np.int64
    assert X.min() >= 0 and X.max() <= 1
    # every combination once, in C order (the last factor fastest)
    np.testing.assert_array_equal(factors, list(itertools.product(*map(range, SMALL))))
    # images differ wherever the object is visible (hue unlike floor and wall) and not a
    # disc (which ignores rotation)
    hues = factors[:, :3] / np.array(SMALL[:3])
    visible = (hues[:, 2] != hues[:, 0]) & (hues[:, 2] != hues[:, 1]) & (factors[:, 4] != 1)
    assert len(np.unique(X[visible], axis=0)) == visible.sum() == 90
    assert SHAPES3D_FACTORS == ("floor_hue", "wall_hue", "object_hue", "scale", "shape",
                                "orientation")


def test_default_sizes_and_draws_without_replacement():
    X, factors = make_shapes3d_like(image_size=8, n_samples=300, random_state=0)
    assert X.shape == (300, 192)
    assert np.all(factors >= 0) and np.all(factors < np.array([10, 10, 10, 8, 4, 15]))
    assert len(np.unique(factors, axis=0)) == 300
    X2, factors2 = make_shapes3d_like(image_size=8, n_samples=300, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(factors, factors2)
    assert not np.array_equal(factors, make_shapes3d_like(image_size=8, n_samples=300,
                                                          random_state=1)[1])
    # drawing all of them gives every combination
    _, every = make_shapes3d_like(SMALL, image_size=8, n_samples=288, random_state=0)
    assert len(np.unique(every, axis=0)) == 288


def test_colours_are_the_factor_hues():
    size = 32
    X, factors = make_shapes3d_like((10, 10, 10, 1, 4, 1), image_size=size, n_samples=60,
                                    random_state=0)
    imgs = _images(X, size)
    cy, cx = int(0.62 * size), size // 2
    for img, (floor, wall, obj, _, _, _) in zip(imgs, factors):
        expect = [np.array(colorsys.hsv_to_rgb(k / 10, 1.0, 1.0)) for k in (floor, wall, obj)]
        np.testing.assert_allclose(img[:, 2, 2], expect[1], atol=1e-6)          # wall
        np.testing.assert_allclose(img[:, size - 2, 2], expect[0], atol=1e-6)   # floor
        np.testing.assert_allclose(img[:, cy, cx], expect[2], atol=1e-6)        # object
    # the wall fills the top 60 % (19.2 rows of 32): row 19 is 0.2 wall, 0.8 floor
    wall, floor = np.array(colorsys.hsv_to_rgb(0.5, 1, 1)), np.array(colorsys.hsv_to_rgb(0, 1, 1))
    img = _scene([0, 5, 0, 0, 0, 0], size=size)[0]
    edge = img[:, :, :4]                             # columns the object never reaches
    np.testing.assert_allclose(edge[:, :19], np.broadcast_to(wall[:, None, None], (3, 19, 4)),
                               atol=1e-6)
    np.testing.assert_allclose(edge[:, 19, 0], 0.2 * wall + 0.8 * floor, atol=1e-6)
    np.testing.assert_allclose(edge[:, 20:], np.broadcast_to(floor[:, None, None], (3, 12, 4)),
                               atol=1e-6)


def test_each_factor_changes_its_part_of_the_image():
    size = 32
    base = np.array([1, 4, 7, 3, 0, 7])
    ref = _scene(base, size=size)[0]
    rows = np.arange(size)
    for f in range(6):
        other = base.copy()
        other[f] += 1
        diff = np.abs(_scene(other, size=size)[0] - ref).max(axis=0) > 1e-6
        assert diff.any(), SHAPES3D_FACTORS[f]
        r = rows[diff.any(axis=1)]
        if f == 0:                                   # floor hue: floor rows only
            assert r.min() >= int(0.6 * size)
        elif f == 1:                                 # wall hue: wall rows only
            assert r.max() <= int(0.6 * size)
        else:                                        # object factors: around the object
            c = rows[diff.any(axis=0)]
            assert abs(r.mean() - 0.62 * size) < 2 and abs(c.mean() - size / 2) < 2


def test_object_areas_follow_scale_and_shape():
    size = 64
    red, cyan = colorsys.hsv_to_rgb(0, 1, 1), colorsys.hsv_to_rgb(0.5, 1, 1)
    scales = np.linspace(0.75, 1.25, 8)
    exact = {0: 4.0, 1: np.pi, 2: 2.0, 3: 20 / 9}    # area / h^2 of square, disc, triangle, cross
    for shape, k in itertools.product(range(4), (0, 7)):
        img = _scene([0, 0, 5, k, shape, 7], size=size)[0]
        area = _alpha(img, red, cyan).sum()
        h = 0.5 * size / 4 * scales[k]
        assert area == pytest.approx(exact[shape] * h * h, rel=0.02), (shape, k)


def test_orientation_rotates_the_object():
    size, m = 64, 15
    red, cyan = colorsys.hsv_to_rgb(0, 1, 1), colorsys.hsv_to_rgb(0.5, 1, 1)
    angles = np.linspace(-30, 30, m)
    for shape in (0, 2, 3):                          # square, triangle, cross
        imgs = _scene([[0, 0, 5, 7, shape, k] for k in range(m)], size=size)
        # shapes symmetric about the vertical axis: -theta is the mirror image of theta
        for k in range(m):
            np.testing.assert_allclose(imgs[k][:, :, ::-1], imgs[m - 1 - k], atol=1e-6)
        assert not np.allclose(imgs[0], imgs[m // 2])
        assert not np.allclose(imgs[m - 1], imgs[m // 2])
    # the triangle's centroid sits h/3 below its centre when upright; rotated by theta
    # counter-clockwise on screen (y down) it moves to (sin theta, cos theta) h / 3
    imgs = _scene([[0, 0, 5, 7, 2, k] for k in range(m)], size=size)
    yy, xx = np.mgrid[0:size, 0:size] + 0.5
    for img, angle in zip(imgs, angles):
        a = _alpha(img, red, cyan)
        dx = (a * xx).sum() / a.sum() - 0.5 * size
        dy = (a * yy).sum() / a.sum() - 0.62 * size
        assert np.degrees(np.arctan2(dx, dy)) == pytest.approx(angle, abs=1.5)
        assert np.hypot(dx, dy) == pytest.approx(size / 8 * 1.25 / 3, rel=0.1)
    # a disc does not change with orientation
    discs = _scene([[0, 0, 5, 7, 1, k] for k in (0, 7, 14)], size=size)
    np.testing.assert_allclose(discs[0], discs[2], atol=1e-6)


def test_chunking_does_not_change_images(monkeypatch):
    from geolearn.datasets import _generative

    X, _ = make_shapes3d_like(SMALL, image_size=16)
    monkeypatch.setattr(_generative, "_CHUNK_SUBPIXELS", 5000)
    X2, _ = make_shapes3d_like(SMALL, image_size=16)
    np.testing.assert_array_equal(X, X2)


@pytest.mark.parametrize("kwargs, match", [
    ({"factor_sizes": (10, 10, 10, 8, 4)}, "factor_sizes must be 6"),
    ({"factor_sizes": (10, 10, 10, 8, 5, 15)}, r"factor_sizes\[shape\] must be at most 4"),
    ({"factor_sizes": (10, 0, 10, 8, 4, 15)}, r"factor_sizes\[wall_hue\]"),
    ({"factor_sizes": 3}, "factor_sizes must be 6"),
    ({"image_size": 4}, "image_size must be at least 8"),
    ({"image_size": 16.5}, "image_size"),
    ({"n_samples": 0}, "n_samples"),
    ({"factor_sizes": SMALL, "n_samples": 289}, "at most the number of factor combinations"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_shapes3d_like(**kwargs)


# ---------------------------------------------------------------------------- loader
def _fake_file_contents(n=12, size=8, seed=0):
    rng = np.random.RandomState(seed)
    images = rng.randint(0, 256, size=(n, size, size, 3)).astype(np.uint8)
    labels = np.c_[rng.choice([0.0, 0.1, 0.2], n), rng.choice([0.0, 0.5], n),
                   np.zeros(n), rng.choice([0.75, 1.25], n), rng.choice([0.0, 3.0], n),
                   rng.choice([-30.0, 0.0, 30.0], n)]
    return images, labels


def _check_loaded(X, factors, images, labels, index):
    n, size = len(index), images.shape[1]
    assert X.shape == (n, 3 * size * size) and X.dtype == np.float32
    np.testing.assert_allclose(X.reshape(n, 3, size, size),
                               np.moveaxis(images[index], -1, 1) / 255.0, rtol=1e-6)
    for i in range(6):
        np.testing.assert_array_equal(
            factors[:, i], np.searchsorted(np.unique(labels[:, i]), labels[index, i]))


def test_load_3dshapes_with_a_stub_h5py(monkeypatch, tmp_path):
    images, labels = _fake_file_contents()

    class File(dict):
        def __init__(self, path, mode):
            super().__init__(images=images, labels=labels)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setitem(sys.modules, "h5py", types.SimpleNamespace(File=File))
    X, factors = load_3dshapes(tmp_path / "3dshapes.h5")
    _check_loaded(X, factors, images, labels, np.arange(12))
    X, factors = load_3dshapes(tmp_path / "3dshapes.h5", n_samples=5, random_state=0)
    index = np.sort(np.random.RandomState(0).choice(12, 5, replace=False))
    _check_loaded(X, factors, images, labels, index)
    with pytest.raises(ValueError, match="at most the 12 images"):
        load_3dshapes(tmp_path / "3dshapes.h5", n_samples=13)


def test_load_3dshapes_without_h5py(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match="pip install h5py"):
        load_3dshapes("3dshapes.h5")


def test_load_3dshapes_reads_a_real_h5_file(tmp_path):
    h5py = pytest.importorskip("h5py")
    images, labels = _fake_file_contents(n=20, seed=1)
    path = tmp_path / "3dshapes.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    X, factors = load_3dshapes(path)
    _check_loaded(X, factors, images, labels, np.arange(20))
    X, factors = load_3dshapes(path, n_samples=7, random_state=3)
    _check_loaded(X, factors, images, labels,
                  np.sort(np.random.RandomState(3).choice(20, 7, replace=False)))
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.create_dataset("x", data=np.zeros(3))
    with pytest.raises(ValueError, match="'images' and 'labels'"):
        load_3dshapes(tmp_path / "other.h5")
