import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from geolearn.datasets import (
    load_digits_images,
    load_mnist_5k,
    make_circle_points,
    make_sinusoid_boundary,
    make_sphere_points,
    make_stripes,
    make_torus_points,
    make_xor,
)


def test_digits_images():
    X, y = load_digits_images(return_X_y=True)
    assert X.shape == (1797, 1, 8, 8) and X.dtype == np.float32
    assert X.min() == 0 and X.max() == 1
    from sklearn.datasets import load_digits

    np.testing.assert_allclose(X[:, 0] * 16, load_digits().images)
    b = load_digits_images(n_class=3, upsample=2)
    assert b.data.shape[1:] == (1, 16, 16) and set(b.target) == {0, 1, 2}
    # bilinear upsampling keeps the corners
    np.testing.assert_allclose(b.data[:, 0, 0, 0], load_digits_images(n_class=3).data[:, 0, 0, 0],
                               atol=1e-6)
    with pytest.raises(ValueError, match="upsample"):
        load_digits_images(upsample=3)


def test_mnist_5k():
    X, y = load_mnist_5k(return_X_y=True)
    assert X.shape == (5000, 1, 28, 28) and X.dtype == np.float32
    assert 0 <= X.min() and X.max() <= 1 and set(y) == set(range(10))


def test_stripes_label_rule():
    X, y = make_stripes(2000, 4, random_state=0)
    inside = np.abs(X[:, 0]) < 0.6745
    np.testing.assert_array_equal(y, np.where(inside, 1, -1))
    assert abs(inside.mean() - 0.5) < 0.05  # the default stripe holds half the mass
    X2, _ = make_stripes(2000, 4, random_state=0)
    np.testing.assert_array_equal(X, X2)


def test_sinusoid_boundary_and_xor():
    X, y = make_sinusoid_boundary(500, random_state=0)
    assert X.min() >= -1 and X.max() <= 1
    np.testing.assert_array_equal(y, X[:, 1] > 0.6 * np.sin(7 * X[:, 0] - 1))
    Xx, yx = make_xor()
    np.testing.assert_array_equal(yx, (Xx[:, 0] * Xx[:, 1] < 0).astype(int))


def test_xor_takes_a_size_noise_and_seed():
    """Defect: make_xor took no n_samples or random_state."""
    X, y = make_xor(203, noise=0.2, random_state=0)
    assert X.shape == (203, 2) and np.bincount(y).tolist() == [101, 102]
    corners = np.sign(X)  # noise of 0.2 almost never crosses an axis
    assert np.mean((corners[:, 0] * corners[:, 1] < 0) == y) > 0.99
    np.testing.assert_array_equal(X, make_xor(203, noise=0.2, random_state=0)[0])
    assert not np.array_equal(X, make_xor(203, noise=0.2, random_state=1)[0])
    np.testing.assert_array_equal(make_xor(8)[0][4:], make_xor()[0])
    for bad in (dict(n_samples=3), dict(noise=-1.0)):
        with pytest.raises(ValueError, match="n_samples|noise"):
            make_xor(**bad)


def test_manifold_points_lie_on_their_manifolds():
    X, t = make_circle_points(50, radius=2.0, random_state=0, return_params=True)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 2.0)
    np.testing.assert_allclose(np.arctan2(X[:, 1], X[:, 0]) % (2 * np.pi), t)
    S = make_sphere_points(300, grid=True)
    np.testing.assert_allclose(np.linalg.norm(S, axis=1), 1.0)
    assert np.abs(S.mean(0)).max() < 0.01  # the Fibonacci lattice is balanced
    T = make_torus_points(400, grid=True)
    np.testing.assert_allclose(np.linalg.norm(T[:, :2], axis=1), 2.0)
    np.testing.assert_allclose(np.linalg.norm(T[:, 2:], axis=1), 1.0)
    T3, ang = make_torus_points(100, embedding="r3", random_state=0, return_params=True)
    rho = np.linalg.norm(T3[:, :2], axis=1)
    np.testing.assert_allclose((rho - 2.0) ** 2 + T3[:, 2] ** 2, 1.0)


@given(n=st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.text(max_size=2)))
def test_generators_reject_bad_n_samples(n):
    for gen in (make_stripes, make_circle_points, make_sphere_points, make_torus_points,
                make_sinusoid_boundary):
        with pytest.raises(ValueError, match="n_samples"):
            gen(n)


@given(noise=st.one_of(st.floats(max_value=-1e-9), st.just(np.nan), st.just(np.inf)))
def test_generators_reject_bad_noise(noise):
    for gen in (make_circle_points, make_sphere_points, make_torus_points):
        with pytest.raises(ValueError, match="noise"):
            gen(10, noise=noise)
