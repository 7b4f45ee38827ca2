"""Relative stability to diffeomorphisms ``R_f = D_f / G_f`` (Petrini et al., Eqs. 4-6)."""

import numbers
from functools import partial

import numpy as np
import torch
from scipy.spatial.distance import pdist
from sklearn.base import BaseEstimator, MetaEstimatorMixin, _fit_context
from sklearn.exceptions import NotFittedError
from sklearn.utils import Bunch, check_random_state, get_tags
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array, check_is_fitted

from .._utils import (
    check_images,
    check_numeric_array,
    check_squares_finite,
    fitted_on_success,
    iter_batches,
    row_generators,
    row_seeds,
    to_tensor,
    warn_user,
)
from ..models import fit_or_use
from ..models._internal import fit_router, is_prefit, route_fit_params, tabular_input
from ._exceptions import StabilityWarning
from ._images import check_fitted_shape, image_side, tabular_check_failures
from ._probe import RESPONSES, Probe, resolve_response
from ._sampler import (
    _check_c,
    _check_n,
    _coefficients,
    _default_range,
    _fields_from_coefficients,
    _max_xi_from_coefficients,
    _remap,
    displacement_delta,
    temperature_for_delta,
)
from ._stats import StabilityStats

AVERAGES = ("mean", "median", "median_per_unit")
NOISE_NORMS = ("per_sample", "average")
_TINY = 1e-300
_RECOMMENDED_PROBES = 100
# more fields than this that are not diffeomorphisms, and R_f measures something else
_MAX_FRAC_NON_DIFFEO = 0.5
_UPSAMPLE = ("upsample the images (e.g. load_digits_images(upsample=2), or "
             "scipy.ndimage.zoom in a FunctionTransformer before the model), or lower delta (or T) "
             "or c")


# --------------------------------------------------------------------------- log averages
def log_average(values, axis=None):
    """Geometric mean ``exp(mean(log v))``, the paper's way of combining realisations.

    ``log_average(R) == log_average(D) / log_average(G)`` whenever ``R = D / G``
    realisation by realisation.

    Parameters
    ----------
    values : array-like of positive floats
    axis : int or None, default=None

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> from geolearn.diffeo import log_average
    >>> round(log_average([0.01, 1.0]), 6)
    0.1
    """
    v = check_numeric_array(values, "values", dtype=np.float64, ensure_2d=False,
                            allow_nd=True)
    if np.any(v < 0):
        raise ValueError("log_average needs values >= 0.")
    return _log_average(v, axis)


def _log_average(v, axis=None):
    """:func:`log_average` of checked values; NaN (an undefined ratio, warned) propagates."""
    with np.errstate(divide="ignore"):
        out = np.exp(np.mean(np.log(v), axis=axis))
    return float(out) if np.ndim(out) == 0 else out


def log_std(values, axis=None):
    """Standard deviation of ``log10(values)``: the paper's error bars.

    Parameters
    ----------
    values : array-like of positive float
        Measurements such as ratios ``R_f`` over seeds.
    axis : int, optional
        Axis along which to take the deviation (None: all values).

    Returns
    -------
    std : float or ndarray
        A float when ``axis`` is None, else an array.

    Examples
    --------
    >>> from geolearn.diffeo import log_std
    >>> round(log_std([0.01, 1.0]), 6)
    1.0
    """
    v = check_numeric_array(values, "values", dtype=np.float64, ensure_2d=False,
                            allow_nd=True)
    if np.any(v <= 0):
        raise ValueError("log_std needs values > 0.")
    out = np.std(np.log10(v), axis=axis)
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------- engine
def _normals(keys, stream, shape):
    """Standard normals of ``shape`` per row, from a generator keyed on the row and ``stream``.

    ``keys`` are the rows' :func:`geolearn._utils.row_seeds`: a probe's draws do not
    depend on the other probes, their order or the batching.
    """
    generators = row_generators(keys, stream)
    out = np.empty((len(generators), *shape))
    for rng, row in zip(generators, out):
        rng.standard_normal(out=row)  # in place: the draws of standard_normal(shape), no stack
    return out


def _pair_sq_distances(F, max_pairs, rng):
    """Squared distances of all pairs ``i < j``, or of ``max_pairs`` uniform random pairs."""
    N = len(F)
    if N * (N - 1) // 2 <= max_pairs:
        return pdist(F, "sqeuclidean")
    i = rng.integers(0, N, max_pairs)
    j = rng.integers(0, N - 1, max_pairs)
    j += j >= i  # uniform over j != i
    out = np.empty(max_pairs)
    for sl in iter_batches(max_pairs, 8192):
        out[sl] = ((F[i[sl]] - F[j[sl]]) ** 2).sum(axis=1)
    return out


def _average(sq, average):
    """``<.>`` of squared differences: per-sample norms, or per-unit rows for median_per_unit."""
    if average == "mean":
        return float(np.mean(sq))
    if average == "median":
        return float(np.median(sq))
    return float(np.median(sq, axis=0).sum())


def _warn(kind, message):
    """Show a StabilityWarning at the user's line (``kind`` names it for the scorer's sink)."""
    warn_user(message, StabilityWarning)


def _ratios(num, den, pairs, what, warn=_warn):
    """``D, G, R`` from averaged quantities; ``nan`` with a warning for a vanishing denominator."""
    def ratio(a, b, name):
        if b < _TINY:
            warn("denominator", f"{what}: the denominator of {name} is {b:.3g} (f is constant "
                 "on the probes or under noise); returning nan.")
            return np.nan
        if a < _TINY:
            warn("unchanged", f"{what}: f did not change under deformation for the typical "
                 f"probe, so {name} = 0.")
        return a / b

    return ratio(num, pairs, "D"), ratio(den, pairs, "G"), ratio(num, den, "R")


def _summary(R, D, G):
    R, D, G = (np.asarray(v, dtype=float) for v in (R, D, G))
    with np.errstate(invalid="ignore", divide="ignore"):
        std = float(np.std(np.log10(R))) if len(R) > 1 else 0.0
    return Bunch(R=_log_average(R), D=_log_average(D), G=_log_average(G), R_repeats=R,
                 D_repeats=D, G_repeats=G, log10_R_std=std)


def _reference(X, interp, batches):
    """The images ``f`` is compared at: ``X``, smoothed for Gaussian interpolation."""
    if interp != "gaussian":
        return X
    # Gaussian interpolation smooths even at T = 0: compare with the smoothed image
    n = X.shape[-1]
    return torch.cat([_remap(X[sl], torch.zeros(sl.stop - sl.start, 2, n, n,
                                                dtype=torch.float64, device=X.device),
                             "gaussian") for sl in batches])


def _check_finite(name, F):
    """Refuse non-finite model outputs: R_f, D_f and G_f would be NaN without a word."""
    bad = ~np.isfinite(F).reshape(len(F), -1).all(axis=1)
    if bad.any():
        what = "the model's output" if name == "output" else f"layer {name!r}"
        raise ValueError(f"{what} is NaN or infinite for {int(bad.sum())} of {len(F)} images; "
                         "the stabilities are undefined (check the model and the input scale).")
    return F


def _outputs(probe, X, batches):
    """``{layer: f(X)}``, probed batch by batch."""
    out = {}
    for sl in batches:
        for name, F in probe(X[sl]).items():
            out.setdefault(name, []).append(F)
    return {name: _check_finite(name, np.concatenate(parts)) for name, parts in out.items()}


def _changes(probe, F0, perturbed, per_unit):
    """``{layer: squared change of f}`` over the ``(slice, images)`` batches of ``perturbed``.

    Rows are per-sample squared norms, or per-unit squares for ``median_per_unit``.
    """
    out = {name: [] for name in F0}
    for sl, X_p in perturbed:
        for name, F in probe(X_p).items():
            diff2 = (_check_finite(name, F) - F0[name][sl]) ** 2
            out[name].append(diff2 if per_unit else diff2.sum(axis=1))
    return {name: np.concatenate(parts) for name, parts in out.items()}


def _deformed(X, x_ref, r, radii, fields_out, cfg):
    """Batches ``tau x`` of repeat ``r``; fills ``radii`` with ``|tau x - x|``.

    ``fields_out = (sq_disp, non_diffeo)`` receive each field's mean squared
    displacement and whether it is not a diffeomorphism, per probe.
    """
    n = X.shape[-1]
    sq_disp, non_diffeo = fields_out
    for k in range(cfg.n_diffeo):
        for sl in cfg.batches:
            z = _normals(cfg.row_keys[sl], (0, r, k), (2, cfg.c, cfg.c))
            coeffs = _coefficients(z, cfg.T, cfg.c, device=X.device)
            fields = _fields_from_coefficients(coeffs, n)
            non_diffeo[k, sl] = (_max_xi_from_coefficients(coeffs, n) >= 1).cpu().numpy()
            sq_disp[k, sl] = fields.square().sum(1).mean((1, 2)).cpu().numpy()
            X_tau = _remap(X[sl], fields, cfg.interp)
            radii[k, sl] = torch.linalg.vector_norm((X_tau - x_ref[sl]).flatten(1),
                                                    dim=1).cpu().numpy()
            yield sl, X_tau


def _noised(x_ref, r, radii, cfg):
    """Batches ``x + eta`` of repeat ``r``, ``eta`` isotropic of norm ``radii``."""
    d = x_ref[0].numel()
    for k in range(cfg.n_diffeo):
        for sl in cfg.batches:
            g = torch.as_tensor(_normals(cfg.row_keys[sl], (1, r, k), (d,)), device=x_ref.device)
            scale = torch.as_tensor(radii[k, sl], device=x_ref.device) / torch.linalg.vector_norm(
                g, dim=1)
            yield sl, x_ref[sl] + (scale[:, None] * g).reshape(x_ref[sl].shape)


def _progress(probe, n_calls, verbose):
    """``probe`` that advances a progress bar of ``n_calls`` forward passes when ``verbose``."""
    if not verbose:
        return probe, None
    from tqdm.auto import tqdm

    bar = tqdm(total=n_calls, desc="DiffeoStability", unit="batch")

    def counted(X):
        out = probe(X)
        bar.update()
        return out

    return counted, bar


def _partial(probe, X, *, T, c, interp, average, noise_norm, n_diffeo, n_repeats, batch_size,
             entropy, verbose=0):
    """The map step of :class:`DiffeoStability`: per-probe statistics of ``X``.

    ``X`` is a float64 tensor ``(N, C, n, n)``. Returns ``outputs, num, den,
    sq_disp, non_diffeo`` (see :class:`StabilityStats`); nothing here depends on
    the other probes, except the noise norm of ``noise_norm="average"``.
    """
    cfg = Bunch(T=T, c=c, interp=interp, n_diffeo=n_diffeo,
                row_keys=row_seeds(X.cpu().numpy(), entropy, "DiffeoStability"),
                batches=list(iter_batches(len(X), batch_size)))
    # one pass for f(x), then a deformed and a noised pass per draw
    probe, bar = _progress(probe, len(cfg.batches) * (1 + 2 * n_diffeo * n_repeats), verbose)
    try:
        return _measure(probe, X, cfg, per_unit=average == "median_per_unit",
                        noise_norm=noise_norm, n_repeats=n_repeats)
    finally:
        if bar is not None:
            bar.close()


def _measure(probe, X, cfg, *, per_unit, noise_norm, n_repeats):
    """The body of :func:`_partial`."""
    shape = (n_repeats, cfg.n_diffeo, len(X))
    sq_disp, non_diffeo = np.empty(shape), np.empty(shape, dtype=bool)
    x_ref = _reference(X, cfg.interp, cfg.batches)
    F0 = _outputs(probe, x_ref, cfg.batches)
    num, den = ({name: [] for name in F0} for _ in range(2))
    for r in range(n_repeats):
        radii = np.empty(shape[1:])
        deformed = _deformed(X, x_ref, r, radii, (sq_disp[r], non_diffeo[r]), cfg)
        for name, sq in _changes(probe, F0, deformed, per_unit).items():
            num[name].append(sq.reshape(*shape[1:], *sq.shape[1:]))
        if noise_norm == "average":
            radii = np.full_like(radii, radii.mean())
        for name, sq in _changes(probe, F0, _noised(x_ref, r, radii, cfg), per_unit).items():
            den[name].append(sq.reshape(*shape[1:], *sq.shape[1:]))
    return (F0, {name: np.stack(v) for name, v in num.items()},
            {name: np.stack(v) for name, v in den.items()}, sq_disp, non_diffeo)


def _flat(a):
    """``(n_diffeo, N, ...)`` as ``(n_diffeo * N, ...)`` rows, draw-major (the in-memory order)."""
    return a.reshape(-1, *a.shape[2:])


def _reduce(stats, *, average, max_pairs, warn=_warn):
    """The reduce step: R, D and G of every probed layer, repeat by repeat, from ``stats``.

    ``warn(kind, message)`` receives the warnings (shown at the user's line by default).
    """
    per_unit = average == "median_per_unit"
    pair_rng = np.random.default_rng([stats.entropy, 2])
    pairs = {name: _average(_pair_sq_distances(F, max_pairs, pair_rng),
                            "mean" if average == "mean" else "median")
             for name, F in stats.outputs.items()}
    per_repeat = {name: ([], [], []) for name in stats.outputs}
    for r in range(len(stats.sq_disp)):
        for name in stats.outputs:
            D, G, R = _ratios(_average(_flat(stats.num[name][r]), average),
                              _average(_flat(stats.den[name][r]), average), pairs[name],
                              f"layer {name!r}" if name != "output" else "output", warn)
            for lst, value in zip(per_repeat[name], (R, D, G)):
                lst.append(value)
    frac_non_diffeo = float(stats.non_diffeo.mean())
    if frac_non_diffeo > _MAX_FRAC_NON_DIFFEO:
        warn("non_diffeo", f"{frac_non_diffeo:.0%} of the sampled fields are not "
             f"diffeomorphisms (max Xi >= 1), so R_f does not measure stability to "
             f"diffeomorphisms: {_UPSAMPLE}.")
    out = _summary(*per_repeat["output"])
    num, den = _flat(stats.num["output"][-1]), _flat(stats.den["output"][-1])
    if per_unit:
        num, den = num.sum(axis=1), den.sum(axis=1)
    out.update(num=num, den=den, pairs=pairs["output"],
               delta_empirical=float(np.sqrt(stats.sq_disp.mean())),
               frac_non_diffeo=frac_non_diffeo)
    if len(per_repeat) > 1:
        out["layers"] = {name: _summary(*values) for name, values in per_repeat.items()}
    return out


def _warn_few_probes(n, warn=_warn):
    if n < _RECOMMENDED_PROBES:
        warn("few_probes", f"only {n} probe images: the averages are noisy "
             f"(>= {_RECOMMENDED_PROBES}, ideally 500, are recommended).")


# --------------------------------------------------------------------------- estimator
def _estimator_has(attr):
    def check(self):
        est = getattr(self, "estimator_", self.estimator)
        return hasattr(est, attr)

    return check


class DiffeoStability(MetaEstimatorMixin, BaseEstimator):
    """Relative stability of a model to smooth deformations of its input images.

    Measures how much a predictor ``f`` changes when images are deformed by
    typical diffeomorphisms of size ``delta`` pixels (the maximum-entropy
    ensemble at temperature ``T`` and cut-off ``c``), relative to isotropic
    noise of the same norm (Petrini et al., Eqs. 4-5)::

        D_f = <|f(tau x) - f(x)|^2> / <|f(x) - f(z)|^2>
        G_f = <|f(x + eta) - f(x)|^2> / <|f(x) - f(z)|^2>
        R_f = D_f / G_f

    ``R_f`` is about 1 for untrained nets and drops by one to two decades for
    good image classifiers, where the test error follows ``0.2 sqrt(R_f)``.

    Parameters
    ----------
    estimator : estimator, skorch net or torch.nn.Module
        The model ``f``, reached through :func:`geolearn.models.as_model`. A
        prefit model (a torch module, a fitted estimator or skorch net, a
        ``FrozenEstimator``) is used as it is; an unfitted one is cloned and
        fitted by :meth:`fit` (:func:`geolearn.models.fit_or_use`). ``clone``
        and ``GridSearchCV`` unfit a fitted estimator: wrap it in
        ``sklearn.frozen.FrozenEstimator`` to keep it as trained.
    image_shape : tuple of int, optional
        ``(n, n)`` or ``(C, n, n)``; required when ``X`` is flat (rows are
        unfolded as ``X.reshape(N, C, n, n)``), inferred from 3-D/4-D ``X``.
    T : float, optional
        Temperature; when given it overrides ``delta``.
    c : int, default=3
        Cut-off of the deformation modes, ``1 <= c <= n - 2``.
    delta : float, default=1.0
        Typical displacement in pixels, converted to ``T`` with ``delta_formula``.
    delta_formula : {"exact", "asymptotic"}, default="exact"
        See :func:`displacement_delta`.
    interp : {"bilinear", "gaussian"}, default="bilinear"
    average : {"median", "mean", "median_per_unit"}, default="median"
        ``"median"``: median over samples of squared norms (Eq. 4 literally);
        ``"median_per_unit"``: sum over output units of per-unit medians (the
        authors' code).
    noise_norm : {"per_sample", "average"}, default="per_sample"
        Noise norm equal to each pair's ``|tau x - x|`` (authors' code), or to
        its average (paper text).
    n_diffeo : int, default=1
        Deformations (and noise draws) per probe image.
    n_repeats : int, default=1
        Independent repetitions, combined by :func:`log_average`.
    response : {"auto", "decision_function", "predict_proba", "clr_proba", "predict", \
"module"}, default="auto"
        What ``f`` is. ``"auto"``: the forward pass (logits) of torch modules,
        skorch nets and pipelines ending in one, after the pipeline's own
        preprocessing; for other estimators the order of
        :func:`geolearn.models.resolve_response`: ``decision_function``, else
        centred log-probabilities ``clr(p)``, else ``predict`` (regressors).
    layers : list of str, optional
        Also measure these representations, read through the model's adapter
        (:attr:`geolearn.models.ModelAdapter.layer_names`): torch submodule
        names (``"act_0"`` ... for a converted ``MLPClassifier``), or Pipeline
        step names (the output after the step).
    bn_mode : {"auto", "eval", "batch"}, default="auto"
        ``"batch"`` evaluates batch norms with the statistics of the probe
        set (how the paper probes nets at initialisation, whose running
        statistics are still 0 and 1, so that eval mode would not normalise at
        all): each forward pass sees the whole probe set, and the running
        statistics are left as they were. ``"eval"`` uses the running
        statistics (a trained net). ``"auto"`` applies the paper's protocol per
        batch norm: batch statistics where the running statistics are
        untouched, running statistics elsewhere; ``bn_mode_`` says which
        resulted.
    max_pairs : int, default=250_000
        Pairs ``(x, z)`` of the normaliser; random pairs beyond that.
    batch_size : int, default=256
        Images per forward pass. Results do not depend on it.
    device : str or torch.device, default="auto"
        Where deformations are computed (resolved by
        :func:`geolearn._utils.resolve_device`; CUDA asked for and absent is an
        error at ``fit``). ``"auto"``: the torch model's own device, else CUDA
        when available, else the CPU. A user's module is never moved: a
        mismatch is an error.
    random_state : int, RandomState instance or None
        Seeds deformations, noise and pair sampling. Each probe's deformations and
        noise come from a generator keyed on ``random_state`` and the probe's values,
        so they do not depend on the other probes, their order or ``batch_size``.
    verbose : int, default=0
        ``> 0`` shows a progress bar of the forward passes of :meth:`stability`.

    Attributes
    ----------
    estimator_ : estimator
        The model measured: ``estimator`` itself when prefit, else a fitted clone.
    image_shape_ : tuple of int
        ``(C, n, n)``.
    n_features_in_ : int
    T_ : float
        Temperature used.
    delta_ : float
        Typical displacement in pixels at ``T_`` (by ``delta_formula``).
    T_range_ : tuple of float
        ``(T_min, T_max)`` of :func:`temperature_range` (``"empirical"`` for ``c = 1``).
    response_ : str
        The resolved response.
    bn_mode_ : {"eval", "batch"}
        The batch-norm protocol used: ``"batch"`` when any batch norm normalises
        with the probe set's statistics.
    classes_ : ndarray
        The estimator's classes, for classifiers.

    See Also
    --------
    relative_stability : the same measurement for an already fitted model.
    make_stability_scorer : ``-log10 R_f`` as a GridSearchCV scorer.
    MaxEntropyDiffeo : the deformations as a transformer.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.datasets import load_digits_images
    >>> from geolearn.diffeo import DiffeoStability
    >>> X, y = load_digits_images(upsample=2, return_X_y=True)
    >>> X = X.reshape(len(X), -1)
    >>> est = DiffeoStability(LogisticRegression(max_iter=200), image_shape=(16, 16),
    ...                       random_state=0).fit(X[:1000], y[:1000])
    >>> res = est.stability(X[1000:1500])
    >>> round(res.T, 5), bool(res.R > 1)   # a linear model is less stable to deformations
    (0.00726, True)
    """

    _expected_failed_checks = tabular_check_failures(
        "check_classifier_data_not_an_array",
        "check_classifiers_classes",
        "check_classifiers_one_label",
        "check_classifiers_one_label_sample_weights",
        "check_classifiers_regression_target",
        "check_classifiers_train",
        "check_decision_proba_consistency",
        "check_supervised_y_2d",
    )

    _parameter_constraints = {
        "estimator": "no_validation",
        "image_shape": [tuple, list, None],
        "T": [Interval(numbers.Real, 0, None, closed="left"), None],
        "c": [Interval(numbers.Integral, 1, None, closed="left")],
        "delta": [Interval(numbers.Real, 0, None, closed="neither")],
        "delta_formula": [StrOptions({"exact", "asymptotic"})],
        "interp": [StrOptions({"bilinear", "gaussian"})],
        "average": [StrOptions(set(AVERAGES))],
        "noise_norm": [StrOptions(set(NOISE_NORMS))],
        "n_diffeo": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_repeats": [Interval(numbers.Integral, 1, None, closed="left")],
        "response": [StrOptions(set(RESPONSES))],
        "layers": [list, tuple, None],
        "bn_mode": [StrOptions({"auto", "eval", "batch"})],
        "max_pairs": [Interval(numbers.Integral, 1, None, closed="left")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "device": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, estimator=None, *, image_shape=None, T=None, c=3, delta=1.0,
                 delta_formula="exact", interp="bilinear", average="median",
                 noise_norm="per_sample", n_diffeo=1, n_repeats=1, response="auto", layers=None,
                 bn_mode="auto", max_pairs=250_000, batch_size=256, device="auto",
                 random_state=None, verbose=0):
        self.estimator = estimator
        self.image_shape = image_shape
        self.T = T
        self.c = c
        self.delta = delta
        self.delta_formula = delta_formula
        self.interp = interp
        self.average = average
        self.noise_norm = noise_norm
        self.n_diffeo = n_diffeo
        self.n_repeats = n_repeats
        self.response = response
        self.layers = layers
        self.bn_mode = bn_mode
        self.max_pairs = max_pairs
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        if hasattr(self.estimator, "fit"):  # estimators and skorch nets, not torch modules
            inner = get_tags(self.estimator)
            tags.estimator_type = inner.estimator_type
            tags.classifier_tags = inner.classifier_tags
            tags.regressor_tags = inner.regressor_tags
        return tags

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=False)  # an unfitted estimator is fitted here
    def fit(self, X, y=None, **fit_params):
        """Fit the estimator unless it is prefit; resolve the temperature and response.

        Parameters
        ----------
        X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
            Training images, in the layout the estimator takes.
        y : array-like of shape (N,), optional
        **fit_params : dict
            Metadata for the estimator's ``fit`` (``sample_weight``, ...): with
            ``sklearn.set_config(enable_metadata_routing=True)``, routed to it as
            it requested (``estimator.set_fit_request(sample_weight=True)``);
            else all passed to it.

        Returns
        -------
        self : DiffeoStability
        """
        if self.estimator is None:
            raise ValueError("estimator is None: pass the model whose stability to measure.")
        images = self._images(X, self.image_shape, min_samples=2)
        self.image_shape_ = images.shape[1:]
        self.n_features_in_ = int(np.prod(self.image_shape_))
        n = self.image_shape_[-1]
        c = _check_c(self.c, n)
        routed = route_fit_params(self, fit_params, legacy=True)
        self.estimator_ = fit_or_use(self.estimator, X, y, **routed["estimator"])
        self.response_ = resolve_response(self.estimator_, self.response)
        # the one conversion of the model; raises early for unknown layers or a bad device
        self._probe = Probe(self.estimator_, self.response_, layers=self.layers or (),
                            bn_mode=self.bn_mode, device=self.device)
        self.bn_mode_ = self._probe.bn_mode_
        if self.T is None:
            self.T_ = temperature_for_delta(self.delta, c, n, self.delta_formula)
            self.delta_ = float(self.delta)
        else:
            self.T_ = float(self.T)
            self.delta_ = float(displacement_delta(self.T_, c, n, self.delta_formula))
        self.T_range_ = _default_range(n, c)
        T_min, T_max = self.T_range_
        if not T_min <= self.T_ <= T_max:
            self._warn("temperature",
                       f"T={self.T_:.3g} lies outside the range [{T_min:.3g}, {T_max:.3g}] of "
                       f"significant yet diffeomorphic deformations of {n}x{n} images at c={c}"
                       + (f": {_UPSAMPLE}" if T_min > T_max or self.T_ > T_max
                          else ": raise delta (or T)") + ".")
        if hasattr(self.estimator_, "classes_"):
            self.classes_ = self.estimator_.classes_
        return self

    def get_metadata_routing(self):
        """The metadata routing of this object: ``fit`` routes to the estimator's ``fit``.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
        """
        return fit_router(self, estimator=self.estimator)

    def _warn(self, kind, message):
        """Show a StabilityWarning at the user's line; the scorer's subclass collects them."""
        _warn(kind, message)

    def _images(self, X, image_shape, min_samples):
        images = check_images(X, image_shape, dtype=np.float64, estimator=self,
                              min_samples=min_samples)
        _check_n(image_side(images.shape), name="image side")
        return images

    def stability(self, X):
        """Measure ``R_f``, ``D_f`` and ``G_f`` on the probe images ``X``.

        Parameters
        ----------
        X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
            Probe images (a test set; 500 recommended), raw as the estimator takes them.

        Returns
        -------
        result : Bunch
            ``R, D, G`` (log-averaged over repeats), ``R_repeats, D_repeats,
            G_repeats``, ``log10_R_std``, ``num`` and ``den`` (per-sample squared
            changes of the last repeat), ``pairs`` (the normaliser), ``T, c,
            delta_target, delta_empirical`` (RMS pixel displacement sampled),
            ``frac_non_diffeo``, ``interp, average, response, bn_mode``, and ``layers``
            (``name -> Bunch(R, D, G, ...)``) when layers are probed.
        """
        X_arr, images = self._probe_images(X, min_samples=2)
        _warn_few_probes(len(images), self._warn)
        return self._result(self._partial_stats(X_arr, images, row_offset=0))

    def partial_stats(self, X, row_offset=0):
        """The map step of a blockwise :meth:`stability`: per-probe statistics of a block.

        Split the probes into blocks of consecutive rows (the chunks of a dask
        array, files, ...), call ``partial_stats`` on each block with the index
        of its first row among all the probes, anywhere (the fitted estimator
        pickles), and reduce the results with :meth:`stability_from_stats`.
        Each probe's deformations and noise are keyed on ``random_state`` and
        the probe itself, and the medians and the pair normaliser are taken
        in the reduce step over all the probes, so the blockwise result is the
        in-memory ``stability(X)``: to the bit when every block's size is a
        multiple of ``batch_size`` (the model then sees the same batches), else
        to rounding (a model's matrix products may round differently with the
        size of the batch).

        Parameters
        ----------
        X : array-like of shape (n, C, n, n), (n, n, n) or (n, C*n*n)
            A block of probe images, laid out as for :meth:`stability`.
        row_offset : int, default=0
            Index of the block's first row among all the probes; it orders the
            blocks, and hence the random pairs of the normaliser.

        Returns
        -------
        stats : StabilityStats
            ``f`` at the probes, their squared changes under deformation and
            noise, and the sampled fields' displacements: ``O(n K)`` floats for
            ``K`` probed units, not the images.

        Raises
        ------
        ValueError
            For ``noise_norm="average"`` or ``bn_mode="batch"``, which make a
            probe's measurement depend on the other probes; and for a negative
            ``row_offset``.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from geolearn.diffeo import DiffeoStability
        >>> X = np.random.default_rng(0).random((120, 1, 12, 12))
        >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(144, 3)).double()
        >>> est = DiffeoStability(net, c=2, batch_size=20, random_state=0).fit(X)
        >>> stats = [est.partial_stats(X[i:i + 40], row_offset=i) for i in range(0, 120, 40)]
        >>> est.stability_from_stats(stats).R == est.stability(X).R
        True
        """
        check_is_fitted(self)
        if not isinstance(row_offset, numbers.Integral) or row_offset < 0:
            raise ValueError(f"row_offset must be an int >= 0, the index of the block's first "
                             f"row among all the probes; got {row_offset!r}.")
        for name, used, value, fix in (("noise_norm", self.noise_norm, "average", "'per_sample'"),
                                       ("bn_mode", self.bn_mode_, "batch", "'eval'")):
            if used == value:
                raise ValueError(f"{name}={value!r} makes each probe's measurement depend on "
                                 f"all the probes, so it cannot be split into blocks: use "
                                 f"{name}={fix}, or stability(X) on all the probes at once"
                                 + (" (bn_mode='auto' chose batch statistics: the model's "
                                    "BatchNorm running statistics are untouched)"
                                    if name == "bn_mode" and self.bn_mode == "auto" else "")
                                 + ".")
        X_arr, images = self._probe_images(X, min_samples=1)
        return self._partial_stats(X_arr, images, row_offset=int(row_offset))

    def stability_from_stats(self, stats):
        """The reduce step of a blockwise :meth:`stability`: ``R_f``, ``D_f``, ``G_f``.

        Parameters
        ----------
        stats : StabilityStats or iterable of StabilityStats
            The blocks' statistics from :meth:`partial_stats`, in any order;
            together they must cover the probes ``0 .. N - 1`` once each.

        Returns
        -------
        result : Bunch
            As :meth:`stability` on all the probes.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LinearRegression
        >>> from geolearn.diffeo import DiffeoStability
        >>> X = np.random.default_rng(0).random((150, 144))
        >>> est = DiffeoStability(LinearRegression(), image_shape=(12, 12), c=2,
        ...                       random_state=0).fit(X, X.sum(1))
        >>> blocks = [est.partial_stats(X[i:i + 50], row_offset=i) for i in (100, 0, 50)]
        >>> res = est.stability_from_stats(blocks)
        >>> bool(np.isclose(res.R, est.stability(X).R, rtol=1e-12))
        True
        """
        check_is_fitted(self)
        blocks = [stats] if isinstance(stats, StabilityStats) else list(stats)
        if not blocks:
            raise ValueError("stats is empty: pass the StabilityStats of every block.")
        merged = blocks[0].merge(*blocks[1:])
        if merged.settings != self._settings():
            raise ValueError("stats were measured by a DiffeoStability with other settings "
                             "or another fitted model's image shape; reduce them with the "
                             "estimator that made them.")
        if merged.row_offset != 0 or merged.n_samples < 2:
            raise ValueError(f"stats cover rows {merged.row_offset} .. "
                             f"{merged.row_offset + merged.n_samples - 1}: they must start at "
                             "row 0 (the block with row_offset=0 is missing?) and hold at "
                             "least 2 probes.")
        _warn_few_probes(merged.n_samples, self._warn)
        return self._result(merged)

    def _probe_images(self, X, min_samples):
        """``X`` as an array and as checked float64 images ``(N, C, n, n)``."""
        check_is_fitted(self)
        X_arr = X if hasattr(X, "ndim") else np.asarray(X)
        images = self._images(X_arr, self.image_shape_ if X_arr.ndim == 2 else None,
                              min_samples=min_samples)
        check_fitted_shape(self, images)
        return X_arr, images

    def _settings(self):
        """What blocks of one measurement share, besides the random draws."""
        return (self.image_shape_, self.T_, self.c, self.interp, self.average,
                self.noise_norm, self.n_diffeo, self.n_repeats, tuple(self.layers or ()))

    def _partial_stats(self, X_arr, images, row_offset):
        entropy = int(check_random_state(self.random_state).randint(0, 2**31 - 1))
        parts = _partial(
            partial(self._probe, layout=self._probe.layout(X_arr.shape[1:], self.image_shape_)),
            to_tensor(images, device=self._probe.device, dtype=None), T=self.T_, c=self.c,
            interp=self.interp, average=self.average, noise_norm=self.noise_norm,
            n_diffeo=self.n_diffeo, n_repeats=self.n_repeats,
            batch_size=len(images) if self.bn_mode_ == "batch" else self.batch_size,
            entropy=entropy, verbose=self.verbose)
        return StabilityStats(row_offset, *parts, settings=self._settings(), entropy=entropy)

    def _result(self, stats):
        result = _reduce(stats, average=self.average, max_pairs=self.max_pairs, warn=self._warn)
        result.update(T=self.T_, c=self.c, delta_target=self.delta_, interp=self.interp,
                      average=self.average, response=self.response_, bn_mode=self.bn_mode_)
        return result

    def score(self, X, y=None):
        """``-log10 R_f`` of the output on ``X``: greater is relatively more stable.

        scikit-learn maximises scores, so ``score`` is the negated log of
        ``R_f`` (the paper log-averages ``R_f`` too); :meth:`stability` gives
        ``R_f`` itself. ``y`` is ignored. The same figure as the default
        :func:`make_stability_scorer`.

        Parameters
        ----------
        X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
            Probe images.
        y : None
            Ignored.

        Returns
        -------
        score : float
            ``-log10 R_f``; 0 means as stable to diffeomorphisms as to noise.
        """
        return float(-np.log10(self.stability(X).R))

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """The estimator's ``predict``."""
        check_is_fitted(self)
        return self.estimator_.predict(tabular_input(self.estimator_, X))

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """The estimator's ``predict_proba``."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(tabular_input(self.estimator_, X))

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """The estimator's ``decision_function``."""
        check_is_fitted(self)
        return self.estimator_.decision_function(tabular_input(self.estimator_, X))

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        """The estimator's ``transform``."""
        check_is_fitted(self)
        return self.estimator_.transform(tabular_input(self.estimator_, X))


# --------------------------------------------------------------------------- functions
def relative_stability(model, X, **params):
    """``R_f``, ``D_f`` and ``G_f`` of an already fitted model on probe images ``X``.

    The functional form of ``DiffeoStability(model, **params).fit(X).stability(X)``.

    Parameters
    ----------
    model : fitted estimator, skorch net or torch.nn.Module
        Used as it is; an unfitted estimator is refused.
    X : array-like of shape (N, C, n, n), (N, n, n) or (N, C*n*n)
    **params
        Any parameter of :class:`DiffeoStability`.

    Returns
    -------
    result : Bunch
        See :meth:`DiffeoStability.stability`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.diffeo import relative_stability
    >>> X = torch.rand(200, 1, 16, 16).numpy()
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 10))
    >>> res = relative_stability(net, X, c=3, delta=1.0, random_state=0)
    >>> bool(0.3 < res.R < 3)
    True
    """
    _check_prefit(model, "relative_stability")
    return DiffeoStability(model, **params).fit(X).stability(X)


def _check_prefit(model, what):
    if model is not None and not is_prefit(model):
        raise NotFittedError(f"{what} measures a fitted model; this "
                             f"{type(model).__name__} is not fitted. Fit it first, or use "
                             "DiffeoStability(model).fit(X, y).stability(X_probe).")


class _CollectedStability(DiffeoStability):
    """A :class:`DiffeoStability` that collects its warnings in ``notes`` for the scorer."""

    def _warn(self, kind, message):
        self.notes.setdefault(kind, message)


class _StabilityScorer:
    """The scorer of :func:`make_stability_scorer`.

    Its warnings are the same for every fold and candidate of a search, so each kind
    is shown once per scorer, at the user's line (``search.fit``); a search runs them
    through sklearn's workers, which reset Python's once-per-line registry.
    """

    def __init__(self, quantity, params):
        self.quantity = quantity
        self.params = params
        self._shown = set()

    def __call__(self, estimator, X, y=None):
        _check_prefit(estimator, "make_stability_scorer's scorer")
        est = _CollectedStability(estimator, **self.params)
        est.notes = {}
        result = est.fit(X).stability(X)
        with np.errstate(divide="ignore"):
            score = float(-np.log10(result[self.quantity]))
        if result.frac_non_diffeo > _MAX_FRAC_NON_DIFFEO:
            # such fields fold the image over itself: the ratio ranks models by noise
            est.notes["non_diffeo"] = (
                f"{result.frac_non_diffeo:.0%} of the sampled fields are not diffeomorphisms "
                f"(max Xi >= 1) at T={est.T_:.3g}, c={est.c} on {est.image_shape_[-1]}x"
                f"{est.image_shape_[-1]} images: make_stability_scorer returns NaN. "
                f"{_UPSAMPLE[0].upper()}{_UPSAMPLE[1:]}.")
            score = np.nan
        for kind, message in est.notes.items():
            if kind not in self._shown:
                self._shown.add(kind)
                warn_user(message, StabilityWarning)
        return score

    def __repr__(self):
        params = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"make_stability_scorer(quantity={self.quantity!r}{params})"


def make_stability_scorer(quantity="R", **params):
    """A scorer returning ``-log10`` of ``R_f``, ``D_f`` or ``G_f`` (greater is more stable).

    Averaging ``-log10 R`` over CV folds is the paper's log-averaging. The
    default ``random_state=0`` probes every candidate of a search with the
    same deformations and noise (common random numbers).

    Where more than half of the sampled fields are not diffeomorphisms (images
    too small for the displacement ``delta`` at the cut-off ``c``, such as 8x8
    digits at the defaults), the ratio measures folds of the image over itself
    and ranks models by noise: the score is then NaN, which ``GridSearchCV``
    reports as it does a failed fit (``error_score``; such candidates rank last),
    with a :class:`StabilityWarning` that says how to fix it. The scorer's
    warnings are shown once per scorer (so once per search), at the line that
    runs the search.

    Parameters
    ----------
    quantity : {"R", "D", "G"}, default="R"
    **params
        Parameters of :class:`DiffeoStability` (``image_shape``, ``c``,
        ``delta``, ...). The scorer measures the fitted estimator it is given, as it is.

    Returns
    -------
    scorer : callable ``(estimator, X, y=None) -> float``
        It probes the estimator itself, so it is a scikit-learn scorer callable
        rather than a ``make_scorer`` of predictions; it pickles. NaN where
        most sampled fields are not diffeomorphisms.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from geolearn.datasets import load_digits_images
    >>> from geolearn.diffeo import make_stability_scorer
    >>> X, y = load_digits_images(upsample=2, return_X_y=True)
    >>> X = X[:600].reshape(600, -1); y = y[:600]
    >>> scoring = {"acc": "accuracy",
    ...            "neg_log10_R": make_stability_scorer(image_shape=(16, 16))}
    >>> search = GridSearchCV(LogisticRegression(max_iter=100), {"C": [0.01, 1.0]},
    ...                       scoring=scoring, refit="acc", cv=2).fit(X, y)
    >>> sorted(k for k in search.cv_results_ if k.startswith("mean_test"))
    ['mean_test_acc', 'mean_test_neg_log10_R']
    """
    if quantity not in ("R", "D", "G"):
        raise ValueError(f"quantity must be 'R', 'D' or 'G'; got {quantity!r}.")
    if "estimator" in params:
        raise TypeError("make_stability_scorer takes no 'estimator': the scorer is called "
                        "with the fitted estimator.")
    params.setdefault("random_state", 0)
    DiffeoStability(**params)._validate_params()
    return _StabilityScorer(quantity, params)


def _check_subspace_args(X, parallel_dims, radius, average):
    """``X`` as float64 and the sorted ``parallel_dims``, or a ValueError naming the argument."""
    X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
    check_squares_finite(X)  # the pair distances of the denominator
    d = X.shape[1]
    dims = np.unique(np.atleast_1d(np.asarray(parallel_dims)))
    if dims.dtype.kind not in "iu" or len(dims) == 0 or dims[0] < 0 or dims[-1] >= d \
            or len(dims) == d:
        raise ValueError(f"parallel_dims must hold between 1 and d - 1 = {d - 1} distinct "
                         f"integer indices in [0, {d}); got {parallel_dims!r}.")
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be finite and > 0; got {radius!r}.")
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {list(AVERAGES)}; got {average!r}.")
    return X, dims


def subspace_relative_stability(model, X, parallel_dims, *, radius=1.0, average="median",
                                response="auto", random_state=None):
    """Relative stability to moves along the directions the task does not depend on (Eq. 6).

    For tabular data where the label depends only on the coordinates
    ``parallel_dims`` (the stripe model, Section 6)::

        R_f = <|f(x_par, x_perp + nu) - f(x)|^2> / <|f(x + eta) - f(x)|^2>,

    with ``nu`` isotropic in the other directions and ``eta`` isotropic in
    all, both of norm ``radius``. ``D`` and ``G`` divide by
    ``<|f(x) - f(z)|^2>``. For a linear score ``w . x`` and ``average="mean"``,
    ``R = d / (d - 1) |w_perp|^2 / |w|^2``.

    Parameters
    ----------
    model : fitted estimator, skorch net or torch.nn.Module
    X : array-like of shape (N, d)
    parallel_dims : int or sequence of int
        The coordinates the label depends on.
    radius : float, default=1.0
    average : {"median", "mean", "median_per_unit"}, default="median"
    response : str, default="auto"
        As in :class:`DiffeoStability`.
    random_state : int, RandomState instance or None

    Returns
    -------
    result : Bunch
        ``R, D, G``, ``num``, ``den``, ``pairs``, ``radius``, ``average``, ``response``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.datasets import make_stripes
    >>> from geolearn.diffeo import subspace_relative_stability
    >>> X, y = make_stripes(2000, 30, boundaries=(0.0,), random_state=0)
    >>> clf = LogisticRegression().fit(X, y)
    >>> res = subspace_relative_stability(clf, X[:1000], parallel_dims=0, random_state=0)
    >>> bool(res.R < 0.1)
    True
    """
    X, dims = _check_subspace_args(X, parallel_dims, radius, average)
    response = resolve_response(model, response)
    probe = Probe(model, response)
    rng = np.random.default_rng(int(check_random_state(random_state).randint(0, 2**31 - 1)))
    nu = rng.standard_normal(X.shape)
    nu[:, dims] = 0.0
    eta = rng.standard_normal(X.shape)
    nu *= radius / np.linalg.norm(nu, axis=1, keepdims=True)
    eta *= radius / np.linalg.norm(eta, axis=1, keepdims=True)
    F0, F_nu, F_eta = (probe(to_tensor(A, device=probe.device, dtype=None), X.shape[1:])["output"]
                       for A in (X, X + nu, X + eta))
    return Bunch(**_one_shot_ratios(F0, F_nu, F_eta, average, rng), radius=radius,
                 average=average, response=response)


def _one_shot_ratios(F0, F_num, F_den, average, rng):
    """``R, D, G, num, den, pairs`` from ``f`` at the probes and at their two perturbations."""
    per_unit = average == "median_per_unit"
    num, den = ((F - F0) ** 2 for F in (F_num, F_den))
    if not per_unit:
        num, den = num.sum(1), den.sum(1)
    pairs = _average(_pair_sq_distances(F0, 250_000, rng), "mean" if average == "mean"
                     else "median")
    D, G, R = _ratios(_average(num, average), _average(den, average), pairs, "output")
    return dict(R=R, D=D, G=G, num=num.sum(1) if per_unit else num,
                den=den.sum(1) if per_unit else den, pairs=pairs)
