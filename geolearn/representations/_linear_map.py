"""LinearEmbeddingMap: the least-squares linear map between two networks' embeddings."""

from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_sample_weight,
    check_array,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from .._utils import iter_batches, preserved_dtype, warn_user
from ..exceptions import NumericalWarning
from .metrics import embedding_mse

_EPS = np.finfo(np.float64).eps


#: Below this fraction of ``||Y||^2`` the residual is taken from the explicit product: the
#: Gram identity would lose its digits to cancellation (a map that nearly interpolates).
_RSS_IDENTITY_MIN = 1e-4


def _solve_lstsq(X, Y):
    """Minimum-norm least squares by SVD (LAPACK gelsd).

    Returns ``W, rank, singular values, rss``: ``rss`` is the residual sum of squares
    that gelsd leaves in the rows past ``d_A`` (a sum of squares, no cancellation), or
    None when it gives none (``m <= d_A`` or rank-deficient ``X``).
    """
    cond = _EPS * max(X.shape)
    W, residues, rank, s = scipy.linalg.lstsq(X, Y, cond=cond, lapack_driver="gelsd")
    rss = float(residues.sum()) if np.size(residues) else None
    return W, int(rank), s, rss


def _solve_svd(X, Y, alpha):
    """Ridge (or, for ``alpha == 0``, pseudo-inverse) solution from one thin SVD of ``X``."""
    U, s, Vt = scipy.linalg.svd(X, full_matrices=False, lapack_driver="gesdd")
    keep = s > (s[0] if len(s) else 0.0) * _EPS * max(X.shape)
    if alpha == 0:
        factor = np.divide(1.0, s, out=np.zeros_like(s), where=keep)
    else:
        factor = s / (s**2 + alpha)
    return Vt.T @ (factor[:, None] * (U.T @ Y)), int(keep.sum()), s


def _solve_cholesky(X, Y, alpha, *, dual):
    """Ridge by Cholesky: primal ``(X^T X + a I)^-1 X^T Y`` or dual ``X^T (X X^T + a I)^-1 Y``.

    Returns ``W, rss``. The primal route also gives the residual sum of squares
    ``||Y||^2 - 2 <W, X^T Y> + <W, X^T X W>`` from its Gram matrices, in ``d_A^3``
    instead of the ``m d_A d_B`` of a product with ``X``; ``rss`` is None for the dual
    route and where that identity would cancel (see ``_RSS_IDENTITY_MIN``).
    """
    G = X @ X.T if dual else X.T @ X
    G.flat[:: len(G) + 1] += alpha
    try:
        if dual:
            return X.T @ scipy.linalg.solve(G, Y, assume_a="pos"), None
        B = X.T @ Y
        W = scipy.linalg.solve(G, B, assume_a="pos")
    except np.linalg.LinAlgError as exc:
        raise ValueError(
            "solver='cholesky' found the Gram matrix singular (rank-deficient embeddings with "
            "alpha=0): use alpha > 0, or solver='auto' or 'svd' for the minimum-norm solution."
        ) from exc
    y_sq = np.einsum("ij,ij->", Y, Y)
    rss = y_sq - 2 * np.vdot(W, B) + np.vdot(W, G @ W) - alpha * np.vdot(W, W)
    return W, (float(rss) if rss > _RSS_IDENTITY_MIN * y_sq else None)


def _check_target_embeddings(y):
    """``y`` as a float64 (m, d_B) array; 1-D targets (class labels by mistake) are refused."""
    if y is None:
        raise ValueError(
            "LinearEmbeddingMap requires y to be passed, but the target y is None: pass the "
            "(m, d_B) target embeddings paired with X."
        )
    Y = check_array(y, dtype=np.float64, ensure_2d=False, input_name="y")
    if Y.ndim != 2:
        raise ValueError(
            f"y must be a 2-D array (m, d_B) of target embeddings; got ndim={Y.ndim} "
            "(reshape a single target with y.reshape(-1, 1))."
        )
    return Y


def _warn_if_underdetermined(rank, Xc, n_rows):
    """Warn when the minimum-norm map (nearly) interpolates its training rows."""
    # all-zero columns (dead ReLU units) lower the rank harmlessly: they get zero weight
    n_live = int(np.count_nonzero(np.any(Xc != 0, axis=0)))
    if rank < n_live:
        warn_user(f"The source embeddings have rank {rank} < {n_live} non-zero columns "
        f"({n_rows} rows): the minimum-norm least-squares map is underdetermined and "
        "(nearly) interpolates its training rows, which generalises poorly. Use more "
        "rows or alpha > 0.", NumericalWarning)


class LinearEmbeddingMap(ClassNamePrefixFeaturesOutMixin, TransformerMixin, RegressorMixin,
                         BaseEstimator):
    """Least-squares linear map from a source network's embeddings to a target's.

    Fits ``M`` in ``f_B(x) ~ M f_A(x) + b`` over paired rows (eqs. 1-2 of
    "Leveraging linear mapping for model-agnostic adversarial defense"):
    ``coef_ = M`` minimises ``sum_i ||M f_A(x_i) + b - f_B(x_i)||^2 + alpha ||M||_F^2``.
    With ``alpha=0`` (the paper) the solution is the minimum-norm one,
    ``M^T = pinv(X) Y``. All solves run in float64.

    Parameters
    ----------
    alpha : float, default=0.0
        Ridge penalty on ``coef_`` (never on the intercept); ``0`` is plain
        least squares.
    fit_intercept : bool, default=False
        Fit an offset ``b`` (eq. 1 of the paper has none).
    solver : {"auto", "svd", "cholesky"}, default="auto"
        ``"auto"``: SVD-based ``scipy.linalg.lstsq`` (gelsd) when ``alpha == 0``,
        otherwise ``"cholesky"``. ``"cholesky"``: normal equations, in the
        primal ``X^T X + alpha I`` when ``m >= d_A`` and the dual
        ``X X^T + alpha I`` when ``m < d_A``. ``"svd"``: one thin SVD of the
        source embeddings.
    batch_size : int or None, default=None
        Rows per matrix product in :meth:`transform` (``None``: all at once),
        to bound the float64 copies made of large inputs.

    Attributes
    ----------
    coef_ : ndarray of shape (n_targets, ``n_features_in_``)
        The map ``M`` (scikit-learn's multi-output convention).
    intercept_ : ndarray of shape (n_targets,)
        ``b``; zeros when ``fit_intercept=False``.
    n_features_in_ : int
        Source embedding dimension ``d_A``.
    n_targets_ : int
        Target embedding dimension ``d_B``.
    rank_ : int or None
        Numerical rank of the (centred, weighted) source embeddings; ``None``
        for the Cholesky route, which does not compute it.
    singular_values_ : ndarray or None
        Their singular values (SVD routes only, else ``None``).
    train_mse_ : float
        :func:`embedding_mse` of the fitted map on its training rows.

    See Also
    --------
    CanonicalAdversarialDetector : a detector in one network's space screening mapped sources.
    embedding_mse : the paper's map-quality metric.

    Notes
    -----
    Rows of ``X`` and ``Y`` must be paired (row ``i`` of both from image ``i``).
    When cross-validating ``alpha`` on clean and adversarial rows of the same
    images, pass the image index as ``groups`` to ``GroupKFold``; plain
    ``KFold`` leaks. Inside a ``Pipeline`` wrap a fitted map in
    ``sklearn.frozen.FrozenEstimator``: ``Pipeline.fit(X, y)`` would hand it
    class labels instead of target embeddings.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import LinearEmbeddingMap
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 5))
    >>> M = rng.normal(size=(3, 5))
    >>> emap = LinearEmbeddingMap().fit(X, X @ M.T)
    >>> bool(np.allclose(emap.coef_, M)), emap.transform(X[:2]).shape
    (True, (2, 3))
    """

    _reason_1d_y = (
        "the transformer checks fit with 1-D class labels as y; a map needs 2-D target "
        "embeddings and rejects 1-D y on purpose (class labels passed by mistake, e.g. by "
        "Pipeline.fit(X, y), would otherwise be fitted silently)"
    )
    _expected_failed_checks = {
        "check_transformer_general": _reason_1d_y,
        "check_transformer_data_not_an_array": _reason_1d_y,
        "check_transformer_preserve_dtypes": _reason_1d_y,
    }

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "svd", "cholesky"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, alpha=0.0, fit_intercept=False, solver="auto", batch_size=None):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.batch_size = batch_size

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the map from paired source and target embeddings.

        Parameters
        ----------
        X : array-like of shape (m, d_A)
            Source embeddings.
        y : array-like of shape (m, d_B)
            Target embeddings, row ``i`` paired with ``X[i]`` (the spec's ``Y``;
            named ``y`` as scikit-learn passes it by keyword).
        sample_weight : array-like of shape (m,), optional
            Non-negative row weights (rows are scaled by ``sqrt(w)``).

        Returns
        -------
        self : LinearEmbeddingMap
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        Y = _check_target_embeddings(y)
        check_consistent_length(X, Y)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        Xc, Yc, x_mean, y_mean = self._centred_weighted(X, Y, sw, sample_weight is not None)
        W, rss = self._solve(Xc, Yc)
        self.coef_ = np.ascontiguousarray(W.T)
        self.intercept_ = y_mean - x_mean @ W
        self.n_targets_ = Y.shape[1]
        if self.alpha == 0 and self.rank_ is not None:
            _warn_if_underdetermined(self.rank_, Xc, len(X))
        # the solver's residual saves a product with X (a third of the fit); weighted rows
        # have weighted residuals, and train_mse_ is the unweighted one
        if rss is None or sample_weight is not None:
            self.train_mse_ = embedding_mse(Y, self.transform(X))
        else:
            self.train_mse_ = rss / Y.size
        return self

    def _centred_weighted(self, X, Y, sw, weighted):
        """``X``, ``Y`` centred (with an intercept) and scaled by ``sqrt(w)``, and their means.

        Copies are made only when needed: ``X`` and ``Y`` may hold gigabytes.
        """
        Xc, Yc = X, Y
        x_mean, y_mean = np.zeros(X.shape[1]), np.zeros(Y.shape[1])
        if self.fit_intercept:
            x_mean = np.average(X, axis=0, weights=sw)
            y_mean = np.average(Y, axis=0, weights=sw)
            Xc, Yc = X - x_mean, Y - y_mean
        if weighted:
            root = np.sqrt(sw)[:, None]
            Xc, Yc = Xc * root, Yc * root
        return Xc, Yc, x_mean, y_mean

    def _solve(self, Xc, Yc):
        """The map ``W`` (d_A, d_B) and the residual sum of squares (or None) of the solver.

        Sets ``rank_`` and ``singular_values_``.
        """
        solver = self.solver
        rss = None
        if solver == "auto":
            solver = "lstsq" if self.alpha == 0 else "cholesky"
        if solver == "lstsq":
            W, self.rank_, self.singular_values_, rss = _solve_lstsq(Xc, Yc)
        elif solver == "svd":
            W, self.rank_, self.singular_values_ = _solve_svd(Xc, Yc, self.alpha)
        else:
            W, rss = _solve_cholesky(Xc, Yc, self.alpha, dual=len(Xc) < Xc.shape[1])
            self.rank_ = self.singular_values_ = None
        return W, rss

    @property
    def _n_features_out(self):
        return self.n_targets_

    def transform(self, X):
        """Map source embeddings into the target space.

        Parameters
        ----------
        X : array-like of shape (n, d_A)

        Returns
        -------
        Y_hat : ndarray of shape (n, d_B)
            float32 for float32 ``X`` (computed in float64, then rounded), else float64.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=(np.float64, np.float32), reset=False)
        out = np.empty((len(X), self.n_targets_))
        for sl in iter_batches(len(X), self.batch_size):
            np.matmul(np.asarray(X[sl], dtype=np.float64), self.coef_.T, out=out[sl])
        out += self.intercept_
        return out.astype(preserved_dtype(X), copy=False)

    def predict(self, X):
        """Same as :meth:`transform` (the map as a multi-output regressor).

        Parameters
        ----------
        X : array-like of shape (n, d_A)

        Returns
        -------
        Y_hat : ndarray of shape (n, d_B), float32 for float32 ``X``, else float64
        """
        return self.transform(X)

    def inverse_transform(self, Z):
        """Least-squares preimage ``(Z - intercept_) @ pinv(coef_).T`` of target embeddings.

        Exact only for points in the map's range when ``coef_`` has full column rank.

        Parameters
        ----------
        Z : array-like of shape (n, d_B)

        Returns
        -------
        X_hat : ndarray of float64, shape (n, d_A)
        """
        check_is_fitted(self)
        Z = check_array(Z, dtype=np.float64, input_name="Z")
        if Z.shape[1] != self.n_targets_:
            raise ValueError(
                f"Z has {Z.shape[1]} columns but the map's target space has {self.n_targets_}."
            )
        return (Z - self.intercept_) @ scipy.linalg.pinv(self.coef_).T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags
