"""Estimators of the RDM family: RDM rows as features, weighted categorical model RDMs."""

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    check_is_fitted,
    validate_data,
)

from ._rdm import _ZSCORE_EPS, METRICS, _row_check, squared_distances

_CORRELATIONS = ("correlation", "zscore_correlation")


class RDMTransformer(TransformerMixin, BaseEstimator):
    """Dissimilarities of each sample to a fixed set of reference stimuli (rows of an RDM).

    ``fit`` stores the reference stimuli; ``transform`` returns, for every row, its
    dissimilarity to each reference (the metrics of :func:`compute_rdm`). On the
    reference set itself, ``fit_transform`` is the RDM of the paper (eq. 3), so a Pipeline
    can feed RDM rows to any downstream estimator.

    Parameters
    ----------
    metric : {"correlation", "cosine", "euclidean", "sqeuclidean_per_feature", \
"zscore_correlation"}, default="correlation"
        As in :func:`compute_rdm`. ``"zscore_correlation"`` z-scores every feature with the
        mean and population std of the references (+1e-7) before the correlation distance.

    Attributes
    ----------
    X_ref_ : ndarray of shape (n_ref, ``n_features_in_``)
        The reference stimuli (float64).
    mean_, scale_ : ndarray of shape (``n_features_in_``,)
        Feature means and ``std + 1e-7`` of the references (``"zscore_correlation"`` only).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    See Also
    --------
    compute_rdm : the RDM of a feature matrix.

    Notes
    -----
    Correlation and cosine dissimilarities are undefined for a constant (zero for cosine)
    row: such rows raise ``ValueError`` in ``fit`` and ``transform``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(30, 6))
    >>> y = (X[:, 0] > 0).astype(int)
    >>> RDMTransformer().fit(X[:5]).transform(X).shape
    (30, 5)
    >>> make_pipeline(RDMTransformer(), LogisticRegression()).fit(X, y).score(X, y) > 0.8
    True
    """

    _parameter_constraints = {"metric": [StrOptions(set(METRICS))]}  # noqa: RUF012

    def __init__(self, metric="correlation"):
        self.metric = metric

    @property
    def _expected_failed_checks(self):
        if self.metric not in ("correlation", "cosine"):
            return {}
        return {"check_estimators_dtypes": (
            "the check casts uniform [0, 3) data with 5 features to integers, which leaves "
            "some rows constant (all zero): their correlation/cosine dissimilarity is "
            "undefined and fit raises ValueError by design (a unit test checks the message)")}

    def _rows(self, X):
        """``X`` as the rows entering the metric's inner products (z-scored, centred, unit)."""
        if self.metric == "zscore_correlation":
            X = (X - self.mean_) / self.scale_
        elif self.metric in ("euclidean", "sqeuclidean_per_feature"):
            return X - self._centre
        scale = np.abs(X).max(1)
        if self.metric in _CORRELATIONS:
            X = X - X.mean(1, keepdims=True)
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        _row_check(norms, scale, X.shape[1], self.metric)
        return X / norms[:, None]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Store the reference stimuli (and, for ``"zscore_correlation"``, their statistics).

        Parameters
        ----------
        X : array-like of shape (n_ref, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : RDMTransformer
        """
        # a correlation needs two features; feature z-scores need two references
        X = validate_data(self, X, dtype=np.float64,
                          ensure_min_features=2 if self.metric in _CORRELATIONS else 1,
                          ensure_min_samples=2 if self.metric == "zscore_correlation" else 1)
        if self.metric == "zscore_correlation":
            self.mean_ = X.mean(0)
            self.scale_ = X.std(0) + _ZSCORE_EPS
        self.X_ref_ = X
        self._centre = X.mean(0)  # translation for well-conditioned Euclidean Grams
        self._ref_rows = self._rows(X)
        return self

    def transform(self, X):
        """Dissimilarity of every row of ``X`` to every reference stimulus.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        D : ndarray of shape (n_samples, n_ref)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = self._rows(X)
        G = Z @ self._ref_rows.T
        if self.metric in ("euclidean", "sqeuclidean_per_feature"):
            R = self._ref_rows
            D = squared_distances(G, np.einsum("ij,ij->i", Z, Z), np.einsum("ij,ij->i", R, R),
                                  Z, R)
            # in place: the output is the largest array here
            if self.metric == "euclidean":
                return np.sqrt(D, out=D)
            D /= X.shape[1]
            return D
        np.subtract(1.0, G, out=G)
        return np.clip(G, 0.0, 2.0, out=G)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # float64 only: float32 correlations err by ~1e-6, enough to flip the ranks of
        # near-tied dissimilarities in a Spearman comparison
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def get_feature_names_out(self, input_features=None):
        """Output names ``dissim_ref0, dissim_ref1, ...`` (one per reference stimulus).

        Parameters
        ----------
        input_features : array-like of str or None
            Checked against the names seen in ``fit``; not used otherwise.

        Returns
        -------
        names : ndarray of str
        """
        check_is_fitted(self)
        _check_feature_names_in(self, input_features)
        return np.asarray([f"dissim_ref{i}" for i in range(len(self.X_ref_))], dtype=object)


def _similarity(p, y, criterion):
    """Cosine or Pearson r of two vectors; undefined (ValueError) for a zero/constant one."""
    if criterion == "pearson":
        p, y = p - p.mean(), y - y.mean()
    den = np.sqrt(np.einsum("i,i->", p, p) * np.einsum("i,i->", y, y))
    if not den > 0:
        what = "constant" if criterion == "pearson" else "all zeros"
        raise ValueError(f"The prediction or y is {what}: the {criterion} score is undefined.")
    return float(np.einsum("i,i->", p, y) / den)


class WeightedRDMModel(RegressorMixin, BaseEstimator):
    """Weighted sum of component model RDMs fitted to a data RDM (paper Sec. 3.6).

    Samples are stimulus pairs: ``X`` (p, k) holds ``k`` condensed component RDMs (see
    :func:`stack_condensed` and :func:`category_rdms`) and ``y`` (p,) the condensed data
    RDM. The weights ``theta`` maximise ``cos(X theta, y)`` (``criterion="cosine"``, as
    rsatoolbox's weighted model that the paper used) or the Pearson r (``"pearson"``); the
    maximiser is the least-squares solution without intercept (after centring the columns
    for ``"pearson"``), rescaled to unit norm. A larger ``theta_g`` of a category RDM means
    a tighter cluster for category ``g``.

    Parameters
    ----------
    criterion : {"cosine", "pearson"}, default="cosine"
    nonnegative : bool, default=False
        Non-negative least squares (``scipy.optimize.nnls``) instead of ``lstsq``.
    normalize : bool, default=True
        Rescale ``coef_`` to unit Euclidean norm (the criterion ignores the scale).

    Attributes
    ----------
    coef_ : ndarray of shape (k,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    Notes
    -----
    :meth:`score` returns the criterion (cosine or Pearson r of ``predict(X)`` and ``y``),
    not scikit-learn's R^2; it is greater-is-better, so it works as a GridSearchCV score.
    The pairs of one RDM are not independent samples (each stimulus enters ``m - 1``
    pairs): do not cross-validate over pairs; split stimuli instead.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import category_rdms, stack_condensed
    >>> rdms, _ = category_rdms([0, 0, 0, 1, 1, 1, 2, 2, 2])
    >>> X = stack_condensed(rdms)
    >>> y = X @ np.array([3.0, 0.0, 4.0])
    >>> WeightedRDMModel().fit(X, y).coef_.round(6)
    array([0.6, 0. , 0.8])
    """

    _parameter_constraints = {  # noqa: RUF012
        "criterion": [StrOptions({"cosine", "pearson"})],
        "nonnegative": ["boolean"],
        "normalize": ["boolean"],
    }

    def __init__(self, criterion="cosine", nonnegative=False, normalize=True):
        self.criterion = criterion
        self.nonnegative = nonnegative
        self.normalize = normalize

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the weights of the component RDMs.

        Parameters
        ----------
        X : array-like of shape (p, k)
            Condensed component RDMs, one column each.
        y : array-like of shape (p,)
            Condensed data RDM.

        Returns
        -------
        self : WeightedRDMModel
        """
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        if self.criterion == "pearson":
            X = X - X.mean(0)
            y = y - y.mean()
        if self.nonnegative:
            coef = scipy.optimize.nnls(X, y)[0]
        else:
            coef = scipy.linalg.lstsq(X, y, lapack_driver="gelsd")[0]
        norm = np.linalg.norm(coef)
        if self.normalize and norm > 0:
            coef = coef / norm
        self.coef_ = coef
        return self

    def predict(self, X):
        """Predicted condensed RDM ``X @ coef_``.

        Parameters
        ----------
        X : array-like of shape (p, k)

        Returns
        -------
        y_pred : ndarray of shape (p,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_

    def score(self, X, y, sample_weight=None):
        """Cosine (``criterion="cosine"``) or Pearson r of ``predict(X)`` and ``y``.

        Overrides scikit-learn's R^2: the weights are only defined up to scale, so the
        criterion the fit maximises is the score.

        Parameters
        ----------
        X : array-like of shape (p, k)
        y : array-like of shape (p,)
        sample_weight : None
            Not supported (pairs have no weights); must be None.

        Returns
        -------
        score : float
        """
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported by WeightedRDMModel.score; "
                             "pass sample_weight=None.")
        y = np.asarray(y, dtype=np.float64).ravel()
        return _similarity(self.predict(X), y, self.criterion)
