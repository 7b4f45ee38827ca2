"""What ``f`` is: the model response probed by the stability measures (spec rules 1-6).

The model is reached through :func:`geolearn.models.as_model`, once: at
``DiffeoStability.fit``, or once per call of the functions. A torch model (a
module, a skorch net, or a pipeline ending in one, see
:func:`geolearn.models._internal.split_torch_tail`) is probed through its forward pass;
any other estimator through the response that
:func:`geolearn.models.resolve_response` picks, read by
:func:`geolearn.models._internal.respond`. Hidden layers always come from the adapter.
"""

from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from .._utils import resolve_device, small_ops_threads, to_numpy, warn_user
from ..models import as_model
from ..models import resolve_response as resolve_model_response
from ..models._internal import RESPONSES as MODEL_RESPONSES
from ..models._internal import respond, split_torch_tail
from ._exceptions import StabilityWarning

RESPONSES = (*MODEL_RESPONSES, "module")


def resolve_response(model, response):
    """``"module"`` for a torch model, else the response the one resolver picks.

    ``"auto"`` probes a torch module, a skorch net or a pipeline ending in one
    through its forward pass (the logits); any other estimator through
    :func:`geolearn.models.resolve_response` (``decision_function``, else
    ``clr_proba``, else ``predict`` for regressors).
    """
    if not isinstance(response, str) or response not in RESPONSES:
        raise ValueError(f"response must be one of {list(RESPONSES)}; got {response!r}.")
    if response in ("auto", "module") and split_torch_tail(model) is not None:
        return "module"
    if response == "module":
        raise ValueError(
            "response='module' needs a torch.nn.Module, a skorch net or a Pipeline ending in "
            f"one; got {type(model).__name__}.")
    return resolve_model_response(model, response)


def _batch_norms(module):
    return [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]


def _untrained(norm):
    """Whether a batch norm's running statistics are still their initial 0 and 1.

    Then eval mode would not normalise at all (the paper's note on probing at
    initialisation). The statistics are read, not ``num_batches_tracked``, which
    checkpoints without it load as 0.
    """
    mean, var = norm.running_mean, norm.running_var
    return (mean is not None and var is not None
            and not torch.count_nonzero(mean) and bool(torch.all(var == 1)))


@contextmanager
def _batch_statistics(norms):
    """Batch norms that normalise with batch statistics in eval mode; restored after.

    Running statistics set to None make eval-mode batch norm use the batch and
    leave its buffers untouched; they are put back, as they were, on exit.
    """
    saved = [(m, m.track_running_stats, m.running_mean, m.running_var, m.num_batches_tracked)
             for m in norms]
    try:
        for m in norms:
            m.track_running_stats = False
            m.running_mean = m.running_var = m.num_batches_tracked = None
        yield
    finally:
        for m, track, mean, var, count in saved:
            m.track_running_stats = track
            m.running_mean, m.running_var, m.num_batches_tracked = mean, var, count


class Probe:
    """``f`` as a function of image batches: ``{layer: (B, K) float64 array}``.

    Parameters
    ----------
    model : fitted model
    response : str
        A resolved response (see :func:`resolve_response`).
    layers : sequence of str
        Extra representations to read, besides the output.
    bn_mode : {"auto", "eval", "batch"}
        ``"auto"``: batch statistics for the batch norms whose running statistics are
        untouched, running statistics for the others. :attr:`bn_mode_` says which
        protocol resulted (``"batch"`` when any batch norm uses batch statistics).
    device : str, torch.device or None
        Resolved by :func:`geolearn._utils.resolve_device`: where a numpy
        model's inputs are deformed; only checked against a torch model's
        device (never moved).
    """

    def __init__(self, model, response, *, layers=(), bn_mode="auto", device=None):
        self.response = response
        self.layers = list(layers)
        self._device = None if device is None else resolve_device(device)
        self._pre = None
        if response == "module":
            self._pre, net = split_torch_tail(model)
            self.model = as_model(net, device=device)
        else:
            # float64: a converted scikit-learn model matches its estimator to machine precision
            self.model = as_model(model, dtype=torch.float64, response=response)
        self._norms = []
        if bn_mode != "eval" and self.model.differentiable:
            self._norms = _batch_norms(self.model.module)
        if bn_mode == "auto":
            self._norms = [m for m in self._norms if _untrained(m)]
        elif bn_mode == "batch" and not self._norms:
            warn_user("bn_mode='batch' has no effect: the model has no BatchNorm layer.",
                      StabilityWarning)
        self.bn_mode_ = "batch" if self._norms else "eval"
        unknown = [name for name in self.layers if name not in self.model.layer_names]
        if unknown:
            raise ValueError(f"layers {unknown} do not exist in {self.model.name}; valid "
                             f"names: {self.model.layer_names}.")

    @property
    def device(self):
        """Where inputs live: a torch model's device (the CPU after numpy preprocessing),
        else ``device`` (default: the CPU)."""
        if self.response == "module":
            return self.model.device if self._pre is None else torch.device("cpu")
        return torch.device("cpu") if self._device is None else self._device

    def layout(self, shape, image_shape):
        """The shape the model takes samples given as ``shape`` in: flat rows folded to
        ``image_shape`` for a CNN (see :meth:`geolearn.models.ModelAdapter.sample_layout`),
        as given to a scikit-learn step in front of the network."""
        return shape if self._pre is not None else self.model.sample_layout(shape, image_shape)

    def __call__(self, X, layout):
        """``f`` and the probed layers on ``X``, reshaped to the model's per-sample ``layout``."""
        X = X.reshape(len(X), *layout)
        # batch statistics are those of the whole batch given, not of the adapter's chunks
        batch_size = len(X) if self._norms else None
        # probes are small-op forward passes whatever the model's size: one torch thread on
        # the CPU, which holds its speed beside other busy processes where two collapse
        with _batch_statistics(self._norms), small_ops_threads(device=self.device):
            if self.response == "module":
                if self._pre is not None:
                    X = self._pre.transform(to_numpy(X))
                out = {"output": self.model.forward(X, batch_size=batch_size)}
            else:
                X = to_numpy(X)
                out = {"output": respond(self.model.estimator, self.response, X)}
            for name in self.layers:
                out[name] = self.model.features(X, layer=name, batch_size=batch_size)
        return {k: np.asarray(v, dtype=np.float64).reshape(len(X), -1) for k, v in out.items()}
