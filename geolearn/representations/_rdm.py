"""Representational dissimilarity matrices (RDMs): computation, validation, conversions.

An RDM summarises a representation by the pairwise dissimilarities of its responses to a
fixed stimulus set (paper eqs. 1-3 of "Exploring fMRI RDMs: enhancing model robustness
through neurobiological data"). Every metric is computed from one Gram product of the
(centred, normalised) rows, accumulated in float64 over feature chunks.
"""

import numbers

import numpy as np
from sklearn.utils.validation import check_array

from .._utils import check_choice, check_scalar_param

METRICS = ("correlation", "cosine", "euclidean", "sqeuclidean_per_feature",
           "zscore_correlation")
_ZSCORE_EPS = 1e-7  # Net2Brain's epsilon of its "pearson" distance
_NEG_TOL = 1e-12    # dissimilarities below -this are invalid, above are rounding
_BLOCK = 512        # side of the blocks that (m, m) matrices are updated by, in place
_SYM_BLOCK = 64     # side of the blocks symmetrised: a block and its transpose stay in L1/L2


def check_features(X, name="X", *, min_samples=3, dtype=np.float64, ensure_all_finite=True):
    """Validate a stimulus-by-feature matrix: 2-D, real, finite, at least ``min_samples`` rows.

    ``ensure_all_finite=False`` leaves the finiteness to the caller (one pass fewer).
    """
    X = X if hasattr(X, "dtype") else np.asarray(X)
    if getattr(X, "ndim", None) != 2:
        raise ValueError(
            f"{name} must be a 2-D array (n_stimuli, n_features); got ndim="
            f"{getattr(X, 'ndim', None)}. Reshape one stimulus to X.reshape(1, -1).")
    if np.iscomplexobj(X):
        raise ValueError(f"{name} must be real-valued; got complex dtype {X.dtype}.")
    if X.dtype.kind not in "biuf":
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric; got dtype {X.dtype}.") from exc
    return check_array(X, dtype=dtype, ensure_min_samples=min_samples, input_name=name,
                       ensure_all_finite=ensure_all_finite)


def _row_check(norms, scale, n, metric):
    """Raise for rows whose (centred) norm vanishes: their dissimilarities are undefined."""
    bad = np.flatnonzero(norms <= 1e-12 * np.sqrt(n) * np.maximum(1.0, scale))
    if bad.size:
        what = "zero" if metric == "cosine" else "constant"
        raise ValueError(
            f"X has {bad.size} {what} row(s) (indices {bad[:10].tolist()}"
            f"{' ...' if bad.size > 10 else ''}): the {metric} dissimilarity is undefined "
            "for them. Remove these stimuli or use metric='euclidean'.")


def _chunks(n, chunk_size):
    step = n if chunk_size is None else chunk_size
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def _transformed_chunk(X, cols, metric, row_means, work):
    """The chunk ``X[:, cols]`` as the rows entering the Gram product of ``metric``."""
    V = X[:, cols]
    if metric in ("euclidean", "sqeuclidean_per_feature"):
        # translation-invariant; centring avoids cancellation in |a|^2+|b|^2-2ab. The centred
        # float64 copy in one pass (the caller's X is never modified)
        V = np.subtract(V, V.mean(0, dtype=np.float64), dtype=np.float64)
    else:
        V = np.array(V, dtype=np.float64)  # a copy: the caller's X is never modified
    if metric == "zscore_correlation":
        V = (V - V.mean(0)) / (V.std(0) + _ZSCORE_EPS)
    if row_means is not None:
        V -= row_means[:, None]
    return V.astype(work, copy=False)


def _row_means(X, metric, chunks):
    """The row means the correlation metrics centre by (None for the others)."""
    if metric not in ("correlation", "zscore_correlation"):
        return None
    # a first pass for the row means: centring before the product keeps every digit
    return sum(_transformed_chunk(X, c, metric, None, np.float64).sum(1)
               for c in chunks) / X.shape[1]


def _gram(X, metric, chunk_size, work):
    """Gram matrix of the metric's rows, with float64 accumulation over feature chunks."""
    m, n = X.shape
    chunks = _chunks(n, chunk_size)
    row_means = _row_means(X, metric, chunks)
    if len(chunks) == 1:
        V = _transformed_chunk(X, chunks[0], metric, row_means, work)
        return V @ V.T, np.einsum("ij,ij->i", V, V, dtype=np.float64)
    G = np.zeros((m, m))
    sq = np.zeros(m)
    for c in chunks:
        V = _transformed_chunk(X, c, metric, row_means, work)
        G += V @ V.T
        sq += np.einsum("ij,ij->i", V, V, dtype=np.float64)
    return G, sq


def squared_distances(G, sq_a, sq_b, A, B):
    """``||a_i - b_j||^2`` from the Gram matrix ``G = A B^T`` of well-centred rows, in place.

    Where the distance is tiny next to the norms, ``|a|^2 + |b|^2 - 2ab`` has cancelled
    its digits (square roots of rounding, about 1e-8 relative): those entries are
    recomputed from the rows ``A[i] - B[j]`` in float64.
    """
    D = G
    # by blocks of rows: temporaries of _BLOCK**2 entries, not of D's size
    for rows in _chunks(len(D), max(1, _BLOCK**2 // max(D.shape[1], 1))):
        block = D[rows]
        block *= -2.0
        block += sq_a[rows, None]
        block += sq_b[None, :]
        close = block <= 1e-6 * (sq_a[rows, None] + sq_b[None, :])
        i, j = np.nonzero(close)
        i += rows.start
        for start in range(0, i.size, 4096):
            ii, jj = i[start:start + 4096], j[start:start + 4096]
            diff = np.asarray(A[ii], dtype=np.float64) - np.asarray(B[jj], dtype=np.float64)
            D[ii, jj] = np.einsum("ij,ij->i", diff, diff)
    return np.maximum(D, 0.0, out=D)


def _distance_rdm(G, sq, X, metric, scale, work):
    """The distance RDM from the Gram matrix ``G`` of the centred rows of ``X``, in place.

    One pass over ``G`` by blocks of rows (2 MiB, one reused buffer). Block ``rows`` turns its
    entries ``G[i, j >= i]`` into half the squared distance, ``(|a_i|^2 + |a_j|^2) / 2 - G_ij``
    (the halves are exact, and the result is symmetric bit for bit, as ``G`` is), recomputes
    the entries that cancelled (the test of :func:`squared_distances`), takes the square root
    or divides by ``n / 2``, scales, and mirrors the entries right of its diagonal block into
    ``G[j, i]``, which later blocks never read. Entries are ``>= 0`` with no clip, and no
    ``(R + R^T) / 2`` pass is needed.
    """
    m, n = X.shape
    half = 0.5 * sq
    half_max = np.maximum.accumulate(half[::-1])[::-1]  # max(half[j:]), for the bound
    step = max(8, _BLOCK**2 // m)  # fewer, larger blocks measured faster than L2-sized ones
    buffer = np.empty(step * m)  # the block's norms, float64 whatever G's dtype
    for rows in _chunks(m, step):
        D = G[rows, rows.start:]  # a view: the block's entries (i, j >= i)
        norms = buffer[:D.size].reshape(D.shape)
        np.add.outer(half[rows], half[rows.start:], out=norms)
        np.subtract(norms, D, out=D)
        _recompute_cancelled(D, norms, X, rows, half[rows] + half_max[rows.start])
        if metric == "euclidean":
            D *= 2.0
            np.sqrt(D, out=D)
        else:
            D /= n / 2
        if scale != 1.0:
            with np.errstate(over="ignore"):  # refused just below
                D *= scale
                if metric != "euclidean":
                    D *= scale
            if not np.isfinite(D).all():
                raise ValueError(f"X holds values up to {scale:.3g} in absolute value: its "
                                 f"{metric} distances overflow {work.name}; rescale X.")
        G[rows.stop:, rows] = D[:, rows.stop - rows.start:].T
    return G


def _recompute_cancelled(D, norms, X, rows, bound):
    """Recompute in float64 the half squared distances ``D`` that cancelled; zero the diagonal.

    ``D[r, c]`` is ``norms[r, c] - a_i a_j``, with ``norms[r, c] = (|a_i|^2 + |a_j|^2) / 2``,
    for ``i = rows.start + r`` and ``j = rows.start + c``. Where it is at most ``1e-6`` of
    the norms, it lost its digits (or is negative) and is recomputed from ``X[i] - X[j]``,
    and so is its mirror inside the diagonal block: every entry is then ``>= 0``. One minimum
    per row against ``bound``, the largest norms of the row (rounding is monotonic), rules
    out most blocks.
    """
    np.fill_diagonal(D, np.inf)  # (i, i) is no pair
    if (D.min(axis=1) <= 1e-6 * bound).any():
        i, j = np.nonzero(D <= 1e-6 * norms)
        for start in range(0, i.size, 4096):
            ii, jj = i[start:start + 4096], j[start:start + 4096]
            diff = (np.asarray(X[ii + rows.start], dtype=np.float64)
                    - np.asarray(X[jj + rows.start], dtype=np.float64))
            D[ii, jj] = 0.5 * np.einsum("ij,ij->i", diff, diff)
    np.fill_diagonal(D, 0.0)


def _symmetrize(R):
    """``R = (R + R.T) / 2`` in place, by blocks (no copy of ``R.T``)."""
    for a in _chunks(len(R), _SYM_BLOCK):
        for b in _chunks(len(R), _SYM_BLOCK):
            if b.start < a.start:
                continue
            mean = R[a, b] + R[b, a].T
            mean *= 0.5
            R[a, b] = mean
            R[b, a] = mean.T
    return R


def _upper_triangle(R):
    """The strict upper triangle of a square ``R``, row by row, without index arrays."""
    m = len(R)
    out = np.empty(m * (m - 1) // 2, dtype=R.dtype)
    start = 0
    for i in range(m - 1):
        out[start:start + m - 1 - i] = R[i, i + 1:]
        start += m - 1 - i
    return out


def compute_rdm(X, metric="correlation", *, condensed=False, chunk_size=None,
                dtype=np.float64):
    """Representational dissimilarity matrix of the rows of ``X``.

    ``R[i, j]`` is the dissimilarity of the responses to stimuli ``i`` and ``j``
    (paper eq. 3). ``"correlation"`` (the paper's psi, eq. 2) centres each row by its own
    mean: ``1 - pearson(v_i, v_j)``.

    Parameters
    ----------
    X : array-like of shape (m, n)
        Responses, one row per stimulus (at least 3), finite real numbers.
    metric : {"correlation", "cosine", "euclidean", "sqeuclidean_per_feature", \
"zscore_correlation"}, default="correlation"
        ``"sqeuclidean_per_feature"`` is ``||v_i - v_j||^2 / n`` (rsatoolbox's
        "euclidean"); ``"zscore_correlation"`` z-scores every feature across stimuli
        (population std + 1e-7, Net2Brain's "pearson") before the correlation distance.
    condensed : bool, default=False
        Return the strict upper triangle ``(m(m-1)/2,)`` in scipy ``squareform`` order.
    chunk_size : int, optional
        Process the features in chunks of this many columns (memory ``O(m chunk_size)``
        for the float64 copy instead of ``O(m n)``); accumulators are float64.
    dtype : {np.float64, np.float32}, default=np.float64
        Precision of the Gram product and of the result.

    Returns
    -------
    rdm : ndarray of shape (m, m), or (m(m-1)/2,) if ``condensed``
        Symmetric, zero diagonal, entries clipped to the metric's range.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2, 3], [2, 4, 6.5], [3, 1, 0]])
    >>> compute_rdm(X).round(3)
    array([[0.   , 0.002, 1.982],
           [0.002, 0.   , 1.968],
           [1.982, 1.968, 0.   ]])
    """
    check_choice(metric, "metric", METRICS)
    work = np.dtype(dtype)
    if work not in (np.float64, np.float32):
        raise ValueError(f"dtype must be np.float64 or np.float32; got {dtype!r}.")
    check_scalar_param(chunk_size, "chunk_size", kind="integer", low=1, allow_none=True)
    # chunked: keep X in its own float dtype; each chunk is cast to float64 on its own
    X = check_features(X, dtype=np.float64 if chunk_size is None else [np.float64, np.float32],
                       ensure_all_finite=False)
    n = X.shape[1]
    # one pass finds max |X| and any NaN or infinity, which the full check then names
    x_max, x_min = X.max(), X.min()
    if not (np.isfinite(x_max) and np.isfinite(x_min)):
        check_features(X)
    # values whose squares overflow the Gram product are scaled down first; the distances
    # are scaled back (the correlation and cosine distances do not depend on the scale)
    scale = float(max(x_max, -x_min))
    if scale > np.sqrt(np.finfo(work).max / (4 * n)):
        X = X / scale
    else:
        scale = 1.0
    if condensed:
        return _condensed_rdm(X, metric, chunk_size, work, scale)
    G, sq = _gram(X, metric, chunk_size, work)
    if metric in ("euclidean", "sqeuclidean_per_feature"):
        return _distance_rdm(G, sq, X, metric, scale, work).astype(work, copy=False)
    norms = np.sqrt(sq)
    _row_check(norms, _row_scale(X, chunk_size), n, metric)
    inv = (1.0 / norms).astype(work)
    R = G
    R *= inv[:, None]
    R *= inv[None, :]
    np.subtract(1.0, R, out=R)
    _symmetrize(R)
    np.clip(R, 0.0, 2.0, out=R)
    np.fill_diagonal(R, 0.0)
    return R.astype(work, copy=False)


def _condensed_rdm(X, metric, chunk_size, work, scale):
    """:func:`compute_rdm`'s strict upper triangle, computed by blocks of rows.

    Each block of rows is compared with the rows from its first one on, so the peak
    memory is the output and one block of about ``_BLOCK**2 / 4`` entries, never the
    ``(m, m)`` matrix. Feature chunks are accumulated into the output itself. The
    entries agree with the square RDM's to rounding.
    """
    m, n = X.shape
    chunks = _chunks(n, chunk_size)
    row_means = _row_means(X, metric, chunks)
    blocks = _chunks(m - 1, max(1, _BLOCK**2 // (4 * m)))
    starts = np.r_[0, np.cumsum(np.arange(m - 1, 0, -1))]  # of each row's segment
    if len(chunks) == 1:
        V = _transformed_chunk(X, chunks[0], metric, row_means, work)
        sq = np.einsum("ij,ij->i", V, V, dtype=np.float64)
        out = np.empty(m * (m - 1) // 2, dtype=work)
    else:  # the Gram triangle, accumulated in float64 in the output, one chunk at a time
        out, sq = np.zeros(m * (m - 1) // 2), np.zeros(m)
        for c in chunks:
            V = _transformed_chunk(X, c, metric, row_means, work)
            sq += np.einsum("ij,ij->i", V, V, dtype=np.float64)
            for rows in blocks:
                B = V[rows] @ V[rows.start:].T
                for r, i in enumerate(range(rows.start, rows.stop)):
                    out[starts[i]:starts[i + 1]] += B[r, r + 1:]
        V = None
    distance = metric in ("euclidean", "sqeuclidean_per_feature")
    if not distance:
        norms = np.sqrt(sq)
        _row_check(norms, _row_scale(X, chunk_size), n, metric)
        inv = (1.0 / norms).astype(work)
    for rows in blocks:
        cols = slice(rows.start, m)
        if V is not None:
            B = V[rows] @ V[cols].T
        else:  # the block's Gram entries from the triangle (the rest is never read)
            B = np.zeros((rows.stop - rows.start, m - rows.start))
            for r, i in enumerate(range(rows.start, rows.stop)):
                B[r, r + 1:] = out[starts[i]:starts[i + 1]]
        if distance:
            B = squared_distances(B, sq[rows], sq[cols], X[rows], X[cols])
            with np.errstate(over="ignore", invalid="ignore"):  # refused just below
                if metric == "euclidean":
                    np.sqrt(B, out=B)
                    B *= scale
                else:
                    B /= n
                    B *= scale
                    B *= scale
            if scale != 1.0 and not np.isfinite(B).all():
                raise ValueError(f"X holds values up to {scale:.3g} in absolute value: its "
                                 f"{metric} distances overflow {work.name}; rescale X.")
        else:
            B *= inv[rows, None]
            B *= inv[None, cols]
            np.subtract(1.0, B, out=B)
        np.clip(B, 0.0, np.inf if distance else 2.0, out=B)
        for r, i in enumerate(range(rows.start, rows.stop)):
            out[starts[i]:starts[i + 1]] = B[r, r + 1:]
    return out.astype(work, copy=False)


def _row_scale(X, chunk_size):
    """Largest absolute entry of each row (the scale of the constant-row test)."""
    return np.max([np.abs(X[:, c]).max(1) for c in _chunks(X.shape[1], chunk_size)], axis=0)


def _triangular_m(p, name):
    m = round((1 + np.sqrt(1 + 8 * p)) / 2)
    if m * (m - 1) // 2 != p:
        raise ValueError(
            f"{name} is a condensed RDM of length {p}, which is not triangular (m(m-1)/2 for "
            "an integer m). Pass the strict upper triangle of an (m, m) RDM, row by row.")
    return m


def check_rdm(R, name="R", *, allow_nan=False, min_stimuli=3):
    """Validate an RDM (square or condensed) and return it as a float64 square matrix.

    Checks: square (or a condensed vector of triangular length), symmetric within
    ``1e-8`` relative to the largest entry, zero diagonal, entries ``>= -1e-12`` (rounding
    negatives are clipped to 0), finite unless ``allow_nan`` (NaN marks an undefined pair
    and must then be symmetric, never on the diagonal). The result is exactly symmetric.

    Parameters
    ----------
    R : array-like of shape (m, m) or (m(m-1)/2,)
    name : str, default="R"
        Named in error messages.
    allow_nan : bool, default=False
    min_stimuli : int, default=3

    Returns
    -------
    rdm : ndarray of shape (m, m), float64

    Examples
    --------
    >>> check_rdm([0.5, 1.0, 0.2])
    array([[0. , 0.5, 1. ],
           [0.5, 0. , 0.2],
           [1. , 0.2, 0. ]])
    """
    A = _real_array(R, name)
    if A.ndim == 1:
        r, m = check_condensed(A, name, allow_nan=allow_nan, min_stimuli=min_stimuli)
        sq = np.zeros((m, m))
        iu = np.triu_indices(m, 1)
        sq[iu] = r
        sq.T[iu] = r
        return sq
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(
            f"{name} must be a square (m, m) RDM or its condensed (m(m-1)/2,) vector; got "
            f"shape {A.shape}.")
    _check_size(A.shape[0], name, min_stimuli)
    nan = _check_entries(A, name, allow_nan)
    if nan is not None and (np.diagonal(nan).any() or not np.array_equal(nan, nan.T)):
        raise ValueError(f"{name} has NaN on its diagonal or NaN entries that are not "
                         "symmetric; NaN may only mark undefined pairs (i, j) and (j, i).")
    tol = 1e-8 * (np.nanmax(np.abs(A)) if nan is None or not nan.all() else 0.0)
    if np.nanmax(np.abs(A - A.T)) > tol:
        raise ValueError(f"{name} is not symmetric (relative tolerance 1e-8): pass (R + R.T) / 2 "
                         "if the asymmetry is rounding.")
    if np.abs(np.diagonal(A)).max() > tol:
        raise ValueError(f"{name} has a nonzero diagonal; an RDM's diagonal (each stimulus to "
                         "itself) must be 0.")
    A = (A + A.T) / 2
    np.fill_diagonal(A, 0.0)
    return np.maximum(A, 0.0, out=A, where=~np.isnan(A))


def _real_array(R, name):
    """``R`` as a float64 array (a copy); complex or non-numeric input is a ValueError."""
    A = R if hasattr(R, "dtype") else np.asarray(R)
    if not np.iscomplexobj(A) and A.dtype.kind not in "biuf":
        try:
            A = np.asarray(A, dtype=np.float64)
        except (TypeError, ValueError):
            A = np.asarray(A, dtype=complex)  # flagged just below
    if np.iscomplexobj(A) or A.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a real-valued numeric RDM; got dtype "
                         f"{np.asarray(R).dtype}.")
    return np.array(A, dtype=np.float64)


def _check_size(m, name, min_stimuli):
    if m < min_stimuli:
        raise ValueError(f"{name} covers {m} stimuli; at least {min_stimuli} are required.")


def _check_entries(A, name, allow_nan):
    """Refuse infinite, NaN (unless allowed) and negative entries; the NaN mask or None."""
    low, high = (A.min(), A.max()) if A.size else (0.0, 0.0)
    if np.isfinite(low) and np.isfinite(high):  # the common case: two passes, no masks
        if low < -_NEG_TOL:
            raise ValueError(f"{name} has negative dissimilarities (min {low:.3g}); "
                             "dissimilarities must be >= 0.")
        return None
    nan = np.isnan(A)
    has_nan = nan.any()
    if np.isinf(A).any() or (has_nan and not allow_nan):
        raise ValueError(
            f"{name} contains {'infinite' if np.isinf(A).any() else 'NaN'} entries; an RDM must "
            "be finite" + ("" if allow_nan else " (mask undefined pairs before this call)") + ".")
    if not nan.all() and np.nanmin(A) < -_NEG_TOL:
        raise ValueError(f"{name} has negative dissimilarities (min {np.nanmin(A):.3g}); "
                         "dissimilarities must be >= 0.")
    return nan if has_nan else None


def check_condensed(r, name="r", *, allow_nan=False, min_stimuli=3):
    """Validate a condensed RDM vector without forming the square matrix.

    Returns
    -------
    r : ndarray of shape (m(m-1)/2,), float64
        Rounding negatives (``>= -1e-12``) clipped to 0.
    m : int
        Number of stimuli.
    """
    r = _real_array(r, name)
    if r.ndim != 1:
        raise ValueError(f"{name} must be a condensed (m(m-1)/2,) RDM vector; got shape "
                         f"{r.shape}.")
    m = _triangular_m(r.size, name)
    _check_size(m, name, min_stimuli)
    nan = _check_entries(r, name, allow_nan)
    return np.maximum(r, 0.0, out=r, where=True if nan is None else ~nan), m


def condensed_and_size(R, name, *, allow_nan=True):
    """The condensed vector of a square or condensed RDM and its number of stimuli."""
    A = R if hasattr(R, "ndim") else np.asarray(R)
    if A.ndim == 1:
        return check_condensed(A, name, allow_nan=allow_nan)
    A = check_rdm(A, name, allow_nan=allow_nan)
    return _upper_triangle(A), A.shape[0]


def squareform_rdm(r, *, allow_nan=False):
    """Square ``(m, m)`` RDM of a condensed vector (scipy ``squareform`` order).

    Parameters
    ----------
    r : array-like of shape (m(m-1)/2,)
    allow_nan : bool, default=False
        Keep NaN entries (pairs marked undefined) instead of refusing them.

    Returns
    -------
    rdm : ndarray of shape (m, m), float64

    Examples
    --------
    >>> squareform_rdm([1.0, 2.0, 3.0])
    array([[0., 1., 2.],
           [1., 0., 3.],
           [2., 3., 0.]])
    """
    if np.ndim(r) != 1:
        raise ValueError(f"r must be a condensed (m(m-1)/2,) RDM vector; got shape "
                         f"{np.shape(r)}. Use check_rdm for square RDMs.")
    return check_rdm(r, "r", allow_nan=check_scalar_param(allow_nan, "allow_nan", kind="boolean"))


def condense_rdm(R, check=True):
    """Strict upper triangle of an RDM, row by row (scipy ``squareform`` order).

    Parameters
    ----------
    R : array-like of shape (m, m) or (m(m-1)/2,)
    check : bool, default=True
        Validate with :func:`check_rdm` (NaN allowed for undefined pairs); ``False`` only
        reads the triangle of a trusted square array.

    Returns
    -------
    r : ndarray of shape (m(m-1)/2,), float64

    Examples
    --------
    >>> import numpy as np
    >>> condense_rdm(np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]]))
    array([1., 2., 3.])
    """
    if check:
        return condensed_and_size(R, "R")[0]
    R = np.asarray(R, dtype=np.float64)
    return R if R.ndim == 1 else _upper_triangle(R)


def _rdm_stack(rdms, name, allow_nan):
    """Validate a (k, m, m) array or a sequence of square/condensed RDMs of one size."""
    if isinstance(rdms, np.ndarray) and rdms.ndim in (2, 3):
        items = list(rdms) if rdms.ndim == 3 else [rdms]
    elif isinstance(rdms, (np.ndarray, str, bytes, numbers.Number)):
        raise ValueError(f"{name} must be a (k, m, m) array or a sequence of RDMs; got "
                         f"{type(rdms).__name__} {getattr(rdms, 'shape', '')}.")
    else:
        items = list(rdms)
    if not items:
        raise ValueError(f"{name} must hold at least one RDM; got none.")
    out = [check_rdm(R, f"{name}[{i}]", allow_nan=allow_nan) for i, R in enumerate(items)]
    sizes = sorted({R.shape[0] for R in out})
    if len(sizes) > 1:
        raise ValueError(f"{name} holds RDMs of different numbers of stimuli {sizes}; all must "
                         "describe the same stimuli in the same order.")
    return np.stack(out)


def mean_rdm(rdms, nan_policy="omit"):
    """Mean of several RDMs on the same stimuli (the paper's mean subject).

    Parameters
    ----------
    rdms : array-like of shape (k, m, m) or sequence of square/condensed RDMs
    nan_policy : {"omit", "propagate", "raise"}, default="omit"
        ``"omit"``: each pair is averaged over the RDMs that define it (NaN entries mark
        undefined pairs, e.g. an incomplete participant); pairs defined by none stay NaN
        and are masked by :func:`compare_rdms`.

    Returns
    -------
    rdm : ndarray of shape (m, m), float64

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([0.2, 0.4, np.nan])
    >>> b = np.array([0.4, 0.6, 0.8])
    >>> condense_rdm(mean_rdm([a, b]))
    array([0.3, 0.5, 0.8])
    """
    check_choice(nan_policy, "nan_policy", ("omit", "propagate", "raise"))
    stack = _rdm_stack(rdms, "rdms", allow_nan=nan_policy != "raise")
    if nan_policy == "propagate":
        return stack.mean(0)
    defined = ~np.isnan(stack)
    count = defined.sum(0)
    total = np.where(defined, stack, 0.0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _check_labels(labels):
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size < 3:
        raise ValueError(f"labels must be a 1-D array of at least 3 category labels (one per "
                         f"stimulus); got shape {labels.shape}.")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError("labels contains NaN or infinite values.")
    return np.unique(labels, return_inverse=True)


def category_rdms(labels):
    """One model RDM per category: 0 inside the category, 1 everywhere else.

    ``C^g[i, j] = 0`` if ``labels[i] == labels[j] == g``, else 1 (diagonal 0). Weighted
    sums of these are the paper's weighted categorical model (Sec. 3.6).

    Parameters
    ----------
    labels : array-like of shape (m,)

    Returns
    -------
    rdms : ndarray of shape (k, m, m), float64
    categories : ndarray of shape (k,)
        The sorted distinct labels, in the order of ``rdms``.

    Examples
    --------
    >>> rdms, cats = category_rdms(["a", "b", "a"])
    >>> cats.tolist(), condense_rdm(rdms[0]).tolist()
    (['a', 'b'], [1.0, 0.0, 1.0])
    """
    categories, codes = _check_labels(labels)
    member = codes[None, :] == np.arange(len(categories))[:, None]
    rdms = 1.0 - (member[:, :, None] & member[:, None, :])
    idx = np.arange(len(codes))
    rdms[:, idx, idx] = 0.0
    return rdms, categories


def categorical_rdm(labels):
    """Simple categorical model RDM: 0 for stimuli of the same category, 1 otherwise.

    Parameters
    ----------
    labels : array-like of shape (m,)

    Returns
    -------
    rdm : ndarray of shape (m, m), float64

    Examples
    --------
    >>> categorical_rdm([0, 0, 1])
    array([[0., 0., 1.],
           [0., 0., 1.],
           [1., 1., 0.]])
    """
    _, codes = _check_labels(labels)
    return (codes[:, None] != codes[None, :]).astype(np.float64)


def stack_condensed(rdms):
    """Design matrix of condensed RDMs, one column per RDM (for ``WeightedRDMModel``).

    Parameters
    ----------
    rdms : array-like of shape (k, m, m) or sequence of square/condensed RDMs

    Returns
    -------
    X : ndarray of shape (m(m-1)/2, k), float64

    Examples
    --------
    >>> rdms, _ = category_rdms([0, 0, 1, 1])
    >>> stack_condensed(rdms)
    array([[0., 1.],
           [1., 1.],
           [1., 1.],
           [1., 1.],
           [1., 1.],
           [1., 0.]])
    """
    stack = _rdm_stack(rdms, "rdms", allow_nan=True)
    rows, cols = np.triu_indices(stack.shape[1], 1)
    return stack[:, rows, cols].T
