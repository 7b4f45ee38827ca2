"""MetaManifoldAutoencoder: an autoencoder trained by episodic (MLDG) meta-learning.

From "Recovering manifold representations via unsupervised meta-learning" (MRML):
each iteration takes a virtual gradient step on a meta-train batch and asks the
stepped network to reconstruct a disjoint meta-test batch chosen to mimic a shift
(:class:`~geolearn.meta_learning.EpisodicSampler`). Training runs through skorch
(:class:`MLDGNet`, the family's one training route); the episodes are its batches.
"""

import functools
import math
import numbers
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from skorch.callbacks import Callback
from torch.func import functional_call

from .._utils import (
    check_choice,
    check_hidden_sizes,
    resolve_device,
    small_ops_threads,
    to_numpy,
    to_tensor,
)
from .._utils.autoencoder import (
    CodecMixin,
    ReconstructionScoreMixin,
    check_unit_interval,
    validate_rows,
)
from .._utils.torch_estimator import NET_CONSTRAINTS
from ..models import ObjectiveNet, SkorchTrainingMixin, frozen
from ..models._internal import TensorDataset, unwrap_module
from ._episodes import STRATEGIES, EpisodicSampler
from ._modules import Autoencoder
from .metrics import knn_spectral_distance, persistence_wasserstein

#: The paper's inner step, 1e-7 for a summed loss over batches of 64 images of 64 x 64 x 3.
PAPER_INNER_STEP = 1e-7 * 64 * 12288


def reconstruction_loss(logits, x, loss="bce", reduction="sum"):
    """Binary cross-entropy (input as target) or squared error of ``sigmoid(logits)``.

    ``reduction="sum"`` sums over samples and values (the paper's ``L(S; theta)``);
    ``"mean"`` averages them.
    """
    if loss == "bce":
        return F.binary_cross_entropy_with_logits(logits, x, reduction=reduction)
    return F.mse_loss(torch.sigmoid(logits), x, reduction=reduction)


def mldg_objective(module, params, x_train, x_test, *, inner_lr, meta_test_weight,
                   first_order=False, loss_fn=reconstruction_loss, output=None):
    """The MLDG objective ``J(theta) = L(S_train; theta) + beta L(S_test; theta*)``.

    ``theta* = theta - alpha grad L(S_train; theta)`` is a virtual step: the network is
    evaluated at ``theta*`` by :func:`torch.func.functional_call`, never copied.
    Backpropagating ``J`` gives ``g + beta (I - alpha H_train) grad L(S_test; theta*)``;
    ``first_order=True`` treats ``g`` as a constant, which drops the Hessian term.

    Parameters
    ----------
    module : torch.nn.Module
    params : dict of str to torch.Tensor
        The parameters ``theta`` (leaves that require gradients).
    x_train, x_test : torch.Tensor
        The meta-train and meta-test batches; ``x_test=None`` gives the plain loss.
    inner_lr, meta_test_weight : float
        ``alpha`` and ``beta``.
    first_order : bool, default=False
    loss_fn : callable, default=reconstruction_loss
        ``loss_fn(module_output, x) -> scalar``.
    output : torch.Tensor, default=None
        The network's output on ``x_train`` at ``params``, when the caller has it
        (skorch's forward pass, which runs through a ``DistributedDataParallel``
        wrapper); None computes it.

    Returns
    -------
    J, loss_train, loss_test : torch.Tensor
        ``loss_test`` is None without ``x_test``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.meta_learning._autoencoder import mldg_objective
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 3))
    >>> x, x_test = torch.rand(4, 3), torch.rand(4, 3)
    >>> J, l_tr, l_te = mldg_objective(net, dict(net.named_parameters()), x, x_test,
    ...                                inner_lr=1e-3, meta_test_weight=0.5)
    >>> bool(torch.isclose(J, l_tr + 0.5 * l_te))
    True
    """
    if output is None:
        output = functional_call(module, params, (x_train,))
    loss_train = loss_fn(output, x_train)
    if x_test is None:
        return loss_train, loss_train, None
    # J backpropagates through loss_train again, so its graph must outlive this grad
    grads = torch.autograd.grad(loss_train, list(params.values()), retain_graph=True,
                                create_graph=not first_order)
    stepped = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
    loss_test = loss_fn(functional_call(module, stepped, (x_test,)), x_test)
    return loss_train + meta_test_weight * loss_test, loss_train, loss_test


class EpisodeLoader:
    """skorch's training iterator for episodes: each pass yields the next ``block`` of them.

    A batch is ``(x_train, x_test)``, the rows of an :class:`EpisodicSampler` draw
    (``x_test`` is empty with ``meta_test=False``: the plain autoencoder's minibatch).
    ``n_episodes`` episodes in all, spread over the epochs; ``batch_size`` is skorch's
    and unused (the sampler's sets the size).
    """

    def __init__(self, dataset, sampler, n_episodes, block, meta_test=True, batch_size=None):
        self.dataset = dataset
        self.sampler = sampler
        self.remaining = n_episodes
        self.block = block
        self.meta_test = meta_test

    def __len__(self):
        return min(self.block, self.remaining)

    def __iter__(self):
        X = self.dataset.X
        for _ in range(len(self)):
            self.remaining -= 1
            train, test = self.sampler.sample()
            yield X[train], X[test] if self.meta_test else X[:0]


class MLDGNet(ObjectiveNet):
    """A skorch net whose loss is the MLDG objective of an episode.

    The batches come from an :class:`EpisodeLoader` (``iterator_train``); an epoch is
    a block of ``log_every`` iterations, so skorch's history, callbacks (progress bar,
    checkpoints, early stopping) and ``partial_fit`` work per block. The history also
    holds the block means of ``meta_train_loss`` and ``meta_test_loss``, and
    ``iteration``, the iterations run by the end of the block. A batch is
    ``(x_train, x_test)``: skorch's forward pass on ``x_train`` gives the meta-train
    loss and :meth:`get_loss` adds the virtual step's meta-test loss, so a mixin's
    training step (skorch's ``AccelerateMixin``) trains the same objective.

    Parameters
    ----------
    module : torch.nn.Module class or instance
    inner_lr, meta_test_weight : float
        ``alpha`` and ``beta`` of :func:`mldg_objective`.
    first_order : bool, default=False
    loss : {"bce", "mse"}, default="bce"
    reduction : {"sum", "mean"}, default="sum"
    **kwargs
        Further :class:`skorch.NeuralNet` arguments.

    Examples
    --------
    :class:`MetaManifoldAutoencoder` trains through it; subclass it and set the
    estimator's ``net_class`` to change the meta-step:

    >>> from geolearn.meta_learning import MetaManifoldAutoencoder, MLDGNet
    >>> MetaManifoldAutoencoder.net_class is MLDGNet
    True
    """

    def __init__(self, module, *, inner_lr, meta_test_weight, first_order=False, loss="bce",
                 reduction="sum", **kwargs):
        super().__init__(module, objective=None, parts=("meta_train_loss", "meta_test_loss"),
                         **kwargs)
        self.inner_lr = inner_lr
        self.meta_test_weight = meta_test_weight
        self.first_order = first_order
        self.loss = loss
        self.reduction = reduction

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """``J`` of the episode ``(X, y_true) = (x_train, x_test)``; ``y_pred`` is f(x_train)."""
        x_train, x_test = (to_tensor(x, device=self.device) for x in (X, y_true))
        module = unwrap_module(self.module_)
        loss_fn = functools.partial(reconstruction_loss, loss=self.loss, reduction=self.reduction)
        J, loss_train, loss_test = mldg_objective(
            module, dict(module.named_parameters()), x_train,
            x_test if len(x_test) else None, inner_lr=self.inner_lr,
            meta_test_weight=self.meta_test_weight, first_order=self.first_order,
            loss_fn=loss_fn, output=y_pred)
        # skorch reads the loss once a batch anyway; this stops before a non-finite step
        if not math.isfinite(J.item()):
            # the history already holds this batch's (empty) record
            iteration = sum(len(row["batches"]) for row in self.history)
            raise RuntimeError(f"the MLDG loss became non-finite at iteration {iteration}; lower "
                               "inner_lr (with reduction='sum' the step grows with the batch and "
                               "the image size) or lr.")
        if training:
            self.history.record_batch("meta_train_loss", loss_train.detach())
            if loss_test is not None:
                self.history.record_batch("meta_test_loss", loss_test.detach())
        return J

    def on_epoch_end(self, net, **kwargs):
        # before the callbacks, so that they see it; counted over every row, an
        # interrupted epoch's batches included
        self.history.record("iteration", sum(len(row["batches"]) for row in self.history))
        super().on_epoch_end(net, **kwargs)


class MetaManifoldAutoencoder(SkorchTrainingMixin, CodecMixin, ReconstructionScoreMixin,
                              ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Autoencoder meta-learned to keep the data manifold's shape where samples are scarce.

    MRML ("Recovering manifold representations via unsupervised meta-learning",
    Algorithm 1): every iteration draws an episode (a meta-train batch ``S_train`` and a
    disjoint meta-test batch ``S_test``, see :class:`EpisodicSampler`), takes a virtual
    step ``theta* = theta - alpha grad L(S_train; theta)`` and updates ``theta`` by Adam on
    ``J = L(S_train; theta) + beta L(S_test; theta*)`` (second order by default).
    ``episodic_strategy=None`` trains the same network with the same loss, optimiser and
    iterations on plain uniform minibatches: the baseline to compare with. Score the
    shape of the reconstructions with :func:`geolearn.meta_learning.metrics.persistence_wasserstein`
    and :func:`~geolearn.meta_learning.metrics.knn_spectral_distance`, on a neighbourhood
    held out by :class:`NeighborhoodHoldout`.

    Parameters
    ----------
    image_shape : tuple of int, default=None
        ``(C, H, W)`` (or ``(H, W)``) of flat rows (C-order); images can also be given as
        ``(n, C, H, W)`` arrays.
    n_latent : int, default=10
    architecture : {"auto", "conv", "mlp"}, default="auto"
        "conv": 4x4 stride-2 convs (``conv_channels``, ReLU), then fully connected layers
        ``hidden_layer_sizes`` and ``n_latent``; the decoder mirrors it, with a sigmoid output.
        H and W must be divisible by ``2 ** len(conv_channels)``. "mlp": the fully
        connected layers only. "auto": "conv" for images whose sides allow it, else "mlp".
    conv_channels : sequence of int, default=(32, 32, 64, 64)
    hidden_layer_sizes : sequence of int, default=(256, 128)
    episodic_strategy : {"neighborhood", "nearest", "random", "A", "B", "C"} or None, \
default="neighborhood"
        How meta-test batches are drawn (the paper's settings A, B, C); None trains the
        plain autoencoder.
    inner_lr : float >= 0 or "auto", default="auto"
        ``alpha``. "auto" keeps the paper's step (1e-7 for a summed loss over 64 images of
        64 x 64 x 3) for this batch size and input size:
        ``1e-7 * 64 * 12288 / (batch_size * n_features)`` with ``reduction="sum"``,
        ``1e-7 * 64 * 12288`` with ``"mean"``.
    meta_test_weight : float >= 0, default=1e-3
        ``beta``; 0 retraces the plain autoencoder exactly (same seed). The paper's 1e-3
        makes the meta-test term 0.1% of the loss: on 28 x 28 MNIST (1,000 iterations,
        three seeds) the held-out shape metrics moved by less than their spread over
        seeds (see the user guide); a larger ``beta`` is the lever to search.
    lr : float, default=1e-3
        Adam's learning rate ``gamma``.
    max_epochs : int, default=1000
        Training length, counted in episodes (one optimiser step on a meta-train and
        a meta-test batch), not in passes over ``X``.
    batch_size : int, default=64
        ``B``, the size of both batches of an episode; fitting needs ``2 B + 1`` rows.
        The baseline takes at most ``(n_samples - 1) // 2`` rows per batch. Also the
        chunk size of :meth:`transform`.
    loss : {"bce", "mse"}, default="bce"
        Binary cross-entropy with the input as target (X in [0, 1]), or squared error.
    reduction : {"sum", "mean"}, default="sum"
    first_order : bool, default=False
        Drop the Hessian term of the meta-gradient.
    log_every : int, default=50
        Iterations per history record (a skorch epoch).
    callbacks : list of skorch callbacks, default=None
        Run once per ``log_every`` iterations; e.g. :class:`ReconstructionMetrics`.
    warm_start : bool, default=False
        True: a second ``fit`` trains ``max_epochs`` more iterations on its X.
    device : str or torch.device, default="auto"
        "auto" uses CUDA when available.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the episodes.
    verbose : int, default=0
        1 prints the history per block; 2 adds a progress bar.
    **net_params
        skorch settings (``module__*``, ``optimizer__*``, ...).

    Attributes
    ----------
    net_ : MLDGNet
        The trained skorch net.
    module_ : torch.nn.Module
        The autoencoder (``encode``, ``decode`` to logits).
    sampler_ : EpisodicSampler
        The fitted sampler of the training episodes.
    history_ : skorch.history.History
        The net's training history, one row per block of ``log_every`` iterations:
        ``iteration`` (iterations run by the block's end), ``train_loss`` (``J``),
        ``meta_train_loss``, ``meta_test_loss`` (block means) and whatever callbacks
        recorded, e.g. ``history_[:, "meta_train_loss"]``.
    inner_lr_ : float
        The resolved ``alpha``.
    n_features_in_, image_shape_, architecture_, device_, n_iter_

    See Also
    --------
    NeighborhoodHoldout : cross-validation on a held-out neighbourhood.
    geolearn.meta_learning.metrics.make_manifold_scorer : GridSearchCV scorers of the shape.

    Examples
    --------
    >>> from geolearn.datasets import make_rotating_shape_images
    >>> from geolearn.meta_learning import MetaManifoldAutoencoder
    >>> X = make_rotating_shape_images(200, image_size=16, random_state=0)
    >>> ae = MetaManifoldAutoencoder(architecture="mlp", max_epochs=20, batch_size=16,
    ...                              random_state=0).fit(X)
    >>> ae.transform(X).shape, ae.reconstruct(X).shape
    ((200, 10), (200, 768))
    >>> ae.score(X) < 0
    True
    """

    _parameter_constraints = {  # noqa: RUF012
        **NET_CONSTRAINTS,
        "image_shape": ["array-like", None],
        "n_latent": [Interval(numbers.Integral, 1, None, closed="left")],
        "architecture": [StrOptions({"auto", "conv", "mlp"})],
        "conv_channels": ["array-like"],
        "episodic_strategy": [StrOptions(set(STRATEGIES)), None],
        "inner_lr": [StrOptions({"auto"}), Interval(numbers.Real, 0, None, closed="left")],
        "meta_test_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
        "loss": [StrOptions({"bce", "mse"})],
        "reduction": [StrOptions({"sum", "mean"})],
        "first_order": ["boolean"],
        "log_every": [Interval(numbers.Integral, 1, None, closed="left")],
    }

    net_class = MLDGNet

    def __init__(self, image_shape=None, n_latent=10, architecture="auto",
                 conv_channels=(32, 32, 64, 64), hidden_layer_sizes=(256, 128),
                 episodic_strategy="neighborhood", inner_lr="auto", meta_test_weight=1e-3,
                 lr=1e-3, max_epochs=1000, batch_size=64, loss="bce", reduction="sum",
                 first_order=False, log_every=50, callbacks=None, warm_start=False,
                 device="auto", random_state=None, verbose=0, **net_params):
        self.image_shape = image_shape
        self.n_latent = n_latent
        self.architecture = architecture
        self.conv_channels = conv_channels
        self.hidden_layer_sizes = hidden_layer_sizes
        self.episodic_strategy = episodic_strategy
        self.inner_lr = inner_lr
        self.meta_test_weight = meta_test_weight
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.loss = loss
        self.reduction = reduction
        self.first_order = first_order
        self.log_every = log_every
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self._set_net_params(net_params)

    # -- validation -----------------------------------------------------------------------

    def _validate_X(self, X, reset):
        X = validate_rows(self, X, reset)
        if self.loss == "bce":
            X = check_unit_interval(X, what="loss='bce'",
                                    advice="Scale X to [0, 1] (MinMaxScaler(clip=True)) or use "
                                           "loss='mse'.", clip=not reset)
        return X

    def _resolve_architecture(self):
        shape = self.image_shape_
        if self.architecture == "conv" and shape is None:
            raise ValueError("architecture='conv' needs images: (n, C, H, W) arrays or flat X "
                             "with image_shape=(C, H, W).")
        if self.architecture != "auto":
            return self.architecture
        s = 2 ** len(self.conv_channels)
        return "conv" if shape is not None and shape[1] % s == 0 and shape[2] % s == 0 else "mlp"

    def _resolve_inner_lr(self, n_features):
        if self.inner_lr != "auto":
            return float(self.inner_lr)
        scale = self.batch_size * n_features if self.reduction == "sum" else 1
        return PAPER_INNER_STEP / scale

    # -- training -------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Train the autoencoder for ``max_epochs`` episodes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)
            Values in [0, 1] with ``loss="bce"``.
        y : ignored

        Returns
        -------
        self : MetaManifoldAutoencoder
        """
        warm = self._warm()
        X = self._validate_X(X, reset=not warm)
        hidden = check_hidden_sizes(self.hidden_layer_sizes)
        channels = check_hidden_sizes(self.conv_channels, name="conv_channels")
        seed_torch, seed_episodes = check_random_state(self.random_state).randint(2**31 - 1, size=2)
        meta = self.episodic_strategy is not None
        # the baseline's minibatches are the meta-train draws of the same seed (its
        # meta-test draws are unused), so beta = 0 retraces it exactly
        sampler = EpisodicSampler(self.episodic_strategy if meta else "random",
                                  batch_size=self.batch_size if meta else min(self.batch_size,
                                                                              (len(X) - 1) // 2),
                                  random_state=seed_episodes).fit(X)
        if not warm:
            self.architecture_ = self._resolve_architecture()
            self.inner_lr_ = self._resolve_inner_lr(X.shape[1])
        module = functools.partial(
            Autoencoder, n_features=X.shape[1], n_latent=self.n_latent, hidden_layer_sizes=hidden,
            image_shape=self.image_shape_,
            conv_channels=channels if self.architecture_ == "conv" else None)
        loader = {"iterator_train": EpisodeLoader, "iterator_train__sampler": sampler,
                  "iterator_train__n_episodes": self.max_epochs,
                  "iterator_train__block": self.log_every, "iterator_train__meta_test": meta}
        if warm:
            for key, value in loader.items():
                setattr(self.net_, key, value)
        # the MLP's steps are many small ops: one thread is fastest, and holds under load;
        # the conv net's larger convolutions keep the caller's threads
        threads = (small_ops_threads(device=resolve_device(self.device))
                   if self.architecture_ == "mlp" else nullcontext())
        with threads:
            self._fit_net(module, TensorDataset(torch.from_numpy(X)), None, seed=seed_torch,
                          max_epochs=-(-self.max_epochs // self.log_every), train_split=None,
                          inner_lr=self.inner_lr_, meta_test_weight=self.meta_test_weight,
                          first_order=self.first_order, loss=self.loss,
                          reduction=self.reduction, **loader)
        self.sampler_ = sampler
        self.n_iter_ = self.history_[-1, "iteration"]
        return self

    # -- inference ------------------------------------------------------------------------

    @property
    def _n_features_out(self):
        return self.n_latent

    _codes_param = "n_latent"

    def _encode(self, X):
        return self._apply(self.module_.encode, X)

    def _decode(self, Z):
        decode = self.module_.decode
        return self._apply(lambda z: torch.sigmoid(decode(z)), Z)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags


class ReconstructionMetrics(Callback):
    """Record, once per logged block, how well the autoencoder reconstructs a fixed set.

    A skorch callback for :class:`MetaManifoldAutoencoder` (``callbacks=[...]``): at the
    end of every block of ``log_every`` iterations it reconstructs ``X`` and records
    ``"<name>_mse"`` (per-value mean squared error), ``"<name>_persistence"`` (the total
    of :func:`~geolearn.meta_learning.metrics.persistence_wasserstein`) and
    ``"<name>_spectral"`` (:func:`~geolearn.meta_learning.metrics.knn_spectral_distance`)
    in the history, so ``history_`` holds the metric curves over training.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), or images (n, C, H, W)
        In the layout the estimator is fitted on, e.g. a held-out neighbourhood.
    name : str, default="holdout"
        Prefix of the history keys.
    metrics : sequence of {"mse", "persistence", "spectral"}, \
default=("mse", "persistence", "spectral")
    n_neighbors : int, default=5
        Of the spectral distance.
    p : float, default=2
        Order of the persistence Wasserstein distance (H0 and H1).

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.meta_learning import MetaManifoldAutoencoder, ReconstructionMetrics
    >>> X = np.random.default_rng(0).random((60, 8))
    >>> ae = MetaManifoldAutoencoder(hidden_layer_sizes=(8,), max_epochs=20, log_every=10,
    ...                              batch_size=8,
    ...                              callbacks=[ReconstructionMetrics(X[:20])],
    ...                              random_state=0).fit(X)
    >>> [round(mse, 3) > 0 for mse in ae.history_[:, "holdout_mse"]]
    [True, True]
    """

    METRICS = ("mse", "persistence", "spectral")

    def __init__(self, X, name="holdout", metrics=METRICS, n_neighbors=5, p=2):
        self.X = X
        self.name = name
        self.metrics = metrics
        self.n_neighbors = n_neighbors
        self.p = p

    def initialize(self):
        for metric in self.metrics:
            check_choice(metric, "metrics", self.METRICS)
        X = np.asarray(self.X, dtype=np.float32)
        self.X_ = X.reshape(len(X), -1)
        return self

    @torch.no_grad()
    def on_epoch_end(self, net, **kwargs):
        with frozen(net.module_):
            rec = to_numpy(torch.sigmoid(net.module_(to_tensor(self.X_, device=net.device))))
        ref, rec = self.X_.astype(np.float64), rec.astype(np.float64)
        values = {
            "mse": lambda: float(np.mean((ref - rec) ** 2)),
            "persistence": lambda: persistence_wasserstein(ref, rec, p=self.p)["total"],
            "spectral": lambda: knn_spectral_distance(ref, rec, n_neighbors=self.n_neighbors),
        }
        for metric in self.metrics:
            net.history.record(f"{self.name}_{metric}", values[metric]())
