"""Integrated gradients and the paper's saliency post-processing (Section 4.1)."""

import math

import torch
import torch.nn.functional as F

PADDINGS = ("zeros", "circular", "circular_x")


def gaussian_kernel(sigma=1.0, kernel_size=3, dtype=torch.float64):
    """Normalised 2-D Gaussian ``exp(-(a^2 + b^2) / (2 sigma^2)) / Z`` on a ``k x k`` grid."""
    r = torch.arange(kernel_size, dtype=dtype) - (kernel_size - 1) / 2
    g = torch.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * sigma**2))
    return g / g.sum()


def integrated_gradients_tensor(input_gradient, x, target, baseline, steps):
    """IG of the output ``target[n]`` at ``x`` with the midpoint rule over ``steps`` nodes.

    ``input_gradient(x, targets=target)`` is the gradient of the summed target
    outputs with respect to ``x`` (:meth:`geolearn.models.ModelAdapter.input_gradient`).
    Gradients are accumulated step by step, so memory is that of one batch.
    """
    delta = x - baseline
    total = torch.zeros_like(x)
    for k in range(steps):
        total += input_gradient(baseline + (k + 0.5) / steps * delta, targets=target)
    return delta * total / steps


def postprocess_saliency(A, *, threshold=0.9, sigma=1.0, kernel_size=3, padding="zeros"):
    """Threshold at ``threshold * max`` per map, then smooth with a normalised Gaussian.

    Parameters
    ----------
    A : tensor of shape (n, H, W)
        Non-negative maps (accumulated ``|IG|``).
    padding : {"zeros", "circular", "circular_x"}
        How the smoothing sees past the border; ``"circular_x"`` wraps along x
        only, so smoothing commutes with cyclic x-translations.

    Returns
    -------
    maps : tensor of shape (n, H, W)
    """
    peak = A.amax(dim=(1, 2), keepdim=True)
    A = torch.where(A >= threshold * peak, A, torch.zeros((), dtype=A.dtype, device=A.device))
    kernel = gaussian_kernel(sigma, kernel_size, dtype=A.dtype).to(A.device)
    p = kernel_size // 2
    A = A[:, None]
    if padding == "zeros":
        A = F.pad(A, (p, p, p, p))
    elif padding == "circular":
        A = F.pad(A, (p, p, p, p), mode="circular")
    else:
        A = F.pad(F.pad(A, (p, p, 0, 0), mode="circular"), (0, 0, p, p))
    return F.conv2d(A, kernel[None, None])[:, 0]


def check_saliency_params(threshold, sigma, kernel_size, padding, steps):
    if not (isinstance(threshold, (int, float)) and 0 < threshold <= 1):
        raise ValueError(f"threshold must be in (0, 1]; got {threshold!r}.")
    if not (isinstance(sigma, (int, float)) and sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be a positive number; got {sigma!r}.")
    if not (isinstance(kernel_size, int) and kernel_size >= 1 and kernel_size % 2 == 1):
        raise ValueError(f"kernel_size must be an odd positive integer; got "
                         f"{kernel_size!r}.")
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS} or 'auto'; got {padding!r}.")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer; got {steps!r}.")
