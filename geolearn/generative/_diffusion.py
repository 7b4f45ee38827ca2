"""DiffusionDensity: log-likelihood of a point along a diffusion chain (Eqs. 9-23).

Built on the family's DDPM core, :mod:`geolearn.generative.ddpm` (schedule, noise
predictor, denoising objective, ancestral sampler).
"""

import functools
import math
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, DensityMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_hidden_sizes, check_scalar_param, iter_batches, warn_user
from .._utils.row_noise import row_draws, row_seeds
from .._utils.torch_estimator import NET_CONSTRAINTS, MeanScoreMixin, ObjectiveTrainingMixin
from ..exceptions import GeolearnWarning
from ..models import frozen
from ._flow import check_standardisation, positive_weight_rows, standardise
from .ddpm import (
    NoisePredictor,
    ancestral_sample,
    denoising_objective,
    diffusion_schedule,
    reverse_variance,
    time_grid,
)

_LOG_2PI = math.log(2 * math.pi)

__all__ = ["DiffusionDensity"]


class DiffusionDensity(ObjectiveTrainingMixin, MeanScoreMixin, DensityMixin, BaseEstimator):
    """Density by the log-likelihood of a diffusion chain (Eq. 23).

    Trains a DDPM noise predictor (Eq. 16), then scores ``x`` by drawing one forward
    chain on the time grid ``0, h, 2h, ..., T`` and summing
    ``log N(x_T; 0, I) + sum_i [log p_theta(x_{tau_i} | x_{tau_{i+1}}) -
    log q(x_{tau_{i+1}} | x_{tau_i})]``: the chain's ELBO, whose expectation is at most
    the model's log-density. Each chain is one round; ``score_samples`` averages
    ``n_rounds`` rounds. Meant for low-dimensional data (Section 5: in high dimension
    the per-step terms nearly cancel and seen/unseen data stop separating).

    Parameters
    ----------
    n_timesteps : int, default=100
        ``T``.
    beta_schedule : {'linear', 'cosine'}, default='linear'
    beta_start, beta_end : float, default=1e-4, 0.02
        DDPM's linear-schedule ends for 1000 steps (rescaled by ``1000 / T``).
    hidden_layer_sizes : sequence of int, default=(128, 128, 128)
    standardize : bool, default=True
        Standardise features (the log-likelihood is corrected back to input units).
    max_epochs : int, default=3000
        Training length, counted in minibatch steps (minibatches drawn with
        replacement), not in passes over ``X``: training is one skorch epoch of
        ``max_epochs`` minibatches.
    batch_size : int, default=1024
    lr : float, default=1e-3
    likelihood_step : int, default=1
        ``h``, the step of the scoring chain.
    n_rounds : int, default=10
    reverse_variance : {'forward', 'posterior'}, default='forward'
        ``sigma_st^2 = beta_bar_st`` or ``beta_bar_s beta_bar_st / beta_bar_t`` (the last
        step always uses 'forward').
    callbacks : list of skorch callbacks, default=None
        Added to the training net. Training is one skorch epoch of ``max_epochs``
        steps, so batch-level callbacks apply (e.g. ``LRScheduler(...,
        step_every='batch')``); epoch-level ones see a single epoch.
    warm_start : bool, default=False
        True: a second ``fit`` trains the fitted predictor ``max_epochs`` more steps (with
        the schedule and standardisation of the first fit) instead of starting again.
    device : str or torch.device, default='auto'
    random_state : int, RandomState instance or None, default=None
        Seeds training and scoring: with an int, scores are reproducible; with None they
        vary from call to call.
    verbose : int, default=0
    **net_params
        skorch settings of the net (``module__*``, ``optimizer__*``,
        ``iterator_train__*``, ...).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its :class:`NoisePredictor`.
    betas_ : ndarray of shape (n_timesteps,)
    alphas_cumprod_ : ndarray of shape (n_timesteps + 1,)
        ``alpha_bar_t``, index 0 = 1.
    mean_, scale_ : ndarray of shape (n_features,)
    n_features_in_, device_
    history_ : skorch.history.History
        The net's training history: each fit is one "epoch" of ``max_iter`` steps;
        the loss of each step is ``history_[-1, "batches", :, "train_loss"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import DiffusionDensity
    >>> X = np.random.default_rng(0).normal(size=(256, 2))
    >>> dd = DiffusionDensity(n_timesteps=50, hidden_layer_sizes=(16,), max_epochs=20,
    ...                       batch_size=64, n_rounds=2, random_state=0).fit(X)
    >>> dd.score_samples(X[:5]).shape, dd.score_samples_rounds(X[:5], n_rounds=3).shape
    ((5,), (3, 5))
    """

    _parameter_constraints = {
        **NET_CONSTRAINTS,
        "n_timesteps": [Interval(numbers.Integral, 1, None, closed="left")],
        "beta_schedule": [StrOptions({"linear", "cosine"})],
        "beta_start": [Interval(numbers.Real, 0, 1, closed="neither")],
        "beta_end": [Interval(numbers.Real, 0, None, closed="neither")],
        "standardize": ["boolean"],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "likelihood_step": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_rounds": [Interval(numbers.Integral, 1, None, closed="left")],
        "reverse_variance": [StrOptions({"forward", "posterior"})],
    }

    def __init__(self, n_timesteps=100, beta_schedule="linear", beta_start=1e-4, beta_end=0.02,
                 hidden_layer_sizes=(128, 128, 128), standardize=True, max_epochs=3000,
                 batch_size=1024, lr=1e-3, likelihood_step=1, n_rounds=10,
                 reverse_variance="forward",
                 callbacks=None, warm_start=False, device="auto", random_state=None, verbose=0,
                 **net_params):
        self.n_timesteps = n_timesteps
        self.beta_schedule = beta_schedule
        self.beta_start = beta_start
        self.beta_end = beta_end
        self.hidden_layer_sizes = hidden_layer_sizes
        self.standardize = standardize
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.likelihood_step = likelihood_step
        self.n_rounds = n_rounds
        self.reverse_variance = reverse_variance
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Train the noise predictor.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows: each minibatch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of its rows' denoising errors, and the
            standardisation is weighted too. Rows of weight 0 are left out (minibatches
            are drawn from the others).

        Returns
        -------
        self : DiffusionDensity
        """
        warm = self._warm()
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2, reset=not warm)
        if X.shape[1] > 64:
            warn_user(f"DiffusionDensity on {X.shape[1]} features: in high dimension the "
                      "chain log-likelihood hardly separates seen from unseen data "
                      "(reduce the dimension first).", GeolearnWarning)
        X, sample_weight = positive_weight_rows(X, sample_weight)
        sizes = check_hidden_sizes(self.hidden_layer_sizes)
        if not warm:
            self._set_schedule()
            self.mean_, self.scale_ = (
                check_standardisation(X, sample_weight) if self.standardize else
                (np.zeros(X.shape[1]), np.ones(X.shape[1])))
        Xs = standardise(X, self.mean_, self.scale_, "the float32 noise predictor")
        Xs = torch.as_tensor(Xs, dtype=torch.float32)
        # one "epoch" of max_epochs minibatches drawn with replacement
        sampler = torch.utils.data.RandomSampler(
            Xs, replacement=True, num_samples=self.max_epochs * self.batch_size)
        module = functools.partial(NoisePredictor, X.shape[1], sizes, self.alphas_cumprod_)
        self._train(module, denoising_objective, Xs, seed=self.random_state, max_epochs=1,
                    iterator_train__sampler=sampler, sample_weight=sample_weight)
        return self

    def _set_schedule(self):
        """``betas_`` and ``alphas_cumprod_``; a schedule that is not a diffusion raises."""
        self.betas_, self.alphas_cumprod_ = diffusion_schedule(
            self.n_timesteps, self.beta_schedule, self.beta_start, self.beta_end)

    def _time_grid(self, step):
        check_scalar_param(step, "step", kind="integer", low=1, high=self.n_timesteps,
                           closed="both")
        return time_grid(self.n_timesteps, step)

    def _eps(self, x_t, t):
        """``eps_theta`` in float64; the network itself runs in float32."""
        override = getattr(self, "_eps_override", None)  # test hook: an exact predictor
        if override is not None:
            return override(x_t, t)
        tt = torch.full((len(x_t),), t, device=x_t.device, dtype=torch.long)
        return self.module_.eps(x_t.float(), tt).double()

    def _reverse_var(self, s, t):
        return reverse_variance(self.alphas_cumprod_, s, t, self.reverse_variance)

    @torch.no_grad()
    def _chain_log_lik(self, x0, grid, noise):
        """Eq. 23 for one forward chain per row of ``x0`` (float64).

        ``noise[k]`` (shape ``(len(grid) - 1, n, d)``) drives the chain's ``k``-th step.
        """
        a = self.alphas_cumprod_
        d = x0.shape[1]
        x_s, total = x0, torch.zeros(len(x0), dtype=torch.float64, device=x0.device)
        for k, (s, t) in enumerate(zip(grid[:-1], grid[1:])):
            a_st, b_st = a[t] / a[s], 1 - a[t] / a[s]
            x_t = math.sqrt(a_st) * x_s + math.sqrt(b_st) * noise[k]
            log_q = -0.5 * (((x_t - math.sqrt(a_st) * x_s) ** 2).sum(1) / b_st
                            + d * (math.log(b_st) + _LOG_2PI))
            mean = (x_t - b_st / math.sqrt(1 - a[t]) * self._eps(x_t, t)) / math.sqrt(a_st)
            var = self._reverse_var(s, t)
            log_p = -0.5 * (((x_s - mean) ** 2).sum(1) / var + d * (math.log(var) + _LOG_2PI))
            total += log_p - log_q
            x_s = x_t
        return total - 0.5 * ((x_s ** 2).sum(1) + d * _LOG_2PI)

    def score_samples_rounds(self, X, n_rounds=None, step=None, random_state=None):
        """Eq. 23 for each of ``n_rounds`` independent chains (mean and SD as in Fig. 5).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        n_rounds : int, default=None
            Defaults to ``self.n_rounds``.
        step : int, default=None
            Chain step ``h``; defaults to ``self.likelihood_step``.
        random_state : int, RandomState instance or None, default=None
            Defaults to ``self.random_state``.

        Returns
        -------
        log_lik : ndarray of shape (n_rounds, n_samples), float64

        Notes
        -----
        Each row's chains are drawn from its own generator, seeded by ``random_state``
        and the row's values: a row's scores do not depend on the other rows, their
        order or batching, nor on torch's global RNG; round ``r`` is the same for any
        ``n_rounds > r``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n_rounds = check_scalar_param(self.n_rounds if n_rounds is None else n_rounds,
                                      "n_rounds", kind="integer", low=1)
        grid = self._time_grid(self.likelihood_step if step is None else step)
        rs = self.random_state if random_state is None else random_state
        seeds = row_seeds(X, rs, stream="DiffusionDensity.score_samples")
        Xs = standardise(X, self.mean_, self.scale_, "the float32 noise predictor")
        Xs = torch.as_tensor(Xs, dtype=torch.float64, device=self.device_)
        n_links, d = len(grid) - 1, X.shape[1]
        # chunks of at most 16384 chains and 2**24 noise values
        chunk = max(1, min(16384, 2**24 // (n_links * d)) // n_rounds)
        out = np.empty((n_rounds, len(X)))
        with frozen(self.module_):
            for sl in iter_batches(len(X), chunk):
                m = len(Xs[sl])
                (noise,) = row_draws(seeds[sl], [("normal", (n_rounds, n_links, d))],
                                     dtype=torch.float64, device=self.device_)
                # (m, rounds, links, d) -> (links, rounds * m, d), rows round-major
                noise = noise.permute(2, 1, 0, 3).reshape(n_links, n_rounds * m, d)
                ll = self._chain_log_lik(Xs[sl].repeat(n_rounds, 1), grid, noise)
                out[:, sl] = ll.cpu().numpy().reshape(n_rounds, m)
        return out - np.log(self.scale_).sum()

    def score_samples(self, X):
        """Mean over ``n_rounds`` chains of the Eq. 23 log-likelihood (nats).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_lik : ndarray of shape (n_samples,)
        """
        return self.score_samples_rounds(X).mean(axis=0)

    @torch.no_grad()
    def sample(self, n_samples=1, step=1, random_state=None):
        """Ancestral sampling with step ``h``; no noise on the last step.

        Parameters
        ----------
        n_samples : int, default=1
        step : int, default=1
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        grid = self._time_grid(step)
        # a per-call generator: torch's global RNG is neither read nor advanced
        seed = int(check_random_state(random_state).randint(0, 2**31 - 1))
        gen = torch.Generator().manual_seed(seed)
        with frozen(self.module_):
            x = torch.randn(n_samples, self.n_features_in_, dtype=torch.float64,
                            generator=gen).to(self.device_)
            x = ancestral_sample(self._eps, x, self.alphas_cumprod_, grid,
                                 self.reverse_variance, generator=gen)
        return x.cpu().numpy() * self.scale_ + self.mean_
