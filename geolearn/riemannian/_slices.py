"""Low-dimensional slices of input space: interpolation paths, ternary planes, 2-D grids."""

import numpy as np
from sklearn.utils import Bunch

# a unit equilateral triangle centred at 0: where the three spanning samples are drawn
TRIANGLE = np.array([[-0.5, -np.sqrt(3) / 6], [0.5, -np.sqrt(3) / 6], [0.0, np.sqrt(3) / 3]])


def geometry_slice(points, values, *, kind="path", t=None, coords=None, barycentric=None,
                   predictions=None, entropy=None, shape=None):
    """Geometric quantities on a slice of input space, as a :class:`~sklearn.utils.Bunch`.

    The Bunch holds ``points``, ``kind``, ``t``, ``coords``, ``barycentric``,
    ``predictions``, ``entropy``, ``shape``, ``quantities`` (the names of the
    quantities) and each quantity under its own name (``slice["log_volume"]``).
    """
    return Bunch(points=points, kind=kind, t=t, coords=coords, barycentric=barycentric,
                 predictions=predictions, entropy=entropy, shape=shape,
                 quantities=tuple(values), **values)


def path_points(x_a, x_b, n_steps):
    """``x(t) = (1−t) x_a + t x_b`` at ``t_i = i/(n_steps−1)`` (endpoints included)."""
    t = np.linspace(0.0, 1.0, n_steps)
    return t, (1 - t)[:, None] * x_a + t[:, None] * x_b


def plane_points(x1, x2, x3, resolution, hull, extent):
    """Points of the plane through ``x1, x2, x3``, drawn at the corners of :data:`TRIANGLE`.

    ``hull="convex"``: barycentric ``λ = (i, j, N−i−j)/N``; ``"affine"``: a
    Cartesian grid on ``[−extent, extent]²`` of plotting coordinates.
    Returns ``coords, barycentric, points``.
    """
    if hull == "convex":
        N = resolution
        i, j = np.array([(i, j) for i in range(N + 1) for j in range(N + 1 - i)]).T
        lam = np.column_stack([i, j, N - i - j]) / N
        coords = lam @ TRIANGLE
    else:
        a = np.linspace(-extent, extent, resolution)
        coords = np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T
        A = np.vstack([TRIANGLE.T, np.ones(3)])
        lam = np.linalg.solve(A, np.vstack([coords.T, np.ones(len(coords))])).T
    return coords, lam, lam @ np.stack([x1, x2, x3])


def grid_points(bounds, resolution):
    """``linspace(lo, hi, resolution)`` per axis, first coordinate slowest."""
    lo, hi = bounds
    a = np.linspace(lo, hi, resolution)
    return np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T
