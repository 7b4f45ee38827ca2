"""On-manifold projected gradient descent (Mahler, Berry et al. 2024, Algorithm 1)."""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils import Bunch, check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_image_shape, fitted_on_success, to_numpy, to_tensor, warn_user
from ..exceptions import GeolearnWarning, NumericalWarning
from ..models import as_model, fit_or_use
from ..models._internal import fit_router, route_fit_params
from ._cidm import CIDM
from ._sec import SECVectorFields

_CIDM_DEFAULTS = {"n_eigenpairs": 80, "n_components": 19}
_SEC_DEFAULTS = {"n_frame": 16}
#: The least class size: a class manifold needs a neighbourhood graph (CIDM's own minimum
#: is n_eigenpairs + 1; below 3 points a manifold is not defined)
_MIN_CLASS_SIZE = 3


class _ClassManifold:
    """One class manifold: its CIDM, optional SEC fields, and the tangent rule."""

    def __init__(self, cidm, sec, tangent, dim, n_fields, n_iter):
        self.cidm, self.sec, self.tangent = cidm, sec, tangent
        self.dim, self.n_fields, self.n_iter = dim, n_fields, n_iter

    def project(self, X):
        return self.cidm._project(X, self.n_iter)

    def tangent_basis(self, X):
        """Bases (m, n, d) and their ranks."""
        if self.tangent == "sec":
            return self.sec._tangent_basis(X, self.dim, self.n_fields)
        return self.cidm._tangent_basis(X, self.dim, method=self.tangent)


class OnManifoldPGD(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Adversarial examples that stay on the manifold of their class.

    For each source class, a :class:`CIDM` learns the class manifold. From the
    projection of ``x0`` onto it, each step moves along the classifier's loss
    gradient projected on the tangent space there, then Nyström-projects back
    onto the manifold, until the prediction changes (Algorithm 1 of the paper).
    The result is a valid-looking member of its class whose intrinsic
    coordinates can explain the misclassification.

    Parameters
    ----------
    estimator : torch.nn.Module, skorch net or MLPClassifier
        The classifier under attack, seen through
        :func:`geolearn.models.as_model` (it must have gradients). A prefit
        model (a torch module, a fitted net or classifier, or one wrapped in
        ``sklearn.frozen.FrozenEstimator``) is attacked as it is; an unfitted
        one is cloned and fitted on ``X, y`` by :meth:`fit` (see
        :func:`geolearn.models.fit_or_use`). Its output is logits (or
        probabilities with ``loss="nll"``); class labels are output indices
        unless the estimator has ``classes_``.
    step_size : "auto", float or sequence of float, default="auto"
        Step lengths tried in increasing order; per sample the first that
        succeeds is kept. "auto" is ``median(rho_c) * 2^j``, j = 0..5.
    n_steps : int, default=100
        Steps per step size.
    normalize_gradient : bool, default=True
        Normalise the projected gradient to unit length, so ``step_size`` is in
        data units (the paper used raw gradients with a huge step).
    direction : {"tangent", "pullback"}, default="tangent"
        "tangent": the loss gradient projected on the tangent space at the
        start. "pullback": the gradient of ``loss(C(projection(x)))`` through
        the differentiable projection.
    tangent : {"sec", "jacobian", "local_pca"}, default="sec"
        Tangent-space estimate: SEC vector fields (the paper), the projection
        Jacobian, or PCA of 20 neighbours.
    intrinsic_dim : int, default=None
        Manifold dimension d; None uses each class CIDM's estimate.
    n_vector_fields : int, default=None
        SEC fields stacked for the tangent basis; None gives d.
    update_tangent : bool, default=False
        Recompute the tangent basis at every step (the paper keeps it fixed).
    project_start : bool, default=True
        Start from the projection of ``x0`` onto the class manifold.
    n_projection_iter : int, default=1
        Nyström projections after each step.
    cidm_params : dict, default=None
        Parameters of the per-class :class:`CIDM`; default
        ``{"n_eigenpairs": 80, "n_components": 19}`` (so the projection uses 20
        eigenfunctions and SEC 80); ``n_components`` defaults to
        ``min(19, n_eigenpairs - 1)``.
    sec_params : dict, default=None
        Parameters of :class:`SECVectorFields`; default ``{"n_frame": 16}``.
    local_patch : int, default=None
        Fit the manifold on the ``local_patch`` nearest class points of each
        ``x0`` instead of the whole class (the paper's view-angle patch).
    image_shape : tuple, default=None
        ``(C, H, W)`` used to fold flat rows for the model.
    loss : {"cross_entropy", "nll"}, default="cross_entropy"
        "nll" takes the log of the model output (nets ending in softmax).
    clip : tuple (lo, hi), default=None
        Box applied after each projection.
    batch_size : int, default=64
        Samples attacked together.
    device : str, default="auto"
        Checked against the model's device (a user's model is never moved).
    random_state : int, RandomState instance or None, default=None
        Seeds the CIDM eigensolvers.

    Attributes
    ----------
    classes_ : ndarray
    manifolds_ : dict
        Class -> fitted :class:`CIDM`.
    sec_ : dict
        Class -> fitted :class:`SECVectorFields` or None.
    intrinsic_dim_ : dict
        Class -> int.
    step_sizes_ : dict
        Class -> tuple of step sizes.
    n_features_in_ : int
    estimator_ : object
        The model attacked: ``estimator`` itself when prefit, else its fitted clone.
    model_ : ModelAdapter
        ``estimator_`` seen through :func:`geolearn.models.as_model`.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import OnManifoldPGD
    >>> X = make_circle_points(300, grid=True)
    >>> y = np.zeros(300, dtype=int)  # the circle is the manifold of class 0
    >>> net = torch.nn.Linear(2, 2)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
    ...     _ = net.bias.copy_(torch.tensor([0.5, -0.5]))
    >>> attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1,
    ...                        cidm_params={"n_eigenpairs": 20}, random_state=0).fit(X, y)
    >>> res = attack.generate(np.array([[0.0, 1.0]]), y=[0])  # the net cuts at x0 = 0.5
    >>> bool(res.success[0]), bool(abs(np.linalg.norm(res.X_adv[0]) - 1) < 0.05)
    (True, True)
    """

    _SMALL_CLASS = ("the check's data have a class of 5 samples (3 with one feature); a class "
                    "manifold with cidm n_eigenpairs=5 needs 6 (a documented ValueError)")
    _expected_failed_checks = {
        **dict.fromkeys(["check_n_features_in_after_fitting", "check_estimators_nan_inf",
                         "check_fit2d_1feature"], _SMALL_CLASS),
        "check_estimators_overwrite_params": (
            "joblib.hash of a torch.nn.Module differs from that of its deepcopy (tensor "
            "pickling), so the check fails before fit runs; a unit test checks that fit leaves "
            "the model's parameters and train/eval modes unchanged"),
    }

    _parameter_constraints = {
        "estimator": "no_validation",
        "step_size": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither"),
                      "array-like"],
        "n_steps": [Interval(Integral, 1, None, closed="left")],
        "normalize_gradient": ["boolean"],
        "direction": [StrOptions({"tangent", "pullback"})],
        "tangent": [StrOptions({"sec", "jacobian", "local_pca"})],
        "intrinsic_dim": [Interval(Integral, 1, None, closed="left"), None],
        "n_vector_fields": [Interval(Integral, 1, None, closed="left"), None],
        "update_tangent": ["boolean"],
        "project_start": ["boolean"],
        "n_projection_iter": [Interval(Integral, 1, None, closed="left")],
        "cidm_params": [dict, None],
        "sec_params": [dict, None],
        "local_patch": [Interval(Integral, 2, None, closed="left"), None],
        "image_shape": ["array-like", None],
        "loss": [StrOptions({"cross_entropy", "nll"})],
        "clip": ["array-like", None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": "no_validation",
        "random_state": ["random_state"],
    }

    def __init__(self, estimator, step_size="auto", n_steps=100, normalize_gradient=True,
                 direction="tangent", tangent="sec", intrinsic_dim=None, n_vector_fields=None,
                 update_tangent=False, project_start=True, n_projection_iter=1,
                 cidm_params=None, sec_params=None, local_patch=None, image_shape=None,
                 loss="cross_entropy", clip=None, batch_size=64, device="auto",
                 random_state=None):
        self.estimator = estimator
        self.step_size = step_size
        self.n_steps = n_steps
        self.normalize_gradient = normalize_gradient
        self.direction = direction
        self.tangent = tangent
        self.intrinsic_dim = intrinsic_dim
        self.n_vector_fields = n_vector_fields
        self.update_tangent = update_tangent
        self.project_start = project_start
        self.n_projection_iter = n_projection_iter
        self.cidm_params = cidm_params
        self.sec_params = sec_params
        self.local_patch = local_patch
        self.image_shape = image_shape
        self.loss = loss
        self.clip = clip
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _validate_X(self, X, reset):
        shape = getattr(X, "shape", None)
        if shape is None:
            X = np.asarray(X)
            shape = X.shape
        if len(shape) >= 3:
            if self.image_shape is not None and tuple(shape[1:]) != tuple(
                    check_image_shape(self.image_shape)[-(len(shape) - 1):]):
                raise ValueError(f"X holds images of shape {tuple(shape[1:])} but image_shape="
                                 f"{self.image_shape!r}.")
            X = np.asarray(X).reshape(shape[0], -1)
        elif len(shape) != 2:
            raise ValueError(f"X must be rows (m, n) or images (m, C, H, W); got an array with "
                             f"{len(shape)} dimension(s). Reshape your data: X.reshape(1, -1) "
                             "for one sample.")
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        if reset and self.image_shape is not None:
            shape = check_image_shape(self.image_shape)
            if int(np.prod(shape)) != X.shape[1]:
                raise ValueError(f"image_shape={self.image_shape!r} holds {int(np.prod(shape))} "
                                 f"values but X has {X.shape[1]} features per row.")
        return X

    def _class_index(self, labels):
        """Output indices of the model for class labels."""
        model_classes = self._model_classes()
        if model_classes is not None:
            return np.searchsorted(model_classes, labels)
        return np.asarray(labels).astype(int)

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the estimator's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, estimator=self.estimator)

    def _model_classes(self):
        """The fitted model's ``classes_`` (None: classes are output indices)."""
        classes = getattr(self.estimator_, "classes_", None)
        return None if classes is None else np.asarray(classes)

    # ------------------------------------------------------------------ fit
    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y, intrinsic_params=None, **fit_params):
        """Learn one manifold (CIDM, and SEC fields for ``tangent="sec"``) per class.

        An unfitted ``estimator`` is first cloned and fitted on ``X, y`` (a prefit
        one is used as it is; see :func:`geolearn.models.fit_or_use`).

        Parameters
        ----------
        X : array-like of shape (N, n) or (N, C, H, W)
        y : array-like of shape (N,)
            Class labels.
        intrinsic_params : array-like of shape (N,) or (N, q), default=None
            Known intrinsic coordinates of the training points (periodic ones as
            cos/sin pairs); ``generate`` then reports them for the adversaries.
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the estimator's ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : OnManifoldPGD
        """
        X, y = self._validate_X(X, reset=True), np.asarray(y)
        if y.ndim != 1 or len(y) != len(X):
            raise ValueError(f"y must have shape ({len(X)},); got {y.shape}.")
        check_classification_targets(y)
        if self.intrinsic_dim is not None and self.intrinsic_dim > X.shape[1]:
            raise ValueError(f"intrinsic_dim={self.intrinsic_dim} exceeds the number of "
                             f"features {X.shape[1]}.")
        intrinsic_params = self._check_intrinsic_params(intrinsic_params, len(X))
        routed = route_fit_params(self, fit_params)
        self.estimator_ = fit_or_use(self.estimator, self._fold(X.astype(np.float32)), y,
                                     **routed["estimator"])
        self.model_ = as_model(self.estimator_, device=self.device)
        self.model_.require_gradients("OnManifoldPGD")
        self._cidm_kw = self._cidm_params()
        self._sec_kw = {**_SEC_DEFAULTS, **(self.sec_params or {})}
        self.classes_ = np.unique(y)
        self.manifolds_, self.sec_, self.intrinsic_dim_, self.step_sizes_ = {}, {}, {}, {}
        self._intrinsic = {}
        for c in self.classes_:
            self._fit_class(c, X[y == c],
                            None if intrinsic_params is None else intrinsic_params[y == c])
        return self

    @staticmethod
    def _check_intrinsic_params(intrinsic_params, n):
        if intrinsic_params is None:
            return None
        intrinsic_params = check_array(intrinsic_params, ensure_2d=False, dtype=np.float64)
        if len(intrinsic_params) != n:
            raise ValueError(f"intrinsic_params has {len(intrinsic_params)} rows but X has {n}.")
        return intrinsic_params.reshape(n, -1)

    def _cidm_params(self):
        """The per-class CIDM's parameters: the defaults, ``cidm_params`` and the seed."""
        cidm_kw = {**_CIDM_DEFAULTS, **(self.cidm_params or {})}
        if "n_components" not in (self.cidm_params or {}):
            cidm_kw["n_components"] = min(_CIDM_DEFAULTS["n_components"],
                                          cidm_kw["n_eigenpairs"] - 1)
        cidm_kw.setdefault("random_state", self.random_state)
        return cidm_kw

    def _fit_class(self, c, Xc, intrinsic):
        """The manifold of class ``c``: its CIDM, SEC fields, dimension and step sizes."""
        need = max(_MIN_CLASS_SIZE, self._cidm_kw["n_eigenpairs"] + 1)
        if len(Xc) < need:
            raise ValueError(f"class {c} has {len(Xc)} samples; at least {need} are "
                             f"required (cidm n_eigenpairs + 1, and {_MIN_CLASS_SIZE}).")
        cidm = CIDM(**self._cidm_kw).fit(Xc)
        self.manifolds_[c] = cidm
        self.sec_[c] = (SECVectorFields.from_cidm(cidm, **self._sec_kw)
                        if self.tangent == "sec" and self.local_patch is None else None)
        self.intrinsic_dim_[c] = (self.intrinsic_dim if self.intrinsic_dim is not None
                                  else cidm.intrinsic_dim_)
        self.step_sizes_[c] = self._resolve_steps(np.median(cidm.rho_))
        self._intrinsic[c] = intrinsic

    def _resolve_steps(self, rho):
        if isinstance(self.step_size, str):
            return tuple(float(rho * 2.0**j) for j in range(6))
        steps = np.atleast_1d(np.asarray(self.step_size, dtype=float))
        if steps.ndim != 1 or not np.all(steps > 0) or np.any(np.diff(steps) <= 0):
            raise ValueError("step_size must be 'auto', a float > 0 or an increasing sequence of "
                             f"floats > 0; got {self.step_size!r}.")
        return tuple(steps.tolist())

    # ------------------------------------------------------------------ model plumbing
    def _fold(self, x):
        if self.image_shape is None:
            return x
        return x.reshape(len(x), *check_image_shape(self.image_shape))

    def _predict_index(self, X):
        out = self.model_.forward(self._fold(X.astype(np.float32)), batch_size=self.batch_size)
        return np.argmax(out, axis=1)

    def _loss_gradient(self, X, target):
        """Input gradients of the per-sample loss, float64 (the model is frozen meanwhile)."""
        m = self.model_
        x = m.to_tensor(self._fold(X))
        t = to_tensor(target, dtype=torch.long)
        grad = m.input_gradient(x, self._loss, targets=t)
        return to_numpy(grad).reshape(len(X), -1).astype(np.float64)

    def _loss(self, out, target):
        """The summed negative log-likelihood of ``target`` under the model's output."""
        logp = (torch.log_softmax(out, dim=1) if self.loss == "cross_entropy"
                else torch.log(out.clamp_min(1e-30)))
        return torch.nn.functional.nll_loss(logp, target, reduction="sum")

    # ------------------------------------------------------------------ attack
    def _manifold_for(self, c, x0):
        """The class manifold, or one fitted on the local patch around ``x0``."""
        d = self.intrinsic_dim_[c]
        cidm = self.manifolds_[c]
        if self.local_patch is None:
            return _ClassManifold(cidm, self.sec_[c], self.tangent, d, self.n_vector_fields,
                                  self.n_projection_iter), None
        m = min(self.local_patch, cidm.n_samples_fit_)
        idx = cidm.nn_.kneighbors(x0[None], m)[1][0]
        local = CIDM(**self._cidm_kw).fit(cidm.X_fit_[idx])
        sec = (SECVectorFields.from_cidm(local, **self._sec_kw) if self.tangent == "sec"
               else None)
        return _ClassManifold(local, sec, self.tangent, d, self.n_vector_fields,
                              self.n_projection_iter), idx

    def _clip(self, x):
        if self.clip is None:
            return x
        lo, hi = self.clip
        return np.clip(x, lo, hi)

    def generate(self, X, y=None):
        """Run the attack from each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (m, n) or (m, C, H, W)
        y : array-like of shape (m,), default=None
            Source classes; None uses the model's predictions.

        Returns
        -------
        result : sklearn.utils.Bunch
            ``X_adv`` (m, n); ``success`` (bool); ``n_steps``; ``step_size``
            (the step that succeeded, else the largest tried); ``y_pred`` (the
            model's class at ``X_adv``); ``distance`` ``||X_adv - x0||``;
            ``manifold_residual`` ``||X_adv - projection(X_adv)||``;
            ``tangent_rank``; ``tangent_fraction`` ``||P g|| / ||g||`` at the
            first step (nan when no step was taken); ``intrinsic`` (m, q),
            the Nyström-extended intrinsic parameters at ``X_adv``, or None.
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        y, known = self._source_classes(X, y)
        out = self._empty_result(X, y)
        for c in np.unique(y[known]):
            rows = np.flatnonzero(y == c)
            step = self.batch_size if self.local_patch is None else 1
            for i in range(0, len(rows), step):
                self._attack_chunk(X, c, rows[i:i + step], out)
        dims = np.array([self.intrinsic_dim_.get(c, 0) for c in y])
        if np.any(out.tangent_rank[known] < dims[known]):
            warn_user("some tangent bases are rank-deficient; see result.tangent_rank.", NumericalWarning)
        out.y_pred = self._predict_label(out.X_adv)
        out.distance = np.linalg.norm(out.X_adv - X, axis=1)
        return out

    def _predict_label(self, X):
        """The model's class labels (output indices without ``classes_``)."""
        idx = self._predict_index(X)
        model_classes = self._model_classes()
        return idx if model_classes is None else model_classes[idx]

    def _source_classes(self, X, y):
        """The source classes (``y``, or the model's predictions) and which have a manifold."""
        given = y is not None
        y = np.asarray(y) if given else self._predict_label(X)
        if y.shape != (len(X),):
            raise ValueError(f"y must have shape ({len(X)},); got {y.shape}.")
        known = np.isin(y, self.classes_)
        if given and not known.all():
            raise ValueError(f"y holds classes {np.unique(y[~known]).tolist()} that were not "
                             f"seen in fit (classes_ = {self.classes_.tolist()}).")
        if not known.all():
            warn_user(f"{int((~known).sum())} samples are predicted as classes without a "
                      "fitted manifold; they are returned unchanged with success=False.", GeolearnWarning)
        return y, known

    def _empty_result(self, X, y):
        """The result of :meth:`generate` before any attack: every sample unchanged."""
        m = len(X)
        out = Bunch(X_adv=X.copy(), success=np.zeros(m, bool), n_steps=np.zeros(m, int),
                    step_size=np.full(m, np.nan), y_pred=y.copy(), distance=np.zeros(m),
                    manifold_residual=np.zeros(m), tangent_rank=np.zeros(m, int),
                    tangent_fraction=np.full(m, np.nan), intrinsic=None)
        first = self._intrinsic[self.classes_[0]]
        if first is not None:
            out.intrinsic = np.zeros((m, first.shape[1]))
        return out

    def _attack_chunk(self, X, c, sel, out):
        """Attack the rows ``sel`` of source class ``c`` and report them in ``out``."""
        manifold, patch = self._manifold_for(c, X[sel[0]])
        self._attack(X[sel], c, manifold, out, sel)
        if out.intrinsic is not None:
            F = self._intrinsic[c] if patch is None else self._intrinsic[c][patch]
            out.intrinsic[sel] = manifold.cidm.extend(F, out.X_adv[sel])

    def _attack(self, X0, c, manifold, out, sel):
        """Algorithm 1 for one batch of one source class, over the step-size search."""
        target = self._class_index(np.full(len(X0), c))
        start = self._clip(manifold.project(X0)) if self.project_start else X0.copy()
        basis, rank = manifold.tangent_basis(start)
        out.tangent_rank[sel] = rank
        floor = 1e-6 * np.median(manifold.cidm.rho_)
        done = self._predict_index(start) != target  # already misclassified: 0 steps
        x_adv, n_steps = start.copy(), np.zeros(len(X0), int)
        alpha_used = np.full(len(X0), np.nan)
        fraction = np.full(len(X0), np.nan)
        for alpha in self.step_sizes_[c]:
            todo = np.flatnonzero(~done)
            if todo.size == 0:
                break
            x, B, t = start[todo].copy(), basis[todo], target[todo]
            running = np.ones(len(todo), bool)
            steps = np.zeros(len(todo), int)
            for _ in range(self.n_steps):
                r = np.flatnonzero(running)
                if r.size == 0:
                    break
                if self.update_tangent and steps.any():
                    B[r] = manifold.tangent_basis(x[r])[0]
                g, Pg = self._direction(manifold, x[r], B[r], t[r])
                norm_g, norm_pg = np.linalg.norm(g, axis=1), np.linalg.norm(Pg, axis=1)
                first = (steps[r] == 0) & np.isnan(fraction[todo[r]])
                fraction[todo[r[first]]] = (norm_pg / np.maximum(norm_g, 1e-300))[first]
                vanished = norm_pg <= 1e-12 * norm_g
                if self.normalize_gradient:
                    Pg = Pg / np.where(vanished, 1.0, norm_pg)[:, None]
                x_new = self._clip(manifold.project(x[r] + alpha * Pg))
                moved = np.linalg.norm(x_new - x[r], axis=1)
                stalled = vanished | (moved < np.maximum(1e-6 * np.linalg.norm(x[r], axis=1),
                                                         floor))
                x[r] = np.where(vanished[:, None], x[r], x_new)
                steps[r] += ~vanished
                flipped = self._predict_index(x[r]) != t[r]
                running[r] = ~(flipped | stalled)
                win = r[flipped]
                done[todo[win]] = True
                alpha_used[todo[win]] = alpha
            # successes keep their first step size; failures keep the latest attempt
            x_adv[todo], n_steps[todo] = x, steps
            alpha_used[todo[~done[todo]]] = alpha
        out.X_adv[sel] = x_adv
        out.success[sel] = done
        out.n_steps[sel] = n_steps
        out.step_size[sel] = alpha_used
        out.tangent_fraction[sel] = fraction
        out.manifold_residual[sel] = np.linalg.norm(x_adv - manifold.project(x_adv), axis=1)

    def _direction(self, manifold, x, B, target):
        """The loss gradient and the ascent direction of the chosen kind."""
        if self.direction == "pullback":
            p = manifold.project(x)
            g = self._loss_gradient(p, target)
            J = manifold.cidm.projection_jacobian(x)
            return g, np.einsum("mab,ma->mb", J, g)
        g = self._loss_gradient(x, target)
        return g, np.einsum("mnd,md->mn", B, np.einsum("mnd,mn->md", B, g))

    def transform(self, X):
        """Adversarial examples from ``X``, with the model's predictions as source classes.

        Returns
        -------
        X_adv : ndarray of shape (m, n)
        """
        return self.generate(X).X_adv

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # float64 only: steps are projected onto CIDM tangent spaces, computed in float64
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def score(self, X, y=None):
        """Attack success rate on ``X`` (source classes ``y`` or the model's predictions)."""
        return float(np.mean(self.generate(X, y).success))
