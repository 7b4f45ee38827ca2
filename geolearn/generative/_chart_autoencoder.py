"""ChartAutoencoder: an atlas of latent charts with a chart predictor on the latents."""

import functools
import numbers

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._utils import check_hidden_sizes, check_scalar_param, to_numpy
from .._utils.autoencoder import (
    ImageOutputMixin,
    LatentInterpolationMixin,
    ReconstructionScoreMixin,
)
from .._utils.torch_estimator import EPOCH_CONSTRAINTS, NET_CONSTRAINTS
from ..models import frozen
from ..models._internal import weighted_mean
from ._base import LatentModel
from ._losses import decoded_mean, kl_normal
from ._modules import ChartModule

#: Floor of the temperature tau (a batch reconstructed exactly would give tau = 0).
_TAU_MIN = 1e-12


class ChartObjective:
    """The chart autoencoder's loss, per sample.

    ``sum_i p_i ||x - D_i(z_i)||^2 / (2 sigma^2) + gamma CE(q, p) + beta sum_i
    KL(N(mu_i, sigma_i^2) || N(0, I))`` with ``p = softmax(P([z_1, ..., z_k]))`` and the
    target ``q_i = softmax_i(-||x - D_i(z_i)||^2 / tau)`` computed without gradient;
    ``tau`` None is the batch mean of ``min_i ||x - D_i(z_i)||^2`` (detached).

    The first term is the Gaussian negative log-likelihood (scale ``sigma``, as in
    :class:`VAEGenerator`) of the chart drawn from ``p``: evaluation and generation decode
    with one chart, so each chart's own decoder must reconstruct. It bounds the error of the
    blended output ``sum_i p_i D_i(z_i)`` (Jensen), whose loss alone lets the charts
    co-adapt so that no single decoder reconstructs. Without ``1 / (2 sigma^2)`` the KL
    term outweighs a squared error of unit-scale data and the latent carries nothing.
    """

    def __init__(self, *, beta, gamma, tau, sigma, output_activation):
        self.beta = beta
        self.gamma = gamma
        self.tau = tau
        self.sigma = sigma
        self.output_activation = output_activation

    def __call__(self, module, y_pred, x, y, epoch=0, sample_weight=None):
        mu, logvar = y_pred
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        means = decoded_mean(module.decode_all(z), "gaussian", self.output_activation)
        logits = module.chart_logits(z)
        p = torch.softmax(logits, dim=1)
        err = ((x[:, None] - means) ** 2).sum(-1)  # (B, k): ||x - D_i(z_i)||^2
        recon = (p * err).sum(1) / (2 * self.sigma ** 2)
        with torch.no_grad():  # q is a target: no gradient through err here
            tau = (weighted_mean(err.min(dim=1).values, sample_weight).clamp_min(_TAU_MIN)
                   if self.tau is None else self.tau)
            q = torch.softmax(-err / tau, dim=1)
        ce = -(q * F.log_softmax(logits, dim=1)).sum(-1)
        kl = kl_normal(mu, logvar)  # sums over the k * d dimensions: sum_i KL_i
        loss = recon + self.gamma * ce + self.beta * kl
        parts = {name: weighted_mean(term, sample_weight).detach()
                 for name, term in (("recon", recon), ("ce", ce), ("kl", kl))}
        return weighted_mean(loss, sample_weight), parts


class ChartAutoencoder(ImageOutputMixin, LatentInterpolationMixin, ReconstructionScoreMixin,
                       LatentModel):
    """Chart autoencoder (CAE): ``k`` latent charts glued by a chart predictor.

    Each chart ``i`` has an encoder ``E_i: x -> (mu_i, log sigma_i^2)`` in ``R^d`` and a
    decoder ``D_i``; the chart predictor ``P`` maps the concatenated latents
    ``[z_1, ..., z_k]`` (Jin et al. 2024, Section 2.1.2: not ``x``, so that one can
    generate without an input) to ``p = softmax(P)``. Training weighs the charts'
    reconstructions by ``p`` (loss in :class:`ChartObjective`); evaluation and generation
    use the likeliest chart, ``D_{i*}(z_{i*})``, ``i* = argmax p``. Several charts can
    cover a support that one Euclidean latent cannot (Schonsheck et al. 2019).

    Parameters
    ----------
    n_charts : int, default=4
        ``k``.
    chart_dim : int, default=2
        ``d``, the dimension of each chart.
    hidden_layer_sizes : sequence of int, default=(128, 128)
        Widths of the SiLU MLP encoders (decoders mirror them) and of the chart predictor.
    image_shape : tuple of int, default=None
        ``(H, W)`` or ``(C, H, W)`` to fold flat rows; images use the conv stacks of
        :class:`VAEGenerator` (sigmoid output; H and W divisible by 4).
    beta : float, default=1.0
        Weight of the KL terms.
    gamma : float, default=1.0
        Weight of the chart cross-entropy.
    tau : float, default=None
        Temperature of the chart target ``q``; None: the detached batch mean of
        ``min_i ||x - D_i(z_i)||^2``.
    sigma : float, default=0.05
        Standard deviation of the Gaussian likelihood on the data scale, as in
        :class:`VAEGenerator`: the squared error is divided by ``2 sigma^2``. Rule: the
        reconstruction error one accepts, e.g. the data's noise level; ``beta`` then
        needs no tuning. Too large a ``sigma`` (a unit-scale ``sigma`` on unit-scale
        data) lets the KL term win and the latent carry nothing.
    max_epochs : int, default=200
    batch_size : int, default=128
    lr : float, default=1e-3
    callbacks : list of skorch callbacks, default=None
    warm_start : bool, default=False
    device : str or torch.device, default='auto'
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
    **net_params
        skorch settings (``module__*``, ``optimizer__*``, ...).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
        The trained skorch net; ``module_`` is its :class:`ChartModule`-like module.
    chart_counts_ : ndarray of shape (n_charts,)
        Training points per likeliest chart; a chart that gets none is kept (count 0).
        The chart target rewards the chart that already reconstructs best, so a few
        charts often take most points: check it, and prefer charts of the data
        manifold's dimension (``chart_dim=1`` for a circle).
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``train_loss``, ``recon``,
        ``ce`` and ``kl``, e.g. ``history_[:, "ce"]``.
    n_features_in_, image_shape_, device_, n_iter_
        As in :class:`VAEGenerator`.

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.generative import ChartAutoencoder
    >>> X = make_circle_points(200, noise=0.05, random_state=0)
    >>> cae = ChartAutoencoder(n_charts=3, hidden_layer_sizes=(16,), max_epochs=2,
    ...                        random_state=0).fit(X)
    >>> cae.transform(X).shape, cae.predict_proba(X).shape, int(cae.chart_counts_.sum())
    ((200, 6), (200, 3), 200)
    >>> X_new, charts = cae.sample(4, random_state=0, return_charts=True)
    >>> X_new.shape, charts.shape
    ((4, 2), (4,))
    """

    _parameter_constraints = {  # noqa: RUF012
        **NET_CONSTRAINTS,
        "max_epochs": EPOCH_CONSTRAINTS["max_epochs"],  # weight_decay is fixed at 0
        "n_charts": [Interval(numbers.Integral, 1, None, closed="left")],
        "chart_dim": [Interval(numbers.Integral, 1, None, closed="left")],
        "image_shape": ["array-like", None],
        "beta": [Interval(numbers.Real, 0, None, closed="left")],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "tau": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither")],
    }

    # what LatentModel reads besides the parameters
    architecture = "mlp"
    likelihood = "gaussian"
    weight_decay = 0.0

    def __init__(self, n_charts=4, chart_dim=2, hidden_layer_sizes=(128, 128), image_shape=None,
                 beta=1.0, gamma=1.0, tau=None, sigma=0.05, max_epochs=200, batch_size=128,
                 lr=1e-3, callbacks=None, warm_start=False, device="auto", random_state=None,
                 verbose=0, **net_params):
        self.n_charts = n_charts
        self.chart_dim = chart_dim
        self.hidden_layer_sizes = hidden_layer_sizes
        self.image_shape = image_shape
        self.beta = beta
        self.gamma = gamma
        self.tau = tau
        self.sigma = sigma
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    @property
    def n_latent(self):
        return self.n_charts * self.chart_dim

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Train the charts, decoders and chart predictor.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, H, W) / (n, C, H, W)
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the loss (and of the batch mean that sets ``tau=None``): each batch's loss is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of the rows' losses, so integer weights equal
            repeated rows and a weight 0 drops a row.

        Returns
        -------
        self : ChartAutoencoder
        """
        warm = self._warm()
        sizes = check_hidden_sizes(self.hidden_layer_sizes)
        X = self._validate_X(X, reset=not warm)
        objective = ChartObjective(beta=self.beta, gamma=self.gamma, tau=self.tau,
                                   sigma=self.sigma, output_activation=self.output_activation)
        module = functools.partial(ChartModule, X.shape[1], self.n_charts, self.chart_dim,
                                   self.image_shape_, sizes)
        self._train_vae(X, None, objective, parts=("recon", "ce", "kl"), module=module,
                        sample_weight=sample_weight)
        self.chart_counts_ = np.bincount(self._chart_logits(self._encode(X)).argmax(1),
                                         minlength=self.n_charts)
        return self

    @torch.no_grad()
    def _chart_logits(self, Z):
        """``P(z)`` for concatenated latents ``Z`` (float32 rows), as float64."""
        with frozen(self.module_):
            out = [to_numpy(self.module_.chart_logits(z)) for z in self._batches(Z)]
        return np.concatenate(out).astype(np.float64)

    def predict_proba(self, X):
        """Chart probabilities ``p = softmax(P([mu_1, ..., mu_k]))`` at the latent means.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        proba : ndarray of shape (n_samples, n_charts)
        """
        logits = self._chart_logits(self.transform(X).astype(np.float32))
        proba = np.exp(logits - logits.max(axis=1, keepdims=True))
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X):
        """The likeliest chart ``argmax_i p_i`` of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or image array

        Returns
        -------
        charts : ndarray of shape (n_samples,), int64
        """
        return self._chart_logits(self.transform(X).astype(np.float32)).argmax(1)

    def sample(self, n_samples=1, random_state=None, return_charts=False):
        """Generate: ``z_i ~ N(0, I_d)`` for every chart, decoded by the likeliest chart.

        The chart is ``argmax P([z])`` among the charts that received training points
        (``chart_counts_ > 0``): a chart that no training point chose was never fitted
        to the data, and its decoder's outputs lie anywhere.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None
        return_charts : bool, default=False
            Also return the chart of each sample.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        charts : ndarray of shape (n_samples,), int64, only with ``return_charts``
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        rng = check_random_state(random_state)
        Z = rng.standard_normal((n_samples, self.n_latent)).astype(np.float32)
        logits = self._chart_logits(Z)
        logits[:, self.chart_counts_ == 0] = -np.inf
        charts = logits.argmax(1)
        X = self._decode_charts(Z, charts)
        return (X, charts) if return_charts else X

    @torch.no_grad()
    def _decode_charts(self, Z, charts):
        """Decode each latent row ``Z[i]`` by chart ``charts[i]``."""
        out, start = [], 0
        with frozen(self.module_):
            for z in self._batches(Z):
                rows = torch.arange(len(z), device=z.device)
                c = torch.as_tensor(charts[start:start + len(z)], device=z.device)
                start += len(z)
                raw = self.module_.decode_all(z)[rows, c]
                out.append(to_numpy(decoded_mean(raw, self.likelihood, self.output_activation)))
        return np.concatenate(out).astype(np.float64)
