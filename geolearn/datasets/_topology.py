"""Data with known topology: torus-ellipse and sphere images, cyclooctane, a Klein bottle.

The circle, sphere and torus point clouds of the topology study are the ones in
``_synthetic.py`` (``make_torus_points(..., embedding="r3")`` is the spec's standard
torus in R^3); this module adds the image sets, cyclooctane and the Klein bottle.
"""

from pathlib import Path

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_scalar_param
from .._utils.validation import check_numeric_array, check_squares_finite
from ._synthetic import make_torus_points

#: C-C bond length of cyclooctane in Angstrom (Martin et al. 2010).
CC_BOND = 1.52
#: C-C-C angle used to reconstruct conformations (degrees).
CCC_ANGLE = 115.0
_CHUNK = 1000


def _pixel_centres(size):
    """``(size*size, 2)`` pixel centres ``(x, y) = (column + 0.5, row + 0.5)``, C order."""
    k = np.arange(size) + 0.5
    yy, xx = np.meshgrid(k, k, indexing="ij")
    return np.column_stack([xx.ravel(), yy.ravel()])


def render_ellipses(phi, theta, image_size, supersample, semi_axes, orbit_radius):
    """Ellipse images for given orbit angles ``phi`` and orientations ``theta`` (float32).

    ``(u, v) = Rot(-theta)(p - c)`` is separable in the pixel's column x and row y
    (``u = cos(theta) (x - c_x) + sin(theta) (y - c_y)``), so it is built as outer sums.
    """
    s = image_size * supersample
    k = np.arange(s) + 0.5 - s / 2                       # pixel centres about the image centre
    a, b = semi_axes
    R, a2, b2 = orbit_radius * supersample, (a * supersample) ** 2, (b * supersample) ** 2
    X = np.empty((len(phi), image_size * image_size), dtype=np.float32)
    for lo in range(0, len(phi), _CHUNK):
        ph, th = phi[lo:lo + _CHUNK], theta[lo:lo + _CHUNK]
        c, si = np.cos(th)[:, None], np.sin(th)[:, None]
        dx, dy = k - R * np.cos(ph)[:, None], k - R * np.sin(ph)[:, None]
        u = (si * dy)[:, :, None] + (c * dx)[:, None, :]      # (m, rows, columns)
        v = (c * dy)[:, :, None] - (si * dx)[:, None, :]
        u *= u
        u /= a2
        v *= v
        v /= b2
        u += v
        mask = (u <= 1.0).astype(np.float32)
        pooled = mask.reshape(-1, image_size, supersample, image_size, supersample).mean((2, 4))
        X[lo:lo + _CHUNK] = pooled.reshape(len(ph), -1)
    return X


def _check_ellipse_params(image_size, supersample, semi_axes, orbit_radius):
    """Validate the rendering parameters of the ellipse images; returns ``(a, b)`` as floats."""
    check_scalar_param(image_size, "image_size", kind="integer", low=1)
    check_scalar_param(supersample, "supersample", kind="integer", low=1)
    try:
        a, b = (float(s) for s in semi_axes)
    except (TypeError, ValueError):
        raise ValueError(f"semi_axes must be two numbers (a, b); got {semi_axes!r}.") from None
    if not (np.isfinite(a) and np.isfinite(b) and a >= b > 0):
        raise ValueError(f"semi_axes must satisfy a >= b > 0; got {semi_axes!r}.")
    if not (np.isfinite(orbit_radius) and orbit_radius >= 0):
        raise ValueError(f"orbit_radius must be a finite number >= 0; got {orbit_radius!r}.")
    if orbit_radius + a > image_size / 2:
        raise ValueError(
            f"the ellipse leaves the image: orbit_radius + semi_axes[0] = {orbit_radius + a:g} "
            f"> image_size / 2 = {image_size / 2:g}."
        )
    return a, b


def make_torus_ellipse_images(n_samples=10000, image_size=32, supersample=2,
                              semi_axes=(8.0, 4.0), orbit_radius=7.0, random_state=None,
                              return_params=False):
    """Images of a white filled ellipse orbiting the centre and spinning: a torus S^1 x S^1.

    The ellipse's centre is ``c(phi) = centre + orbit_radius * (cos phi, sin phi)`` with
    ``phi ~ U[0, 2 pi)``, its orientation ``theta ~ U[0, pi)`` (an ellipse is
    pi-periodic, so theta lives on a circle). Each image is rendered as a binary mask
    on a ``supersample``-times finer grid (pixel centres at ``k + 0.5``; a pixel is
    inside iff ``(u/a)^2 + (v/b)^2 <= 1`` with ``(u, v) = Rot(-theta)(p - c)``) and
    average-pooled, so edges are blurred (Jin et al. 2024, Section 3.1: 32x32 images
    rendered at 64x64, orbit radius 7 px).

    Parameters
    ----------
    n_samples : int, default=10000
    image_size : int, default=32
        Side of the output image in pixels.
    supersample : int, default=2
        Rendering grid is ``image_size * supersample`` pixels a side.
    semi_axes : (float, float), default=(8.0, 4.0)
        ``(a, b)`` in output pixels, ``a >= b > 0`` (not given by the paper; these
        reproduce its persistence diagram).
    orbit_radius : float, default=7.0
        Radius of the centre's orbit in output pixels; ``orbit_radius + a`` must not
        exceed ``image_size / 2``.
    random_state : int, RandomState instance or None
    return_params : bool, default=False
        Also return the angles ``(phi, theta)`` of each image.

    Returns
    -------
    X : ndarray of shape (n_samples, image_size**2), float32 in [0, 1]
        Row-major images.
    params : ndarray of shape (n_samples, 2), only when ``return_params``

    Examples
    --------
    >>> from geolearn.datasets import make_torus_ellipse_images
    >>> X, params = make_torus_ellipse_images(5, random_state=0, return_params=True)
    >>> X.shape, X.dtype, params.shape
    ((5, 1024), dtype('float32'), (5, 2))
    >>> float(X.sum(1).mean()).__round__(0)  # area pi * 8 * 4 ~ 100.5 px
    100.0
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    a, b = _check_ellipse_params(image_size, supersample, semi_axes, orbit_radius)
    rng = check_random_state(random_state)
    phi = rng.uniform(0, 2 * np.pi, n_samples)
    theta = rng.uniform(0, np.pi, n_samples)
    X = render_ellipses(phi, theta, image_size, supersample, (a, b), orbit_radius)
    return (X, np.column_stack([phi, theta])) if return_params else X


def make_sphere_images(n_samples=10000, image_size=32, radius=10.0, blob_sigma=2.0,
                       random_state=None, return_params=False):
    """Images of a Gaussian blob steered by a unit vector: an embedded 2-sphere.

    Surrogate for the paper's POV-Ray "rotating jar" (not the paper's data). A
    direction ``v ~ uniform(S^2)`` gives ``I_v(p) = A(v_z) exp(-|p - c - radius (v_x,
    v_y)|^2 / (2 blob_sigma^2))`` with ``c`` the image centre, pixel centres at
    ``k + 0.5`` and ``A(v_z) = 0.6 + 0.4 v_z`` (the "lid knob" is brighter facing the
    viewer), so ``v -> I_v`` is continuous and injective.

    Parameters
    ----------
    n_samples : int, default=10000
    image_size : int, default=32
    radius : float, default=10.0
        ``R_s`` in pixels, ``< image_size / 2``.
    blob_sigma : float, default=2.0
    random_state : int, RandomState instance or None
    return_params : bool, default=False
        Also return the unit vectors ``v``.

    Returns
    -------
    X : ndarray of shape (n_samples, image_size**2), float32
    params : ndarray of shape (n_samples, 3), only when ``return_params``

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_sphere_images
    >>> X, V = make_sphere_images(4, random_state=0, return_params=True)
    >>> X.shape, bool(np.allclose(np.linalg.norm(V, axis=1), 1))
    ((4, 1024), True)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(image_size, "image_size", kind="integer", low=1)
    check_scalar_param(radius, "radius", low=0, closed="neither")
    check_scalar_param(blob_sigma, "blob_sigma", low=0, closed="neither")
    if radius >= image_size / 2:
        raise ValueError(f"radius must be < image_size / 2 = {image_size / 2:g}; got {radius!r}.")
    rng = check_random_state(random_state)
    V = rng.standard_normal((n_samples, 3))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    P = _pixel_centres(image_size) - image_size / 2
    X = np.empty((n_samples, image_size * image_size), dtype=np.float32)
    for lo in range(0, n_samples, _CHUNK):
        v = V[lo:lo + _CHUNK]
        d2 = ((P[None] - radius * v[:, None, :2]) ** 2).sum(-1)
        X[lo:lo + _CHUNK] = (0.6 + 0.4 * v[:, 2:]) * np.exp(-d2 / (2 * blob_sigma**2))
    return (X, V) if return_params else X


def make_klein_bottle_points(n_samples=1000, *, R=2.0, r=1.0, noise=0.0, grid=False,
                             random_state=None, return_params=False):
    """Points on the flat Klein bottle in R^4, optionally noisy.

    ``((R + r cos u) cos w, (R + r cos u) sin w, r sin u cos(w/2), r sin u sin(w/2))``
    with ``u, w ~ U[0, 2 pi)``: ``(u, w + 2 pi)`` and ``(-u, w)`` give the same point, so
    the image is a Klein bottle (embedded for ``R > r > 0``). Betti numbers (1, 2, 1)
    over Z/2, (1, 1, 0) over Z/3.

    Parameters
    ----------
    n_samples : int, default=1000
        With ``grid=True``, rounded down to a square ``m x m`` grid.
    R, r : float, default=2.0, 1.0
    noise : float, default=0.0
        Standard deviation of isotropic Gaussian noise on each coordinate.
    grid : bool, default=False
    random_state : int, RandomState instance or None
    return_params : bool, default=False
        Also return the angles ``(u, w)``.

    Returns
    -------
    X : ndarray of shape (n_samples, 4)
    angles : ndarray of shape (n_samples, 2), only when ``return_params``

    Examples
    --------
    >>> from geolearn.datasets import make_klein_bottle_points
    >>> make_klein_bottle_points(100, random_state=0).shape
    (100, 4)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(noise, "noise", low=0)
    if not (np.isfinite(R) and np.isfinite(r) and R > r > 0):
        raise ValueError(f"the radii must satisfy R > r > 0; got R={R!r}, r={r!r}.")
    rng = check_random_state(random_state)
    # the same angles (random or on a grid) as the torus sampler draws
    u, w = make_torus_points(n_samples, grid=grid, random_state=rng, return_params=True)[1].T
    ring = R + r * np.cos(u)
    X = np.column_stack([ring * np.cos(w), ring * np.sin(w), r * np.sin(u) * np.cos(w / 2),
                         r * np.sin(u) * np.sin(w / 2)])
    if noise:
        X = X + noise * rng.standard_normal(X.shape)
    return (X, np.column_stack([u, w])) if return_params else X


# ---------------------------------------------------------------------------- cyclooctane
def _ring_pairs():
    i = np.arange(8)
    return np.r_[i, i], np.r_[(i + 1) % 8, (i + 2) % 8]


def _ring_targets(bond, angle):
    return np.r_[np.full(8, bond), np.full(8, 2 * bond * np.sin(np.radians(angle) / 2))]


def bond_lengths(X):
    """The 8 ring bond lengths ``|c_{i+1} - c_i|`` (indices mod 8) of flattened conformations.

    Parameters
    ----------
    X : array-like of shape (n, 24)
        The 8 carbon positions ``(x1, y1, z1, ..., x8, y8, z8)`` of each conformation.

    Returns
    -------
    lengths : ndarray of shape (n, 8)

    Examples
    --------
    >>> from geolearn.datasets import CC_BOND, bond_lengths, make_cyclooctane
    >>> L = bond_lengths(make_cyclooctane(3, random_state=0))
    >>> L.shape, bool(abs(L - CC_BOND).max() < 1e-8)
    ((3, 8), True)
    """
    X = check_squares_finite(check_numeric_array(X, dtype=np.float64), what="bond lengths")
    if X.shape[1] != 24:
        raise ValueError(f"X must hold 8 carbon positions per row, shape (n, 24); got {X.shape}.")
    C = X.reshape(len(X), 8, 3)
    return np.linalg.norm(np.roll(C, -1, axis=1) - C, axis=2)


def _newton_project(C, targets, pairs, max_iter=50, tol=1e-8):
    """Batched minimum-norm Gauss-Newton on ``|c_j - c_i| - target = 0``; returns C, residual."""
    i, j = pairs
    m = len(targets)
    eye = np.eye(m)
    for _ in range(max_iter):
        diff = C[:, j] - C[:, i]                           # (n, m, 3)
        dist = np.linalg.norm(diff, axis=2)
        res = dist - targets
        worst = np.abs(res).max(axis=1)
        if worst.max() <= tol:
            break
        unit = diff / dist[..., None]
        J = np.zeros((len(C), m, 8, 3))
        J[:, np.arange(m), j] = unit
        J[:, np.arange(m), i] -= unit
        J = J.reshape(len(C), m, 24)
        G = J @ J.transpose(0, 2, 1) + 1e-12 * eye
        step = J.transpose(0, 2, 1) @ np.linalg.solve(G, res[..., None])
        C = C - step.reshape(len(C), 8, 3)
    diff = C[:, j] - C[:, i]
    return C, np.abs(np.linalg.norm(diff, axis=2) - targets).max(axis=1)


def _kabsch_align(C, ref):
    """Rotate each centred conformation in ``C`` (n, 8, 3) onto the centred ``ref`` (8, 3)."""
    H = C.transpose(0, 2, 1) @ ref                          # (n, 3, 3)
    U, _, Vt = np.linalg.svd(H)
    d = np.sign(np.linalg.det(U @ Vt))
    D = np.ones((len(C), 3))
    D[:, 2] = d
    Rm = (U * D[:, None, :]) @ Vt
    return C @ Rm


def make_cyclooctane(n_samples=2000, random_state=None):
    """Cyclooctane-like ring conformations in R^24 (reconstructed, approximate sampling).

    Starts from a regular planar octagon with bond 1.52 A plus ``N(0, 0.3^2)`` A noise on
    all 24 coordinates and projects each start onto the 2-dimensional variety
    ``|c_{i+1} - c_i| = 1.52``, ``|c_{i+2} - c_i| = 2 * 1.52 * sin(115 deg / 2)`` (indices
    mod 8; 24 - 6 - 16 = 2) by batched minimum-norm Gauss-Newton steps; starts whose
    largest residual stays above 1e-8 A are discarded and redrawn. Each conformation is
    centred at its centroid and Kabsch-aligned to the first accepted one. The density
    is not that of Martin et al. (2010); it lets pipelines run offline. Use
    :func:`load_cyclooctane` for the real data.

    Parameters
    ----------
    n_samples : int, default=2000
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (n_samples, 24), float64
        ``(x1, y1, z1, ..., x8, y8, z8)`` in Angstrom.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_cyclooctane
    >>> X = make_cyclooctane(50, random_state=0)
    >>> X.shape, bool(np.abs(np.linalg.norm(np.diff(X.reshape(-1, 8, 3), axis=1), axis=2)
    ...                       - 1.52).max() < 1e-6)
    ((50, 24), True)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    rng = check_random_state(random_state)
    pairs, targets = _ring_pairs(), _ring_targets(CC_BOND, CCC_ANGLE)
    k = np.arange(8)
    rho = CC_BOND / (2 * np.sin(np.pi / 8))
    octagon = np.column_stack([rho * np.cos(k * np.pi / 4), rho * np.sin(k * np.pi / 4),
                               np.zeros(8)])
    accepted, have = [], 0
    while have < n_samples:
        m = int(1.2 * (n_samples - have)) + 8
        starts = octagon + 0.3 * rng.standard_normal((m, 8, 3))
        C, res = _newton_project(starts, targets, pairs)
        C = C[np.isfinite(res) & (res <= 1e-8)][: n_samples - have]
        accepted.append(C)
        have += len(C)
    C = np.concatenate(accepted)
    C = C - C.mean(axis=1, keepdims=True)
    return _kabsch_align(C, C[0]).reshape(n_samples, 24)


def _read_array(path):
    """The array in a ``.npy`` file, or in a ``.csv``/``.txt`` file (an optional header line skipped)."""
    if path.suffix == ".npy":
        X = np.load(path, allow_pickle=False)
    elif path.suffix in (".csv", ".txt"):
        with open(path) as fh:
            first = fh.readline()
        try:
            [float(v) for v in first.replace(",", " ").split()]
            skip = 0
        except ValueError:
            skip = 1
        X = np.loadtxt(path, delimiter="," if "," in first else None, skiprows=skip, ndmin=2)
    else:
        raise ValueError(f"path must name a .npy, .csv or .txt file; got {str(path)!r}.")
    return X


def load_cyclooctane(path):
    """Read user-supplied cyclooctane conformations and check they are rings of 1.52 A bonds.

    The data of Martin et al. (2010) (6,040 conformations) is not bundled with any PyPI
    package; pass its file.

    Parameters
    ----------
    path : str or path-like
        A ``.npy`` file or a comma-separated ``.csv``/``.txt`` file (an optional header
        line is skipped) holding an array of shape (n, 24): the 8 carbon positions
        ``(x1, y1, z1, ..., x8, y8, z8)`` in Angstrom.

    Returns
    -------
    X : ndarray of shape (n, 24), float64

    Raises
    ------
    ValueError
        When the array is not (n, 24), holds NaN/inf, or a ring bond length is farther
        than 0.01 A from 1.52 A.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from geolearn.datasets import load_cyclooctane, make_cyclooctane
    >>> path = os.path.join(tempfile.mkdtemp(), "cyclooctane.npy")
    >>> np.save(path, make_cyclooctane(10, random_state=0))
    >>> load_cyclooctane(path).shape
    (10, 24)
    """
    path = Path(path)
    X = np.asarray(_read_array(path), dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 24 or len(X) == 0:
        raise ValueError(f"the cyclooctane file must hold an array of shape (n, 24); got shape "
                         f"{X.shape} from {str(path)!r}.")
    if not np.isfinite(X).all():
        raise ValueError(f"the cyclooctane file {str(path)!r} holds NaN or infinity.")
    err = np.abs(bond_lengths(X) - CC_BOND)
    if err.max() > 0.01:
        row = int(err.max(axis=1).argmax())
        raise ValueError(
            f"conformation {row} of {str(path)!r} has a ring bond {err[row].max():.4g} A away "
            f"from {CC_BOND} A (allowed 0.01 A): is it 8 carbon positions (x1, y1, z1, ...)?"
        )
    return X
