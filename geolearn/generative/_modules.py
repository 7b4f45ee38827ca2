"""Encoder/decoder networks. Each exposes ``encode(x) -> (mu, logvar)`` and ``decode(z) -> raw``.

``x`` is flat ``(B, D)``; convolutional networks fold it with their ``image_shape``.
The raw decoder output is Bernoulli logits or, for a Gaussian likelihood, the
mean before ``output_activation``.
"""

import math

import torch
from torch import nn

from .._utils.autoencoder import mlp as _mlp


class MLPVAE(nn.Module):
    """Linear-``activation`` encoder with two linear heads and its mirrored decoder."""

    def __init__(self, n_features, n_latent, hidden_layer_sizes=(256, 128), activation=nn.ReLU):
        super().__init__()
        sizes = (n_features, *hidden_layer_sizes)
        self.encoder = _mlp(sizes, activation)
        self.mu = nn.Linear(sizes[-1], n_latent)
        self.logvar = nn.Linear(sizes[-1], n_latent)
        self.decoder = nn.Sequential(_mlp((n_latent, *sizes[::-1][:-1]), activation),
                                     nn.Linear(sizes[1] if len(sizes) > 1 else n_latent,
                                               n_features))

    def encode(self, x):
        h = self.encoder(x)
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        return self.decoder(z)


class _ImageVAE(nn.Module):
    """Folds flat rows into ``image_shape`` for ``encoder`` and crops ``decoder``'s images back.

    Subclasses set ``encoder`` (to a flat feature), ``mu``, ``logvar`` and
    ``decoder`` (to images at least ``H x W``: stride-2 upsampling can overshoot odd sizes).
    """

    def __init__(self, image_shape):
        super().__init__()
        self.image_shape = tuple(image_shape)

    def encode(self, x):
        h = self.encoder(x.reshape(len(x), *self.image_shape))
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        C, H, W = self.image_shape
        return self.decoder(z)[:, :, :H, :W].reshape(len(z), -1)


class ConvVAE(_ImageVAE):
    """3x3 conv, stride-2 3x3 conv, linear 256; mirrored with a 4x4 stride-2 transposed conv."""

    def __init__(self, image_shape, n_latent, channels=32):
        super().__init__(image_shape)
        C, H, W = self.image_shape
        h2, w2 = (H + 1) // 2, (W + 1) // 2
        self.encoder = nn.Sequential(
            nn.Conv2d(C, channels, 3, padding=1), nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(2 * channels * h2 * w2, 256), nn.ReLU())
        self.mu = nn.Linear(256, n_latent)
        self.logvar = nn.Linear(256, n_latent)
        self.decoder = nn.Sequential(
            nn.Linear(n_latent, 256), nn.ReLU(),
            nn.Linear(256, 2 * channels * h2 * w2), nn.ReLU(),
            nn.Unflatten(1, (2 * channels, h2, w2)),
            nn.ConvTranspose2d(2 * channels, channels, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels, C, 3, padding=1))


class StridedConvVAE(_ImageVAE):
    """Two 4x4 stride-2 convs (32, 64 channels), linear 256; mirrored with transposed convs.

    The conv stacks of the topology generators (spec: Conv(C->32, 4, 2, 1) ReLU,
    Conv(32->64, 4, 2, 1) ReLU, FC(->256) ReLU, FC(-> 2 latent)); H and W must be
    divisible by 4. The sigmoid output is the estimator's ``output_activation``.
    """

    def __init__(self, image_shape, n_latent):
        super().__init__(image_shape)
        C, H, W = self.image_shape
        if H % 4 or W % 4:
            raise ValueError(f"the conv stacks need image sides divisible by 4; got "
                             f"image_shape={self.image_shape}.")
        flat = (64, H // 4, W // 4)
        self.encoder = nn.Sequential(
            nn.Conv2d(C, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 64, 4, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(math.prod(flat), 256), nn.ReLU())
        self.mu = nn.Linear(256, n_latent)
        self.logvar = nn.Linear(256, n_latent)
        self.decoder = nn.Sequential(
            nn.Linear(n_latent, 256), nn.ReLU(), nn.Linear(256, math.prod(flat)), nn.ReLU(),
            nn.Unflatten(1, flat),
            nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(32, C, 4, stride=2, padding=1))


def generator_backbone(n_features, n_latent, image_shape, hidden_layer_sizes):
    """The topology generators' backbone: a SiLU MLP, or :class:`StridedConvVAE` for images."""
    if image_shape is None:
        return MLPVAE(n_features, n_latent, tuple(hidden_layer_sizes), activation=nn.SiLU)
    return StridedConvVAE(image_shape, n_latent)


class _ResBlock(nn.Module):
    """conv-BN-ReLU, then conv-BN-ReLU-conv-BN with a skip connection."""

    def __init__(self, c_in, c_out):
        super().__init__()
        self.inp = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out),
                                 nn.ReLU())
        self.body = nn.Sequential(
            nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
            nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out))

    def forward(self, x):
        h = self.inp(x)
        return torch.relu(h + self.body(h))


class ResNetVAE(_ImageVAE):
    """The paper's 4-block residual encoder (each block then 2x max-pool) and its mirror."""

    def __init__(self, image_shape, n_latent, channels=32, n_blocks=4):
        super().__init__(image_shape)
        C, H, W = self.image_shape
        widths = [channels * 2 ** min(i, 2) for i in range(n_blocks)]
        enc, c = [], C
        for w in widths:
            enc += [_ResBlock(c, w), nn.MaxPool2d(2, ceil_mode=True)]
            c = w
        self.encoder = nn.Sequential(*enc, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.mu = nn.Linear(c, n_latent)
        self.logvar = nn.Linear(c, n_latent)
        self.start = (c, math.ceil(H / 2 ** n_blocks), math.ceil(W / 2 ** n_blocks))
        dec = []
        for w in widths[::-1]:
            dec += [nn.Upsample(scale_factor=2, mode="nearest"), _ResBlock(c, w)]
            c = w
        self.decoder = nn.Sequential(
            nn.Linear(n_latent, math.prod(self.start)), nn.ReLU(),
            nn.Unflatten(1, self.start), *dec, nn.Conv2d(c, C, 3, padding=1))


class VAEModule(nn.Module):
    """A backbone with ``encode``/``decode`` plus an optional linear classification head on z.

    ``forward(x)`` returns ``(mu, logvar)``, with ``logvar`` clamped to a safe range;
    with a head it returns ``(logits, mu, logvar)``, ``logits = head(mu)``. The first
    output is what :func:`geolearn.models.as_model` sees: the latent mean of a GridVAE,
    the class logits of a VAEClassifier (so every attack takes a fitted VAEClassifier).
    """

    def __init__(self, backbone, n_latent, n_classes=0, logvar_range=(-14.0, 8.0)):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(n_latent, n_classes) if n_classes else None
        self.logvar_range = logvar_range

    def encode(self, x):
        mu, logvar = self.backbone.encode(x)
        return mu, logvar.clamp(*self.logvar_range)

    def decode(self, z):
        return self.backbone.decode(z)

    def forward(self, x):
        mu, logvar = self.encode(x)
        if self.head is None:
            return mu, logvar
        return self.head(mu), mu, logvar


def build_backbone(architecture, n_features, n_latent, image_shape, hidden_layer_sizes, channels):
    """The backbone for an ``architecture`` parameter (a name or a callable)."""
    if callable(architecture):
        return architecture(n_features, n_latent, image_shape)
    if architecture == "mlp":
        return MLPVAE(n_features, n_latent, tuple(hidden_layer_sizes))
    cls = ConvVAE if architecture == "conv" else ResNetVAE
    return cls(image_shape, n_latent, channels)


def build_vae_module(*, architecture, n_features, n_latent, image_shape, hidden_layer_sizes,
                     conv_channels, n_classes=0, **kwargs):
    """A :class:`VAEModule` on the backbone of ``architecture`` (skorch's ``module``).

    The estimators pass it to skorch as a ``functools.partial``; the user's
    ``module__*`` settings arrive as keyword arguments (e.g. ``module__logvar_range``).
    """
    backbone = build_backbone(architecture, n_features, n_latent, image_shape, hidden_layer_sizes,
                              conv_channels)
    return VAEModule(backbone, n_latent, n_classes, **kwargs)


def build_generator_module(*, n_features, n_latent, image_shape, hidden_layer_sizes, **kwargs):
    """:class:`VAEGenerator`'s module: a :class:`VAEModule` on :func:`generator_backbone`."""
    backbone = generator_backbone(n_features, n_latent, image_shape, hidden_layer_sizes)
    return VAEModule(backbone, n_latent, **kwargs)


class ChartModule(nn.Module):
    """The chart autoencoder: ``k`` encoder/decoder charts and a chart predictor.

    Chart ``i`` is a :class:`VAEModule` on :func:`generator_backbone` with a
    ``chart_dim``-dimensional latent; the predictor ``P`` is a SiLU MLP from the
    concatenated latents ``[z_1, ..., z_k]`` (``k * chart_dim`` values) to ``k`` logits.
    ``encode(x)`` returns the concatenated ``(mu, logvar)``; ``decode(z)`` is the
    evaluation rule, the raw output of chart ``argmax P(z)``.
    """

    def __init__(self, n_features, n_charts, chart_dim, image_shape, hidden_layer_sizes, **kwargs):
        super().__init__()
        self.n_charts, self.chart_dim = n_charts, chart_dim
        self.charts = nn.ModuleList(
            VAEModule(generator_backbone(n_features, chart_dim, image_shape, hidden_layer_sizes),
                      chart_dim, **kwargs) for _ in range(n_charts))
        sizes = (n_charts * chart_dim, *hidden_layer_sizes)
        self.predictor = nn.Sequential(_mlp(sizes, nn.SiLU), nn.Linear(sizes[-1], n_charts))

    def encode(self, x):
        mus, logvars = zip(*(chart.encode(x) for chart in self.charts))
        return torch.cat(mus, dim=1), torch.cat(logvars, dim=1)

    def forward(self, x):
        return self.encode(x)

    def decode_all(self, z):
        """Raw outputs of every chart, ``(B, k, D)``; ``z`` holds the concatenated latents."""
        zs = z.reshape(len(z), self.n_charts, self.chart_dim)
        return torch.stack([chart.decode(zs[:, i]) for i, chart in enumerate(self.charts)], 1)

    def chart_logits(self, z):
        """``P([z_1, ..., z_k])``, ``(B, k)``."""
        return self.predictor(z)

    def decode(self, z):
        chart = self.chart_logits(z).argmax(dim=1)
        return self.decode_all(z)[torch.arange(len(z), device=z.device), chart]
