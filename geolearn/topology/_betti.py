"""Betti numbers and Betti curves read off persistence diagrams."""

import numpy as np

from .._utils.validation import check_diagram, check_diagrams


def betti_numbers(diagrams, min_persistence=0.0):
    """Number of significant features per homology dimension.

    A feature counts when its persistence ``death - birth`` exceeds
    ``min_persistence``; infinite deaths (essential classes) always count.

    Parameters
    ----------
    diagrams : list of array-like of shape (m_k, 2)
        One diagram per homology dimension, as returned by :func:`persistence_diagrams`.
    min_persistence : float or sequence of float, default=0.0
        One threshold for every dimension, or one per dimension.

    Returns
    -------
    betti : ndarray of shape (len(diagrams),), int

    Examples
    --------
    >>> from geolearn.topology import betti_numbers
    >>> betti_numbers([[[0, 1], [0, float("inf")]], [[0.2, 1.5], [0.3, 0.4]]], 0.5)
    array([2, 1])
    >>> betti_numbers([[[0, 1]], [[0.2, 1.5]]], min_persistence=[0.0, 2.0])
    array([1, 0])
    >>> betti_numbers([[[0, 1], [0, float("inf")]]], min_persistence=float("inf"))
    array([1])
    """
    dgms = check_diagrams(diagrams)
    tau = np.asarray(min_persistence, dtype=np.float64)
    if tau.ndim == 0:
        tau = np.full(len(dgms), float(tau))
    if tau.ndim != 1 or len(tau) != len(dgms) or np.isnan(tau).any():
        raise ValueError(f"min_persistence must be a number or one number per diagram "
                         f"({len(dgms)}); got {min_persistence!r}.")
    # ``inf - b > tau`` is False for tau = inf: test essential classes on their own.
    return np.array([int(((d[:, 1] - d[:, 0] > t) | np.isposinf(d[:, 1])).sum())
                     for d, t in zip(dgms, tau)], dtype=np.int64)


def betti_curve(diagram, radii):
    """Betti number ``beta(r) = #{(b, d) : b <= r < d}`` of one diagram at each radius.

    Parameters
    ----------
    diagram : array-like of shape (m, 2)
    radii : float or array-like of float

    Returns
    -------
    betti : ndarray of int with the shape of ``radii``

    Examples
    --------
    >>> from geolearn.topology import betti_curve
    >>> betti_curve([[0, 1], [0, 2], [0, float("inf")]], [0, 0.5, 1, 2, 10])
    array([3, 3, 2, 1, 1])
    """
    D = check_diagram(diagram)
    r = np.asarray(radii, dtype=np.float64)
    if np.isnan(r).any():
        raise ValueError("radii must not hold NaN.")
    born = np.searchsorted(np.sort(D[:, 0]), r, side="right")
    dead = np.searchsorted(np.sort(D[:, 1]), r, side="right")
    out = (born - dead).astype(np.int64)
    return int(out) if out.ndim == 0 else out
