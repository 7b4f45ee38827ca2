"""ConformalKernelSVC: an SVM whose kernel is magnified around its own support vectors."""

import math
import numbers
import warnings

import numpy as np
import torch
from scipy.spatial.distance import cdist
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.exceptions import ConvergenceWarning as SVCConvergenceWarning
from sklearn.metrics.pairwise import (
    linear_kernel,
    polynomial_kernel,
    rbf_kernel,
    sigmoid_kernel,
)
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)

from .._utils import check_squares_finite, fitted_on_success, progress_bar, warn_user
from ..exceptions import ConvergenceWarning, NumericalWarning
from ._kernels import KernelMetric

_KERNELS = ("rbf", "poly", "sigmoid", "linear")
# libsvm's own cap (upstream svm.cpp: max(10^7, 100 n)); scikit-learn's max_iter=-1 has none,
# and on the ill-conditioned kernel of many conformal refits libsvm then never stops
_LIBSVM_MAX_ITER = 10**7
# up to this many features cdist's direct differences beat the BLAS expansion of the rbf Gram
# (measured at n = 2,000: 2x faster at d = 2, break-even near d = 15)
_FEW_FEATURES = 10
# entries of the row blocks that bound the temporaries (1 MiB: they stay in a core's L2 cache)
_BLOCK = 2**17
# beside a sum of at least this, terms that underflow or lose bits (< 2.2e-308) weigh < 1e-100
_TINY_SUM = 1e-200


def _inner_budget(max_iter, n):
    """The inner SVC's ``max_iter``: the user's, or libsvm's own cap for ``-1``."""
    return max(_LIBSVM_MAX_ITER, 100 * n) if max_iter == -1 else max_iter


def _row_norms(A):
    """Euclidean norms of the rows, scaled by their largest entry so squares cannot overflow."""
    peak = np.abs(A).max(axis=1, initial=0.0)
    safe = np.where(peak > 0, peak, 1.0)
    return peak * np.sqrt(((A / safe[:, None]) ** 2).sum(1))


def _half_log1p_sq(r):
    """``log(1 + r^2) / 2`` without overflow: ``log r`` where ``1 / r^2`` is below rounding."""
    big = r > 1e150
    return np.where(big, np.log(np.where(big, r, 1.0)), 0.5 * np.log1p(np.where(big, 0.0, r) ** 2))


def _rbf(X, Y, gamma):
    """:func:`~sklearn.metrics.pairwise.rbf_kernel`; at few features from ``cdist``, which costs
    less there than the BLAS expansion (and is exact to rounding, zero on the diagonal)."""
    if X.shape[1] > _FEW_FEATURES:
        return rbf_kernel(X, Y, gamma=gamma)
    K = cdist(X, Y, "sqeuclidean")
    K *= -gamma
    return np.exp(K, out=K)


def _log_sum_exp(logits):
    """``log Σ_j exp(logits_ij)`` per row of non-positive ``logits``.

    The terms are at most 1: summed directly, as ``c(x)`` is written, wherever the sum is far
    above the subnormal range; only the rows far from every centre need the shifted
    :func:`scipy.special.logsumexp` (twice the passes). Both are exact to rounding in ``c``.
    """
    total = np.exp(logits).sum(axis=1)
    far = total < _TINY_SUM
    log_total = np.log(np.where(far, 1.0, total))
    if far.any():
        log_total[far] = logsumexp(logits[far], axis=1)
    return log_total


def _log_factor(X, centers, tau, grad=False):
    """``log c(x) = log Σ_i exp(−|x − s_i|²/(2τ²))`` per row of ``X`` and (``grad``) its gradient.

    On blocks of rows: the (rows, n_centers) arrays stay small whatever the size of ``X``.
    """
    log_c = np.empty(len(X))
    d_log_c = np.empty_like(X) if grad else None
    rows = max(1, _BLOCK // max(len(centers), 1))
    for batch in gen_batches(len(X), rows):
        logits = cdist(X[batch], centers, "sqeuclidean")  # exact differences, no expansion
        logits /= -2 * tau**2
        log_c[batch] = _log_sum_exp(logits)
        if grad:
            # ∇ log c = Σ_i w_i (s_i − x) / τ² with the softmax weights w (Σ_i w_i = 1)
            w = np.exp(logits - log_c[batch, None])
            d_log_c[batch] = (w @ centers - X[batch]) / tau**2
    return log_c, d_log_c


class _TorchConformalKernel:
    """``K̃(x, y) = exp(L(x) + L(y)) K₀(x, y)`` for single torch points (for KernelMetric)."""

    def __init__(self, kernel, gamma, degree, coef0, centers, taus):
        self.kernel, self.gamma, self.degree, self.coef0 = kernel, gamma, degree, coef0
        self.centers = [torch.as_tensor(c, dtype=torch.float64) for c in centers]
        self.taus = list(taus)

    def _L(self, x):
        return sum((torch.logsumexp(-((x - c.to(x)) ** 2).sum(-1) / (2 * t**2), 0)
                    for c, t in zip(self.centers, self.taus)), x.new_zeros(()))

    def __call__(self, x, y):
        if self.kernel == "rbf":
            k0 = torch.exp(-self.gamma * ((x - y) ** 2).sum())
        elif self.kernel == "poly":
            k0 = (self.gamma * (x @ y) + self.coef0) ** self.degree
        elif self.kernel == "sigmoid":
            k0 = torch.tanh(self.gamma * (x @ y) + self.coef0)
        else:
            k0 = x @ y
        return torch.exp(self._L(x) + self._L(y)) * k0


class ConformalKernelSVC(ClassifierMixin, BaseEstimator):
    """Support vector classifier with the Amari–Wu conformal kernel modification.

    Fits an SVC with the base kernel ``K``, then rescales the kernel as
    ``K̃(x, y) = c(x) c(y) K(x, y)`` with ``c(x) = Σ_{i∈SV} exp(−|x − x_i|²/(2τ²))``
    over the support vectors, and refits. This magnifies the induced metric
    near the support vectors, i.e. near the decision boundary (Amari & Wu;
    Wu & Amari). ``n_refits`` repeats it, multiplying the factors.

    Parameters
    ----------
    C : float, default=1.0
    kernel : {"rbf", "poly", "sigmoid", "linear"} or callable, default="rbf"
        A callable takes ``(X, Y)`` and returns the numpy Gram matrix.
    gamma : {"scale", "auto"} or float, default="scale"
        As in :class:`sklearn.svm.SVC`; for rbf, ``σ = (2γ)^{-1/2}``.
    degree : int, default=3
    coef0 : float, default=0.0
    tau : "auto", float or list of float, default="auto"
        Bandwidth of the conformal factor. ``"auto"``: ``σ/√d`` for rbf (the
        widest bump whose volume element still peaks at the support vector);
        otherwise the median distance from a support vector to its nearest
        other support vector. A list gives one value per refit.
    n_refits : int, default=1
        Conformal refits; 0 is a plain SVC.
    class_weight, tol, decision_function_shape, break_ties
        As in :class:`sklearn.svm.SVC`.
    probability : bool, default=False
        Also fit Platt scaling, for :meth:`predict_proba`: a sigmoid on the final
        SVC's decision values, fitted on 5-fold cross-validated values of the final
        conformal kernel (:class:`sklearn.calibration.CalibratedClassifierCV` with
        ``ensemble=False``, the replacement scikit-learn gives for
        ``SVC(probability=True)``). Five more SVC fits.
    random_state : int, RandomState instance or None, default=None
        Shuffles the calibration folds of ``probability=True``.
    max_iter : int, default=-1
        Iterations of each inner libsvm fit. ``-1`` is libsvm's own cap,
        ``max(10^7, 100 n)``: a conformal refit that does not converge within it
        has a numerically degenerate kernel (too many ``n_refits`` multiply the
        factors into a huge dynamic range) and ``fit`` raises a ValueError. A
        positive value accepts unconverged fits with a ConvergenceWarning.
    max_samples_precomputed : int, default=20000
        Refuse to build larger ``n × n`` Gram matrices.
    verbose : int, default=0
        ``> 0`` shows a progress bar over the conformal refits.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    gamma_ : float
    sigma_ : float or None
        ``(2γ)^{-1/2}`` for the rbf kernel.
    tau_ : list of float
        Bandwidth of each iteration.
    centers_ : list of ndarray of shape (n_centers_t, n_features)
        Support vectors that define each iteration's factor.
    n_support_history_ : list of int
        Number of support vectors after each fit (``n_refits + 1`` entries).
    svc_ : SVC
        The final inner SVC on the precomputed conformal kernel.
    X_fit_ : ndarray of shape (n_samples_fit, n_features)
        The training samples (those of positive weight).
    log_factor_fit_ : ndarray of shape (n_samples,)
        ``L = Σ_t log c_t`` at the training points.
    support_, support_vectors_, n_support_, dual_coef_, intercept_
        Of the final fit.
    n_iter_ : ndarray
        libsvm iterations of the final fit (as ``SVC.n_iter_``).
    calibrator_ : CalibratedClassifierCV
        The Platt scaling of ``probability=True`` (absent otherwise).

    Examples
    --------
    >>> from geolearn.datasets import make_sinusoid_boundary
    >>> from geolearn.riemannian import ConformalKernelSVC
    >>> X, y = make_sinusoid_boundary(200, random_state=0)
    >>> clf = ConformalKernelSVC(gamma=2.0).fit(X, y)
    >>> clf.n_support_history_[1] < clf.n_support_history_[0]
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _expected_failed_checks = {  # noqa: RUF012
        "check_sample_weight_equivalence_on_dense_data": (
            "the conformal factor sums over the support vectors, so a repeated support vector "
            "counts once per copy and a weighted one once: the method itself tells weights from "
            "repeats (with n_refits=0 they agree to libsvm's tol, as for sklearn.svm.SVC, "
            "whose check scikit-learn also marks as failing)"
        ),
    }

    _parameter_constraints = {  # noqa: RUF012
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "kernel": [StrOptions(set(_KERNELS)), callable],
        "gamma": [StrOptions({"scale", "auto"}), Interval(numbers.Real, 0, None, closed="neither")],
        "degree": [Interval(numbers.Integral, 0, None, closed="left")],
        "coef0": [Interval(numbers.Real, None, None, closed="neither")],
        "tau": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="neither"),
                "array-like"],
        "n_refits": [Interval(numbers.Integral, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "probability": ["boolean"],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, -1, None, closed="left")],
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": ["boolean"],
        "random_state": ["random_state"],
        "max_samples_precomputed": [Interval(numbers.Real, 0, None, closed="left")],
        "verbose": ["verbose"],
    }

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", degree=3, coef0=0.0, tau="auto",
                 n_refits=1, class_weight=None, probability=False, tol=1e-3, max_iter=-1,
                 decision_function_shape="ovr", break_ties=False, random_state=None,
                 max_samples_precomputed=20000, verbose=0):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.tau = tau
        self.n_refits = n_refits
        self.class_weight = class_weight
        self.probability = probability
        self.tol = tol
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.random_state = random_state
        self.max_samples_precomputed = max_samples_precomputed
        self.verbose = verbose

    def _check_params(self, X):
        """The numeric ``gamma``, once a list ``tau`` is checked to hold one value per refit."""
        if self.gamma == "scale":
            var = X.var()
            gamma = 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        elif self.gamma == "auto":
            gamma = 1.0 / X.shape[1]
        else:
            gamma = float(self.gamma)
        if isinstance(self.tau, (str, numbers.Real)):
            return gamma
        if len(self.tau) != self.n_refits:
            raise ValueError(f"a list tau needs one value per refit (n_refits={self.n_refits}); "
                             f"got {len(self.tau)} values.")
        for t in self.tau:
            if not (isinstance(t, str) and t == "auto") and not (
                    isinstance(t, numbers.Real) and np.isfinite(t) and t > 0):
                raise ValueError(f"tau must be 'auto', a positive float or a list of them; "
                                 f"got {self.tau!r}.")
        return gamma

    def _base_kernel(self, X, Y):
        if callable(self.kernel):
            # a copy: fit and kernel_matrix rescale it in place
            return np.array(self.kernel(X, Y), dtype=np.float64)
        if self.kernel == "rbf":
            return _rbf(X, Y, self.gamma_)
        if self.kernel == "poly":
            return polynomial_kernel(X, Y, degree=self.degree, gamma=self.gamma_,
                                     coef0=self.coef0)
        if self.kernel == "sigmoid":
            return sigmoid_kernel(X, Y, gamma=self.gamma_, coef0=self.coef0)
        return linear_kernel(X, Y)

    def _auto_tau(self, centers):
        if self.kernel == "rbf":
            return self.sigma_ / math.sqrt(self.n_features_in_)
        if len(centers) < 2:
            raise ValueError("tau='auto' for a non-rbf kernel needs at least 2 support vectors; "
                             "pass a float tau.")
        sq = cdist(centers, centers, "sqeuclidean")
        np.fill_diagonal(sq, np.inf)
        return float(np.median(np.sqrt(sq.min(1))))

    def _new_svc(self, max_iter):
        return SVC(C=self.C, kernel="precomputed", class_weight=self.class_weight, tol=self.tol,
                   max_iter=max_iter, decision_function_shape=self.decision_function_shape,
                   break_ties=self.break_ties)

    def _fit_svc(self, K, y, iteration, L, sample_weight):
        """The inner SVC fitted on ``K`` within a bounded libsvm budget.

        Iteration 0 is the base kernel; ``L`` the log factors of the conformal one.
        A degenerate conformal kernel (non-finite dual coefficients, or no convergence
        within libsvm's own cap) raises a ValueError naming ``n_refits`` and the cure.
        """
        budget = _inner_budget(self.max_iter, len(K))

        def degenerate(why, unbounded=False):
            spread = 2 * (L.max() - L.min())
            also = (", or a positive max_iter to accept an unconverged fit with a "
                    "ConvergenceWarning" if unbounded else "")
            return ValueError(
                f"the conformal kernel of refit {iteration} (n_refits={self.n_refits}) is "
                f"numerically degenerate: {why} (the factors c(x)c(y) span e^{spread:.0f}); "
                f"use fewer refits (n_refits <= {iteration - 1} fitted here) or a smaller "
                f"tau{also}.")

        svc = self._new_svc(budget)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SVCConvergenceWarning)  # re-raised below, clearer
            try:
                svc.fit(K, y, sample_weight=sample_weight)
            except ValueError as exc:
                if iteration == 0:
                    raise
                if not np.isfinite(K).all():  # what scikit-learn's input check refused
                    raise ValueError(
                        f"the conformal kernel overflows float64 at refit {iteration} (max L = "
                        f"{L.max():.0f}); use fewer n_refits or a smaller tau.") from exc
                if "not finite" not in str(exc):
                    raise
                raise degenerate("libsvm's dual coefficients are not finite") from exc
        if svc.fit_status_ == 1:
            if self.max_iter == -1 and iteration > 0:
                raise degenerate(f"libsvm did not converge in {budget} iterations "
                                 "(max_iter=-1 is libsvm's own cap)", unbounded=True)
            which = "the base fit" if iteration == 0 else f"refit {iteration}"
            warn_user(f"the inner SVC of {which} "
                      f"stopped at max_iter={budget} without converging; raise max_iter, "
                      "or use fewer n_refits or a smaller tau.", ConvergenceWarning)
        return svc

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the SVC, then ``n_refits`` conformal refits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights, passed to every inner SVC fit (they rescale ``C``
            per sample, as in :class:`sklearn.svm.SVC`) and to the Platt scaling
            of ``probability=True``. Samples of weight 0 are dropped, as libsvm
            does (on a precomputed kernel its ``support_`` would index the rows it
            kept): they are never support vectors, so they do not shape the
            conformal factors either.

        Returns
        -------
        self : ConformalKernelSVC
        """
        # C order: the sums and BLAS products then run in one order whatever the layout of X
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_squares_finite(X)  # kernels of overflowing distances give NaN
        check_classification_targets(y)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
            kept = sample_weight > 0
            X, y, sample_weight = X[kept], y[kept], sample_weight[kept]
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"ConformalKernelSVC needs at least 2 classes in y; got "
                             f"{len(self.classes_)} class.")
        n = len(X)
        if n > self.max_samples_precomputed:
            raise ValueError(
                f"X has {n} samples: the precomputed Gram matrix would take "
                f"{n * n * 8 / 2**30:.1f} GiB (max_samples_precomputed="
                f"{self.max_samples_precomputed}); subsample or raise the limit.")
        self.gamma_ = self._check_params(X)
        self.sigma_ = (2 * self.gamma_) ** -0.5 if self.kernel == "rbf" else None
        K = self._base_kernel(X, X)
        L = np.zeros(n)
        svc = self._fit_svc(K, y, 0, L, sample_weight)
        taus = (self.tau if isinstance(self.tau, (list, tuple, np.ndarray))
                else [self.tau] * self.n_refits)
        self.tau_, self.centers_, self.n_support_history_ = [], [], [len(svc.support_)]
        for tau in progress_bar(taus, desc="ConformalKernelSVC", unit="refit",
                                verbose=self.verbose):
            centers = X[svc.support_]
            tau = self._auto_tau(centers) if isinstance(tau, str) else float(tau)
            self.centers_.append(centers)
            self.tau_.append(tau)
            log_c = _log_factor(X, centers, tau)[0]
            L = L + log_c
            # K_t(x, y) = c_t(x) c_t(y) K_{t-1}(x, y) = C_t(x) C_t(y) K_0(x, y), in place (the
            # previous SVC keeps no reference to its precomputed kernel)
            factor = np.exp(log_c)
            for rows in gen_batches(n, max(1, _BLOCK // n)):  # one pass, no n x n temporary
                K[rows] *= np.multiply.outer(factor[rows], factor)
            svc = self._fit_svc(K, y, len(self.tau_), L, sample_weight)
            self.n_support_history_.append(len(svc.support_))
        self.svc_ = svc
        if self.probability:
            # Platt scaling as SVC(probability=True) did, through the route scikit-learn
            # >= 1.9 gives for it (the parameter is deprecated there); the SVC is
            # pairwise, so the folds cut K's rows and columns
            smallest = np.bincount(np.unique(y, return_inverse=True)[1]).min()
            if smallest < 2:
                raise ValueError("probability=True needs at least 2 samples of every class "
                                 "(Platt scaling is fitted on cross-validated decision values).")
            folds = StratifiedKFold(min(5, smallest), shuffle=True,
                                    random_state=self.random_state)
            inner = clone(svc)
            if _routing_enabled():  # the calibrator then passes weights only where requested
                inner.set_fit_request(sample_weight=True)
            self.calibrator_ = CalibratedClassifierCV(
                inner, method="sigmoid", cv=folds, ensemble=False).fit(K, y,
                                                                       sample_weight=sample_weight)
        self.X_fit_ = X
        self.log_factor_fit_ = L
        self.support_ = svc.support_
        self.support_vectors_ = X[svc.support_]
        self.n_support_ = svc.n_support_
        self.dual_coef_ = svc.dual_coef_
        self.intercept_ = svc.intercept_
        self.n_iter_ = svc.n_iter_
        return self

    # -- kernel ------------------------------------------------------------------------------
    def _check_X(self, X):
        check_is_fitted(self)
        return check_squares_finite(validate_data(self, X, dtype=np.float64, order="C",
                                                  reset=False))

    def _log_factor_and_grad(self, X, grad=True):
        L = np.zeros(len(X))
        dL = np.zeros_like(X) if grad else None
        for centers, tau in zip(self.centers_, self.tau_):
            log_c, d_log_c = _log_factor(X, centers, tau, grad=grad)
            L += log_c
            if grad:
                dL += d_log_c
        return L, dL

    def log_conformal_factor(self, X):
        """``L(x) = Σ_t log c_t(x)``, shape (n_samples,)."""
        return self._log_factor_and_grad(self._check_X(X), grad=False)[0]

    def conformal_factor(self, X):
        """``C(x) = Π_t c_t(x) = exp(L(x))``, shape (n_samples,)."""
        return np.exp(self.log_conformal_factor(X))

    def kernel_matrix(self, X, Y=None):
        """The conformal kernel ``K̃(X, Y) = C(X) C(Y) K(X, Y)``.

        Parameters
        ----------
        X : array-like of shape (n_x, n_features)
        Y : array-like of shape (n_y, n_features), default=None (``Y = X``)

        Returns
        -------
        K : ndarray of shape (n_x, n_y)
        """
        X = self._check_X(X)
        Y = X if Y is None else self._check_X(Y)
        K = self._base_kernel(X, Y)
        K *= self.conformal_factor(X)[:, None]
        K *= self.conformal_factor(Y)
        return K

    def _test_kernel(self, X):
        X = self._check_X(X)
        L = self.log_conformal_factor(X)
        if self.n_refits and np.mean(L < -700) > 0.01:
            warn_user(f"the conformal factor underflows (L(x) < -700) at "
                      f"{np.mean(L < -700):.1%} of the points, far from every support "
                      "vector: their decision value is the intercept.", NumericalWarning)
        sup = self.svc_.support_
        K = np.zeros((len(X), len(self.X_fit_)))
        # the products of fit, C(x) K(x, s) C(s)
        K[:, sup] = (np.exp(L)[:, None] * self._base_kernel(X, self.X_fit_[sup])
                     * np.exp(self.log_factor_fit_[sup]))
        return K

    # -- predictions ---------------------------------------------------------------------------
    def decision_function(self, X):
        """Decision values of the inner SVC on the conformal kernel.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        K = self._test_kernel(X)
        return self.svc_.decision_function(K)

    def predict(self, X):
        """Class labels, shape (n_samples,)."""
        K = self._test_kernel(X)
        return self.svc_.predict(K)

    def _has_proba(self):
        return self.probability

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Platt-scaled class probabilities (needs ``probability=True``)."""
        K = self._test_kernel(X)
        return self.calibrator_.predict_proba(K)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    # -- geometry ------------------------------------------------------------------------------
    def log_volume_element(self, X):
        """Log volume element of the metric the conformal kernel induces, shape (n_samples,).

        rbf: ``d(L − log σ) + ½ log(1 + σ²|∇L|²)`` (paper H.8, all iterations);
        other built-in kernels: :class:`KernelMetric` on the torch kernel (d ≤ 50).
        """
        X = self._check_X(X)
        d = X.shape[1]
        if self.kernel == "rbf":
            L, grad = self._log_factor_and_grad(X)
            s = self.sigma_
            out = d * (L - math.log(s)) + _half_log1p_sq(s * _row_norms(grad))
            bad = ~np.isfinite(out)
            if bad.any():
                raise ValueError(f"the log volume element overflows float64 for {int(bad.sum())} "
                                 f"of {len(X)} rows (points too far from the support vectors "
                                 "for tau_); rescale X (e.g. StandardScaler).")
            return out
        if callable(self.kernel):
            raise ValueError("log_volume_element needs a built-in kernel (a numpy callable "
                             "cannot be differentiated).")
        if d > 50:
            raise ValueError(f"log_volume_element for kernel={self.kernel!r} needs d <= 50; "
                             f"got d={d}.")
        kernel = _TorchConformalKernel(self.kernel, self.gamma_, self.degree, self.coef0,
                                       self.centers_, self.tau_)
        return KernelMetric(kernel, device="cpu").log_volume(torch.as_tensor(X)).numpy()
