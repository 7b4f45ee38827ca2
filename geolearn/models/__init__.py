"""The adapter layer: the one door from every geolearn method to a model.

- :func:`as_model` turns any supported model into a :class:`ModelAdapter`
  (outputs, hidden features, input gradients, Jacobians, :func:`frozen`
  evaluation); it is the only place that branches on the type of a model.
- :func:`resolve_response` decides which output of a black box is seen.
- :func:`split_torch_tail` tells a model whose output is a torch forward pass
  (a module, a skorch net, or a pipeline ending in one) from the rest.
- :func:`fit_or_use` is the one fitting policy for models that an estimator
  wraps: prefit models are used as they are, unfitted ones are fitted.
- :class:`SkorchTrainingMixin` is the one training route of the torch-trained
  estimators (skorch callbacks, ``module__``/``optimizer__`` settings,
  ``warm_start``, ``net_class``); :class:`SkorchClassifierMixin` adds what its
  classifiers share (input validation, ``classes_``, ``predict``).
"""

from ._adapter import (
    GradientsUnavailableError,
    ModelAdapter,
    as_model,
    forward_ad_lock,
    frozen,
    locked_jacfwd,
    locked_jvp,
)
from ._classifier import SkorchClassifierMixin, mlp_module
from ._fitting import call_flat_if_refused, fit_or_use, is_prefit
from ._response import RESPONSES, resolve_response, respond
from ._sklearn import Affine, BinaryProba, affine_to_torch, mlp_to_torch
from ._tail import split_torch_tail
from ._training import (
    NET_PARAM_PREFIXES,
    FunctionalCriterion,
    ObjectiveNet,
    QuietLog,
    RaiseOnNonFiniteLoss,
    SkorchTrainingMixin,
    TensorDataset,
    TrainingInterruptedWarning,
    collate_batch,
    floats_in_history,
    softmax_rows,
    unwrap_module,
    warn_if_interrupted,
)

__all__ = [
    "Affine",
    "NET_PARAM_PREFIXES",
    "RESPONSES",
    "BinaryProba",
    "FunctionalCriterion",
    "GradientsUnavailableError",
    "ModelAdapter",
    "ObjectiveNet",
    "QuietLog",
    "RaiseOnNonFiniteLoss",
    "SkorchClassifierMixin",
    "SkorchTrainingMixin",
    "TensorDataset",
    "TrainingInterruptedWarning",
    "affine_to_torch",
    "as_model",
    "call_flat_if_refused",
    "collate_batch",
    "fit_or_use",
    "floats_in_history",
    "forward_ad_lock",
    "frozen",
    "is_prefit",
    "locked_jacfwd",
    "locked_jvp",
    "mlp_module",
    "mlp_to_torch",
    "resolve_response",
    "respond",
    "softmax_rows",
    "split_torch_tail",
    "unwrap_module",
    "warn_if_interrupted",
]
