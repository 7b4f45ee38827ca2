"""The paper's penalised Adam solver of SVBF (Sec. 4.2, Eq. 5-6), trained through skorch.

The basis ``K`` and the per-set coefficients ``beta`` (and ``alpha`` for
``"cos"``) are the parameters of :class:`PenalisedVariety`; an
:class:`~geolearn.models.ObjectiveNet` minimises the penalised loss with Adam,
trained by :class:`PenalisedAdam` through the one training route
(:class:`~geolearn.models.SkorchTrainingMixin`). The solver cycles over
fixed-order batches of sets: :class:`CyclingBatches` feeds all ``max_iter``
steps to skorch as one epoch (skorch's per-epoch work is paid once), and
:class:`StopWhenFlat` is the early stop, checked every 1,000 steps. The loss and
objective curves are the batch records of ``net.history``.
"""

import threading

import torch
from skorch.callbacks import Callback
from torch import nn

from .._utils import iter_batches
from ..models import ObjectiveNet, SkorchTrainingMixin


class PenalisedVariety(nn.Module):
    """``K`` and the coefficients ``beta`` (``alpha``) of the paper's penalised loss.

    ``forward(XT, idx)`` gives the data term of each set of a batch (``XT``:
    the sets ``X_i^T``, ``idx``: their indices): ``||X_i^T K b_i||^2``
    (``cos2``) or ``a_i^T X_i^T K b_i`` (``cos``, when ``alpha0`` is given),
    with ``b_i = beta_i / ||beta_i||`` and ``a_i = alpha_i / ||alpha_i||``.

    Parameters
    ----------
    K0 : tensor of shape (n, k)
    beta0 : tensor of shape (r, k)
    alpha0 : tensor of shape (r, L) or None, default=None
    """

    def __init__(self, K0, beta0, alpha0=None):
        super().__init__()
        self.K = nn.Parameter(K0.clone())
        self.beta = nn.Parameter(beta0.clone())
        self.alpha = None if alpha0 is None else nn.Parameter(alpha0.clone())

    def forward(self, XT, idx):
        every = len(idx) == len(self.beta)  # batches are consecutive: this one is all sets
        beta = self.beta if every else self.beta[idx]
        b = beta / torch.linalg.vector_norm(beta, dim=1, keepdim=True)
        XtKb = (XT @ (b @ self.K.T)[:, :, None])[..., 0]  # X_i^T K b_i
        if self.alpha is None:
            return XtKb.square().sum(dim=1)
        alpha = self.alpha if every else self.alpha[idx]
        a = alpha / torch.linalg.vector_norm(alpha, dim=1, keepdim=True)
        return (a * XtKb).sum(dim=1)


class SetsDataset(torch.utils.data.Dataset):
    """The sets ``XT`` (r, L, n) as skorch's dataset: one sample a set."""

    def __init__(self, XT):
        self.XT = XT

    def __len__(self):
        return len(self.XT)

    def batch(self, sl):
        """The sets of the slice ``sl`` (a view) with their indices, and an empty target."""
        idx = torch.arange(sl.start, sl.stop, device=self.XT.device)
        return {"XT": self.XT[sl], "idx": idx}, self.XT.new_empty(0)


class CyclingBatches:
    """skorch ``iterator_train``: ``n_steps`` batches of consecutive sets, cycled in order.

    The batches are ``iter_batches(len(dataset), batch_size)``; step ``t``
    takes batch ``t % n_batches``. All steps form one skorch epoch, which ends
    early once ``stop`` (a ``threading.Event``) is set.
    """

    def __init__(self, dataset, batch_size, n_steps, stop=None):
        self.batches = [dataset.batch(sl) for sl in iter_batches(len(dataset), batch_size)]
        self.n_steps = n_steps
        self.stop = stop

    def __iter__(self):
        for t in range(self.n_steps):
            if self.stop is not None and self.stop.is_set():
                return
            yield self.batches[t % len(self.batches)]


class StopWhenFlat(Callback):
    """Stop when the loss changed by at most ``tol * max(1, |old|)`` over ``period`` steps.

    Checked after steps ``2 * period``, ``3 * period``, ... only (the paper's
    solver kept its loop free of syncs); on a stop the epoch records
    ``converged=True`` and sets ``stop``, which ends :class:`CyclingBatches`'s epoch:
    training ends as a completed epoch, not as an interrupt.
    """

    def __init__(self, tol, stop, period=1000):
        self.tol = tol
        self.stop = stop
        self.period = period

    def on_batch_end(self, net, training=False, **kwargs):
        batches = net.history[-1]["batches"]
        t = len(batches) - 1
        if t < self.period or (t + 1) % self.period:
            return
        old = batches[-1 - self.period]["train_loss"]
        new = batches[-1]["train_loss"]
        if abs(new - old) <= self.tol * max(1.0, abs(old)):
            net.history.record("converged", True)
            self.stop.set()


def penalised_loss(w, orth_penalty, k):
    """``objective(module, terms, X, y, epoch)`` of :class:`~geolearn.models.ObjectiveNet`.

    ``loss = -sum_i w_i r terms_i + orth_penalty ||K^T K - I||_F^2`` over the
    batch (``w_i r = 1`` for uniform weights: the paper's plain sum); the part
    ``objective`` is the weighted mean of the data terms.
    """
    scale = w * len(w)
    eye = torch.eye(k, dtype=w.dtype, device=w.device)
    # uniform weights give a scale of exactly 1 (mostly): the product would change no bit
    plain_sum = bool((scale == 1).all())
    w_total = w.sum()

    def objective(module, terms, X, y, epoch):
        idx, K = X["idx"], module.K
        # batches are consecutive sets: one of len(w) sets is all of them, in order
        every = len(idx) == len(w)
        scale_batch, w_batch = (scale, w) if every else (scale[idx], w[idx])
        data = terms.sum() if plain_sum else (scale_batch * terms).sum()
        loss = -data + orth_penalty * (K.T @ K - eye).square().sum()
        total = w_total if every else w_batch.sum()
        return loss, {"objective": (w_batch * terms.detach()).sum() / total}

    return objective


class PenalisedAdam(SkorchTrainingMixin):
    """One run of the paper's solver, trained through the one route of the torch estimators.

    Not a user-facing estimator: :class:`~geolearn.subspaces.SVBF` makes one per
    restart, so that the solver validates its net settings, seeds, stops on a
    non-finite loss and reports interruptions as every torch estimator does.

    Parameters
    ----------
    lr : float
    batch_size : int
        ``-1``: every set in one batch.
    device : str or torch.device
    """

    net_class = ObjectiveNet

    def __init__(self, *, lr, batch_size, device, callbacks=None, verbose=0):
        self.lr = lr
        self.batch_size = batch_size
        self.device = device
        self.callbacks = callbacks
        self.verbose = verbose


def adam_solve(XT, w, K0, beta0, alpha0, objective, *, orth_penalty, learning_rate, max_iter,
               tol, batch_size=None, seed=0):
    """The paper's penalised Adam iteration (Eq. 5-6), ``c = 1``, through skorch.

    ``loss = -sum_i w_i b_i^T K^T X_i X_i^T K b_i + orth_penalty ||K^T K - I||_F^2`` with
    ``b_i = beta_i / ||beta_i||`` (``cos``: ``-sum_i w_i a_i^T X_i^T K b_i``); ``w_i = 1``
    for unweighted data, as in the paper. Early stop (only when ``tol`` is not
    None): relative change of the loss over the last 1,000 iterations below ``tol``.
    ``seed`` seeds torch during the run (the iteration itself draws nothing).

    Returns ``K, history, objective_curve, converged``: the net's skorch ``History``
    (one epoch, the loss of each step in its batches) and the normalised data term at
    the current ``b_i`` (``a_i``) at each step.
    """
    stop = threading.Event()
    callbacks = [] if tol is None else [("stop_when_flat", StopWhenFlat(tol, stop))]
    run = PenalisedAdam(lr=learning_rate, batch_size=-1 if batch_size is None else batch_size,
                        device=XT.device)
    net = run._fit_net(
        PenalisedVariety, SetsDataset(XT), None, seed=seed, max_epochs=1,
        default_callbacks=callbacks, module__K0=K0, module__beta0=beta0,
        module__alpha0=alpha0 if objective == "cos" else None,
        objective=penalised_loss(w, orth_penalty, K0.shape[1]), parts=("objective",),
        iterator_train=CyclingBatches, iterator_train__n_steps=max_iter,
        iterator_train__stop=stop, train_split=None)
    epoch = net.history[-1]
    objectives = [batch["objective"] for batch in epoch["batches"]]
    return net.module_.K.detach(), net.history, objectives, epoch.get("converged", False)
