"""The one DDPM core (Ho et al. 2020), shared by every diffusion estimator.

:class:`~geolearn.generative.DiffusionDensity` (chain log-likelihoods),
:class:`~geolearn.generative.DiffusionGenerator` (sampling, interpolation) and
:class:`~geolearn.ood.InpaintingOODDetector` are built on these pieces, and so is any
later diffusion method (one core, not one per estimator, in this package or another):

- the noise schedule: :func:`make_beta_schedule`, :func:`diffusion_schedule`
  (``betas`` of shape ``(T,)``, ``alphas_cumprod`` of shape ``(T + 1,)`` with index 0 = 1);
- noise predictors ``eps_theta(x_t, t)`` with ``t`` the integer step in ``1..T``:
  :class:`NoisePredictor` (an MLP on ``[x_t, time features]``), :class:`UNetDenoiser`
  for images, and :class:`DenoiserWrapper` for any module with ``forward(x, t)``; in
  training mode each draws ``t ~ U{1..T}`` and the noise itself;
- the denoising objective ``L_simple`` (:func:`denoising_objective`), for
  :class:`geolearn.models.ObjectiveNet`;
- the forward jump :func:`q_sample` and the ancestral sampler :func:`ancestral_sample`
  on a time grid (:func:`time_grid`, or the respaced :func:`respaced_grid`), with
  :func:`reverse_mean` and :func:`reverse_variance`;
- replacement inpainting (:func:`inpaint_sample`) and its masks
  (:func:`inpainting_mask`), for :class:`~geolearn.ood.InpaintingOODDetector`;
- :class:`EMAWeights`, a skorch callback averaging the weights over training.

The module is public (its ``__all__``): other families build on it through these names.
:func:`time_grid`, :func:`reverse_mean` and :func:`reverse_variance` are internal steps of
the samplers.
"""

import copy
import functools
import math

import numpy as np
import torch
from skorch.callbacks import Callback
from torch import nn

from .._utils import check_hidden_sizes, warn_user
from ..exceptions import GeolearnWarning
from ..models._internal import weighted_mean

__all__ = [
    "DenoiserWrapper",
    "EMAWeights",
    "NoisePredictor",
    "UNetDenoiser",
    "ancestral_sample",
    "check_noise_shape",
    "denoiser_kind",
    "denoising_objective",
    "diffusion_schedule",
    "inpaint_sample",
    "inpainting_mask",
    "make_beta_schedule",
    "noise_model_factory",
    "q_sample",
    "respaced_grid",
    "time_features",
    "unet_noise_model",
]


def make_beta_schedule(n_timesteps, schedule="linear", beta_start=1e-4, beta_end=0.02):
    """Noise schedule ``beta_1..beta_T`` (float64).

    'linear': from ``beta_start * 1000 / T`` to ``beta_end * 1000 / T`` (DDPM's values
    rescaled to T steps; T = 1000 gives DDPM's 1e-4 to 0.02). 'cosine':
    ``alpha_bar(t) = cos^2(((t/T) + 0.008)/1.008 pi/2)`` normalised,
    ``beta_t = 1 - alpha_bar(t)/alpha_bar(t-1)`` clipped to 0.999.

    Parameters
    ----------
    n_timesteps : int
        ``T``.
    schedule : {'linear', 'cosine'}, default='linear'
    beta_start, beta_end : float, default=1e-4, 0.02

    Returns
    -------
    betas : ndarray of shape (n_timesteps,)

    Examples
    --------
    >>> from geolearn.generative.ddpm import make_beta_schedule
    >>> b = make_beta_schedule(100)
    >>> round(float(b[0]), 6), round(float(b[-1]), 6)
    (0.001, 0.2)
    """
    T = n_timesteps
    if schedule == "linear":
        return np.linspace(beta_start * 1000 / T, beta_end * 1000 / T, T)
    f = np.cos(((np.arange(T + 1) / T) + 0.008) / 1.008 * np.pi / 2) ** 2
    return np.clip(1 - f[1:] / f[:-1], 0, 0.999)


def diffusion_schedule(n_timesteps, schedule="linear", beta_start=1e-4, beta_end=0.02):
    """``(betas, alphas_cumprod)`` of a schedule; one that is not a diffusion raises.

    Parameters
    ----------
    n_timesteps, schedule, beta_start, beta_end
        As in :func:`make_beta_schedule`.

    Returns
    -------
    betas : ndarray of shape (n_timesteps,)
        ``betas[t - 1] = beta_t``.
    alphas_cumprod : ndarray of shape (n_timesteps + 1,)
        ``alpha_bar_t``, index 0 = 1.

    Raises
    ------
    ValueError
        When a ``beta_t`` reaches 1, or ``alpha_bar_T > 1e-2`` (the chain does not
        reach noise).

    Examples
    --------
    >>> from geolearn.generative.ddpm import diffusion_schedule
    >>> betas, abar = diffusion_schedule(1000)
    >>> betas.shape, abar.shape, float(abar[0]), bool(abar[-1] < 1e-4)
    ((1000,), (1001,), 1.0, True)
    """
    betas = make_beta_schedule(n_timesteps, schedule, beta_start, beta_end)
    if np.any(betas >= 1):
        raise ValueError(f"beta_end * 1000 / n_timesteps = {betas.max():g} must be below 1; "
                         "lower beta_end or raise n_timesteps.")
    alphas_cumprod = np.concatenate([[1.0], np.cumprod(1 - betas)])
    if alphas_cumprod[-1] > 1e-2:
        raise ValueError(f"alpha_bar_T = {alphas_cumprod[-1]:.3g} > 1e-2: the schedule "
                         "does not reach noise; raise beta_end or n_timesteps.")
    return betas, alphas_cumprod


def time_features(t, n_timesteps, n_freq=8, frequencies="octave"):
    """``[sin(w_f t), cos(w_f t)]`` for ``f < n_freq``, shape ``(B, 2 n_freq)``.

    'octave': ``w_f = 2^f pi / T``; 'geometric': ``w_f = 10000^(-f / n_freq)`` (the
    sinusoidal embedding of DDPM and transformers, in steps).

    Parameters
    ----------
    t : torch.Tensor of shape (B,)
        Diffusion steps (integers or floats).
    n_timesteps : int
        The number of steps ``T`` of the chain.
    n_freq : int, default=8
        Number of frequencies; the output has ``2 n_freq`` columns.
    frequencies : {"octave", "geometric"}, default="octave"
        How the frequencies ``w_f`` are spaced (see above).

    Returns
    -------
    features : torch.Tensor of shape (B, 2 n_freq)
        float32.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import time_features
    >>> time_features(torch.tensor([1, 500]), 1000, n_freq=16, frequencies="geometric").shape
    torch.Size([2, 32])
    """
    if frequencies == "octave":
        freq = (2.0 ** torch.arange(n_freq, device=t.device)) * math.pi / n_timesteps
    else:
        freq = torch.exp(-math.log(10000.0) / n_freq
                         * torch.arange(n_freq, device=t.device, dtype=torch.float32))
    angle = t[:, None].float() * freq
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)


class _NoiseModel(nn.Module):
    """``eps_theta`` on the schedule ``alphas_cumprod`` (a float32 buffer).

    In training mode ``forward(x0)`` draws ``t ~ U{1..T}`` and the noise, and returns
    ``(eps_theta(x_t, t), eps)``; subclasses define ``eps(x_t, t)``.
    """

    def __init__(self, alphas_cumprod):
        super().__init__()
        self.register_buffer("alphas_cumprod", torch.as_tensor(alphas_cumprod,
                                                               dtype=torch.float32))
        self.n_timesteps = len(alphas_cumprod) - 1

    def eps(self, x_t, t):
        raise NotImplementedError

    def forward(self, x0):
        t = torch.randint(1, self.n_timesteps + 1, (len(x0),), device=x0.device)
        noise = torch.randn_like(x0)
        a = self.alphas_cumprod[t][:, None]
        return self.eps(a.sqrt() * x0 + (1 - a).sqrt() * noise, t), noise


class NoisePredictor(_NoiseModel):
    """``eps_theta(x_t, t)``: an MLP with SiLU on ``[x_t, time features]``.

    Parameters
    ----------
    n_features : int
    hidden_layer_sizes : sequence of int
    alphas_cumprod : array of shape (T + 1,)
    n_freq : int, default=8
        Time features ``2 n_freq`` (sines and cosines).
    frequencies : {'octave', 'geometric'}, default='octave'
        See :func:`time_features`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import NoisePredictor, diffusion_schedule
    >>> model = NoisePredictor(2, (16,), diffusion_schedule(100)[1])
    >>> eps_pred, eps = model(torch.zeros(5, 2))  # training draw of t and the noise
    >>> eps_pred.shape, model.eps(torch.zeros(5, 2), torch.full((5,), 100)).shape
    (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(self, n_features, hidden_layer_sizes, alphas_cumprod, n_freq=8,
                 frequencies="octave"):
        super().__init__(alphas_cumprod)
        self.n_freq, self.frequencies = n_freq, frequencies
        layers, width = [], n_features + 2 * n_freq
        for h in hidden_layer_sizes:
            layers += [nn.Linear(width, h), nn.SiLU()]
            width = h
        self.net = nn.Sequential(*layers, nn.Linear(width, n_features))

    def eps(self, x_t, t):
        tf = time_features(t, self.n_timesteps, self.n_freq, self.frequencies)
        return self.net(torch.cat([x_t, tf], dim=1))


class DenoiserWrapper(_NoiseModel):
    """Any module ``denoiser(x_t, t) -> eps`` (``t`` an integer tensor) on a schedule.

    Parameters
    ----------
    denoiser : torch.nn.Module
        Predicts the noise of flat rows ``x_t`` at integer steps ``t``, with the shape
        of ``x_t``.
    alphas_cumprod : torch.Tensor of shape (n_steps + 1,)
        The schedule's ``abar`` (index 0 = 1), as :func:`diffusion_schedule` gives it.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import DenoiserWrapper, UNetDenoiser, diffusion_schedule
    >>> model = DenoiserWrapper(UNetDenoiser((1, 8, 8), (8, 16)), diffusion_schedule(100)[1])
    >>> model.eps(torch.zeros(3, 64), torch.tensor([1, 50, 100])).shape
    torch.Size([3, 64])
    """

    def __init__(self, denoiser, alphas_cumprod):
        super().__init__(alphas_cumprod)
        self.denoiser = denoiser

    def eps(self, x_t, t):
        return self.denoiser(x_t, t)


class _TimeResBlock(nn.Module):
    """GroupNorm-SiLU-conv twice, the time embedding added in between, and a skip."""

    def __init__(self, c_in, c_out, t_dim):
        super().__init__()
        self.block1 = nn.Sequential(nn.GroupNorm(8, c_in), nn.SiLU(),
                                    nn.Conv2d(c_in, c_out, 3, padding=1))
        self.time = nn.Linear(t_dim, c_out)
        self.block2 = nn.Sequential(nn.GroupNorm(8, c_out), nn.SiLU(),
                                    nn.Conv2d(c_out, c_out, 3, padding=1))
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x, temb):
        h = self.block1(x) + self.time(temb)[:, :, None, None]
        return self.block2(h) + self.skip(x)


class UNetDenoiser(nn.Module):
    """A 2-level UNet ``eps(x_t, t)`` on flat rows folded to ``image_shape``.

    Residual blocks with GroupNorm(8) and the time embedding (32 sines and cosines,
    geometric frequencies, then an MLP) added in each block; two stride-2 downsamplings,
    so H and W must be divisible by 4, and ``channels`` by 8. See
    :class:`DenoiserWrapper` for an example.

    Parameters
    ----------
    image_shape : tuple of int
        ``(C, H, W)`` of the images the flat rows hold.
    channels : tuple of int, default=(32, 64)
        Widths of the two levels.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import UNetDenoiser
    >>> unet = UNetDenoiser((1, 8, 8), (8, 16))
    >>> unet(torch.zeros(3, 64), torch.tensor([1, 50, 100])).shape
    torch.Size([3, 64])
    """

    def __init__(self, image_shape, channels=(32, 64)):
        super().__init__()
        self.check_shape(image_shape, channels)
        C, H, W = self.image_shape = tuple(image_shape)
        c1, c2 = channels
        self.temb = nn.Sequential(nn.Linear(64, c2), nn.SiLU(), nn.Linear(c2, c2))
        self.inp = nn.Conv2d(C, c1, 3, padding=1)
        self.down1, self.pool1 = _TimeResBlock(c1, c1, c2), nn.Conv2d(c1, c1, 3, 2, 1)
        self.down2, self.pool2 = _TimeResBlock(c1, c2, c2), nn.Conv2d(c2, c2, 3, 2, 1)
        self.mid = _TimeResBlock(c2, c2, c2)
        self.up2 = _TimeResBlock(2 * c2, c2, c2)
        self.up1 = _TimeResBlock(c2 + c1, c1, c2)
        self.out = nn.Sequential(nn.GroupNorm(8, c1), nn.SiLU(), nn.Conv2d(c1, C, 3, padding=1))

    @staticmethod
    def check_shape(image_shape, channels):
        """A ValueError unless H and W are divisible by 4 and the channels by 8."""
        _, H, W = image_shape
        c1, c2 = channels
        if H % 4 or W % 4 or c1 % 8 or c2 % 8:
            raise ValueError(f"denoiser='unet' needs H and W divisible by 4 and unet_channels "
                             f"divisible by 8; got image_shape={tuple(image_shape)}, "
                             f"unet_channels={tuple(channels)}.")

    def forward(self, x, t):
        temb = self.temb(time_features(t, 1, 32, "geometric"))
        h0 = self.inp(x.reshape(len(x), *self.image_shape))
        h1 = self.down1(h0, temb)
        h2 = self.down2(self.pool1(h1), temb)
        h = self.mid(self.pool2(h2), temb)
        h = self.up2(torch.cat([nn.functional.interpolate(h, scale_factor=2.0), h2], 1), temb)
        h = self.up1(torch.cat([nn.functional.interpolate(h, scale_factor=2.0), h1], 1), temb)
        return self.out(h).reshape(len(x), -1)


def unet_noise_model(image_shape, channels, alphas_cumprod):
    """A :class:`UNetDenoiser` noise model on a schedule (a module factory for skorch).

    Pass it to skorch as ``functools.partial(unet_noise_model, ...)``, so that the
    UNet's weights are drawn when the net is initialised, under the training seed.

    Parameters
    ----------
    image_shape : tuple of int
        ``(C, H, W)`` of the images the flat rows hold.
    channels : tuple of int
        Widths of the UNet's two levels (multiples of 8).
    alphas_cumprod : torch.Tensor of shape (n_steps + 1,)
        The schedule's ``abar`` (index 0 = 1).

    Returns
    -------
    model : DenoiserWrapper

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import diffusion_schedule, unet_noise_model
    >>> model = unet_noise_model((1, 8, 8), (8, 8), diffusion_schedule(100)[1])
    >>> model.eps(torch.zeros(2, 64), torch.tensor([1, 100])).shape
    torch.Size([2, 64])
    """
    return DenoiserWrapper(UNetDenoiser(image_shape, channels), alphas_cumprod)


def denoiser_kind(denoiser, n_features, image_shape=None, *, hidden_layer_sizes=(256, 256, 256),
                  unet_channels=(32, 64)):
    """``"custom"``, ``"mlp"`` or ``"unet"``: the noise model a ``denoiser`` parameter names.

    ``"auto"`` is the MLP for vectors and for images no wider than its narrowest hidden
    layer, else the UNet where ``image_shape`` allows it (H and W divisible by 4,
    ``unet_channels`` by 8). The MLP predicts the full-rank noise of the image through
    its hidden layers: narrower than the image it cannot (its loss stays near
    ``1 - width / n_features``), so the sampled or inpainted images stay noisy. A
    module is ``"custom"``.

    Parameters
    ----------
    denoiser : {"auto", "mlp", "unet"} or torch.nn.Module
    n_features : int
        Values per (flat) sample.
    image_shape : tuple of int or None, default=None
    hidden_layer_sizes : tuple of int, default=(256, 256, 256)
        The MLP's hidden layers.
    unet_channels : tuple of two int, default=(32, 64)

    Returns
    -------
    kind : {"custom", "mlp", "unet"}

    Examples
    --------
    >>> from geolearn.generative.ddpm import denoiser_kind
    >>> denoiser_kind("auto", 28 * 28, (1, 28, 28)), denoiser_kind("auto", 64, (1, 8, 8))
    ('unet', 'mlp')
    >>> denoiser_kind("auto", 28 * 28, (1, 28, 28), hidden_layer_sizes=(1024,))
    'mlp'
    """
    if not isinstance(denoiser, str):
        return "custom"
    if denoiser != "auto":
        return denoiser
    if image_shape is None or not _mlp_too_narrow(n_features, hidden_layer_sizes):
        return "mlp"
    try:
        UNetDenoiser.check_shape(image_shape, check_hidden_sizes(unet_channels, "unet_channels"))
    except ValueError:
        return "mlp"
    return "unet"


def _mlp_too_narrow(n_features, hidden_layer_sizes):
    """Whether an MLP noise model on ``hidden_layer_sizes`` is narrower than its samples."""
    return n_features > min(check_hidden_sizes(hidden_layer_sizes))


def noise_model_factory(denoiser, alphas_cumprod, *, n_features, image_shape=None,
                        hidden_layer_sizes=(256, 256, 256), unet_channels=(32, 64), n_freq=32):
    """The skorch module factory of the noise model a ``denoiser`` parameter names.

    The one reading of the ``denoiser`` parameter of the diffusion estimators:
    ``"auto"`` as in :func:`denoiser_kind` (with a warning where the MLP is too narrow
    for the images and the UNet does not fit them); ``"mlp"`` a :class:`NoisePredictor` on ``hidden_layer_sizes``; ``"unet"`` a
    :class:`UNetDenoiser` (images only); a module, a copy of it wrapped by
    :class:`DenoiserWrapper`. The factory is a ``functools.partial``, so that skorch
    draws the weights when it initialises the net, under the training seed.

    Parameters
    ----------
    denoiser : {"auto", "mlp", "unet"} or torch.nn.Module
    alphas_cumprod : torch.Tensor of shape (n_timesteps + 1,)
        The schedule's ``abar`` (index 0 = 1).
    n_features : int
        Values per (flat) sample.
    image_shape : tuple of int or None, default=None
        ``(C, H, W)`` of the samples, or None for vectors.
    hidden_layer_sizes : tuple of int, default=(256, 256, 256)
    unet_channels : tuple of two int, default=(32, 64)
    n_freq : int, default=32
        Time-feature frequencies of the MLP.

    Returns
    -------
    factory : callable
        Builds the noise model (a :class:`DenoiserWrapper` or :class:`NoisePredictor`).

    Examples
    --------
    >>> from geolearn.generative.ddpm import diffusion_schedule, noise_model_factory
    >>> factory = noise_model_factory("auto", diffusion_schedule(100)[1], n_features=4,
    ...                               hidden_layer_sizes=(8,))
    >>> type(factory()).__name__
    'NoisePredictor'
    """
    kind = denoiser_kind(denoiser, n_features, image_shape,
                         hidden_layer_sizes=hidden_layer_sizes, unet_channels=unet_channels)
    if kind == "mlp" and denoiser == "auto" and image_shape is not None \
            and _mlp_too_narrow(n_features, hidden_layer_sizes):
        warn_user(f"the MLP denoiser's narrowest hidden layer "
                  f"({min(check_hidden_sizes(hidden_layer_sizes))}) is narrower than the "
                  f"images' {n_features} values: it cannot predict their full-rank noise, so "
                  "its outputs stay noisy; the UNet does not fit image_shape "
                  f"{tuple(image_shape)} with unet_channels={tuple(unet_channels)} (H, W "
                  "divisible by 4, channels by 8). Pass hidden_layer_sizes at least that wide.",
                  GeolearnWarning)
    if kind == "custom":
        return functools.partial(DenoiserWrapper, copy.deepcopy(denoiser), alphas_cumprod)
    if kind == "mlp":
        return functools.partial(NoisePredictor, n_features, check_hidden_sizes(hidden_layer_sizes),
                                 alphas_cumprod, n_freq=n_freq, frequencies="geometric")
    if image_shape is None:
        raise ValueError("denoiser='unet' needs images: pass image_shape=(C, H, W) or "
                         "image arrays (n, C, H, W).")
    channels = check_hidden_sizes(unet_channels, "unet_channels")
    if len(channels) != 2:
        raise ValueError(f"unet_channels must be two integers; got {unet_channels!r}.")
    UNetDenoiser.check_shape(image_shape, channels)
    return functools.partial(unet_noise_model, tuple(image_shape), channels, alphas_cumprod)


def denoising_objective(module, y_pred, x, y, epoch=0, reduction="sum", sample_weight=None):
    """``L_simple``: squared error of the noise prediction, summed (or averaged) over features.

    For :class:`geolearn.models.ObjectiveNet`; ``y_pred = (eps_theta, eps)`` from a
    noise model's training ``forward``. ``reduction='mean'`` averages over features
    (pixels) instead of summing. Returns ``(loss, {})``. A noise prediction whose shape
    is not the noise's (a custom denoiser returning the wrong shape) is a ValueError,
    never a silent broadcast.

    Parameters
    ----------
    module : torch.nn.Module
        The noise model (unused: the prediction is in ``y_pred``).
    y_pred : tuple of torch.Tensor
        ``(eps_theta, eps)``, each of shape ``(batch, n_features)``.
    x, y : torch.Tensor or None
        The batch (unused).
    epoch : int, default=0
        The training epoch (unused).
    reduction : {"sum", "mean"}, default="sum"
        How the squared errors of a row's features combine.
    sample_weight : torch.Tensor of shape (batch,), default=None
        Weights of the rows: the batch mean is then ``sum_i w_i e_i / sum_i w_i``.

    Returns
    -------
    loss : torch.Tensor
        The (weighted) batch mean of the per-row errors, a scalar.
    parts : dict
        Empty: no further terms to log.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import denoising_objective
    >>> loss, _ = denoising_objective(None, (torch.zeros(4, 2), torch.ones(4, 2)), None, None)
    >>> loss.item()
    2.0
    """
    eps_pred, eps = y_pred
    check_noise_shape(eps_pred, eps)
    err = (eps_pred - eps) ** 2
    return weighted_mean(err.mean(-1) if reduction == "mean" else err.sum(-1), sample_weight), {}


def check_noise_shape(eps_pred, x):
    """A ValueError unless the denoiser's output ``eps_pred`` has the shape of its input ``x``.

    Parameters
    ----------
    eps_pred : torch.Tensor
        The denoiser's output.
    x : torch.Tensor
        The denoiser's input.

    Raises
    ------
    ValueError
        If the shapes differ.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import check_noise_shape
    >>> check_noise_shape(torch.zeros(2, 1), torch.zeros(2, 4))
    Traceback (most recent call last):
    ...
    ValueError: the denoiser returned shape (2, 1) for input of shape (2, 4); it must return \
the predicted noise with its input's shape (flat rows of C*H*W values).
    """
    if tuple(eps_pred.shape) != tuple(x.shape):
        raise ValueError(f"the denoiser returned shape {tuple(eps_pred.shape)} for input of "
                         f"shape {tuple(x.shape)}; it must return the predicted noise with its "
                         "input's shape (flat rows of C*H*W values).")


def time_grid(n_timesteps, step=1, stop=None):
    """``0, h, 2h, ...`` up to ``stop`` (default ``T``), ``stop`` always included.

    Examples
    --------
    >>> from geolearn.generative.ddpm import time_grid
    >>> time_grid(10, 4), time_grid(1000, 1, stop=3)
    ([0, 4, 8, 10], [0, 1, 2, 3])
    """
    stop = n_timesteps if stop is None else stop
    grid = list(range(0, stop + 1, step))
    return grid if grid[-1] == stop else [*grid, stop]


def reverse_variance(alphas_cumprod, s, t, kind="forward"):
    """``sigma_st^2`` of the reverse step ``t -> s``: 'forward' ``beta_bar_st`` or 'posterior'.

    'posterior' is ``(1 - alpha_bar_s) beta_bar_st / (1 - alpha_bar_t)`` (0 at ``s = 0``,
    where 'forward' is used instead).

    Examples
    --------
    >>> from geolearn.generative.ddpm import diffusion_schedule, reverse_variance
    >>> betas, abar = diffusion_schedule(1000)
    >>> bool(abs(reverse_variance(abar, 9, 10) - betas[9]) < 1e-15)  # beta_10
    True
    """
    a = alphas_cumprod
    b_st = 1 - a[t] / a[s]
    if kind == "posterior" and s > 0:
        return (1 - a[s]) * b_st / (1 - a[t])
    return b_st


def reverse_mean(eps, x, alphas_cumprod, s, t):
    """Mean of the reverse step ``t -> s`` of the noise predictor ``eps``.

    ``(x - beta_bar_st / sqrt(1 - abar_t) eps(x, t)) / sqrt(abar_t / abar_s)`` with
    ``beta_bar_st = 1 - abar_t / abar_s``. With ``s = t - 1`` it is DDPM's ``mu_theta``;
    on a respaced grid (:func:`respaced_grid`) it is the same formula with the respaced
    ``beta'``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import diffusion_schedule, reverse_mean
    >>> abar = diffusion_schedule(1000)[1]
    >>> mu = reverse_mean(lambda x, t: torch.zeros_like(x), torch.ones(1), abar, 0, 1)
    >>> round(float(mu), 5)  # 1 / sqrt(alpha_1)
    1.00005
    """
    a = alphas_cumprod
    a_st = a[t] / a[s]
    return (x - (1 - a_st) / math.sqrt(1 - a[t]) * eps(x, t)) / math.sqrt(a_st)


def respaced_grid(n_timesteps, n_inference_steps=None, stop=None):
    """The time grid ``[0, tau_1, ..., tau_S]`` of respaced sampling.

    ``tau = round(linspace(1, T, S))`` (Nichol and Dhariwal 2021): the reverse chain
    visits only ``tau_1 < ... < tau_S = T``, with ``abar'_i = abar_{tau_i}``
    (:func:`reverse_mean` and :func:`reverse_variance` on this grid use the respaced
    quantities); the network is called with the original step ``tau_i``. ``n_inference_steps=None`` is the full chain ``0..T``. ``stop``
    truncates the grid at that step (kept as its last point), to start the chain at
    ``stop`` instead of ``T`` (diffuse-then-denoise). ``S = 1`` is the single step ``T``.

    Parameters
    ----------
    n_timesteps : int
        ``T``.
    n_inference_steps : int, default=None
        ``S``, in ``1..T``.
    stop : int, default=None
        In ``1..T``; default ``T``.

    Returns
    -------
    grid : list of int
        Increasing, starting at 0 (for :func:`ancestral_sample`, :func:`inpaint_sample`).

    Examples
    --------
    >>> from geolearn.generative.ddpm import respaced_grid
    >>> respaced_grid(1000, 4), respaced_grid(1000, 4, stop=500), respaced_grid(3)
    ([0, 1, 334, 667, 1000], [0, 1, 334, 500], [0, 1, 2, 3])
    """
    S = n_timesteps if n_inference_steps is None else n_inference_steps
    # S = 1: the one step is T (linspace would give its start, 1)
    taus = ([n_timesteps] if S == 1
            else np.round(np.linspace(1, n_timesteps, S)).astype(int).tolist())
    if stop is None:
        return [0, *taus]
    return [0, *(t for t in taus if t < stop), stop]


def inpaint_sample(eps, x, known, mask, alphas_cumprod, grid, noise, variance="posterior",
                   clip=None):
    """Replacement inpainting (Song et al. 2020; Liu et al., LMD, Algorithm 2) along ``grid``.

    From ``x`` at step ``grid[-1]``, each reverse step ``t -> s`` draws the unknown
    pixels from ``p_theta(x_s | x_t)`` (mean :func:`reverse_mean`, variance
    :func:`reverse_variance`) and sets the known ones to a fresh forward draw
    ``sqrt(abar_s) known + sqrt(1 - abar_s) z``; the last step (``s = 0``) takes the
    mean for the unknown pixels and ``known`` itself for the known ones, so the kept
    pixels of the output equal ``known`` exactly. The known and unknown pixels are
    disjoint, so one standard normal draw ``z = noise(k)`` per step serves both. An
    all-False ``mask`` is plain ancestral sampling.

    Parameters
    ----------
    eps : callable ``(x_t, t) -> eps_theta``
        ``t`` a Python int.
    x : tensor of shape (n, n_features)
        The state at ``grid[-1]``.
    known : tensor of shape (n, n_features)
        The image to inpaint (model space).
    mask : bool tensor broadcastable to ``x``
        True = known (kept) pixel.
    alphas_cumprod : sequence of float of length T + 1
    grid : list of int
        Increasing steps starting at 0 (:func:`respaced_grid`).
    noise : callable ``k -> tensor like x``
        The standard normal draw of the ``k``-th step (``k = 0`` is the first step
        from ``grid[-1]``); not called on the last step.
    variance : {'posterior', 'forward'}, default='posterior'
        See :func:`reverse_variance`.
    clip : (float, float), default=None
        Clip the inpainted (unknown) pixels of the output to this range.

    Returns
    -------
    x0 : tensor like ``x``

    Examples
    --------
    >>> import math, torch
    >>> from geolearn.generative.ddpm import diffusion_schedule, inpaint_sample, respaced_grid
    >>> abar = diffusion_schedule(1000)[1]
    >>> eps = lambda x, t: math.sqrt(1 - abar[t]) * x  # exact for N(0, I) data
    >>> known, mask = torch.ones(2, 4), torch.tensor([True, False, True, False])
    >>> gen = torch.Generator().manual_seed(0)
    >>> out = inpaint_sample(eps, torch.randn(2, 4, generator=gen), known, mask, abar,
    ...                      respaced_grid(1000, 50), lambda k: torch.randn(2, 4, generator=gen))
    >>> bool((out[:, mask] == 1).all())
    True
    """
    a = alphas_cumprod
    for k, (s, t) in enumerate(zip(grid[-2::-1], grid[:0:-1])):
        mean = reverse_mean(eps, x, a, s, t)
        if s == 0:
            if clip is not None:
                mean = mean.clamp(*clip)
            return torch.where(mask, known, mean)
        z = noise(k)
        unknown = mean + math.sqrt(reverse_variance(a, s, t, variance)) * z
        x = torch.where(mask, math.sqrt(a[s]) * known + math.sqrt(1 - a[s]) * z, unknown)
    return x


def inpainting_mask(kind, image_shape, attempt=0, n_blocks=8, patch_size=4, random_state=None):
    """The mask of one inpainting attempt: True = known (kept) pixel, shape ``(C, H, W)``.

    The block of pixel ``(i, j)`` is ``(floor(i N / H), floor(j N / W))`` for ``N =
    n_blocks`` (the paper's ``H/N x W/N`` patches when ``N`` divides ``H`` and ``W``).

    - 'checkerboard_alt': keep iff ``block_i + block_j + attempt`` is even, so the
      kept and inpainted halves swap every attempt (the paper's default);
    - 'checkerboard': the ``attempt = 0`` pattern for every attempt;
    - 'center': inpaint rows ``[H//4, 3H//4)`` x columns ``[W//4, 3W//4)``;
    - 'random_patch': of the ``patch_size`` x ``patch_size`` patches, inpaint
      ``ceil(n_patches / 2)`` drawn with ``random_state`` (anything
      ``numpy.random.default_rng`` takes; draw a new one each attempt).

    The same mask holds for every channel.

    Parameters
    ----------
    kind : {'checkerboard_alt', 'checkerboard', 'center', 'random_patch'}
    image_shape : (C, H, W)
    attempt : int, default=0
    n_blocks : int, default=8
        In ``1..min(H, W)``.
    patch_size : int, default=4
        Must divide H and W ('random_patch').
    random_state : int, sequence of int or numpy Generator, default=None

    Returns
    -------
    mask : bool ndarray of shape (C, H, W)

    Examples
    --------
    >>> from geolearn.generative.ddpm import inpainting_mask
    >>> inpainting_mask("checkerboard_alt", (1, 4, 4), attempt=1, n_blocks=2)[0].astype(int)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1],
           [1, 1, 0, 0],
           [1, 1, 0, 0]])
    """
    C, H, W = image_shape
    if kind in ("checkerboard_alt", "checkerboard"):
        a = attempt if kind == "checkerboard_alt" else 0
        bi, bj = (np.arange(H) * n_blocks) // H, (np.arange(W) * n_blocks) // W
        keep = (bi[:, None] + bj[None, :] + a) % 2 == 0
    elif kind == "center":
        keep = np.ones((H, W), dtype=bool)
        keep[H // 4:(3 * H) // 4, W // 4:(3 * W) // 4] = False
    else:
        p = patch_size
        n_patches = (H // p) * (W // p)
        patches = np.ones(n_patches, dtype=bool)
        rng = np.random.default_rng(random_state)
        patches[rng.choice(n_patches, math.ceil(0.5 * n_patches), replace=False)] = False
        keep = np.kron(patches.reshape(H // p, W // p), np.ones((p, p), dtype=bool))
    return np.broadcast_to(keep, (C, H, W)).copy()


class EMAWeights(Callback):
    """Replace the trained weights by their exponential moving average (skorch callback).

    After every training batch the average moves by ``(1 - decay)`` towards the current
    weights; at the end of training the module gets the average (as DDPM and the
    paper's configurations do, with ``decay = 0.9999``). The average is torch's
    :class:`~torch.optim.swa_utils.AveragedModel` with
    :func:`~torch.optim.swa_utils.get_ema_multi_avg_fn`, started at the weights
    training begins from. Buffers (the schedule) are the module's own, not averaged.

    Parameters
    ----------
    decay : float
        In ``[0, 1)``.

    Attributes
    ----------
    average_ : torch.optim.swa_utils.AveragedModel
        The running average of the module being trained.

    Examples
    --------
    >>> import torch
    >>> from skorch import NeuralNetRegressor
    >>> from geolearn.generative.ddpm import EMAWeights
    >>> net = NeuralNetRegressor(torch.nn.Linear(1, 1), max_epochs=2, train_split=None,
    ...                          callbacks=[EMAWeights(0.0)], verbose=0)  # 0: the last weights
    >>> net = net.fit(torch.ones(4, 1), torch.ones(4, 1))
    >>> int(net.callbacks[0].average_.n_averaged)  # the start and 2 batches
    3
    """

    def __init__(self, decay):
        self.decay = decay

    @torch.no_grad()
    def on_train_begin(self, net, **kwargs):
        from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

        self.average_ = AveragedModel(net.module_, multi_avg_fn=get_ema_multi_avg_fn(self.decay))
        self.average_.update_parameters(net.module_)  # the first update copies: the start

    @torch.no_grad()
    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            self.average_.update_parameters(net.module_)

    @torch.no_grad()
    def on_train_end(self, net, **kwargs):
        for param, average in zip(net.module_.parameters(), self.average_.module.parameters()):
            param.copy_(average)


def q_sample(x0, t, alphas_cumprod, noise):
    """Jump to step ``t`` of the forward chain: ``sqrt(abar_t) x0 + sqrt(1 - abar_t) noise``.

    Parameters
    ----------
    x0 : torch.Tensor
        Clean data.
    t : int
        The step, ``0..n_steps`` (0 is the data).
    alphas_cumprod : torch.Tensor of shape (n_steps + 1,)
        The schedule's ``abar`` (index 0 = 1).
    noise : torch.Tensor
        Standard normal noise of the shape of ``x0``.

    Returns
    -------
    x_t : torch.Tensor

    Examples
    --------
    >>> import torch
    >>> from geolearn.generative.ddpm import diffusion_schedule, q_sample
    >>> abar = diffusion_schedule(1000)[1]
    >>> q_sample(torch.ones(2), 0, abar, torch.zeros(2))  # t = 0 is the data
    tensor([1., 1.])
    """
    a = alphas_cumprod[t]
    return math.sqrt(a) * x0 + math.sqrt(1 - a) * noise


def ancestral_sample(eps, x, alphas_cumprod, grid, variance="forward", generator=None):
    """Run the reverse chain from ``x`` at step ``grid[-1]`` down to 0 along ``grid``.

    Each step ``t -> s`` takes the mean
    ``(x - beta_bar_st / sqrt(1 - abar_t) eps(x, t)) / sqrt(abar_t / abar_s)`` and adds
    ``sqrt(sigma_st^2)`` times fresh noise (:func:`reverse_variance`), except on the last
    step. With ``grid = 0..T`` and 'forward' it is DDPM's Algorithm 2 (sigma_t^2 = beta_t).

    Parameters
    ----------
    eps : callable ``(x_t, t) -> eps_theta``
        ``t`` a Python int; returns a tensor like ``x_t``.
    x : tensor of shape (n, n_features)
        The state at ``grid[-1]`` (``N(0, I)`` draws for unconditional sampling).
    alphas_cumprod : sequence of float of length T + 1
    grid : list of int
        Increasing steps starting at 0 (:func:`time_grid`).
    variance : {'forward', 'posterior'}, default='forward'
    generator : torch.Generator, default=None
        A CPU generator for the noise (drawn on the CPU, then moved to ``x``'s device);
        None uses torch's global RNG.

    Returns
    -------
    x0 : tensor like ``x``

    Examples
    --------
    With the exact noise predictor of N(0, I) data, ``eps(x_t, t) = sqrt(1 - abar_t) x_t``,
    the chain returns N(0, I) draws:

    >>> import math, torch
    >>> from geolearn.generative.ddpm import ancestral_sample, diffusion_schedule, time_grid
    >>> abar = diffusion_schedule(1000)[1]
    >>> eps = lambda x, t: math.sqrt(1 - abar[t]) * x
    >>> _ = torch.manual_seed(0)
    >>> x0 = ancestral_sample(eps, torch.randn(20000, 1), abar, time_grid(1000))
    >>> round(x0.std().item(), 1)
    1.0
    """
    a = alphas_cumprod
    for s, t in zip(grid[-2::-1], grid[:0:-1]):
        x = reverse_mean(eps, x, a, s, t)
        if s > 0:
            noise = (torch.randn_like(x) if generator is None else
                     torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device))
            x = x + math.sqrt(reverse_variance(a, s, t, variance)) * noise
    return x
