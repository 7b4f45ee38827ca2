"""FlowDensity: exact log-likelihood by change of variables through RealNVP couplings (Eqs. 5-6)."""

import functools
import math
import numbers

import numpy as np
import torch
from sklearn.base import (
    BaseEstimator,
    DensityMixin,
    OneToOneFeatureMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    validate_data,
)
from torch import nn

from .._utils import (
    check_dtype_range,
    check_hidden_sizes,
    check_scalar_param,
    iter_batches,
    preserved_dtype,
    to_numpy,
    to_tensor,
)
from .._utils.torch_estimator import (
    EPOCH_CONSTRAINTS,
    NET_CONSTRAINTS,
    MeanScoreMixin,
    ObjectiveTrainingMixin,
)
from ..models import frozen
from ..models._internal import weighted_mean

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class _Coupling(nn.Module):
    """Affine coupling ``y = b x + (1 - b)(x exp(s(bx)) + t(bx))`` with ``s = alpha tanh(raw)``."""

    def __init__(self, mask, hidden_layer_sizes):
        super().__init__()
        d = len(mask)
        self.register_buffer("mask", mask)
        layers, width = [], d
        for h in hidden_layer_sizes:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        last = nn.Linear(width, 2 * d)
        # zero-initialised output: every coupling starts as the identity
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(*layers, last)
        self.alpha = nn.Parameter(torch.ones(d))

    def _st(self, x):
        raw, t = self.net(x * self.mask).chunk(2, dim=-1)
        free = 1 - self.mask
        return self.alpha * torch.tanh(raw) * free, t * free

    def forward(self, x):
        s, t = self._st(x)
        return x * torch.exp(s) + t, s.sum(-1)

    def inverse(self, y):
        s, t = self._st(y)  # the masked half is unchanged, so s and t are recomputable
        return (y - t) * torch.exp(-s)


class RealNVP(nn.Module):
    """A stack of affine couplings; ``forward(x) -> (z, log|det J|)``."""

    def __init__(self, masks, hidden_layer_sizes):
        super().__init__()
        self.layers = nn.ModuleList(_Coupling(m, hidden_layer_sizes) for m in masks)

    def forward(self, x):
        log_det = x.new_zeros(len(x))
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return x, log_det

    def inverse(self, z):
        for layer in reversed(self.layers):
            z = layer.inverse(z)
        return z


def standard_normal_log_prob(z):
    """``log N(z; 0, I)`` per row of a tensor or an array."""
    return -0.5 * (z ** 2).sum(-1) - z.shape[-1] * _HALF_LOG_2PI


class _FlowObjective:
    """Negative weighted mean log-likelihood of the standardised (dequantised) data."""

    def __init__(self, dequantize, scale):
        self.dequantize = dequantize
        self.scale = scale

    def __call__(self, module, y_pred, x, y, epoch=0, sample_weight=None):
        if self.dequantize:
            x = x + torch.rand_like(x) * (self.dequantize / self.scale.to(x.device))
        z, log_det = module(x)
        return -weighted_mean(standard_normal_log_prob(z) + log_det, sample_weight), {}


def alternating_masks(n_layers, d, rng):
    """``(n_layers, d)`` boolean masks, each passing ``d // 2`` features unchanged.

    Each mask passes features drawn from those the previous coupling transformed,
    so every feature is transformed at least every second layer (independent
    draws can repeat a mask and waste couplings).
    """
    masks = np.zeros((n_layers, d), dtype=bool)
    free = np.arange(d)
    for k in range(n_layers):
        masks[k, rng.choice(free, d // 2, replace=False)] = True
        free = np.flatnonzero(~masks[k])
    return masks


def positive_weight_rows(X, sample_weight):
    """The rows of ``X`` of positive weight and their weights (``sample_weight`` checked).

    Rows of weight 0 are left out before anything is computed from the data, so that
    they are exactly dropped rows; negative or all-zero weights raise a ValueError.
    """
    if sample_weight is None:
        return X, None
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                         ensure_non_negative=True)
    kept = sample_weight > 0
    return X[kept], sample_weight[kept]


def check_standardisation(X, sample_weight=None):
    """Mean and std per column, each row counted by its weight; constant columns refused.

    Constant columns make a density degenerate. Computed on the columns scaled by their
    largest ``|x|``, so that values beyond 1e154 (whose squares overflow float64) still give
    a finite std.
    """
    peak = np.abs(X).max(axis=0)
    peak = np.where(peak > 0, peak, 1.0)
    if sample_weight is None:
        mean, scale = (X / peak).mean(axis=0) * peak, (X / peak).std(axis=0) * peak
    else:  # integer weights give the mean and std of the repeated rows
        mean = np.average(X / peak, axis=0, weights=sample_weight)
        scale = np.sqrt(np.average((X / peak - mean) ** 2, axis=0, weights=sample_weight))
        mean, scale = mean * peak, scale * peak
    if np.any(scale <= 1e-12 * np.maximum(1.0, np.abs(mean))):
        cols = np.flatnonzero(scale <= 1e-12 * np.maximum(1.0, np.abs(mean)))[:5].tolist()
        raise ValueError(f"X has zero-variance features {cols}: the density is degenerate; drop "
                         "constant columns, e.g. VarianceThreshold.")
    return mean, scale


def standardise(X, mean, scale, where):
    """``(X - mean) / scale`` in float64, refused when it leaves float32's range for ``where``."""
    with np.errstate(over="ignore"):
        Xs = (X - mean) / scale
    return check_dtype_range(Xs, np.float32, name="X standardised by mean_ and scale_",
                             where=where, fix="these rows lie too far from the training data")


class FlowDensity(ObjectiveTrainingMixin, MeanScoreMixin, OneToOneFeatureMixin, DensityMixin,
                  TransformerMixin, BaseEstimator):
    """Normalising-flow density: ``log p(x) = log N(g(x); 0, I) + log|det J_g(x)|`` (Eq. 5).

    ``g`` standardises each feature and applies ``n_layers`` RealNVP affine couplings
    with random fixed half masks, bounded log-scales ``alpha * tanh(.)`` and
    zero-initialised conditioners (each coupling is the identity at the start, so an
    untrained flow is the standardised Gaussian). Use ``-score_samples`` as a novelty
    score for seen/unseen detection, or put it after a reducer in a Pipeline.

    Parameters
    ----------
    n_layers : int, default=8
    hidden_layer_sizes : sequence of int, default=(128, 128)
        Widths of each conditioner MLP.
    max_epochs : int, default=100
    batch_size : int, default=256
    lr : float, default=1e-3
    weight_decay : float, default=1e-5
    dequantize : float, default=0.0
        Width of uniform noise ``U[0, dequantize)`` added to training batches (in input
        units) for discrete data.
    callbacks : list of skorch callbacks, default=None
        Added to the training net (early stopping, checkpoints, LR schedulers).
    warm_start : bool, default=False
        True: a second ``fit`` continues training the fitted flow (with the masks and
        standardisation of the first fit) instead of starting again.
    device : str or torch.device, default='auto'
    random_state : int, RandomState instance or None, default=None
        Seeds the masks, initialisation and batch order.
    verbose : int, default=0
    **net_params
        skorch settings of the net (``module__*``, ``optimizer__*``,
        ``iterator_train__*``, ...); they take precedence over ``weight_decay``.

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its :class:`RealNVP`.
    masks_ : ndarray of shape (n_layers, n_features), bool
        Features passed through unchanged by each coupling.
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation.
    history_ : skorch.history.History
        The net's training history: one row per epoch, ``history_[:, "train_loss"]``
        (the mean negative log-likelihood).
    n_features_in_, device_

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import FlowDensity
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> flow = FlowDensity(n_layers=2, hidden_layer_sizes=(16,), max_epochs=2,
    ...                    random_state=0).fit(X)
    >>> flow.score_samples(X[:4]).shape, flow.sample(5, random_state=0).shape
    ((4,), (5, 3))
    """

    _expected_failed_checks = {  # noqa: RUF012
        "check_sample_weight_equivalence_on_dense_data": (
            "the repeated rows make more rows, so other minibatches (and more steps per "
            "epoch) than the weighted ones; and even in full batches Adam's normalised first "
            "step turns the rounding noise of gradients that are 0 in exact arithmetic (the "
            "identity couplings' shifts on standardised data) into steps of +-lr, which "
            "differ in sign between the two fits. tests/test_sample_weight.py checks that "
            "integer weights equal repeated rows in full batches with SGD, and that a weight "
            "0 equals dropping the row exactly"
        ),
    }

    _parameter_constraints = {
        **NET_CONSTRAINTS,
        **EPOCH_CONSTRAINTS,
        "n_layers": [Interval(numbers.Integral, 1, None, closed="left")],
        "dequantize": [Interval(numbers.Real, 0, None, closed="left")],
    }

    def __init__(self, n_layers=8, hidden_layer_sizes=(128, 128), max_epochs=100, batch_size=256,
                 lr=1e-3, weight_decay=1e-5, dequantize=0.0, callbacks=None, warm_start=False,
                 device="auto", random_state=None, verbose=0, **net_params):
        self.n_layers = n_layers
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.dequantize = dequantize
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the flow by maximum likelihood.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), n_features >= 2
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows: each batch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of the rows' negative log-likelihoods, and the
            standardisation is weighted too, so integer weights equal repeated rows.
            Rows of weight 0 are left out.

        Returns
        -------
        self : FlowDensity
        """
        warm = self._warm()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, reset=not warm)
        if X.shape[1] < 2:
            raise ValueError("FlowDensity needs at least 2 features (a coupling splits them); got "
                             f"n_features = {X.shape[1]}. For 1-D data use "
                             "sklearn.neighbors.KernelDensity.")
        X, sample_weight = positive_weight_rows(X, sample_weight)
        sizes = check_hidden_sizes(self.hidden_layer_sizes)
        rng = check_random_state(self.random_state)
        if not warm:
            self.mean_, self.scale_ = check_standardisation(X, sample_weight)
            self.masks_ = alternating_masks(self.n_layers, X.shape[1], rng)
        Xs = standardise(X, self.mean_, self.scale_, "the float32 flow").astype(np.float32)
        objective = _FlowObjective(self.dequantize,
                                   torch.as_tensor(self.scale_, dtype=torch.float32))
        module = functools.partial(RealNVP, torch.as_tensor(self.masks_, dtype=torch.float32),
                                   sizes)
        self._train(module, objective, torch.from_numpy(Xs), seed=rng,
                    max_epochs=self.max_epochs, optimizer__weight_decay=self.weight_decay,
                    sample_weight=sample_weight)
        return self

    def _standardised(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return standardise(X, self.mean_, self.scale_, "the float32 flow").astype(np.float32)

    @torch.no_grad()
    def _forward(self, Xs):
        zs, lds = [], []
        with frozen(self.module_):
            for sl in iter_batches(len(Xs), self.batch_size):
                z, ld = self.module_(to_tensor(Xs[sl], device=self.device_))
                zs.append(to_numpy(z).astype(np.float64))
                lds.append(to_numpy(ld).astype(np.float64))
        return np.concatenate(zs), np.concatenate(lds)

    def log_prob_components(self, X):
        """The terms of Eq. 5-6 per sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        components : Bunch of ndarray of shape (n_samples,)
            ``log_pz`` (log N(z; 0, I)), ``log_det`` (couplings plus standardisation),
            ``log_px`` (their sum) and ``nll_per_dim`` (``-log_px / d``; Eq. 6's
            normalisation applied to the full density).
        """
        z, log_det = self._forward(self._standardised(X))
        log_pz = standard_normal_log_prob(z)
        log_det = log_det - np.log(self.scale_).sum()
        log_px = log_pz + log_det
        return Bunch(log_pz=log_pz, log_det=log_det, log_px=log_px,
                     nll_per_dim=-log_px / z.shape[1])

    def score_samples(self, X):
        """Log-density ``log p(x)`` in nats.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        return self.log_prob_components(X)["log_px"]

    def transform(self, X):
        """Latent codes ``z = g(x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        Z : ndarray of shape (n_samples, n_features)
            float32 for float32 ``X`` (the flow computes in float32), else float64.
        """
        return self._forward(self._standardised(X))[0].astype(preserved_dtype(X), copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    @torch.no_grad()
    def inverse_transform(self, Z):
        """``x = g^{-1}(z)``.

        Parameters
        ----------
        Z : array-like of shape (n_samples, n_features)

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        Z = validate_data(self, Z, dtype=np.float32, reset=False)
        with frozen(self.module_):
            out = [to_numpy(self.module_.inverse(to_tensor(Z[sl], device=self.device_)))
                   for sl in iter_batches(len(Z), self.batch_size)]
        return np.concatenate(out).astype(np.float64) * self.scale_ + self.mean_

    def sample(self, n_samples=1, random_state=None):
        """Draw from the flow: ``x = g^{-1}(z)`` with ``z ~ N(0, I)``.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None
            Seeds the draws of ``z``.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        Z = check_random_state(random_state).standard_normal((n_samples, self.n_features_in_))
        return self.inverse_transform(Z)
