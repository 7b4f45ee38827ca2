"""The registry of geometry measures: each ``f(model, X, y=None, **params) -> float``."""

import inspect
import numbers
import warnings

import numpy as np
import torch
from sklearn.utils import Bunch, check_random_state

from .._utils import torch_threads
from ..diffeo import relative_stability
from ..exceptions import NumericalWarning
from ..invariance import logit_invariance
from ..models import GradientsUnavailableError, as_model
from ..polytopes import as_relu_network, segment_region_counts
from ..representations import categorical_rdm, compare_rdms, compute_rdm
from ..riemannian import RiemannianFeatureGeometry


class MeasureUnavailableError(ValueError):
    """A measure does not apply to this model or data (no gradients, not a ReLU net, no images).

    :func:`geometry_report` catches it and reports the measure as skipped with
    its message; :class:`GeometryTracker` lets it stop training, since a
    tracked measure that cannot be computed is a mistake in the setup. A
    measure of your own raises it to say why it does not apply.

    Examples
    --------
    >>> from geolearn.inspection import MeasureUnavailableError
    >>> try:
    ...     raise MeasureUnavailableError("no images: pass image_shape")
    ... except ValueError as exc:
    ...     print(exc)
    no images: pass image_shape
    """


def _images(X, image_shape, name):
    """Check that ``X`` holds images: a 3-D/4-D array, or flat rows with ``image_shape``."""
    if image_shape is None and np.ndim(X) < 3:
        raise MeasureUnavailableError(
            f"no images: {name} needs image_shape, or X of shape (n, C, H, W).")


def _differentiable(model, name):
    try:
        as_model(model).require_gradients(name)
    except GradientsUnavailableError as exc:
        raise MeasureUnavailableError(f"no gradients: {exc}") from exc


def _relative_stability(model, X, y=None, *, image_shape=None, random_state=0, **params):
    """``R_f`` of :func:`geolearn.diffeo.relative_stability` (deformations of ``delta`` pixels)."""
    _images(X, image_shape, "relative_stability")
    return float(relative_stability(model, X, image_shape=image_shape,
                                    random_state=random_state, **params).R)


_DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64"}


def _log_volume(model, X, y=None, *, layer=None, image_shape=None, **params):
    """Median over ``X`` of the log volume element of ``layer``'s pullback metric."""
    _differentiable(model, "log_volume")
    adapter = as_model(model)
    # the model's own dtype and device: RiemannianFeatureGeometry would otherwise copy it
    params = {"dtype": _DTYPE_NAMES.get(adapter.dtype, "float64"), "device": None, **params}
    geometry = RiemannianFeatureGeometry(model, layer=layer, image_shape=image_shape, **params)
    with warnings.catch_warnings():
        # documented in MEASURES: ReLU volumes are piecewise constant, a layer narrower than
        # the input gives the pseudo-volume, whose rank a ReLU net's dead units lower at some
        # probes; warnings at every epoch would say nothing new
        warnings.filterwarnings("ignore", "the feature map has", NumericalWarning)
        warnings.filterwarnings("ignore", "the numerical rank of the metric varies",
                                NumericalWarning)
        geometry.fit(X)
        logv = geometry.log_volume_element(X)
    return Bunch(value=float(np.median(logv)),
                 interval=(float(np.quantile(logv, 0.25)), float(np.quantile(logv, 0.75))))


def _logit_invariance(model, X, y=None, *, group="rot4", image_shape=None, **params):
    """Logit invariance error of :func:`geolearn.invariance.logit_invariance` for ``group``."""
    _images(X, image_shape, "logit_invariance")
    return logit_invariance(model, X, group, image_shape=image_shape, **params)


def _rdm_similarity(model, X, y=None, *, layer=None, image_shape=None, target_rdm=None,
                    method="spearman", metric="correlation"):
    """Similarity of ``layer``'s ``metric`` RDM of ``X`` to ``target_rdm`` (default: ``y``'s)."""
    if target_rdm is None:
        if y is None:
            raise MeasureUnavailableError(
                "no labels: rdm_similarity compares with categorical_rdm(y); pass y or "
                "target_rdm.")
        target_rdm = categorical_rdm(y)
    adapter = as_model(model)
    X = np.reshape(X, (len(X), *adapter.sample_layout(np.shape(X)[1:], image_shape)))
    features = adapter.features(X, layer).reshape(len(X), -1)
    if metric == "correlation" and features.shape[1] < 3:
        raise MeasureUnavailableError(
            f"too few features: the correlation RDM of {features.shape[1]} feature(s) is "
            "undefined; pass metric='euclidean' in its measure_params.")
    return float(compare_rdms(compute_rdm(features, metric), target_rdm, method))


def _region_density(model, X, y=None, *, image_shape=None, n_segments=32, random_state=0):
    """Linear regions crossed per unit length along ``n_segments`` fixed random segments."""
    try:
        network = as_relu_network(model, image_shape=image_shape)
    except (ValueError, TypeError) as exc:
        raise MeasureUnavailableError(f"not a ReLU net: {exc}") from exc
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    if len(X) < 2:
        raise ValueError(f"region_density needs at least 2 probes to draw segments; got {len(X)}.")
    # segments between probes, drawn from random_state alone: the same ones at every epoch
    rng = check_random_state(random_state)
    start = rng.randint(len(X), size=n_segments)
    stop = (start + rng.randint(1, len(X), size=n_segments)) % len(X)
    XA, XB = X[start], X[stop]
    counts = segment_region_counts(network, XA, XB)  # the network alone: no ReLUPolytopes fit
    length = np.linalg.norm(XB - XA, axis=1).sum()
    if length == 0:
        raise ValueError("region_density: every segment has length 0 (identical probes).")
    return float((counts - 1).sum() / length)


MEASURES = {
    "relative_stability": _relative_stability,
    "log_volume": _log_volume,
    "logit_invariance": _logit_invariance,
    "rdm_similarity": _rdm_similarity,
    "region_density": _region_density,
}
"""The registered measures, ``name -> f(model, X, y=None, **params)``.

- ``"relative_stability"``: ``R_f`` of :func:`geolearn.diffeo.relative_stability`
  (images; parameters ``image_shape``, ``random_state`` and any of
  :class:`~geolearn.diffeo.DiffeoStability`'s, e.g. ``delta``, ``c``).
- ``"log_volume"``: median over the probes of the log volume element of a
  layer's pullback metric (:class:`~geolearn.riemannian.RiemannianFeatureGeometry`,
  parameters ``layer``, ``image_shape``; gradients), with its interquartile
  range as ``interval``. A layer narrower than the input gives the
  pseudo-volume of :class:`~geolearn.riemannian.RiemannianFeatureGeometry`,
  and a ReLU net a piecewise-constant one (their warnings are not repeated).
  A ReLU net's Jacobian has at each probe a rank of at most the fewest active
  units of a layer there, so the pseudo-volumes of different probes may have
  different ranks (its warning is not repeated either); pass ``rank=k`` in
  ``measure_params`` for the top ``k`` singular values at every probe.
- ``"logit_invariance"``: :func:`geolearn.invariance.logit_invariance` for a
  ``group`` (default ``"rot4"``; images).
- ``"rdm_similarity"``: :func:`~geolearn.representations.compare_rdms` of a
  ``layer``'s RDM of the probes (``metric="correlation"``, at least 3
  features) with ``target_rdm`` (default: the categorical RDM of ``y``),
  ``method="spearman"``.
- ``"region_density"``: linear regions crossed per unit length along
  ``n_segments=32`` segments between probes drawn from ``random_state``
  (:func:`~geolearn.polytopes.segment_region_counts`; ReLU MLPs, and conv ReLU nets
  with ``image_shape``).

A measure returns a float, or a ``Bunch`` with ``value`` and ``interval``
``(low, high)``; it raises :class:`MeasureUnavailableError` when it does not
apply. Add one with :func:`register_measure`.
"""


def register_measure(name, func):
    """Add a measure to :data:`MEASURES` under ``name``.

    Parameters
    ----------
    name : str
        The measure's name: the history column :class:`GeometryTracker` records
        and the ``measure`` of :func:`geometry_report`'s table.
    func : callable
        ``func(model, X, y=None, **params) -> float`` (or a ``Bunch`` with
        ``value`` and ``interval``). It is called with the model frozen (eval
        mode, no parameter gradients), on one torch thread, with the global
        random generators restored after; it receives the keyword arguments
        among ``image_shape``, ``layer`` and ``random_state`` that its signature
        names, and its entry of
        ``measure_params``. Raise :class:`MeasureUnavailableError` where it
        does not apply.

    Returns
    -------
    func : callable
        ``func`` itself, so that ``register_measure`` can decorate.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.inspection import MEASURES, register_measure
    >>> from geolearn.models import as_model
    >>> def output_norm(model, X, y=None):
    ...     return float(np.linalg.norm(as_model(model).forward(X), axis=1).mean())
    >>> _ = register_measure("output_norm", output_norm)
    >>> "output_norm" in MEASURES
    True
    >>> del MEASURES["output_norm"]
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}.")
    if not callable(func):
        raise TypeError(f"func must be callable, f(model, X, y=None, **params); got {func!r}.")
    MEASURES[name] = func
    return func


def resolve_measures(measures):
    """``{column: func}`` from a name, a callable, a list of them or a dict ``column -> them``."""
    if isinstance(measures, str) or callable(measures):
        measures = [measures]
    if isinstance(measures, dict):
        items = list(measures.items())
    else:
        try:
            items = [(m if isinstance(m, str) else getattr(m, "__name__", None), m)
                     for m in measures]
        except TypeError:
            raise TypeError("measures must be a measure name, a callable, a list of them or a "
                            f"dict of column name to them; got {measures!r}.") from None
    if not items:
        raise ValueError("measures is empty: name at least one measure.")
    resolved = {}
    for column, measure in items:
        if isinstance(measure, str):
            if measure not in MEASURES:
                raise ValueError(f"unknown measure {measure!r}; the registered measures are "
                                 f"{sorted(MEASURES)} (add one with register_measure).")
            measure = MEASURES[measure]
        elif not callable(measure):
            raise TypeError(f"measure {column!r} must be a registered name or a callable "
                            f"f(model, X, y); got {measure!r}.")
        if not isinstance(column, str) or not column:
            raise ValueError(f"measure {measure!r} has no name: give measures as a dict "
                             "{column name: measure}.")
        if column in resolved:
            raise ValueError(f"two measures are named {column!r}: give measures as a dict "
                             "{column name: measure}.")
        resolved[column] = measure
    return resolved


def _accepted(func, params):
    """The entries of ``params`` that ``func``'s signature names (not through ``**kwargs``)."""
    try:
        signature = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing extra
        return {}
    names = {p.name for p in signature if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {k: v for k, v in params.items() if k in names}


def evaluate_measure(name, func, model, X, y=None, *, context=None, params=None, n_threads=1):
    """``(value, interval)`` of one measure, the model frozen and the random state untouched.

    ``context`` (``image_shape``, ``layer``, ``random_state``) reaches the measure
    where its signature takes it; ``params`` always does.
    """
    kwargs = {**_accepted(func, {k: v for k, v in (context or {}).items() if v is not None}),
              **(params or {})}
    adapter = as_model(model)
    devices = [adapter.device] if adapter.device.type == "cuda" else []
    numpy_state = np.random.get_state()
    # the global generators are restored after: tracking leaves training's draws unchanged
    with (torch.random.fork_rng(devices=devices), torch_threads(n_threads), adapter.frozen()):
        try:
            out = func(model, X, y, **kwargs)
        finally:
            np.random.set_state(numpy_state)
    value, interval = (out.value, out.get("interval")) if isinstance(out, Bunch) else (out, None)
    if not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"measure {name!r} returned {value!r}; a measure returns a finite "
                         "float.")
    return float(value), (None if interval is None else tuple(float(v) for v in interval))
