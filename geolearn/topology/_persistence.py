"""Vietoris-Rips persistence diagrams: H0 from the minimum spanning tree, H>=1 by giotto-ph."""

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform
from sklearn.metrics import pairwise_distances
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from .._utils import check_squares_finite, resolve_n_jobs
from ._rips import MAX_SIMPLICES, ComplexTooLarge, mst_edges, rips_persistence
from ._validation import check_persistence_params

INSTALL_HINT = 'pip install "geolearn[tda]"'
#: Distinct distances float32 holds exactly as ranks (integers up to 2^24).
_MAX_RANKS = 2**24
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
    # BLAS rounding may leave D asymmetric by an ulp: the MST reads rows and re-measures
    # its edges, giotto-ph and the lookup of its critical edges read the upper triangle
    D = pairwise_distances(X, metric=metric, n_jobs=n_jobs)
    np.fill_diagonal(D, 0.0)
    return D, False


def _h0(X, D, thresh, edges, symmetric, remeasure):
    """H0 from the lengths of a minimum spanning tree.

    Every minimum spanning tree of a symmetric ``D`` has the same lengths, so they come
    from the fastest route that reads ``D`` as it is: below a threshold, the minimum
    spanning forest of the edges there (Kruskal on their ranks, each tree a class alive at
    ``thresh``); without one, SciPy's single linkage (its merge heights are the tree's
    lengths). Where ``D`` is asymmetric (BLAS rounding, a precomputed matrix within 1e-8)
    Prim's tree reads its rows, and re-measures its edges pair by pair if asked.
    """
    n = len(D)
    if symmetric and edges is not None:
        row, col, edge, values, ranks = edges
        # on the ranks + 1: csgraph reads a zero weight (two equal points) as no edge
        forest = minimum_spanning_tree(coo_matrix((ranks + 1.0, (row[edge], col[edge])),
                                                  shape=(n, n)))
        w = values[forest.data.astype(np.intp) - 1]
        return _h0_diagram(w[w > 0], n - len(w))
    if symmetric:
        w = linkage(squareform(D, checks=False), "single")[:, 2]
    else:
        w, e = mst_edges(D)
        if remeasure:
            w = np.sqrt(((X[e[:, 0]] - X[e[:, 1]]) ** 2).sum(axis=1))
    return _h0_diagram(w[(w > 0) & (w <= thresh)], 1 + int((w > thresh).sum()))


def _h0_diagram(finite, n_inf):
    return np.column_stack([np.zeros(len(finite) + n_inf),
                            np.r_[np.sort(finite), np.full(n_inf, np.inf)]])


def _edges_within(D, thresh):
    """The upper triangle of ``D`` up to a finite ``thresh``, row by row, as giotto-ph reads it.

    Returns ``(row, col, edge, values, ranks)``: the entries (the diagonal, where the
    vertices enter, included), which of them are edges, and the distinct edge lengths
    with the rank of each edge's length among them. Only these entries are sorted: with a
    small threshold, a few percent of the n^2 / 2 distances.
    """
    mask = D <= thresh
    np.fill_diagonal(mask, True)
    row, col = np.divmod(np.flatnonzero(mask), len(D))      # np.nonzero's 2-D path is slower
    upper = row <= col
    row, col = row[upper], col[upper]
    edge = row != col
    values, ranks = np.unique(D[row[edge], col[edge]], return_inverse=True)
    return row, col, edge, values, ranks


def _edge_length(A, a, b):
    """Entries ``A[a, b]`` read from the upper triangle (the one giotto-ph reads)."""
    return A[np.minimum(a, b), np.maximum(a, b)]


def _exact_values(dgm, finite_edges, essential_edges, D, D_given):
    """One giotto-ph diagram rebuilt from the float64 lengths of its critical edges.

    A Rips birth or death is the length of one edge (the diameter of the simplex that
    creates or kills the class), and giotto-ph names those edges: rows ``(b0, b1, d0, d1)``
    for the finite pairs and ``(b0, b1)`` for the essential ones. The pairs are built from
    the edges and checked, as a multiset, against the values giotto-ph saw (``D_given``).
    """
    def pairs(A, dtype):
        finite = np.column_stack([_edge_length(A, finite_edges[:, 0], finite_edges[:, 1]),
                                  _edge_length(A, finite_edges[:, 2], finite_edges[:, 3])])
        essential = np.column_stack([_edge_length(A, essential_edges[:, 0], essential_edges[:, 1]),
                                     np.full(len(essential_edges), np.inf)])
        return np.concatenate([finite, essential]).astype(dtype)

    def rows(M):
        return M[np.lexsort((M[:, 1], M[:, 0]))]

    seen = pairs(D_given, np.float32)
    given = np.asarray(dgm, dtype=np.float32).reshape(-1, 2)
    if seen.shape != given.shape or not np.array_equal(rows(seen), rows(given)):
        raise RuntimeError("giotto-ph returned generators that do not match its diagram.")
    return pairs(D, np.float64)


def _from_ranks(dgms, values):
    """giotto-ph's diagrams of dimensions >= 1 on the ranks, read back as the distances."""
    out = []
    for dgm in dgms[1:]:
        dgm = np.asarray(dgm, dtype=np.float64).reshape(-1, 2)
        dgm = dgm[dgm[:, 1] > dgm[:, 0]]
        finite = np.isfinite(dgm)
        dgm[finite] = values[dgm[finite].astype(np.int64)]
        out.append(dgm)
    return out


def _giotto_diagrams(ripser_parallel, D, maxdim, thresh, coeff, n_jobs, edges=None):
    # giotto-ph filters in float32, where distinct distances can tie and so pair other
    # edges than the float64 filtration does. Rips persistence depends only on the order
    # of the distances: on their ranks (exact in float32 up to 2^24 distinct values) its
    # values are exact ranks, read back as the distances they stand for.
    if edges is not None and len(edges[3]) <= _MAX_RANKS:
        # below a threshold giotto-ph reads the entries up to it as a sparse matrix: pass
        # those it would take from the dense ranks, in its order (same input, same result)
        row, col, edge, values, ranks = edges
        if not len(values):
            return [np.empty((0, 2)) for _ in range(maxdim)]
        data = np.zeros(len(row), dtype=np.float32)
        data[edge] = ranks
        res = ripser_parallel(coo_matrix((data, (row, col)), shape=D.shape), maxdim=maxdim,
                              thresh=len(values) - 1.0, coeff=coeff, metric="precomputed",
                              n_threads=resolve_n_jobs(n_jobs))
        return _from_ranks(res["dgms"], values)
    # the upper triangle row by row, the one giotto-ph reads (SciPy's squareform, in C)
    values, ranks = np.unique(squareform(D, checks=False), return_inverse=True)
    if len(values) <= _MAX_RANKS:
        R = squareform(ranks.astype(np.float32))
        thresh = np.searchsorted(values, thresh, "right") - 1.0 if np.isfinite(thresh) else thresh
        res = ripser_parallel(R, maxdim=maxdim, thresh=thresh, coeff=coeff, metric="precomputed",
                              n_threads=resolve_n_jobs(n_jobs))
        return _from_ranks(res["dgms"], values)
    # beyond, float32 ties among distinct distances follow giotto-ph's order; the values
    # come from the critical edges it reports, which match its diagram on one thread only
    D32 = D.astype(np.float32)
    res = ripser_parallel(D32, maxdim=maxdim, thresh=thresh, coeff=coeff, metric="precomputed",
                          n_threads=1, return_generators=True)
    _, finite_edges, _, essential_edges = res["gens"]
    out = []
    for dgm, fin, ess in zip(res["dgms"][1:], finite_edges, essential_edges):
        dgm = _exact_values(dgm, np.asarray(fin).reshape(-1, 4), np.asarray(ess).reshape(-1, 2),
                            D, D32)
        out.append(dgm[dgm[:, 1] > dgm[:, 0]])
    return out


def _sorted(dgm):
    return dgm[np.lexsort((dgm[:, 1], dgm[:, 0]))]


def _prepare(X, metric, maxdim, thresh, coeff, n_subsample, subsample, backend, random_state,
             n_jobs):
    """Validate the parameters and the points (or distance matrix); subsample the points."""
    maxdim, thresh, coeff = check_persistence_params(maxdim, thresh, coeff, n_subsample,
                                                     subsample, backend)
    if not (callable(metric) or isinstance(metric, str)):
        raise ValueError(f"metric must be a string or a callable; got {metric!r}.")
    if metric == "precomputed":
        X = check_distance_matrix(X)
    else:
        X = check_squares_finite(check_array(X, dtype=np.float64, input_name="X"))
    if len(X) < 2:
        raise ValueError(f"X has {len(X)} point(s); persistence needs at least 2.")
    X = _subsample(X, metric, n_subsample, subsample, random_state, n_jobs)
    return X, maxdim, thresh, coeff


def persistence_diagrams(X, maxdim=1, thresh=np.inf, coeff=2, metric="euclidean", n_subsample=None,
                         subsample="uniform", n_jobs=None, backend="auto", random_state=None):
    """Vietoris-Rips persistence diagrams of a point cloud or a distance matrix.

    A simplex enters at its diameter. H0 is exact (``(0, w)`` per minimum-spanning-tree
    edge of length ``w > 0``, and ``(0, inf)``); higher dimensions come from giotto-ph (run on the
    ranks of the distances, so its values read back as the exact float64 distances; past
    2^24 distinct distances, about 5,800 points, on one thread from the critical edges it
    reports) or an exact reduction.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features), or (n_points, n_points)
        At least 2 finite points, or a distance matrix with ``metric="precomputed"``
        (square, symmetric, zero diagonal, non-negative).
    maxdim : int >= 0, default=1
        Largest homology dimension computed.
    thresh : float >= 0, default=np.inf
        Largest filtration value (classes alive there die at ``np.inf``); pass it or
        ``n_subsample`` for ``maxdim >= 2``: the complex grows like ``n^(maxdim + 2)``.
    coeff : int, default=2
        Prime p of the coefficient field Z/p.
    metric : str or callable, default="euclidean"
        Any metric of :func:`sklearn.metrics.pairwise_distances`, or ``"precomputed"``.
    n_subsample : int or None, default=None
        Use at most this many points: uniformly without replacement, or greedy
        farthest-point (max-min) landmarks with ``subsample="maxmin"``.
    subsample : {"uniform", "maxmin"}, default="uniform"
    n_jobs : int or None, default=None
        Threads of giotto-ph (None: 1, -1: all cores) and jobs of the distance matrix.
    backend : {"auto", "giotto-ph", "exact"}, default="auto"
        ``"exact"``: the built-in reduction, which refuses complexes of more than 200,000
        ``(maxdim + 1)``-simplices (about n = 110 for maxdim 1, n = 50 for maxdim 2).
        ``"auto"``: giotto-ph when installed (``pip install "geolearn[tda]"``), else exact.
    random_state : int, RandomState instance or None, default=None
        Used by the subsampling.

    Returns
    -------
    diagrams : list of maxdim + 1 float64 ndarrays of shape (m_k, 2)
        ``diagrams[k]``: the (birth, death) pairs of dimension k by birth, none of length 0.

    Raises
    ------
    ValueError
        X or a parameter outside the ranges above; a too large complex with "exact".
    ImportError
        No giotto-ph with "giotto-ph", or with "auto" on a too large complex.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology import persistence_diagrams
    >>> t = 2 * np.pi * np.arange(12) / 12
    >>> h0, h1 = persistence_diagrams(np.c_[np.cos(t), np.sin(t)], maxdim=1)
    >>> len(h0), h0[-1].tolist(), np.round(h1, 4).tolist()  # h1: chord 2 sin(pi/12), sqrt(3)
    (12, [0.0, inf], [[0.5176, 1.7321]])
    """
    X, maxdim, thresh, coeff = _prepare(X, metric, maxdim, thresh, coeff, n_subsample,
                                        subsample, backend, random_state, n_jobs)
    return _rips_diagrams(X, metric, maxdim, thresh, coeff, n_jobs, backend)


def _rips_diagrams(X, metric, maxdim, thresh, coeff, n_jobs, backend):
    """The sorted diagrams of dimensions 0..maxdim of validated, subsampled points."""
    D, exact = _distances(X, metric, n_jobs)
    # with a threshold, only the distances up to it are sorted, once for H0 and giotto-ph
    edges = _edges_within(D, thresh) if np.isfinite(thresh) else None
    remeasure = metric == "euclidean" and not exact
    # SciPy's pdist is symmetric; the tree of BLAS distances is re-measured edge by edge
    symmetric = not remeasure and (metric == "euclidean" or np.array_equal(D, D.T))
    diagrams = [_h0(X, D, thresh, edges, symmetric, remeasure)]
    if maxdim >= 1:
        diagrams += _higher(D, maxdim, thresh, coeff, n_jobs, backend, edges)
    return [_sorted(d) for d in diagrams]


def _higher(D, maxdim, thresh, coeff, n_jobs, backend, edges):
    ripser_parallel = _giotto() if backend != "exact" else None
    if ripser_parallel is not None:
        return _giotto_diagrams(ripser_parallel, D, maxdim, thresh, coeff, n_jobs, edges)
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
