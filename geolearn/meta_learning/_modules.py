"""The network of manifold meta-learning: a deterministic autoencoder on flat rows."""

import math

from torch import nn

from .._utils.autoencoder import mlp


class Autoencoder(nn.Module):
    """A deterministic autoencoder: ``encode(x) -> z``, ``decode(z) -> logits``, flat rows.

    The network of manifold meta-learning (MRML, Sec. 4.2): an encoder of fully
    connected ReLU layers ``hidden_layer_sizes`` then ``n_latent``, and the mirrored decoder to
    logits (the sigmoid is applied by the loss and by the estimator). With
    ``conv_channels`` the encoder starts with one 4x4 stride-2 conv (padding 1, ReLU) per
    width, and the decoder ends with the mirrored transposed convs; H and W must be
    divisible by ``2 ** len(conv_channels)``. No normalisation layers: the meta-step
    evaluates the network at virtual parameters, which would update running statistics.
    """

    def __init__(self, n_features, n_latent, hidden_layer_sizes=(256, 128), image_shape=None,
                 conv_channels=None):
        super().__init__()
        if conv_channels:
            C, H, W = image_shape
            s = 2 ** len(conv_channels)
            if H % s or W % s:
                raise ValueError(f"architecture='conv' needs image sides divisible by {s}; got "
                                 f"image_shape={tuple(image_shape)}.")
            widths = (C, *conv_channels)
            flat = (widths[-1], H // s, W // s)
            convs = [m for a, b in zip(widths[:-1], widths[1:])
                     for m in (nn.Conv2d(a, b, 4, stride=2, padding=1), nn.ReLU())]
            deconvs = [m for a, b in zip(widths[:0:-1], widths[-2::-1])
                       for m in (nn.ConvTranspose2d(a, b, 4, stride=2, padding=1), nn.ReLU())]
            self.encoder = nn.Sequential(nn.Unflatten(1, tuple(image_shape)), *convs, nn.Flatten())
            fc_in, tail = math.prod(flat), (nn.Unflatten(1, flat), *deconvs[:-1], nn.Flatten())
        else:
            self.encoder, fc_in, tail = nn.Sequential(), n_features, ()
        sizes = (fc_in, *hidden_layer_sizes, n_latent)
        self.encoder.extend(mlp(sizes)[:-1])  # no ReLU on the code
        decoder = mlp(sizes[::-1])
        self.decoder = nn.Sequential(*(decoder if tail else decoder[:-1]), *tail)

    def encode(self, x):
        return self.encoder(x)

    def decode(self, z):
        return self.decoder(z)

    def forward(self, x):
        return self.decoder(self.encoder(x))
