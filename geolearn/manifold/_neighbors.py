"""Nearest-neighbour backends of the CIDM: exact (scipy, scikit-learn) and approximate (hnswlib).

Both give float64 distances ``||x - y||`` sorted ascending; the approximate index
only chooses the candidates and their distances are recomputed, so every
rank-based quantity (bandwidths, kernel supports) is computed the same way
whichever backend found the neighbours.
"""

import math

import numpy as np
from scipy.spatial import cKDTree
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state

from .._utils import resolve_n_jobs, thread_map

# query rows per parallel task: large enough to amortise the task, small enough to balance
_QUERY_BLOCK = 2048
_RECOMPUTE_BYTES = 64 * 2**20
# up to this dimension scipy's KD-tree answers exact k-NN queries fastest (about 1.5x
# scikit-learn's KD-tree at k ~ 100 in 4-D); above it, scikit-learn picks ball tree or brute
_KDTREE_MAX_DIM = 16
# below this many query rows, sorting them by tree leaf does not pay
_LOCALITY_MIN_ROWS = 4096
# seed lists hold this multiple of the query's k: on a 2-D manifold they answer about 95% of
# queries; longer lists answer more and cost more per row
_SEED_FACTOR = 1.5
# seeds are kept when they answer at least this share of held-out queries (estimated on this
# many fitted rows): shares 0.13 and 0.27 made queries 0.84x and 0.95x the tree's speed,
# 0.44 1.08x, 0.8 and above 1.6-2.3x (benchmarks/RESULTS.md)
_SEED_MIN_SHARE = 0.3
_SEED_SAMPLE = 1000


class ExactNeighbors:
    """Exact k-nearest neighbours, the query structure chosen by dimension.

    scipy's ``cKDTree`` up to ``_KDTREE_MAX_DIM`` dimensions (its queries run in
    ``n_jobs`` threads of its own), scikit-learn's ``NearestNeighbors`` (ball tree or
    brute force) above. Distances are float64 ``||x - y||``, ascending.

    On data near a low-dimensional manifold, :meth:`fit_kneighbors` also keeps each
    fitted point's own neighbour list, and a query whose nearest fitted point is
    ``t`` is answered from ``t``'s list when the triangle inequality proves the list
    holds its neighbours (otherwise by the tree): the same neighbours and distances,
    at about twice the speed of the tree on a 2-D manifold.
    """

    def fit(self, X):
        self.X_ = X
        self.seeds_ = self.seed_radius_ = self.seed_share_ = None
        if X.shape[1] <= _KDTREE_MAX_DIM:
            self.tree_, self.nn_ = cKDTree(X), None
        else:
            self.tree_, self.nn_ = None, NearestNeighbors().fit(X)
        return self

    def fit_kneighbors(self, X, n_neighbors, n_query, n_jobs=None):
        """Fit on ``X``; the ``n_neighbors`` nearest rows of each row of ``X``, itself included.

        Later queries of up to ``n_query`` neighbours are seeded from the fitted
        rows' own lists of ``ceil(1.5 n_query)`` neighbours, kept when they would
        answer at least 30% of held-out queries (``seed_share_``, estimated by
        leaving out each of up to 1,000 fitted rows).
        """
        self.fit(X)
        n_seed = math.ceil(_SEED_FACTOR * n_query)
        if self.tree_ is None or n_query < 2 or n_seed >= len(X):
            return self.kneighbors(X, n_neighbors, n_jobs)
        self.seed_share_ = self._held_out_share(n_query, n_seed, n_jobs)
        if self.seed_share_ < _SEED_MIN_SHARE:
            return self.kneighbors(X, n_neighbors, n_jobs)
        dist, idx = self.kneighbors(X, max(n_neighbors, n_seed), n_jobs)
        self.seeds_ = idx[:, :n_seed].astype(np.int32)
        self.seed_radius_ = dist[:, n_seed - 1]
        self.columns_ = np.ascontiguousarray(X.T)  # one coordinate at a time, contiguous
        self.rank_ = np.empty(len(X), dtype=np.intp)  # position of each row in the tree
        self.rank_[self.tree_.indices] = np.arange(len(X))
        return dist[:, :n_neighbors], idx[:, :n_neighbors]

    def _held_out_share(self, n_query, n_seed, n_jobs):
        """Share of held-out fitted rows whose ``n_query`` neighbours a seed list holds.

        Row i left out: its nearest other row t seeds it when i's ``n_query``-th
        distance without i plus d(i, t) stays inside t's list of ``n_seed``.
        """
        n_jobs = resolve_n_jobs(n_jobs)
        rows = np.unique(np.linspace(0, len(self.X_) - 1, _SEED_SAMPLE).astype(np.intp))
        dist, idx = self.tree_.query(self.X_[rows], k=n_query + 1, workers=n_jobs)
        radius = self.tree_.query(self.X_[idx[:, 1]], k=[n_seed], workers=n_jobs)[0][:, 0]
        return float(np.mean(dist[:, n_query] + dist[:, 1] < radius))

    def nearest(self, X, n_jobs=None):
        """Distance and index of each row's nearest fitted row, or None without seeds.

        Seeded queries start from it, and :meth:`locality_order` sorts by it.
        """
        if self.seeds_ is None:
            return None
        dist, idx = self.tree_.query(X, k=1, workers=resolve_n_jobs(n_jobs))
        return dist, idx.astype(np.intp, copy=False)

    def locality_order(self, nearest):
        """A permutation of the query rows that groups them by tree leaf (or None).

        Rows sorted by the tree position of their nearest fitted point (``nearest``
        from :meth:`nearest`): consecutive queries then read the same seed lists
        and the same leaves.
        """
        if nearest is None or len(nearest[1]) < _LOCALITY_MIN_ROWS:
            return None
        return np.argsort(self.rank_[nearest[1]], kind="stable")

    def kneighbors(self, X, n_neighbors, n_jobs=None, nearest=None):
        """Distances and indices of the ``n_neighbors`` nearest fitted rows, ascending.

        ``nearest``, from :meth:`nearest` on the same rows, lets seeded queries
        skip the tree.
        """
        n_jobs = resolve_n_jobs(n_jobs)
        if nearest is not None and self.seeds_ is not None and n_neighbors < self.seeds_.shape[1]:
            return _in_blocks(lambda b: self._seeded(X[b], n_neighbors, nearest[0][b],
                                                     nearest[1][b]), len(X), n_jobs)
        if self.tree_ is not None:
            dist, idx = self.tree_.query(X, k=[*range(1, n_neighbors + 1)], workers=n_jobs)
            return dist, idx.astype(np.intp, copy=False)
        if n_jobs == 1 or len(X) <= _QUERY_BLOCK:
            return self.nn_.kneighbors(X, n_neighbors=n_neighbors)
        return _in_blocks(lambda b: self.nn_.kneighbors(X[b], n_neighbors=n_neighbors),
                          len(X), n_jobs)

    def _seeded(self, X, k, d_nearest, nearest):
        """The k-NN of rows ``X`` from their nearest fitted rows' seed lists.

        Every fitted row within ``r`` of ``x`` lies within ``r + d(x, t)`` of ``x``'s
        nearest fitted row ``t``, so when ``t``'s list reaches beyond that, the k
        nearest in the list are the k nearest overall. Rows where it does not are
        answered by the tree.
        """
        cand = self.seeds_[nearest].astype(np.intp)  # once here, not in every take
        sq, diff = np.empty(cand.shape), np.empty(cand.shape)
        for j in range(X.shape[1]):  # one coordinate at a time: no (rows, seeds, n) copy
            out = sq if j == 0 else diff
            np.take(self.columns_[j], cand, out=out)
            out -= X[:, j, None]
            out *= out
            if j:
                sq += diff
        # seed lists are sorted from t, so rows are nearly sorted from x: a full sort is cheap
        order = np.argsort(sq, axis=1)[:, :k]
        idx = np.take_along_axis(cand, order, axis=1)
        dist = np.sqrt(np.take_along_axis(sq, order, axis=1))
        # the margin covers rounding in the three distances of the bound
        retry = (dist[:, k - 1] + d_nearest) * (1 + 1e-10) >= self.seed_radius_[nearest]
        if retry.any():
            dist[retry], idx[retry] = self.tree_.query(X[retry], k=[*range(1, k + 1)])
        return dist, idx


def _in_blocks(query, n_rows, n_jobs):
    """``query(rows)`` over blocks of rows in ``n_jobs`` threads (the queries release the
    GIL), one thread each; distances and indices concatenated in row order."""
    parts = thread_map(lambda s: query(slice(s, s + _QUERY_BLOCK)),
                       range(0, n_rows, _QUERY_BLOCK), n_jobs)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


class ApproximateNeighbors:
    """Approximate k-nearest neighbours from an HNSW graph (the ``hnswlib`` package).

    Worth it for large N in high dimension (images), where exact queries cost
    O(N n) per point. In a few dimensions scikit-learn's KD-tree is faster.
    The graph is searched with ``ef = max(2 k, 64)`` candidates, which gave a
    recall of 1.0 at k = 133 on 100k torus points and 0.996 on MNIST digits.

    Parameters
    ----------
    n_jobs : int or None
        Threads of the index build and of the queries.
    random_state : int, RandomState instance or None
        Seeds the graph construction.
    """

    def __init__(self, n_jobs=None, random_state=None):
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X):
        try:
            import hnswlib
        except ImportError as exc:
            raise ImportError(
                "nn_backend='ann' needs the optional package hnswlib: "
                "pip install 'geolearn[ann]' (or pip install hnswlib)."
            ) from exc
        self.X_ = X
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        self.index_ = hnswlib.Index(space="l2", dim=X.shape[1])
        self.index_.init_index(max_elements=len(X), ef_construction=200, M=16,
                               random_seed=int(seed))
        self.index_.add_items(X, num_threads=resolve_n_jobs(self.n_jobs))
        return self

    def fit_kneighbors(self, X, n_neighbors, n_query, n_jobs=None):
        """Fit on ``X``; the ``n_neighbors`` nearest rows of each row (``n_query`` unused)."""
        return self.fit(X).kneighbors(X, n_neighbors, n_jobs)

    def nearest(self, X, n_jobs=None):
        """None: HNSW queries take no seed."""
        return None

    def locality_order(self, nearest):
        """None: HNSW queries gain nothing from a row order."""
        return None

    def kneighbors(self, X, n_neighbors, n_jobs=None, nearest=None):
        """Distances (exact, float64) and indices of approximate nearest neighbours, ascending.

        ``n_jobs`` overrides the instance's thread count (1 inside callers' threads);
        ``nearest`` is unused.
        """
        n_jobs = resolve_n_jobs(self.n_jobs if n_jobs is None else n_jobs)
        n_neighbors = min(n_neighbors, len(self.X_))
        self.index_.set_ef(max(2 * n_neighbors, 64))
        idx, _ = self.index_.knn_query(X, k=n_neighbors, num_threads=n_jobs)
        idx = idx.astype(np.intp)
        dist = np.empty(idx.shape)
        # the index keeps float32 vectors: recompute in float64, in blocks of bounded memory
        step = max(1, _RECOMPUTE_BYTES // (8 * n_neighbors * X.shape[1]))
        for s in range(0, len(X), step):
            diff = X[s:s + step, None, :] - self.X_[idx[s:s + step]]
            dist[s:s + step] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        order = np.argsort(dist, axis=1, kind="stable")
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)


def make_neighbors(backend, n_jobs, random_state):
    """An unfitted neighbour index: :class:`ExactNeighbors` or the HNSW one."""
    if backend == "ann":
        return ApproximateNeighbors(n_jobs=n_jobs, random_state=random_state)
    return ExactNeighbors()

