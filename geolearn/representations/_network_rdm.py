"""RDMs of network layers: hooked activations of any model, one RDM per layer.

Layers are read through :func:`geolearn.models.as_model` (forward hooks, one pass for many
layers that stops at the last of them), in eval mode without gradients, and every submodule's
mode is restored after.
"""

import zlib
from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.random_projection import SparseRandomProjection
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import check_model_inputs, iter_batches, progress_bar, to_numpy
from ..models import as_model
from ._rdm import METRICS, compute_rdm
from ._rdm_compare import compare_rdms

# the layers NetworkRDM reads by default (Net2Brain reads every convolution)
_DEFAULT_LAYER_TYPES = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear)


def default_layers(adapter):
    """Names of every ``Conv1d``/``Conv2d``/``Conv3d`` and ``Linear`` submodule, in order."""
    adapter.require_gradients("reading layers")
    return [name for name, sub in adapter.module.named_modules()
            if name and isinstance(sub, _DEFAULT_LAYER_TYPES)]


def check_layer_names(adapter, layers, name="layers"):
    """Validate submodule names of an adapted model; an unknown one lists the available ones."""
    available = adapter.layer_names
    for layer in layers:
        if not isinstance(layer, str) or layer not in available:
            raise ValueError(
                f"{name} contains {layer!r}, which is not a submodule of {adapter.name}; "
                f"available layers (named_modules()): {available}.")
    return list(layers)


class _Projector:
    """A seeded sparse random projection applied batch by batch (memory ``O(m k)``)."""

    def __init__(self, n_components, seed):
        self.n_components, self.seed, self.srp = n_components, seed, None

    def __call__(self, F):
        if self.n_components is None or F.shape[1] <= self.n_components:
            return F
        if self.srp is None:
            # the projection depends only on the feature count, fitted once per layer
            self.srp = SparseRandomProjection(self.n_components, random_state=self.seed)
            self.srp.fit(np.zeros((1, F.shape[1]), dtype=F.dtype))
        return np.asarray(self.srp.transform(F), dtype=np.float32)


def layer_features(adapter, X, layer, *, batch_size=64, max_features=None, seed=None):
    """Flattened float32 activations of ``layer`` for ``X`` (model frozen, no gradients).

    Parameters
    ----------
    adapter : ModelAdapter
    X : ndarray of shape (m, ...)
        Model inputs.
    layer : str
    batch_size : int, default=64
    max_features : int, optional
        Project layers wider than this to ``max_features`` dimensions with a
        :class:`~sklearn.random_projection.SparseRandomProjection` seeded by ``seed``.
    seed : int, optional

    Returns
    -------
    features : ndarray of shape (m, n_features), float32
    n_features : int
        The layer's width before any projection.
    """
    (_, F, width), = layers_features(adapter, X, [layer], batch_size=batch_size,
                                     max_features=max_features, seeds={layer: seed})
    return F, width


# the features of the layers read in one pass take at most this many bytes (or one layer's)
_GROUP_BYTES = 2**30


def layers_features(adapter, X, layers, *, batch_size=64, max_features=None, seeds=None):
    """``(layer, features, n_features)`` as :func:`layer_features` gives, for many layers.

    Layers are read together, one forward pass per batch for a group of
    consecutive layers whose features take at most 1 GiB (a wider layer alone),
    instead of a pass per layer: eight blocks of a ResNet cost one pass, not
    eight partial ones. A generator: each group's features are given before the
    next group is read, so a consumer holds one group at a time.
    """
    seeds = seeds or {}
    with adapter.frozen(), torch.no_grad():
        # each layer's width from one sample, to group the layers
        sizes = {name: F[0].numel() for name, F in
                 adapter.layers_fn(layers)(adapter.to_tensor(X[:1])).items()}
    for group in _groups(layers, sizes, max_features, len(X)):
        projectors = {layer: _Projector(max_features, seeds.get(layer)) for layer in group}
        out = {layer: [] for layer in group}
        f = adapter.layers_fn(group)
        with adapter.frozen(), torch.no_grad():
            for sl in iter_batches(len(X), batch_size):
                for layer, F in f(adapter.to_tensor(X[sl])).items():
                    F = to_numpy(F.reshape(len(F), -1)).astype(np.float32, copy=False)
                    out[layer].append(projectors[layer](F))
        for layer in group:
            yield layer, np.concatenate(out.pop(layer)), sizes[layer]


def _groups(layers, sizes, max_features, n):
    """``layers`` in consecutive groups whose float32 features for ``n`` samples fit
    ``_GROUP_BYTES`` (a layer wider than that forms a group of its own)."""
    group, used = [], 0
    for layer in layers:
        width = sizes[layer] if max_features is None else min(sizes[layer], max_features)
        need = 4 * n * width
        if group and used + need > _GROUP_BYTES:
            yield group
            group, used = [], 0
        group.append(layer)
        used += need
    if group:
        yield group


def layer_rdm(adapter, X, layer, *, metric="correlation", batch_size=64, max_features=None,
              seed=None):
    """The float64 RDM of ``layer``'s activations for ``X`` and the layer's width."""
    F, width = layer_features(adapter, X, layer, batch_size=batch_size,
                              max_features=max_features, seed=seed)
    return _rdm(F, metric, layer), width


def _rdm(F, metric, layer):
    try:
        return compute_rdm(F, metric)
    except ValueError as exc:
        raise ValueError(f"layer {layer!r}: {exc}") from None


class NetworkRDM(BaseEstimator):
    """RDMs of a network's layers for a fixed stimulus set.

    Each named layer is hooked, the stimuli are run through the model in
    batches in eval mode without gradients (every submodule's train/eval mode
    is restored afterwards), each stimulus's layer output is flattened, and the
    RDM of those rows is computed with :func:`compute_rdm` in float64. This is
    how the paper turns ImageNet networks into RDMs to rank them against the
    brain (its Table 2 and Figs. 6-7).

    Parameters
    ----------
    module : torch.nn.Module or fitted skorch net
        Seen through :func:`geolearn.models.as_model` (a skorch net gives its
        ``module_``); never trained or moved.
    layers : list of str, optional
        Names from ``module.named_modules()``; a single string is one layer.
        ``None``: every ``Conv1d``/``Conv2d``/``Conv3d`` and ``Linear`` submodule.
    image_shape : tuple of int, optional
        ``(H, W)`` or ``(C, H, W)`` to fold flat rows ``(m, C*H*W)`` into images;
        ``None`` passes ``X`` to the model as it is (4-D images, or flat rows for
        an MLP).
    metric : str, default="correlation"
        Any metric of :func:`compute_rdm`.
    batch_size : int, default=64
        Stimuli per forward pass (the RDMs do not depend on it).
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.
    max_features : int, optional
        Layers with more features are first projected to ``max_features``
        dimensions with a seeded :class:`~sklearn.random_projection.SparseRandomProjection`
        (inner products preserved up to the Johnson-Lindenstrauss error), batch by
        batch, so memory stays ``O(m * max_features)``.
    random_state : int, RandomState instance or None
        Seeds the projections; a layer's projection depends only on it and the
        layer's name.
    verbose : int, default=0
        ``> 0`` shows a progress bar over the layers.

    Attributes
    ----------
    rdms_ : dict of str to ndarray of shape (m, m)
        Float64 RDM of every layer.
    layer_names_ : list of str
        The layers read, in order.
    n_features_per_layer_ : dict of str to int
        Width of each layer's flattened output (before any projection).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import NetworkRDM, categorical_rdm
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    >>> X = np.random.default_rng(0).normal(size=(6, 4))
    >>> est = NetworkRDM(net).fit(X)
    >>> est.layer_names_, est.rdms_["2"].shape, est.n_features_per_layer_
    (['0', '2'], (6, 6), {'0': 8, '2': 3})
    >>> name, r = est.best_layer(categorical_rdm([0, 0, 0, 1, 1, 1]))
    >>> name in est.layer_names_
    True
    """

    _expected_failed_checks = {
        "check_estimators_overwrite_params": (
            "joblib.hash of a torch.nn.Module differs from that of its deepcopy (tensor "
            "pickling), so the check fails before fit runs; a unit test checks that fit leaves "
            "the model's parameters and train/eval modes unchanged"
        ),
    }

    _parameter_constraints = {
        "module": "no_validation",  # as_model reads it, with its own error
        "layers": [list, tuple, str, None],
        "image_shape": ["array-like", tuple, None],
        "metric": [StrOptions(set(METRICS))],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": [str, torch.device, None],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, module, layers=None, image_shape=None, metric="correlation", batch_size=64,
                 device="auto", max_features=None, random_state=None, verbose=0):
        self.module = module
        self.layers = layers
        self.image_shape = image_shape
        self.metric = metric
        self.batch_size = batch_size
        self.device = device
        self.max_features = max_features
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the RDM of every layer for the stimuli ``X``.

        Parameters
        ----------
        X : array-like of shape (m, ...)
            At least 3 stimuli: flat rows (folded with ``image_shape`` when given)
            or images ``(m, C, H, W)``.
        y : None
            Ignored.

        Returns
        -------
        self : NetworkRDM
        """
        X = validate_data(self, X, dtype=np.float32, allow_nd=True, ensure_min_samples=3)
        X = check_model_inputs(X, self.image_shape, min_samples=3)
        adapter = as_model(self.module, device=self.device, batch_size=self.batch_size)
        adapter.require_gradients("NetworkRDM (it hooks layers)")
        if self.layers is None:
            layers = default_layers(adapter)
            if not layers:
                raise ValueError(
                    f"layers=None reads every Conv1d/Conv2d/Conv3d and Linear module, but "
                    f"{adapter.name} has none: pass layers= names from {adapter.layer_names}.")
        else:
            layers = [self.layers] if isinstance(self.layers, str) else list(self.layers)
            if not layers:
                raise ValueError("layers must name at least one layer, or be None.")
            check_layer_names(adapter, layers)
        base = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        seeds = {layer: int(np.random.SeedSequence([base, zlib.crc32(layer.encode())])
                            .generate_state(1)[0]) for layer in layers}
        features = layers_features(adapter, X, layers, batch_size=self.batch_size,
                                   max_features=self.max_features, seeds=seeds)
        rdms, widths = {}, {}
        for layer, F, width in progress_bar(features, desc="NetworkRDM", unit="layer",
                                            total=len(layers), verbose=self.verbose):
            rdms[layer], widths[layer] = _rdm(F, self.metric, layer), width
        self.rdms_ = rdms
        self.layer_names_ = layers
        self.n_features_per_layer_ = widths
        return self

    def compare(self, target_rdm, method="pearson"):
        """Similarity of every layer's RDM to ``target_rdm`` (see :func:`compare_rdms`).

        Parameters
        ----------
        target_rdm : array-like of shape (m, m) or (m(m-1)/2,)
            An RDM of the same stimuli in the same order (NaN pairs are masked).
        method : str, default="pearson"
            Any method of :func:`compare_rdms`.

        Returns
        -------
        similarities : dict of str to float
            In the order of ``layer_names_``.
        """
        check_is_fitted(self)
        return {layer: float(compare_rdms(self.rdms_[layer], target_rdm, method))
                for layer in self.layer_names_}

    def best_layer(self, target_rdm, method="pearson"):
        """The layer whose RDM is most similar to ``target_rdm``, and its similarity.

        Parameters
        ----------
        target_rdm : array-like of shape (m, m) or (m(m-1)/2,)
        method : str, default="pearson"

        Returns
        -------
        layer : str
            The first such layer in ``layer_names_`` on ties.
        similarity : float
        """
        scores = self.compare(target_rdm, method)
        layer = max(scores, key=scores.get)
        return layer, scores[layer]
