"""PersistenceTransformer: point clouds in, fixed-length topological features out."""

import functools
import numbers

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._utils import progress_bar, thread_map
from ._betti import betti_curve
from ._persistence import persistence_diagrams
from ._validation import BACKENDS, SUBSAMPLES, is_prime

_FEATURES = ("betti_curve", "persistence")


def _diagrams_of(job, kw):
    """The diagrams of one ``(cloud, seed)`` job (a module-level function: it is pickled)."""
    cloud, seed = job
    return persistence_diagrams(cloud, random_state=seed, **kw)


def _is_cloud_list(X):
    return (isinstance(X, (list, tuple)) and len(X) > 0
            and all(np.ndim(c) == 2 for c in X))


class PersistenceTransformer(TransformerMixin, BaseEstimator):
    """Turn each point cloud into Betti curves or persistence values of fixed length.

    Each sample is one point cloud. :meth:`fit` computes the Vietoris-Rips persistence
    diagrams (:func:`persistence_diagrams`) of the training clouds and fits, for every
    homology dimension, a grid of ``n_bins`` radii from the smallest birth to the
    largest finite death; :meth:`transform` returns for each cloud the Betti curve
    ``beta_k(r)`` on that grid (``features="betti_curve"``) or its ``n_bins`` largest
    persistences, deaths capped at the grid's last radius (``features="persistence"``),
    so topological features can enter a Pipeline.

    Parameters
    ----------
    homology_dimensions : tuple of int, default=(0, 1)
    features : {"betti_curve", "persistence"}, default="betti_curve"
    n_bins : int, default=16
        Values per homology dimension.
    thresh : float, default=np.inf
        Passed to :func:`persistence_diagrams`.
    coeff : int, default=2
        Prime of the coefficient field.
    metric : str, default="euclidean"
    n_subsample : int or None, default=None
        Use at most this many points of each cloud.
    subsample : {"uniform", "maxmin"}, default="uniform"
    point_dim : int or None, default=None
        Dimension of each point when ``X`` is flat: a 2-D ``X`` holds one cloud per row,
        ``(x1, y1, ..., x2, y2, ...)``, folded into ``(n_features / point_dim, point_dim)``
        points (None: 1, points on a line). Not used for 3-D ``X`` or a list of clouds.
    backend : {"auto", "giotto-ph", "exact"}, default="auto"
    n_jobs : int or None, default=None
        Clouds processed in parallel (joblib).
    random_state : int, RandomState instance or None, default=None
        Seeds the subsampling; an int gives the same features at every call.
    verbose : int, default=0
        ``> 0`` shows a progress bar over the clouds.

    Attributes
    ----------
    radii_ : ndarray of shape (n_homology_dimensions, n_bins)
        The fitted grid of each homology dimension.
    n_features_in_ : int
        Width of a flat (2-D) training ``X``; only set for flat input.
    n_features_out_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.topology import PersistenceTransformer
    >>> rng = np.random.RandomState(0)
    >>> clouds = np.stack([make_circle_points(30, grid=True), rng.normal(size=(30, 2))])
    >>> pt = PersistenceTransformer(homology_dimensions=(1,), features="persistence", n_bins=2)
    >>> Z = pt.fit_transform(clouds)
    >>> Z.shape, bool(Z[0, 0] > 2 * Z[1, 0])   # the circle's loop stands out
    ((2, 2), True)
    >>> pt.get_feature_names_out().tolist()
    ['persistence1_0', 'persistence1_1']
    """

    _parameter_constraints = {
        "homology_dimensions": ["array-like"],
        "features": [StrOptions(set(_FEATURES))],
        "n_bins": [Interval(numbers.Integral, 1, None, closed="left")],
        "thresh": [Interval(numbers.Real, 0, None, closed="both")],
        "coeff": [Interval(numbers.Integral, 2, None, closed="left")],
        "metric": [str, callable],
        "n_subsample": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "subsample": [StrOptions(set(SUBSAMPLES))],
        "point_dim": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "backend": [StrOptions(set(BACKENDS))],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, homology_dimensions=(0, 1), *, features="betti_curve", n_bins=16,
                 thresh=np.inf, coeff=2, metric="euclidean", n_subsample=None,
                 subsample="uniform", point_dim=None, backend="auto", n_jobs=None,
                 random_state=None, verbose=0):
        self.homology_dimensions = homology_dimensions
        self.features = features
        self.n_bins = n_bins
        self.thresh = thresh
        self.coeff = coeff
        self.metric = metric
        self.n_subsample = n_subsample
        self.subsample = subsample
        self.point_dim = point_dim
        self.backend = backend
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _dims(self):
        dims = np.asarray(self.homology_dimensions)
        if (dims.ndim != 1 or len(dims) == 0 or dims.dtype.kind not in "iu" or (dims < 0).any()
                or len(np.unique(dims)) != len(dims)):
            raise ValueError("homology_dimensions must be distinct integers >= 0, e.g. (0, 1); "
                             f"got {self.homology_dimensions!r}.")
        if not is_prime(self.coeff):
            raise ValueError(f"coeff must be a prime number; got {self.coeff!r}.")
        return [int(d) for d in dims]

    def _clouds(self, X, reset):
        """Validate ``X`` and return a list of (n_points, dim) float64 clouds."""
        flat = False
        if _is_cloud_list(X):
            clouds = [check_array(c, dtype=np.float64, input_name=f"X[{i}]")
                      for i, c in enumerate(X)]
        else:
            X = X if hasattr(X, "ndim") and hasattr(X, "shape") else np.asarray(X)
            if X.ndim == 3:
                X = check_array(X, dtype=np.float64, allow_nd=True, input_name="X")
                clouds = list(X)
            else:
                flat = True
                X = validate_data(self, X, reset=reset, dtype=np.float64)
                d = 1 if self.point_dim is None else self.point_dim
                if X.shape[1] % d:
                    raise ValueError(f"X has {X.shape[1]} features per row, not a multiple of "
                                     f"point_dim={d}.")
                clouds = list(X.reshape(len(X), -1, d))
        if reset and not flat:
            for attr in ("n_features_in_", "feature_names_in_"):
                if hasattr(self, attr):
                    delattr(self, attr)
        for i, c in enumerate(clouds):
            if len(c) < 2:
                raise ValueError(
                    f"each point cloud needs at least 2 points; cloud {i} has {len(c)} (a flat "
                    f"X row of {c.size} feature(s) holds {c.size // max(c.shape[1], 1)} "
                    "point(s) of dimension point_dim).")
        return clouds

    # ------------------------------------------------------------------ diagrams
    def compute_diagrams(self, X):
        """Persistence diagrams of each cloud (no fitting needed).

        Parameters
        ----------
        X : array-like of shape (n_clouds, n_points, n_dims), a list of (n_i, n_dims)
            clouds, or flat rows (n_clouds, n_points * point_dim)

        Returns
        -------
        diagrams : list of lists of ndarray (m, 2)
            ``diagrams[i][j]``: cloud i, homology dimension ``homology_dimensions[j]``.
        """
        self._validate_params()
        return self._diagrams(self._clouds(X, reset=False), self._dims())

    def _diagrams(self, clouds, dims):
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=len(clouds))
        kw = dict(maxdim=max(dims), thresh=self.thresh, coeff=self.coeff, metric=self.metric,
                  n_subsample=self.n_subsample, subsample=self.subsample, n_jobs=1,
                  backend=self.backend)
        def progress(results):
            return progress_bar(results, total=len(clouds), desc="PersistenceTransformer",
                                unit="cloud", verbose=self.verbose)

        # processes: ripser holds the GIL (one worker runs the clouds in this process)
        out = thread_map(functools.partial(_diagrams_of, kw=kw), list(zip(clouds, seeds)),
                         self.n_jobs, backend="loky", progress=progress)
        return [[dgms[k] for k in dims] for dgms in out]

    # ------------------------------------------------------------------ estimator
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the training diagrams and fit the grid of radii.

        Parameters
        ----------
        X : array-like of shape (n_clouds, n_points, n_dims), list of clouds, or flat rows
        y : ignored

        Returns
        -------
        self
        """
        self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit and return the features of the training clouds (diagrams computed once).

        Returns
        -------
        features : ndarray of shape (n_clouds, n_homology_dimensions * n_bins)
        """
        return self._features(self._fit(X))

    def _fit(self, X):
        dims = self._dims()
        diagrams = self._diagrams(self._clouds(X, reset=True), dims)
        radii = []
        for j in range(len(dims)):
            pts = np.concatenate([d[j] for d in diagrams])
            finite = pts[np.isfinite(pts[:, 1])]
            lo = float(pts[:, 0].min()) if len(pts) else 0.0
            hi = float(finite[:, 1].max()) if len(finite) else lo
            if hi <= lo:
                hi = lo + (self.thresh if np.isfinite(self.thresh) and self.thresh > 0 else 1.0)
            radii.append(np.linspace(lo, hi, self.n_bins))
        self.radii_ = np.array(radii)
        self.n_features_out_ = len(dims) * self.n_bins
        return diagrams

    def transform(self, X):
        """Betti curves or largest persistences of each cloud.

        Parameters
        ----------
        X : array-like of shape (n_clouds, n_points, n_dims), list of clouds, or flat rows

        Returns
        -------
        features : ndarray of shape (n_clouds, n_homology_dimensions * n_bins), float64
        """
        check_is_fitted(self, "radii_")
        return self._features(self._diagrams(self._clouds(X, reset=False), self._dims()))

    def _features(self, diagrams):
        out = np.zeros((len(diagrams), self.radii_.size))
        nb = self.n_bins
        for i, dgms in enumerate(diagrams):
            for j, d in enumerate(dgms):
                if self.features == "betti_curve":
                    out[i, j * nb:(j + 1) * nb] = betti_curve(d, self.radii_[j])
                else:
                    pers = np.clip(np.minimum(d[:, 1], self.radii_[j, -1]) - d[:, 0], 0, None)
                    top = np.sort(pers)[::-1][:nb]
                    out[i, j * nb:j * nb + len(top)] = top
        return out

    def get_feature_names_out(self, input_features=None):
        """``betti{k}_{i}`` (or ``persistence{k}_{i}``) for dimension k and bin i.

        Returns
        -------
        names : ndarray of str
        """
        check_is_fitted(self, "radii_")
        stem = "betti" if self.features == "betti_curve" else "persistence"
        return np.array([f"{stem}{k}_{i}" for k in self._dims() for i in range(self.n_bins)],
                        dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        # float64 only: filtration values of persistence diagrams (births, deaths) in float64
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
