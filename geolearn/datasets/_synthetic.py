"""Synthetic data with known geometry: stripes, sinusoidal boundaries, circle, sphere, torus."""

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_scalar_param


def make_stripes(n_samples=1000, n_features=30, boundaries=(-0.6745, 0.6745), label_noise=0.0,
                 random_state=None):
    """Gaussian points labelled by stripes along the first coordinate.

    ``X ~ N(0, I)``; ``y = +1`` when the number of ``boundaries`` below
    ``x_0 + label_noise * eps`` is odd, else ``-1``. The default puts one
    stripe around the origin holding half the mass. The label depends on one
    direction only, so the other ``n_features - 1`` are directions a good
    model is invariant to (the stripe model of Petrini et al.).

    Parameters
    ----------
    n_samples : int, default=1000
    n_features : int, default=30
    boundaries : sequence of float, default=(-0.6745, 0.6745)
    label_noise : float, default=0.0
    random_state : int, RandomState or None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), values in {-1, +1}

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_stripes
    >>> X, y = make_stripes(200, 5, random_state=0)
    >>> X.shape, np.unique(y).tolist()
    ((200, 5), [-1, 1])
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(n_features, "n_features", kind="integer", low=1)
    check_scalar_param(label_noise, "label_noise", low=0)
    b = np.sort(np.asarray(boundaries, dtype=float).ravel())
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    x0 = X[:, 0] + label_noise * rng.standard_normal(n_samples)
    below = (b[None, :] < x0[:, None]).sum(axis=1)
    y = np.where(below % 2 == 1, 1, -1)
    return X, y


def make_sinusoid_boundary(n_samples=400, amplitude=0.6, frequency=7.0, phase=-1.0, sign=1.0,
                           random_state=None):
    """Points in ``[-1, 1]^2`` labelled by which side of a sine curve they lie on.

    ``y = 1[x_2 > sign * amplitude * sin(frequency * x_1 + phase)]`` (the toy task
    of Zavatone-Veth et al.; their code uses ``0.6 sin(7 x_1 - 1)``).

    Parameters
    ----------
    n_samples : int, default=400
        Number of points, uniform on the square.
    amplitude, frequency, phase : float, default=0.6, 7.0, -1.0
        The boundary ``amplitude * sin(frequency * x_1 + phase)``.
    sign : float, default=1.0
        ``-1`` mirrors the boundary (the other class of the paper's pair of tasks).
    random_state : int, RandomState instance or None, default=None
        Seeds the points.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int in {0, 1}

    Examples
    --------
    >>> from geolearn.datasets import make_sinusoid_boundary
    >>> X, y = make_sinusoid_boundary(100, random_state=0)
    >>> X.shape, y.dtype.kind
    ((100, 2), 'i')
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    rng = np.random.default_rng(random_state if not isinstance(random_state, np.random.RandomState)
                                else random_state.randint(2**31))
    X = rng.uniform(-1, 1, (n_samples, 2))
    y = (X[:, 1] > sign * amplitude * np.sin(frequency * X[:, 0] + phase)).astype(np.int64)
    return X, y


def make_xor(n_samples=4, *, noise=0.0, random_state=None):
    """XOR data: the corners ``{-1, 1}^2`` labelled ``(0, 1, 1, 0)``, in turn, plus noise.

    Sample ``i`` is corner ``i % 4`` (so the classes stay balanced) plus
    isotropic Gaussian noise. The defaults give the four exact XOR points, the
    smallest problem a linear model cannot solve.

    Parameters
    ----------
    n_samples : int, default=4
        Number of points (at least 4).
    noise : float, default=0.0
        Standard deviation of the Gaussian noise added to each coordinate.
    random_state : int, RandomState or None, default=None
        Seeds the noise.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        ``1`` where the signs of the corner's coordinates differ.

    Examples
    --------
    >>> from geolearn.datasets import make_xor
    >>> make_xor()[1]
    array([0, 1, 1, 0])
    >>> X, y = make_xor(200, noise=0.1, random_state=0)
    >>> X.shape, int(y.sum())
    ((200, 2), 100)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=4)
    check_scalar_param(noise, "noise", low=0)
    corners = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    idx = np.arange(n_samples) % 4
    X = corners[idx]
    if noise > 0:
        X = X + noise * check_random_state(random_state).standard_normal(X.shape)
    return X, np.array([0, 1, 1, 0])[idx]


def make_circle_points(n_samples=1000, *, radius=1.0, noise=0.0, grid=False, random_state=None,
                       return_params=False):
    """Points on a circle in the plane, optionally noisy.

    The Laplace-Beltrami eigenvalues of the unit circle are ``k^2`` (each twice
    for ``k >= 1``), the reference of diffusion-map spectra.

    Parameters
    ----------
    n_samples : int, default=1000
    radius : float, default=1.0
    noise : float, default=0.0
        Standard deviation of isotropic Gaussian noise added to each coordinate.
    grid : bool, default=False
        Equally spaced angles instead of uniform random ones.
    random_state : int, RandomState or None
    return_params : bool, default=False
        Also return the angle ``t`` of each point.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    t : ndarray of shape (n_samples,), only when ``return_params``

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> X = make_circle_points(8, grid=True)
    >>> bool(abs((X ** 2).sum(1) - 1).max() < 1e-12)
    True
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(noise, "noise", low=0)
    rng = check_random_state(random_state)
    if grid:
        t = 2 * np.pi * np.arange(n_samples) / n_samples
    else:
        t = rng.uniform(0, 2 * np.pi, n_samples)
    X = radius * np.column_stack([np.cos(t), np.sin(t)])
    if noise:
        X = X + noise * rng.standard_normal(X.shape)
    return (X, t) if return_params else X


def make_sphere_points(n_samples=1000, *, radius=1.0, noise=0.0, grid=False, random_state=None,
                       return_params=False):
    """Points on the 2-sphere in R^3 (Fibonacci lattice when ``grid``), optionally noisy.

    Laplace-Beltrami eigenvalues of the unit sphere: ``l(l+1)`` with
    multiplicity ``2l+1``.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of points.
    radius : float, default=1.0
        Radius of the sphere.
    noise : float, default=0.0
        Standard deviation of isotropic Gaussian noise added in R^3.
    grid : bool, default=False
        A deterministic Fibonacci lattice (near-uniform) instead of uniform
        random points.
    random_state : int, RandomState instance or None, default=None
        Seeds the points (unless ``grid``) and the noise.
    return_params : bool, default=False
        Also return the clean unit vectors.

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
    U : ndarray of shape (n_samples, 3), the clean unit vectors, only when ``return_params``

    Examples
    --------
    >>> from geolearn.datasets import make_sphere_points
    >>> X = make_sphere_points(100, grid=True)
    >>> bool(abs(np.linalg.norm(X, axis=1) - 1).max() < 1e-12)
    True
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(noise, "noise", low=0)
    rng = check_random_state(random_state)
    if grid:
        i = np.arange(n_samples) + 0.5
        z = 1 - 2 * i / n_samples
        phi = np.pi * (1 + 5**0.5) * i
        r = np.sqrt(1 - z**2)
        U = np.column_stack([r * np.cos(phi), r * np.sin(phi), z])
    else:
        U = rng.standard_normal((n_samples, 3))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
    X = radius * U
    if noise:
        X = X + noise * rng.standard_normal(X.shape)
    return (X, U) if return_params else X


def make_torus_points(n_samples=1000, *, R=2.0, r=1.0, noise=0.0, embedding="clifford",
                      grid=False, random_state=None, return_params=False):
    """Points on a torus, optionally noisy.

    Parameters
    ----------
    n_samples : int, default=1000
        With ``grid=True``, rounded down to a square ``m x m`` grid.
    R, r : float, default=2.0, 1.0
        Radii of the two circles.
    noise : float, default=0.0
    embedding : {"clifford", "r3"}, default="clifford"
        ``"clifford"``: the flat torus ``(R cos u, R sin u, r cos v, r sin v)`` in
        R^4, whose Laplace-Beltrami spectrum (``R = r = 1``) is ``k1^2 + k2^2``;
        ``"r3"``: the ring torus in R^3.
    grid : bool, default=False
    random_state : int, RandomState or None
    return_params : bool, default=False
        Also return the angles ``(u, v)``.

    Returns
    -------
    X : ndarray of shape (n_samples, 4) or (n_samples, 3)
    angles : ndarray of shape (n_samples, 2), only when ``return_params``

    Examples
    --------
    >>> from geolearn.datasets import make_torus_points
    >>> make_torus_points(100, grid=True).shape
    (100, 4)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(noise, "noise", low=0)
    if embedding not in ("clifford", "r3"):
        raise ValueError(f"embedding must be 'clifford' or 'r3'; got {embedding!r}.")
    rng = check_random_state(random_state)
    if grid:
        m = int(np.floor(np.sqrt(n_samples)))
        a = 2 * np.pi * np.arange(m) / m
        u, v = (g.ravel() for g in np.meshgrid(a, a, indexing="ij"))
    else:
        u, v = rng.uniform(0, 2 * np.pi, (2, n_samples))
    if embedding == "clifford":
        X = np.column_stack([R * np.cos(u), R * np.sin(u), r * np.cos(v), r * np.sin(v)])
    else:
        X = np.column_stack([(R + r * np.cos(v)) * np.cos(u), (R + r * np.cos(v)) * np.sin(u),
                             r * np.sin(v)])
    if noise:
        X = X + noise * rng.standard_normal(X.shape)
    return (X, np.column_stack([u, v])) if return_params else X
