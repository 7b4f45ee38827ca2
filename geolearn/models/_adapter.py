"""One wrapper for every model a geolearn method can probe."""

from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from .._utils import iter_batches, resolve_device, to_numpy, to_tensor
from ._sklearn import affine_to_torch, mlp_to_torch


class _StopForward(Exception):
    """Raised by a forward hook to skip the layers after the one being read."""


class GradientsUnavailableError(TypeError):
    """A method needs gradients but the model is a black box."""


def _module_device(module):
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return torch.device("cpu")


def _module_dtype(module):
    for t in (*module.parameters(), *module.buffers()):
        if t.is_floating_point():
            return t.dtype
    return torch.float32


def _first(out):
    # modules such as VAEs return tuples; the first element is the primary output
    return out[0] if isinstance(out, (tuple, list)) else out


class ModelAdapter:
    """A model seen through one interface: outputs, layer features and Jacobians.

    Do not build it directly: use :func:`as_model`.

    Attributes
    ----------
    kind : str
        ``"torch"``, ``"skorch"``, ``"sklearn-mlp"``, ``"pipeline"`` (every
        step converted to torch) or ``"black-box"``.
    module : torch.nn.Module or None
        The torch module evaluated (None for a black box).
    device : torch.device
    dtype : torch.dtype
    differentiable : bool
        Whether gradients and Jacobians are available.
    batch_size : int or None
    """

    def __init__(self, *, kind, module=None, predict=None, steps=None, device=None,
                 batch_size=1024, name=None):
        self.kind = kind
        self.module = module
        self._predict = predict
        self._steps = steps
        self.batch_size = batch_size
        self.name = name
        if module is not None:
            self.device = _module_device(module)
            self.dtype = _module_dtype(module)
        else:
            self.device = torch.device("cpu") if device is None else device
            self.dtype = torch.float32

    def __repr__(self):
        return f"ModelAdapter(kind={self.kind!r}, model={self.name}, device={self.device})"

    @property
    def differentiable(self):
        return self.module is not None

    @property
    def layer_names(self):
        """Names accepted by ``layer=``: torch submodules, or pipeline steps for a black box."""
        if self.module is not None:
            return [name for name, _ in self.module.named_modules() if name]
        if self._steps is not None:
            return [name for name, _ in self._steps]
        return []

    def require_gradients(self, purpose="this method"):
        """Raise :class:`GradientsUnavailableError` unless the model is differentiable."""
        if not self.differentiable:
            raise GradientsUnavailableError(
                f"{purpose} needs gradients, but {self.name} is a black-box estimator seen only "
                "through predict_proba/decision_function. Pass a torch.nn.Module, a fitted skorch "
                "net, or a fitted MLPClassifier/MLPRegressor (optionally in a Pipeline after "
                "StandardScaler/MinMaxScaler/MaxAbsScaler)."
            )

    def to_tensor(self, X):
        """``X`` as a tensor on the model's device and dtype."""
        return to_tensor(X, device=self.device, dtype=self.dtype)

    @contextmanager
    def eval_mode(self):
        """Put the module in eval mode inside a block, restoring every submodule's mode after."""
        if self.module is None:
            yield
            return
        modes = [(m, m.training) for m in self.module.modules()]
        self.module.eval()
        try:
            yield
        finally:
            for m, training in modes:
                m.training = training

    def _check_layer(self, layer):
        if layer is not None and layer not in self.layer_names:
            raise ValueError(
                f"layer={layer!r} is not a layer of {self.name}; choose one of {self.layer_names}."
            )

    def feature_fn(self, layer=None):
        """A differentiable torch function ``x -> output of layer`` (``None``: the model output).

        The forward pass stops at ``layer``, so reading an early layer costs
        only the layers before it. Call it inside :meth:`eval_mode` for
        inference-time behaviour of dropout and batch norm.
        """
        self.require_gradients("feature_fn")
        self._check_layer(layer)
        module = self.module
        if layer is None:
            return lambda x: _first(module(x))
        target = dict(module.named_modules())[layer]

        def f(x):
            store = {}

            def hook(mod, inputs, output):
                store["out"] = _first(output)
                raise _StopForward

            handle = target.register_forward_hook(hook)
            try:
                module(x)
            except _StopForward:
                pass
            finally:
                handle.remove()
            if "out" not in store:
                raise RuntimeError(f"layer {layer!r} was not reached by the forward pass.")
            return store["out"]

        return f

    def forward(self, X, *, batch_size=None):
        """Model outputs for ``X`` as a numpy array (batched, no gradients, eval mode)."""
        return self.features(X, layer=None, batch_size=batch_size)

    def features(self, X, layer=None, *, batch_size=None):
        """Outputs of ``layer`` (a submodule, or a pipeline step for a black box) for ``X``.

        Returns
        -------
        features : ndarray of shape (n_samples, ...)
        """
        batch_size = self.batch_size if batch_size is None else batch_size
        if self.module is None:
            return self._black_box_features(X, layer, batch_size)
        f = self.feature_fn(layer)
        n = len(X)
        outs = []
        with self.eval_mode(), torch.no_grad():
            for sl in iter_batches(n, batch_size):
                outs.append(to_numpy(f(self.to_tensor(X[sl]))))
        return np.concatenate(outs) if outs else np.empty((0,))

    def _black_box_features(self, X, layer, batch_size):
        self._check_layer(layer)
        if layer is None or self._steps is None:
            return np.concatenate([self._predict(X[sl]) for sl in iter_batches(len(X), batch_size)])
        if layer == self._steps[-1][0]:
            return self._predict(X)  # the whole pipeline's response
        out = X
        for name, step in self._steps[:-1]:
            out = step.transform(out)
            if name == layer:
                return np.asarray(out)
        raise AssertionError("unreachable")

    def jacobian(self, X, layer=None, *, batch_size=None, mode="auto"):
        """Jacobian of ``layer``'s output with respect to the input, per sample.

        Batched with ``torch.func.vmap`` of ``jacrev`` (or ``jacfwd``, which
        ``mode="auto"`` picks when the input is smaller than the output).

        Returns
        -------
        J : ndarray of shape (n_samples, *output_shape, *input_shape)
        """
        from torch.func import jacfwd, jacrev, vmap

        self.require_gradients("jacobian")
        if mode not in ("auto", "rev", "fwd"):
            raise ValueError(f"mode must be 'auto', 'rev' or 'fwd'; got {mode!r}.")
        batch_size = self.batch_size if batch_size is None else batch_size
        f = self.feature_fn(layer)

        def single(x):
            return f(x.unsqueeze(0)).squeeze(0)

        outs = []
        with self.eval_mode():
            X0 = self.to_tensor(X[:1])
            if mode == "auto":
                with torch.no_grad():
                    out_numel = single(X0[0]).numel()
                mode = "fwd" if X0[0].numel() < out_numel else "rev"
            jac = vmap((jacfwd if mode == "fwd" else jacrev)(single))
            for sl in iter_batches(len(X), batch_size):
                outs.append(to_numpy(jac(self.to_tensor(X[sl]))))
        return np.concatenate(outs)


_RESPONSES = ("predict_proba", "decision_function", "predict")


def _black_box_predict(estimator, response="auto"):
    """``estimator``'s response method as a function returning 2-D arrays."""
    if response not in ("auto", *_RESPONSES):
        raise ValueError(f"response must be 'auto' or one of {list(_RESPONSES)}; "
                         f"got {response!r}.")
    for method in (_RESPONSES if response == "auto" else (response,)):
        if hasattr(estimator, method):
            fn = getattr(estimator, method)

            def predict(X, fn=fn):
                out = np.asarray(fn(X))
                return out.reshape(len(out), -1)

            return predict
    wanted = "none of " + ", ".join(_RESPONSES) if response == "auto" else f"no {response}"
    raise TypeError(f"{type(estimator).__name__} has {wanted}.")


def as_model(model, *, device=None, batch_size=1024, dtype=torch.float32, response="auto"):
    """Wrap any supported model in a :class:`ModelAdapter`.

    Parameters
    ----------
    model : torch.nn.Module, skorch.NeuralNet, sklearn estimator or ModelAdapter
        - a ``torch.nn.Module`` is used as is, on the device it lives on;
        - a fitted skorch net gives its ``module_``, and so does a fitted estimator
          that trains a torch module (its ``module_``, or the module of its skorch
          ``net_``);
        - a fitted ``MLPClassifier``/``MLPRegressor`` is converted to an
          equivalent ``nn.Sequential`` (see :func:`mlp_to_torch`);
        - a ``Pipeline`` of affine scalers ending in one of the above becomes one
          differentiable ``nn.Sequential`` whose layers are named after the steps;
        - any other fitted estimator (or pipeline) is a black box seen through
          ``predict_proba``, ``decision_function`` or ``predict``;
        - a ``FrozenEstimator`` (also as a pipeline step) is seen as the estimator
          it wraps.
    device : str or torch.device, optional
        For converted sklearn models, where to put them (``"auto"``: CUDA when
        available; default: CPU). For torch modules and skorch nets this is only
        checked: a user's module is never moved; a mismatch raises ``ValueError``.
    batch_size : int or None, default=1024
        Samples per forward pass in :meth:`ModelAdapter.features` and
        :meth:`ModelAdapter.jacobian`.
    dtype : torch.dtype, default=torch.float32
        Precision of converted sklearn models.
    response : {"auto", "predict_proba", "decision_function", "predict"}, default="auto"
        The method a black box is seen through; "auto" takes the first of
        ``predict_proba``, ``decision_function``, ``predict`` that it has.
        Differentiable models always compute their forward pass.

    Returns
    -------
    adapter : ModelAdapter

    Examples
    --------
    >>> import torch
    >>> from geolearn.models import as_model
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    >>> m = as_model(net)
    >>> m.layer_names
    ['0', '1', '2']
    >>> X = torch.randn(5, 3).numpy()
    >>> m.features(X, layer="1").shape, m.jacobian(X).shape
    ((5, 4), (5, 2, 3))
    """
    if isinstance(model, ModelAdapter):
        return model
    model = _unfrozen(model)
    name = type(model).__name__
    if isinstance(model, nn.Module):
        _check_device(model, device, name)
        return ModelAdapter(kind="torch", module=model, batch_size=batch_size, name=name)
    module = _skorch_module(model)
    if module is not None:
        _check_device(module, device, name)
        return ModelAdapter(kind="skorch", module=module, batch_size=batch_size, name=name)

    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import check_is_fitted

    if not hasattr(model, "fit"):
        raise TypeError(
            "model must be a torch.nn.Module, a fitted skorch net or a fitted scikit-learn "
            f"estimator; got {name}."
        )
    check_is_fitted(model)
    target = resolve_device("cpu" if device is None else device)
    if isinstance(model, Pipeline):
        steps = [(n, _unfrozen(s)) for n, s in model.steps if s not in (None, "passthrough")]
        modules = [(n, _sklearn_module(s, dtype)) for n, s in steps]
        if all(m is not None for _, m in modules):
            from collections import OrderedDict

            seq = nn.Sequential(OrderedDict(modules)).to(target)
            return ModelAdapter(kind="pipeline", module=seq, batch_size=batch_size, name=name)
        return ModelAdapter(kind="black-box", predict=_black_box_predict(model, response),
                            steps=steps, batch_size=batch_size, name=name)
    module = _sklearn_module(model, dtype)
    if module is not None:
        return ModelAdapter(kind="sklearn-mlp", module=module.to(target), batch_size=batch_size,
                            name=name)
    return ModelAdapter(kind="black-box", predict=_black_box_predict(model, response),
                        batch_size=batch_size, name=name)


def _unfrozen(estimator):
    """The estimator inside a ``sklearn.frozen.FrozenEstimator`` (it only blocks refits)."""
    from sklearn.frozen import FrozenEstimator

    while isinstance(estimator, FrozenEstimator):
        estimator = estimator.estimator
    return estimator


def _skorch_module(model):
    """The torch module of a fitted skorch net or of an estimator that wraps one.

    skorch nets hold their module as ``module_``; geolearn estimators that train a
    torch module follow the same convention, or keep a fitted skorch net as ``net_``.
    """
    from skorch import NeuralNet

    if isinstance(model, NeuralNet):
        if not getattr(model, "initialized_", False):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(model).__name__} is not initialized: fit it first.")
        return model.module_
    if isinstance(getattr(model, "module_", None), nn.Module):
        return model.module_
    if isinstance(getattr(model, "net_", None), NeuralNet):
        return _skorch_module(model.net_)
    return None


def _sklearn_module(estimator, dtype):
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    if isinstance(estimator, (MLPClassifier, MLPRegressor)):
        return mlp_to_torch(estimator, dtype=dtype)
    module = _skorch_module(estimator)
    if module is not None:
        return module
    return affine_to_torch(estimator, dtype=dtype)


def _check_device(module, device, name):
    if device is None or device == "auto":
        return
    wanted = resolve_device(device)
    have = _module_device(module)
    if wanted.type != have.type or (wanted.index is not None and wanted.index != have.index):
        raise ValueError(
            f"device={device!r} but the {name} lives on {have}. geolearn never moves a user's "
            f"model: call .to({str(wanted)!r}) on it first, or leave device=None."
        )
