"""One wrapper for every model a geolearn method can probe."""

import copy
import numbers
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

from .._utils import (
    check_image_shape,
    check_numeric_array,
    iter_batches,
    resolve_device,
    small_ops_threads,
    to_numpy,
    to_tensor,
)
from ._capture import _run_capturing, _run_collecting, _run_to_first
from ._forward_ad import locked_jacfwd
from ._freezing import frozen
from ._response import resolve_response, respond
from ._sklearn import affine_to_torch, linear_model_types, linear_to_torch, mlp_to_torch


class LayerNotReachedError(RuntimeError):
    """The forward pass of a model ended without running the layer asked for.

    Raised by :meth:`ModelAdapter.feature_fn`'s function when the model's ``forward``
    skips the layer for these inputs (a branch, an early return), so that callers can
    say what to pass instead without reading the message.
    """


class GradientsUnavailableError(TypeError):
    """A method needs gradients but the model is a black box.

    A ``TypeError``: the model given is of the wrong kind for the method.

    Examples
    --------
    >>> from sklearn.dummy import DummyClassifier
    >>> from geolearn.models import GradientsUnavailableError, as_model
    >>> m = as_model(DummyClassifier().fit([[0.0], [1.0]], [0, 1]))
    >>> try:
    ...     m.require_gradients("a saliency map")
    ... except GradientsUnavailableError:
    ...     print("no gradients")
    no gradients
    """


def _module_device(module):
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    return torch.device("cpu")


def _module_dtype(module):
    for t in (*module.parameters(), *module.buffers()):
        if t.is_floating_point():
            return t.dtype
    return torch.float32


# Modules a sample passes through unchanged in shape on its way to the first layer (with the
# activations, but for the two of them that change it).
_SHAPE_PRESERVING = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d,
                     nn.AlphaDropout)
_SHAPE_CHANGING_ACTIVATIONS = (nn.GLU, nn.MultiheadAttention)
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_INPUT_LAYERS = (nn.Linear, *_CONVS)


def _input_layer(module):
    """``(name, layer, flattened)``: the first Linear/Conv layer every sample meets.

    Only where the order of layers is certain: a chain of ``nn.Sequential``
    through activations, dropout and a ``Flatten`` of the sample (whether the
    layer sees it flattened). A leading ``nn.Unflatten`` of the rows is returned
    as the layer (the model folds its rows itself). None for anything else (a
    custom ``forward`` may use its submodules in any order).
    """
    name, flattened = [], False
    while not isinstance(module, _INPUT_LAYERS):
        if not isinstance(module, nn.Sequential):
            return None
        for child_name, child in module.named_children():
            if isinstance(child, nn.Flatten) and child.start_dim == 1 and child.end_dim == -1:
                flattened = True
            elif isinstance(child, nn.Unflatten) and child.dim == 1 and not flattened:
                return ".".join([*name, child_name]), child, False
            elif not (isinstance(child, _SHAPE_PRESERVING)
                      or (type(child).__module__ == "torch.nn.modules.activation"
                          and not isinstance(child, _SHAPE_CHANGING_ACTIVATIONS))):
                name.append(child_name)
                module = child
                break
        else:
            return None
    return ".".join(name), module, flattened


def _takes(layer, received):
    """Whether ``layer`` (Linear or Conv) takes an input of shape ``received``, as torch does."""
    if isinstance(layer, nn.Linear):
        return received[-1] == layer.in_features
    dims = int(type(layer).__name__[-2])  # Conv1d -> 1
    return len(received) in (dims + 1, dims + 2) and received[-dims - 1] == layer.in_channels


def _takes_batch(conv, received, n):
    """Whether a convolution receives a batch of ``n`` samples, each ``(C, *spatial)``."""
    return (len(received) == len(conv.kernel_size) + 2 and received[0] == n
            and received[1] == conv.in_channels)


class ModelAdapter:
    """A model seen through one interface: outputs, layer features, gradients and Jacobians.

    Do not build it directly: use :func:`as_model`, which resolves the model's
    kind, device and dtype and passes the arguments below.

    Parameters
    ----------
    kind : str
        One of the ``kind`` values below.
    module : torch.nn.Module, optional
        The torch module evaluated (None for a black box).
    estimator : object, optional
        What was passed to :func:`as_model`.
    response : str, optional
        For a black box or a converted linear model, the resolved response (see
        :func:`resolve_response`).
    steps : list, optional
        For a black-box pipeline, its steps (read by ``features(layer=step)``).
    batch_size : int, default=1024
        Rows per forward pass.
    name : str, optional
        The model's name, shown by ``repr``.

    Attributes
    ----------
    kind : str
        ``"torch"``, ``"skorch"``, ``"sklearn-mlp"``, ``"sklearn-linear"``,
        ``"pipeline"`` (every step converted to torch) or ``"black-box"``.
    module : torch.nn.Module or None
        The torch module evaluated (None for a black box).
    estimator : object
        What was passed to :func:`as_model` (the inner estimator of a
        ``FrozenEstimator``).
    response : str or None
        For a black box, or a linear model (or a pipeline ending in one)
        converted to torch, the resolved response it is seen through (see
        :func:`resolve_response`); None for other models.
    device : torch.device
    dtype : torch.dtype
    differentiable : bool
        Whether gradients and Jacobians are available.
    batch_size : int or None

    See Also
    --------
    as_model : builds the adapter from any model.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models import as_model
    >>> m = as_model(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU()))
    >>> m.kind, m.layer_names, m.differentiable
    ('torch', ['0', '1'], True)
    >>> tuple(m.features(torch.zeros(4, 3), layer="0").shape)
    (4, 2)
    """

    def __init__(self, *, kind, module=None, estimator=None, response=None, steps=None,
                 batch_size=1024, name=None):
        self.kind = kind
        self._input_spec = None
        self._saved_bytes = {}  # per (layer, sample shape, dtype, device): see jacobian
        self._first_layers = {}  # sample shape -> what _first_layer found
        self.module = module
        self.estimator = estimator
        self.response = response
        self._steps = steps
        self.batch_size = batch_size
        self.name = name
        if module is not None:
            self.device = _module_device(module)
            self.dtype = _module_dtype(module)
        else:
            self.device = torch.device("cpu")
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
                f"through {self.response}. Pass a torch.nn.Module, a fitted skorch net, a "
                "fitted MLPClassifier/MLPRegressor or a linear model (LogisticRegression, "
                "LinearSVC, SGDClassifier, RidgeClassifier, Ridge, LinearRegression), "
                "optionally in a Pipeline after StandardScaler/MinMaxScaler/MaxAbsScaler/PCA."
            )

    def check_input(self, X, name="X"):
        """``X`` validated as input of the model: the one check of every model-taking method.

        An array-like (a DataFrame is read as its values) becomes a numeric
        ndarray; a scipy sparse matrix is a ``TypeError`` naming ``.toarray()``
        (a black box receives it as it is: its estimator may take it); an
        object array holding something that is not a number is a
        ``ValueError``. A tensor is returned as it is. Then each sample's shape
        is checked against the model's input: the ``n_features_in_`` of a
        scikit-learn model, the ``in_features`` or ``in_channels`` of a
        network's first ``Linear``/``Conv`` layer (read from the order of an
        ``nn.Sequential`` chain; for a module with its own ``forward``, the
        first one a pass of two zero samples reaches, run once per sample
        shape in eval mode and stopped there). A mismatch is a ``ValueError``
        stating what ``X`` has and what the model expects, before any torch
        error.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from geolearn.models import as_model
        >>> m = as_model(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU()))
        >>> m.check_input(np.zeros((3, 5)))
        Traceback (most recent call last):
        ...
        ValueError: X has 5 features, but Sequential is expecting 4 features as input (the \
in_features of its first layer '0').
        """
        if isinstance(X, torch.Tensor):
            self.check_sample_shape(tuple(X.shape[1:]), name)
            return X
        if self.module is None:
            return X if hasattr(X, "shape") else np.asarray(X)
        X = check_numeric_array(X, name, ensure_2d=False, allow_nd=True, ensure_min_samples=0,
                                ensure_min_features=0, ensure_all_finite=False)
        if X.ndim == 0:
            raise ValueError(f"{name} must be an array of samples (n_samples, ...); got a "
                             "scalar.")
        self.check_sample_shape(X.shape[1:], name)
        return X

    def check_sample_shape(self, shape, name="X"):
        """Raise a ``ValueError`` when samples of ``shape`` cannot be the model's input.

        See :meth:`check_input`; shapes the model's input is unknown for pass.
        """
        spec = self._input_spec
        if spec is None:
            spec = self._input_spec = self._find_input_spec()
        if spec is False or len(shape) == 0:
            return
        layer_name, layer, flattened, n_features = spec
        shape = tuple(shape)
        numel = int(np.prod(shape))
        if n_features is not None:
            if numel != n_features:
                raise ValueError(f"{name} has {numel} features, but {self.name} is expecting "
                                 f"{n_features} features as input.")
            return
        where = f"(the {{}} of its first layer {layer_name!r})"
        if layer is None:  # its own forward: the first layer a pass of such samples meets
            found = self._first_layer(shape)
            if found is None:
                return
            layer_name, layer, received = found
            where = f"(the {{}} of the first layer it applies, {layer_name!r})"
            ok = _takes(layer, received)
        elif isinstance(layer, nn.Unflatten):
            expected = int(np.prod(layer.unflattened_size))
            if expected > 0 and numel != expected:  # a -1 size takes what the rows hold
                raise ValueError(f"{name} has {numel} features, but {self.name} is expecting "
                                 f"{expected} features as input (rows its first layer "
                                 f"{layer_name!r} unflattens to {tuple(layer.unflattened_size)}).")
            return
        else:  # an nn.Sequential chain: what its first layer receives follows from its order
            received = (None, numel) if flattened else (None, *shape)
            ok = _takes(layer, received) and (isinstance(layer, nn.Linear)
                                              or len(received) == len(layer.kernel_size) + 2)
        if ok:
            return
        if isinstance(layer, nn.Linear):
            raise ValueError(f"{name} has {received[-1]} features, but {self.name} is expecting "
                             f"{layer.in_features} features as input "
                             + where.format("in_features") + ".")
        dims = int(type(layer).__name__[-2])
        c = layer.in_channels
        spatial = ("L", "H, W", "D, H, W")[dims - 1]
        got = (f"samples with {shape[0]} channels of shape {shape}"
               if len(shape) == dims + 1 else f"samples of shape {shape}")
        raise ValueError(f"{name} has {got}, but {self.name} is expecting {c} input "
                         f"channel{'s' if c > 1 else ''}: samples of shape ({c}, {spatial}) "
                         + where.format("in_channels")[:-1] + f", a {type(layer).__name__}).")

    def _find_input_spec(self):
        """``(layer name, layer, flattened, n_features)`` of the model's input, or False.

        The layer is None for a module with its own ``forward``: its first layer
        depends on the samples and is found by :meth:`_first_layer`.
        """
        n_features = getattr(self.estimator, "n_features_in_", None)
        if self.kind in ("sklearn-mlp", "sklearn-linear", "pipeline") and n_features is not None:
            return None, None, False, int(n_features)
        if self.module is None:
            return False
        found = _input_layer(self.module)
        if found is not None:
            return (*found, None)
        modules = list(self.module.modules())
        if (not any(isinstance(m, _INPUT_LAYERS) for m in modules)
                or any(isinstance(m, nn.modules.lazy.LazyModuleMixin)
                       and m.has_uninitialized_params() for m in modules)):
            return False  # no layer to check against (or one still to be shaped by its input)
        return None, None, False, None

    def _first_layer(self, shape):
        """``(name, layer, input shape)`` of the first ``Linear``/``Conv`` layer that samples of
        ``shape`` meet, or None: two zero samples run up to it, frozen and without gradients
        (once per shape: a partial forward pass, whatever the model's size).
        """
        if shape not in self._first_layers:
            names = {m: n for n, m in self.module.named_modules() if isinstance(m, _INPUT_LAYERS)}
            x = torch.zeros((2, *shape), device=self.device, dtype=self.dtype)
            with self.frozen(), torch.no_grad(), small_ops_threads():  # two samples: small ops
                layer, received = _run_to_first(self.module, x, names)
            self._first_layers[shape] = (None if layer is None
                                         else (names[layer], layer, tuple(received.shape)))
        return self._first_layers[shape]

    def sample_layout(self, shape, image_shape=None):
        """The shape in which the model takes a sample given as ``shape``.

        Flat rows of images (``shape`` is ``(C * H * W,)`` and ``image_shape``
        is ``(C, H, W)``) are folded to ``image_shape`` for a model that takes
        images: a torch model whose first ``Linear``/``Conv`` layer is a
        convolution that cannot take the rows as a batch of samples. That
        layer is read from the order of an ``nn.Sequential`` chain, and for a
        module with its own ``forward`` (torchvision's CNNs) found by running
        two zero rows up to it (in eval mode, once per shape). Every other
        model (MLPs, a model that folds its rows itself, scikit-learn models,
        black boxes) takes ``shape`` as given.

        Parameters
        ----------
        shape : tuple of int
            The shape of one sample as given.
        image_shape : tuple of int, optional
            ``(C, H, W)`` of the images the samples hold; None: ``shape``.

        Returns
        -------
        layout : tuple of int

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten())
        >>> mlp = torch.nn.Sequential(torch.nn.Linear(48, 4))
        >>> as_model(cnn).sample_layout((48,), (3, 4, 4)), as_model(mlp).sample_layout((48,), (3, 4, 4))
        ((3, 4, 4), (48,))
        """
        shape = tuple(shape)
        if image_shape is None or len(shape) != 1 or self.module is None:
            return shape
        image_shape = check_image_shape(image_shape)
        if not any(isinstance(m, _CONVS) for m in self.module.modules()):
            return shape  # no convolution: never run an MLP on images
        spec = self._input_spec
        if spec is None:
            spec = self._input_spec = self._find_input_spec()
        if spec is False or spec[3] is not None:
            return shape
        _, layer, flattened, _ = spec
        if layer is None:  # its own forward: the rows run to the first layer they meet
            found = self._first_layer(shape)
            images = (found is not None and isinstance(found[1], _CONVS)
                      and not _takes_batch(found[1], found[2], 2))
        else:
            images = isinstance(layer, _CONVS) and not flattened
        return image_shape if images else shape

    def to_tensor(self, X):
        """``X`` as a tensor on the model's device and dtype."""
        return to_tensor(X, device=self.device, dtype=self.dtype)

    def frozen(self):
        """A context in which the module is in eval mode with no parameter gradients.

        See :func:`frozen`; a black box is left as it is.
        """
        return frozen(self.module)

    def resolve_layer(self, layer):
        """The name of ``layer``, given by name, by index into :attr:`layer_names`, or by a
        callable ``module -> submodule``; None (the model output) stays None.
        """
        names = self.layer_names
        if layer is None or (isinstance(layer, str) and layer in names):
            return layer
        if isinstance(layer, numbers.Integral) and not isinstance(layer, bool):
            if -len(names) <= layer < len(names):
                return names[layer]
        elif callable(layer) and self.module is not None:
            target = layer(self.module)
            for name, sub in self.module.named_modules():
                if name and sub is target:
                    return name
        raise ValueError(f"layer={layer!r} is not a layer of {self.name}: give a name or an "
                         f"index into {names}, or a callable returning one of its submodules.")

    def feature_fn(self, layer=None, *, input=False):
        """A differentiable torch function ``x -> output of layer`` (``None``: the model output).

        ``input=True`` gives the input of ``layer`` instead (its first positional
        argument), read by a forward pre-hook.

        The forward pass stops at ``layer``, so reading an early layer costs
        only the layers before it. Call it inside :meth:`frozen` for
        inference-time behaviour of dropout and batch norm. Safe to call from
        several threads at once on one model: each call reads only its own pass.
        """
        self.require_gradients("feature_fn")
        layer = self.resolve_layer(layer)
        module = self.module
        target = None if layer is None else dict(module.named_modules())[layer]
        if layer is None and input:
            raise ValueError("input=True needs a layer: the model's input is x itself.")

        def f(x):
            self.check_sample_shape(tuple(x.shape[1:]))
            if self._input_spec and self._input_spec[3] is not None:
                # a converted scikit-learn model takes images as rows (see tabular_input)
                x = x.reshape(len(x), -1)
            out, reached = _run_capturing(module, x, target, pre=input)
            if not reached:
                what = "the input of layer" if input else "layer"
                raise LayerNotReachedError(f"{what} {layer!r} was not reached by the forward "
                                           "pass.")
            return out

        return f

    def layers_fn(self, layers):
        """A torch function ``x -> {name: output}`` reading several layers in one forward pass.

        The pass stops once each of ``layers`` (names, indices or callables, as
        for :meth:`feature_fn`) has given its output: reading many layers costs
        one pass up to the last of them, not one pass per layer. A layer the
        pass never reaches is a ``ValueError`` naming it. Call it inside
        :meth:`frozen`, as :meth:`feature_fn`.

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        >>> out = as_model(net).layers_fn(["0", -1])(torch.zeros(5, 3))
        >>> {name: tuple(t.shape) for name, t in out.items()}
        {'0': (5, 4), '2': (5, 2)}
        """
        self.require_gradients("layers_fn")
        names = list(dict.fromkeys(self.resolve_layer(layer) for layer in layers))
        if None in names:
            raise ValueError("layers_fn reads hidden layers; None (the model output) is not one.")
        modules = dict(self.module.named_modules())
        targets = {modules[name]: name for name in names}

        def f(x):
            self.check_sample_shape(tuple(x.shape[1:]))
            outs = _run_collecting(self.module, x, targets)
            missing = [name for module, name in targets.items() if module not in outs]
            if missing:
                raise ValueError(f"layers {missing} were never called by the forward pass of "
                                 f"{self.name}: choose layers the model uses.")
            return {name: outs[module] for module, name in targets.items()}

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
        X = self.check_input(X)
        if self.module is None:
            return self._black_box_features(X, layer, batch_size)
        f = self.feature_fn(layer)
        outs = []
        with self.frozen(), torch.no_grad(), small_ops_threads(self.module):
            for sl in iter_batches(len(X), batch_size):
                outs.append(to_numpy(f(self.to_tensor(X[sl]))))
        return np.concatenate(outs) if outs else np.empty((0,))

    def _black_box_features(self, X, layer, batch_size):
        layer = self.resolve_layer(layer)
        if layer is None or self._steps is None or layer == self._steps[-1][0]:
            # the whole model's (or pipeline's) response
            return np.concatenate([respond(self.estimator, self.response, X[sl])
                                   for sl in iter_batches(X.shape[0], batch_size)])
        out = X
        for name, step in self._steps[:-1]:
            out = step.transform(out)
            if name == layer:
                return np.asarray(out)
        raise AssertionError("unreachable")

    def input_gradient(self, X, loss=None, *, targets=None, layer=None, batch_size=None):
        """Gradient with respect to the inputs of ``loss`` of ``layer``'s output, per sample.

        The model is :meth:`frozen` during the call (its parameters' ``.grad``
        are never touched), and the loss is summed over the batch, so each
        sample's gradient is its own whatever the batch size.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, ...)
            A tensor is differentiated in one pass and a tensor is returned
            (for attack loops); an array is batched and a numpy array returned.
        loss : callable, optional
            ``loss(output, targets) -> tensor``, summed to a scalar. Default: the
            output at ``targets`` (one index per sample) when they are given,
            else the sum of the output.
        targets : array-like or torch.Tensor of shape (n_samples, ...), optional
            Sliced along with ``X`` and passed to ``loss``.
        layer : str, int or callable, optional
            Differentiate a hidden layer instead of the output.
        batch_size : int, optional

        Returns
        -------
        gradient : ndarray or torch.Tensor of the shape of ``X``

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> lin = torch.nn.Linear(3, 2, bias=False)
        >>> g = as_model(lin).input_gradient(torch.ones(4, 3), targets=torch.tensor([1, 1, 0, 0]))
        >>> bool(torch.equal(g[0], lin.weight[1].detach()))
        True
        """
        grad = self.input_gradient_fn(loss, layer=layer)
        X = self.check_input(X)
        with self.frozen(), small_ops_threads(self.module):
            if isinstance(X, torch.Tensor):
                t = targets.to(X.device) if isinstance(targets, torch.Tensor) else targets
                return grad(X, t)
            batch_size = self.batch_size if batch_size is None else batch_size
            outs = []
            for sl in iter_batches(len(X), batch_size):
                t = None if targets is None else torch.as_tensor(np.asarray(targets)[sl],
                                                                 device=self.device)
                outs.append(to_numpy(grad(self.to_tensor(X[sl]), t)))
        return np.concatenate(outs)

    def input_gradient_fn(self, loss=None, *, layer=None):
        """The tensor function ``grad(x, targets=None)`` of :meth:`input_gradient`, for loops.

        The layer is resolved once and the model is not frozen at each call: call
        it inside :meth:`frozen`, as an attack's thousands of steps do, so that a
        step costs only its forward and backward passes. ``loss`` and ``layer``
        are as in :meth:`input_gradient`; the loss is summed over the batch.

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> m = as_model(torch.nn.Linear(3, 2, bias=False))
        >>> grad = m.input_gradient_fn()
        >>> x, t = torch.ones(4, 3), torch.tensor([1, 1, 0, 0])
        >>> with m.frozen():
        ...     bool(torch.equal(grad(x, t), m.input_gradient(x, targets=t)))
        True
        """
        self.require_gradients("input_gradient")
        f = self.feature_fn(layer)
        loss = _target_output if loss is None else loss

        def grad(x, targets=None):
            with torch.enable_grad():
                x = x.detach().requires_grad_(True)
                return torch.autograd.grad(loss(f(x), targets).sum(), x)[0]

        return grad

    def jacobian(self, X, layer=None, *, batch_size=None, mode="auto", max_memory=2**28):
        """Jacobian of ``layer``'s output with respect to the input, per sample.

        Batched with ``torch.func.vmap`` of ``jacrev`` (or ``jacfwd``, which
        ``mode="auto"`` picks when the input is smaller than the output), in
        chunks whose Jacobians take at most ``max_memory`` bytes, so large
        inputs or outputs never exhaust memory.

        Parameters
        ----------
        X : array-like or torch.Tensor of shape (n_samples, ...)
            An array goes to the model's device and dtype, and gives an ndarray;
            a tensor is used as it is (device and dtype: for methods computing
            in another precision) and gives a tensor without autograd history.
        layer : str, int or callable, optional
        batch_size : int, optional
            Upper bound on the chunk size (default: the adapter's).
        mode : {"auto", "rev", "fwd"}, default="auto"
        max_memory : int, default=2 ** 28
            Bytes per chunk (256 MiB): its Jacobians (twice, as computed and as
            returned) and the autodiff intermediates behind them (``in`` tangents in
            forward mode, ``out`` cotangents in reverse mode, of every tensor the
            forward pass saves, measured once on two samples, with their derivative
            rules' temporaries).

        Returns
        -------
        J : ndarray or torch.Tensor of shape (n_samples,) + output_shape + input_shape

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> J = as_model(lambda x: x.sin()).jacobian(torch.zeros(3, 2, dtype=torch.float64))
        >>> J.dtype, bool(torch.equal(J, torch.eye(2, dtype=J.dtype).expand(3, 2, 2)))
        (torch.float64, True)
        """
        from torch.func import jacrev, vmap

        self.require_gradients("jacobian")
        if mode not in ("auto", "rev", "fwd"):
            raise ValueError(f"mode must be 'auto', 'rev' or 'fwd'; got {mode!r}.")
        batch_size = self.batch_size if batch_size is None else batch_size
        f = self.feature_fn(layer)
        X = self.check_input(X)
        is_tensor = isinstance(X, torch.Tensor)
        convert = (lambda t: t) if is_tensor else self.to_tensor

        def single(x):
            return f(x.unsqueeze(0)).squeeze(0)

        out = None  # filled chunk by chunk: concatenating would hold the Jacobians twice
        # torch.func still differentiates in the input under no_grad
        with self.frozen(), torch.no_grad(), small_ops_threads(self.module):
            # the shapes from one row (a zero row when X is empty: the result has no rows)
            X0 = convert(X[:1] if len(X) else X.new_zeros((1,) + tuple(X.shape[1:]))
                         if is_tensor else np.zeros((1,) + X.shape[1:], X.dtype))
            out0 = single(X0[0])
            out_numel = out0.numel()
            in_numel = X0[0].numel()
            if not len(X):
                J = X0.new_zeros((0,) + tuple(out0.shape) + tuple(X0.shape[1:]))
                return J if is_tensor else to_numpy(J)
            if mode == "auto":
                mode = "fwd" if in_numel < out_numel else "rev"
            # each saved intermediate carries its tangents (cotangents) and the temporaries of
            # its derivative rule, about three times their size
            per_sample = (2 * out_numel * in_numel * X0.element_size()
                          + 3 * (in_numel if mode == "fwd" else out_numel)
                          * self._saved_bytes_of(f, layer, X0))
            chunk = _chunk_size(per_sample, max_memory, batch_size)
            jac = vmap((locked_jacfwd if mode == "fwd" else jacrev)(single))
            for sl in iter_batches(len(X), chunk):
                # a copy: forward AD gives a view's tangent the size of its whole base
                # (every row of X, times the d tangents), not of the chunk
                J = jac(convert(X[sl]).clone())
                J = J if is_tensor else to_numpy(J)
                if sl.stop - sl.start == len(X):
                    return J  # one chunk: no copy into a buffer
                if out is None:
                    shape = (len(X), *J.shape[1:])
                    out = (J.new_empty(shape) if is_tensor else np.empty(shape, dtype=J.dtype))
                out[sl] = J
        return out

    def _saved_bytes_of(self, f, layer, x):
        """:func:`saved_bytes` of ``f``, measured once per named layer and kind of input."""
        if not isinstance(layer, (str, int, type(None))):
            return saved_bytes(f, x)  # a callable: no stable key
        key = (layer, tuple(x.shape[1:]), x.dtype, str(x.device))
        if key not in self._saved_bytes:
            self._saved_bytes[key] = saved_bytes(f, x)
        return self._saved_bytes[key]

    def to(self, device=None, dtype=None):
        """This adapter, or one of a copy of its module on ``device`` in ``dtype``.

        geolearn never moves or casts a user's module in place: a method whose
        spec computes in another precision than the model's (float64 curvature
        of a float32 network, say) works on this one copy. ``self`` is returned
        when the module already lives there in that dtype, and for a black box.

        Examples
        --------
        >>> import torch
        >>> from geolearn.models import as_model
        >>> net = torch.nn.Linear(2, 3)
        >>> m64 = as_model(net).to(dtype=torch.float64)
        >>> m64.dtype, net.weight.dtype, m64.to(dtype=torch.float64) is m64
        (torch.float64, torch.float32, True)
        """
        if self.module is None:
            return self
        device = self.device if device is None else resolve_device(device)
        dtype = self.dtype if dtype is None else dtype
        tensors = [*self.module.parameters(), *self.module.buffers()]
        if all(_same_device(t.device, device) and (t.dtype == dtype or not t.is_floating_point())
               for t in tensors):
            return self
        module = copy.deepcopy(self.module).to(device=device, dtype=dtype)
        return ModelAdapter(kind=self.kind, module=module, estimator=self.estimator,
                            response=self.response, steps=self._steps,
                            batch_size=self.batch_size, name=self.name)


def saved_bytes(f, x):
    """Bytes of the tensors a forward pass of ``f`` saves for backward, per sample of ``x``.

    Counted on the first sample of ``x`` and on two copies of it: the difference leaves
    out what does not grow with the samples (the weights). Autodiff carries a tangent (or
    cotangent) of each of them.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import saved_bytes
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh())
    >>> saved_bytes(net, torch.zeros(5, 3))  # Linear saves its input, tanh its output
    76
    """
    sizes = []

    def pack(t):
        sizes.append(t.numel() * t.element_size())
        return t

    def saved(x):
        sizes.clear()
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            f(x.detach().clone().requires_grad_(True))
        return sum(sizes)

    x = x[:1]
    with small_ops_threads():  # two samples: small ops
        return max(0, saved(torch.cat([x, x])) - saved(x))


def _chunk_size(per_sample, max_memory, batch_size):
    """Samples per chunk: at most ``batch_size``, whose ``per_sample`` bytes fit ``max_memory``."""
    chunk = max(1, int(max_memory // max(per_sample, 1)))
    return chunk if batch_size is None else min(chunk, batch_size)


def _same_device(have, wanted):
    """Whether ``have`` is ``wanted`` (``cuda`` without an index matches any CUDA device)."""
    return have.type == wanted.type and (wanted.index is None or have.index == wanted.index)


def _target_output(out, targets):
    if targets is None:
        return out
    targets = torch.as_tensor(targets, device=out.device).long().view(-1, 1)
    return out.reshape(len(out), -1).gather(1, targets)


def as_model(model, *, device="auto", batch_size=1024, dtype=None, response="auto"):
    """Wrap any supported model in a :class:`ModelAdapter`: the one door to models.

    Parameters
    ----------
    model : torch.nn.Module, skorch.NeuralNet, sklearn estimator, callable or ModelAdapter
        A module is used as is; a fitted skorch net, or an estimator with a
        ``module_`` or skorch ``net_``, gives its module; a fitted
        ``MLPClassifier``/``MLPRegressor`` becomes an exact ``nn.Sequential``
        (:func:`mlp_to_torch`), and so does a fitted ``LogisticRegression``,
        ``LinearSVC``, ``SGDClassifier``, ``RidgeClassifier``, ``Ridge`` or
        ``LinearRegression`` (:func:`linear_to_torch`), also after scalers
        and ``PCA`` in a ``Pipeline`` (:func:`affine_to_torch`; layers named
        after the steps); a ``FrozenEstimator`` is seen as the
        estimator it wraps; a plain callable ``tensor -> tensor`` is a function
        without parameters; any other fitted estimator is a black box seen
        through its ``response``.
    device : str, torch.device or None, default="auto"
        For converted sklearn models, where to put them (``"auto"``: CUDA when
        available, else the CPU; None: the CPU). For torch modules and skorch nets
        a device other than ``"auto"`` or None is only checked: a user's module is
        never moved; a mismatch raises ``ValueError``.
    batch_size : int or None, default=1024
        Samples per forward pass.
    dtype : torch.dtype, default=None
        Precision of converted sklearn models. None: ``torch.float64`` for
        linear models and pipelines ending in one (equal to scikit-learn to
        machine precision, as their black-box outputs were), ``torch.float32``
        for MLPs.
    response : {"auto", "decision_function", "predict_proba", "clr_proba", "predict"}, \
            default="auto"
        The output a black box or a converted linear model is seen through,
        resolved by :func:`resolve_response` (``"auto"``: ``decision_function``,
        else centred log-probabilities, else ``predict``). Other
        differentiable models always compute their forward pass.

    Returns
    -------
    adapter : ModelAdapter

    Examples
    --------
    >>> import torch
    >>> from geolearn.models import as_model
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    >>> m = as_model(net)
    >>> X = torch.randn(5, 3).numpy()
    >>> m.features(X, layer="1").shape, m.features(X, layer=-1).shape, m.jacobian(X).shape
    ((5, 4), (5, 2), (5, 2, 3))

    A linear model is converted exactly, so gradients work on it:

    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> clf = LogisticRegression().fit(X, [0, 1, 0, 1, 1])
    >>> lr = as_model(clf)
    >>> lr.kind, lr.response, lr.dtype
    ('sklearn-linear', 'decision_function', torch.float64)
    >>> bool(np.allclose(lr.input_gradient(X), clf.coef_, rtol=0, atol=1e-12))
    True
    """
    if isinstance(model, ModelAdapter):
        return model
    # the only place in geolearn that branches on the type of a model
    model = _unfrozen(model)
    kw = dict(estimator=model, batch_size=batch_size, name=type(model).__name__)
    if isinstance(model, nn.Module):
        _check_device(model, device, kw["name"])
        return ModelAdapter(kind="torch", module=model, **kw)
    module = _skorch_module(model)
    if module is not None:
        _check_device(module, device, kw["name"])
        return ModelAdapter(kind="skorch", module=module, **kw)
    if callable(model) and not hasattr(model, "fit"):
        kw["name"] = getattr(model, "__name__", kw["name"])
        return ModelAdapter(kind="torch", module=_Function(model), **kw)
    return _adapt_estimator(model, device, dtype, response, kw)


def _adapt_estimator(model, device, dtype, response, kw):
    """A fitted scikit-learn estimator: converted to torch where exact, else a black box."""
    from sklearn.pipeline import Pipeline
    from sklearn.utils.validation import check_is_fitted

    if not hasattr(model, "fit"):
        raise TypeError(
            "model must be a torch.nn.Module, a fitted skorch net, a fitted scikit-learn "
            f"estimator or a callable mapping tensors to tensors; got {kw['name']}."
        )
    check_is_fitted(model)
    target = resolve_device("cpu" if device is None else device)
    steps = None
    if isinstance(model, Pipeline):
        steps = [(n, _unfrozen(s)) for n, s in model.steps if s not in (None, "passthrough")]
    final = model if steps is None else steps[-1][1]
    linear = isinstance(final, linear_model_types())
    if linear:  # a linear model is seen through its response, converted or not
        response = resolve_response(final, response)
    if dtype is None:
        dtype = torch.float64 if linear else torch.float32
    if steps is not None:
        modules = [(n, _sklearn_module(s, dtype, response)) for n, s in steps]
        if all(m is not None for _, m in modules):
            seq = nn.Sequential(OrderedDict(modules)).to(target)
            return ModelAdapter(kind="pipeline", module=seq,
                                response=response if linear else None, **kw)
    else:
        module = _sklearn_module(model, dtype, response)
        if module is not None:
            return ModelAdapter(kind="sklearn-linear" if linear else "sklearn-mlp",
                                module=module.to(target), response=response if linear else None,
                                **kw)
    return ModelAdapter(kind="black-box", response=resolve_response(model, response),
                        steps=steps, **kw)


class _Function(nn.Module):
    """A plain ``tensor -> tensor`` function seen as a module without parameters."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


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


def _sklearn_module(estimator, dtype, response):
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    if isinstance(estimator, (MLPClassifier, MLPRegressor)):
        return mlp_to_torch(estimator, dtype=dtype)
    if isinstance(estimator, linear_model_types()):
        return linear_to_torch(estimator, response=response, dtype=dtype)
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
            f"model: call .to({str(wanted)!r}) on it first, or leave device='auto'."
        )
