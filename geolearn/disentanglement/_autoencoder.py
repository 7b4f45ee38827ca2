"""DisentangledAttributeAutoencoder: latent blocks per attribute, kept orthogonal (DAE-OG)."""

import functools
import numbers

import numpy as np
import torch
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .._utils import check_scalar_param, resolve_device, small_ops_threads
from .._utils.autoencoder import (
    CodecMixin,
    ReconstructionScoreMixin,
    check_unit_interval,
    validate_rows,
)
from .._utils.torch_estimator import NET_CONSTRAINTS, ObjectiveTrainingMixin
from ._latent_regularizers import latent_regularization


def _fc(sizes):
    """Linear layers of ``sizes`` with ELU between them (none after the last)."""
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ELU()]
    return nn.Sequential(*layers[:-1])


class AttributeAutoencoderModule(nn.Module):
    """The DAE-OG network (the paper's Table 1): image encoder, attribute autoencoders, decoder.

    ``encode(x) -> z_e`` (``n_latent``); ``attributes(z)`` splits ``z`` into one block
    of ``n_latent / k`` per attribute and encodes block ``i`` to ``attribute_dims[i]``
    values (FC 128-64-32, ELU); ``decode_attributes(a)`` decodes them back to blocks
    (FC 32-64-128), concatenates and decodes the image; ``decode(z) = g(z)`` is both.
    Images: Conv(C->16, 4, stride 4), Conv(16->32, 2, stride 2), FC 128, FC ``n_latent``
    (ELU between), mirrored with transposed convs and a sigmoid; tabular rows: FC 128,
    FC ``n_latent``, mirrored, no output activation.
    """

    def __init__(self, n_features, n_latent, attribute_dims, image_shape=None):
        super().__init__()
        self.attribute_dims = tuple(attribute_dims)
        self.block_size = n_latent // len(self.attribute_dims)
        if image_shape is not None:
            C, H, W = image_shape
            grid = (32, H // 8, W // 8)
            flat = 32 * (H // 8) * (W // 8)
            self.encoder = nn.Sequential(
                nn.Unflatten(1, tuple(image_shape)), nn.Conv2d(C, 16, 4, stride=4), nn.ELU(),
                nn.Conv2d(16, 32, 2, stride=2), nn.ELU(), nn.Flatten(),
                nn.Linear(flat, 128), nn.ELU(), nn.Linear(128, n_latent))
            self.decoder = nn.Sequential(
                nn.Linear(n_latent, 128), nn.ELU(), nn.Linear(128, flat), nn.ELU(),
                nn.Unflatten(1, grid), nn.ConvTranspose2d(32, 16, 2, stride=2), nn.ELU(),
                nn.ConvTranspose2d(16, C, 4, stride=4), nn.Flatten(), nn.Sigmoid())
        else:
            self.encoder = _fc((n_features, 128, n_latent))
            self.decoder = _fc((n_latent, 128, n_features))
        m = self.block_size
        self.attribute_encoders = nn.ModuleList(_fc((m, 128, 64, 32, n)) for n in attribute_dims)
        self.attribute_decoders = nn.ModuleList(_fc((n, 32, 64, 128, m)) for n in attribute_dims)

    def encode(self, x):
        return self.encoder(x)

    def attributes(self, z):
        blocks = z.split(self.block_size, dim=1)
        return torch.cat([enc(b) for enc, b in zip(self.attribute_encoders, blocks)], dim=1)

    def decode_attributes(self, a):
        codes = a.split(self.attribute_dims, dim=1)
        z = torch.cat([dec(c) for dec, c in zip(self.attribute_decoders, codes)], dim=1)
        return self.decoder(z)

    def decode(self, z):
        return self.decode_attributes(self.attributes(z))

    def forward(self, x):
        z = self.encode(x)
        return self.decode(z), z


class DAEObjective:
    """``L_rec + a1(e) L_orth(e(X)) + a2(e) L_stat(X, g(N))`` (the paper's Eq. 6), per batch.

    The weights ramp linearly over the first ``anneal_epochs`` epochs:
    ``a(e) = alpha * min(1, (e + 1) / (anneal_epochs + 1))``.
    """

    def __init__(self, *, reconstruction, anneal_epochs, **regularization):
        self.reconstruction = reconstruction
        self.anneal_epochs = anneal_epochs
        self.regularization = regularization

    def __call__(self, module, y_pred, x, y, epoch=0):
        x_rec, z = y_pred
        err = x_rec - x
        rec = (err ** 2).mean() if self.reconstruction == "mse" else err.norm(dim=1).mean()
        ramp = min(1.0, (epoch + 1) / (self.anneal_epochs + 1))
        reg = dict(self.regularization)
        reg["alpha_orth"] *= ramp
        reg["alpha_graph"] *= ramp
        penalty, parts = latent_regularization(module, x, z=z, **reg)
        return rec + penalty, {"recon": rec.detach(), **parts}


class DisentangledAttributeAutoencoder(ObjectiveTrainingMixin, CodecMixin, ReconstructionScoreMixin,
                                       ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                                       BaseEstimator):
    """Autoencoder with one latent block per attribute, orthogonal blocks and a graph loss.

    DAE-OG of "Orthogonality and graph divergence losses promote disentanglement in
    generative models": the code ``z_e`` of an image is split into ``k`` blocks, block
    ``i`` is compressed by its own attribute autoencoder to ``attribute_dims[i]`` values
    (the attribute code), and the training loss is
    ``L_rec + alpha_orth mean L_orth(z_e) + alpha_graph L_stat(X, g(N))``: the
    :class:`OrthogonalityLoss` of the blocks of each code, and the smoothed 1-NN
    :class:`GraphDivergenceLoss` between the data and images decoded from Gaussian
    draws ``N ~ N(0, I)``, which makes the decoder ``g`` an implicit generative model.
    ``alpha_orth=0`` is the paper's DAE-G; both zero is a plain autoencoder.

    Parameters
    ----------
    image_shape : tuple of int or None, default=(3, 64, 64)
        ``(C, H, W)`` of flat rows (C-order), H and W divisible by 8; images may also be
        given as ``(n, C, H, W)``. None: tabular rows (fully connected, no sigmoid).
    n_latent : int, default=96
        Width of ``z_e``, divisible by ``len(attribute_dims)``.
    attribute_dims : sequence of int, default=(6, 9, 5)
        Size of each attribute's code (the paper: its number of values).
    alpha_orth, alpha_graph : float, default=0.1
    graph_lambda : float, default=0.1
        Temperature of the graph statistic.
    graph_distance_scale : {None, "median"}, default=None
        "median": distances relative to the batch's median pooled distance.
    graph_space : {"data", "latent"}, default="data"
        Compare ``X`` with ``g(N)`` (Eq. 6), or ``z_e`` with ``N``.
    orth_norm : {"fro", "fro_squared", "spectral"}, default="fro"
    reconstruction : {"mse", "l2"}, default="l2"
        The mean per-image L2 norm ``||x - x_rec||_2`` (the paper's Eq. 6), or the
        per-value mean squared error. The weights ``alpha_orth`` and ``alpha_graph`` are
        relative to this term: the per-value MSE is about ``||x - x_rec||_2^2 /
        n_features``, hundreds of times smaller on images, so with "mse" the paper's
        weights let the graph loss override the reconstruction (MSE 0.015 -> 0.075 on
        32 x 32 scenes); scale the weights down by about that factor with "mse".
    anneal_epochs : int, default=None
        Epochs over which both weights ramp up linearly; None: ``max_epochs // 10``.
    transform_output : {"attributes", "latent"}, default="attributes"
        :meth:`transform` gives the attribute codes or ``z_e``.
    max_epochs : int, default=1000
    batch_size : int, default=64
    lr : float, default=3e-4
        Adam's learning rate.
    callbacks : list of skorch callbacks, default=None
    warm_start : bool, default=False
    device : str or torch.device, default="auto"
    random_state : int, RandomState instance or None, default=None
        Seeds the weights, the batches and the Gaussian draws.
    verbose : int, default=0
    **net_params
        skorch settings (``module__*``, ``optimizer__*``, ...).

    Attributes
    ----------
    net_ : geolearn.models.ObjectiveNet
    module_ : AttributeAutoencoderModule
    history_ : skorch.history.History
        The net's training history, one row per epoch: ``train_loss``, ``recon`` and,
        when their weights are positive, ``orth`` (``L_orth``) and ``stat`` (``L_stat``),
        e.g. ``history_[:, "orth"]``.
    block_size_ : int
        ``n_latent / len(attribute_dims)``.
    n_features_in_, image_shape_, device_, n_iter_

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement import DisentangledAttributeAutoencoder
    >>> X = np.random.default_rng(0).random((64, 3 * 16 * 16))
    >>> dae = DisentangledAttributeAutoencoder(image_shape=(3, 16, 16), n_latent=12,
    ...                                        attribute_dims=(2, 3), max_epochs=2,
    ...                                        batch_size=16, random_state=0).fit(X)
    >>> dae.transform(X).shape, dae.sample(4, random_state=0).shape
    ((64, 5), (4, 768))
    >>> dae.traverse(X[0], attribute=1, values=[-1, 0, 1]).shape
    (3, 3, 768)
    """

    _parameter_constraints = {  # noqa: RUF012
        **{k: v for k, v in NET_CONSTRAINTS.items() if k != "hidden_layer_sizes"},
        "image_shape": ["array-like", None],
        "n_latent": [Interval(numbers.Integral, 1, None, closed="left")],
        "attribute_dims": ["array-like"],
        "alpha_orth": [Interval(numbers.Real, 0, None, closed="left")],
        "alpha_graph": [Interval(numbers.Real, 0, None, closed="left")],
        "graph_lambda": [Interval(numbers.Real, 0, None, closed="neither")],
        "graph_distance_scale": [StrOptions({"median"}), None],
        "graph_space": [StrOptions({"data", "latent"})],
        "orth_norm": [StrOptions({"fro", "fro_squared", "spectral"})],
        "reconstruction": [StrOptions({"mse", "l2"})],
        "anneal_epochs": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "transform_output": [StrOptions({"attributes", "latent"})],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    def __init__(self, image_shape=(3, 64, 64), n_latent=96, attribute_dims=(6, 9, 5),
                 alpha_orth=0.1, alpha_graph=0.1, graph_lambda=0.1, graph_distance_scale=None,
                 graph_space="data", orth_norm="fro", reconstruction="l2", anneal_epochs=None,
                 transform_output="attributes", max_epochs=1000, batch_size=64, lr=3e-4,
                 callbacks=None, warm_start=False, device="auto", random_state=None, verbose=0,
                 **net_params):
        self.image_shape = image_shape
        self.n_latent = n_latent
        self.attribute_dims = attribute_dims
        self.alpha_orth = alpha_orth
        self.alpha_graph = alpha_graph
        self.graph_lambda = graph_lambda
        self.graph_distance_scale = graph_distance_scale
        self.graph_space = graph_space
        self.orth_norm = orth_norm
        self.reconstruction = reconstruction
        self.anneal_epochs = anneal_epochs
        self.transform_output = transform_output
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    # -- validation -----------------------------------------------------------------------

    def _validate_X(self, X, reset):
        X = validate_rows(self, X, reset)
        if self.image_shape_ is not None:
            X = check_unit_interval(X, what="the sigmoid decoder",
                                    advice="Scale X to [0, 1] (MinMaxScaler(clip=True)).",
                                    clip=not reset)
        return X

    def _check_architecture(self):
        dims = tuple(self.attribute_dims)
        for d in dims:
            check_scalar_param(d, "attribute_dims entries", kind="integer", low=1)
        if self.n_latent % len(dims):
            raise ValueError(f"n_latent={self.n_latent} must be divisible by the number of "
                             f"attributes, len(attribute_dims)={len(dims)}.")
        shape = self.image_shape_
        if shape is not None and (shape[1] % 8 or shape[2] % 8):
            raise ValueError(f"image_shape={shape} needs H and W divisible by 8 (the encoder's "
                             "strides 4 and 2).")
        if self.alpha_graph > 0 and self.batch_size < 2:
            raise ValueError("the graph loss needs batch_size >= 2 (two points per sample); got "
                             f"batch_size={self.batch_size}.")
        return dims

    # -- training -------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train on the paper's Eq. 6 for ``max_epochs`` epochs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)
            Values in [0, 1] for images.
        y : ignored

        Returns
        -------
        self : DisentangledAttributeAutoencoder
        """
        X = self._validate_X(X, reset=not self._warm())
        dims = self._check_architecture()
        self.block_size_ = self.n_latent // len(dims)
        anneal = self.max_epochs // 10 if self.anneal_epochs is None else self.anneal_epochs
        objective = DAEObjective(
            reconstruction=self.reconstruction, anneal_epochs=anneal,
            alpha_orth=self.alpha_orth, alpha_graph=self.alpha_graph, n_blocks=len(dims),
            graph_lambda=self.graph_lambda, graph_distance_scale=self.graph_distance_scale,
            orth_norm=self.orth_norm, graph_space=self.graph_space,
            output_activation="identity")  # the module applies its own sigmoid
        parts = ("recon", *(["orth"] if self.alpha_orth else []),
                 *(["stat"] if self.alpha_graph else []))
        module = functools.partial(AttributeAutoencoderModule, n_features=X.shape[1],
                                   n_latent=self.n_latent, attribute_dims=dims,
                                   image_shape=self.image_shape_)
        batch = min(self.batch_size, len(X))
        # the networks are small (16 and 32 conv channels) whatever their parameter count:
        # one thread holds under load, where two threads on a busy 2-core machine made an
        # epoch 6-12x slower
        with small_ops_threads(device=resolve_device(self.device)):
            self._train(module, objective, torch.from_numpy(np.ascontiguousarray(X)),
                        seed=self.random_state, max_epochs=self.max_epochs, parts=parts,
                        # a last batch of one row has no graph statistic
                        iterator_train__drop_last=len(X) % batch == 1)
        self.n_iter_ = len(self.history_)
        return self

    # -- inference ------------------------------------------------------------------------

    @property
    def _n_features_out(self):
        return (sum(self.attribute_dims) if self.transform_output == "attributes"
                else self.n_latent)

    @property
    def _codes_param(self):
        return "transform_output"

    def _encode(self, X):
        m = self.module_
        if self.transform_output == "latent":
            return self._apply(m.encode, X)
        return self._apply(lambda x: m.attributes(m.encode(x)), X)

    def _decode(self, codes):
        m = self.module_
        return self._apply(m.decode if self.transform_output == "latent" else m.decode_attributes,
                           codes)

    def sample(self, n_samples=1, random_state=None):
        """``g(N)`` for ``N ~ N(0, I_n_latent)``: the implicit generative model.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, RandomState instance or None, default=None

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        N = check_random_state(random_state).standard_normal((n_samples, self.n_latent))
        return self._apply(self.module_.decode, N.astype(np.float32))

    def block_cosines(self, X):
        """Mean absolute cosine between the latent blocks of ``e(X)``, block by block.

        The quantity the orthogonality loss drives to zero: ``C[i, j]`` is the mean over
        the rows of ``|cos(z^i, z^j)|`` (1 on the diagonal).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)

        Returns
        -------
        C : ndarray of shape (n_attributes, n_attributes)
        """
        check_is_fitted(self)
        Z = self._apply(self.module_.encode, self._validate_X(X, reset=False))
        blocks = Z.reshape(len(Z), -1, self.block_size_)
        norms = np.linalg.norm(blocks, axis=2, keepdims=True)
        unit = blocks / np.maximum(norms, 1e-8)
        return np.abs(np.einsum("nim,njm->nij", unit, unit)).mean(axis=0)

    def traverse(self, x, attribute, values):
        """Decode ``x`` with one attribute's code moved, one coordinate at a time.

        Parameters
        ----------
        x : array-like of shape (n_features,) or one image (C, H, W)
        attribute : int
            Index into ``attribute_dims``.
        values : sequence of float
            Values given to each coordinate of the attribute's code in turn.

        Returns
        -------
        images : ndarray of shape (attribute_dims[attribute], len(values), n_features)
        """
        check_is_fitted(self)
        dims = tuple(self.attribute_dims)
        if not (isinstance(attribute, numbers.Integral) and 0 <= attribute < len(dims)):
            raise ValueError(f"attribute must be an index into attribute_dims (0 to "
                             f"{len(dims) - 1}); got {attribute!r}.")
        values = np.asarray(values, dtype=np.float32).ravel()
        X = self._validate_X(np.asarray(x)[None], reset=False)
        m = self.module_
        code = self._apply(lambda t: m.attributes(m.encode(t)), X)[0]
        start = sum(dims[:attribute])
        grid = np.repeat(code[None, None], dims[attribute], 0).repeat(len(values), 1)
        for c in range(dims[attribute]):
            grid[c, :, start + c] = values
        out = self._apply(m.decode_attributes, grid.reshape(-1, len(code)).astype(np.float32))
        return out.reshape(dims[attribute], len(values), -1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False  # every draw comes from random_state
        return tags
