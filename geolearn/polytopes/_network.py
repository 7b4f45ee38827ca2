"""Canonical form of a ReLU network: float64 weight matrices, layer by layer."""

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.exceptions import NotFittedError
from torch import nn

from ..models import as_model, fit_or_use
from ..models._internal import Affine, BinaryProba, is_prefit
from ._conv import CONV_LAYERS, ConvReLUNet, conv_relu_network

_SUPPORTED = ("Linear", "ReLU", "Identity", "Flatten", "Dropout", "BatchNorm1d", "affine scalers",
              "a trailing Softmax/LogSoftmax/Sigmoid")
_OUTPUT_ACTIVATIONS = {nn.Softmax: "softmax", nn.LogSoftmax: "log_softmax",
                       nn.Sigmoid: "sigmoid"}


@dataclass(frozen=True, eq=False)
class ReLUNet:
    """A ReLU MLP in canonical form: float64 weights and biases, layer by layer.

    The network is ``G(x) = W_{L+1} ReLU(... ReLU(W_1 x + b_1) ...) + b_{L+1}``.
    Built by :func:`as_relu_network`; all arrays are float64 copies.

    Attributes
    ----------
    weights : tuple of ndarray
        ``W_i`` of shape ``(n_out, n_in)``, hidden layers first, the output map last.
    biases : tuple of ndarray
        ``b_i`` of shape ``(n_out,)``.
    layer_sizes : tuple of int
        ``(m, h_1, ..., h_L, o)``.
    n_inputs, n_outputs : int
    classes : ndarray or None
        Class labels of the source classifier, if it has them.
    output_activation : str or None
        The stripped output activation (``'softmax'``, ``'log_softmax'``,
        ``'sigmoid'``) or None; all maps refer to the logits.

    Examples
    --------
    >>> import torch
    >>> from geolearn.polytopes import as_relu_network
    >>> net = as_relu_network(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(),
    ...                                           torch.nn.Linear(3, 1)))
    >>> net.layer_sizes, net.hidden_sizes, net.weights[0].dtype.name
    ((2, 3, 1), (3,), 'float64')
    """

    weights: tuple
    biases: tuple
    layer_sizes: tuple
    n_inputs: int
    n_outputs: int
    classes: object = None
    output_activation: object = None

    @property
    def hidden_sizes(self):
        """``(h_1, ..., h_L)``."""
        return self.layer_sizes[1:-1]

    @property
    def n_hidden_units(self):
        """``h = sum_i h_i``."""
        return int(sum(self.hidden_sizes))

    def torch_params(self, device):
        """The weights as float64 tensors on ``device`` (a list of ``(W, b)`` pairs)."""
        return [(torch.as_tensor(W, device=device), torch.as_tensor(b, device=device))
                for W, b in zip(self.weights, self.biases)]


def _flatten(module):
    if isinstance(module, nn.Sequential):
        return [leaf for child in module for leaf in _flatten(child)]
    return [module]


def _unsupported(layer):
    return ValueError(
        f"network contains a {type(layer).__name__} layer; ReLUPolytopes needs a ReLU MLP made of "
        f"{', '.join(_SUPPORTED)} (an nn.Sequential, a skorch net around one, or an MLPClassifier/"
        "MLPRegressor with activation='relu'), or a conv ReLU net (Conv2d, ReLU, MaxPool2d, "
        "AvgPool2d, Flatten, Linear). For other torch modules use LocalLinearMap or "
        "LocalLinearClustering, which work through autograd."
    )


def _compose(acc, W, b):
    """``(W, b)`` applied after the affine map ``acc`` (None: the identity)."""
    if acc is None:
        return W, b
    return W @ acc[0], W @ acc[1] + b


def _batchnorm_affine(bn):
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("network has a BatchNorm1d without running statistics "
                         "(track_running_stats=False); it cannot be folded into an affine map.")
    scale = 1.0 / np.sqrt(bn.running_var.detach().cpu().double().numpy() + bn.eps)
    shift = -bn.running_mean.detach().cpu().double().numpy() * scale
    if bn.affine:
        gamma = bn.weight.detach().cpu().double().numpy()
        scale, shift = gamma * scale, gamma * shift + bn.bias.detach().cpu().double().numpy()
    return np.diag(scale), shift


def _classes_of(network):
    """Class labels of a classifier network (None for regressors and torch modules)."""
    try:
        classes = getattr(network, "classes_", None)
    except AttributeError:  # skorch raises when it inferred no classes
        classes = None
    return None if classes is None else np.asarray(classes)


def _strip_output_activation(layers):
    """``layers`` without a trailing Softmax/LogSoftmax/Sigmoid (and ``BinaryProba``), and the
    name of the activation stripped (None if there was none)."""
    layers, output_activation = list(layers), None
    while layers and isinstance(layers[-1], (BinaryProba, *_OUTPUT_ACTIVATIONS)):
        last = layers.pop()
        if not isinstance(last, BinaryProba):
            output_activation = output_activation or _OUTPUT_ACTIVATIONS[type(last)]
    return layers, output_activation


def _fold(layers):
    """``(weights, biases, n_inputs)``: the affine layers between ReLUs multiplied out."""
    weights, biases, acc, n_inputs, width = [], [], None, None, None
    for layer in layers:
        if isinstance(layer, nn.Linear):
            W = layer.weight.detach().cpu().double().numpy()
            b = (np.zeros(W.shape[0]) if layer.bias is None
                 else layer.bias.detach().cpu().double().numpy())
            n_inputs = W.shape[1] if n_inputs is None else n_inputs
            acc, width = _compose(acc, W, b), W.shape[0]
        elif isinstance(layer, nn.BatchNorm1d):
            n_inputs = layer.num_features if n_inputs is None else n_inputs
            acc, width = _compose(acc, *_batchnorm_affine(layer)), layer.num_features
        elif isinstance(layer, Affine):  # a pipeline's scaler, folded into the next Linear
            scale = layer.weight.detach().cpu().double().numpy()
            n_inputs = len(scale) if n_inputs is None else n_inputs
            acc = _compose(acc, np.diag(scale), layer.bias.detach().cpu().double().numpy())
            width = len(scale)
        elif isinstance(layer, nn.ReLU):
            if width is None:
                raise ValueError("network starts with a ReLU before any Linear layer; the input "
                                 "dimension is unknown. Start the Sequential with an nn.Linear.")
            if acc is None:  # ReLU after ReLU: an identity layer
                acc = (np.eye(width), np.zeros(width))
            weights.append(acc[0])
            biases.append(acc[1])
            acc = None
        elif not isinstance(layer, (nn.Identity, nn.Flatten, nn.Dropout)):
            raise _unsupported(layer)
    if n_inputs is None:
        raise ValueError("network has no Linear layer; ReLUPolytopes needs a ReLU MLP.")
    if acc is None:  # a final ReLU: identity output map
        acc = (np.eye(width), np.zeros(width))
    weights.append(acc[0])
    biases.append(acc[1])
    return weights, biases, n_inputs


def as_relu_network(network, image_shape=None):
    """Canonicalise a trained ReLU MLP into float64 weight matrices (a conv net into float64
    layers).

    Parameters
    ----------
    network : torch.nn.Sequential, skorch.NeuralNet, MLPClassifier or MLPRegressor
        A fitted ReLU MLP (any model :func:`geolearn.models.as_model` turns into
        such a module, ``FrozenEstimator`` included), possibly a :class:`ReLUNet`
        already. Supported torch layers: ``Linear`` (``bias=False`` means a zero
        bias), ``ReLU``, ``Identity``, ``Flatten``, ``Dropout`` (eval behaviour),
        ``BatchNorm1d`` (eval statistics, folded into the affine maps) and nested
        ``Sequential``. A ``Pipeline`` of affine scalers (``StandardScaler``,
        ``MinMaxScaler``, ``MaxAbsScaler``) and PCAs before the MLP is folded too: the
        regions are then those of the raw input. Consecutive affine layers without a ReLU between them
        are multiplied out. A trailing ``Softmax``, ``LogSoftmax`` or
        ``Sigmoid`` is stripped: every map refers to the logits.
        A network with ``Conv2d``, ``MaxPool2d``, ``AvgPool2d`` or a leading
        ``Unflatten`` is a conv ReLU net: ``Conv2d``, ``ReLU``, ``MaxPool2d``,
        ``AvgPool2d``, ``Flatten``, ``Linear`` (and ``Identity``, ``Dropout``),
        kept as float64 layers (:class:`ConvReLUNet`).
    image_shape : tuple of int, default=None
        ``(C, H, W)`` layout of the flat input rows of a conv net that does not
        start with ``Unflatten``. Ignored for MLPs.

    Returns
    -------
    net : ReLUNet or ConvReLUNet

    Raises
    ------
    ValueError
        For ``None``, non-ReLU activations, layers outside the supported set
        (the message names the layer type), or a conv net without ``image_shape``.
    sklearn.exceptions.NotFittedError
        For an unfitted scikit-learn or skorch network.

    Examples
    --------
    >>> import torch
    >>> from geolearn.polytopes import as_relu_network
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(),
    ...                           torch.nn.Linear(4, 2), torch.nn.Softmax(dim=1))
    >>> relu_net = as_relu_network(net)
    >>> relu_net.layer_sizes, relu_net.output_activation
    ((3, 4, 2), 'softmax')
    """
    if isinstance(network, (ReLUNet, ConvReLUNet)):
        return network
    if network is None:
        raise ValueError("network=None: pass a trained ReLU MLP (torch nn.Sequential, skorch net, "
                         "or MLPClassifier/MLPRegressor with activation='relu').")
    model = as_model(network, dtype=torch.float64)
    if model.kind == "sklearn-mlp" and model.estimator.activation != "relu":
        raise ValueError(f"network is an {model.name} with activation="
                         f"{model.estimator.activation!r}; ReLUPolytopes needs activation='relu'.")
    if model.module is None:
        raise ValueError(f"network is a {model.name}, seen only as a black box; "
                         "ReLUPolytopes needs a ReLU MLP: " + ", ".join(_SUPPORTED) + ".")
    layers, output_activation = _strip_output_activation(_flatten(model.module))
    if any(isinstance(layer, CONV_LAYERS) for layer in layers):
        return conv_relu_network(layers, image_shape, classes=_classes_of(model.estimator),
                                 output_activation=output_activation)
    weights, biases, n_inputs = _fold(layers)
    sizes = (n_inputs, *(W.shape[0] for W in weights))
    return ReLUNet(weights=tuple(np.ascontiguousarray(W) for W in weights),
                   biases=tuple(np.ascontiguousarray(b) for b in biases), layer_sizes=sizes,
                   n_inputs=n_inputs, n_outputs=sizes[-1], classes=_classes_of(model.estimator),
                   output_activation=output_activation)


def needs_fit(network):
    """Whether ``fit`` fits ``network``: an unfitted scikit-learn or skorch estimator.

    The fitting policy of :func:`geolearn.models.fit_or_use`: torch modules,
    fitted estimators, ``FrozenEstimator`` and :class:`ReLUNet` are prefit.
    """
    return hasattr(network, "fit") and not is_prefit(network)


def fitted_network(network, X, y, name="network", **fit_params):
    """The network to analyse: a prefit one as given; an unfitted scikit-learn or skorch
    estimator fitted on a clone with ``(X, y)`` as the user passed them (its clone inside
    GridSearchCV, say), by :func:`geolearn.models.fit_or_use` with ``fit_params``."""
    if network is None:
        raise ValueError(f"{name}=None: pass a trained network (torch nn.Sequential, skorch net, "
                         "or MLPClassifier/MLPRegressor with activation='relu'), or an unfitted "
                         "scikit-learn/skorch one to be fitted on (X, y).")
    if not needs_fit(network):
        return network
    if y is None:
        raise NotFittedError(f"{name} is an unfitted {type(network).__name__}, so fit requires y "
                             "to be passed, but the target y is None. Pass a fitted network, or y "
                             "to fit it on (X, y).")
    return fit_or_use(network, X, y, **fit_params)
