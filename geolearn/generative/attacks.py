"""Patch (l0) attacks on a fixed image region: PGD and Nesterov-accelerated signed gradients."""

import numbers

import numpy as np
import torch
from sklearn.utils.validation import check_array, check_is_fitted

from .._utils import check_image_shape, iter_batches, to_tensor, torch_seed
from ._base import check_unit_interval


def rectangular_patch_mask(image_shape, top, left, height, width):
    """Boolean mask of a rectangle in every channel, flattened row-major (channels first).

    Parameters
    ----------
    image_shape : tuple of int
        ``(H, W)`` or ``(C, H, W)``.
    top, left, height, width : int
        The rectangle; it must lie inside the image.

    Returns
    -------
    mask : ndarray of shape (C*H*W,), bool

    Examples
    --------
    >>> from geolearn.generative import rectangular_patch_mask
    >>> m = rectangular_patch_mask((8, 8), top=0, left=0, height=8, width=2)
    >>> m.shape, int(m.sum())
    ((64,), 16)
    """
    C, H, W = check_image_shape(image_shape)
    for name, v in (("top", top), ("left", left), ("height", height), ("width", width)):
        if not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"{name} must be a non-negative integer; got {v!r}.")
    if height < 1 or width < 1 or top + height > H or left + width > W:
        raise ValueError(f"the patch rows {top}:{top + height}, columns {left}:{left + width} "
                         f"must be non-empty and inside the {H}x{W} image.")
    mask = np.zeros((C, H, W), dtype=bool)
    mask[:, top:top + height, left:left + width] = True
    return mask.ravel()


def check_mask(mask, n_features, name="mask"):
    """A boolean support mask as a flat ``(n_features,)`` array with at least one True."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"{name} must be a boolean array; got dtype {mask.dtype}.")
    if mask.size != n_features:
        raise ValueError(f"{name} has {mask.size} entries but X has {n_features} features.")
    if not mask.any():
        raise ValueError(f"{name} is all False: nothing may change.")
    return mask.ravel()


def _logits_fn(estimator):
    """``(logits callable, device, label encoder)`` for a fitted VAEClassifier or a module."""
    if isinstance(estimator, torch.nn.Module):
        params = list(estimator.parameters())
        device = params[0].device if params else torch.device("cpu")
        return estimator, device, None
    if not hasattr(estimator, "_torch_logits"):
        raise TypeError("estimator must be a fitted VAEClassifier (or any estimator with "
                        "_torch_logits) or a torch.nn.Module mapping (B, D) to logits; got "
                        f"{type(estimator).__name__}.")
    check_is_fitted(estimator)
    return estimator._torch_logits, estimator.device_, estimator.classes_


def patch_attack(estimator, X, y, mask, *, method="pgd", n_iter=2048, step_size=1 / 255,
                 momentum=1.0, random_start=True, clip=(0.0, 1.0), batch_size=256,
                 random_state=None):
    """Untargeted patch attack: maximise the cross-entropy by changing only ``mask`` pixels.

    ``x_adv = x * (1 - M) + delta * M``. 'pgd' takes signed-gradient steps on
    ``delta`` from a uniform random start ("Towards deep learning models resistant to
    adversarial attacks"); 'nag' adds a Nesterov look-ahead and an accumulated
    l1-normalised gradient with decay ``momentum`` ("Nesterov accelerated gradient and
    scale invariance for adversarial attacks"). Every step is clipped to ``clip``.

    Parameters
    ----------
    estimator : VAEClassifier or torch.nn.Module
        A fitted VAEClassifier (attacked through ``h(mu(x))``) or a module mapping
        ``(B, D)`` float tensors to logits (then ``y`` holds class indices).
    X : array-like of shape (n_samples, n_features)
        Clean inputs inside ``clip``.
    y : array-like of shape (n_samples,)
        True labels.
    mask : array-like of bool, shape (n_features,) or the image shape
        The patch support (see :func:`rectangular_patch_mask`).
    method : {'pgd', 'nag'}, default='pgd'
    n_iter : int, default=2048
    step_size : float, default=1/255
    momentum : float, default=1.0
        Decay of the 'nag' accumulator.
    random_start : bool, default=True
        Start the patch from U[clip] instead of the clean pixels.
    clip : (float, float), default=(0.0, 1.0)
    batch_size : int, default=256
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X_adv : ndarray of shape (n_samples, n_features), float64
        Pixels outside the mask are bit-identical to X.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import VAEClassifier, patch_attack, rectangular_patch_mask
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((40, 16)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = VAEClassifier(n_latent=2, hidden_sizes=(8,), max_epochs=2, random_state=0)
    >>> mask = rectangular_patch_mask((4, 4), 0, 0, 4, 1)
    >>> X_adv = patch_attack(clf.fit(X, y), X, y, mask, n_iter=5, random_state=0)
    >>> bool(np.all(X_adv[:, ~mask] == X[:, ~mask]))
    True
    """
    logits_fn, device, classes = _logits_fn(estimator)
    X = check_array(X, dtype=np.float64)
    if method not in ("pgd", "nag"):
        raise ValueError(f"method must be 'pgd' or 'nag'; got {method!r}.")
    if not isinstance(n_iter, numbers.Integral) or n_iter < 1:
        raise ValueError(f"n_iter must be a positive integer; got {n_iter!r}.")
    if not step_size > 0:
        raise ValueError(f"step_size must be positive; got {step_size!r}.")
    lo, hi = clip
    check_unit_interval(X, bounds=(lo, hi), what=f"patch_attack with clip={clip}",
                        advice="Scale X like the training data or change clip.")
    mask = check_mask(mask, X.shape[1])
    y = np.asarray(y).ravel()
    if len(y) != len(X):
        raise ValueError(f"y has {len(y)} labels but X has {len(X)} samples.")
    if classes is not None:
        unknown = np.setdiff1d(y, classes)
        if unknown.size:
            raise ValueError(f"y contains labels unknown to the classifier: {unknown[:5]}.")
        y = np.searchsorted(classes, y)
    M = torch.as_tensor(mask, dtype=torch.float32, device=device)
    out = X.copy()
    with torch_seed(random_state), _frozen(estimator):
        for sl in iter_batches(len(X), batch_size):
            x = to_tensor(X[sl], device=device)
            target = torch.as_tensor(y[sl], dtype=torch.long, device=device)
            start = torch.rand_like(x) * (hi - lo) + lo if random_start else x
            x_adv = x * (1 - M) + start * M
            acc = torch.zeros_like(x)
            for _ in range(n_iter):
                probe = x_adv
                if method == "nag":
                    probe = (x_adv + step_size * momentum * acc * M).clamp(lo, hi)
                grad = _ce_grad(logits_fn, probe, target)
                if method == "nag":
                    acc = momentum * acc + grad / grad.abs().sum(1, keepdim=True).clamp_min(1e-12)
                    grad = acc
                x_adv = (x_adv + step_size * grad.sign() * M).clamp(lo, hi)
            out[sl, mask] = x_adv.detach().cpu().numpy().astype(np.float64)[:, mask]
    return out


def _ce_grad(logits_fn, x, target):
    x = x.detach().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(logits_fn(x), target, reduction="sum")
    return torch.autograd.grad(loss, x)[0]


class _frozen:
    """Eval mode and no parameter gradients for the duration of an attack or purification."""

    def __init__(self, estimator):
        self.module = estimator if isinstance(estimator, torch.nn.Module) else estimator.module_

    def __enter__(self):
        self.training = self.module.training
        self.flags = [p.requires_grad for p in self.module.parameters()]
        self.module.eval()
        for p in self.module.parameters():
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p, flag in zip(self.module.parameters(), self.flags):
            p.requires_grad_(flag)
        self.module.train(self.training)
