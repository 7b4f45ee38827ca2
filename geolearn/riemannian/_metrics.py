"""Metric engines: the pullback metric of a feature map and a user metric field.

Engines are plain torch objects (tensors in, tensors out, no sklearn state);
:class:`~geolearn.riemannian.RiemannianFeatureGeometry` builds on them.
"""

import contextlib
import math
import numbers
import threading

import torch
from torch.func import jacrev, vmap

from .._utils import (
    check_choice,
    check_memory,
    check_numeric_array,
    check_scalar_param,
    iter_batches,
    progress_bar,
    resolve_device,
    small_ops_threads,
    thread_map,
    warn_user,
)
from ..exceptions import GeolearnWarning, NumericalWarning
from ..models import as_model
from ..models._internal import locked_jacfwd as jacfwd  # forward AD is process-global in torch
from ..models._internal import saved_bytes
from . import _curvature

CURVATURE_METHODS = ("auto", "gauss", "kernel_gauss", "christoffel", "hessian_metric")


def _concat(fn, X, size, verbose=0):
    """``fn`` applied to ``X`` in chunks of ``size`` points, concatenated.

    ``verbose > 0`` shows a progress bar over the chunks.

    Runs under ``no_grad``: ``torch.func`` transforms still differentiate with
    respect to the inputs, but no graph is kept to the module's parameters. Each
    chunk is a copy: forward AD gives a view's tangent the size of its whole base
    (every point, times the tangents), not of the chunk.
    """
    # grad mode is per thread: n_jobs=1 keeps the calls in this one
    with torch.no_grad(), _outermost(verbose) as shown:
        chunks = list(iter_batches(len(X), max(1, int(size))))
        return torch.cat(thread_map(lambda sl: fn(X[sl].clone()), chunks, n_jobs=1,
                                    progress=_chunk_progress(len(chunks), shown)))


#: How deep this thread is in loops over chunks of points (only the outermost shows progress).
_CHUNK_LOOPS = threading.local()


@contextlib.contextmanager
def _outermost(verbose):
    """``verbose`` for the outermost loop over chunks of this thread, 0 for loops inside it.

    A curvature chunk computes its Jacobians and Hessians chunk by chunk too: one bar over
    the points, not one more bar per chunk.
    """
    depth = getattr(_CHUNK_LOOPS, "depth", 0)
    _CHUNK_LOOPS.depth = depth + 1
    try:
        yield 0 if depth else verbose
    finally:
        _CHUNK_LOOPS.depth = depth


def _chunk_progress(n_chunks, verbose):
    """``thread_map``'s progress over the chunks of points (shown when ``verbose``)."""
    return lambda results: progress_bar(results, total=n_chunks, desc="metric", unit="chunk",
                                        verbose=verbose)


def check_scale(scale):
    """Validate a ``scale`` parameter ("width", "none" or a positive float)."""
    if isinstance(scale, str):
        if scale not in ("width", "none"):
            raise ValueError(f"scale must be 'width', 'none' or a positive float; got {scale!r}.")
    elif (not isinstance(scale, numbers.Real) or isinstance(scale, bool)
          or not (scale > 0 and scale < float("inf"))):
        raise ValueError(f"scale must be 'width', 'none' or a positive float; got {scale!r}.")
    return scale


def scale_value(scale, width):
    """The numeric factor ``s`` of ``g = s JᵀJ`` for a map with ``width`` outputs."""
    if scale == "width":
        return 1.0 / width
    if scale == "none":
        return 1.0
    return float(scale)


def _check_rank_rtol(rank, rtol, max_rank):
    check_scalar_param(rank, "rank", kind="integer", low=1, high=max_rank, closed="both",
                       allow_none=True)
    check_scalar_param(rtol, "rtol", low=0, high=1, allow_none=True)


def log_volume_from_singular_values(sv, rank=None, rtol=None, default_rtol=None):
    """``Σ_{i≤r} log sv_i`` for descending ``sv`` (N, k), with the numerical rank ``r``.

    ``rank`` fixes ``r`` (top-k); otherwise ``r = #{sv_i > rtol·sv_1}``.
    """
    k = sv.shape[1]
    _check_rank_rtol(rank, rtol, k)
    if rank is not None:
        r = torch.full((len(sv),), rank, dtype=torch.int64, device=sv.device)
    else:
        tol = default_rtol if rtol is None else rtol
        r = (sv > tol * sv[:, :1]).sum(1)
    keep = torch.arange(k, device=sv.device)[None, :] < r[:, None]
    logs = torch.where(keep, torch.log(torch.where(keep, sv, torch.ones_like(sv))),
                       torch.zeros_like(sv))
    return logs.sum(1), r


class _MetricEngine:
    """Shared machinery: a metric field ``x -> g(x)`` given by ``_metric_single``."""

    _default_curvature = "christoffel"
    #: ``> 0`` shows progress over the chunks of points (RiemannianFeatureGeometry sets it).
    verbose = 0

    def __init__(self, *, dtype=torch.float64, device="auto", batch_size=256):
        self.dtype = dtype
        self.device = resolve_device(device)
        self.batch_size = batch_size

    def _as_points(self, X, name="X"):
        if not isinstance(X, torch.Tensor):  # sparse, DataFrames and object arrays too
            X = check_numeric_array(X, name, ensure_2d=False, allow_nd=True,
                                    ensure_min_samples=0, ensure_all_finite=False, copy=True)
        X = torch.as_tensor(X).to(device=self.device, dtype=self.dtype)
        if X.ndim != 2 or len(X) == 0:
            raise ValueError(f"{name} must be a non-empty (N, d) array of points; "
                             f"got shape {tuple(X.shape)}.")
        if not (torch.isfinite(X.sum()) or torch.isfinite(X).all()):  # see _check_finite
            raise ValueError(f"{name} contains NaN or infinity.")
        return X

    def _metric_single(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_finite(self, values, what):
        # a sum of finite values is finite unless it overflows: one reduction, and the
        # elementwise test (15% of the time of 100 Jacobians of 10 x 784) only where it is not
        if torch.isfinite(values.sum()):
            return values
        bad = ~torch.isfinite(values.flatten(1)).all(1)
        if bad.any():
            raise ValueError(
                f"the {what} is not finite at {int(bad.sum())} of {len(bad)} points: the map "
                "is not differentiable there (or overflows in this dtype)."
            )
        return values

    def metric(self, X):
        """Metric tensors ``g(x)`` of shape (N, d, d), symmetrised."""
        X = self._as_points(X)
        g = _concat(vmap(self._metric_single), X, self.batch_size, self.verbose)
        return self._check_finite(0.5 * (g + g.transpose(1, 2)), "metric")

    def metric_eigvals(self, X):
        """Eigenvalues of ``g(x)``, descending, shape (N, d)."""
        return torch.linalg.eigvalsh(self.metric(X)).flip(-1)

    def log_volume(self, X, rank=None, rtol=None, method="eigh", return_rank=False):
        """Log volume element ``½ Σ_{i≤r} log λ_i(g)`` (natural log), shape (N,).

        The rank ``r`` counts eigenvalues whose square root exceeds ``rtol``
        times the largest one's (default ``d·eps``); ``rank`` fixes it.
        """
        check_choice(method, "method", ("svd", "cholesky", "eigh"))
        eig = self.metric_eigvals(X)
        sv = eig.clamp_min(0).sqrt()
        logv, r = log_volume_from_singular_values(
            sv, rank, rtol, eig.shape[1] * torch.finfo(self.dtype).eps)
        return (logv, r) if return_rank else logv

    def christoffel(self, X):
        """Christoffel symbols of the second kind ``Γ^κ_{μν}``, shape (N, d, d, d)."""
        X = self._as_points(X)
        fn = vmap(_curvature.christoffel_from_metric(self._metric_single))
        return _concat(fn, X, self.batch_size, self.verbose)

    def metric_derivative(self, X):
        """``T_{λμν} = ∂_λ g_{μν}``, shape (N, d, d, d)."""
        X = self._as_points(X)
        dg = _concat(vmap(jacfwd(self._metric_single)), X, self.batch_size, self.verbose)
        return dg.permute(0, 3, 1, 2)

    def ricci_scalar(self, X, method="auto", max_condition=1e12):
        """Ricci scalar curvature ``R`` (unit 2-sphere: ``+2``), shape (N,).

        Parameters
        ----------
        X : tensor of shape (N, d)
        method : {"auto", "gauss", "kernel_gauss", "christoffel", "hessian_metric"}
            ``"auto"`` picks the cheapest exact route the engine supports.
        max_condition : float, default=1e12
            Points where ``cond(g)`` exceeds it get NaN (with one warning):
            curvature is undefined on singular metrics and meaningless near them.
        """
        check_choice(method, "method", CURVATURE_METHODS)
        if self.dtype != torch.float64:
            warn_user("curvature in float32 is numerically meaningless; use "
                      "dtype=torch.float64.", NumericalWarning)
        X = self._as_points(X)
        method = self._default_curvature if method == "auto" else method
        eig = torch.linalg.eigvalsh(self.metric(X))
        good = (eig[:, 0] > 0) & (eig[:, -1] <= max_condition * eig[:, 0])
        R = torch.full((len(X),), float("nan"), dtype=self.dtype, device=self.device)
        if good.any():
            R[good] = _concat(lambda Z: self._ricci(Z, method), X[good],
                              self._curvature_points(X, method), self.verbose)
        if not good.all():
            warn_user(f"Ricci scalar set to NaN at {int((~good).sum())} of {len(X)} points where the "
            f"metric is singular or cond(g) > max_condition={max_condition:g}.", NumericalWarning)
        return R

    def _curvature_points(self, X, method):
        """Points per chunk of a curvature computation (``batch_size`` unless bounded)."""
        return self.batch_size

    def _ricci(self, X, method):
        if method == "christoffel":
            return _curvature.christoffel_ricci(self._metric_single, X)
        if method == "hessian_metric":
            return self._hessian_metric_ricci(X)
        raise ValueError(f"method={method!r} does not apply to {type(self).__name__}; use "
                         "'christoffel' or 'hessian_metric'.")

    def _hessian_metric_ricci(self, X):
        T = self.metric_derivative(X)
        defect = _curvature.symmetry_defect(T)
        if (defect > 1e-8).any():
            raise ValueError(
                "method='hessian_metric' needs a fully symmetric metric derivative ∂_λ g_{μν} "
                f"(a Hessian metric); the relative asymmetry is up to {float(defect.max()):.2e}. "
                "Use method='christoffel'.")
        return _curvature.hessian_metric_ricci(self.metric(X), T)


class MetricField(_MetricEngine):
    """A user-given Riemannian metric field ``x -> g(x)`` (Christoffel route only).

    Parameters
    ----------
    metric_fn : callable
        ``x`` of shape (d,) -> ``g(x)`` of shape (d, d), differentiable by
        ``torch.func`` (no in-place ops on captured tensors, no ``.item()``).
    dtype : torch.dtype, default=torch.float64
    device : str or torch.device, default="auto"
        Where points are evaluated (``"auto"``: CUDA when available, else the CPU).
    batch_size : int, default=256
        Points per vectorised chunk.

    Examples
    --------
    The round metric of the unit sphere in coordinates (θ, ϕ) has ``R = 2``:

    >>> import torch
    >>> from geolearn.riemannian import MetricField
    >>> def round_metric(x):
    ...     return torch.diag(torch.stack([torch.ones_like(x[0]), x[0].sin() ** 2]))
    >>> sphere = MetricField(round_metric)
    >>> sphere.ricci_scalar(torch.tensor([[0.9, 0.3]])).round(decimals=8)
    tensor([2.], dtype=torch.float64)
    """

    def __init__(self, metric_fn, *, dtype=torch.float64, device="auto", batch_size=256):
        super().__init__(dtype=dtype, device=device, batch_size=batch_size)
        self.metric_fn = metric_fn

    def _metric_single(self, x):
        return self.metric_fn(x)


#: What torch's vmap says when it cannot trace a map (.item(), data-dependent control flow,
#: dynamic shapes, an op without a batching rule, an in-place write into an unbatched tensor).
_VMAP_MESSAGES = ("vmap", "batching rule", "doesn't match the broadcast shape")


def _vmap_limitation(exc):
    """Whether ``exc`` is vmap failing to trace a map (not an error of the map itself)."""
    return any(m in str(exc).lower() for m in _VMAP_MESSAGES)


class PullbackMetric(_MetricEngine):
    """The metric ``g = s·JᵀJ`` that a feature map pulls back from Euclidean feature space.

    Parameters
    ----------
    feature_map : callable
        ``(N, d) -> (N, ...)`` torch function treating samples independently
        (outputs are flattened to ``m`` features). It must accept ``dtype``
        tensors on ``device``. It is seen through :func:`geolearn.models.as_model`:
        the Jacobians are the adapter's :meth:`~geolearn.models.ModelAdapter.jacobian`,
        and a torch module is evaluated :func:`~geolearn.models.frozen` (eval mode).
    scale : {"width", "none"} or float, default="width"
        ``s = 1/m`` (the paper's average over units), ``1``, or the given value.
    jacobian : {"auto", "fwd", "rev", "fd"}, default="auto"
        Forward mode when ``d ≤ m`` (``d`` passes per point), reverse mode
        otherwise; ``"fd"``: central finite differences for black-box maps.
    batch_size : int, default=256
        Largest number of points per vectorised chunk.
    max_memory : int, default=2**30
        Bytes allowed for one chunk of points: their Jacobians (``m·d`` numbers
        each) and the autodiff intermediates behind them (``d`` tangents, or
        ``m`` cotangents, of every intermediate of the map's forward pass,
        measured once on two points), or their Hessians; chunks shrink to fit,
        and quantities reduced per point (volumes, eigenvalues, metrics) are
        computed chunk by chunk, never holding every point's Jacobian.
    dtype : torch.dtype, default=torch.float64
    device : str or torch.device, default="auto"
        Where points are evaluated (``"auto"``: CUDA when available, else the CPU);
        a module elsewhere is copied there once.
    vectorize : bool, default=True
        ``False`` loops over points (for maps ``vmap`` cannot trace).
    fd_step : float, optional
        Finite-difference step; default ``eps^{1/3}·max(1, ‖x‖∞)`` (``eps^{1/4}``
        for Hessians).

    Examples
    --------
    A sphere of radius 1.7 as an immersion of (θ, ϕ): ``R = 2/1.7² ≈ 0.692``.

    >>> import torch
    >>> from geolearn.riemannian import PullbackMetric
    >>> def sphere(X):
    ...     t, p = X[:, 0], X[:, 1]
    ...     return 1.7 * torch.stack([t.sin() * p.cos(), t.sin() * p.sin(), t.cos()], 1)
    >>> pm = PullbackMetric(sphere, scale="none")
    >>> X = torch.tensor([[0.9, 0.3]], dtype=torch.float64)
    >>> round(float(pm.ricci_scalar(X)[0]), 6)
    0.692042
    >>> pm.metric(X).shape
    torch.Size([1, 2, 2])
    """

    _default_curvature = "gauss"

    def __init__(self, feature_map, *, scale="width", jacobian="auto", batch_size=256,
                 max_memory=2**30, dtype=torch.float64, device="auto", vectorize=True,
                 fd_step=None):
        super().__init__(dtype=dtype, device=device, batch_size=batch_size)
        self.feature_map = feature_map
        self.scale = check_scale(scale)
        self.jacobian_mode = check_choice(jacobian, "jacobian", ("auto", "fwd", "rev", "fd"))
        self.max_memory = max_memory
        self.vectorize = vectorize
        self.fd_step = fd_step
        self._n_outputs = None
        self._point_bytes = {}
        self._independent = False  # see _batched_rev_jacobian
        model = as_model(feature_map)
        # a module in another dtype (a float32 network) is evaluated as the adapter's cast
        # copy, never cast in place
        self._model = model.to(self.device, self.dtype)
        self._map = self._model.module if self._model is not model else feature_map

    def _as_points(self, X, name="X"):
        X = super()._as_points(X, name)
        self._model.check_sample_shape(tuple(X.shape[1:]), name)  # before any torch error
        return X

    # -- the map ---------------------------------------------------------------------------
    def _phi(self, x):
        return self._map(x.unsqueeze(0)).reshape(-1)

    def n_outputs(self, X):
        """Number ``m`` of (flattened) features, found from one evaluation."""
        if self._n_outputs is None:
            with self._model.frozen(), torch.no_grad(), small_ops_threads():  # one point
                self._n_outputs = int(self._phi(self._as_points(X[:1])[0]).numel())
        return self._n_outputs

    def scale_value(self, X):
        """The numeric ``s`` for this map."""
        return scale_value(self.scale, self.n_outputs(X))

    def _mode(self, d, m):
        if self.jacobian_mode != "auto":
            return self.jacobian_mode
        return "fwd" if d <= m else "rev"

    def _intermediate_bytes(self, X):
        """Bytes of the intermediates one more point adds to a forward pass of the map."""
        with self._model.frozen():
            return saved_bytes(self._map, X[:1])

    def _chunk_points(self, X, mode):
        """Points per chunk so that one chunk's Jacobians and intermediates fit ``max_memory``.

        Raises ``MemoryError`` up front when one point alone needs more than the
        memory available.
        """
        d, m = X.shape[1], self.n_outputs(X)
        if mode not in self._point_bytes:
            jac = m * d * X.element_size()
            if mode == "fd":  # 2d shifted copies of the points, their outputs and J
                per_point = jac + 2 * d * (d + m) * X.element_size()
            else:  # J, its transpose and the SVD's copy; every intermediate carries d
                # tangents (fwd) or m cotangents (rev)
                per_point = 3 * jac + (d if mode == "fwd" else m) * self._intermediate_bytes(X)
            self._point_bytes[mode] = per_point
        per_point = self._point_bytes[mode]
        what = f"the Jacobian of one point ({m} x {d}) and its autodiff intermediates"
        cure = "use a layer with fewer features (m) or smaller inputs (d)"
        check_memory(per_point, what, cure)
        if per_point > self.max_memory:
            warn_user(f"{what} need about {per_point:,} bytes, more than "
                      f"max_memory={self.max_memory}: computing one point at a time. To "
                      f"stay within max_memory, {cure}.", GeolearnWarning)
        return max(1, min(self.batch_size, int(self.max_memory // per_point)))

    def _in_chunks(self, fn, X):
        """``fn`` on chunks of the points that fit ``max_memory``, concatenated (tuples too)."""
        X = self._as_points(X)
        mode = self._mode(X.shape[1], self.n_outputs(X))
        # copies, not views: see _concat
        # many small ops per chunk: one torch thread (thread_map), restored after
        chunks = list(iter_batches(len(X), self._chunk_points(X, mode)))
        with _outermost(self.verbose) as shown:
            outs = thread_map(lambda sl: fn(X[sl].clone()), chunks, n_jobs=1,
                              progress=_chunk_progress(len(chunks), shown))
        if isinstance(outs[0], tuple):
            return tuple(torch.cat(parts) for parts in zip(*outs))
        return torch.cat(outs)

    def _curvature_points(self, X, method):
        """Points per chunk so that one chunk's second derivatives fit ``max_memory``.

        Per point: the Jacobian (``m·d`` numbers), the Hessian and the curvature's
        temporaries of its size (``4·m·d²``), and the map's intermediates with their
        first- and second-order tangents (``d + d²`` each); the Christoffel routes
        differentiate once more (a factor ``d``).
        """
        d, m = X.shape[1], self.n_outputs(X)
        key = ("curvature", method)
        if key not in self._point_bytes:
            mode = self._mode(d, m)
            per_point = (m * d + 4 * m * d * d) * X.element_size()
            if mode != "fd":
                per_point += (d + d * d) * self._intermediate_bytes(X)
            if method in ("christoffel", "hessian_metric"):
                per_point *= d
            self._point_bytes[key] = per_point
        return max(1, min(self.batch_size, int(self.max_memory // self._point_bytes[key])))

    def _jac_fn(self, mode):
        return (jacfwd if mode == "fwd" else jacrev)(self._phi)

    def jacobian(self, X):
        """Jacobians ``J = ∂Φ/∂x`` of the unscaled map, shape (N, m, d).

        Modes ``"auto"``, ``"fwd"`` and ``"rev"`` are the adapter's
        :meth:`~geolearn.models.ModelAdapter.jacobian` of the map (chunks of at
        most ``batch_size`` points within ``max_memory`` bytes), looped over
        points when ``vmap`` cannot trace the map; ``"fd"`` is the engine's own.
        The engine of a fitted :class:`~geolearn.riemannian.RiemannianFeatureGeometry`,
        whose map it checked to treat samples independently, takes reverse mode
        as one batched backward pass of each chunk instead (the same values).
        """
        return self._in_chunks(self._jacobian_chunk, X)

    def _jacobian_chunk(self, X, check_finite=True):
        N, d = X.shape
        mode = self._mode(d, self.n_outputs(X))
        with self._model.frozen():
            if mode == "fd":
                J = self._fd_jacobian(X)
            elif mode == "rev" and self._independent and self.vectorize:
                J = self._batched_rev_jacobian(X)
            else:  # X is one chunk (_chunk_points): the adapter keeps it whole
                J = self._per_point(lambda: self._model.jacobian(
                    X, batch_size=None, mode=mode, max_memory=self.max_memory,
                ).reshape(N, -1, d), self._jac_fn(mode), X)
        return self._check_finite(J, "Jacobian of the feature map") if check_finite else J

    def _batched_rev_jacobian(self, X):
        """Reverse-mode Jacobians (N, m, d) of a map whose samples are checked independent.

        One forward pass of the chunk and one backward pass of the ``m`` basis
        cotangents batched (``is_grads_batched``): row ``k`` of the gradient of
        ``Σ_n Φ(x_n)_k`` at ``x_n`` is ``∂Φ_k/∂x`` at ``x_n`` alone. The same
        products as the adapter's ``vmap(jacrev)`` over single samples, without
        vmap's per-sample batching of the forward pass (a tenth of
        :meth:`log_volume`'s time on a 784-256-128-10 MLP).
        :class:`~geolearn.riemannian.RiemannianFeatureGeometry` sets
        ``_independent`` once its fit has compared a batch with single samples.
        """
        N, m = len(X), self.n_outputs(X)
        with torch.enable_grad():
            x = X.detach().requires_grad_(True)
            out = self._map(x).reshape(N, m)
            if not out.requires_grad:  # a map constant in x: zero Jacobians, as jacrev's
                return out.new_zeros((N, m, X.shape[1]))
            basis = torch.eye(m, dtype=out.dtype, device=out.device)[:, None].expand(m, N, m)
            (J,) = torch.autograd.grad(out, x, basis, is_grads_batched=True)
        return J.transpose(0, 1)

    def _per_point(self, vectorized, single, X):
        """``vectorized()`` on all points, or ``single`` looped over them if vmap cannot trace."""
        if self.vectorize:
            try:
                return vectorized()
            except RuntimeError as exc:
                if not _vmap_limitation(exc):
                    raise  # the map's own error: retrying point by point would hide it
                warn_user(f"vmap cannot trace the feature map ({exc}); looping over points "
                          "instead. Pass vectorize=False to skip the attempt.", GeolearnWarning)
        return _concat(lambda Z: single(Z[0])[None], X, 1, self.verbose)

    def _batched(self, X):
        return torch.as_tensor(self._map(X)).to(X).reshape(len(X), -1)

    def _steps(self, X, power):
        if self.fd_step is not None:
            return torch.full((len(X), 1), float(self.fd_step), dtype=X.dtype, device=X.device)
        eps = torch.finfo(X.dtype).eps
        return eps**power * X.abs().amax(1, keepdim=True).clamp_min(1.0)

    def _fd_jacobian(self, X):
        h = self._steps(X, 1 / 3)
        F = self._batched
        eye = torch.eye(X.shape[1], dtype=X.dtype, device=X.device)
        with torch.no_grad():
            cols = [(F(X + h * e) - F(X - h * e)) / (2 * h) for e in eye]
        return torch.stack(cols, -1)

    def hessian(self, X):
        """Second derivatives ``H_{kμν}`` of the unscaled map, shape (N, m, d, d)."""
        X = self._warn_fd_curvature(X)
        return _concat(self._hessian_chunk, X, self._curvature_points(X, "gauss"), self.verbose)

    def _warn_fd_curvature(self, X):
        """The checked points, with a warning when second derivatives are finite differences."""
        X = self._as_points(X)
        if self._mode(X.shape[1], self.n_outputs(X)) == "fd":
            warn_user("curvature from finite differences is inaccurate (errors O(h²) in "
                      "second derivatives); prefer an autodiff-able map.", NumericalWarning)
        return X

    def _hessian_chunk(self, X):
        mode = self._mode(X.shape[1], self.n_outputs(X))
        with self._model.frozen():
            if mode == "fd":
                H = self._fd_hessian(X)
            else:
                single = jacfwd(self._jac_fn(mode))
                H = self._per_point(lambda: vmap(single)(X), single, X)
        return self._check_finite(H, "Hessian of the feature map")

    def _fd_hessian(self, X):
        h = self._steps(X, 1 / 4)
        eye = torch.eye(X.shape[1], dtype=X.dtype, device=X.device)
        F = self._batched
        with torch.no_grad():
            return torch.stack([torch.stack([
                (F(X + h * a + h * b) - F(X + h * a - h * b) - F(X - h * a + h * b)
                 + F(X - h * a - h * b)) / (4 * h**2) for b in eye], -1) for a in eye], -2)

    # -- geometry --------------------------------------------------------------------------
    def _metric_single(self, x):
        J = jacfwd(self._phi)(x).reshape(-1, x.shape[0])
        return self.scale_value(x[None]) * J.T @ J

    def metric(self, X):
        """Metric tensors ``g = s·JᵀJ``, shape (N, d, d)."""
        s = self.scale_value(X)

        def chunk(Z):
            J = self._jacobian_chunk(Z)
            g = s * J.transpose(1, 2) @ J
            return 0.5 * (g + g.transpose(1, 2))

        return self._in_chunks(chunk, X)

    def metric_eigvals(self, X):
        """Non-trivial eigenvalues ``s·σ_i(J)²``, descending, shape (N, min(m, d))."""
        s = self.scale_value(X)

        def chunk(Z):
            J = self._jacobian_chunk(Z, check_finite=False)  # checked by _singular_values
            return (s * self._singular_values(J) ** 2).to(J.dtype)

        return self._in_chunks(chunk, X)

    def log_volume(self, X, rank=None, rtol=None, method="svd", return_rank=False):
        """Log volume element ``(r/2) log s + Σ_{i≤r} log σ_i(J)`` (natural log), shape (N,).

        Parameters
        ----------
        X : tensor of shape (N, d)
        rank : int, optional
            Keep the top ``rank`` singular values (pseudo-volume of that rank).
        rtol : float in [0, 1), optional
            Relative threshold of the numerical rank; default ``max(m, d)·eps``.
        method : {"svd", "cholesky"}, default="svd"
            ``"cholesky"``: ``½ log det g`` from a Cholesky factor of ``g``; cheaper
            for large ``m·d`` but squares the condition number; falls back to
            SVD where the factorisation fails. Full rank only.
        return_rank : bool, default=False
            Also return the rank used at each point.
        """
        check_choice(method, "method", ("svd", "cholesky"))
        X = self._as_points(X)
        _check_rank_rtol(rank, rtol, min(self.n_outputs(X), X.shape[1]))
        out = self._in_chunks(lambda Z: self._log_volume_chunk(Z, rank, rtol, method), X)
        return out if return_rank else out[0]

    def _log_volume_chunk(self, X, rank, rtol, method):
        J = self._jacobian_chunk(X, check_finite=False)  # checked by _singular_values
        s = self.scale_value(X)
        m, d = J.shape[1:]
        if method == "cholesky" and rank is None and m >= d:
            self._check_finite(J, "Jacobian of the feature map")
            L, info = torch.linalg.cholesky_ex(s * J.transpose(1, 2) @ J)
            logv = torch.log(torch.diagonal(L, dim1=1, dim2=2)).sum(1)
            r = torch.full((len(J),), d, dtype=torch.int64, device=J.device)
            failed = info != 0  # those points fall back to the SVD, each on its own
            if failed.any():
                logv[failed], r[failed] = self._svd_log_volume(J[failed], s, rank, rtol)
            return logv, r
        return self._svd_log_volume(J, s, rank, rtol)

    def _svd_log_volume(self, J, s, rank, rtol):
        m, d = J.shape[1:]
        sv = self._singular_values(J)
        # the rank threshold of J's own precision: sv is more accurate than J itself
        logv, r = log_volume_from_singular_values(
            sv, rank, rtol, max(m, d) * torch.finfo(J.dtype).eps)
        return (logv + 0.5 * math.log(s) * r.to(logv.dtype)).to(J.dtype), r

    def _singular_values(self, J):
        """Singular values of the Jacobians ``J`` (N, m, d), descending; refuses non-finite ``J``.

        A wide float32 ``J`` (``m < d``: a layer narrower than the input) takes
        the square roots of the eigenvalues of its ``m x m`` Gram matrix ``J Jᵀ``
        in float64, several times faster than the SVD: products of float32
        numbers are exact in float64 and the sums err by about ``eps64·σ_1²``,
        so each ``σ_i`` above the rank threshold (``max(m, d)·eps32·σ_1``) is
        more accurate than the float32 SVD's (``eps32·σ_1`` on every
        ``σ_i``). The Gram matrix squares the condition number, which float64
        ``J`` cannot afford: it keeps the SVD. A non-finite entry of ``J`` makes
        its point's Gram diagonal non-finite (float64 cannot overflow on
        float32 squares), which spares a pass over ``J``.
        """
        m, d = J.shape[1:]
        if J.dtype != torch.float32 or m >= d:
            return torch.linalg.svdvals(self._check_finite(J, "Jacobian of the feature map"))
        J64 = J.double()
        gram = J64 @ J64.transpose(1, 2)
        self._check_finite(gram.diagonal(dim1=1, dim2=2), "Jacobian of the feature map")
        eig = torch.linalg.eigvalsh(gram).flip(-1)
        return eig.clamp_min(0).sqrt()

    def christoffel(self, X):
        """Christoffel symbols ``Γ^κ_{μν}`` (Gauss route), shape (N, d, d, d)."""
        self._require_immersion(X)
        X = self._warn_fd_curvature(X)
        return _concat(lambda Z: _curvature.gauss_christoffel(self._jacobian_chunk(Z),
                                                              self._hessian_chunk(Z)),
                       X, self._curvature_points(X, "gauss"), self.verbose)

    def metric_derivative(self, X):
        """``T_{λμν} = ∂_λ g_{μν} = s(H_{kλμ}J_{kν} + J_{kμ}H_{kλν})``, shape (N, d, d, d)."""
        X = self._warn_fd_curvature(X)
        s = self.scale_value(X)

        def chunk(Z):
            HJ = torch.einsum("nkml,nkv->nlmv", self._hessian_chunk(Z), self._jacobian_chunk(Z))
            return s * (HJ + HJ.transpose(2, 3))

        return _concat(chunk, X, self._curvature_points(X, "gauss"), self.verbose)

    def _require_immersion(self, X):
        X = self._as_points(X)
        if self.n_outputs(X) < X.shape[1]:
            raise ValueError(
                f"curvature needs an immersion (m >= d) but the map has m={self.n_outputs(X)} "
                f"outputs for d={X.shape[1]} inputs: the pullback metric is singular.")

    def ricci_scalar(self, X, method="auto", max_condition=1e12):
        self._require_immersion(X)
        if method in ("auto", "gauss"):
            X = self._warn_fd_curvature(X)
        return super().ricci_scalar(X, method=method, max_condition=max_condition)

    ricci_scalar.__doc__ = _MetricEngine.ricci_scalar.__doc__

    def _ricci(self, X, method):
        if method == "gauss":  # X is one chunk (_curvature_points)
            s = self.scale_value(X)
            return _curvature.gauss_ricci(self._jacobian_chunk(X), self._hessian_chunk(X)) / s
        with self._model.frozen():  # the Christoffel route differentiates the map itself
            return super()._ricci(X, method)
