"""Data with known topology: images, cyclooctane, Klein bottle."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geolearn.datasets import (
    load_cyclooctane,
    make_cyclooctane,
    make_klein_bottle_points,
    make_sphere_images,
    make_torus_ellipse_images,
)
from geolearn.datasets._topology import bond_lengths, render_ellipses


def _centroid(X, size):
    img = X.reshape(len(X), size, size)
    k = np.arange(size) + 0.5
    m = img.sum((1, 2))
    return np.c_[(img * k[None, None, :]).sum((1, 2)) / m, (img * k[None, :, None]).sum((1, 2)) / m]


def test_torus_ellipse_images_geometry():
    X, params = make_torus_ellipse_images(300, random_state=0, return_params=True)
    assert X.shape == (300, 1024) and X.dtype == np.float32 and params.shape == (300, 2)
    assert X.min() == 0 and X.max() == 1
    assert set(np.unique(X * 4)) <= {0, 1, 2, 3, 4}             # 2x2 average of a binary mask
    phi, theta = params.T
    assert (0 <= phi).all() and (phi < 2 * np.pi).all() and (theta < np.pi).all()
    np.testing.assert_allclose(X.sum(1), np.pi * 8 * 4, rtol=0.03)   # the ellipse's area
    centre = 16 + 7 * np.c_[np.cos(phi), np.sin(phi)]
    np.testing.assert_allclose(_centroid(X, 32), centre, atol=0.15)


def test_torus_ellipse_orientation_is_pi_periodic():
    phi = np.array([1.0, 1.0, 1.0])
    imgs = render_ellipses(phi, np.array([0.4, 0.4 + np.pi, 0.4 + np.pi / 2]), 32, 2, (8, 4), 7)
    np.testing.assert_array_equal(imgs[0], imgs[1])
    assert not np.array_equal(imgs[0], imgs[2])


def test_images_are_reproducible():
    for gen in (make_torus_ellipse_images, make_sphere_images):
        np.testing.assert_array_equal(gen(50, random_state=3), gen(50, random_state=3))
        assert not np.array_equal(gen(50, random_state=3), gen(50, random_state=4))


def test_sphere_images_encode_the_direction():
    X, V = make_sphere_images(200, random_state=0, return_params=True)
    assert X.shape == (200, 1024) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1)
    np.testing.assert_allclose(X.max(1), 0.6 + 0.4 * V[:, 2], atol=0.12)
    np.testing.assert_allclose(_centroid(X, 32), 16 + 10 * V[:, :2], atol=0.05)


@pytest.mark.parametrize("kwargs, word", [
    (dict(semi_axes=(4.0, 8.0)), "semi_axes"), (dict(semi_axes=(8.0, 0.0)), "semi_axes"),
    (dict(semi_axes=3.0), "semi_axes"), (dict(orbit_radius=9.0), "leaves the image"),
    (dict(image_size=0), "image_size"), (dict(supersample=1.5), "supersample"),
    (dict(n_samples=0), "n_samples"), (dict(orbit_radius=-1.0), "orbit_radius"),
])
def test_torus_images_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        make_torus_ellipse_images(**{"n_samples": 2, **kwargs})


@pytest.mark.parametrize("kwargs, word", [
    (dict(radius=16.0), "radius"), (dict(radius=-1.0), "radius"),
    (dict(blob_sigma=0.0), "blob_sigma"), (dict(image_size=-3), "image_size"),
])
def test_sphere_images_bad_parameters(kwargs, word):
    with pytest.raises(ValueError, match=word):
        make_sphere_images(2, **kwargs)


def test_cyclooctane_constraints():
    X = make_cyclooctane(300, random_state=0)
    assert X.shape == (300, 24) and X.dtype == np.float64
    np.testing.assert_allclose(bond_lengths(X), 1.52, atol=1e-8)
    C = X.reshape(-1, 8, 3)
    np.testing.assert_allclose(np.linalg.norm(np.roll(C, -2, axis=1) - C, axis=2),
                               2 * 1.52 * np.sin(np.radians(115) / 2), atol=1e-8)
    np.testing.assert_allclose(C.mean(axis=1), 0, atol=1e-12)
    # Kabsch-aligned to the first conformation: no rotation brings any closer
    np.testing.assert_array_equal(X, make_cyclooctane(300, random_state=0))
    assert np.linalg.matrix_rank(X - X.mean(0), tol=1e-6) > 2     # not one conformation


def test_load_cyclooctane(tmp_path):
    X = make_cyclooctane(20, random_state=1)
    np.save(tmp_path / "c.npy", X)
    np.testing.assert_array_equal(load_cyclooctane(tmp_path / "c.npy"), X)
    np.savetxt(tmp_path / "c.csv", X, delimiter=",", header="x1,y1,z1", comments="")
    np.testing.assert_allclose(load_cyclooctane(tmp_path / "c.csv"), X, rtol=1e-15)
    np.savetxt(tmp_path / "c.txt", X)
    np.testing.assert_allclose(load_cyclooctane(str(tmp_path / "c.txt")), X, rtol=1e-15)
    np.save(tmp_path / "wide.npy", X[:, :21])
    with pytest.raises(ValueError, match="24"):
        load_cyclooctane(tmp_path / "wide.npy")
    bad = X.copy()
    bad[3, 0] += 0.05
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(ValueError, match="conformation 3"):
        load_cyclooctane(tmp_path / "bad.npy")
    nan = X.copy()
    nan[0, 0] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    with pytest.raises(ValueError, match="NaN"):
        load_cyclooctane(tmp_path / "nan.npy")
    with pytest.raises(ValueError, match="npy"):
        load_cyclooctane(tmp_path / "c.json")


def test_klein_bottle_identification():
    X, ang = make_klein_bottle_points(200, random_state=0, return_params=True)
    u, w = ang.T
    R, r = 2.0, 1.0
    Y = np.c_[(R + r * np.cos(-u)) * np.cos(w + 2 * np.pi), (R + r * np.cos(-u)) * np.sin(w),
              r * np.sin(-u) * np.cos((w + 2 * np.pi) / 2),
              r * np.sin(-u) * np.sin((w + 2 * np.pi) / 2)]
    np.testing.assert_allclose(X, Y, atol=1e-12)         # (u, w) ~ (-u, w + 2 pi)
    np.testing.assert_allclose(np.linalg.norm(X[:, :2], axis=1), R + r * np.cos(u))
    assert make_klein_bottle_points(100, grid=True).shape == (100, 4)
    noisy = make_klein_bottle_points(200, noise=0.1, random_state=0)
    assert 0.05 < np.abs(noisy - X).std() < 0.15
    with pytest.raises(ValueError, match="R > r"):
        make_klein_bottle_points(10, R=1.0, r=1.0)


@given(n=st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.text(max_size=2)))
def test_generators_reject_bad_n_samples(n):
    for gen in (make_torus_ellipse_images, make_sphere_images, make_cyclooctane,
                make_klein_bottle_points):
        with pytest.raises(ValueError, match="n_samples"):
            gen(n)
