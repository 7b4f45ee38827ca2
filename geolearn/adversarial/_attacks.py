"""Gradient attacks on any differentiable classifier: FGSM, PGD and Carlini-Wagner L2.

Every attack goes through :func:`geolearn.models.as_model`, so it works on a
``torch.nn.Module``, a fitted skorch net or a converted scikit-learn MLP alike.
The model is evaluated in eval mode (its modes restored afterwards), input
gradients come from :func:`torch.autograd.grad` so the parameters' ``.grad``
buffers are never touched, and the loss is summed over the batch so that each
sample's gradient does not depend on ``batch_size``.
"""

import warnings

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils import check_random_state

from .._utils import iter_batches, to_numpy
from ..models import as_model
from ._validation import (
    check_clip,
    check_in_box,
    check_labels,
    check_logits,
    check_model_inputs,
    check_positive,
)


class _Attack:
    """Validated inputs of one attack call and the batched loop that runs it."""

    def __init__(self, purpose, model, X, y, clip, image_shape, batch_size, device):
        self.model = as_model(model, device=device)
        self.model.require_gradients(purpose)
        self.lo, self.hi = check_clip(clip, allow_none=purpose != "carlini_wagner_l2")
        self.shape = np.shape(X)
        self.X = check_model_inputs(X, image_shape)
        check_in_box(self.X, self.lo, self.hi)
        self.y = check_labels(y, len(self.X))
        self.batch_size = check_positive(batch_size, "batch_size", integer=True)
        self.logits = self.model.feature_fn(None)

    def logits_of(self, x, y):
        z = self.logits(x)
        check_logits(z, y)
        return z

    def input_gradient(self, x, y):
        """Gradient of the summed cross-entropy with respect to the inputs ``x``."""
        x = x.detach().requires_grad_(True)
        loss = F.cross_entropy(self.logits_of(x, y), y, reduction="sum")
        return torch.autograd.grad(loss, x)[0]

    def run(self, attack_batch, *extra):
        """Apply ``attack_batch(x, y, *extra_batch)`` batch by batch; float32 in ``X``'s layout."""
        out = np.empty(self.X.shape, dtype=np.float32)
        m = self.model
        with m.eval_mode(), torch.enable_grad():
            for sl in iter_batches(len(self.X), self.batch_size):
                x = m.to_tensor(self.X[sl])
                y = torch.as_tensor(self.y[sl], device=m.device)
                out[sl] = to_numpy(attack_batch(x, y, *(e[sl] for e in extra)))
        return out.reshape(self.shape)


def fgsm(model, X, y, eps, *, clip=(0.0, 1.0), image_shape=None, batch_size=256, device=None):
    """Fast gradient sign method: one signed gradient step of size ``eps``.

    ``x' = clip(x + eps * sign(grad_x J(x, y)), lo, hi)`` with ``J`` the
    cross-entropy of the model's logits and the true labels (Goodfellow et
    al., 2015; eq. 3 of the linear-mapping paper), ``sign(0) = 0``.

    Parameters
    ----------
    model : torch.nn.Module, fitted skorch net or differentiable sklearn model
        Outputs logits ``(n, n_classes)``; seen through :func:`geolearn.models.as_model`.
        Any input normalisation must be part of its forward pass.
    X : array-like of shape (n, ...)
        Clean inputs in the box ``clip``, in the model's layout, or flat rows
        with ``image_shape``.
    y : array-like of int, shape (n,)
        True labels in ``[0, n_classes)``.
    eps : float
        L-infinity budget, in the units of the input box (>= 0).
    clip : (float, float) or None, default=(0.0, 1.0)
        The input box ``(lo, hi)``; inputs outside it raise. ``None``: no box
        (eq. 3 of the paper as printed).
    image_shape : tuple of int, optional
        ``(C, H, W)`` to fold flat rows into images before the forward pass.
    batch_size : int, default=256
    device : str or torch.device, optional
        Checked against the model's device (a model is never moved); batches go
        to the model's device.

    Returns
    -------
    X_adv : ndarray of float32, shaped like ``X``

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import fgsm
    >>> net = torch.nn.Linear(4, 3)
    >>> X = np.full((2, 4), 0.5, dtype=np.float32)
    >>> X_adv = fgsm(net, X, [0, 2], eps=0.1)
    >>> bool(np.abs(X_adv - X).max() <= 0.1 + 1e-6)
    True
    """
    check_positive(eps, "eps", strict=False)
    a = _Attack("fgsm", model, X, y, clip, image_shape, batch_size, device)

    def step(x, t):
        return (x + eps * a.input_gradient(x, t).sign()).clamp(a.lo, a.hi)

    return a.run(step)


def pgd(model, X, y, eps, *, alpha=None, steps=10, random_start=True, clip=(0.0, 1.0),
        image_shape=None, batch_size=256, device=None, random_state=None):
    """Projected gradient descent in the L-infinity ball (Madry et al., 2018).

    ``delta_{t+1} = P(delta_t + alpha * sign(grad_x J(x + delta_t, y)))`` where
    ``P`` clips to ``[-eps, eps]`` and then to the box ``[lo - x, hi - x]``
    (eq. 4 of the linear-mapping paper). With ``steps=1``, ``alpha=eps`` and
    ``random_start=False`` it is exactly :func:`fgsm`.

    Parameters
    ----------
    model, X, y, eps, clip, image_shape, batch_size, device
        As in :func:`fgsm` (``clip=None``: only the eps-ball, eq. 4 as printed).
    alpha : float, optional
        Step size (> 0); default ``2.5 * eps / steps``.
    steps : int, default=10
        Number of gradient steps (>= 1).
    random_start : bool, default=True
        Start from ``delta_0 ~ U[-eps, eps]`` (clipped to the box) instead of 0.
    random_state : int, RandomState instance or None, default=None
        Seeds the random start (drawn in numpy, so results do not depend on
        ``batch_size`` or the device).

    Returns
    -------
    X_adv : ndarray of float32, shaped like ``X``

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import pgd
    >>> net = torch.nn.Linear(4, 3)
    >>> X = np.full((2, 4), 0.5, dtype=np.float32)
    >>> X_adv = pgd(net, X, [0, 2], eps=0.1, random_state=0)
    >>> bool(np.abs(X_adv - X).max() <= 0.1 + 1e-6)
    True
    """
    check_positive(eps, "eps", strict=False)
    check_positive(steps, "steps", integer=True)
    alpha = 2.5 * eps / steps if alpha is None else check_positive(alpha, "alpha")
    a = _Attack("pgd", model, X, y, clip, image_shape, batch_size, device)
    if random_start:
        rng = check_random_state(random_state)
        delta0 = rng.uniform(-eps, eps, size=a.X.shape).astype(np.float32)
    else:
        delta0 = np.zeros(a.X.shape, dtype=np.float32)

    def attack(x, t, d0):
        x_adv = (x + a.model.to_tensor(d0)).clamp(a.lo, a.hi)
        for _ in range(steps):
            delta = x_adv - x + alpha * a.input_gradient(x_adv, t).sign()
            x_adv = (x + delta.clamp(-eps, eps)).clamp(a.lo, a.hi).detach()
        return x_adv

    return a.run(attack, delta0)


def carlini_wagner_l2(model, X, y, *, c=1.0, kappa=0.0, steps=100, lr=0.01, binary_search_steps=0,
                      clip=(0.0, 1.0), image_shape=None, batch_size=256, device=None):
    """Carlini-Wagner L2 attack (untargeted), optimised with Adam in tanh space.

    With ``x'(w) = lo + (hi - lo) (tanh(w) + 1) / 2`` each sample minimises
    ``||x'(w) - x||_2^2 + c * max(Z(x')_y - max_{j != y} Z(x')_j, -kappa)``
    (``Z`` the logits), starting from ``w = atanh(2 (x - lo) / (hi - lo) - 1)``.
    Per sample it keeps the misclassified iterate with the smallest L2
    distance; samples never misclassified return the last iterate, are flagged
    in ``success`` and counted in a warning.

    Parameters
    ----------
    model, X, y, image_shape, batch_size, device
        As in :func:`fgsm`.
    clip : (float, float), default=(0.0, 1.0)
        The input box; required (the tanh change of variables needs it).
    c : float, default=1.0
        Weight of the margin term (> 0); the starting value when
        ``binary_search_steps > 0``.
    kappa : float, default=0.0
        Confidence margin (>= 0).
    steps : int, default=100
        Adam steps per run (>= 1).
    lr : float, default=0.01
        Adam learning rate (> 0).
    binary_search_steps : int, default=0
        ``0``: one run with ``c``. ``k > 0``: ``k`` runs, after each of which
        every sample's ``c`` is bisected (halved towards the largest failing
        value when the run succeeded, raised otherwise: tenfold while no upper
        bound is known).

    Returns
    -------
    X_adv : ndarray of float32, shaped like ``X``
    success : ndarray of bool, shape (n,)
        Whether a misclassified iterate was found.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import carlini_wagner_l2
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Linear(4, 3)
    >>> X = np.full((2, 4), 0.5, dtype=np.float32)
    >>> X_adv, success = carlini_wagner_l2(net, X, [0, 2], c=10.0, steps=50, lr=0.1)
    >>> X_adv.shape, success.dtype
    ((2, 4), dtype('bool'))
    """
    check_positive(c, "c")
    check_positive(kappa, "kappa", strict=False)
    check_positive(steps, "steps", integer=True)
    check_positive(lr, "lr")
    check_positive(binary_search_steps, "binary_search_steps", strict=False, integer=True)
    a = _Attack("carlini_wagner_l2", model, X, y, clip, image_shape, batch_size, device)
    success = np.zeros(len(a.X), dtype=bool)
    idx = np.arange(len(a.X))

    def attack(x, t, rows):
        lo, hi = a.lo, a.hi
        w0 = torch.atanh((2 * (x - lo) / (hi - lo) - 1).clamp(-1 + 1e-6, 1 - 1e-6))
        const = torch.full((len(x),), float(c), dtype=x.dtype, device=x.device)
        lower = torch.zeros_like(const)
        upper = torch.full_like(const, float("inf"))
        best_l2 = torch.full_like(const, float("inf"))
        best = x.clone()
        found = torch.zeros(len(x), dtype=torch.bool, device=x.device)
        for _ in range(max(1, binary_search_steps)):
            w = w0.clone().requires_grad_(True)
            optimizer = torch.optim.Adam([w], lr=lr)
            run_found = torch.zeros_like(found)
            for _ in range(steps):
                x_adv = lo + (hi - lo) * (torch.tanh(w) + 1) / 2
                z = a.logits_of(x_adv, t)
                l2 = (x_adv - x).flatten(1).pow(2).sum(1)
                improved = (z.argmax(1) != t) & (l2 < best_l2)
                best_l2 = torch.where(improved, l2.detach(), best_l2)
                best[improved] = x_adv.detach()[improved]
                run_found |= z.argmax(1) != t
                true = z.gather(1, t[:, None]).squeeze(1)
                other = z.scatter(1, t[:, None], float("-inf")).amax(1)
                loss = (l2 + const * (true - other).clamp(min=-kappa)).sum()
                optimizer.zero_grad()
                w.grad = torch.autograd.grad(loss, w)[0]
                optimizer.step()
            last = (lo + (hi - lo) * (torch.tanh(w) + 1) / 2).detach()
            best[~found & ~run_found] = last[~found & ~run_found]
            found |= run_found
            # bisection of c: shrink where the run succeeded, grow where it failed
            upper = torch.where(run_found, torch.minimum(upper, const), upper)
            lower = torch.where(run_found, lower, torch.maximum(lower, const))
            const = torch.where(torch.isinf(upper), const * 10, (lower + upper) / 2)
        success[rows] = to_numpy(found)
        return best

    X_adv = a.run(attack, idx)
    failed = int((~success).sum())
    if failed:
        warnings.warn(
            f"carlini_wagner_l2: {failed} of {len(success)} samples were never misclassified; "
            "their last iterate is returned (flagged False in success). Raise c, steps or "
            "binary_search_steps.",
            UserWarning,
            stacklevel=2,
        )
    return X_adv, success
