"""Manifold-reconstruction metrics: persistence-diagram and kNN-graph spectral distances.

From "Recovering manifold representations via unsupervised meta-learning" (MRML): does
an autoencoder's reconstruction keep the shape (persistent homology) and the
neighbourhood structure (kNN graph spectrum) of the data? Persistence diagrams and
their Wasserstein distance come from :mod:`geolearn.topology` (one way); this module
only pairs the clouds, drops the essential H0 class and builds the kNN graphs.
"""

import functools
import numbers

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import eigsh
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import Bunch
from sklearn.utils.validation import check_array

from .._utils import check_choice, check_scalar_param, check_squares_finite
from ..topology import diagram_wasserstein, persistence_diagrams

__all__ = [
    "knn_spectral_distance",
    "make_manifold_scorer",
    "persistence_wasserstein",
    "relative_reduction",
]

#: Largest number of points of the dense eigen-decomposition (O(n^3) time, O(n^2) memory).
MAX_DENSE_EIGEN = 5000
_PERSISTENCE_DEFAULTS = {"homology_dimensions": (0, 1), "p": 2, "internal_p": np.inf,
                         "thresh": np.inf, "n_jobs": None}
_SPECTRAL_DEFAULTS = {"n_neighbors": 5, "symmetrize": True, "n_eigenvalues": None}


def _check_pair(X_ref, X_rec):
    """Both clouds as float64 rows ``(n, n_features)`` (images flattened), of one shape."""
    X_ref, X_rec = np.asarray(X_ref), np.asarray(X_rec)
    if X_ref.shape != X_rec.shape:
        raise ValueError("X_ref and X_rec must have the same shape (paired data and "
                         f"reconstructions); got {X_ref.shape} and {X_rec.shape}.")
    if X_ref.ndim < 2:
        raise ValueError("X_ref and X_rec must be rows (n, n_features) or images "
                         f"(n, C, H, W); got shape {X_ref.shape}.")
    n, d = X_ref.shape[0], int(np.prod(X_ref.shape[1:]))
    return tuple(check_squares_finite(check_array(X.reshape(n, d), dtype=np.float64,
                                                  input_name=name), name)
                 for X, name in ((X_ref, "X_ref"), (X_rec, "X_rec")))


def _check_order(value, name):
    if (not isinstance(value, numbers.Real) or isinstance(value, bool) or np.isnan(value)
            or value < 1):
        raise ValueError(f"{name} must be a number >= 1 (np.inf allowed); got {value!r}.")


def _check_persistence_params(homology_dimensions, p, internal_p, thresh):
    """Validate the parameters of :func:`persistence_wasserstein`; the dims as a tuple."""
    dims = homology_dimensions
    if isinstance(dims, numbers.Integral):
        dims = (dims,)
    try:
        dims = tuple(dims)
    except TypeError:
        dims = None
    if (not dims or len(set(dims)) != len(dims) or any(
            not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 0 for k in dims)):
        raise ValueError("homology_dimensions must be distinct integers >= 0, e.g. (0, 1); "
                         f"got {homology_dimensions!r}.")
    _check_order(p, "p")
    _check_order(internal_p, "internal_p")
    if (not isinstance(thresh, numbers.Real) or isinstance(thresh, bool) or np.isnan(thresh)
            or thresh < 0):
        raise ValueError(f"thresh must be a number >= 0 (np.inf for none); got {thresh!r}.")
    return tuple(int(k) for k in dims)


def _reduced_diagrams(X, dims, thresh, n_jobs):
    """``{k: diagram}`` of the Rips filtration of X, one essential H0 class removed.

    H_k needs ``k + 2`` points (fewer span at most a k-simplex, which has no k-cycle), so
    smaller clouds get an empty diagram there; one point has only the essential H0 class.
    """
    out = {k: np.empty((0, 2)) for k in dims}
    computable = [k for k in dims if len(X) >= k + 2]
    if computable:
        dgms = persistence_diagrams(X, maxdim=max(computable), thresh=thresh, n_jobs=n_jobs)
        out.update({k: dgms[k] for k in computable})
    if 0 in out and len(out[0]):
        # every cloud has exactly one component alive forever: matching it says nothing
        out[0] = np.delete(out[0], np.flatnonzero(np.isinf(out[0][:, 1]))[:1], axis=0)
    return out


def persistence_wasserstein(X_ref, X_rec, homology_dimensions=(0, 1), p=2, internal_p=np.inf,
                            thresh=np.inf, n_jobs=None):
    """Wasserstein distances between the Rips persistence diagrams of data and reconstructions.

    For each homology dimension k, ``W_p(D_k(X_ref), D_k(X_rec))`` (MRML Eq. 2 with the
    diagonal: a point ``(b, d)`` left unmatched costs its L_q distance to the diagonal,
    ``(d - b) / 2`` for ``internal_p = inf``). The diagrams are those of the
    Vietoris-Rips filtration of the flattened rows with Euclidean distances
    (:func:`geolearn.topology.persistence_diagrams`: H0 exact by the minimum spanning
    tree, H1 by giotto-ph) and the distance is the exact matching of
    :func:`geolearn.topology.diagram_wasserstein`. The one essential H0 class (death
    ``inf``) of each cloud is left out; with a finite ``thresh`` any further essential
    classes are matched by sorted birth, and different numbers of them give ``inf``.
    H_k of fewer than ``k + 2`` points is empty (so H1 of fewer than 3 points).

    Parameters
    ----------
    X_ref, X_rec : array-like of shape (n, n_features) or (n, C, H, W)
        Data and its reconstructions, the same shape; images are flattened. Computed in
        float64. Duplicate points are allowed.
    homology_dimensions : int or tuple of int, default=(0, 1)
        Dimensions compared (the paper's "Dim 1" is H0, "Dim 2" is H1).
    p : float, default=2
        Order of the Wasserstein distance, ``>= 1`` or ``np.inf`` (bottleneck).
    internal_p : float, default=np.inf
        Ground norm L_q on the diagram plane.
    thresh : float, default=np.inf
        Largest filtration value of the Rips complexes.
    n_jobs : int or None, default=None
        Threads of giotto-ph and jobs of the distance matrices.

    Returns
    -------
    distances : Bunch
        ``{"H0": float, "H1": float, ..., "total": float}``: one key per requested
        dimension, in the order given, and their plain sum (as in the paper's tables).

    Raises
    ------
    ValueError
        X_ref and X_rec of different shapes, NaN/inf, or a parameter out of range.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.meta_learning.metrics import persistence_wasserstein
    >>> # H0 bars (0, 2) and (0, 3): one unit apart; H1 of two points is empty
    >>> persistence_wasserstein([[0.0], [2.0]], [[0.0], [3.0]], p=1)
    {'H0': 1.0, 'H1': 0.0, 'total': 1.0}
    >>> t = 2 * np.pi * np.arange(30) / 30
    >>> circle = np.c_[np.cos(t), np.sin(t)]
    >>> d = persistence_wasserstein(circle, circle @ [[0, 1], [-1, 0]] + 5)  # an isometry
    >>> round(d["total"], 12)
    0.0
    """
    X_ref, X_rec = _check_pair(X_ref, X_rec)
    dims = _check_persistence_params(homology_dimensions, p, internal_p, thresh)
    ref = _reduced_diagrams(X_ref, dims, thresh, n_jobs)
    rec = _reduced_diagrams(X_rec, dims, thresh, n_jobs)
    out = {f"H{k}": diagram_wasserstein(ref[k], rec[k], p=p, internal_p=internal_p)
           for k in dims}
    out["total"] = float(sum(out.values()))
    return Bunch(**out)


def _check_spectral_params(n_neighbors, symmetrize, n_eigenvalues):
    check_scalar_param(n_neighbors, "n_neighbors", kind="integer", low=1)
    if not isinstance(symmetrize, (bool, np.bool_)):
        raise TypeError(f"symmetrize must be True or False; got {symmetrize!r}.")
    check_scalar_param(n_eigenvalues, "n_eigenvalues", kind="integer", low=1, allow_none=True)
    if n_eigenvalues is not None and not symmetrize:
        raise ValueError("n_eigenvalues compares the top eigenvalues by "
                         "scipy.sparse.linalg.eigsh, which needs a symmetric adjacency: "
                         "use symmetrize=True, or n_eigenvalues=None for the full directed "
                         "spectrum.")


def _knn_adjacency(X, n_neighbors):
    """Sparse A with ``A[i, j] = 1`` iff point i is among the n_neighbors nearest of point j."""
    n = len(X)
    # kneighbors() without X leaves each point out of its own list by index, so a
    # duplicate of a point may be its neighbour but the point itself never is
    idx = NearestNeighbors(n_neighbors=n_neighbors).fit(X).kneighbors(return_distance=False)
    cols = np.repeat(np.arange(n), n_neighbors)
    return sparse.csr_matrix((np.ones(idx.size), (idx.ravel(), cols)), shape=(n, n))


def _knn_spectrum(X, n_neighbors, symmetrize, n_eigenvalues=None):
    """Eigenvalues of the kNN adjacency: descending (real), or by (-real, -imag) (directed)."""
    A = _knn_adjacency(X, n_neighbors)
    if symmetrize:
        A = A.maximum(A.T)
    if n_eigenvalues is not None:
        # a fixed start vector: the same graph always gives the same eigenvalues
        v0 = np.random.RandomState(0).uniform(-1.0, 1.0, len(X))
        vals = eigsh(A, k=n_eigenvalues, which="LA", v0=v0, return_eigenvectors=False)
        return np.sort(vals)[::-1]
    A = A.toarray()
    if symmetrize:
        return np.linalg.eigvalsh(A)[::-1]
    vals = np.linalg.eigvals(A)
    return vals[np.lexsort((-vals.imag, -vals.real))]


def knn_spectral_distance(X_ref, X_rec, n_neighbors=5, symmetrize=True, n_eigenvalues=None):
    """Distance between the adjacency spectra of the kNN graphs of data and reconstructions.

    ``S = sqrt(sum_i |lambda_i(A_ref) - lambda_i(A_rec)|^2)`` (MRML Eq. 3, Wills and Meyer
    2020) with ``A[i, j] = 1`` iff point i is among the ``n_neighbors`` nearest neighbours
    of point j (Euclidean on the flattened rows, the point itself excluded, found by
    :class:`~sklearn.neighbors.NearestNeighbors`). ``symmetrize=True`` uses the
    undirected graph ``max(A, A^T)`` and its real eigenvalues (``eigvalsh``) sorted
    descending; ``symmetrize=False`` the directed ``A``, its complex eigenvalues
    (``numpy.linalg.eigvals``) sorted by (-real, -imag) and the modulus of the
    differences. The graph, hence the distance, is invariant to similarity transforms
    and to reordering the points (both clouds alike). The directed A is not normal and
    often has defective eigenvalues, whose rounding errors reach about 1e-4 (the
    distance may move that much when the points are reordered); the symmetric default
    is exact to rounding (about 1e-14).

    Parameters
    ----------
    X_ref, X_rec : array-like of shape (n, n_features) or (n, C, H, W)
        Data and its reconstructions, paired, the same shape; images are flattened.
    n_neighbors : int, default=5
        k of the kNN graph (the paper uses 5 and 20); ``n > n_neighbors`` required.
    symmetrize : bool, default=True
    n_eigenvalues : int or None, default=None
        None: the full spectra, a dense O(n^3) decomposition, refused for n > 5000.
        An int k < n: only the k largest eigenvalues, by ``scipy.sparse.linalg.eigsh``
        on the sparse adjacency (symmetric only, so ``symmetrize=True``).

    Returns
    -------
    distance : float

    Raises
    ------
    ValueError
        X_ref and X_rec of different shapes, ``n <= n_neighbors``, ``n > 5000`` without
        ``n_eigenvalues``, or ``n_eigenvalues`` with ``symmetrize=False``.
    TypeError
        ``symmetrize`` not a bool.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.meta_learning.metrics import knn_spectral_distance
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((50, 3))
    >>> knn_spectral_distance(X, 3 * X + 1)  # a similarity keeps the kNN graph
    0.0
    >>> knn_spectral_distance(X, X + 0.5 * rng.standard_normal(X.shape)) > 0
    True
    """
    X_ref, X_rec = _check_pair(X_ref, X_rec)
    _check_spectral_params(n_neighbors, symmetrize, n_eigenvalues)
    n = len(X_ref)
    if n <= n_neighbors:
        raise ValueError(f"the kNN graph needs more points than n_neighbors; got n={n} "
                         f"<= n_neighbors={n_neighbors}.")
    if n_eigenvalues is None and n > MAX_DENSE_EIGEN:
        raise ValueError(f"n={n} points: the full spectrum (dense O(n^3) eigen-decomposition) "
                         f"is refused above {MAX_DENSE_EIGEN}; pass n_eigenvalues=k to compare "
                         "the k largest eigenvalues (scipy.sparse.linalg.eigsh).")
    if n_eigenvalues is not None and n_eigenvalues >= n:
        raise ValueError(f"n_eigenvalues must be < n={n}; got {n_eigenvalues}.")
    l_ref = _knn_spectrum(X_ref, n_neighbors, symmetrize, n_eigenvalues)
    l_rec = _knn_spectrum(X_rec, n_neighbors, symmetrize, n_eigenvalues)
    return float(np.sqrt(np.sum(np.abs(l_ref - l_rec) ** 2)))


def relative_reduction(baseline, value):
    """Relative reduction ``(baseline - value) / baseline`` of a distance or error.

    How much a method improves on the best baseline (positive: smaller than the baseline).

    Parameters
    ----------
    baseline : float
        Finite and nonzero.
    value : float
        Finite.

    Returns
    -------
    reduction : float

    Examples
    --------
    >>> from geolearn.meta_learning.metrics import relative_reduction
    >>> round(100 * relative_reduction(16.48, 14.10), 2)  # MRML: W2 total, holdout
    14.44
    """
    check_scalar_param(baseline, "baseline")
    check_scalar_param(value, "value")
    if baseline == 0:
        raise ValueError("baseline must be nonzero: the reduction is relative to it; got 0.")
    return float((baseline - value) / baseline)


def _manifold_score(estimator, X, y=None, *, metric, **params):
    """Greater-is-better ``-metric(X, reconstruction of X)``: :func:`make_manifold_scorer`."""
    X = np.asarray(X)
    # a Pipeline (scaler, autoencoder) has no reconstruct: map there and back
    R = np.asarray(estimator.reconstruct(X) if hasattr(estimator, "reconstruct")
                   else estimator.inverse_transform(estimator.transform(X)))
    # reconstruct returns flat rows; images given as (n, C, H, W) are compared flat
    X, R = X.reshape(len(X), -1), R.reshape(len(R), -1)
    if metric == "persistence":
        return -persistence_wasserstein(X, R, **params)["total"]
    return -knn_spectral_distance(X, R, **params)


def make_manifold_scorer(metric="persistence", **kwargs):
    """A scorer ``-metric(X, estimator.reconstruct(X))`` for GridSearchCV and cross-validation.

    Scores how well a fitted autoencoder (any estimator with ``reconstruct(X)``, e.g.
    ``MetaManifoldAutoencoder``, or else with ``transform`` and ``inverse_transform``, as
    a Pipeline of a scaler and an autoencoder) keeps the manifold of held-out data: minus the
    ``"total"`` of :func:`persistence_wasserstein`, or minus
    :func:`knn_spectral_distance`, so greater is better as scikit-learn expects.

    Parameters
    ----------
    metric : {"persistence", "spectral"}, default="persistence"
    **kwargs
        Parameters of the metric: ``homology_dimensions``, ``p``, ``internal_p``, ``thresh``,
        ``n_jobs`` for "persistence"; ``n_neighbors``, ``symmetrize``, ``n_eigenvalues``
        for "spectral". Checked here, not at the first call.

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y=None) -> float``
        It compares ``X`` with its reconstruction, so it is a scikit-learn scorer
        callable rather than a ``make_scorer`` of ``(y_true, y_pred)``; it pickles.

    Raises
    ------
    ValueError
        An unknown metric or a parameter value out of range.
    TypeError
        A keyword argument the metric does not take.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.model_selection import cross_val_score
    >>> from geolearn.meta_learning.metrics import make_manifold_scorer
    >>> class PCAAutoencoder(PCA):
    ...     def reconstruct(self, X):
    ...         return self.inverse_transform(self.transform(X))
    >>> t = np.random.RandomState(0).uniform(0, 2 * np.pi, 90)
    >>> X = np.c_[np.cos(t), np.sin(t), 0.1 * np.cos(3 * t)]
    >>> scorer = make_manifold_scorer("persistence", homology_dimensions=(1,))
    >>> line, plane = (cross_val_score(PCAAutoencoder(k), X, scoring=scorer, cv=3).mean()
    ...                for k in (1, 2))
    >>> bool(plane > line)  # a line through the circle loses its loop
    True
    """
    check_choice(metric, "metric", ("persistence", "spectral"))
    defaults = _PERSISTENCE_DEFAULTS if metric == "persistence" else _SPECTRAL_DEFAULTS
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise TypeError(f"make_manifold_scorer(metric={metric!r}) got unexpected keyword "
                        f"arguments {unknown}; it takes {list(defaults)}.")
    params = {**defaults, **kwargs}
    if metric == "persistence":
        _check_persistence_params(params["homology_dimensions"], params["p"], params["internal_p"],
                                  params["thresh"])
    else:
        _check_spectral_params(params["n_neighbors"], params["symmetrize"],
                               params["n_eigenvalues"])
    return functools.partial(_manifold_score, metric=metric, **kwargs)
