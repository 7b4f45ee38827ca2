"""The Cartesian grid of a GridVAE prior: validation, codes, flat indices (numpy, float64)."""

import math

import numpy as np

from .._utils import check_numeric_array

#: Largest number of grid cells for which dense per-cell outputs are built.
MAX_DENSE_COMPONENTS = 4096


def check_grid(grid_values, n_latent, name="grid_values"):
    """Validate ``grid_values`` and return one sorted float64 array per latent dimension.

    A 1-D sequence is shared by all ``n_latent`` dimensions; otherwise it must be a
    list of ``n_latent`` 1-D sequences. Values are sorted; duplicates are an error
    (they would silently change the mixture weights).
    """
    try:
        shared = np.asarray(grid_values, dtype=np.float64)
    except (TypeError, ValueError):
        shared = None
    if shared is not None and shared.ndim == 1:
        per_dim = [shared] * n_latent
    elif isinstance(grid_values, (str, bytes)) or not hasattr(grid_values, "__len__"):
        raise ValueError(f"{name} must be a 1-D sequence of numbers or a list of n_latent "
                         f"sequences; got {grid_values!r}.")
    else:
        if len(grid_values) != n_latent:
            raise ValueError(f"{name} holds {len(grid_values)} sequences but n_latent={n_latent}; "
                             "give one sequence per latent dimension or a single shared one.")
        try:
            per_dim = [np.asarray(g, dtype=np.float64) for g in grid_values]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must contain numbers; got {grid_values!r}.") from exc
    grid = []
    for m, g in enumerate(per_dim):
        if g.ndim != 1 or g.size == 0:
            raise ValueError(f"{name} for latent dimension {m} must be a non-empty 1-D sequence; "
                             f"got shape {g.shape}.")
        if not np.all(np.isfinite(g)):
            raise ValueError(f"{name} for latent dimension {m} must be finite; got {g.tolist()}.")
        g = np.sort(g)
        if np.any(np.diff(g) == 0):
            raise ValueError(f"{name} for latent dimension {m} has duplicate values {g.tolist()}; "
                             "each grid value must be distinct.")
        grid.append(g)
    return tuple(grid)


def grid_sizes(grid):
    """Number of grid values per dimension, ``(L_1, ..., L_d)``."""
    return tuple(len(g) for g in grid)


def n_grid_components(grid):
    """Exact number of mixture components ``K = prod L_m`` as a Python int."""
    return math.prod(grid_sizes(grid))


def padded_grid(grid, fill):
    """The grid as a ``(d, L_max)`` float64 array, short rows padded with ``fill``."""
    L = max(grid_sizes(grid))
    out = np.full((len(grid), L), fill, dtype=np.float64)
    for m, g in enumerate(grid):
        out[m, :len(g)] = g
    return out


def grid_codes(Z, grid):
    """Code of the nearest grid value per dimension, ``argmin_l |z_m - g_{m,l}|``.

    Ties (points exactly half-way) go to the lower code; points outside the grid
    map to the end codes.

    Parameters
    ----------
    Z : ndarray of shape (n, d)
    grid : tuple of d sorted 1-D arrays

    Returns
    -------
    codes : ndarray of shape (n, d), int64

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import grid_codes
    >>> grid = (np.arange(-2.0, 4.0),)
    >>> grid_codes(np.array([[-1.5], [-1.4999], [9.0]]), grid).ravel().tolist()
    [0, 1, 5]
    """
    Z = check_numeric_array(Z, "Z", dtype=np.float64, ensure_min_samples=0)
    centres = padded_grid(grid, np.inf)
    # argmin returns the first minimum, which resolves ties to the lower code
    return np.abs(Z[:, :, None] - centres[None]).argmin(axis=2).astype(np.int64)


def flat_index(codes, grid):
    """C-order flat cell index of per-dimension codes (last dimension fastest)."""
    sizes = grid_sizes(grid)
    if n_grid_components(grid) >= 2**63:
        raise ValueError(f"the grid has {n_grid_components(grid)} cells, more than an int64 "
                         "index can hold; use predict_codes for per-dimension codes.")
    return np.ravel_multi_index(tuple(np.asarray(codes).T), sizes).astype(np.int64)


def check_codes(codes, grid, name="codes", allow_nan=False):
    """Validate integer grid codes of shape (n, d) (NaN allowed when ``allow_nan``)."""
    arr = np.asarray(codes)
    d = len(grid)
    if arr.ndim == 1 and d == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != d:
        raise ValueError(f"{name} must have shape (n_samples, {d}); got {arr.shape}.")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise ValueError(f"{name} must hold integer codes; got dtype {arr.dtype}.")
    arr = arr.astype(np.float64)
    nan = np.isnan(arr)
    if nan.any() and not allow_nan:
        raise ValueError(f"{name} contains NaN; pass missing_guidance='round' to let missing "
                         "codes fall back to the nearest grid value.")
    finite = arr[~nan]
    if np.any(np.isinf(finite)) or np.any(finite != np.round(finite)):
        raise ValueError(f"{name} must hold integer codes; got non-integer values.")
    sizes = np.array(grid_sizes(grid), dtype=np.float64)
    bad = ~nan & ((arr < 0) | (arr >= sizes))
    if bad.any():
        m = int(np.nonzero(bad)[1][0])
        raise ValueError(f"{name} for latent dimension {m} must lie in [0, {int(sizes[m])}); "
                         f"got {arr[bad][0]:g}.")
    return arr

