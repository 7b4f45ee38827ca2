"""What ``f`` is: the model response probed by the stability measures (spec rules 1-6)."""

import copy
import warnings

import numpy as np
import torch
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from torch import nn

from .._utils import to_numpy
from ..models import as_model
from ._exceptions import StabilityWarning

RESPONSES = ("auto", "decision_function", "predict_proba", "clr_proba", "predict", "module")
_PROBA_FLOOR = 1e-12


def _is_torch_like(estimator):
    from skorch import NeuralNet

    return isinstance(estimator, (nn.Module, NeuralNet))


def _split_torch_tail(estimator):
    """``(preprocessing, net)`` for a Pipeline ending in a torch module or skorch net."""
    if isinstance(estimator, Pipeline) and _is_torch_like(estimator.steps[-1][1]):
        return estimator[:-1], estimator.steps[-1][1]
    return None, estimator


def resolve_response(estimator, response):
    """Resolve ``response="auto"`` and check that the estimator offers the response asked for."""
    if response not in RESPONSES:
        raise ValueError(f"response must be one of {list(RESPONSES)}; got {response!r}.")
    name = type(estimator).__name__
    _, final = _split_torch_tail(estimator)
    if response in ("auto", "module") and _is_torch_like(final):
        return "module"
    if response == "module":
        raise ValueError(
            "response='module' needs a torch.nn.Module, a skorch net or a Pipeline ending in "
            f"one; got {name}."
        )
    if isinstance(final, nn.Module):
        raise ValueError(
            f"response={response!r} needs a scikit-learn estimator; a torch.nn.Module is probed "
            "through its forward output (response='auto')."
        )
    if response == "auto":
        if hasattr(estimator, "decision_function"):
            return "decision_function"
        if hasattr(estimator, "predict_proba"):
            return "clr_proba"
        response = "predict"
    method = "predict_proba" if response == "clr_proba" else response
    if not hasattr(estimator, method):
        raise ValueError(f"response={response!r} but {name} has no {method} method.")
    if method == "predict" and is_classifier(estimator):
        raise ValueError(
            f"{name} offers only class labels (predict), which are piecewise constant: the "
            "stabilities need a continuous output. Use a classifier with decision_function or "
            "predict_proba."
        )
    return response


def _with_batch_statistics(module):
    """A copy of ``module`` whose batch norms use batch statistics even in eval mode."""
    norms = (nn.modules.batchnorm._BatchNorm,)
    if not any(isinstance(m, norms) for m in module.modules()):
        warnings.warn("bn_mode='batch' has no effect: the model has no BatchNorm layer.",
                      StabilityWarning, stacklevel=4)
        return module
    module = copy.deepcopy(module)
    for m in module.modules():
        if isinstance(m, norms):
            m.track_running_stats = False
            m.running_mean = m.running_var = m.num_batches_tracked = None
    return module


class Probe:
    """``f`` as a function of image batches: ``{layer: (B, K) float64 array}``.

    Parameters
    ----------
    estimator : fitted model
    response : str
        A resolved response (see :func:`resolve_response`).
    layout : tuple of int
        Per-sample shape the model takes (that of the user's ``X``).
    layers : sequence of str
        Extra representations to read, besides the output.
    bn_mode : {"eval", "batch"}
    device : str or None
        Only checked against a torch model's device (never moved).
    """

    def __init__(self, estimator, response, layout, *, layers=(), bn_mode="eval", device=None):
        self.response = response
        self.layout = tuple(layout)
        self.layers = list(layers)
        self._pre, final = _split_torch_tail(estimator)
        self._estimator = estimator
        if response == "module":
            adapter = as_model(final, device=device)
            if bn_mode == "batch":
                adapter = as_model(_with_batch_statistics(adapter.module))
        else:
            adapter = as_model(estimator, dtype=torch.float64) if self.layers else None
        self._adapter = adapter
        valid = adapter.layer_names if adapter is not None else []
        unknown = [name for name in self.layers if name not in valid]
        if unknown:
            raise ValueError(f"layers {unknown} do not exist in {type(final).__name__}; valid "
                             f"names: {valid}.")

    @property
    def device(self):
        """Where inputs should live: the module's device, or the CPU for numpy models."""
        if self.response == "module" and self._pre is None:
            return self._adapter.device
        return torch.device("cpu")

    def __call__(self, X):
        X = X.reshape(len(X), *self.layout)
        if self.response == "module":
            if self._pre is not None:
                X = self._pre.transform(to_numpy(X))
            out = {"output": self._adapter.forward(X, batch_size=None)}
        else:
            X = to_numpy(X)
            out = {"output": self._respond(X)}
        for name in self.layers:
            out[name] = self._adapter.features(X, layer=name, batch_size=None)
        return {k: np.asarray(v, dtype=np.float64).reshape(len(X), -1) for k, v in out.items()}

    def _respond(self, X):
        est = self._estimator
        if self.response == "decision_function":
            return np.asarray(est.decision_function(X), dtype=np.float64)
        if self.response == "predict":
            return np.asarray(est.predict(X), dtype=np.float64)
        proba = np.asarray(est.predict_proba(X), dtype=np.float64)
        if self.response == "predict_proba":
            return proba
        # centred log-probabilities: the logits of a softmax model, up to their mean
        logp = np.log(np.clip(proba, _PROBA_FLOOR, 1.0))
        return logp - logp.mean(axis=1, keepdims=True)
