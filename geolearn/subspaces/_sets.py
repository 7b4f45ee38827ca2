"""Set arrays: validation of the accepted input forms and orthonormalisation.

Every function of the family sees a collection of ``r`` sets as a zero-padded
float64 array ``sets`` of shape ``(r, n, L)`` plus the true number of vectors
``dims`` of each set (``L = max(dims)``). Zero columns change neither the span
nor the top singular triplets used by the methods, so padding is exact.
"""

import numbers

import numpy as np
from sklearn.utils.validation import check_array, validate_data

FLOAT_DTYPES = (np.float64, np.float32)

# Orthonormality: within BASIS_TOL * max(1, l) a set is used as is; up to NEAR_TOL
# (float32 rounding, accumulated error) it is silently re-orthonormalised in float64.
BASIS_TOL = 1e-6
NEAR_TOL = 1e-4

_FORMS = ("a 3-D array (r, n, l) of sets, a list of 2-D arrays (n, l_i), a 2-D table (r, n) "
          "whose rows are one-vector sets, or image sets (r, l, C, H, W)")


def _is_list_of_sets(X):
    return (isinstance(X, (list, tuple)) and len(X) > 0
            and all(np.ndim(x) == 2 for x in X))


def _check_set_shape(set_shape):
    ok = (isinstance(set_shape, (tuple, list)) and len(set_shape) == 2
          and all(isinstance(s, numbers.Integral) and s >= 1 for s in set_shape))
    if not ok:
        raise ValueError(
            f"set_shape must be None or (n_features, n_vectors) with positive integers; "
            f"got {set_shape!r}."
        )
    return int(set_shape[0]), int(set_shape[1])


def _pad(arrays):
    n = arrays[0].shape[0]
    for i, x in enumerate(arrays):
        if x.shape[0] != n:
            raise ValueError(
                f"all sets must have the same number of features n; set {i} has "
                f"{x.shape[0]}, expected {n}."
            )
    dims = np.array([x.shape[1] for x in arrays], dtype=np.int64)
    sets = np.zeros((len(arrays), n, int(dims.max())))
    for i, x in enumerate(arrays):
        sets[i, :, : x.shape[1]] = x
    return sets, dims


def check_sets(X, *, set_shape=None, estimator=None, reset=True, name="X"):
    """Validate set arrays and return them zero-padded.

    Parameters
    ----------
    X : array-like or list of array-like
        ``(r, n, l)``, a list of ``(n, l_i)`` arrays, ``(r, n)`` rows (one
        vector per set), ``(r, n * l)`` with ``set_shape=(n, l)``, or image
        sets ``(r, l, C, H, W)``.
    set_shape : (int, int) or None
        How to fold flat rows into ``(n, l)`` sets.
    estimator : estimator or None
        When given, ``n_features_in_`` (the ambient dimension ``n``) is set
        (``reset=True``) or checked (``reset=False``).
    reset : bool, default=True
    name : str, default="X"

    Returns
    -------
    sets : ndarray of shape (r, n, L), float64
    dims : ndarray of shape (r,), int
        Number of vectors of each set.
    """
    table = False
    if _is_list_of_sets(X):
        sets, dims = _pad([check_array(x, dtype=FLOAT_DTYPES, ensure_min_samples=1,
                                       ensure_min_features=0, input_name=name) for x in X])
    else:
        sets, table = _array_sets(X, set_shape, estimator, reset, name)
        dims = np.full(len(sets), sets.shape[2], dtype=np.int64)
    _check_dims(sets, dims, name)
    if estimator is not None and not table:
        _check_n_features(estimator, sets.shape[1], reset, name)
    return sets, dims


def _array_sets(X, set_shape, estimator, reset, name):
    """The sets of an array form as float64 ``(r, n, l)``, and whether ``X`` was a table."""
    ndim = getattr(X, "ndim", None)
    if ndim is None:
        X = np.asarray(X) if not isinstance(X, (list, tuple)) or len(X) else np.empty((0, 0))
        ndim = X.ndim
    table = ndim == 2 and set_shape is None and estimator is not None
    if table:
        sets = validate_data(estimator, X, reset=reset, dtype=FLOAT_DTYPES)[:, :, None]
    elif ndim == 2:
        sets = _fold_rows(check_array(X, dtype=FLOAT_DTYPES, input_name=name), set_shape, name)
    elif ndim in (3, 5):
        X = check_array(X, dtype=FLOAT_DTYPES, allow_nd=True, input_name=name)
        sets = X if ndim == 3 else X.reshape(X.shape[0], X.shape[1], -1).transpose(0, 2, 1)
    else:
        hint = (" Reshape your data: X.reshape(1, -1) holds one set of one vector."
                if ndim == 1 else "")
        raise ValueError(f"{name} must be {_FORMS}; got an array with ndim={ndim}.{hint}")
    return np.asarray(sets, dtype=np.float64), table


def _fold_rows(X, set_shape, name):
    """Rows ``(r, n * l)`` folded into sets ``(r, n, l)`` (one-vector sets without ``set_shape``)."""
    if set_shape is None:
        return X[:, :, None]
    n, l = _check_set_shape(set_shape)
    if n * l != X.shape[1]:
        raise ValueError(
            f"set_shape={set_shape!r} holds {n * l} values but {name} has "
            f"{X.shape[1]} columns per row."
        )
    return X.reshape(len(X), n, l)


def _check_dims(sets, dims, name):
    """Every set holds at least one and at most ``n`` vectors."""
    n = sets.shape[1]
    bad = np.flatnonzero(dims > n)
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"set {i} has more vectors ({dims[i]}) than features ({n}): sets are "
            "(n_features, n_vectors); transpose your input?"
        )
    empty = np.flatnonzero(dims == 0)
    if empty.size:
        raise ValueError(f"set {empty[0]} of {name} holds no vectors (l_i == 0).")


def _check_n_features(estimator, n, reset, name):
    """Set (``reset``) or check the estimator's ``n_features_in_`` (the ambient ``n``)."""
    if reset:
        estimator.n_features_in_ = n
    elif n != estimator.n_features_in_:
        raise ValueError(
            f"{name} has {n} features, but {type(estimator).__name__} is expecting "
            f"{estimator.n_features_in_} features as input."
        )


def orthonormality_deviation(sets, dims):
    """Per set ``max |X_i^T X_i - I_{l_i}|`` (padding excluded)."""
    gram = np.einsum("rnl,rnm->rlm", sets, sets)
    L = sets.shape[2]
    eye = (np.arange(L)[None, :] < dims[:, None]).astype(float)
    gram[:, np.arange(L), np.arange(L)] -= eye
    return np.abs(gram).max(axis=(1, 2))


def data_bases(sets, dims, n_dims=None, *, center=False, rank_tol=None, name="X"):
    """Orthonormal bases of the column spans of raw sets (top left singular vectors).

    Parameters
    ----------
    sets, dims : padded sets and their sizes (see :func:`check_sets`)
    n_dims : int or None
        Basis size per set; None keeps each set's numerical rank.
    center : bool
        Subtract each set's column mean first.
    rank_tol : float or None
        Singular values above it count towards the rank; default
        ``max(n, l_i) * eps * sigma_1`` per set.

    Returns
    -------
    bases : ndarray of shape (r, n, L')
    dims : ndarray of shape (r,)
    """
    sets = sets.copy()
    if center:
        means = sets.sum(axis=2, keepdims=True) / dims[:, None, None]
        sets -= means * (np.arange(sets.shape[2]) < dims[:, None])[:, None, :]
    U, s, _ = np.linalg.svd(sets, full_matrices=False)
    n = sets.shape[1]
    tol = (np.maximum(n, dims) * np.finfo(np.float64).eps * s[:, 0]
           if rank_tol is None else np.full(len(s), float(rank_tol)))
    ranks = (s > tol[:, None]).sum(axis=1)
    if n_dims is None:
        zero = np.flatnonzero(ranks == 0)
        if zero.size:
            raise ValueError(f"set {zero[0]} of {name} is zero (numerical rank 0): it spans "
                             "no subspace.")
        out_dims = ranks
    else:
        short = np.flatnonzero(ranks < n_dims)
        if short.size:
            i = short[0]
            raise ValueError(
                f"set {i} of {name} has numerical rank {ranks[i]} (with {dims[i]} vectors), "
                f"fewer than the {n_dims} basis vectors asked for (n_dims / subspace_dim)."
            )
        out_dims = np.full(len(sets), int(n_dims), dtype=np.int64)
    L = int(out_dims.max())
    bases = U[:, :, :L] * (np.arange(L) < out_dims[:, None])[:, None, :]
    return bases, out_dims


def reorthonormalise(sets, dims):
    """Re-orthonormalise near-orthonormal sets in float64 (QR; span unchanged)."""
    Q = np.linalg.qr(sets)[0]
    return Q * (np.arange(sets.shape[2]) < dims[:, None])[:, None, :]


def as_bases(sets, dims, input_type="auto", subspace_dim=None, name="X"):
    """Return orthonormal bases of the sets according to ``input_type``.

    ``"basis"`` requires orthonormal sets (up to ``NEAR_TOL``, which is
    repaired silently); ``"data"`` always orthonormalises; ``"auto"`` uses
    the sets as bases when every one is orthonormal, else orthonormalises all
    of them and says so (``was_data=True``).

    Returns
    -------
    bases, dims, was_data : ndarray, ndarray, bool
    """
    if input_type != "data":
        dev = orthonormality_deviation(sets, dims)
        if np.all(dev <= NEAR_TOL):
            if np.all(dev <= BASIS_TOL * np.maximum(1, dims)):
                return sets, dims, False
            return reorthonormalise(sets, dims), dims, False
        if input_type == "basis":
            i = int(np.argmax(dev > NEAR_TOL))
            raise ValueError(
                f"input_type='basis' but set {i} of {name} is not orthonormal: "
                f"max |X_i^T X_i - I| = {dev[i]:.3g} (tolerance {NEAR_TOL:g}). Pass "
                "input_type='data' to orthonormalise raw sets."
            )
    bases, dims = data_bases(sets, dims, subspace_dim, name=name)
    return bases, dims, True


def unpad(bases, dims):
    """A 3-D array when all sets have the same size, else a list of 2-D arrays."""
    if np.all(dims == bases.shape[2]):
        return bases
    return [b[:, :d] for b, d in zip(bases, dims)]
