"""Internal helpers shared by every family: input validation and torch plumbing."""

from .fitting import discard_fitted, fitted_on_success
from .memory import check_memory
from .parallel import resolve_n_jobs, thread_map
from .progress import progress_bar
from .random import row_generators, row_seeds
from .tensor_data import TensorBatches, TensorDataset, collate_batch
from .torch import (
    blas_threads,
    busy_blas_threads,
    iter_batches,
    on_module_threads,
    resolve_device,
    small_ops_threads,
    to_numpy,
    to_tensor,
    torch_seed,
    torch_threads,
)
from .validation import (
    check_choice,
    check_diagram,
    check_diagrams,
    check_dtype_range,
    check_hidden_sizes,
    check_image_shape,
    check_images,
    check_labels,
    check_mask,
    check_model_inputs,
    check_numeric_array,
    check_scalar_param,
    check_squares_finite,
    check_tensor,
    preserved_dtype,
)
from .warn import warn_user

__all__ = [
    "TensorBatches",
    "TensorDataset",
    "blas_threads",
    "busy_blas_threads",
    "check_choice",
    "check_diagram",
    "check_diagrams",
    "check_dtype_range",
    "check_hidden_sizes",
    "check_image_shape",
    "check_images",
    "check_labels",
    "check_mask",
    "check_memory",
    "check_model_inputs",
    "check_numeric_array",
    "check_scalar_param",
    "check_squares_finite",
    "check_tensor",
    "collate_batch",
    "discard_fitted",
    "fitted_on_success",
    "iter_batches",
    "on_module_threads",
    "preserved_dtype",
    "progress_bar",
    "resolve_device",
    "resolve_n_jobs",
    "row_generators",
    "row_seeds",
    "small_ops_threads",
    "thread_map",
    "to_numpy",
    "to_tensor",
    "torch_seed",
    "torch_threads",
    "warn_user",
]
