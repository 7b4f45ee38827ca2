"""Exact torch equivalents of fitted scikit-learn models (MLPs, linear models, affine maps)."""

from collections import OrderedDict

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from ._response import PROBA_FLOOR, resolve_response

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
    """Convert a fitted affine transformer (a scaler or a PCA) to a torch module.

    Supports ``StandardScaler``, ``MinMaxScaler`` (without ``clip``) and
    ``MaxAbsScaler``, which become an elementwise :class:`Affine`, and ``PCA``
    (whitened or not), which becomes an ``nn.Linear``; returns None for
    anything else.

    Parameters
    ----------
    transformer : estimator
        A fitted scikit-learn transformer.
    dtype : torch.dtype, default=torch.float32
        Use ``torch.float64`` to match scikit-learn to machine precision.

    Returns
    -------
    module : Affine, torch.nn.Linear or None
        A module equal to ``transform``, or None when ``transformer`` is not one
        of the transformers above.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.preprocessing import StandardScaler
    >>> from geolearn.models import affine_to_torch
    >>> X = np.array([[0.0, 1.0], [2.0, 5.0], [1.0, 0.0]])
    >>> scaler = StandardScaler().fit(X)
    >>> layer = affine_to_torch(scaler, dtype=torch.float64)
    >>> bool(np.allclose(layer(torch.as_tensor(X)).numpy(), scaler.transform(X)))
    True
    >>> pca = PCA(1, whiten=True).fit(X)
    >>> layer = affine_to_torch(pca, dtype=torch.float64)
    >>> bool(np.allclose(layer(torch.as_tensor(X)).detach().numpy(), pca.transform(X)))
    True
    """
    from sklearn.decomposition import PCA
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
    if isinstance(transformer, PCA):
        W = transformer.components_.T
        b = -transformer.mean_ @ W
        if transformer.whiten:
            # the floor of PCA.transform, which keeps rank-deficient components finite
            scale = np.sqrt(transformer.explained_variance_)
            scale = np.maximum(scale, np.finfo(scale.dtype).eps)
            W, b = W / scale, b / scale
        return _linear(W, b, dtype)
    return None


def linear_model_types():
    """The scikit-learn linear models :func:`linear_to_torch` converts (their subclasses too)."""
    from sklearn.linear_model import (
        LinearRegression,
        LogisticRegression,
        Ridge,
        RidgeClassifier,
        SGDClassifier,
    )
    from sklearn.svm import LinearSVC

    return (LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, Ridge,
            LinearRegression)


def linear_to_torch(estimator, response="auto", dtype=torch.float32):
    """Convert a fitted scikit-learn linear model to an ``nn.Sequential`` of its response.

    The module computes the output :func:`~geolearn.models.resolve_response`
    picks for ``response``, as the black box would be seen: the scores of
    ``decision_function`` (``(n, 1)`` for a binary classifier, ``(n, K)``
    otherwise) by default for classifiers, ``predict`` (always 2-D) for
    regressors, and for ``"predict_proba"`` or ``"clr_proba"`` the
    probabilities of ``predict_proba``: the softmax of a multinomial
    ``LogisticRegression``, the logistic sigmoid of a binary one, and the
    one-vs-rest normalisation of an ``SGDClassifier`` with ``loss="log_loss"``
    or ``"modified_huber"``. Layers are named ``linear`` (the scores), then
    ``out_activation`` and ``proba`` for probabilities, then ``clr`` for
    centred log-probabilities.

    Parameters
    ----------
    estimator : LogisticRegression, LinearSVC, SGDClassifier, RidgeClassifier, \
            Ridge or LinearRegression
        A fitted estimator.
    response : {"auto", "decision_function", "predict_proba", "clr_proba", \
            "predict"}, default="auto"
        The output the module computes, resolved by
        :func:`~geolearn.models.resolve_response`.
    dtype : torch.dtype, default=torch.float32
        Use ``torch.float64`` to match scikit-learn to machine precision.

    Returns
    -------
    module : torch.nn.Sequential

    Raises
    ------
    TypeError
        If ``estimator`` is not one of the linear models above.
    ValueError
        If ``estimator`` has no such ``response``.

    See Also
    --------
    mlp_to_torch : the same for ``MLPClassifier`` and ``MLPRegressor``.
    as_model : converts these models (and pipelines of them) automatically.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models import linear_to_torch
    >>> X = np.random.RandomState(0).randn(30, 3); y = (X[:, 0] > 0).astype(int)
    >>> clf = LogisticRegression().fit(X, y)
    >>> net = linear_to_torch(clf, dtype=torch.float64)
    >>> bool(np.allclose(net(torch.as_tensor(X)).detach().numpy()[:, 0],
    ...                  clf.decision_function(X), rtol=0, atol=1e-12))
    True
    >>> proba = linear_to_torch(clf, response="predict_proba", dtype=torch.float64)
    >>> bool(np.allclose(proba(torch.as_tensor(X)).detach().numpy(), clf.predict_proba(X),
    ...                  rtol=0, atol=1e-12))
    True
    """
    from sklearn.utils.validation import check_is_fitted

    if not isinstance(estimator, linear_model_types()):
        names = ", ".join(t.__name__ for t in linear_model_types())
        raise TypeError(f"estimator must be one of {names}; got {type(estimator).__name__}.")
    check_is_fitted(estimator)
    response = resolve_response(estimator, response)
    coef = estimator.coef_.toarray() if sp.issparse(estimator.coef_) else estimator.coef_
    coef = np.atleast_2d(coef)  # (n_outputs, n_features); a single target's is 1-D
    intercept = np.zeros(len(coef)) + estimator.intercept_  # a scalar without an intercept
    layers = OrderedDict(linear=_linear(coef.T, intercept, dtype))
    if response in ("predict_proba", "clr_proba"):
        layers.update(_proba_layers(estimator, binary=len(coef) == 1))
    if response == "clr_proba":
        layers["clr"] = CentredLog()
    return nn.Sequential(layers)


def _proba_layers(estimator, binary):
    """The layers from the scores to ``predict_proba``, as scikit-learn computes it."""
    from sklearn.linear_model import LogisticRegression

    if isinstance(estimator, LogisticRegression) and not binary:
        return {"out_activation": nn.Softmax(dim=-1)}
    # the rest is one-vs-rest: a probability per score, then the two columns or normalised
    if isinstance(estimator, LogisticRegression) or estimator.loss == "log_loss":
        activation = nn.Sigmoid()
    else:  # SGDClassifier(loss="modified_huber"): predict_proba exists for no other loss
        activation = ModifiedHuberProba()
    return {"out_activation": activation, "proba": BinaryProba() if binary else OvRNormalize()}


class ModifiedHuberProba(nn.Module):
    """``(clip(z, -1, 1) + 1) / 2``: the probability of a modified-Huber score."""

    def forward(self, z):
        return (z.clamp(-1.0, 1.0) + 1.0) / 2.0


class OvRNormalize(nn.Module):
    """One-vs-rest probabilities normalised over the classes (uniform where all are zero)."""

    def forward(self, p):
        total = p.sum(dim=-1, keepdim=True)
        zero = total == 0
        return torch.where(zero, 1.0 / p.shape[-1], p / torch.where(zero, 1.0, total))


class CentredLog(nn.Module):
    """The centred log-probabilities ``log p - mean_k log p_k`` of ``"clr_proba"``."""

    def forward(self, p):
        logp = torch.log(p.clamp(PROBA_FLOOR, 1.0))
        return logp - logp.mean(dim=-1, keepdim=True)


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
