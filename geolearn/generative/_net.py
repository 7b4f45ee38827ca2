"""The skorch side of the torch-trained estimators: a net trained on a per-sample objective.

skorch owns the training loop (batches, optimiser, history, callbacks); the
estimators only supply the module and the objective.
"""

import numpy as np
import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, PassthroughScoring, ProgressBar
from skorch.utils import to_tensor


class TensorDataset(torch.utils.data.Dataset):
    """Rows of a tensor ``X`` (and ``y``), fetched a whole batch at a time.

    ``__getitems__`` lets the DataLoader index the batch in one call instead of
    collating ``batch_size`` single rows, which dominates the step time of small
    networks.
    """

    def __init__(self, X, y=None):
        self.X = X
        self.y = y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.__getitems__([i])

    def __getitems__(self, indices):
        idx = torch.as_tensor(indices, dtype=torch.long)
        y = self.y[idx] if self.y is not None else torch.empty(len(idx), 0)
        return self.X[idx], y


def collate_batch(batch):
    """Identity collate: :class:`TensorDataset` already returns whole batches."""
    return batch


class RaiseOnNonFiniteLoss(Callback):
    """Stop training with a clear error the first epoch whose training loss is not finite."""

    def on_epoch_end(self, net, **kwargs):
        losses = net.history[:, "train_loss"]
        if not np.isfinite(losses[-1]):
            finite = [loss for loss in losses if np.isfinite(loss)]
            last = f"{finite[-1]:.6g}" if finite else "none"
            raise RuntimeError(
                f"training loss became non-finite at epoch {len(losses)} (last finite loss: "
                f"{last}); lower lr, or scale the input (e.g. MinMaxScaler).")


class ObjectiveNet(NeuralNet):
    """A skorch ``NeuralNet`` whose loss is ``objective(module, y_pred, X, y, epoch)``.

    The objective returns ``(loss, parts)``; each part (a scalar tensor) is
    recorded in the batch history and averaged per epoch by a
    ``PassthroughScoring`` callback, so ``history`` holds e.g. ``recon`` and ``kl``.
    """

    def __init__(self, module, *, objective, parts=(), **kwargs):
        # the criterion is unused: get_loss evaluates the objective instead
        super().__init__(module, criterion=torch.nn.Identity, **kwargs)
        self.objective = objective
        self.parts = parts

    def get_default_callbacks(self):
        extra = [(f"{p}_epoch", PassthroughScoring(name=p, on_train=True)) for p in self.parts]
        extra.append(("finite_loss", RaiseOnNonFiniteLoss()))
        if self.verbose > 1:
            extra.append(("progress_bar", ProgressBar()))
        return [*super().get_default_callbacks(), *extra]

    def get_loss(self, y_pred, y_true, X=None, training=False):
        X = to_tensor(X, device=self.device)
        y_true = to_tensor(y_true, device=self.device)
        loss, parts = self.objective(self.module_, y_pred, X, y_true, epoch=len(self.history) - 1)
        if training:
            for name, value in parts.items():
                self.history.record_batch(name, value.item())
        return loss


def history_records(net, parts):
    """The epoch history as a list of dicts ``{"epoch", "loss", *parts}``."""
    keys = ("epoch", "train_loss", *parts)
    return [{("loss" if k == "train_loss" else k): (row[k] if k == "epoch" else float(row[k]))
             for k in keys} for row in net.history]
