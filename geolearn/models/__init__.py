"""The adapter layer: the one door from every geolearn method to a model.

- :func:`as_model` turns any supported model into a :class:`ModelAdapter`
  (outputs, hidden features, input gradients, Jacobians, :func:`frozen`
  evaluation); it is the only place that branches on the type of a model. Fitted
  scikit-learn MLPs, linear models, scalers and PCAs (and pipelines of them) become exact
  torch modules (:func:`mlp_to_torch`, :func:`linear_to_torch`, :func:`affine_to_torch`).
- :func:`resolve_response` decides which output of a black box is seen.
- :func:`fit_or_use` is the one fitting policy for models that an estimator
  wraps: prefit models are used as they are, unfitted ones are fitted.
- :class:`SkorchTrainingMixin` is the one training route of the torch-trained
  estimators (skorch callbacks, ``module__``/``optimizer__`` settings,
  ``warm_start``, ``net_class``); :class:`SkorchClassifierMixin` adds what its
  classifiers share (input validation, ``classes_``, ``predict``).
- :func:`forward_ad_lock` serialises torch's process-global forward-mode AD
  between geolearn and a user's own threads.
"""

from ._adapter import GradientsUnavailableError, ModelAdapter, as_model
from ._classifier import SkorchClassifierMixin
from ._fitting import fit_or_use
from ._forward_ad import forward_ad_lock
from ._freezing import frozen
from ._response import resolve_response
from ._sklearn import affine_to_torch, linear_to_torch, mlp_to_torch
from ._training import ObjectiveNet, SkorchTrainingMixin, TrainingInterruptedWarning

__all__ = [
    "GradientsUnavailableError",
    "ModelAdapter",
    "ObjectiveNet",
    "SkorchClassifierMixin",
    "SkorchTrainingMixin",
    "TrainingInterruptedWarning",
    "affine_to_torch",
    "as_model",
    "fit_or_use",
    "forward_ad_lock",
    "frozen",
    "linear_to_torch",
    "mlp_to_torch",
    "resolve_response",
]
