"""Internal helpers shared by every family: input validation and torch plumbing."""

from .torch import iter_batches, resolve_device, to_numpy, to_tensor, torch_seed, torch_threads
from .validation import (
    check_choice,
    check_diagram,
    check_diagrams,
    check_hidden_sizes,
    check_image_shape,
    check_images,
    check_labels,
    check_mask,
    check_model_inputs,
    check_n_samples,
    check_positive,
    check_positive_integer,
    check_scalar_param,
    discard_fitted,
)

__all__ = [
    "check_choice",
    "check_diagram",
    "check_diagrams",
    "check_hidden_sizes",
    "check_image_shape",
    "check_images",
    "check_labels",
    "check_mask",
    "check_model_inputs",
    "check_n_samples",
    "check_positive",
    "check_positive_integer",
    "check_scalar_param",
    "discard_fitted",
    "iter_batches",
    "resolve_device",
    "to_numpy",
    "to_tensor",
    "torch_seed",
    "torch_threads",
]
