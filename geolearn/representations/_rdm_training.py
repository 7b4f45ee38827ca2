"""RDM-regularised training: a differentiable RDM, its loss, and a skorch classifier using it.

The regulariser of "Learning from brains how to regularize machines", which "Exploring fMRI
RDMs" proposes for its brain RDMs: the task loss plus ``rdm_weight`` times a dissimilarity
between a hidden layer's RDM and a reference RDM, both on a random subset of reference stimuli.
"""

import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array
from skorch import NeuralNetClassifier
from skorch.callbacks import PassthroughScoring

from .._utils import check_choice, check_scalar_param
from ..models import SkorchClassifierMixin, as_model
from ..models._internal import (
    FLOAT32_WEIGHTS_REASON,
    WeightedLossNetMixin,
    floats_in_history,
    unwrap_module,
)
from ._rdm import check_rdm

RDM_LOSSES = ("pearson", "atanh_mse")


def differentiable_rdm(features, eps=1e-8):
    """Correlation-distance RDM of a batch of activations, differentiable in torch.

    ``R[i, j] = 1 - <z_i, z_j>`` with ``z = (v - mean(v)) / (||v - mean(v)|| + eps)``
    for each flattened row ``v``: the paper's psi (its eq. 2) in the
    activations' dtype. The ``eps`` keeps the gradient finite for a stimulus
    whose activations are all equal (its row of ``R`` is then 1).

    Parameters
    ----------
    features : torch.Tensor of shape (b, ...)
        One stimulus per row; flattened per row.
    eps : float, default=1e-8

    Returns
    -------
    rdm : torch.Tensor of shape (b, b)
        Symmetric, zero diagonal.

    Examples
    --------
    >>> import torch
    >>> from geolearn.representations import differentiable_rdm
    >>> x = torch.tensor([[1.0, 2, 3], [2, 4, 6], [3, 2, 1]])
    >>> differentiable_rdm(x).round(decimals=4)
    tensor([[0., 0., 2.],
            [0., 0., 2.],
            [2., 2., 0.]])
    """
    F = features.reshape(len(features), -1)
    Z = F - F.mean(1, keepdim=True)
    Z = Z / (torch.linalg.vector_norm(Z, dim=1, keepdim=True) + eps)
    off = 1 - torch.eye(len(F), dtype=F.dtype, device=F.device)
    return (1 - Z @ Z.T) * off


class RDMLoss(torch.nn.Module):
    """Dissimilarity between the RDM of a batch of activations and a target RDM.

    - ``"pearson"``: ``1 - pearson(r_model, r_target)`` of the condensed RDMs
      (strict upper triangles), in [0, 2]; invariant to the scale of the target.
    - ``"atanh_mse"``: with similarities ``s = 1 - r`` clamped to
      ``[-1 + clamp, 1 - clamp]``, ``mean((atanh(s_model) - atanh(s_target))^2)``
      (the form of "Learning from brains how to regularize machines"; its per-layer
      weighting and response denoising are not reproduced). Weak with 0/1
      categorical targets, whose similarities the clamp saturates.

    The model RDM is :func:`differentiable_rdm` (correlation distance) in the
    activations' dtype.

    Parameters
    ----------
    method : {"pearson", "atanh_mse"}, default="pearson"
    eps : float, default=1e-8
        Added to the row norms of :func:`differentiable_rdm` and to the product
        of norms in the Pearson correlation (a constant RDM then correlates 0).
    clamp : float, default=1e-4
        Margin of the ``atanh`` clamp.

    Examples
    --------
    >>> import torch
    >>> from geolearn.representations import RDMLoss, categorical_rdm
    >>> feats = torch.tensor([[1.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 1, 0]])
    >>> target = torch.as_tensor(categorical_rdm([0, 0, 1, 1]))
    >>> abs(float(RDMLoss()(feats, target))) < 1e-6  # the layer RDM is 1.5 * target
    True
    >>> round(float(RDMLoss()(feats, torch.as_tensor(categorical_rdm([0, 1, 0, 1])))), 4)
    1.5
    """

    def __init__(self, method="pearson", eps=1e-8, clamp=1e-4):
        super().__init__()
        self.method = check_choice(method, "method", RDM_LOSSES)
        self.eps = check_scalar_param(eps, "eps", low=0)
        self.clamp = check_scalar_param(clamp, "clamp", low=0, high=1, closed="neither")

    def forward(self, features, target_rdm):
        """The loss, a scalar tensor.

        Parameters
        ----------
        features : torch.Tensor of shape (b, ...)
        target_rdm : torch.Tensor or array-like of shape (b, b)

        Returns
        -------
        loss : torch.Tensor of shape ()
        """
        b = len(features)
        target = torch.as_tensor(target_rdm, dtype=features.dtype, device=features.device)
        if target.shape != (b, b):
            raise ValueError(f"target_rdm must have shape ({b}, {b}) for {b} feature rows; got "
                             f"{tuple(target.shape)}.")
        if b < 2:
            raise ValueError(f"features must hold at least 2 stimuli; got {b}.")
        iu = torch.triu_indices(b, b, 1, device=features.device)
        r_model = differentiable_rdm(features, self.eps)[iu[0], iu[1]]
        r_target = target[iu[0], iu[1]]
        if self.method == "pearson":
            a = r_model - r_model.mean()
            t = r_target - r_target.mean()
            denom = torch.linalg.vector_norm(a) * torch.linalg.vector_norm(t) + self.eps
            return 1 - (a * t).sum() / denom
        lim = 1 - self.clamp
        s_model = torch.atanh((1 - r_model).clamp(-lim, lim))
        s_target = torch.atanh((1 - r_target).clamp(-lim, lim))
        return ((s_model - s_target) ** 2).mean()


class RDMRegularizedNet(WeightedLossNetMixin, NeuralNetClassifier):
    """The skorch net of :class:`RDMRegularizedClassifier`: its loss adds the RDM term.

    The ``rdm_*`` arguments are the estimator's, which validates them; the net
    checks what depends on its data (the stimuli, the target's shape, the subset
    size against the number of stimuli, the layer against its module) when its
    module is initialised and before a warm continuation. The subsets come from a
    ``numpy.random.Generator`` seeded by ``rdm_seed``, never from torch's generator.
    """

    def __init__(self, *args, rdm_layer=None, rdm_stimuli=None, rdm_target=None,
                 rdm_weight=1.0, rdm_batch_size=32, rdm_loss="pearson", rdm_seed=None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.rdm_layer = rdm_layer
        self.rdm_stimuli = rdm_stimuli
        self.rdm_target = rdm_target
        self.rdm_weight = rdm_weight
        self.rdm_batch_size = rdm_batch_size
        self.rdm_loss = rdm_loss
        self.rdm_seed = rdm_seed

    def get_default_callbacks(self):
        # the epoch mean of rdm_loss, before the printed log
        callbacks = list(super().get_default_callbacks())
        at = next((i for i, (name, _) in enumerate(callbacks) if name == "print_log"),
                  len(callbacks))
        callbacks.insert(at, ("rdm_loss", PassthroughScoring(name="rdm_loss", on_train=True)))
        return callbacks

    def _validated_rdm(self):
        """The validated reference stimuli and target; raises where they do not fit together."""
        stimuli = check_array(self.rdm_stimuli, dtype=np.float32, allow_nd=True,
                              ensure_min_samples=2, input_name="rdm_stimuli")
        m = len(stimuli)
        shape = np.shape(self.rdm_target)
        if shape != (m, m):
            raise ValueError(f"rdm_target must be the ({m}, {m}) RDM of the {m} rdm_stimuli; got "
                             f"shape {shape}.")
        target = check_rdm(self.rdm_target, "rdm_target", min_stimuli=2)
        check_scalar_param(self.rdm_batch_size, "rdm_batch_size", kind="integer", low=2, high=m,
                           closed="both")
        as_model(unwrap_module(self.module_)).resolve_layer(self.rdm_layer)
        return stimuli, target

    def initialize_module(self):
        """Initialise the module (see skorch), check the ``rdm_*`` arguments, seed the subsets.

        Here rather than in ``initialize``, which ``AccelerateMixin`` replaces.
        """
        super().initialize_module()
        self._rdm_data_ = self._validated_rdm()
        self._rdm_rng_ = np.random.default_rng(self.rdm_seed)
        return self

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Train (see skorch); a warm continuation first checks the ``rdm_*`` arguments again."""
        if self.initialized_:
            self._rdm_data_ = self._validated_rdm()
        return super().partial_fit(X, y, classes=classes, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The criterion, plus ``rdm_weight`` times the RDM loss on training batches."""
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        if not training or self.rdm_weight == 0:
            return loss
        stimuli, target = self._rdm_data_
        S = self._rdm_rng_.choice(len(stimuli), size=self.rdm_batch_size, replace=False)
        # the module's own layers, also inside a DistributedDataParallel wrapper (accelerate)
        model = as_model(unwrap_module(self.module_))
        H = model.feature_fn(self.rdm_layer)(model.to_tensor(stimuli[S]))
        rdm_loss = RDMLoss(self.rdm_loss)(H, target[np.ix_(S, S)])
        self.history.record_batch("rdm_loss", rdm_loss.detach())  # a float at the epoch's end
        return loss + self.rdm_weight * rdm_loss

    def on_epoch_end(self, net, **kwargs):
        floats_in_history(self.history)  # before the callbacks average rdm_loss
        super().on_epoch_end(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        floats_in_history(self.history)
        super().on_train_end(net, **kwargs)


class RDMRegularizedClassifier(SkorchClassifierMixin, ClassifierMixin, BaseEstimator):
    """A classifier whose loss pulls a hidden layer's RDM towards a reference RDM.

    On every training batch the loss is ``criterion(f(X_batch), y_batch) +
    rdm_weight * RDMLoss(rdm_loss)(h(S), rdm_target[S][:, S])``, where ``S`` is a
    subset of ``rdm_batch_size`` reference stimuli drawn without replacement,
    and ``h`` the output of ``rdm_layer`` (read through
    :func:`geolearn.models.as_model`, in training mode, with gradients). The
    validation loss is the plain criterion. The paper proposes this use of its
    fMRI RDMs; the regulariser is that of "Learning from brains how to
    regularize machines".

    Training runs through geolearn's one route for torch estimators
    (:class:`geolearn.models.SkorchClassifierMixin`), with a skorch
    ``NeuralNetClassifier`` subclass as :attr:`net_class` whose ``get_loss``
    adds the RDM term: skorch's callbacks, ``module__*``/``optimizer__*``
    settings and ``warm_start`` work as for every geolearn estimator, and
    ``rdm_weight=0`` trains exactly as a plain ``NeuralNetClassifier`` under the
    same torch seed. The subsets come from a ``numpy.random.Generator`` seeded
    from ``random_state`` (never from torch's generator), and the RDM branch is
    skipped when ``rdm_weight == 0``. Layers with batch norm also update their
    running statistics on the reference stimuli.

    Parameters
    ----------
    module : torch.nn.Module class or instance, default=None
        Returns logits (the default criterion is the cross-entropy). ``None``: a
        ReLU MLP of ``hidden_layer_sizes``, whose hidden activations are layer
        ``"1"``. An instance is copied at every fit.
    rdm_layer : str, int or callable
        The hidden layer whose RDM is regularised: its name in
        ``module_.named_modules()``, an index into those names, or a callable
        returning the submodule (as :func:`geolearn.models.as_model` reads layers).
    rdm_stimuli : array-like of shape (m, n_features)
        Reference stimuli, in the same feature layout as ``X`` (cast to float32).
    rdm_target : array-like of shape (m, m)
        Reference RDM of those stimuli (e.g. a brain RDM or :func:`categorical_rdm`).
    rdm_weight : float, default=1.0
        ``lam >= 0``; 0 gives plain training.
    rdm_batch_size : int, default=32
        Stimuli per subset, ``2 <= rdm_batch_size <= m``.
    rdm_loss : {"pearson", "atanh_mse"}, default="pearson"
        See :class:`RDMLoss`.
    hidden_layer_sizes : tuple of int, default=(16,)
        Of the MLP built when ``module=None``.
    criterion, optimizer : torch class, default=CrossEntropyLoss, SGD
    lr : float, default=0.01
    max_epochs : int, default=10
    batch_size : int, default=128
    train_split : callable or None, default=None
        skorch's validation split (e.g. ``skorch.dataset.ValidSplit(5)``).
    callbacks : list of skorch callbacks, optional
    warm_start : bool, default=False
        A second ``fit`` continues training the fitted net (and its subsets).
    device : str, torch.device or None, default="auto"
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the batch order and the subset draws (an int
        seeds the subsets' ``numpy.random.default_rng`` directly).
    **net_params
        skorch's prefixed settings (``module__*``, ``optimizer__*``, ...) and
        ``net_class``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    history_ : skorch.History
        Records ``rdm_loss`` for every training batch (and its epoch mean) when
        ``rdm_weight > 0``.
    net_, module_, device_
        The fitted skorch net, its module and device.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import RDMRegularizedClassifier, categorical_rdm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> y = (X[:, 0] > 0).astype(np.int64)
    >>> clf = RDMRegularizedClassifier(
    ...     rdm_layer="1", rdm_stimuli=X[:20], rdm_target=categorical_rdm(y[:20]),
    ...     rdm_batch_size=10, max_epochs=2, random_state=0).fit(X, y)
    >>> len(clf.history_[-1, "batches"]), "rdm_loss" in clf.history_[-1, "batches", 0]
    (1, True)
    """

    _parameter_constraints = {
        **SkorchClassifierMixin._parameter_constraints,
        "module": [None, callable],
        "rdm_layer": [str, numbers.Integral, callable],
        "rdm_stimuli": ["array-like"],
        "rdm_target": ["array-like"],
        "rdm_weight": [Interval(numbers.Real, 0, None, closed="left")],
        # at most the number of stimuli: checked with them
        "rdm_batch_size": [Interval(numbers.Integral, 2, None, closed="left")],
        "rdm_loss": [StrOptions(set(RDM_LOSSES))],
        "hidden_layer_sizes": ["array-like"],
    }

    net_class = RDMRegularizedNet

    _expected_failed_checks = {  # noqa: RUF012
        "check_sample_weight_equivalence_on_dense_data": FLOAT32_WEIGHTS_REASON,
    }

    def __init__(self, module=None, *, rdm_layer, rdm_stimuli, rdm_target, rdm_weight=1.0,
                 rdm_batch_size=32, rdm_loss="pearson", hidden_layer_sizes=(16,),
                 criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.SGD, lr=0.01,
                 max_epochs=10, batch_size=128, train_split=None, callbacks=None,
                 warm_start=False, device="auto", verbose=0, random_state=None, **net_params):
        self.module = module
        self.rdm_layer = rdm_layer
        self.rdm_stimuli = rdm_stimuli
        self.rdm_target = rdm_target
        self.rdm_weight = rdm_weight
        self.rdm_batch_size = rdm_batch_size
        self.rdm_loss = rdm_loss
        self.hidden_layer_sizes = hidden_layer_sizes
        self.criterion = criterion
        self.optimizer = optimizer
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.train_split = train_split
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.verbose = verbose
        self.random_state = random_state
        self._set_net_params(net_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train with the RDM regulariser.

        With ``warm_start=True`` and a fitted net, training continues for
        ``max_epochs`` more epochs (the ``rdm_*`` arguments may have changed).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of the criterion: each batch's is the weighted mean
            ``sum_i w_i l_i / sum_i w_i`` of its per-row losses, so integer weights
            equal repeated rows and a weight 0 drops a row. The RDM loss is a term
            of the batch on the fixed ``rdm_stimuli``, not of its rows, and stays
            unweighted.

        Returns
        -------
        self : RDMRegularizedClassifier
        """
        X, y, sample_weight = self._fit_data(X, y, sample_weight)
        rdm = {name: getattr(self, name) for name in (
            "rdm_layer", "rdm_stimuli", "rdm_target", "rdm_weight", "rdm_batch_size",
            "rdm_loss")}
        stimuli_shape = np.shape(self.rdm_stimuli)[1:]
        if stimuli_shape != X.shape[1:]:
            raise ValueError(f"rdm_stimuli have rows of shape {stimuli_shape} but X has rows "
                             f"of shape {X.shape[1:]}: the stimuli go through the same module.")
        if self._warm():
            self.net_.set_params(**rdm)
        # an int seeds the subsets directly; a generator (or None) gives them one draw
        subsets = (self.random_state if isinstance(self.random_state, numbers.Integral)
                   else int(check_random_state(self.random_state).randint(2**31 - 1)))
        data, settings = self._training_data(X, y, sample_weight)
        self._fit_net(self._module(X.shape[1]), data, y, seed=self.random_state,
                      max_epochs=self.max_epochs, criterion=self.criterion,
                      optimizer=self.optimizer, train_split=self.train_split,
                      rdm_seed=subsets, **rdm, **settings)
        return self._after_fit()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags
