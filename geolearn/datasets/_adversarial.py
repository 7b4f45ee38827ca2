"""The synthetic datasets of "Manifold-driven decomposition for adversarial robustness" (Sec. 3).

Data on a known manifold (the unit circle, the plane ``x3 = 0``) with a Bayes
boundary in closed form, so that adversarial risks have closed forms too.
"""

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_choice, check_scalar_param

BOUNDARIES = ("single", "double")


def make_circle_classification(n_samples=1000, boundary="single", random_state=None):
    """Points on the unit circle labelled by one or two lines through the centre.

    ``theta ~ U[0, 2 pi)``, ``X = (cos theta, sin theta)``; ``y = 1[x1 > 0]``
    ("single") or ``1[x1 x2 > 0]`` ("double"), in {0, 1} (the paper's +-1 is
    ``2 y - 1``). The Bayes classifier's L2 adversarial risk is
    ``(2 / pi) arcsin(eps)`` (single), twice that (double).

    Parameters
    ----------
    n_samples : int, default=1000
    boundary : {"single", "double"}, default="single"
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float32
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> from geolearn.datasets import make_circle_classification
    >>> X, y = make_circle_classification(4, boundary="double", random_state=0)
    >>> X.shape, y.dtype.name, bool((y == ((X[:, 0] * X[:, 1]) > 0)).all())
    ((4, 2), 'int64', True)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_choice(boundary, "boundary", BOUNDARIES)
    theta = check_random_state(random_state).uniform(0, 2 * np.pi, n_samples)
    X = np.column_stack([np.cos(theta), np.sin(theta)]).astype(np.float32)
    y = X[:, 0] > 0 if boundary == "single" else X[:, 0] * X[:, 1] > 0
    return X, y.astype(np.int64)


def make_sine_plane_classification(n_samples=1000, boundary="single", random_state=None):
    """Points on the plane ``x3 = 0`` of R^3 labelled by the curve ``x1 = sin(x2)``.

    ``x1, x2 ~ U[-pi, pi]``; ``y = 1[x1 > sin x2]`` ("single") or
    ``1[(x1 - sin x2) x2 > 0]`` ("double").

    Parameters
    ----------
    n_samples : int, default=1000
    boundary : {"single", "double"}, default="single"
    random_state : int, RandomState instance or None

    Returns
    -------
    X : ndarray of shape (n_samples, 3), float32
    y : ndarray of shape (n_samples,), int64

    Examples
    --------
    >>> from geolearn.datasets import make_sine_plane_classification
    >>> X, y = make_sine_plane_classification(5, random_state=0)
    >>> X.shape, bool((X[:, 2] == 0).all())
    ((5, 3), True)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_choice(boundary, "boundary", BOUNDARIES)
    U = check_random_state(random_state).uniform(-np.pi, np.pi, (n_samples, 2))
    X = np.column_stack([U, np.zeros(n_samples)]).astype(np.float32)
    s = X[:, 0].astype(np.float64) - np.sin(X[:, 1].astype(np.float64))
    y = s > 0 if boundary == "single" else s * X[:, 1] > 0
    return X, y.astype(np.int64)
