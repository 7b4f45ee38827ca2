"""Torch terms of the (Grid)VAE objective, per sample (and per latent dimension where it splits).

Shapes: ``mu``, ``logvar``, ``z`` are ``(B, d)``; the grid is a :class:`GridPrior`.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from ._grid import padded_grid

#: lv = log sigma^2 is clamped here before exp (sigma0 = 1/16 needs -5.5; overflow above 8).
LOGVAR_MIN, LOGVAR_MAX = -14.0, 8.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class GridPrior:
    """Equal-weight Gaussian mixture on a Cartesian grid, factorised per dimension (Eq. 25).

    Holds the grid as numpy and builds its tensors lazily per device, so the
    object pickles without device state.
    """

    def __init__(self, grid, std):
        self.grid = grid
        self.std = float(std)
        self._tensors = {}

    def __getstate__(self):
        return {"grid": self.grid, "std": self.std, "_tensors": {}}

    def tensors(self, device, dtype=torch.float32):
        """``(centres (d, L) padded with 0, pad mask (d, L) of 0/-inf, log L_m (d,))``."""
        key = (str(device), dtype)
        if key not in self._tensors:
            centres = padded_grid(self.grid, np.nan)
            mask = np.where(np.isnan(centres), -np.inf, 0.0)
            self._tensors[key] = tuple(
                torch.as_tensor(a, dtype=dtype, device=device)
                for a in (np.nan_to_num(centres), mask, np.log([len(g) for g in self.grid]))
            )
        return self._tensors[key]

    def log_prob_dims(self, z):
        """``log p_m(z_m)`` per dimension, ``(B, d)``: O(d L_max), never O(K)."""
        centres, mask, log_L = self.tensors(z.device, z.dtype)
        sq = -0.5 * ((z[..., None] - centres) / self.std) ** 2 + mask
        return (torch.logsumexp(sq, dim=-1) - log_L - _HALF_LOG_2PI - math.log(self.std))

    def log_prob(self, z):
        """``log p(z)`` of the full grid mixture, ``(B,)``."""
        return self.log_prob_dims(z).sum(-1)

    def nearest(self, mu):
        """``R(mu)``: the nearest grid value per dimension (ties to the lower), no gradient."""
        centres, mask, _ = self.tensors(mu.device, mu.dtype)
        dist = (mu.detach()[..., None] - centres).abs() - mask  # padding -> +inf distance
        codes = dist.argmin(-1, keepdim=True)
        return torch.gather(centres.expand(*mu.shape, -1), -1, codes).squeeze(-1)

    def values(self, codes, dims):
        """Grid values ``g_{m, codes_m}`` for integer ``codes`` ``(B, len(dims))``."""
        centres = self.tensors(codes.device)[0][dims]
        return torch.gather(centres.expand(*codes.shape, -1), -1, codes[..., None]).squeeze(-1)


def neg_entropy_dims(logvar):
    """``E_q[log q(z|x)]`` per dimension in closed form: ``-(1/2)(1 + log 2 pi + lv)``."""
    return -0.5 * (1.0 + logvar) - _HALF_LOG_2PI


def kl_sample_dims(logvar, z, prior):
    """Estimator (a): ``E_q[log q] - log p(z)`` per dimension, ``z`` the reparameterised draw."""
    return neg_entropy_dims(logvar) - prior.log_prob_dims(z)


def kl_gaussian_dims(mu, logvar, target, std):
    """Eq. 28: ``KL(N(mu, e^lv) || N(target, std^2))`` per dimension, in closed form."""
    var0 = std ** 2
    return 0.5 * (math.log(var0) - logvar - 1.0 + (logvar.exp() + (mu - target) ** 2) / var0)


def kl_normal(mu, logvar):
    """``KL(q(z|x) || N(0, I))`` in closed form, ``(B,)``."""
    return 0.5 * (mu ** 2 + logvar.exp() - 1.0 - logvar).sum(-1)


def kl_batch(mu, logvar, z, prior_log_prob, max_elements=2**24, sample_weight=None):
    """Estimator (b): ``log q_hat(z_i) - log p(z_i)`` with the minibatch aggregate posterior.

    ``q_hat(z_i) = (1/B) sum_j q(z_i | x_j)``, or ``sum_j w_j q(z_i | x_j) / sum_j w_j``
    with ``sample_weight`` (so that integer weights equal repeated rows). Rows are
    processed in chunks so that at most ``max_elements`` pairwise terms live at once
    (never the full (B, B, d) tensor).

    Parameters
    ----------
    mu, logvar, z : tensors (B, d)
        The block of latent dimensions the estimator applies to.
    prior_log_prob : tensor (B,)
        ``log p(z_i)`` on the same block.
    sample_weight : tensor (B,), optional
        Positive weights of the rows.
    """
    B, d = mu.shape
    inv_var = torch.exp(-logvar)                                   # (B, d)
    const = (-0.5 * logvar - _HALF_LOG_2PI).sum(-1)                # (B,)
    if sample_weight is None:
        log_norm = math.log(B)
    else:
        log_w = torch.log(sample_weight.to(mu))
        const = const + log_w
        log_norm = torch.logsumexp(log_w, dim=0)
    chunk = max(1, max_elements // max(1, B * d))
    out = []
    for start in range(0, B, chunk):
        zi = z[start:start + chunk, None, :]                       # (c, 1, d)
        log_q = -0.5 * ((zi - mu[None]) ** 2 * inv_var[None]).sum(-1) + const[None]  # (c, B)
        out.append(torch.logsumexp(log_q, dim=1))
    return torch.cat(out) - log_norm - prior_log_prob


def reconstruction_nll(decoded, x, likelihood, sigma, output_activation):
    """``-log p(x|z)`` per sample, ``(B,)``, from the raw decoder output."""
    if likelihood == "bernoulli":
        return F.binary_cross_entropy_with_logits(decoded, x, reduction="none").sum(-1)
    mean = torch.sigmoid(decoded) if output_activation == "sigmoid" else decoded
    var = sigma ** 2
    D = x.shape[-1]
    return ((x - mean) ** 2).sum(-1) / (2 * var) + 0.5 * D * math.log(2 * math.pi * var)


def decoded_mean(decoded, likelihood, output_activation):
    """The mean ``x_hat`` of ``p(x|z)`` from the raw decoder output."""
    if likelihood == "bernoulli" or output_activation == "sigmoid":
        return torch.sigmoid(decoded)
    return decoded
