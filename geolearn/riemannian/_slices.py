"""Low-dimensional slices of input space: interpolation paths, ternary planes, 2-D grids."""

from dataclasses import dataclass, field

import numpy as np

# a unit equilateral triangle centred at 0: where the three spanning samples are drawn
TRIANGLE = np.array([[-0.5, -np.sqrt(3) / 6], [0.5, -np.sqrt(3) / 6], [0.0, np.sqrt(3) / 3]])


@dataclass
class GeometrySlice:
    """Geometric quantities evaluated on a slice of input space.

    Attributes
    ----------
    points : ndarray of shape (P, d)
        The input points evaluated.
    values : dict of str to ndarray of shape (P,)
        Each quantity (``"log_volume"``, ``"rank"``, ``"ricci_scalar"``, or
        ``"log_metric_eigval_<i>"``) at each point.
    t : ndarray of shape (P,) or None
        Path parameter in [0, 1] (paths only).
    coords : ndarray of shape (P, 2) or None
        Plotting coordinates (planes and grids).
    barycentric : ndarray of shape (P, 3) or None
        Barycentric weights of the three spanning samples (planes only).
    predictions : ndarray of shape (P,) or None
        Predicted class when the map comes from a classifier network.
    entropy : ndarray of shape (P,) or None
        Softmax entropy divided by ``log(n_classes)`` (1 = most ambiguous).
    kind : {"path", "plane", "grid"}
    shape : tuple of int or None
        ``(resolution, resolution)`` for Cartesian grids (values reshape to it).

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.riemannian import GeometrySlice
    >>> s = GeometrySlice(points=np.zeros((3, 2)), values={"log_volume": np.zeros(3)},
    ...                   t=np.linspace(0, 1, 3), kind="path")
    >>> s["log_volume"].shape
    (3,)
    """

    points: np.ndarray
    values: dict = field(default_factory=dict)
    t: np.ndarray = None
    coords: np.ndarray = None
    barycentric: np.ndarray = None
    predictions: np.ndarray = None
    entropy: np.ndarray = None
    kind: str = "path"
    shape: tuple = None

    def __getitem__(self, name):
        return self.values[name]


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
