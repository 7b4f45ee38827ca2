"""RDM-regularised training: a differentiable RDM, its loss, and a skorch classifier using it.

The regulariser of "Learning from brains how to regularize machines", which "Exploring fMRI
RDMs" proposes for its brain RDMs: the task loss plus ``rdm_weight`` times a dissimilarity
between a hidden layer's RDM and a reference RDM, both on a random subset of reference stimuli.
"""

import warnings

import numpy as np
import torch
from sklearn.utils.validation import check_array
from skorch import NeuralNetClassifier
from skorch.callbacks import EarlyStopping, PassthroughScoring

from .._utils import check_choice, check_scalar_param
from ..models import TrainingInterruptedWarning, as_model
from ..models._internal import RaiseOnNonFiniteLoss, floats_in_history, unwrap_module
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


class RDMRegularizedClassifier(NeuralNetClassifier):
    """A skorch classifier whose loss pulls a hidden layer's RDM towards a reference RDM.

    On every training batch the loss is ``criterion(f(X_batch), y_batch) +
    rdm_weight * RDMLoss(rdm_loss)(h(S), rdm_target[S][:, S])``, where ``S`` is a
    subset of ``rdm_batch_size`` reference stimuli drawn without replacement,
    and ``h`` the output of ``rdm_layer`` (read through
    :func:`geolearn.models.as_model`, in training mode, with gradients). The
    validation loss is the plain criterion. The paper proposes this use of its
    fMRI RDMs; the regulariser is that of "Learning from brains how to
    regularize machines".

    It subclasses :class:`skorch.NeuralNetClassifier` directly (not geolearn's
    ``SkorchTrainingMixin`` estimators) so that it *is* a skorch net: every skorch
    argument, callback and method works unchanged, and ``rdm_weight=0``
    reproduces a plain ``NeuralNetClassifier`` with the same arguments and torch
    seed exactly. The subsets come from a separate ``numpy.random.Generator``
    seeded by ``rdm_random_state`` (never from torch's generator), and the RDM
    branch is skipped when ``rdm_weight == 0``. Like any skorch net it trains
    under torch's global seed (``torch.manual_seed``). Layers with batch norm also
    update their running statistics on the reference stimuli.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        As for skorch; for logits use ``criterion=torch.nn.CrossEntropyLoss``
        (skorch's default ``NLLLoss`` expects probabilities).
    *args
        skorch's positional arguments.
    rdm_layer : str
        Name of the hidden layer (``module_.named_modules()``) whose RDM is regularised.
    rdm_stimuli : array-like of shape (m, ...)
        Reference stimuli, in the same feature layout as ``X`` (cast to float32).
    rdm_target : array-like of shape (m, m)
        Reference RDM of those stimuli (e.g. a brain RDM or :func:`categorical_rdm`).
    rdm_weight : float, default=1.0
        ``lam >= 0``; 0 gives plain training.
    rdm_batch_size : int, default=32
        Stimuli per subset, ``2 <= rdm_batch_size <= m``.
    rdm_loss : {"pearson", "atanh_mse"}, default="pearson"
        See :class:`RDMLoss`.
    rdm_random_state : int, numpy Generator or None
        Seeds the subset draws (restarted by every fresh ``fit``).
    **kwargs
        skorch's keyword arguments (``criterion``, ``optimizer``, ``lr``,
        ``max_epochs``, ``batch_size``, ``train_split``, ``callbacks``,
        ``device``, ``module__*``, ...).

    Attributes
    ----------
    module_, history, classes_ :
        As for skorch. ``history`` records ``rdm_loss`` for every training batch
        (and its epoch mean) when ``rdm_weight > 0``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import RDMRegularizedClassifier, categorical_rdm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(np.int64)
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> clf = RDMRegularizedClassifier(
    ...     net, criterion=torch.nn.CrossEntropyLoss, rdm_layer="1", rdm_stimuli=X[:20],
    ...     rdm_target=categorical_rdm(y[:20]), rdm_batch_size=10, rdm_random_state=0,
    ...     max_epochs=2, train_split=None, verbose=0).fit(X, y)
    >>> len(clf.history[-1, "batches"]), "rdm_loss" in clf.history[-1, "batches", 0]
    (1, True)
    """

    def __init__(self, module, *args, rdm_layer, rdm_stimuli, rdm_target, rdm_weight=1.0,
                 rdm_batch_size=32, rdm_loss="pearson", rdm_random_state=None, **kwargs):
        super().__init__(module, *args, **kwargs)
        self.rdm_layer = rdm_layer
        self.rdm_stimuli = rdm_stimuli
        self.rdm_target = rdm_target
        self.rdm_weight = rdm_weight
        self.rdm_batch_size = rdm_batch_size
        self.rdm_loss = rdm_loss
        self.rdm_random_state = rdm_random_state

    def get_default_callbacks(self):
        # the epoch mean of rdm_loss and the non-finite-loss stop, before the printed log
        callbacks = list(super().get_default_callbacks())
        at = next((i for i, (name, _) in enumerate(callbacks) if name == "print_log"),
                  len(callbacks))
        callbacks[at:at] = [("rdm_loss", PassthroughScoring(name="rdm_loss", on_train=True)),
                            ("finite_loss", RaiseOnNonFiniteLoss())]
        return callbacks

    def _validated_rdm(self):
        """The validated reference stimuli and target; raises for any bad ``rdm_*`` argument."""
        check_scalar_param(self.rdm_weight, "rdm_weight", low=0)
        check_choice(self.rdm_loss, "rdm_loss", RDM_LOSSES)
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

    def initialize(self):
        """Initialise the net (see skorch), validate the ``rdm_*`` arguments, seed the subsets."""
        super().initialize()
        try:
            self._rdm_data_ = self._validated_rdm()
        except BaseException:
            self.initialized_ = False
            raise
        self._rdm_rng_ = np.random.default_rng(self.rdm_random_state)
        return self

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Train (see skorch); warn with ``TrainingInterruptedWarning`` after a Ctrl-C."""
        if not self.initialized_:
            self.initialize()
        else:  # warm start: the rdm_* arguments may have been set since
            self._rdm_data_ = self._validated_rdm()
        before = len(self.history)
        planned = fit_params.get("epochs") or self.max_epochs
        super().partial_fit(X, y, classes=classes, **fit_params)
        # skorch swallows a KeyboardInterrupt (also EarlyStopping's): tell the user about Ctrl-C
        done = sum("dur" in row for row in self.history.to_list()[before:])
        stopped = any(isinstance(cb, EarlyStopping) and cb.misses_ >= cb.patience
                      for _, cb in self.callbacks_)
        if done < planned and not stopped:
            warnings.warn(f"{type(self).__name__}: training was interrupted during epoch "
                          f"{done + 1} of {planned}; the net keeps the weights reached then "
                          "(continue with partial_fit).", TrainingInterruptedWarning,
                          stacklevel=2)
        return self

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
