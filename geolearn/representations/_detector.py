"""CanonicalAdversarialDetector: one detector in a canonical space, screening mapped sources."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._utils import fitted_on_success, warn_user
from ..exceptions import GeolearnWarning
from ._linear_map import LinearEmbeddingMap


def _detector_has(method):
    def check(self):
        detector = getattr(self, "detector_", None)
        if detector is None:
            detector = self.detector
        return detector is not None and hasattr(detector, method)

    return check


class CanonicalAdversarialDetector(ClassifierMixin, BaseEstimator):
    """Adversarial detector in one network's embedding space, shared by every mapped network.

    A linear SVM is trained once on the canonical (target) network's clean and
    adversarial embeddings; every other (source) network gets a least-squares
    :class:`LinearEmbeddingMap` into the canonical space (:meth:`fit_source`)
    and is screened by the same detector with no new detector training
    (Algorithm 1 of "Leveraging linear mapping for model-agnostic adversarial
    defense").

    Parameters
    ----------
    detector : classifier with ``decision_function``, default=None
        Template of the canonical detector (cloned). ``None``:
        ``make_pipeline(StandardScaler(), LinearSVC(C=C, class_weight="balanced",
        max_iter=max_iter, random_state=random_state))``. When ``detector`` is
        given, ``C``, ``standardize``, ``max_iter`` and ``random_state`` are ignored.
    mapper : estimator, default=None
        Template of the per-source map (cloned per source), fitted as
        ``mapper.fit(X_source, X_canonical)`` and applied with ``predict``.
        ``None``: ``LinearEmbeddingMap()``.
    C : float, default=1.0
        Regularisation of the default LinearSVC (> 0).
    standardize : bool, default=True
        Standardise canonical embeddings (statistics of the canonical training
        rows, reused for mapped rows) before the default LinearSVC.
    max_iter : int, default=10000
        Iterations of the default LinearSVC.
    random_state : int, RandomState instance or None, default=None
        Seed of the default LinearSVC.

    Attributes
    ----------
    detector_ : estimator
        The fitted canonical detector.
    maps_ : dict of str to estimator
        Fitted map of each source, keyed by the name given to :meth:`fit_source`.
    classes_ : ndarray of shape (2,)
        ``classes_[1]`` is the adversarial class (positive scores).
    n_features_in_ : int
        Canonical embedding dimension ``d_t``.
    n_iter_ : int or None
        Iterations run by the detector's solver (``None`` if it reports none).

    Notes
    -----
    :meth:`score` returns the AUROC of :meth:`decision_function` (the paper's
    metric), not the accuracy; ``GridSearchCV(..., scoring="roc_auc")`` gives
    the same on canonical data. Rows of ``X_source`` and ``X_canonical`` in
    :meth:`fit_source` must be paired (same image index); pairs built by hand
    are easy to misalign: :func:`cross_model_detection` builds them from shared
    indices.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import CanonicalAdversarialDetector
    >>> rng = np.random.default_rng(0)
    >>> Z = np.r_[rng.normal(0, 1, (100, 4)), rng.normal(2, 1, (100, 4))]  # canonical
    >>> t = np.r_[np.zeros(100), np.ones(100)]                          # 1 = adversarial
    >>> X_src = Z @ rng.normal(size=(4, 6)) + rng.normal(0, 0.1, (200, 6))  # another network
    >>> det = CanonicalAdversarialDetector(random_state=0).fit(Z, t)
    >>> det = det.fit_source("net_a", X_src, Z)
    >>> bool(det.score(X_src, t, source="net_a") > 0.9)
    True
    """

    _parameter_constraints = {
        "detector": [HasMethods(["fit", "decision_function"]), None],
        "mapper": [HasMethods(["fit", "predict"]), None],
        "C": [Interval(Real, 0, None, closed="neither")],
        "standardize": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, detector=None, mapper=None, C=1.0, standardize=True, max_iter=10000,
                 random_state=None):
        self.detector = detector
        self.mapper = mapper
        self.C = C
        self.standardize = standardize
        self.max_iter = max_iter
        self.random_state = random_state

    def _make_detector(self):
        if self.detector is not None:
            return clone(self.detector)
        svc = LinearSVC(C=self.C, class_weight="balanced", max_iter=self.max_iter,
                        random_state=self.random_state)
        return make_pipeline(StandardScaler(), svc) if self.standardize else svc

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Fit the detector on canonical embeddings.

        Maps fitted with :meth:`fit_source` are kept unless the canonical
        dimension changed (they are then dropped, with a warning). A fit that fails
        leaves the detector unfitted, maps included.

        Parameters
        ----------
        X : array-like of shape (n, d_t)
            Canonical (target network) embeddings.
        y : array-like of shape (n,)
            Two labels: ``classes_[0]`` clean, ``classes_[1]`` adversarial.

        Returns
        -------
        self : CanonicalAdversarialDetector
        """
        X, y = validate_data(self, X, y, dtype=(np.float64, np.float32))
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            raise ValueError(
                "Only binary classification is supported (clean vs adversarial). The type of "
                f"the target is {y_type}."
            )
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(
                f"y must hold exactly two classes (clean and adversarial); got {len(classes)} "
                f"class(es): {classes.tolist()}."
            )
        maps = getattr(self, "maps_", {})
        stale = sorted(name for name, m in maps.items() if _n_targets(m) != X.shape[1])
        if stale:
            warn_user(f"The canonical dimension is now {X.shape[1]}; dropping the maps of sources "
            f"{stale} fitted for another dimension.", GeolearnWarning)
            maps = {}
        self.maps_ = maps
        self.detector_ = self._make_detector().fit(X, y)
        self.classes_ = self.detector_.classes_
        *_, (_, final) = _steps(self.detector_)
        self.n_iter_ = getattr(final, "n_iter_", None)
        return self

    def fit_source(self, name, X_source, X_canonical, sample_weight=None):
        """Fit and store the map of one source network into the canonical space.

        Parameters
        ----------
        name : str
            Key of the source in ``maps_``.
        X_source : array-like of shape (m, d_s)
            The source network's embeddings.
        X_canonical : array-like of shape (m, d_t)
            The canonical network's embeddings of the same inputs (row ``i`` of
            both from image ``i``; for adversarial rows, each network's own
            adversarial version of image ``i``).
        sample_weight : array-like of shape (m,), optional
            Passed to the mapper's ``fit``.

        Returns
        -------
        self : CanonicalAdversarialDetector
        """
        X_canonical = check_array(X_canonical, dtype=np.float64, input_name="X_canonical")
        d_t = getattr(self, "n_features_in_", None)
        if d_t is None:
            d_t = next((_n_targets(m) for m in getattr(self, "maps_", {}).values()), None)
        if d_t is not None and X_canonical.shape[1] != d_t:
            raise ValueError(
                f"X_canonical has {X_canonical.shape[1]} columns but the canonical space of this "
                f"detector has {d_t}."
            )
        mapper = LinearEmbeddingMap() if self.mapper is None else clone(self.mapper)
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        mapper.fit(X_source, X_canonical, **kwargs)
        if not hasattr(self, "maps_"):
            self.maps_ = {}
        self.maps_[name] = mapper
        return self

    def _canonical(self, X, source):
        """``X`` in the canonical space: validated as is, or mapped from ``source``."""
        check_is_fitted(self, "detector_")
        if source is None:
            return validate_data(self, X, dtype=(np.float64, np.float32), reset=False)
        if source not in self.maps_:
            raise ValueError(
                f"source={source!r} has no map: call fit_source({source!r}, X_source, "
                f"X_canonical) first. Known sources: {sorted(self.maps_)}."
            )
        mapper = self.maps_[source]
        X = check_array(X, dtype=(np.float64, np.float32))
        if X.shape[1] != mapper.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} columns but source {source!r} was mapped from "
                f"{mapper.n_features_in_}-dimensional embeddings."
            )
        return mapper.predict(X)

    def decision_function(self, X, source=None):
        """Detector score (positive: adversarial) of canonical or source embeddings.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Canonical embeddings (``source=None``), or embeddings of the named
            source, mapped first.
        source : str, optional

        Returns
        -------
        scores : ndarray of shape (n,)
        """
        Z = self._canonical(X, source)
        return self.detector_.decision_function(Z)

    def predict(self, X, source=None):
        """Predicted class (``classes_[1]``: adversarial) of canonical or source embeddings.

        Parameters
        ----------
        X : array-like of shape (n, d)
        source : str, optional

        Returns
        -------
        labels : ndarray of shape (n,)
        """
        Z = self._canonical(X, source)
        return self.detector_.predict(Z)

    @available_if(_detector_has("predict_proba"))
    def predict_proba(self, X, source=None):
        """Class probabilities, when the detector has ``predict_proba``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        source : str, optional

        Returns
        -------
        proba : ndarray of shape (n, 2)
        """
        Z = self._canonical(X, source)
        return self.detector_.predict_proba(Z)

    def score(self, X, y, source=None):
        """AUROC of :meth:`decision_function` (the paper's metric, not accuracy).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Labels among ``classes_``.
        source : str, optional

        Returns
        -------
        auroc : float
        """
        scores = self.decision_function(X, source=source)
        return roc_auc_score(np.asarray(y) == self.classes_[1], scores)

    def source_linear_detector(self, name):
        """The detector folded with a source's map: ``s(x) = X_source @ w + b``.

        Needs an affine map (``coef_``, ``intercept_``) and a linear detector
        (``coef_``, ``intercept_``, e.g. LinearSVC or LogisticRegression),
        optionally after a ``StandardScaler`` in a Pipeline:
        ``w = M^T (w_t / sigma)``, ``b = b_t + (w_t / sigma)^T (b_map - mu)``.

        Parameters
        ----------
        name : str
            A source in ``maps_``.

        Returns
        -------
        w : ndarray of shape (d_s,)
        b : float
        """
        check_is_fitted(self, "detector_")
        if name not in self.maps_:
            raise ValueError(f"No map for source {name!r}; known sources: {sorted(self.maps_)}.")
        w, b = _linear_parts(self.detector_)
        mapper = self.maps_[name]
        M, b_map = np.asarray(mapper.coef_), np.asarray(mapper.intercept_)
        return M.T @ w, float(b + w @ b_map)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def _n_targets(mapper):
    return np.atleast_2d(mapper.coef_).shape[0] if hasattr(mapper, "coef_") else mapper.n_targets_


def _steps(detector):
    """The ``(name, step)`` pairs of a pipeline, or one unnamed pair for a plain estimator."""
    return list(getattr(detector, "steps", [("", detector)]))


def _linear_parts(detector):
    """``(w, b)`` with ``decision_function(z) = z @ w + b`` for a (scaled) linear classifier."""
    *scalers, (_, final) = _steps(detector)
    coef = getattr(final, "coef_", None)
    if coef is None or np.atleast_2d(coef).shape[0] != 1:
        raise TypeError(
            "source_linear_detector needs a binary linear detector with coef_ and intercept_ "
            f"(LinearSVC, LogisticRegression, ...); got {type(final).__name__}."
        )
    w = np.ravel(coef).astype(np.float64)
    b = float(np.ravel(final.intercept_)[0])
    for _, step in reversed(scalers):
        if not isinstance(step, StandardScaler):
            raise TypeError(
                "source_linear_detector folds only StandardScaler steps before the linear "
                f"detector; got {type(step).__name__}."
            )
        if step.with_std:
            w = w / step.scale_
        if step.with_mean:
            b -= float(w @ step.mean_)
    return w, b
