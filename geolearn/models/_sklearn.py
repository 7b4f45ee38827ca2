"""Exact torch equivalents of fitted scikit-learn models (MLPs and affine scalers)."""

from collections import OrderedDict

import numpy as np
import torch
from torch import nn

_ACTIVATIONS = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "logistic": nn.Sigmoid,
    "identity": nn.Identity,
}


class BinaryProba(nn.Module):
    """Map one logistic output ``p`` to the two columns ``[1 - p, p]`` of ``predict_proba``.

    The last layer of :func:`mlp_to_torch` for a binary ``MLPClassifier``; it
    takes no parameters.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import BinaryProba
    >>> BinaryProba()(torch.tensor([[0.25]])).tolist()
    [[0.75, 0.25]]
    """

    def forward(self, p):
        return torch.cat([1 - p, p], dim=-1)


def _linear(W, b, dtype):
    # skip_init: torch's default initialisation would draw from (and advance) the global RNG
    layer = nn.utils.skip_init(nn.Linear, W.shape[0], W.shape[1], dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(W.T, dtype=dtype))
        layer.bias.copy_(torch.as_tensor(b, dtype=dtype))
    return layer


def mlp_to_torch(mlp, dtype=torch.float32):
    """Convert a fitted ``MLPClassifier`` or ``MLPRegressor`` to an ``nn.Sequential``.

    The module reproduces ``predict_proba`` (classifiers) or ``predict``
    (regressors, always 2-D) of the estimator. Layers are named
    ``linear_0, act_0, ..., linear_L`` (the last is the logits / raw output),
    followed by ``out_activation`` for classifiers.

    Parameters
    ----------
    mlp : MLPClassifier or MLPRegressor
        A fitted estimator.
    dtype : torch.dtype, default=torch.float32
        Use ``torch.float64`` to match scikit-learn to machine precision.

    Returns
    -------
    module : torch.nn.Sequential

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.neural_network import MLPClassifier
    >>> from geolearn.models import mlp_to_torch
    >>> X = np.random.RandomState(0).randn(40, 3); y = (X[:, 0] > 0).astype(int)
    >>> mlp = MLPClassifier(hidden_layer_sizes=(5,), max_iter=50, random_state=0).fit(X, y)
    >>> net = mlp_to_torch(mlp, dtype=torch.float64)
    >>> bool(np.allclose(net(torch.as_tensor(X)).detach().numpy(), mlp.predict_proba(X)))
    True
    """
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(mlp, (MLPClassifier, MLPRegressor)):
        raise TypeError(f"mlp must be an MLPClassifier or MLPRegressor; got {type(mlp).__name__}.")
    check_is_fitted(mlp)
    layers = OrderedDict()
    n = len(mlp.coefs_)
    for i, (W, b) in enumerate(zip(mlp.coefs_, mlp.intercepts_)):
        layers[f"linear_{i}"] = _linear(W, b, dtype)
        if i < n - 1:
            layers[f"act_{i}"] = _ACTIVATIONS[mlp.activation]()
    if isinstance(mlp, MLPClassifier):
        out = mlp.out_activation_
        if out == "softmax":
            layers["out_activation"] = nn.Softmax(dim=-1)
        elif out == "logistic":
            layers["out_activation"] = nn.Sigmoid()
            if len(mlp.classes_) == 2 and mlp.n_outputs_ == 1:
                layers["proba"] = BinaryProba()
    return nn.Sequential(layers)


def affine_to_torch(transformer, dtype=torch.float32):
    """Convert a fitted affine scaler to an ``nn.Linear``-free elementwise module.

    Supports ``StandardScaler``, ``MinMaxScaler`` (without ``clip``) and
    ``MaxAbsScaler``; returns None for anything else.

    Parameters
    ----------
    transformer : estimator
        A fitted scikit-learn transformer.
    dtype : torch.dtype, default=torch.float32
        Use ``torch.float64`` to match scikit-learn to machine precision.

    Returns
    -------
    module : Affine or None
        The elementwise map ``x * weight + bias`` equal to ``transform``, or
        None when ``transformer`` is not an affine scaler.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.preprocessing import StandardScaler
    >>> from geolearn.models import affine_to_torch
    >>> X = np.array([[0.0, 1.0], [2.0, 5.0]])
    >>> scaler = StandardScaler().fit(X)
    >>> layer = affine_to_torch(scaler, dtype=torch.float64)
    >>> bool(np.allclose(layer(torch.as_tensor(X)).numpy(), scaler.transform(X)))
    True
    """
    from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

    if isinstance(transformer, StandardScaler):
        n = transformer.n_features_in_
        mean = transformer.mean_ if transformer.mean_ is not None else np.zeros(n)
        scale = transformer.scale_ if transformer.scale_ is not None else np.ones(n)
        return Affine(1.0 / scale, -mean / scale, dtype)
    if isinstance(transformer, MinMaxScaler):
        if transformer.clip:
            return None
        return Affine(transformer.scale_, transformer.min_, dtype)
    if isinstance(transformer, MaxAbsScaler):
        return Affine(1.0 / transformer.scale_, np.zeros_like(transformer.scale_), dtype)
    return None


class Affine(nn.Module):
    """Elementwise ``x * weight + bias`` (a fitted scaler as a differentiable layer).

    :func:`affine_to_torch` builds it from a fitted ``StandardScaler``,
    ``MinMaxScaler`` or ``MaxAbsScaler``; ReLU-network tools fold it into the
    next linear layer.

    Parameters
    ----------
    weight, bias : array-like of shape (n_features,)
        Per-feature scale and shift.
    dtype : torch.dtype, default=torch.float32

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import Affine
    >>> Affine([2.0, 0.5], [1.0, 0.0])(torch.tensor([[1.0, 4.0]]))
    tensor([[3., 2.]])
    """

    def __init__(self, weight, bias, dtype=torch.float32):
        super().__init__()
        self.register_buffer("weight", torch.as_tensor(np.asarray(weight), dtype=dtype))
        self.register_buffer("bias", torch.as_tensor(np.asarray(bias), dtype=dtype))

    def forward(self, x):
        return x * self.weight + self.bias
