"""RiemannianFeatureGeometry: the geometry a feature map induces, as a scikit-learn transformer."""

import functools
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data
from torch import nn

from .._utils import (
    check_choice,
    check_memory,
    check_scalar_param,
    fitted_on_success,
    resolve_device,
    to_numpy,
    to_tensor,
    warn_user,
)
from ..exceptions import NumericalWarning
from ..models import as_model, fit_or_use, frozen
from ..models._internal import fit_router, is_prefit, route_fit_params
from ._kernels import KERNELS, KernelMetric, make_kernel
from ._metrics import CURVATURE_METHODS, PullbackMetric, check_scale, scale_value
from ._slices import geometry_slice, grid_points, path_points, plane_points

QUANTITIES = ("log_volume", "rank", "ricci_scalar", "log_metric_eigvals")
NONSMOOTH = (nn.ReLU, nn.LeakyReLU, nn.Hardtanh, nn.ReLU6, nn.Hardswish, nn.Hardsigmoid)
_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def _flat_map(F, image_shape):
    """``(N, d) -> (N, m)`` through a batched map ``F`` on ``(N, *image_shape)``."""

    def phi(X):
        return F(X.reshape(len(X), *image_shape)).reshape(len(X), -1)

    return phi


def _frozen_model(method):
    """Run ``method`` with the feature map's model :func:`~geolearn.models.frozen`.

    Eval mode and no parameter gradients for the whole call, every submodule
    restored after: the geometry is that of the network at inference, whatever
    mode the user's module is in, and it is never copied to be frozen. (Inside
    ``torch.func`` transforms a module cannot be frozen, hence once per call.)
    """

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        model = getattr(self, "_model", None)
        with frozen(None if model is None else model.module):
            return method(self, *args, **kwargs)

    return run


def _is_network(model):
    """Whether the model is a network (submodules or parameters), not a plain function."""
    return bool(model.layer_names) or any(True for _ in model.module.parameters())


class RiemannianFeatureGeometry(TransformerMixin, BaseEstimator):
    """Pullback metric, log volume element and curvature of a feature map, per sample.

    A differentiable feature map ``Φ: R^d -> R^m`` (a layer of a torch/skorch
    network, a converted scikit-learn MLP, or a kernel's implicit map) pulls
    the Euclidean metric back to input space: ``g(x) = s·J(x)ᵀJ(x)``. The log
    volume element ``½ log det g`` measures how much the map magnifies areas
    near ``x``; training magnifies them along decision boundaries (Zavatone-Veth
    et al.). As a transformer it outputs the chosen ``quantities`` per sample.

    Parameters
    ----------
    feature_map : torch.nn.Module, skorch net, MLP or callable, default=None
        The map (exactly one of ``feature_map`` and ``kernel``), any differentiable
        model :func:`geolearn.models.as_model` accepts. A prefit model (a torch
        module, a fitted skorch net or MLP, a ``FrozenEstimator``) is used as it
        is; an unfitted scikit-learn or skorch estimator is fitted on ``(X, y)``
        by :meth:`fit` (:func:`geolearn.models.fit_or_use`). A plain callable
        takes a ``(N, *image_shape)`` tensor of ``dtype`` and treats samples
        independently. The model is evaluated in eval mode with no parameter
        gradients (:func:`geolearn.models.frozen`); a module of another dtype
        than ``dtype`` (or on another ``device``) is copied once, never cast.
    kernel : str or callable, default=None
        ``"rbf"``, ``"mahalanobis_rbf"``, ``"poly"``, ``"linear"``, ``"erf_nngp"``
        with ``kernel_params``, or a torch callable ``(x, y) -> scalar``.
    kernel_params : dict, default=None
    layer : None, int, str or callable, default=None
        For modules: ``None`` (the whole forward pass), an index ``k`` of an
        ``nn.Sequential`` (``module[:k+1]``), a dotted submodule name (its
        output), the name of a module method (e.g. ``"features"``), or
        ``callable(module, x) -> features``.
    image_shape : tuple of int, default=None
        Shape of one sample when ``X`` is flat (e.g. ``(1, 8, 8)``).
    scale : {"width", "none"} or float, default="width"
        ``s = 1/m`` (the paper's convention), ``1``, or the value.
    quantities : tuple of str, default=("log_volume",)
        Columns of :meth:`transform`: ``"log_volume"``, ``"rank"``,
        ``"ricci_scalar"``, ``"log_metric_eigvals"`` (``d`` columns, descending).
    jacobian : {"auto", "fwd", "rev", "fd"}, default="auto"
    volume_method : {"svd", "cholesky"}, default="svd"
    rank : int, default=None
        Fixed number of singular values in the (pseudo) log volume.
    rtol : float, default=None
        Relative threshold of the numerical rank (default ``max(m, d)·eps``).
    curvature_method : str, default="auto"
        ``"auto"``, ``"gauss"``, ``"kernel_gauss"``, ``"christoffel"`` or ``"hessian_metric"``
        (see :meth:`PullbackMetric.ricci_scalar`).
    max_curvature_dim : int, default=10
        Curvature is refused above this input dimension (cost ``O(m d³)``).
    max_condition : float, default=1e12
        Curvature is NaN (with a warning) where ``cond(g)`` exceeds it.
    allow_nonsmooth : bool, default=False
        Allow curvature through ReLU-like activations (it is 0 almost everywhere).
    batch_size : int, default=256
    max_memory : int, default=2**30
        Bytes for one chunk of points: their Jacobians and the autodiff
        intermediates behind them (estimated per point, see
        :class:`PullbackMetric`), or their Hessians. Volumes and eigenvalues are
        reduced chunk by chunk, so the peak memory stays near this bound.
    dtype : {"float64", "float32"}, default="float64"
    device : str, torch.device or None, default="auto"
        ``"auto"`` picks CUDA when available, else the CPU (a module elsewhere is
        copied there once); ``None`` keeps a module where it lives (CPU for kernels).
    fd_step : float, default=None
        Step of ``jacobian="fd"``.
    verbose : int, default=0
        ``> 0`` shows a progress bar over the chunks of points of each computation.

    Attributes
    ----------
    n_features_in_ : int
        Input dimension ``d`` (flattened).
    image_shape_ : tuple of int
    n_features_map_ : int
        Output dimension ``m`` of the feature map (for kernels: ``d``).
    feature_map_ : callable
        The resolved ``(N, d) -> (N, m)`` torch map (None for kernels). The
        methods evaluate it with the module frozen; evaluating it yourself, wrap
        the call in :func:`geolearn.models.frozen` if the module has dropout or
        batch norm.
    engine_ : PullbackMetric or KernelMetric
    estimator_ : estimator
        The fitted clone of an unfitted ``feature_map`` (only when :meth:`fit`
        fitted one).
    device_ : torch.device
    dtype_ : torch.dtype
    scale_ : float
        The numeric ``s``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import RiemannianFeatureGeometry
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 50), torch.nn.Sigmoid())
    >>> X = torch.rand(10, 2).numpy()
    >>> geo = RiemannianFeatureGeometry(net, quantities=("log_volume", "ricci_scalar")).fit(X)
    >>> geo.transform(X).shape
    (10, 2)
    >>> geo.along_path(X[0], X[1], n_steps=8)["log_volume"].shape
    (8,)
    """

    _parameter_constraints = {  # noqa: RUF012
        "feature_map": "no_validation",  # any model as_model reads, or None
        "kernel": [StrOptions(set(KERNELS)), callable, None],
        "kernel_params": [dict, None],
        "layer": "no_validation",  # a layer name or index the model resolves, or None
        "image_shape": ["array-like", None],
        "scale": [StrOptions({"width", "none"}), Interval(numbers.Real, 0, None, closed="neither")],
        "quantities": [StrOptions(set(QUANTITIES)), "array-like"],
        "jacobian": [StrOptions({"auto", "fwd", "rev", "fd"})],
        "volume_method": [StrOptions({"svd", "cholesky"})],
        "rank": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "rtol": [Interval(numbers.Real, 0, 1, closed="left"), None],
        "curvature_method": [StrOptions(set(CURVATURE_METHODS))],
        "max_curvature_dim": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_condition": [Interval(numbers.Real, 1, None, closed="left")],  # a condition number
        "allow_nonsmooth": ["boolean"],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_memory": [Interval(numbers.Integral, 1, None, closed="left")],
        "dtype": [StrOptions(set(_DTYPES)), Options(torch.dtype, set(_DTYPES.values()))],
        "device": "no_validation",
        "fd_step": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
    }

    def __init__(self, feature_map=None, kernel=None, kernel_params=None, layer=None,
                 image_shape=None, scale="width", quantities=("log_volume",), jacobian="auto",
                 volume_method="svd", rank=None, rtol=None, curvature_method="auto",
                 max_curvature_dim=10, max_condition=1e12, allow_nonsmooth=False,
                 batch_size=256, max_memory=2**30, dtype="float64", device="auto", fd_step=None,
                 verbose=0):
        self.feature_map = feature_map
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.layer = layer
        self.image_shape = image_shape
        self.scale = scale
        self.quantities = quantities
        self.jacobian = jacobian
        self.volume_method = volume_method
        self.rank = rank
        self.rtol = rtol
        self.curvature_method = curvature_method
        self.max_curvature_dim = max_curvature_dim
        self.max_condition = max_condition
        self.allow_nonsmooth = allow_nonsmooth
        self.batch_size = batch_size
        self.max_memory = max_memory
        self.dtype = dtype
        self.device = device
        self.fd_step = fd_step
        self.verbose = verbose

    # -- validation --------------------------------------------------------------------------
    def _quantity_names(self):
        """``quantities`` as a tuple of names (a single name is one column)."""
        quantities = (self.quantities,) if isinstance(self.quantities, str) else self.quantities
        return tuple(quantities)

    def _check_params(self):
        """What the constraints cannot say: one map, known quantities, a finite scale."""
        if (self.feature_map is None) == (self.kernel is None):
            raise ValueError("pass exactly one of feature_map and kernel; got "
                             f"{'both' if self.feature_map is not None else 'neither'}.")
        check_scale(self.scale)
        quantities = self._quantity_names()
        if not quantities or any(q not in QUANTITIES for q in quantities):
            raise ValueError(f"quantities must be a non-empty tuple of {QUANTITIES}; "
                             f"got {self.quantities!r}.")

    def _check_X(self, X, *, reset, name="X"):
        frame = X if hasattr(X, "columns") else None  # validate_data records its names
        X = X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else X
        X = check_array(X, dtype=np.float64, allow_nd=True, input_name=name)
        if reset:
            if X.ndim > 2:
                if self.image_shape is not None and tuple(self.image_shape) != X.shape[1:]:
                    raise ValueError(f"{name} holds samples of shape {X.shape[1:]} but "
                                     f"image_shape={self.image_shape!r}.")
                self.image_shape_ = tuple(X.shape[1:])
            elif self.image_shape is not None:
                shape = tuple(int(s) for s in self.image_shape)
                if int(np.prod(shape)) != X.shape[1]:
                    raise ValueError(f"{name} has {X.shape[1]} features, expected "
                                     f"{int(np.prod(shape))} = "
                                     f"prod(image_shape={self.image_shape!r}).")
                self.image_shape_ = shape
            else:
                self.image_shape_ = (X.shape[1],)
        flat = X.reshape(len(X), -1)
        if not reset and flat.shape[1] != self.n_features_in_:
            raise ValueError(
                f"{name} has {flat.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input = "
                f"prod(image_shape={self.image_shape_}).")
        return validate_data(self, flat if frame is None else frame, reset=reset,
                             dtype=np.float64)

    def _check_point(self, x, name):
        x = np.asarray(x.detach().cpu() if isinstance(x, torch.Tensor) else x, dtype=np.float64)
        x = x.reshape(-1)
        if x.size != self.n_features_in_:
            raise ValueError(f"{name} has {x.size} values, expected {self.n_features_in_}.")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or infinity.")
        return x

    # -- fitting -----------------------------------------------------------------------------
    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)  # an unfitted feature_map is fitted here
    def fit(self, X, y=None, **fit_params):
        """Validate ``X``, resolve the feature map (fitting it when it is unfitted).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples,) + image_shape
        y : array-like of shape (n_samples,), default=None
            Only used to fit an unfitted ``feature_map``.
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the feature map's ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : RiemannianFeatureGeometry
        """
        self._check_params()
        routed = route_fit_params(self, fit_params, names=("feature_map",))
        Xf = self._check_X(X, reset=True)
        self.__dict__.pop("estimator_", None)  # from an earlier fit on an unfitted skorch net
        self.dtype_ = _DTYPES.get(self.dtype, self.dtype)
        self._cache = {}
        self._model = None
        self._kernel = None
        if self.kernel is not None:
            self._kernel = make_kernel(self.kernel, self.kernel_params)
            self.device_ = resolve_device("cpu" if self.device is None else self.device)
            self.n_features_map_ = self.n_features_in_
            self.scale_ = 1.0
            self.engine_.check_smooth(torch.as_tensor(Xf[0]))
            return self
        self._model = self._resolve_model(X, y, routed["feature_map"])
        self._check_map(Xf)
        return self

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the feature map's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, feature_map=self.feature_map)

    def _resolve_model(self, X, y, fit_params):
        """The feature map's :class:`~geolearn.models.ModelAdapter`, in ``dtype_`` on ``device_``.

        One :func:`~geolearn.models.as_model` call per fit. An unfitted estimator
        is fitted on ``(X, y)`` by :func:`~geolearn.models.fit_or_use` (the fitting
        policy of every geolearn estimator) and kept as ``estimator_``.
        """
        fm = self.feature_map
        if hasattr(fm, "fit") and not is_prefit(fm):
            if y is None:
                raise ValueError(f"feature_map is an unfitted {type(fm).__name__}: fit needs y to "
                                 "fit it on (X, y), or pass a fitted model.")
            X = np.asarray(X, dtype=np.float32) if self.dtype_ == torch.float32 else X
            fm = self.estimator_ = fit_or_use(fm, X, y, **fit_params)
        model = as_model(fm, dtype=self.dtype_)
        model.require_gradients("the pullback metric")
        self.device_ = model.device if self.device is None else resolve_device(self.device)
        # The metric is computed in dtype_ (float64 by default: curvature is meaningless in
        # float32) while torch modules are usually float32, and geolearn never casts or moves a
        # user's module: where they differ, ``to`` makes the one copy this fit works on.
        model = model.to(self.device_, self.dtype_)
        self._layer_fn(model)  # validate layer now
        return model

    def _layer_fn(self, model):
        """``x -> features`` of ``layer`` (see the class docstring), through the adapter."""
        layer, module = self.layer, model.module
        if layer is None:
            return model.feature_fn(None)
        if not _is_network(model):
            raise ValueError(f"layer applies to networks (torch modules with submodules or "
                             f"parameters), not to the plain callable feature_map {model.name}.")
        if isinstance(layer, numbers.Integral) and not isinstance(layer, bool):
            children = [name for name, _ in module.named_children()]
            if not isinstance(module, nn.Sequential) or not -len(children) <= layer < len(children):
                raise ValueError(f"an integer layer needs an nn.Sequential with more than {layer} "
                                 f"modules; got {type(module).__name__}.")
            return model.feature_fn(children[layer])  # the output of module[: layer + 1]
        if isinstance(layer, str):
            if layer in model.layer_names:
                return model.feature_fn(layer)
            if callable(getattr(module, layer, None)):
                return getattr(module, layer)
            raise ValueError(f"layer={layer!r} is neither a submodule nor a method of "
                             f"{type(module).__name__}; submodules: {model.layer_names}.")
        if callable(layer):
            return lambda x: layer(module, x)
        raise ValueError("layer must be None, an int, a submodule or method name, or a callable "
                         f"(module, x) -> features; got {type(layer).__name__}.")

    def _model_in(self, dtype):
        """The model in ``dtype`` (the fitted one, or its one cached copy for float64 curvature)."""
        if dtype == self.dtype_:
            return self._model
        if ("model", dtype) not in self._cache:
            # setdefault: threads filling the cache at once all use the one copy that won
            self._cache.setdefault(("model", dtype), self._model.to(dtype=dtype))
        return self._cache[("model", dtype)]

    def _map(self, dtype):
        return _flat_map(self._layer_fn(self._model_in(dtype)), self.image_shape_)

    @property
    def feature_map_(self):
        check_is_fitted(self)
        if self._kernel is not None:
            return None
        if "feature_map" not in self._cache:
            self._cache.setdefault("feature_map", self._map(self.dtype_))
        return self._cache["feature_map"]

    @property
    def engine_(self):
        return self._engine(self.dtype_)

    def _engine(self, dtype):
        check_is_fitted(self)
        key = ("engine", dtype)
        if key not in self._cache:
            if self._kernel is not None:
                engine = KernelMetric(self._kernel, dtype=dtype, device=self.device_,
                                      batch_size=self.batch_size)
            else:
                fm = self.feature_map_ if dtype == self.dtype_ else self._map(dtype)
                engine = PullbackMetric(fm, scale=self.scale, jacobian=self.jacobian,
                                        batch_size=self.batch_size, max_memory=self.max_memory,
                                        dtype=dtype, device=self.device_, fd_step=self.fd_step)
                engine._n_outputs = self.n_features_map_  # known from fit: one pass fewer
                engine._independent = True  # checked by _check_map
            self._cache.setdefault(key, engine)  # one engine, also when threads race here
        engine = self._cache[key]
        engine.verbose = self.verbose  # a set_params after fit reaches the cached engine too
        return engine

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_cache"] = {}  # closures do not pickle; rebuilt lazily
        return state

    @_frozen_model
    def _check_map(self, Xf):
        X = to_tensor(Xf[:2], device=self.device_, dtype=self.dtype_)  # flipped views too
        if len(X) == 1:
            X = torch.cat([X, 0.5 * X + 0.25])
        with torch.no_grad():
            together = self.feature_map_(X)
            alone = torch.cat([self.feature_map_(X[i: i + 1]) for i in range(2)])
        bad = (~torch.isfinite(together).all(1)).sum()
        if bad:
            raise ValueError(f"the feature map output is not finite at {int(bad)} points.")
        tol = 1e-5 if self.dtype_ == torch.float32 else 1e-10
        if not torch.allclose(together, alone, rtol=tol, atol=tol):
            raise ValueError("the feature map couples the samples of a batch (its output for a "
                             "2-sample batch differs from single samples): call .eval() on the "
                             "module or remove batch-dependent layers.")
        self.n_features_map_ = together.shape[1]
        self.scale_ = scale_value(self.scale, self.n_features_map_)
        if self.n_features_map_ < self.n_features_in_:
            warn_user(f"the feature map has m={self.n_features_map_} < d={self.n_features_in_}"
                      " outputs: the metric is singular; log volumes are pseudo-volumes of "
                      "rank <= m and curvature is undefined.", NumericalWarning)
        if self._nonsmooth():
            warn_user("the feature map has non-smooth activations (ReLU-like): the volume "
                      "element is piecewise constant and curvature is 0 almost everywhere.", NumericalWarning)

    def _nonsmooth(self):
        return self._model is not None and any(isinstance(m, NONSMOOTH)
                                               for m in self._model.module.modules())

    # -- per-sample quantities -----------------------------------------------------------------
    def _points(self, X):
        check_is_fitted(self)
        # a copy, never a view of the user's X (torch refuses negative strides: reversed views)
        return torch.tensor(np.ascontiguousarray(self._check_X(X, reset=False)),
                            dtype=self.dtype_, device=self.device_)

    def _log_volume(self, P):
        engine = self.engine_
        rank = self.rank
        max_rank = min(self.n_features_map_, self.n_features_in_)
        if rank is not None and rank > max_rank:
            raise ValueError(f"rank must be <= min(m, d) = {max_rank}; got {rank}.")
        method = self.volume_method if self._kernel is None else "eigh"
        logv, r = engine.log_volume(P, rank=rank, rtol=self.rtol, method=method,
                                    return_rank=True)
        if len(r) and (r != r[0]).any():
            warn_user("the numerical rank of the metric varies across points "
                      f"({int(r.min())} to {int(r.max())}): pseudo log volumes of different "
                      "rank are not comparable.", NumericalWarning)
        return logv, r

    def _ricci(self, P):
        d = self.n_features_in_
        if d > self.max_curvature_dim:
            raise ValueError(f"curvature needs d <= max_curvature_dim={self.max_curvature_dim}; "
                             f"the input has d={d} (cost grows as d^3 to d^4 per point).")
        if self._nonsmooth() and not self.allow_nonsmooth:
            raise ValueError("curvature of a ReLU-like network is 0 almost everywhere and "
                             "meaningless; pass allow_nonsmooth=True to compute it anyway.")
        if self.n_features_map_ < d:
            raise ValueError(f"curvature needs m >= d; the feature map has m="
                             f"{self.n_features_map_} < d={d} outputs (singular metric).")
        engine = self.engine_
        if self.dtype_ != torch.float64:
            warn_user("curvature needs float64: upcasting the feature map.", NumericalWarning)
            engine = self._engine(torch.float64)
        with frozen(None if self._model is None else self._model_in(torch.float64).module):
            return engine.ricci_scalar(P.to(torch.float64), method=self.curvature_method,
                                       max_condition=self.max_condition)

    def _quantities(self, P, quantities):
        out = {}
        if "log_volume" in quantities or "rank" in quantities:
            logv, r = self._log_volume(P)
            out["log_volume"], out["rank"] = logv, r
        if "ricci_scalar" in quantities:
            out["ricci_scalar"] = self._ricci(P)
        if "log_metric_eigvals" in quantities:
            eig = self.engine_.metric_eigvals(P)
            pad = self.n_features_in_ - eig.shape[1]
            eig = torch.nn.functional.pad(eig, (0, pad))
            with np.errstate(divide="ignore"):
                logs = np.log(to_numpy(eig).astype(np.float64).clip(min=0))
            for i in range(self.n_features_in_):
                out[f"log_metric_eigval_{i}"] = logs[:, i]
        return {k: to_numpy(v).astype(np.float64) for k, v in out.items()}

    def _columns(self, quantities):
        cols = []
        for q in quantities:
            if q == "log_metric_eigvals":
                cols += [f"log_metric_eigval_{i}" for i in range(self.n_features_in_)]
            else:
                cols.append(q)
        return cols

    @_frozen_model
    def transform(self, X):
        """The ``quantities`` of each sample, in order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples,) + image_shape

        Returns
        -------
        Xt : ndarray of shape (n_samples, n_columns), float64
            ``log_metric_eigvals`` adds ``d`` columns (``-inf`` past rank ``m``).
        """
        P = self._points(X)
        quantities = self._quantity_names()
        values = self._quantities(P, quantities)
        return np.column_stack([values[c] for c in self._columns(quantities)])

    def get_feature_names_out(self, input_features=None):
        """Names of the :meth:`transform` columns.

        Returns
        -------
        names : ndarray of str
        """
        check_is_fitted(self)
        return np.asarray(self._columns(self._quantity_names()), dtype=object)

    @_frozen_model
    def feature_jacobian(self, X):
        """Jacobians ``J = ∂Φ/∂x`` of the (unscaled) feature map, shape (n_samples, m, d).

        Named ``feature_jacobian`` because ``jacobian`` is the constructor
        parameter choosing the autodiff mode.
        """
        P = self._points(X)
        if self._kernel is not None:
            raise ValueError("a kernel's feature map is implicit: it has no Jacobian. Use "
                             "metric_tensor.")
        return to_numpy(self.engine_.jacobian(P)).astype(np.float64)

    @_frozen_model
    def metric_tensor(self, X):
        """Metric tensors ``g(x)``, ndarray of shape (n_samples, d, d)."""
        P = self._points(X)  # before engine_: an unfitted estimator raises NotFittedError
        d = P[0].numel()
        check_memory(len(P) * d * d * P.element_size(), f"{len(P)} metric tensors of {d} x {d}",
                     "ask for fewer points at a time, or for log_volume_element / "
                     "metric_eigenvalues, which never hold the full tensors")
        return to_numpy(self.engine_.metric(P))

    @_frozen_model
    def log_volume_element(self, X):
        """Natural log of the volume element ``√det g``, ndarray of shape (n_samples,)."""
        return to_numpy(self._log_volume(self._points(X))[0]).astype(np.float64)

    def volume_element(self, X):
        """Volume element ``√det g``; warns where it over- or underflows float64."""
        logv = self.log_volume_element(X)
        with np.errstate(over="ignore", under="ignore"):
            v = np.exp(logv)
        if np.any((v == 0) | ~np.isfinite(v)):
            warn_user("the volume element over/underflows float64 at some points; use "
                      "log_volume_element.", NumericalWarning)
        return v

    @_frozen_model
    def metric_eigenvalues(self, X):
        """Non-zero eigenvalues of ``g``, descending, ndarray of shape (n_samples, min(m, d))."""
        return to_numpy(self.engine_.metric_eigvals(self._points(X))).astype(np.float64)

    @_frozen_model
    def ricci_scalar(self, X):
        """Ricci scalar curvature (unit 2-sphere: +2), ndarray of shape (n_samples,)."""
        return to_numpy(self._ricci(self._points(X))).astype(np.float64)

    # -- slices ------------------------------------------------------------------------------
    @_frozen_model
    def _slice(self, points, quantities, **kw):
        check_is_fitted(self)
        quantities = self._quantity_names() if quantities is None else (
            (quantities,) if isinstance(quantities, str) else tuple(quantities))
        P = torch.as_tensor(points, dtype=self.dtype_, device=self.device_)
        values = self._quantities(P, quantities)
        predictions = entropy = None
        if self._model is not None and _is_network(self._model):
            with torch.no_grad():
                out = self._model.feature_fn(None)(P.reshape(len(P), *self.image_shape_))
            if out.ndim == 2 and out.shape[1] >= 2:
                logp = torch.log_softmax(out, 1)
                predictions = to_numpy(logp.argmax(1))
                entropy = to_numpy(-(logp.exp() * logp).sum(1) / np.log(out.shape[1]))
        return geometry_slice(points, values, predictions=predictions, entropy=entropy, **kw)

    def along_path(self, x_a, x_b, n_steps=64, quantities=None):
        """Quantities along ``x(t) = (1−t) x_a + t x_b``, ``t = i/(n_steps−1)``.

        Parameters
        ----------
        x_a, x_b : array-like of shape (n_features,) or image_shape
        n_steps : int, default=64
        quantities : tuple of str, default=None
            Defaults to ``self.quantities``.

        Returns
        -------
        slice : Bunch
            The quantities on the slice: ``points`` (ndarray of shape (P, d), the
            input points evaluated), ``quantities`` (their names: ``"log_volume"``,
            ``"rank"``, ``"ricci_scalar"`` or ``"log_metric_eigval_<i>"``), each
            quantity under its name (ndarray of shape (P,)), ``kind`` (``"path"``,
            ``"plane"`` or ``"grid"``), ``t`` (ndarray of shape (P,): the path
            parameter in [0, 1], paths only), ``coords`` (ndarray of shape (P, 2):
            plotting coordinates of planes and grids), ``barycentric`` (ndarray of
            shape (P, 3): weights of the three spanning samples, planes only),
            ``predictions`` (ndarray of shape (P,): the predicted class when the map
            comes from a classifier network), ``entropy`` (softmax entropy over
            ``log(n_classes)``, 1 = most ambiguous) and ``shape`` (``(resolution,
            resolution)`` for Cartesian grids: the values reshape to it); the
            fields that do not apply are None.
            Here with ``t`` set.
        """
        x_a, x_b = self._check_point(x_a, "x_a"), self._check_point(x_b, "x_b")
        check_scalar_param(n_steps, "n_steps", kind="integer", low=2)
        t, points = path_points(x_a, x_b, n_steps)
        return self._slice(points, quantities, t=t, kind="path")

    def on_plane(self, x1, x2, x3, resolution=30, hull="convex", extent=1.0, quantities=None):
        """Quantities on the plane through three samples, drawn on a unit triangle.

        Parameters
        ----------
        x1, x2, x3 : array-like of shape (n_features,) or image_shape
        resolution : int, default=30
            ``N``: ``(N+1)(N+2)/2`` points for the convex hull, ``N²`` for the
            affine grid.
        hull : {"convex", "affine"}, default="convex"
        extent : float, default=1.0
            Half-width of the affine grid in plotting coordinates.
        quantities : tuple of str, default=None

        Returns
        -------
        slice : Bunch
            As :meth:`along_path`'s, with ``coords`` and ``barycentric`` set.
        """
        xs = [self._check_point(x, f"x{i + 1}") for i, x in enumerate((x1, x2, x3))]
        check_choice(hull, "hull", ("convex", "affine"))
        check_scalar_param(resolution, "resolution", kind="integer", low=2)
        check_scalar_param(extent, "extent", low=0, closed="neither")
        coords, lam, points = plane_points(*xs, resolution, hull, extent)
        shape = (resolution, resolution) if hull == "affine" else None
        return self._slice(points, quantities, coords=coords, barycentric=lam, kind="plane",
                           shape=shape)

    def on_grid(self, bounds=(-1.5, 1.5), resolution=40, quantities=None):
        """Quantities on a square grid of a 2-D input space (first coordinate slowest).

        Parameters
        ----------
        bounds : (float, float), default=(-1.5, 1.5)
        resolution : int, default=40
        quantities : tuple of str, default=None

        Returns
        -------
        slice : Bunch
            As :meth:`along_path`'s, with ``coords`` (= ``points``) and
            ``shape = (resolution, resolution)``.
        """
        check_is_fitted(self)
        if self.n_features_in_ != 2:
            raise ValueError(f"on_grid needs a 2-D input space; d={self.n_features_in_}. Use "
                             "on_plane for higher-dimensional inputs.")
        bounds = np.asarray(bounds, dtype=np.float64)
        if bounds.shape != (2,) or not np.isfinite(bounds).all() or not bounds[0] < bounds[1]:
            raise ValueError(f"bounds must be two finite floats lo < hi; got {bounds!r}.")
        check_scalar_param(resolution, "resolution", kind="integer", low=2)
        points = grid_points(bounds, resolution)
        return self._slice(points, quantities, coords=points, kind="grid",
                           shape=(resolution, resolution))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # float64 only: curvature takes second derivatives of the metric, lost in float32
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.requires_fit = True
        return tags
