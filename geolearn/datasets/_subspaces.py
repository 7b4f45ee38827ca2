"""Collections of subspaces near a planted Schubert variety."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state


def make_planted_variety(n_sets=60, n_features=50, set_dim=2, variety_dim=3, noise=0.0,
                         random_state=None):
    """Subspaces that each meet a planted subspace ``W`` in (about) one dimension.

    ``W`` is a uniformly random ``variety_dim``-dimensional subspace of
    ``R^n_features``; each set is an orthonormal basis of
    ``span(w + noise * g, z_1, ..., z_{set_dim - 1})`` with ``w`` a random unit
    vector of ``W`` and ``g, z_j`` Gaussian. With ``noise=0`` every set lies on
    the Schubert variety ``{V : dim(V ∩ W) >= 1}``, the setting of the
    "working dimension" experiment of Karimov, Kirby & Peterson (2023, Fig. 4).

    Parameters
    ----------
    n_sets : int, default=60
    n_features : int, default=50
    set_dim : int, default=2
    variety_dim : int, default=3
    noise : float, default=0.0
        Norm (in expectation) of a Gaussian perturbation of the unit shared direction.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    sets : ndarray of shape (n_sets, n_features, set_dim)
        Orthonormal bases.
    W : ndarray of shape (n_features, variety_dim)
        Orthonormal basis of the planted subspace.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_planted_variety
    >>> sets, W = make_planted_variety(10, 8, random_state=0)
    >>> sets.shape, W.shape
    ((10, 8, 2), (8, 3))
    >>> bool(np.all(np.linalg.svd(sets.transpose(0, 2, 1) @ W, compute_uv=False)[:, 0] > 1 - 1e-12))
    True
    """
    for name, value, low in (("n_sets", n_sets, 1), ("n_features", n_features, 2),
                             ("set_dim", set_dim, 1), ("variety_dim", variety_dim, 1)):
        if not isinstance(value, Integral) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    if set_dim > n_features or variety_dim > n_features:
        raise ValueError(f"set_dim ({set_dim}) and variety_dim ({variety_dim}) must not exceed "
                         f"n_features ({n_features}).")
    if not isinstance(noise, Real) or not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0; got {noise!r}.")
    rng = check_random_state(random_state)
    W = np.linalg.qr(rng.standard_normal((n_features, variety_dim)))[0]
    sets = np.empty((n_sets, n_features, set_dim))
    for i in range(n_sets):
        w = W @ rng.standard_normal(variety_dim)
        w = w / np.linalg.norm(w) + noise * rng.standard_normal(n_features) / np.sqrt(n_features)
        cols = np.column_stack([w, rng.standard_normal((n_features, set_dim - 1))])
        sets[i] = np.linalg.qr(cols)[0]
    return sets, W
