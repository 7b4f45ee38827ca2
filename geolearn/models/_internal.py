"""The adapter layer's plumbing that other geolearn subpackages share: not part of the API.

The one private module that other subpackages may import (``tests/test_architecture.py``
allows exactly this one; see ``docs/contributing.md``). What a user calls is in
:mod:`geolearn.models`; what the families need besides (the pieces of the training route,
the response reader, the torch counterparts of scikit-learn layers) is here, so that it is
shared without becoming public. Names may change between releases without notice.
"""

from .._utils import TensorDataset, collate_batch
from ._adapter import LayerNotReachedError, saved_bytes
from ._classifier import FLOAT32_WEIGHTS_REASON, WeightedLossNetMixin
from ._fitting import fit_router, is_prefit, route_fit_params, tabular_input
from ._forward_ad import locked_jacfwd, locked_jvp
from ._response import RESPONSES, respond
from ._sklearn import Affine, BinaryProba
from ._tail import split_torch_tail
from ._training import (
    FunctionalCriterion,
    LeanLoopMixin,
    RaiseOnNonFiniteLoss,
    floats_in_history,
    softmax_rows,
    unwrap_module,
    warn_if_interrupted,
    weighted_mean,
)

__all__ = [
    "FLOAT32_WEIGHTS_REASON",
    "RESPONSES",
    "Affine",
    "BinaryProba",
    "FunctionalCriterion",
    "LayerNotReachedError",
    "LeanLoopMixin",
    "RaiseOnNonFiniteLoss",
    "TensorDataset",
    "WeightedLossNetMixin",
    "collate_batch",
    "fit_router",
    "floats_in_history",
    "is_prefit",
    "locked_jacfwd",
    "locked_jvp",
    "respond",
    "route_fit_params",
    "saved_bytes",
    "softmax_rows",
    "split_torch_tail",
    "tabular_input",
    "unwrap_module",
    "warn_if_interrupted",
    "weighted_mean",
]
