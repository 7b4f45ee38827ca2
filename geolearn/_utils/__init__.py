"""Internal helpers shared by every family: input validation and torch plumbing."""

from .torch import resolve_device, to_numpy, to_tensor, iter_batches, torch_seed
from .validation import check_images, check_image_shape, check_n_samples

__all__ = [
    "check_images",
    "check_image_shape",
    "check_n_samples",
    "iter_batches",
    "resolve_device",
    "to_numpy",
    "to_tensor",
    "torch_seed",
]
