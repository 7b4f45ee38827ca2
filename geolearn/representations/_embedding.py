"""Embeddings of trained torch networks, and their Fourier spectra (the paper's Sec. 6 baseline)."""

from numbers import Integral

import numpy as np
import torch
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_model_inputs, fitted_on_success, iter_batches, preserved_dtype, to_numpy
from ..models import as_model
from ..models._internal import LayerNotReachedError


def final_linear(adapter):
    """The last ``nn.Linear`` registered in an adapted model (its classification head)."""
    adapter.require_gradients("the final linear layer")
    linears = [m for m in adapter.module.modules() if isinstance(m, torch.nn.Linear)]
    if not linears:
        raise ValueError(
            f"{adapter.name} has no torch.nn.Linear layer, so its penultimate embedding (the "
            f"input of the final linear classifier) is undefined: pass layer= one of "
            f"{adapter.layer_names}."
        )
    return linears[-1]


def embedding_fn(adapter, layer=None):
    """A torch callable ``x -> (n, d)`` embedding: the final linear's input, or ``layer``'s output.

    The forward pass stops at the embedding, so the layers after it cost nothing.
    """
    if layer is not None:
        f = adapter.feature_fn(layer)
        return lambda x: f(x).flatten(1)
    head = final_linear(adapter)
    if head is adapter.module:  # the model is one nn.Linear: its input is x
        return lambda x: x.flatten(1)
    # the adapter reads the head's input (a forward pre-hook acting only for this call, so one
    # model can be embedded from several threads at once) and stops the pass there
    read = adapter.feature_fn(lambda module: head, input=True)

    def f(x):
        try:
            return read(x).flatten(1)
        except LayerNotReachedError:
            raise RuntimeError(f"the forward pass of {adapter.name} never reached its final "
                               "nn.Linear; pass layer= explicitly.") from None

    return f


def embed(adapter, X, layer=None, batch_size=256):
    """Embeddings of ``X`` (see :func:`embedding_fn`) as float64, batched, the model frozen."""
    f = embedding_fn(adapter, layer)
    out = []
    with adapter.frozen(), torch.no_grad():
        for sl in iter_batches(len(X), batch_size):
            out.append(to_numpy(f(adapter.to_tensor(X[sl]))).astype(np.float64))
    return np.concatenate(out)


class TorchEmbedder(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Penultimate-layer (or any layer's) embeddings of a trained torch network.

    The default embedding is the input of the model's final ``nn.Linear``
    (the penultimate layer of the linear-mapping paper), read by a forward
    pre-hook; ``layer`` names any submodule whose flattened output to use.
    The model is evaluated in eval mode without gradients and never trained:
    :meth:`fit` only validates inputs and records the embedding dimension.

    Parameters
    ----------
    model : torch.nn.Module or fitted skorch net
        Seen through :func:`geolearn.models.as_model`. ``clone`` re-creates an
        unfitted skorch net, so pass ``net.module_`` when the embedder will be
        cloned (Pipeline refits, GridSearchCV).
    layer : str, optional
        A submodule name (see ``as_model(model).layer_names``); ``None``: the
        input of the final ``nn.Linear``.
    image_shape : tuple of int, optional
        ``(C, H, W)`` to fold flat rows into images before the forward pass;
        ``None`` passes ``X`` to the model as it is.
    batch_size : int, default=256
        Samples per forward pass.
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Attributes
    ----------
    n_features_in_ : int
        ``X.shape[1]`` seen in :meth:`fit`.
    input_shape_ : tuple of int
        Shape of one sample as fed to the model.
    embedding_dim_ : int
        Dimension ``d`` of the embeddings.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import TorchEmbedder
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    >>> X = np.random.default_rng(0).random((5, 4))
    >>> emb = TorchEmbedder(net).fit(X)
    >>> emb.embedding_dim_, emb.transform(X).shape
    (8, (5, 8))
    """

    _expected_failed_checks = {
        "check_estimators_overwrite_params": (
            "joblib.hash of a torch.nn.Module differs from that of its deepcopy (tensor "
            "pickling), so the check fails before fit runs; a unit test checks that fit and "
            "transform leave the model's parameters and train/eval modes unchanged"
        ),
    }

    _parameter_constraints = {
        "model": "no_validation",  # as_model reads it, with its own error
        "layer": [str, None],
        "image_shape": ["array-like", tuple, None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": [str, torch.device, None],
    }

    def __init__(self, model, layer=None, image_shape=None, batch_size=256, device="auto"):
        self.model = model
        self.layer = layer
        self.image_shape = image_shape
        self.batch_size = batch_size
        self.device = device

    def _adapter(self):
        return as_model(self.model, device=self.device, batch_size=self.batch_size)

    def _embed(self, X):
        return embed(self._adapter(), X, self.layer, self.batch_size)

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate ``X`` and the model, and record the embedding dimension.

        Parameters
        ----------
        X : array-like of shape (n, ...)
            Model inputs (flat rows are folded with ``image_shape``).
        y : None
            Ignored.

        Returns
        -------
        self : TorchEmbedder
        """
        X = validate_data(self, X, dtype=np.float32, allow_nd=True)
        X = check_model_inputs(X, self.image_shape)
        self.input_shape_ = X.shape[1:]
        self.embedding_dim_ = self._embed(X[:1]).shape[1]
        return self

    @property
    def _n_features_out(self):
        return self.embedding_dim_

    def transform(self, X):
        """Embeddings of ``X``.

        Parameters
        ----------
        X : array-like of shape (n, ...)

        Returns
        -------
        E : ndarray of shape (n, ``embedding_dim_``)
            float32 for float32 ``X`` (the model computes in float32), else float64.
        """
        check_is_fitted(self)
        dtype = preserved_dtype(X)
        X = validate_data(self, X, dtype=np.float32, allow_nd=True, reset=False)
        X = check_model_inputs(X, self.image_shape)
        if X.shape[1:] != self.input_shape_:
            raise ValueError(
                f"X holds samples of shape {X.shape[1:]} but the embedder was fitted on "
                f"{self.input_shape_}."
            )
        return self._embed(X).astype(dtype, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class FourierEmbedding(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Magnitude or phase of each embedding's 1-D discrete Fourier transform.

    The baseline of Sec. 6 of the linear-mapping paper (after Harder et al.,
    2021): ``|DFT(z)|`` or ``angle(DFT(z))`` of every row, full length (the
    dimension stays ``d``). Stateless: :meth:`fit` only validates.

    Parameters
    ----------
    part : {"magnitude", "phase"}, default="magnitude"

    Attributes
    ----------
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import FourierEmbedding
    >>> FourierEmbedding().fit_transform(np.array([[1.0, 1.0, 1.0, 1.0]]))
    array([[4., 0., 0., 0.]])
    """

    _parameter_constraints = {"part": [StrOptions({"magnitude", "phase"})]}

    def __init__(self, part="magnitude"):
        self.part = part

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate ``X``.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : None
            Ignored.

        Returns
        -------
        self : FourierEmbedding
        """
        validate_data(self, X)
        return self

    @property
    def _n_features_out(self):
        return self.n_features_in_

    def transform(self, X):
        """Fourier magnitude or phase spectrum of each row.

        Parameters
        ----------
        X : array-like of shape (n, d)

        Returns
        -------
        S : ndarray of shape (n, d), float32 for float32 ``X``, else float64
        """
        dtype = preserved_dtype(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        spectrum = np.fft.fft(X, axis=1)
        S = np.abs(spectrum) if self.part == "magnitude" else np.angle(spectrum)
        return S.astype(dtype, copy=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.requires_fit = False
        return tags
