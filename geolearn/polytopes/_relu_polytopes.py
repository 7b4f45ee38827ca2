"""ReLUPolytopes: the polyhedral decomposition of a trained ReLU network, seen through data."""

import functools
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from .._utils import (
    check_choice,
    check_scalar_param,
    fitted_on_success,
    progress_bar,
    resolve_device,
    thread_map,
    warn_user,
)
from ..exceptions import GeolearnWarning, PartialResultWarning
from ..models._internal import fit_router, route_fit_params
from ._conv import ConvReLUNet
from ._enumeration import region_neighbours, subdivide, traverse
from ._lp import _SOLVERS, check_solver
from ._maps import forward_bits, hrep, local_maps, unique_patterns
from ._network import as_relu_network, fitted_network, needs_fit
from ._planes import plane_regions
from ._polytope import Polytope
from ._segments import segment_bisection, segment_counts_exact, segment_exact
from ._stats import describe, hamming

_REGION_STATS = ("chebyshev", "facets", "boundedness")
_METRICS = ("chebyshev_radius", "n_active", "hamming_at_radius", "margin", "segment_regions")


def _region_job(net, box, stats, tol, facet_method, solver, job):
    pattern, region = job
    return _region_stats(net, pattern, *box, stats, tol, facet_method, solver, region=region)


def _region_stats(net, pattern, lo, hi, stats, tol, facet_method, solver, region=None):
    P = Polytope(pattern, *hrep(net, pattern), None, None, lo, hi, tol=tol,
                 facet_method=facet_method, lp_solver=solver)
    out = {}
    try:
        if "chebyshev" in stats:
            out["center"], out["radius"] = P.chebyshev()
        if "facets" in stats:
            out["facets"] = P.facets()
        if "boundedness" in stats:
            out["bounded"] = P.is_bounded()
    except RuntimeError as exc:
        raise RuntimeError(f"region {region}: {exc}") from exc
    return out


class ReLUPolytopes(TransformerMixin, BaseEstimator):
    """The linear regions of a trained ReLU network met by data, computed exactly.

    A ReLU MLP is a continuous piecewise-affine map; its input space is cut
    into convex polyhedra, each labelled by the on/off pattern of all hidden
    units (its bit string) and carrying one affine map (paper 1, eqs. 3-5).
    ``fit`` records the bit string, region and affine map of each sample;
    the methods give facets ("active bits", LP 6), Chebyshev centres and radii
    (eqs. 7-8), the regions crossed by segments (exact breakpoints or the
    paper's bisection), exact enumeration with the dual graph (Algorithm 1,
    or polygon subdivision in 2-D) and the Hamming statistics of the paper's
    tables. All analysis runs in float64; LPs use HiGHS.

    Parameters
    ----------
    network : object, default=None
        A trained ReLU MLP (see :func:`as_relu_network`), used as it is (a
        ``FrozenEstimator`` keeps it fitted through ``clone``). An unfitted
        scikit-learn or skorch network (e.g. a clone inside GridSearchCV) is
        fitted on ``(X, y)`` as given in ``fit``
        (:func:`geolearn.models.fit_or_use`). A conv ReLU net (``Conv2d``,
        ``ReLU``, ``MaxPool2d``, ``AvgPool2d``, ``Flatten``, ``Linear``) is
        analysed on flat rows folded by ``image_shape``: its bit strings hold
        the ReLU signs and the argmax of every max-pool window; the methods
        that solve LPs over regions (``region_stats``, :meth:`polytope`,
        :meth:`chebyshev`, :meth:`neighbours`, :meth:`enumerate_regions`) stay
        MLP-only and say so.
    image_shape : tuple of int, default=None
        ``(C, H, W)`` layout of the flat rows of ``X`` for a conv net (not
        needed when the net starts with ``nn.Unflatten``); ignored for MLPs.
    bounds : 'global_range', None or (lo, hi), default='global_range'
        Box for radii, facets and enumeration: ``'global_range'`` uses
        ``[min X, max X]`` of the fit data on every coordinate; None is all
        of R^m; ``(lo, hi)`` are scalars or arrays of shape (m,).
    region_stats : tuple of str, default=()
        Any of ``'chebyshev'``, ``'facets'``, ``'boundedness'``, computed in
        ``fit`` for every distinct region (LPs; see ``max_lp_regions``).
    max_lp_regions : int, default=2000
        With more distinct regions, the LP statistics use a random subset
        (a warning says so; see ``lp_region_index_``).
    facet_method : {'clarkson', 'lp'}, default='clarkson'
        Clarkson's output-sensitive redundancy removal, or the paper's one
        LP per row with iterative removal.
    lp_solver : {'auto', 'highs', 'highspy', 'cvxpy'}, default='auto'
        ``'highs'``: ``scipy.optimize.linprog(method='highs')``; ``'highspy'``: the
        same solver through its own API (less overhead per LP); ``'cvxpy'``:
        the paper's tool, for cross-checks. ``'auto'``: highspy when
        installed, else scipy.
    tol : float, default=1e-7
        LP tolerance in distance units (not below HiGHS' feasibility tolerance).
    device : str, default='auto'
        Device of the float64 forward passes and map recurrences (of MLPs; conv nets run
        on the CPU).
    batch_size : int, default=8192
    n_jobs : int, default=None
        Workers for the region LPs (joblib processes: the LP code holds the GIL) and for
        the forward passes of bit extraction (threads, one torch thread each).
    random_state : int, RandomState or None, default=None
        For the LP subset and the default directions of ``hamming_at_radius``.
    verbose : int, default=0
        ``> 0`` shows progress bars of the region LPs and of ``enumerate_regions``.

    Attributes
    ----------
    network_ : ReLUNet
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.
    layer_sizes_ : tuple of int
        ``(m, h_1, ..., h_L, o)``.
    n_hidden_units_ : int
    n_outputs_ : int
    output_activation_ : str or None
    bounds_ : tuple of ndarray or None
    patterns_ : ndarray of shape (n_regions, h), bool
        Distinct bit strings, in order of first appearance.
    labels_ : ndarray of shape (n_samples,)
    region_counts_ : ndarray of shape (n_regions,)
    n_regions_ : int
    affine_W_ : ndarray of shape (n_regions, o, m)
    affine_b_ : ndarray of shape (n_regions, o)
    n_distinct_affine_maps_ : int
        Regions whose maps agree to 1e-9 (relative) count once.
    unit_activation_rate_ : ndarray of shape (h,)
    margin_ : ndarray of shape (n_samples,)
        Radius of the largest ball around each sample inside its region (and
        box); negative for samples outside the box.
    ambiguous_ : ndarray of shape (n_samples,), bool
        Samples within ``1e-9 * scale`` of a boundary, or outside the box.
    chebyshev_radius_, chebyshev_center_, n_active_, active_bits_, n_box_facets_, bounded_
        Per region, when requested in ``region_stats`` (None otherwise; NaN
        for regions outside ``lp_region_index_``).
    lp_region_index_ : ndarray or None

    Examples
    --------
    >>> import torch
    >>> from geolearn.polytopes import ReLUPolytopes
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    >>> X = torch.rand(200, 2).numpy() * 2 - 1
    >>> poly = ReLUPolytopes(network=net, bounds=(-1, 1)).fit(X)
    >>> poly.transform(X).shape
    (200, 8)
    >>> enum = poly.enumerate_regions()
    >>> bool(abs(enum.areas.sum() - 4) < 1e-9), enum.n_regions >= poly.n_regions_
    (True, True)
    """

    _parameter_constraints = {  # noqa: RUF012
        "network": "no_validation",  # any network as_relu_network reads, or None
        "image_shape": ["array-like", None],
        "bounds": [StrOptions({"global_range"}), "array-like", None],
        "region_stats": ["array-like"],
        "max_lp_regions": [Interval(Integral, 1, None, closed="left")],
        "facet_method": [StrOptions({"clarkson", "lp"})],
        "lp_solver": [StrOptions(set(_SOLVERS))],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "device": "no_validation",
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, network=None, *, image_shape=None, bounds="global_range", region_stats=(),
                 max_lp_regions=2000, facet_method="clarkson", lp_solver="auto", tol=1e-7,
                 device="auto", batch_size=8192, n_jobs=None, random_state=None, verbose=0):
        self.network = network
        self.image_shape = image_shape
        self.bounds = bounds
        self.region_stats = region_stats
        self.max_lp_regions = max_lp_regions
        self.facet_method = facet_method
        self.lp_solver = lp_solver
        self.tol = tol
        self.device = device
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.target_tags.required = needs_fit(self.network)
        tags.transformer_tags.preserves_dtype = []  # bit strings are uint8
        return tags

    # ----------------------------------------------------------------- validation
    def _check_region_stats(self):
        if not all(s in _REGION_STATS for s in self.region_stats):
            raise ValueError(f"region_stats must be a tuple of names from {_REGION_STATS}; "
                             f"got {self.region_stats!r}.")

    def _resolve_bounds(self, bounds, X=None):
        m = self.n_features_in_
        if bounds is None:
            return None
        if isinstance(bounds, str):
            if bounds != "global_range":
                raise ValueError(f"bounds must be 'global_range', None or (lo, hi); got {bounds!r}.")
            lo, hi = float(np.min(X)), float(np.max(X))
            if not lo < hi:
                raise ValueError(f"bounds='global_range' is degenerate: every value of X equals "
                                 f"{lo}. Pass explicit bounds=(lo, hi) or bounds=None.")
            return np.full(m, lo), np.full(m, hi)
        try:
            lo, hi = bounds
            lo = np.broadcast_to(np.asarray(lo, float), (m,)).copy()
            hi = np.broadcast_to(np.asarray(hi, float), (m,)).copy()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bounds must be 'global_range', None or a pair (lo, hi) of scalars "
                             f"or arrays of shape ({m},); got {bounds!r}.") from exc
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError(f"bounds must be finite (no NaN or inf); got {bounds!r}.")
        if np.any(lo >= hi):
            raise ValueError(f"bounds need lo < hi on every coordinate; got {bounds!r}.")
        return lo, hi

    def _method_bounds(self, bounds):
        if isinstance(bounds, str) and bounds == "fitted":
            return self.bounds_
        return self._resolve_bounds(bounds)

    def _scale(self, bounds):
        return float(np.max(bounds[1] - bounds[0])) if bounds is not None else self._data_scale

    def _validate(self, X):
        check_is_fitted(self, "patterns_")
        return validate_data(self, X, dtype=np.float64, reset=False)

    def _solver(self):
        return check_solver(self.lp_solver)

    # ----------------------------------------------------------------------- fit
    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the network's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, network=self.network)

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)  # an unfitted network is fitted here
    def fit(self, X, y=None, **fit_params):
        """Record the region of every sample of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, m)
            In the network's own input space (after the scaler it was trained behind);
            images as flat rows, folded by ``image_shape``.
        y : array-like, optional
            Used only to fit an unfitted scikit-learn / skorch ``network`` (on
            ``X, y`` as given).
        **fit_params : dict
            Metadata (``sample_weight``, ...) routed to the network's ``fit`` as
            it requested (``set_fit_request``); only with
            ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self : ReLUPolytopes
        """
        routed = route_fit_params(self, fit_params, names=("network",))
        self._check_region_stats()
        check_solver(self.lp_solver)  # highspy must be installed when asked for
        # resolved first: a CUDA device that is absent is a clear error before any work
        self._device = resolve_device(self.device)
        if getattr(X, "ndim", 2) > 2:  # arrays and tensors of images
            raise ValueError(f"X has shape {tuple(X.shape)}; ReLUPolytopes takes flat rows: pass "
                             "X.reshape(len(X), -1) and image_shape=X.shape[1:].")
        X_given, X = X, validate_data(self, X, dtype=np.float64)
        net = as_relu_network(fitted_network(self.network, X_given, y, **routed["network"]),
                              image_shape=self.image_shape)
        if net.n_inputs != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, but the network is expecting "
                             f"{net.n_inputs} features as input.")
        self.network_ = net
        if self.region_stats:
            self._check_mlp("region_stats")
        self.layer_sizes_ = net.layer_sizes
        self.n_hidden_units_ = net.n_hidden_units
        self.n_outputs_ = net.n_outputs
        self.output_activation_ = net.output_activation
        self.bounds_ = self._resolve_bounds(self.bounds, X)
        ptp = float(np.ptp(X)) if X.size else 0.0
        self._data_scale = ptp if ptp > 0 else max(1.0, float(np.max(np.abs(X))))

        bits, z, _ = forward_bits(net, X, device=self._device, batch_size=self.batch_size,
                                  n_jobs=self.n_jobs)
        self.patterns_, self.labels_, self.region_counts_ = unique_patterns(bits)
        self.n_regions_ = len(self.patterns_)
        self.affine_W_, self.affine_b_, norms = local_maps(
            net, self.patterns_, device=self._device, batch_size=self.batch_size, row_norms=True)
        V = np.column_stack([self.affine_W_.reshape(self.n_regions_, -1), self.affine_b_])
        scale = max(float(np.max(np.abs(V))), np.finfo(float).tiny) if V.size else 1.0
        self.n_distinct_affine_maps_ = len(np.unique(np.round(V / scale * 1e9), axis=0))
        self.unit_activation_rate_ = bits.mean(axis=0)
        self.margin_ = self._margins(X, z, norms[self.labels_])
        self.ambiguous_ = self.margin_ < 1e-9 * self._scale(self.bounds_)
        if self.bounds_ is not None:
            outside = np.any((X < self.bounds_[0]) | (X > self.bounds_[1]), axis=1)
            if outside.any():
                warn_user(f"{outside.sum()} samples lie outside bounds; their region cut by "
                          "the box may not contain them (flagged in ambiguous_).", GeolearnWarning)
        self._fit_region_stats()
        return self

    def _margins(self, X, z, norms):
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = np.where(norms > 1e-14, np.abs(z) / norms, np.inf)
        margin = dist.min(axis=1, initial=np.inf)
        if self.bounds_ is not None:
            lo, hi = self.bounds_
            margin = np.minimum(margin, np.minimum(X - lo, hi - X).min(axis=1))
        return margin

    def _fit_region_stats(self):
        stats = tuple(self.region_stats)
        R, m, h = self.n_regions_, self.n_features_in_, self.n_hidden_units_
        for attr in ("chebyshev_radius_", "chebyshev_center_", "n_active_", "active_bits_",
                     "n_box_facets_", "bounded_", "lp_region_index_"):
            setattr(self, attr, None)
        if not stats:
            return
        idx = np.arange(R)
        if R > self.max_lp_regions:
            rng = check_random_state(self.random_state)
            idx = np.sort(rng.choice(R, self.max_lp_regions, replace=False))
            warn_user(f"{R} distinct regions exceed max_lp_regions={self.max_lp_regions}: "
                      "LP statistics use a random subset (lp_region_index_).", PartialResultWarning)
        self.lp_region_index_ = idx
        results = self._region_lps(
            stats, [(self.patterns_[r], r) for r in idx],
            progress=lambda jobs: progress_bar(jobs, total=len(idx), unit="region",
                                               desc="ReLUPolytopes region LPs",
                                               verbose=self.verbose))
        if "chebyshev" in stats:
            self.chebyshev_radius_ = np.full(R, np.nan)
            self.chebyshev_center_ = np.full((R, m), np.nan)
            for r, res in zip(idx, results):
                self.chebyshev_center_[r], self.chebyshev_radius_[r] = res["center"], res["radius"]
        if "facets" in stats:
            self.n_active_, self.n_box_facets_ = np.full(R, np.nan), np.full(R, np.nan)
            self.active_bits_ = [None] * R
            for r, res in zip(idx, results):
                f = res["facets"]
                self.active_bits_[r] = f[f < h]
                self.n_active_[r], self.n_box_facets_[r] = np.sum(f < h), np.sum(f >= h)
        if "boundedness" in stats:
            self.bounded_ = np.full(R, np.nan)
            for r, res in zip(idx, results):
                self.bounded_[r] = res["bounded"]

    def _check_mlp(self, what):
        """Refuse the LP methods of regions for conv nets, naming the layer type that did."""
        if isinstance(self.network_, ConvReLUNet):
            kind = next((type(layer).__name__ for layer in self.network_.layers
                         if isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d))),
                        "Unflatten")
            raise ValueError(  # noqa: TRY004 (what the method cannot do for this network)
                f"{what} needs a ReLU MLP, but the network has a {kind} layer: the LP "
                "statistics of regions (region_stats, polytope, chebyshev, neighbours, "
                "enumerate_regions) are MLP-only. For conv nets use transform, "
                "local_affine_map, margin, segment_regions and plane_regions.")

    def _box(self, bounds="fitted"):
        b = self._method_bounds(bounds)
        return (None, None) if b is None else b

    # ------------------------------------------------------------------- outputs
    def _region_lps(self, stats, jobs, progress=None):
        """``_region_stats`` of each ``(pattern, region)`` job, in ``n_jobs`` processes."""
        run = functools.partial(_region_job, self.network_, self._box(), stats, self.tol,
                                self.facet_method, self._solver())
        return thread_map(run, jobs, self.n_jobs, backend="loky", progress=progress)

    def _bits(self, X):
        return forward_bits(self.network_, X, device=self._device, batch_size=self.batch_size,
                            n_jobs=self.n_jobs)

    def transform(self, X):
        """Bit strings of ``X`` (paper 1, eq. 4), layer-major.

        Returns
        -------
        bits : ndarray of shape (n_samples, h), uint8
        """
        return self._bits(self._validate(X))[0].astype(np.uint8)

    def get_feature_names_out(self, input_features=None):
        """``h{layer}_{unit}`` for each hidden unit (conv nets: ``relu{i}_{k}`` and
        ``maxpool{i}_{k}``, ``i`` the layer's index)."""
        check_is_fitted(self, "patterns_")
        if isinstance(self.network_, ConvReLUNet):
            return np.array([f"{name}_{k}" for name, size in zip(self.network_.block_names,
                                                                 self.network_.hidden_sizes)
                             for k in range(size)], dtype=object)
        return np.array([f"h{i}_{k}" for i, size in enumerate(self.network_.hidden_sizes)
                         for k in range(size)], dtype=object)

    def region_index(self, X):
        """Index into ``patterns_`` of each sample's region (-1 when no fit sample was there)."""
        bits = self._bits(self._validate(X))[0]
        index = {p.tobytes(): i for i, p in enumerate(self.patterns_)}
        return np.array([index.get(p.tobytes(), -1) for p in bits], dtype=int)

    def local_affine_map(self, X):
        """Affine map ``G(x) = W x + b`` of each sample's region (``W`` is the Jacobian).

        Returns
        -------
        W : ndarray of shape (n_samples, o, m)
        b : ndarray of shape (n_samples, o)
        """
        bits = self._bits(self._validate(X))[0]
        patterns, labels, _ = unique_patterns(bits)
        W, b = local_maps(self.network_, patterns, device=self._device, batch_size=self.batch_size)
        return W[labels], b[labels]

    def margin(self, X):
        """Radius of the largest ball centred at each sample inside its region (and the box).

        ``min_k |z_k(x)| / ||row k of What||`` over all rows (no LP); a lower
        bound on the region's Chebyshev radius. Negative outside the box.
        """
        X = self._validate(X)
        bits, z, _ = self._bits(X)
        patterns, labels, _ = unique_patterns(bits)
        _, _, norms = local_maps(self.network_, patterns, device=self._device,
                                 batch_size=self.batch_size, row_norms=True)
        return self._margins(X, z, norms[labels])

    def polytope(self, x=None, pattern=None, bounds="fitted"):
        """The region of point ``x`` (or of bit string ``pattern``) as a :class:`Polytope`.

        Parameters
        ----------
        x : array-like of shape (m,), optional
        pattern : array-like of shape (h,), optional
            Exactly one of ``x`` and ``pattern``.
        bounds : 'fitted', None or (lo, hi), default='fitted'
        """
        check_is_fitted(self, "patterns_")
        self._check_mlp("polytope")
        if (x is None) == (pattern is None):
            raise ValueError("pass exactly one of x and pattern.")
        if x is not None:
            pattern = self._bits(self._validate(np.atleast_2d(x)))[0][0]
        pattern = np.asarray(pattern).astype(bool).ravel()
        if pattern.shape != (self.n_hidden_units_,):
            raise ValueError(f"pattern must have {self.n_hidden_units_} bits; got "
                             f"{pattern.shape[0]}.")
        A, c = hrep(self.network_, pattern)
        W, b = local_maps(self.network_, pattern[None])
        lo, hi = self._box(bounds)
        return Polytope(pattern, A, c, W[0], b[0], lo, hi, tol=self.tol,
                        facet_method=self.facet_method, lp_solver=self.lp_solver)

    def chebyshev(self, X):
        """Chebyshev radius and centre of each sample's region (cut by the fitted box).

        Returns
        -------
        radius : ndarray of shape (n_samples,)
        center : ndarray of shape (n_samples, m)
        """
        check_is_fitted(self, "patterns_")
        self._check_mlp("chebyshev")
        bits = self._bits(self._validate(X))[0]
        patterns, labels, _ = unique_patterns(bits)
        res = self._region_lps(("chebyshev",), [(p, None) for p in patterns])
        radius = np.array([r["radius"] for r in res])
        center = np.array([r["center"] for r in res]).reshape(len(res), -1)
        return radius[labels], center[labels]

    def neighbours(self, pattern):
        """Regions sharing a facet with the region of ``pattern`` (inside the fitted box).

        Each neighbour is found by crossing the facet at its Chebyshev centre,
        so degenerate networks (units vanishing together) give the true
        neighbour rather than an empty one-bit flip.

        Returns
        -------
        neighbours : list of (int, ndarray)
            The facet's unit and the neighbour's bit string.
        """
        check_is_fitted(self, "patterns_")
        self._check_mlp("neighbours")
        lo, hi = self._box()
        out, _, _, _ = region_neighbours(
            self.network_, np.asarray(pattern, bool), lo, hi, scale=self._scale(self.bounds_),
            tol=self.tol, facet_method=self.facet_method, solver=self._solver())
        return out

    def hamming_distances(self, X, Y=None, paired=False):
        """Hamming distances between the bit strings of ``X`` and ``Y`` (default ``X``).

        Returns ``(n, n')`` int, or ``(n,)`` with ``paired=True``.
        """
        BX = self._bits(self._validate(X))[0]
        BY = None if Y is None else self._bits(self._validate(Y))[0]
        if paired and (BY is None or len(BY) != len(BX)):
            raise ValueError("paired=True needs Y with as many rows as X.")
        return hamming(BX, BY, paired=paired)

    def hamming_at_radius(self, X, radius, n_directions=1, random_state=None):
        """``H(s(x), s(x + radius u))`` for random unit directions ``u`` (paper 1, Table 4).

        Directions are ``g / ||g||`` with ``g ~ N(0, I)``.

        Returns
        -------
        H : ndarray of shape (n_samples, n_directions), int
        """
        X = self._validate(X)
        check_scalar_param(radius, "radius", low=0)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        g = rng.standard_normal((len(X), n_directions, X.shape[1]))
        u = g / np.linalg.norm(g, axis=2, keepdims=True)
        Xp = (X[:, None] + radius * u).reshape(-1, X.shape[1])
        B = self._bits(X)[0]
        Bp = self._bits(Xp)[0].reshape(len(X), n_directions, -1)
        return (Bp != B[:, None]).sum(axis=2)

    def segment_regions(self, x_a, x_b, method="exact"):
        """Regions crossed by the segment from ``x_a`` to ``x_b`` (paper 1, Section 3.2).

        Parameters
        ----------
        x_a, x_b : array-like of shape (m,)
        method : {'exact', 'bisection'}, default='exact'
            ``'exact'``: every crossing from the layer-wise breakpoints;
            ``'bisection'``: the paper's Algorithm 2 (a lower bound).

        Returns
        -------
        regions : Bunch
            The regions met by ``x(t) = x_a + t (x_b - x_a)``, ``t`` in [0, 1], in
            order: ``t_breaks`` (ndarray of shape (k,): the crossing parameters, or
            for ``'bisection'`` the accepted points, inside regions), ``patterns``
            (bool ndarray of shape (k + 1, h)), ``points`` (ndarray of shape
            (k + 1, m): a point inside each interval, its midpoint for ``'exact'``),
            ``n_regions`` (``k + 1``), ``hamming`` (``H(s(x_a), s(x_b))``) and
            ``n_flips`` (ndarray of shape (k,): bits flipped at each crossing, 1
            generically).

        Examples
        --------
        Two hidden units switch on at ``x = 0`` and ``x = 0.5``; the segment
        ``[-1, 1]`` crosses both:

        >>> import numpy as np, torch
        >>> from geolearn.polytopes import ReLUPolytopes
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(),
        ...                           torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.fill_(1.0), net[0].bias.copy_(torch.tensor([0.0, -0.5]))
        >>> poly = ReLUPolytopes(network=net, bounds=None).fit(np.zeros((1, 1)))
        >>> seg = poly.segment_regions([-1.0], [1.0])
        >>> seg.n_regions, seg.t_breaks.tolist(), seg.hamming
        (3, [0.5, 0.75], 2)
        """
        ends = self._validate(np.vstack([np.ravel(x_a), np.ravel(x_b)]))
        if method == "exact":
            return segment_exact(self.network_, ends[0], ends[1])
        if method == "bisection":
            return segment_bisection(self.network_, ends[0], ends[1])
        raise ValueError(f"method must be 'exact' or 'bisection'; got {method!r}.")

    def segment_region_counts(self, XA, XB, method="exact"):
        """Number of regions on each segment ``XA[i] -> XB[i]``.

        Returns
        -------
        counts : ndarray of shape (n_pairs,), int
        """
        XA, XB = self._validate(XA), self._validate(XB)
        if XA.shape != XB.shape:
            raise ValueError(f"XA and XB must have the same shape; got {XA.shape} and {XB.shape}.")
        if method == "exact":  # all segments at once
            return segment_counts_exact(self.network_, XA, XB)
        return np.array([self.segment_regions(a, b, method=method).n_regions
                         for a, b in zip(XA, XB)], dtype=int)

    def plane_regions(self, x0, u, v, bounds=(-1.0, 1.0)):
        """Regions met by the 2-D slice ``x0 + a u + b v`` of the input space, exactly.

        The slice SplineCam draws through image space (a point and two
        directions, e.g. three images: ``x0 = x_1``, ``u = x_2 - x_1``,
        ``v = x_3 - x_1``). Layer by layer every cell of the square is cut
        along the lines where a ReLU unit or the argmax of a max-pool window
        changes (LP-free polygon clipping, like ``enumerate_regions``'
        ``'subdivision'``); MLPs and conv nets alike.

        Parameters
        ----------
        x0, u, v : array-like of shape (m,)
            The slice's origin and directions (flat rows for images).
        bounds : (lo, hi), default=(-1.0, 1.0)
            The square ``lo <= a, b <= hi`` of plane coordinates.

        Returns
        -------
        regions : Bunch
            patterns : ndarray of shape (N, h), bool
                The bit string of each region met.
            n_regions : int
                ``N``.
            polygons : list of ndarray of shape (k, 2)
                Each region's part of the square, in plane coordinates ``(a, b)``,
                vertices in order.
            areas : ndarray of shape (N,)
                Their areas in plane coordinates (summing to ``(hi - lo) ** 2``).

        Examples
        --------
        Two ReLU units along the axes cut the slice through the origin into
        four quadrants:

        >>> import numpy as np, torch
        >>> from geolearn.polytopes import ReLUPolytopes
        >>> net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(),
        ...                           torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.eye(2, 3)), net[0].bias.zero_()
        >>> poly = ReLUPolytopes(network=net).fit(np.eye(3))
        >>> plane = poly.plane_regions(np.zeros(3), [1.0, 0, 0], [0, 1.0, 0])
        >>> plane.n_regions, plane.areas.tolist()
        (4, [1.0, 1.0, 1.0, 1.0])
        """
        check_is_fitted(self, "patterns_")
        x0, u, v = self._validate(np.vstack([np.ravel(x0), np.ravel(u), np.ravel(v)]))
        try:
            lo, hi = (float(b) for b in bounds)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bounds must be a pair (lo, hi) of numbers; got {bounds!r}.") from exc
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds must be finite with lo < hi; got {bounds!r}.")
        return plane_regions(self.network_, x0, u, v, lo, hi)

    def enumerate_regions(self, bounds="fitted", start=None, method="auto", max_regions=100000,
                          max_time=None):
        """Every region of the network in a box or in R^m (paper 1, Algorithm 1).

        Parameters
        ----------
        bounds : 'fitted', None or (lo, hi), default='fitted'
        start : array-like of shape (m,), optional
            A point in the first region (default: the box centre, or the origin).
        method : {'auto', 'traversal', 'subdivision'}, default='auto'
            ``'subdivision'`` (exact polygon clipping, LP-free) needs 2-D inputs
            and a box; ``'auto'`` uses it then, else ``'traversal'``.
        max_regions : int, default=100000
            Stop (with a warning and ``complete=False``) past this many regions.
        max_time : float, optional
            Seconds: stop (with a warning saying how many regions were enumerated,
            and ``complete=False``) once this much time has passed, keeping the
            regions fully enumerated so far (at least one). None: no limit.

        Returns
        -------
        enumeration : Bunch
            All regions of the network (in the box or in R^m) and their dual graph
            (distances along it: :func:`dual_distances`):

            patterns : ndarray of shape (N, h), bool
                The on/off bit string of each region's hidden units.
            n_regions : int
                The number of regions ``N``.
            bounded : ndarray of shape (N,), bool
                Whether each region itself (ignoring the box) is bounded.
            chebyshev_radius : ndarray of shape (N,)
                Of the region cut by the box (``inf`` for unbounded balls).
            W : ndarray of shape (N, o, m)
                The linear part of each region's affine map (the Jacobian there).
            b : ndarray of shape (N, o)
                The offset of each region's affine map.
            adjacency : scipy.sparse.csr_matrix of shape (N, N)
                Regions sharing a facet; the value is the flipped unit + 1.
            polygons : list of ndarray or None
                Ordered vertices of each region cut by the box (2-D with a box only).
            areas : ndarray of shape (N,) or None
                The area of each polygon (2-D with a box only).
            complete : bool
                False when ``max_regions`` or ``max_time`` stopped the enumeration (a
                warning says how far it got). The regions given are then a part of the
                whole, each with its own statistics, and the graph is the one between them.
            n_degenerate_crossings : int
                Facet crossings where more than the facet's bit flipped (the one-bit
                flip is then an empty region, skipped).

        Examples
        --------
        Two hidden units along the axes cut the square ``[-1, 1]^2`` into its
        four quadrants:

        >>> import numpy as np, torch
        >>> from geolearn.polytopes import ReLUPolytopes
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(),
        ...                           torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.eye(2)), net[0].bias.zero_()
        >>> poly = ReLUPolytopes(network=net, bounds=(-1, 1)).fit(np.zeros((1, 2)))
        >>> enum = poly.enumerate_regions()
        >>> enum.n_regions, enum.areas.round(12).tolist(), int(enum.adjacency.nnz)
        (4, [1.0, 1.0, 1.0, 1.0], 8)
        """
        check_is_fitted(self, "patterns_")
        self._check_mlp("enumerate_regions")
        check_scalar_param(max_regions, "max_regions", kind="integer", low=1)
        check_scalar_param(max_time, "max_time", low=0, allow_none=True)
        box = self._method_bounds(bounds)
        lo, hi = (None, None) if box is None else box
        m = self.n_features_in_
        if method == "auto":
            method = "subdivision" if (m == 2 and box is not None) else "traversal"
        if method == "subdivision":
            if m != 2 or box is None:
                raise ValueError("method='subdivision' needs 2-D inputs and a box; got "
                                 f"m={m}, bounds={bounds!r}.")
            return subdivide(self.network_, lo, hi, solver=self._solver(),
                             max_regions=max_regions, max_time=max_time, device=self._device,
                             verbose=self.verbose)
        if method != "traversal":
            raise ValueError(f"method must be 'auto', 'traversal' or 'subdivision'; got {method!r}.")
        scale = self._scale(box)
        if start is None:
            start = self._start_point(lo, hi, scale)
        start = self._validate(np.atleast_2d(start))[0]
        return traverse(self.network_, start, lo, hi, scale=scale, tol=self.tol,
                        facet_method=self.facet_method, solver=self._solver(),
                        max_regions=max_regions, max_time=max_time, device=self._device,
                        verbose=self.verbose)

    def _start_point(self, lo, hi, scale):
        """The box centre (or the origin), nudged off any boundary."""
        rng = check_random_state(self.random_state)
        x = np.zeros(self.n_features_in_) if lo is None else 0.5 * (lo + hi)
        for _ in range(100):
            bits, z, _ = self._bits(x[None])
            patterns, labels, _ = unique_patterns(bits)
            _, _, norms = local_maps(self.network_, patterns, row_norms=True)
            if self._margins(x[None], z, norms)[0] > 1e-6 * scale:
                return x
            x = x + 1e-3 * scale * rng.standard_normal(len(x))
            if lo is not None:
                x = np.clip(x, lo + 1e-3 * (hi - lo), hi - 1e-3 * (hi - lo))
        return x

    def summary_table(self, groups, metric, **kw):
        """Paper 1's tables: ``{group: describe(values)}`` of one statistic per group.

        Parameters
        ----------
        groups : dict
            ``{'train': X_tr, 'test': X_te, ...}``; for ``'segment_regions'`` the
            values are ``(XA, XB)`` pairs.
        metric : {'chebyshev_radius', 'n_active', 'hamming_at_radius', 'margin', \
'segment_regions'}
            Tables 6-7, 2, 4, the margin, Table 5 / Fig. 4.
        **kw
            ``radius`` (and ``n_directions``) for ``'hamming_at_radius'``;
            ``method`` for ``'segment_regions'``.

        Returns
        -------
        table : dict of dict
        """
        check_choice(metric, "metric", _METRICS)
        out = {}
        for name, data in groups.items():
            if metric == "chebyshev_radius":
                values = self.chebyshev(data)[0]
            elif metric == "n_active":
                self._check_mlp("summary_table(metric='n_active')")
                patterns, labels, _ = unique_patterns(self._bits(self._validate(data))[0])
                res = self._region_lps(("facets",), [(p, None) for p in patterns])
                n_act = np.array([np.sum(r["facets"] < self.n_hidden_units_) for r in res])
                values = n_act[labels]
            elif metric == "hamming_at_radius":
                values = self.hamming_at_radius(data, **kw)
            elif metric == "margin":
                values = self.margin(data)
            else:
                values = self.segment_region_counts(*data, **kw)
            out[name] = describe(values)
        return out
