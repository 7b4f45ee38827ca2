"""Vietoris-Rips persistence diagrams: H0 from the minimum spanning tree, H>=1 by giotto-ph."""

import numpy as np
from joblib import effective_n_jobs
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from ._rips import MAX_SIMPLICES, ComplexTooLarge, mst_edges, rips_persistence
from ._validation import check_persistence_params

INSTALL_HINT = 'pip install "geolearn[tda]"'
# Euclidean distances pair by pair (exact) up to n^2 d of this; BLAS (GEMM) beyond
_EXACT_WORK = 4e7


def _giotto():
    try:
        from gph import ripser_parallel
    except ImportError:
        return None
    return ripser_parallel


def check_distance_matrix(D, name="X"):
    """Validate a precomputed distance matrix (square, symmetric, zero diagonal, >= 0)."""
    D = check_array(D, dtype=np.float64, input_name=name)
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square distance matrix with metric='precomputed'; "
                         f"got shape {D.shape}.")
    if not np.allclose(D, D.T, rtol=0, atol=1e-8):
        raise ValueError(f"{name} must be a symmetric distance matrix with "
                         "metric='precomputed' (|D - D.T| <= 1e-8).")
    if np.abs(np.diag(D)).max() > 1e-8:
        raise ValueError(f"{name} must have a zero diagonal with metric='precomputed'.")
    if (D < 0).any():
        raise ValueError(f"{name} must hold non-negative distances with metric='precomputed'.")
    return D


def _maxmin_landmarks(X, m, metric, rng, n_jobs):
    """Greedy farthest-point landmarks, O(n m) distance evaluations."""
    n = len(X)
    idx = np.empty(m, dtype=np.intp)
    idx[0] = rng.randint(n)
    row = (lambda j: X[j]) if metric == "precomputed" else (
        lambda j: pairwise_distances(X[j:j + 1], X, metric=metric, n_jobs=n_jobs)[0])
    nearest = np.array(row(idx[0]), dtype=np.float64)
    for k in range(1, m):
        idx[k] = int(np.argmax(nearest))
        np.minimum(nearest, row(idx[k]), out=nearest)
    return np.sort(idx)


def _subsample(X, metric, n_subsample, subsample, random_state, n_jobs):
    n = len(X)
    if n_subsample is None or n_subsample >= n:
        return X
    rng = check_random_state(random_state)
    if subsample == "uniform":
        idx = np.sort(rng.choice(n, n_subsample, replace=False))
    else:
        idx = _maxmin_landmarks(X, n_subsample, metric, rng, n_jobs)
    return X[np.ix_(idx, idx)] if metric == "precomputed" else X[idx]


def _distances(X, metric, n_jobs):
    """Dense distances; ``(D, exact)`` where exact means computed pair by pair (SciPy)."""
    if metric == "precomputed":
        return X, True
    if metric == "euclidean" and X.shape[0] ** 2 * X.shape[1] <= _EXACT_WORK:
        return squareform(pdist(X)), True
    D = pairwise_distances(X, metric=metric, n_jobs=n_jobs)
    D = np.maximum(D, D.T)        # exact symmetry; GEMM rounding may differ by an ulp
    np.fill_diagonal(D, 0.0)
    return D, False


def _h0(X, D, thresh, remeasure):
    """H0 from the minimum spanning tree; its edges re-measured pair by pair if asked."""
    w, e = mst_edges(D)
    if remeasure:
        w = np.sqrt(((X[e[:, 0]] - X[e[:, 1]]) ** 2).sum(axis=1))
    finite = w[(w > 0) & (w <= thresh)]
    n_inf = 1 + int((w > thresh).sum())
    return np.column_stack([np.zeros(len(finite) + n_inf),
                            np.r_[np.sort(finite), np.full(n_inf, np.inf)]])


def _snap(values, sorted_d):
    """Replace float32 filtration values by the float64 distance they round from."""
    flat = values.ravel()
    out = flat.copy()
    finite = np.isfinite(flat)
    v = flat[finite]
    d32 = sorted_d.astype(np.float32)
    lo = np.searchsorted(d32, v.astype(np.float32), "left")
    hi = np.searchsorted(d32, v.astype(np.float32), "right")
    j = np.clip(np.searchsorted(sorted_d, v), lo, np.maximum(hi - 1, lo))
    j = np.minimum(j, len(sorted_d) - 1)
    left = np.maximum(j - 1, lo)
    left = np.minimum(left, len(sorted_d) - 1)
    pick = np.where(np.abs(sorted_d[left] - v) < np.abs(sorted_d[j] - v), left, j)
    out[finite] = np.where(hi > lo, sorted_d[pick], v)
    return out.reshape(values.shape)


def _giotto_diagrams(ripser_parallel, D, maxdim, thresh, coeff, n_jobs):
    res = ripser_parallel(D, maxdim=maxdim, thresh=thresh, coeff=coeff, metric="precomputed",
                          n_threads=effective_n_jobs(n_jobs))
    sorted_d = np.sort(squareform(D, checks=False))
    out = []
    for dgm in res["dgms"][1:]:
        dgm = _snap(np.asarray(dgm, dtype=np.float64).reshape(-1, 2), sorted_d)
        out.append(dgm[dgm[:, 1] > dgm[:, 0]])
    return out


def _sorted(dgm):
    return dgm[np.lexsort((dgm[:, 1], dgm[:, 0]))]


def persistence_diagrams(X, maxdim=1, thresh=np.inf, coeff=2, metric="euclidean",
                         n_subsample=None, subsample="uniform", n_jobs=None, backend="auto",
                         random_state=None):
    """Vietoris-Rips persistence diagrams of a point cloud or a distance matrix.

    The filtration value of a simplex is its diameter (longest edge). H0 is computed
    exactly from the minimum spanning tree (``n - 1`` finite points ``(0, w_e)`` for the
    tree's edge weights, zero-length bars of duplicate points dropped, and one
    ``(0, inf)``); dimensions ``1..maxdim`` by giotto-ph's ``ripser_parallel`` when it is
    installed, or by the built-in exact reduction on small inputs. giotto-ph works in
    float32; its values are mapped back to the float64 pairwise distance they round from,
    so births and deaths are exact distances.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        Points, or a distance matrix with ``metric="precomputed"`` (square, symmetric,
        zero diagonal).
    maxdim : int, default=1
        Largest homology dimension computed.
    thresh : float, default=np.inf
        Largest filtration value; classes still alive there get death ``np.inf``.
        Pass it (or ``n_subsample``) for ``maxdim >= 2``: the Rips complex grows like
        ``n^(maxdim + 2)``.
    coeff : int, default=2
        Prime p of the coefficient field Z/p.
    metric : str or callable, default="euclidean"
        Any metric of :func:`sklearn.metrics.pairwise_distances`, or ``"precomputed"``.
    n_subsample : int or None, default=None
        Use at most this many points.
    subsample : {"uniform", "maxmin"}, default="uniform"
        Uniform without replacement, or greedy farthest-point (max-min) landmarks.
    n_jobs : int or None, default=None
        Threads of giotto-ph (None: 1, -1: all cores) and jobs of the distance matrix.
    backend : {"auto", "giotto-ph", "exact"}, default="auto"
        ``"auto"``: giotto-ph when installed, else the exact reduction, which refuses
        (ImportError naming ``pip install "geolearn[tda]"``) complexes with more than
        200,000 ``(maxdim + 1)``-simplices (about n = 110 for maxdim 1, n = 50 for
        maxdim 2). ``"exact"``: the built-in reduction (ValueError past that size).
    random_state : int, RandomState instance or None, default=None
        Used by the subsampling.

    Returns
    -------
    diagrams : list of maxdim + 1 ndarrays of shape (m_k, 2), float64
        ``diagrams[k]`` holds the (birth, death) pairs of dimension k, sorted by birth,
        zero-length pairs left out.

    Raises
    ------
    ValueError
        NaN/inf in X, fewer than 2 points, maxdim < 0, a coeff that is not prime, a
        negative thresh, or an invalid precomputed matrix.
    ImportError
        ``backend="giotto-ph"`` without giotto-ph, or ``"auto"`` without it on an input
        too large for the exact reduction.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology import persistence_diagrams
    >>> t = 2 * np.pi * np.arange(12) / 12
    >>> X = np.c_[np.cos(t), np.sin(t)]
    >>> h0, h1 = persistence_diagrams(X, maxdim=1)
    >>> len(h0), h0[-1].tolist()
    (12, [0.0, inf])
    >>> np.round(h1, 4).tolist()  # one loop: born at the chord 2 sin(pi/12), dies at sqrt(3)
    [[0.5176, 1.7321]]
    """
    maxdim, thresh, coeff = check_persistence_params(maxdim, thresh, coeff, n_subsample,
                                                     subsample, backend)
    if not (callable(metric) or isinstance(metric, str)):
        raise ValueError(f"metric must be a string or a callable; got {metric!r}.")
    if metric == "precomputed":
        X = check_distance_matrix(X)
    else:
        X = check_array(X, dtype=np.float64, input_name="X")
    if len(X) < 2:
        raise ValueError(f"X has {len(X)} point(s); persistence needs at least 2.")
    X = _subsample(X, metric, n_subsample, subsample, random_state, n_jobs)
    D, exact = _distances(X, metric, n_jobs)
    diagrams = [_h0(X, D, thresh, remeasure=metric == "euclidean" and not exact)]
    if maxdim >= 1:
        diagrams += _higher(D, maxdim, thresh, coeff, n_jobs, backend)
    return [_sorted(d) for d in diagrams]


def _higher(D, maxdim, thresh, coeff, n_jobs, backend):
    ripser_parallel = _giotto() if backend != "exact" else None
    if ripser_parallel is not None:
        return _giotto_diagrams(ripser_parallel, D, maxdim, thresh, coeff, n_jobs)
    if backend == "giotto-ph":
        raise ImportError(f"backend='giotto-ph' needs giotto-ph: {INSTALL_HINT}.")
    try:
        return rips_persistence(D, maxdim, thresh, coeff)
    except ComplexTooLarge:
        msg = (f"the Rips complex of {len(D)} points has more than {MAX_SIMPLICES:,} "
               f"{maxdim + 1}-simplices, too many for the exact backend (maxdim={maxdim}, "
               f"thresh={thresh:g}); pass thresh or n_subsample")
        if backend == "exact":
            raise ValueError(f"{msg}, or use backend='giotto-ph' ({INSTALL_HINT}).") from None
        raise ImportError(f"{msg}, or install giotto-ph: {INSTALL_HINT}.") from None
