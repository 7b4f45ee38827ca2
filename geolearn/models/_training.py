"""The one training route of geolearn's torch estimators: skorch, seeded, with its callbacks.

Every estimator that trains a torch module subclasses :class:`SkorchTrainingMixin`
and calls :meth:`SkorchTrainingMixin._fit_net`. skorch owns the training loop
(batches, optimiser, history, callbacks, checkpoints, LR schedulers); the
estimator only supplies the module and, for objectives that are not a plain
criterion, an :class:`ObjectiveNet`.
"""

import functools
import inspect

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping, PassthroughScoring, ProgressBar
from skorch.dataset import get_len
from skorch.utils import TeeGenerator, to_tensor
from torch.utils.data import DataLoader

from .._utils import (
    TensorBatches,
    TensorDataset,
    check_scalar_param,
    collate_batch,
    discard_fitted,
    on_module_threads,
    resolve_device,
    small_ops_threads,
    torch_seed,
    warn_user,
)
from ..exceptions import GeolearnWarning

#: Prefixes of the skorch settings an estimator accepts as keyword arguments.
NET_PARAM_PREFIXES = ("module__", "optimizer__", "criterion__", "iterator_train__",
                      "iterator_valid__", "callbacks__", "dataset__")

#: skorch's own net settings an estimator accepts as keyword arguments (where they are not
#: already parameters of the estimator, and not refused by its ``_refused_net_settings``).
NET_SETTINGS = ("train_split", "compile", "optimizer", "criterion", "iterator_train",
                "iterator_valid", "dataset", "predict_nonlinearity")

#: torch optimisers whose multi-tensor update (``foreach=True``) gives the per-parameter
#: loop's values bit for bit (see :func:`use_foreach_update`).
FOREACH_OPTIMIZERS = (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD)

#: skorch's notifications of every batch (see :class:`LeanLoopMixin`).
BATCH_HOOKS = ("on_batch_begin", "on_batch_end", "on_grad_computed")


def unwrap_module(module):
    """The user's module inside a ``DistributedDataParallel`` / ``DataParallel`` wrapper.

    Wrappers (such as those accelerate puts around a net's ``module_``) forward
    only ``forward``; an objective that calls the module's own methods
    (``decode``, ``head``, named layers) reaches them through this. Gradients
    flowing through the unwrapped module still reach DDP's hooks, which sit on
    the shared parameters.

    Parameters
    ----------
    module : torch.nn.Module

    Returns
    -------
    module : torch.nn.Module
        ``module`` itself when it is not wrapped.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import unwrap_module
    >>> inner = torch.nn.Linear(2, 1)
    >>> unwrap_module(torch.nn.DataParallel(inner)) is inner, unwrap_module(inner) is inner
    (True, True)
    """
    wrappers = (torch.nn.parallel.DistributedDataParallel, torch.nn.DataParallel)
    while isinstance(module, wrappers):
        module = module.module
    return module


class RaiseOnNonFiniteLoss(Callback):
    """Stop training with a clear error the first epoch whose training loss is not finite.

    A fit that ends with a NaN or infinite parameter (a last step taken from a finite
    loss) raises too, rather than leaving a model that predicts NaN.

    Every :class:`SkorchTrainingMixin` estimator adds it to its net's callbacks.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skorch import NeuralNetRegressor
    >>> from geolearn.models._internal import RaiseOnNonFiniteLoss
    >>> net = NeuralNetRegressor(torch.nn.Linear(1, 1), max_epochs=2, train_split=None,
    ...                          callbacks=[RaiseOnNonFiniteLoss()], verbose=0)
    >>> X = np.full((4, 1), np.inf, dtype=np.float32)
    >>> try:
    ...     net.fit(X, np.zeros((4, 1), dtype=np.float32))
    ... except RuntimeError as err:
    ...     print(str(err)[:42])
    training loss became non-finite at epoch 1
    """

    def on_train_end(self, net, **kwargs):
        bad = [name for name, p in net.module_.named_parameters()
               if not bool(torch.isfinite(p).all())]
        if bad:
            raise RuntimeError(
                f"training ended with NaN or infinite parameters ({', '.join(bad[:3])}"
                f"{', ...' if len(bad) > 3 else ''}) after epoch {len(net.history)}; lower lr, "
                "or scale the input (e.g. MinMaxScaler).")

    def on_epoch_end(self, net, **kwargs):
        if np.isfinite(net.history[-1, "train_loss"]):
            return  # the common case, in constant time (the full column grows with the epochs)
        losses = net.history[:, "train_loss"]
        if not np.isfinite(losses[-1]):
            finite = [loss for loss in losses if np.isfinite(loss)]
            last = f"{finite[-1]:.6g}" if finite else "none"
            raise RuntimeError(
                f"training loss became non-finite at epoch {len(losses)} (last finite loss: "
                f"{last}); lower lr, or scale the input (e.g. MinMaxScaler).")


class QuietLog(Callback):
    """skorch's ``print_log`` callback of a silent (``verbose=0``) geolearn estimator.

    It prints and formats nothing: skorch's ``PrintLog`` formats its table every
    epoch even when silent (a large share of a small epoch) and prints to any
    sink but ``print`` whatever ``verbose`` says (``AccelerateMixin`` sets the
    sink to ``accelerator.print``). It takes ``PrintLog``'s ``sink`` so that nets
    which set one still can, and cannot simply be removed
    (``callbacks__print_log=None``) for the same reason.

    Parameters
    ----------
    sink : callable, default=print
        Kept, never called.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skorch import NeuralNetRegressor
    >>> from geolearn.models._training import QuietLog
    >>> net = NeuralNetRegressor(torch.nn.Linear(1, 1), max_epochs=2, train_split=None,
    ...                          callbacks__print_log=QuietLog())
    >>> _ = net.fit(np.ones((4, 1), "f4"), np.ones((4, 1), "f4"))  # prints nothing
    """

    def __init__(self, sink=print):
        self.sink = sink


def weighted_mean(values, sample_weight=None):
    """The mean of per-sample ``values``, weighted: ``sum_i w_i v_i / sum_i w_i``.

    The one reduction of a weighted training loss (and of the terms recorded beside it):
    integer weights equal repeated rows, and a weight 0 drops a row.

    Parameters
    ----------
    values : torch.Tensor of shape (n_samples,)
    sample_weight : torch.Tensor of shape (n_samples,) or None
        None is the plain mean.

    Returns
    -------
    mean : torch.Tensor (scalar)

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import weighted_mean
    >>> float(weighted_mean(torch.tensor([1.0, 4.0]), torch.tensor([2.0, 0.0])))
    1.0
    """
    if sample_weight is None:
        return values.mean()
    sample_weight = sample_weight.to(values)
    return (values * sample_weight).sum() / sample_weight.sum()


class FunctionalCriterion:
    """A loss function as skorch's ``criterion``: a plain callable, not a ``torch.nn.Module``.

    accelerate wraps a net's module criterion in ``DistributedDataParallel``,
    which refuses a module without parameters when the processes train on the
    CPU; a plain callable is left alone. Keyword arguments (skorch's
    ``criterion__*`` settings) are passed on to ``fn``.

    A target that is a pair ``(y, sample_weight)`` (a :class:`TensorDataset` with
    ``sample_weight``) gives the weighted mean ``sum_i w_i l_i / sum_i w_i`` of the
    per-sample losses ``l_i`` of ``fn(..., reduction="none")``: integer weights
    equal repeated rows, and a weight 0 drops a row.

    Parameters
    ----------
    fn : callable, default=torch.nn.functional.cross_entropy
        ``fn(y_pred, y_true, **kwargs) -> loss``.
    **kwargs
        Passed to ``fn`` (e.g. ``label_smoothing``).

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import FunctionalCriterion
    >>> loss = FunctionalCriterion(label_smoothing=0.1)
    >>> logits, y = torch.tensor([[2.0, 0.0]]), torch.tensor([0])
    >>> bool(torch.isclose(loss(logits, y),
    ...                    torch.nn.CrossEntropyLoss(label_smoothing=0.1)(logits, y)))
    True
    >>> logits, y = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    >>> weighted = FunctionalCriterion()(logits, (y, torch.tensor([2.0, 0.0])))
    >>> bool(torch.isclose(weighted, FunctionalCriterion()(logits[:1], y[:1])))
    True
    """

    def __init__(self, fn=torch.nn.functional.cross_entropy, **kwargs):
        self.fn = fn
        self.kwargs = kwargs

    def __call__(self, y_pred, y_true):
        if isinstance(y_true, (tuple, list)):  # (targets, sample weights)
            y_true, sample_weight = y_true
            losses = self.fn(y_pred, y_true, reduction="none", **self.kwargs)
            return weighted_mean(losses, sample_weight)
        return self.fn(y_pred, y_true, **self.kwargs)


def softmax_rows(logits):
    """Row-wise softmax: ``predict_proba``'s nonlinearity for a :class:`FunctionalCriterion`.

    skorch infers the softmax only from an ``nn.CrossEntropyLoss`` criterion.

    Parameters
    ----------
    logits : torch.Tensor of shape (n, n_classes)

    Returns
    -------
    proba : torch.Tensor of shape (n, n_classes)

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import softmax_rows
    >>> softmax_rows(torch.zeros(1, 4)).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """
    return torch.softmax(logits, dim=-1)


class TrainingInterruptedWarning(GeolearnWarning):
    """Training stopped before its last epoch (a KeyboardInterrupt); the net keeps its weights.

    Examples
    --------
    Turn it into an error where a half-trained model must not be used:

    >>> import warnings
    >>> from geolearn.models import TrainingInterruptedWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", TrainingInterruptedWarning)
    ...     issubclass(TrainingInterruptedWarning, UserWarning)
    True
    """


def warn_if_interrupted(estimator, net, planned, before):
    """Warn when skorch swallowed a KeyboardInterrupt: fewer epochs than planned, no early stop.

    An epoch is complete when its history row has the duration skorch's EpochTimer
    records at its end; ``before`` rows were there before this fit. The warning names the
    user's ``fit`` call. An interrupt before this fit completed an
    epoch is raised again: there is no trained state to keep, so the caller discards the
    fitted state as for any failed fit. For estimators that are skorch nets themselves
    (``net`` is ``estimator``); :class:`SkorchTrainingMixin` calls it for the others.

    Parameters
    ----------
    estimator : estimator
        Named in the warning.
    net : skorch.NeuralNet
        The net that trained.
    planned : int
        Epochs the fit asked for.
    before : int
        History rows before this fit (``partial_fit`` and ``warm_start`` append).

    Returns
    -------
    None

    Raises
    ------
    KeyboardInterrupt
        When training was interrupted before this fit completed an epoch.

    Examples
    --------
    >>> import numpy as np, torch, warnings
    >>> from skorch import NeuralNetRegressor
    >>> from geolearn.models._internal import warn_if_interrupted
    >>> net = NeuralNetRegressor(torch.nn.Linear(1, 1), max_epochs=3, train_split=None,
    ...                          verbose=0).fit(np.ones((4, 1), "f4"), np.ones((4, 1), "f4"))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_interrupted(net, net, planned=5, before=0)
    >>> str(caught[0].message)[:60]
    'NeuralNetRegressor: training was interrupted during epoch 4 '
    """
    done = sum("dur" in row for row in net.history.to_list()[before:])
    stopped_early = any(isinstance(cb, EarlyStopping) and cb.misses_ >= cb.patience
                        for _, cb in net.callbacks_)
    if done < planned and not stopped_early:
        # the interrupted epoch's row holds no losses: the history keeps completed epochs
        while len(net.history) > before and "dur" not in net.history[-1]:
            del net.history[-1]
        if not done:
            raise KeyboardInterrupt(f"{type(estimator).__name__}: training was interrupted "
                                    "during its first epoch; nothing was fitted.")
        warn_user(f"{type(estimator).__name__}: training was interrupted during epoch "
                  f"{done + 1} of {planned}; the estimator keeps the weights reached then "
                  "(fit again, or continue with warm_start=True).", TrainingInterruptedWarning)


def floats_in_history(history):
    """Turn the tensors recorded in the last epoch's batches into floats, in one transfer.

    A training step that records a loss term with ``value.item()`` waits for the
    device every batch; recording ``value.detach()`` and calling this from the
    net's ``on_epoch_end`` (which runs before the callbacks that average the
    batches) waits once an epoch.

    Parameters
    ----------
    history : skorch.History

    Returns
    -------
    None

    Examples
    --------
    >>> import torch
    >>> from skorch.history import History
    >>> from geolearn.models._internal import floats_in_history
    >>> history = History()
    >>> history.new_epoch(); history.new_batch()
    >>> history.record_batch("kl", torch.tensor(0.5))
    >>> floats_in_history(history)
    >>> history[-1, "batches", 0, "kl"]
    0.5
    """
    if not len(history):
        return
    pending = [(row, key) for row in history[-1]["batches"] for key, value in row.items()
               if isinstance(value, torch.Tensor)]
    if not pending:
        return
    tensors = [row[key] for row, key in pending]
    if all(value.device.type == "cpu" for value in tensors):
        # no transfer to save: each float directly (the same doubles, ten times faster)
        values = [float(value) for value in tensors]
    else:
        values = torch.stack([value.double().reshape(()) for value in tensors]).tolist()
    for (row, key), value in zip(pending, values):
        row[key] = value


def use_foreach_update(net, min_tensors=6):
    """Give a net's stock optimiser the multi-tensor (``foreach``) update where it left the choice.

    torch takes the multi-tensor update by default on CUDA only; on the CPU the loop over
    the parameters costs a few kernel calls per tensor and step, more than the
    multi-tensor update's fixed cost from about six tensors on. The values are the loop's
    bit for bit (:data:`FOREACH_OPTIMIZERS`). A ``foreach`` or ``fused`` the user set, and
    any other optimiser, are left alone.

    Parameters
    ----------
    net : skorch.NeuralNet
        Initialised.
    min_tensors : int, default=6
        Fewer parameter tensors keep torch's default.

    Returns
    -------
    None

    Examples
    --------
    >>> import torch
    >>> from skorch import NeuralNet
    >>> from geolearn.models._training import use_foreach_update
    >>> module = torch.nn.Sequential(*[torch.nn.Linear(2, 2) for _ in range(3)])
    >>> net = NeuralNet(module, criterion=torch.nn.MSELoss, optimizer=torch.optim.Adam)
    >>> use_foreach_update(net.initialize())
    >>> net.optimizer_.param_groups[0]["foreach"]
    True
    """
    optimizer = getattr(net, "optimizer_", None)
    if type(optimizer) not in FOREACH_OPTIMIZERS:
        return
    groups = optimizer.param_groups
    if (sum(len(group["params"]) for group in groups) >= min_tensors
            and all(group["foreach"] is None and not group.get("fused")
                    and not group.get("differentiable") for group in groups)):
        for group in groups:
            group["foreach"] = True


def batch_len(X):
    """skorch's ``get_len`` of a batch's ``X``, directly for a tensor or a dict of tensors.

    skorch flattens any structure into a set of lengths (about 9 us a step for a dict).

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._training import batch_len
    >>> batch_len(torch.zeros(3, 2)), batch_len({"a": torch.zeros(4), "b": torch.ones(4, 2)})
    (3, 4)
    """
    if isinstance(X, torch.Tensor):
        return len(X)
    if type(X) is dict and all(isinstance(value, torch.Tensor) for value in X.values()):
        lengths = {len(value) for value in X.values()}
        if len(lengths) == 1:
            return lengths.pop()
    return get_len(X)  # its error for inconsistent lengths, its rules for other data


class LeanLoopMixin:
    """skorch's training loop without the per-batch work nothing uses; the same steps.

    A mixin of skorch net classes, before skorch's class in the bases
    (:class:`ObjectiveNet` and geolearn's classifier nets have it). It changes
    what a step costs, not what it computes (weights and history bit for bit):

    - the per-batch notifications (:data:`BATCH_HOOKS`) reach the net and the
      callbacks that override them, not those that keep skorch's no-op (skorch's
      default callbacks, :class:`RaiseOnNonFiniteLoss`, ...); the listeners are
      taken at each epoch's start and dropped at its end;
    - ``module.train()`` (which walks every submodule, about 4 us each) runs only when a
      module of the net is not in training mode already (skorch calls it every step);
    - a step of a net with one optimiser of :data:`FOREACH_OPTIMIZERS` (which
      evaluate a closure once, before their update) runs without skorch's closure
      and step accumulator: gradients (enabled, as the optimiser enables them for a
      closure), ``on_grad_computed``, then ``step()``;
    - a :class:`~geolearn._utils.TensorDataset` with skorch's default
      ``DataLoader`` set with ``collate_fn=collate_batch`` and at most
      ``batch_size``, ``shuffle`` and ``drop_last`` is iterated by
      :class:`~geolearn._utils.TensorBatches`: the loader's batches, in its order
      from its random draws, each indexed at once instead of through the per-row
      sampler. A subclass that overrides ``get_iterator`` (such as skorch's
      ``AccelerateMixin``, which shards the loader) keeps the ``DataLoader``.

    Examples
    --------
    >>> import torch
    >>> from skorch import NeuralNetRegressor
    >>> from geolearn.models._training import LeanLoopMixin
    >>> from geolearn._utils import TensorDataset, collate_batch
    >>> class Net(LeanLoopMixin, NeuralNetRegressor):
    ...     pass
    >>> net = Net(torch.nn.Linear(2, 1), batch_size=4, iterator_train__shuffle=True,
    ...           iterator_train__collate_fn=collate_batch).initialize()
    >>> type(net.get_iterator(TensorDataset(torch.zeros(10, 2)), training=True)).__name__
    'TensorBatches'
    """

    def get_iterator(self, dataset, training=False):
        prefix = "iterator_train" if training else "iterator_valid"
        kwargs = self.get_params_for(prefix)
        if (getattr(self, prefix) is DataLoader and type(dataset) is TensorDataset
                and len(dataset) and type(self).get_iterator is LeanLoopMixin.get_iterator
                and kwargs.get("collate_fn") is collate_batch
                and set(kwargs) <= {"batch_size", "shuffle", "drop_last", "collate_fn"}):
            batch_size = kwargs.get("batch_size", self.batch_size)
            return TensorBatches(dataset, len(dataset) if batch_size == -1 else batch_size,
                                 shuffle=bool(kwargs.get("shuffle", False)),
                                 drop_last=bool(kwargs.get("drop_last", False)))
        return super().get_iterator(dataset, training=training)

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        # skorch's loop, recording the same batch rows
        if iterator is None:
            return
        history, loss_key, size_key = self.history, prefix + "_loss", prefix + "_batch_size"
        batch_count = 0
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            history.record_batch(loss_key, step["loss"].item())
            history.record_batch(size_key, batch_len(batch[0] if isinstance(batch, (tuple, list))
                                                     else batch))
            self.notify("on_batch_end", batch=batch, training=training, **step)
            batch_count += 1
        history.record(prefix + "_batch_count", batch_count)

    def train_step(self, batch, **fit_params):
        if not getattr(self, "_closure_free", False):
            return super().train_step(batch, **fit_params)
        # the optimiser evaluated skorch's closure with gradients on, even in a no_grad block
        with torch.enable_grad():
            self._zero_grad_optimizer()
            step = self.train_step_single(batch, **fit_params)
            self.notify("on_grad_computed", batch=batch, training=True,
                        named_parameters=TeeGenerator(self.get_all_learnable_params()))
        self.optimizer_.step()
        return step

    def _set_training(self, training=True):
        modules = getattr(self, "_epoch_modules", None)
        if modules is None or any(module.training != training for module in modules):
            super()._set_training(training)

    def notify(self, method_name, **cb_kwargs):
        listeners = getattr(self, "_batch_listeners", None)
        if listeners is None or method_name not in listeners:
            return super().notify(method_name, **cb_kwargs)
        getattr(self, method_name)(self, **cb_kwargs)
        for cb in listeners[method_name]:
            getattr(cb, method_name)(self, **cb_kwargs)

    def on_epoch_begin(self, net, **kwargs):
        super().on_epoch_begin(net, **kwargs)
        self._batch_listeners = {
            hook: [cb for _, cb in self.callbacks_
                   if getattr(type(cb), hook, None) is not getattr(Callback, hook)]
            for hook in BATCH_HOOKS}
        self._epoch_modules = [
            submodule for name in self._modules + self._criteria
            for module in [getattr(self, name + "_")] if isinstance(module, torch.nn.Module)
            for submodule in module.modules()]
        net_class = type(self)
        self._closure_free = (
            list(self._optimizers) == ["optimizer"]
            and type(getattr(self, "optimizer_", None)) in FOREACH_OPTIMIZERS
            and net_class._step_optimizer is NeuralNet._step_optimizer
            and net_class.get_train_step_accumulator is NeuralNet.get_train_step_accumulator)

    def on_epoch_end(self, net, **kwargs):
        # outside an epoch every callback hears every hook, and steps take skorch's route
        self._batch_listeners = self._closure_free = self._epoch_modules = None
        super().on_epoch_end(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        # an interrupted epoch's too
        self._batch_listeners = self._closure_free = self._epoch_modules = None
        super().on_train_end(net, **kwargs)


class ObjectiveNet(LeanLoopMixin, NeuralNet):
    """A skorch ``NeuralNet`` whose loss is ``objective(module, y_pred, X, y, epoch)``.

    The objective returns ``(loss, parts)``; each part (a scalar tensor) is
    recorded in the batch history and averaged per epoch by a
    ``PassthroughScoring`` callback, so ``history`` holds e.g. ``recon`` and ``kl``.

    Parameters
    ----------
    module : torch.nn.Module or class
        The module trained, as for ``skorch.NeuralNet``.
    objective : callable
        ``objective(module, y_pred, X, y, epoch) -> (loss, parts)`` with ``parts``
        a dict of scalar tensors. Rows with weights (a :class:`TensorDataset` with
        ``sample_weight``) call ``objective(..., sample_weight=w)`` with the batch's
        weights, which the objective reduces with :func:`weighted_mean`.
    parts : sequence of str, default=()
        The names of ``parts`` recorded in ``history`` each epoch.
    **kwargs
        Any other ``skorch.NeuralNet`` parameter (``criterion`` is unused).

    Examples
    --------
    >>> import torch
    >>> from geolearn.models import ObjectiveNet
    >>> def objective(module, y_pred, X, y, epoch):
    ...     mse = ((y_pred - y) ** 2).mean()
    ...     return mse, {"mse": mse.detach()}
    >>> net = ObjectiveNet(torch.nn.Linear(2, 1), objective=objective, parts=("mse",),
    ...                    max_epochs=2, train_split=None, verbose=0)
    >>> net = net.fit(torch.zeros(8, 2), torch.ones(8, 1))
    >>> len(net.history[:, "mse"])
    2
    """

    def __init__(self, module, *, objective, parts=(), **kwargs):
        # the criterion is unused: get_loss evaluates the objective instead
        kwargs.setdefault("criterion", FunctionalCriterion)
        super().__init__(module, **kwargs)
        self.objective = objective
        self.parts = parts

    def get_default_callbacks(self):
        extra = [(f"{p}_epoch", PassthroughScoring(name=p, on_train=True)) for p in self.parts]
        return [*super().get_default_callbacks(), *extra]

    def get_loss(self, y_pred, y_true, X=None, training=False):
        X = to_tensor(X, device=self.device)
        y_true = to_tensor(y_true, device=self.device)
        weights = {}
        if isinstance(y_true, (tuple, list)):  # (targets, sample weights)
            y_true, weights["sample_weight"] = y_true
        loss, parts = self.objective(unwrap_module(self.module_), y_pred, X, y_true,
                                     epoch=len(self.history) - 1, **weights)
        if training:
            # kept as tensors until the epoch ends: no device sync per batch
            for name, value in parts.items():
                self.history.record_batch(name, value.detach())
        return loss

    def on_epoch_end(self, net, **kwargs):
        # before the callbacks, which average the parts per epoch
        floats_in_history(self.history)
        super().on_epoch_end(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        floats_in_history(self.history)  # an interrupted epoch's parts too
        super().on_train_end(net, **kwargs)


@functools.cache
def _skorch_settings_of(cls):
    # once per class: inspect.signature costs about 0.1 ms, and a fit asks several times
    own = {p.name for p in inspect.signature(cls).parameters.values()
           if p.kind is not p.VAR_KEYWORD} | set(cls._refused_net_settings)
    return tuple(name for name in NET_SETTINGS if name not in own)


class SkorchTrainingMixin:
    """What every torch-trained geolearn estimator shares: one skorch route to a fitted net.

    An estimator using it has the parameters ``lr``, ``max_epochs`` (or its
    own count of steps), ``batch_size``, ``callbacks``, ``warm_start``,
    ``device``, ``verbose`` and ``random_state``, and accepts skorch's prefixed
    settings as keyword arguments (``module__*``, ``optimizer__*``,
    ``criterion__*``, ``iterator_train__*``, ``iterator_valid__*``,
    ``callbacks__*``, ``dataset__*``) and skorch's own net settings that are
    not already its parameters (``train_split``, ``compile``, ``optimizer``,
    ``criterion``, ``iterator_train``, ``iterator_valid``, ``dataset``,
    ``predict_nonlinearity``), which ``get_params``/``set_params``, ``clone``
    and ``GridSearchCV`` see like any other parameter. ``criterion`` is refused
    where the estimator's objective replaces it.

    - ``train_split``: e.g. ``skorch.dataset.ValidSplit(5)`` holds out a fifth
      of the rows each epoch and records ``valid_loss``, which
      ``EarlyStopping(monitor="valid_loss")`` and checkpoints can watch
      (default: no split, where the estimator has no ``validation_fraction``).
    - ``compile=True``: ``torch.compile`` the module (a boolean).
    - ``optimizer``: torch's Adam unless the estimator or the user chooses; torch's
      Adam, AdamW and SGD take the multi-tensor update (``foreach``, the same values
      as the per-parameter loop) where the module has six parameter tensors or more
      and ``optimizer__foreach`` / ``optimizer__fused`` are not set.
    - :meth:`save_params` / :meth:`load_params`: skorch's checkpoint files of
      the fitted net (weights, optimiser state, history).

    - ``callbacks``: skorch callbacks (early stopping, checkpoints, LR
      schedulers, ...) added to the net's defaults; a non-finite training loss
      always stops training with a clear error, and ``verbose >= 2`` adds a
      progress bar.
    - ``warm_start=True``: a second ``fit`` continues training the fitted net
      instead of starting again, for ``max_epochs`` more epochs at the current
      ``lr`` and ``batch_size``.
    - ``net_class``: the skorch class the net is built from, a subclass of
      the estimator's own (the class attribute :attr:`net_class`), e.g. one
      with skorch's ``AccelerateMixin`` for multi-GPU training; pass it as a
      keyword (``net_class=...``, also a ``functools.partial`` of such a class
      with extra net arguments) or set it on a subclass.
    - ``device=None``: the estimator leaves device placement to the net (to
      accelerate with ``AccelerateMixin``; a plain net stays on the CPU);
      ``device_`` is then where the trained module's parameters are.
    - Threads: a module of at most 200,000 parameters on the CPU trains, and runs in every
      public method of the estimator but ``fit``, ``partial_fit`` and the parameter
      methods, on one torch thread (docs/user_guide/threads.md).

    Fitted: ``net_`` (the skorch net), ``history_`` (the net's skorch ``History``:
    one row per epoch with ``train_loss`` and the objective's parts as columns,
    e.g. ``history_[:, "train_loss"]``), ``module_`` and ``device_``.

    Examples
    --------
    >>> from geolearn.generative import GridVAE
    >>> from geolearn.models import SkorchTrainingMixin
    >>> issubclass(GridVAE, SkorchTrainingMixin)
    True
    >>> GridVAE(optimizer__weight_decay=1e-4).get_params()["optimizer__weight_decay"]
    0.0001
    >>> from skorch.dataset import ValidSplit
    >>> GridVAE(train_split=ValidSplit(5)).get_params()["train_split"].cv
    5
    """

    #: The skorch net class the estimator trains with (an extension point for subclasses).
    net_class = NeuralNet

    #: skorch settings of :data:`NET_SETTINGS` the estimator's net would ignore.
    _refused_net_settings = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # inference (predict, transform, score_samples, ...) runs a small CPU module on one
        # torch thread, as training does (docs/user_guide/threads.md)
        on_module_threads(cls, lambda est: getattr(getattr(est, "net_", None), "module_", None))

    @classmethod
    def _skorch_settings(cls):
        """The unprefixed skorch settings this estimator takes as keyword arguments."""
        return _skorch_settings_of(cls)

    def _is_net_param(self, key):
        return (key.startswith(NET_PARAM_PREFIXES) or key in self._skorch_settings()
                or key == "net_class")

    def _set_net_params(self, net_params):
        """Store skorch's settings given to ``__init__`` or ``set_params``.

        Anything else is kept aside and refused by ``fit`` (scikit-learn estimators
        validate in ``fit``, never in ``__init__`` or ``set_params``).
        """
        for key, value in net_params.items():
            if self._is_net_param(key):
                setattr(self, key, value)
            else:
                self.__dict__.setdefault("_unknown_net_params", {})[key] = value

    def get_params(self, deep=True):
        params = super().get_params(deep=deep)
        params.update(self._net_params())
        if "net_class" in vars(self):
            params["net_class"] = self.net_class
        return params

    def set_params(self, **params):
        import inspect

        var_kw = [p.name for p in inspect.signature(type(self)).parameters.values()
                  if p.kind is p.VAR_KEYWORD]
        net_params = {k: params.pop(k) for k in list(params)
                      if self._is_net_param(k) or k in var_kw}
        self._set_net_params(net_params)
        return super().set_params(**params) if params else self

    def _check_net_params(self):
        unknown = getattr(self, "_unknown_net_params", None)
        if unknown:
            raise TypeError(
                f"{type(self).__name__} got unexpected keyword arguments {sorted(unknown)}; "
                f"besides its parameters it accepts the skorch settings "
                f"{', '.join(self._skorch_settings())} and those starting with "
                f"{', '.join(NET_PARAM_PREFIXES)}.")

    def _net_params(self, prefix=""):
        """The skorch settings given by the user as keywords (those starting with ``prefix``)."""
        settings = self._skorch_settings()
        return {k: v for k, v in vars(self).items()
                if (k.startswith(NET_PARAM_PREFIXES) or k in settings) and k.startswith(prefix)}

    def save_params(self, **kwargs):
        """Save the fitted net's parameters with skorch's ``NeuralNet.save_params``.

        Parameters
        ----------
        **kwargs
            skorch's ``f_params``, ``f_optimizer``, ``f_criterion``, ``f_history``
            (file names or file objects; ``None`` skips that part), ...

        Returns
        -------
        None

        Examples
        --------
        >>> import io, numpy as np
        >>> from geolearn.generative import GridVAE
        >>> X = np.random.default_rng(0).random((32, 8))
        >>> vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, random_state=0).fit(X)
        >>> f = io.BytesIO()
        >>> vae.save_params(f_params=f)
        >>> other = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, random_state=1).fit(X)
        >>> _ = f.seek(0)
        >>> other.load_params(f_params=f)
        >>> bool(np.array_equal(other.transform(X), vae.transform(X)))
        True
        """
        check_is_fitted(self, "net_")
        self.net_.save_params(**kwargs)

    def load_params(self, **kwargs):
        """Load saved parameters into the fitted net (skorch's ``NeuralNet.load_params``).

        The estimator must be fitted first with the same settings (as a skorch net
        must be initialised): the files restore the net's weights, optimiser state
        and history, not the fitted attributes that ``fit`` computes from the data.

        Parameters
        ----------
        **kwargs
            skorch's ``f_params``, ``f_optimizer``, ``f_criterion``, ``f_history``,
            ``checkpoint``, ...

        Returns
        -------
        None
        """
        check_is_fitted(self, "net_")
        self.net_.load_params(**kwargs)
        self.history_ = self.net_.history

    def _warm(self):
        """Whether this ``fit`` continues the fitted net (``warm_start`` and a net to continue)."""
        return bool(getattr(self, "warm_start", False)) and hasattr(self, "net_")

    def _fit_net(self, module, X, y=None, *, seed, max_epochs, default_callbacks=(), **settings):
        """Train ``module`` through :attr:`net_class` under one torch seed; set ``net_``.

        Parameters
        ----------
        module : torch.nn.Module class or callable
            Called with the ``module__*`` settings when the net is initialised,
            under the seed, so that the initial weights are reproducible.
        X, y : dataset, tensors or arrays as skorch takes them
        seed : int, RandomState instance or None
            Seeds the initialisation, the batch order and the training noise.
        max_epochs : int
            ``0`` keeps the initialised net.
        default_callbacks : sequence, default=()
            The estimator's own callbacks, before the user's ``callbacks``.
        **settings
            Further ``net_class`` arguments (``criterion``, ``optimizer``,
            ``train_split``, ``iterator_train__shuffle``, ...); the user's
            prefixed settings take precedence.

        Returns
        -------
        net : the fitted skorch net (also stored as ``net_``, its history as ``history_``)
        """
        self._check_net_params()
        before = len(self.net_.history) if self._warm() else 0
        try:
            net = self._train_net(module, X, y, seed=seed, max_epochs=max_epochs,
                                  default_callbacks=default_callbacks, **settings)
            warn_if_interrupted(self, net, net.max_epochs if self._warm() else max_epochs,
                                before)
        except BaseException:
            # a fit that fails (or is interrupted before an epoch completed) leaves no
            # half-set fitted state behind
            discard_fitted(self)
            raise
        self.net_ = net
        self.history_ = net.history
        return net

    def _train_net(self, module, X, y, *, seed, max_epochs, default_callbacks, **settings):
        if self._warm():
            # skorch's partial_fit trains with the net's own settings: this fit's, as a cold fit
            self.net_.set_params(lr=self.lr, max_epochs=max_epochs, batch_size=self.batch_size)
            with torch_seed(seed), small_ops_threads(self.net_.module_):
                self.net_.partial_fit(X, y)
            return self.net_
        net_class = self._checked_net_class()
        # device=None leaves placement to the net (accelerate puts the module on its device)
        self.device_ = None if self.device is None else resolve_device(self.device)
        callbacks = [("finite_loss", RaiseOnNonFiniteLoss()), *default_callbacks,
                     *(self.callbacks or ())]
        if self.verbose >= 2:
            callbacks.append(("progress_bar", ProgressBar()))
        settings.setdefault("optimizer", torch.optim.Adam)
        if not self.verbose:
            settings["callbacks__print_log"] = QuietLog()
        settings.update(self._net_params())
        with torch_seed(seed):
            net = net_class(module, lr=self.lr, max_epochs=max_epochs,
                            batch_size=self.batch_size, callbacks=callbacks,
                            device=self.device_, verbose=int(self.verbose), **settings)
            # skorch compiles on any truthy value (compile="yes": minutes of torch.compile)
            check_scalar_param(getattr(net, "compile", False), "compile", kind="boolean")
            net.initialize()
            use_foreach_update(net)
            if max_epochs:
                # a small network on the CPU trains on one torch thread (threads.md)
                with small_ops_threads(net.module_):
                    net.partial_fit(X, y)
        if self.device_ is None:
            param = next(unwrap_module(net.module_).parameters(), None)
            self.device_ = param.device if param is not None else torch.device("cpu")
        return net

    def _checked_net_class(self):
        """``net_class``, checked to be the estimator's own class or a subclass of it.

        Any other net would drop the estimator's objective (its ``get_loss``,
        ``infer``, ...) and train something else without a word.
        """
        def base(net):
            return net.func if isinstance(net, functools.partial) else net

        net_class, default = self.net_class, base(type(self).net_class)
        cls = base(net_class)
        if not (isinstance(cls, type) and issubclass(cls, default)):
            raise TypeError(
                f"net_class must be {default.__name__} or a subclass of it (or a "
                f"functools.partial of one), e.g. class Net(AccelerateMixin, "
                f"{default.__name__}); got {net_class!r}.")
        return net_class

    @property
    def module_(self):
        """The fitted torch module (``net_.module_``)."""
        return self.net_.module_

    def __setstate__(self, state):
        super().__setstate__(state)
        device = state.get("device_")
        if device is not None and device.type == "cuda" and not torch.cuda.is_available():
            # skorch's unpickling already put the net's tensors on the CPU
            warn_user(f"{type(self).__name__} was fitted on {device}, which is not available; "
                      "using the CPU.", GeolearnWarning)
            self.device_ = torch.device("cpu")
            self.net_.set_params(device="cpu")
