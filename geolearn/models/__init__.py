"""The adapter layer: any model becomes a torch callable with named layers.

:func:`as_model` is the one entry point every method uses to probe a model
(outputs, hidden features, Jacobians), so no method special-cases model types.
"""

from ._adapter import GradientsUnavailableError, ModelAdapter, as_model
from ._sklearn import affine_to_torch, mlp_to_torch

__all__ = ["GradientsUnavailableError", "ModelAdapter", "affine_to_torch", "as_model",
           "mlp_to_torch"]
