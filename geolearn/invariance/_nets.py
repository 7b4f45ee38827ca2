"""The torch side of InvariantClassifier: the (weight-tied) MLP, the skorch net, a callback."""

import copy
from collections import OrderedDict

import torch
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, EpochScoring, PassthroughScoring
from skorch.utils import to_numpy, to_tensor
from torch import nn

from ..models._internal import LeanLoopMixin, floats_in_history, weighted_mean

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}


class Standardize(nn.Module):
    """``(x - mean) / std`` with scalar buffers: commutes with every pixel permutation."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self.register_buffer("mean", torch.tensor(float(mean)))
        self.register_buffer("std", torch.tensor(float(std)))

    def forward(self, x):
        return (x - self.mean) / self.std


class GroupPooledLinear(nn.Module):
    """``z_j(x) = pool_{g in G} (w_j . vec(g x)) + b_j``: a group-invariant linear layer.

    Each neuron sees every element of the orbit through one tied weight vector
    and pools over the group, so ``z(hx) = z(x)`` exactly for every ``h`` in G.
    """

    def __init__(self, in_features, out_features, group, pool="max"):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.group = group
        self.pool = pool

    def forward(self, x):
        n = len(x)
        orbit = torch.cat([g(x) for g in self.group.transforms]).flatten(1)
        z = (orbit @ self.linear.weight.T).view(self.group.order, n, -1)
        z = z.amax(0) if self.pool == "max" else z.mean(0)
        return z + self.linear.bias


def build_mlp(image_shape, n_classes, hidden_layer_sizes, activation, group=None,
              weight_tying=False, group_pool="max"):
    """Images ``(N, C, H, W)`` -> logits; the first layer pooled over ``group`` when tied."""
    d = int(torch.Size(image_shape).numel())
    sizes = [d, *hidden_layer_sizes, n_classes]
    layers = OrderedDict()
    if not weight_tying:
        layers["flatten"] = nn.Flatten()
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        last = i == len(sizes) - 2
        name = "out" if last else f"fc{i}"
        if i == 0 and weight_tying:
            layers[name] = GroupPooledLinear(a, b, group, group_pool)
        else:
            layers[name] = nn.Linear(a, b)
        if not last:
            layers[f"act{i}"] = ACTIVATIONS[activation]()
    return nn.Sequential(layers)


def build_invariant_module(*, module, n_classes, mean, std, mlp, **module_params):
    """``Standardize(mean, std)`` followed by the classifier body, as one ``nn.Sequential``.

    The net's ``module`` factory (bound with :func:`functools.partial`), called by
    skorch at ``initialize()`` with the user's ``module__*`` settings: a class
    ``module`` is built with ``n_classes=`` and those settings, an instance is
    deep-copied, and ``None`` builds the MLP of ``build_mlp(**mlp)``.
    """
    if module is None:
        body = build_mlp(n_classes=n_classes, **mlp)
    elif isinstance(module, type):
        body = module(n_classes=n_classes, **module_params)
    else:
        body = copy.deepcopy(module)
    return nn.Sequential(OrderedDict(standardize=Standardize(mean, std), model=body))


def invariance_error(f0, fg, kind, eps=1e-8):
    """``e(f(x), f(gx))`` per element ``g`` and sample, shape (|G_b|, n); ``fg`` is (|G_b|, n, K)."""
    if kind == "li":
        return 0.5 * ((f0 - fg) ** 2).sum(-1)
    if kind == "nli":
        return ((f0 - fg) ** 2).sum(-1) / ((f0**2).sum(-1) + eps)
    log_u = torch.log_softmax(f0, -1)
    return (log_u.exp() * (log_u - torch.log_softmax(fg, -1))).sum(-1)


def labels_of(y):
    """The labels of a batch's targets, ``y`` or ``(y, sample_weight)``, as numpy."""
    return to_numpy(y[0] if isinstance(y, (tuple, list)) else y)


class InvarianceNet(LeanLoopMixin, NeuralNetClassifier):
    """skorch classifier whose training forward adds group augmentation and the regulariser.

    In training mode :meth:`infer` draws the augmentation and makes one forward
    pass on ``[x; g_1 x; ...; g_k x]``, which gives ``f(x)`` and every
    ``f(g x)``; :meth:`get_loss` returns ``CE(f(x), y) + nu * I`` with gradients
    through both. Only these two skorch hooks carry the objective, so skorch's
    training step and any mixin's that calls them (``AccelerateMixin``, whose
    module may be wrapped in ``DistributedDataParallel``) train the same loss.
    With ``nu > 0`` the history also holds the epoch means of the two terms,
    ``ce`` and ``invariance`` (``I``).
    """

    def __init__(self, *args, group=None, augment=True, nu=0.0, invariance_loss="li",
                 reg_elements="all", **kwargs):
        super().__init__(*args, **kwargs)
        self.group = group
        self.augment = augment
        self.nu = nu
        self.invariance_loss = invariance_loss
        self.reg_elements = reg_elements

    def infer(self, x, **fit_params):
        """Logits ``f(x)``; in training mode of the augmented batch, keeping ``I`` aside."""
        self._penalty = None
        if not self.module_.training:
            return super().infer(x, **fit_params)
        x = to_tensor(x, device=self.device)
        if self.augment:
            x, _ = self.group.apply_random(x)
        if self.nu == 0:
            return super().infer(x, **fit_params)
        others = self.group.non_identity
        if self.reg_elements != "all":
            pick = torch.randperm(len(others))[: self.reg_elements]
            others = [others[i] for i in pick.tolist()]
        n = len(x)
        logits = super().infer(torch.cat([x] + [self.group[k](x) for k in others]),
                               **fit_params)
        self._penalty = invariance_error(logits[:n], logits[n:].view(len(others), n, -1),
                                         self.invariance_loss)
        return logits[:n]

    def get_default_callbacks(self):
        parts = [] if not self.nu else [
            (f"{p}_epoch", PassthroughScoring(name=p, on_train=True)) for p in ("ce", "invariance")]
        callbacks = [(name, EpochScoring("accuracy", name="valid_acc", lower_is_better=False,
                                         target_extractor=labels_of)) if name == "valid_acc"
                     else (name, cb) for name, cb in super().get_default_callbacks()]
        return [*callbacks, *parts]

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """Cross-entropy, plus ``nu`` times the invariance error of the batch in training.

        Both are means over the batch (and the group elements), weighted when ``y_true``
        is ``(y, sample_weight)``.
        """
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        penalty, self._penalty = getattr(self, "_penalty", None), None
        if training and penalty is not None:
            penalty = (weighted_mean(penalty.mean(0), y_true[1])
                       if isinstance(y_true, (tuple, list)) else penalty.mean())
            # kept as tensors until the epoch ends: no device sync per batch
            self.history.record_batch("ce", loss.detach())
            self.history.record_batch("invariance", penalty.detach())
            loss = loss + self.nu * penalty
        return loss

    def on_epoch_end(self, net, **kwargs):
        # before the callbacks, which average the terms per epoch
        floats_in_history(self.history)
        super().on_epoch_end(net, **kwargs)

    def on_train_end(self, net, **kwargs):
        floats_in_history(self.history)  # an interrupted epoch's terms too
        super().on_train_end(net, **kwargs)


class RestoreBest(Callback):
    """Keep the ``state_dict`` of the best epoch by ``monitor`` in memory and load it at the end."""

    def __init__(self, monitor="valid_acc"):
        self.monitor = monitor

    def on_train_begin(self, net, **kwargs):
        self.best_state_ = None

    def on_epoch_end(self, net, **kwargs):
        if net.history[-1, f"{self.monitor}_best"]:
            self.best_state_ = {k: v.detach().clone() for k, v in net.module_.state_dict().items()}
            self.best_epoch_ = net.history[-1, "epoch"]

    def on_train_end(self, net, **kwargs):
        if self.best_state_ is not None:
            net.module_.load_state_dict(self.best_state_)
        self.best_state_ = None
