"""The package's one PGD loop: L2 or L-infinity balls, restarts, a per-sample projection hook.

:func:`pgd` (Madry et al.'s last iterate or, with ``stop_on_success``, the "exists
an adversarial point" attack of the manifold risk decomposition), :func:`fgsm` (one
step of it) and the manifold attacks all run :func:`pgd_loop`. The normal attack is this loop with a
projection onto each sample's normal space; the classifier is seen through
:class:`Classifier`, which wraps :func:`geolearn.models.as_model`.
"""

from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils import check_random_state

from .._utils import (
    check_choice,
    check_image_shape,
    check_images,
    check_numeric_array,
    check_scalar_param,
    iter_batches,
    row_seeds,
    small_ops_threads,
    to_numpy,
)
from ..models import as_model
from ._validation import check_clip, check_in_box

NORMS = ("l2", "linf")
LOSSES = ("ce", "margin")
#: the open L2 ball B_eps(x) of the theorem: budgets are shrunk by this relative amount
OPEN_BALL = 1e-7


class Classifier:
    """A classifier seen on flat rows: logits ``(n, C)``, input gradients, wrongness.

    Binary scores ``(n,)`` or ``(n, 1)`` become the two logits ``(0, z)``. A row
    is *wrong* for label ``t`` when ``z_t <= max_{j != t} z_j`` (ties count as
    errors, the paper's ``f(x) y <= 0``).

    Parameters
    ----------
    estimator : model accepted by :func:`geolearn.models.as_model`
    n_features : int
        ``D``, the flat row size.
    image_shape : tuple of int, optional
        The per-sample shape the rows hold: they are folded into it for a model that
        takes images (:meth:`~geolearn.models.ModelAdapter.sample_layout`).
    device : str, default="auto"
    """

    def __init__(self, estimator, n_features, image_shape=None, device="auto"):
        self.model = as_model(estimator, device=None if device == "auto" else device)
        shape = (n_features,) if image_shape is None else tuple(image_shape)
        # the rows go to the model in the layout it takes (folded only for a conv net), as
        # in every other image method of the door
        self.shape = self.model.sample_layout((n_features,), shape) if len(shape) > 1 else shape
        self.device = self.model.device
        self._f = self.model.feature_fn(None) if self.model.differentiable else None
        self._label_range = None  # (min, max) class index, checked on the next logits

    def threads(self):
        """The attack's thread block: one torch thread for a small CPU module or a
        black-box estimator (:func:`~geolearn._utils.small_ops_threads`)."""
        return small_ops_threads(self.model.module)

    @property
    def differentiable(self):
        return self.model.differentiable

    def require_gradients(self, purpose):
        if not self.differentiable:
            raise TypeError(f"{purpose} needs gradients, but {self.model.name} is a black-box "
                            "estimator: use attack='grid' or pass a torch module (or a fitted "
                            "skorch net, MLPClassifier or scikit-learn linear model).")

    def logits(self, x):
        """Logits ``(n, C)`` of flat rows ``x`` (a tensor on :attr:`device`)."""
        n = x.shape[0]  # not len(): torch's Tensor.__len__ is a Python call
        if self._f is None:
            z = torch.as_tensor(self.model.forward(to_numpy(x).reshape(n, *self.shape)))
        else:
            z = self._f(x.reshape(n, *self.shape))
        if z.ndim == 0 or z.shape[0] != n:
            raise ValueError("the model must output logits of shape (n_samples, n_classes) or "
                             f"scores of shape (n_samples,); got output of shape "
                             f"{tuple(z.shape)} for {n} samples.")
        z = z.reshape(n, -1) if z.ndim > 2 or z.ndim == 1 else z
        if z.shape[1] == 1:
            z = torch.cat([torch.zeros_like(z), z], dim=1)
        if self._label_range is not None:
            check_label_range(*self._label_range, z.shape[1])
            self._label_range = None
        return z

    def check_labels_on_first_pass(self, t):
        """Check the class indices ``t`` against the width of the next logits computed,
        before any loss reads them: the attack's first batch, instead of a probe pass."""
        self._label_range = (int(t.min()), int(t.max())) if len(t) else None

    def n_classes(self):
        with torch.no_grad(), self.model.frozen(), small_ops_threads():  # one row: small ops
            return self.logits(torch.zeros(1, int(np.prod(self.shape)), device=self.device,
                                           dtype=self.model.dtype)).shape[1]

    def to_tensor(self, X):
        return torch.as_tensor(np.asarray(X), dtype=self.model.dtype, device=self.device)

    def grad_wrong(self, x, t, need_grad=True, loss="ce", need_wrong=True):
        """``(input gradient of the summed loss or None, wrong)`` from one forward pass.

        ``need_wrong=False``: a gradient step whose caller does not read ``wrong`` gets None
        for it (a pass without the gradient always judges).
        """
        if not need_grad:
            with torch.no_grad():
                return None, wrong(self.logits(x), t)
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            z = self.logits(x)
            g = torch.autograd.grad(attack_loss(z, t, loss), x)[0]
        return g.detach(), wrong(z.detach(), t) if need_wrong else None

    def wrong(self, x, t):
        with torch.no_grad():
            return wrong(self.logits(x), t)


def wrong(z, t):
    """``z_t <= max_{j != t} z_j`` per row: misclassified, ties counted as errors."""
    true = z.gather(1, t[:, None]).squeeze(1)
    other = z.scatter(1, t[:, None], float("-inf")).amax(1)
    return true <= other


def attack_loss(z, t, loss):
    """The summed attack loss: cross-entropy, or the margin ``max_{j != t} z_j - z_t``."""
    if loss == "ce":
        return F.cross_entropy(z, t, reduction="sum")
    return (z.scatter(1, t[:, None], float("-inf")).amax(1) - z.gather(1, t[:, None])[:, 0]).sum()


def _row_norm(v):
    """Per-row L2 norms of ``(B, ...)`` tensors, shaped to broadcast against them."""
    return torch.linalg.vector_norm(v.flatten(1), dim=1).view(-1, *[1] * (v.ndim - 1))


def project_l2(delta, radius):
    """Scale rows of ``delta`` into the L2 ball of ``radius`` (``delta *= min(1, r/||delta||)``)."""
    n = _row_norm(delta)
    return delta * torch.where(n > radius, radius / n.clamp_min(1e-30), torch.ones_like(n))


def random_directions(X, n_restarts, random_state, stream, norm):
    """Per-row random starts of restarts ``1..n_restarts-1``: ``(R - 1, n, D)`` and ``(R - 1, n)``.

    L2: Gaussian directions and uniform radii; L-infinity: uniform in the cube
    ``[-1, 1]^D``. Seeded per row (:func:`geolearn._utils.row_seeds`), so a row's
    draws depend only on the row and ``random_state``.
    """
    n, D = X.shape
    R = n_restarts - 1
    dirs, radii = np.empty((R, n, D), np.float32), np.empty((R, n), np.float32)
    if R == 0:
        return dirs, radii
    for i, seed in enumerate(row_seeds(np.asarray(X, np.float64), random_state, stream)):
        rng = np.random.default_rng(seed)
        dirs[:, i] = rng.standard_normal((R, D)) if norm == "l2" else rng.uniform(-1, 1, (R, D))
        radii[:, i] = rng.uniform(size=R)
    return dirs, radii


def pgd_loop(grad_wrong, x, t, *, epsilon, norm="l2", step_size, n_steps, starts=(), init=None,
             projection=None, rows=None, box=(-np.inf, np.inf), open_ball=True,
             stop_on_success=True, require_move=False, ball_dim=None, need_success=True):
    """PGD on one batch ``x`` ``(B, ...)`` with labels ``t``.

    ``grad_wrong(x, t, need_grad) -> (gradient of the summed loss, wrong)``
    gives both from one forward pass (``wrong`` may be None for a gradient step
    when not ``stop_on_success``: the loop reads it only without the gradient). Restart 0 starts at ``delta = init``
    (default 0; a ``(directions, radii)`` pair is a random start as below);
    ``starts`` holds the random starts of the later restarts as
    ``(directions, radii)`` batch tensors. L2 step:
    ``delta += step g / ||g||`` (rows with ``g = 0`` skip it), then the
    projection hook, then ``delta *= min(1, eps / ||delta||)``; L-infinity:
    ``clip(delta + step sign(g), -eps, eps)``. Inputs stay in ``box``.

    ``stop_on_success``: a row succeeds when any iterate of any restart is
    wrong (with ``require_move``: and differs from ``x``); it keeps that first
    point and is masked out of further steps. Otherwise a row succeeds when the
    last iterate of a restart is wrong, and keeps the last iterate of its
    first successful restart, else of the last restart (Madry et al.'s PGD).

    ``projection(v, rows) -> v`` is applied to gradients before normalisation
    and to ``delta`` after each step (``rows``: the batch's global row indices);
    ``ball_dim`` is the dimension of the constraint set for uniform random
    starts (default ``D``). ``need_success=False`` (callers that discard ``success``)
    skips the forward pass that judges the last restart's final iterates, which no
    later restart reads: ``success`` is then only meaningful where ``stop_on_success``.

    Returns
    -------
    x_adv : torch.Tensor of shape (B, D)
    success : torch.Tensor of bool, shape (B,)
    """
    lo, hi = box
    B, D = len(x), x[0].numel()
    radius = epsilon * (1 - OPEN_BALL) if (open_ball and norm == "l2") else epsilon
    rows = torch.arange(B) if rows is None else rows
    found = torch.zeros(B, dtype=torch.bool, device=x.device)
    out = None  # x's copy, made once a row's point is kept before the last restart's end
    k = D if ball_dim is None else ball_dim
    def random_start(d, u):
        """A uniform start in the ball (L2: projected direction, radius ``u^(1/k)``)."""
        if norm == "linf":
            return d * epsilon
        d = d if projection is None else projection(d, rows[idx.cpu()])
        scale = radius * u ** (1 / k)
        return d / _row_norm(d).clamp_min(1e-30) * scale.view(_row_norm(d).shape)

    for r in range(1 + len(starts)):
        idx = torch.arange(B, device=x.device) if r == 0 else (~found).nonzero()[:, 0]
        if len(idx) == 0:
            break
        xs, ts = (x, t) if len(idx) == B else (x[idx], t[idx])  # no copy while all rows run
        if r == 0 and init is None:
            x_adv = (xs + 0.0).clamp_(lo, hi)  # x + a zero delta: -0.0 becomes 0.0 alike
        else:
            if r == 0 and isinstance(init, torch.Tensor):
                delta = init[idx]
            else:
                d, u = init if r == 0 else starts[r - 1]
                delta = random_start(d[idx], u[idx])
            x_adv = (xs + delta).clamp(lo, hi)
        for step in range(n_steps + 1 if stop_on_success else n_steps):
            g, bad = grad_wrong(x_adv, ts, step < n_steps)
            if stop_on_success:
                hit = bad & (_row_norm(x_adv - xs).flatten() > 0) if require_move else bad
                if hit.any():
                    out = x.clone() if out is None else out
                    out[idx[hit]] = x_adv[hit]
                    found[idx[hit]] = True
                    keep = ~hit
                    idx, xs, ts, x_adv = idx[keep], xs[keep], ts[keep], x_adv[keep]
                    g = None if g is None else g[keep]
                if len(idx) == 0:
                    break
            if step == n_steps:
                break
            if norm == "linf":  # xs + clip(x_adv - xs + step sign(g)), in place on new tensors
                x_adv = (x_adv - xs).add_(g.sign().mul_(step_size)).clamp_(
                    -epsilon, epsilon).add_(xs).clamp_(lo, hi)
                continue
            sub = rows[idx.cpu()]
            if projection is not None:
                g = projection(g, sub)
            gn = _row_norm(g)
            delta = x_adv - xs + step_size * g / gn.clamp_min(1e-30) * (gn > 0)
            if projection is not None:
                delta = projection(delta, sub)
            x_adv = (xs + project_l2(delta, radius)).clamp(lo, hi)
        if out is None and len(idx) == B:
            out = x_adv  # every row ran this restart to its end: no copy of x
        else:
            out = x.clone() if out is None else out
            out[idx] = x_adv
        last = r == len(starts)
        if not stop_on_success and len(idx) and (need_success or not last):
            found[idx[grad_wrong(x_adv, ts, False)[1]]] = True
    return out, found


def check_attack_params(epsilon, norm, n_steps, step_size, n_restarts, loss, batch_size, *,
                        allow_zero=False):
    """Validate the common attack parameters; return the step size."""
    if not isinstance(epsilon, (int, float, np.floating, np.integer)) or isinstance(
            epsilon, bool) or not np.isfinite(epsilon) or epsilon < 0 or (
            epsilon == 0 and not allow_zero):
        raise ValueError(f"epsilon must be a finite number {'>=' if allow_zero else '>'} 0; "
                         f"got {epsilon!r}.")
    check_choice(norm, "norm", NORMS)
    check_scalar_param(n_steps, "n_steps", kind="integer", low=1)
    check_scalar_param(n_restarts, "n_restarts", kind="integer", low=1)
    check_choice(loss, "loss", LOSSES)
    check_scalar_param(batch_size, "batch_size", kind="integer", low=1)
    return 2.5 * epsilon / n_steps if step_size is None else check_scalar_param(
        step_size, "step_size", low=0, closed="neither")


def flat_inputs(X, image_shape=None, name="X"):
    """``(flat float64 rows (n, D), per-sample shape or None)`` from ``(n, D)`` or ``(n, C, H, W)``.

    4-D images are flattened (the model gets them back in their shape); flat
    rows with ``image_shape`` are folded for the model.
    """
    X = check_numeric_array(X, name, dtype=np.float64, ensure_2d=False, allow_nd=True)
    if X.ndim == 4:
        if image_shape is not None and tuple(check_image_shape(image_shape)) != X.shape[1:]:
            raise ValueError(f"image_shape={image_shape!r} does not match the images of {name}, "
                             f"of shape {X.shape[1:]}.")
        return X.reshape(len(X), -1), X.shape[1:]
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features) or 4-D images "
                         f"(n_samples, C, H, W); got {X.ndim}-D.")
    if image_shape is not None:
        shape = check_image_shape(image_shape)
        if int(np.prod(shape)) != X.shape[1]:
            raise ValueError(f"image_shape={image_shape!r} has {int(np.prod(shape))} values per "
                             f"image but {name} has {X.shape[1]} features.")
        return X, tuple(shape)
    return X, None


def label_indices(estimator, y, n, n_classes):
    """Labels as class indices: mapped through ``classes_`` when the estimator has them.

    ``n_classes`` (an int, or a callable returning it) bounds the indices of a model
    without ``classes_``; the callable (a probe forward pass) runs only for such a model.
    ``n_classes=None`` leaves the bounds to the caller
    (:meth:`Classifier.check_labels_on_first_pass`).
    """
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n:
        raise ValueError(f"y must be 1-D with one label per row of X ({n}); got shape {y.shape}.")
    classes = getattr(estimator, "classes_", None)
    if classes is not None:
        unknown = np.setdiff1d(y, classes)
        if unknown.size:
            raise ValueError(f"y contains labels unseen by the classifier: {unknown[:5]} "
                             f"(its classes_ are {np.asarray(classes)[:10]}).")
        return np.searchsorted(classes, y).astype(np.int64)
    if not np.issubdtype(y.dtype, np.number) or np.any(y != np.round(y)):
        raise ValueError("y must hold integer class indices for a model without classes_.")
    n_classes = n_classes() if callable(n_classes) else n_classes
    if n and n_classes is not None:
        check_label_range(int(y.min()), int(y.max()), n_classes)
    return y.astype(np.int64)


def check_label_range(low, high, n_classes):
    """Raise unless the class indices ``low..high`` lie in ``[0, n_classes)``."""
    if low < 0 or high >= n_classes:
        raise ValueError(f"y holds labels in [{low}, {high}] unseen by the classifier, which "
                         f"has {n_classes} classes: labels must lie in [0, {n_classes}).")


def pgd(model, X, y, epsilon, *, norm="linf", n_steps=10, step_size=None, n_restarts=1,
        random_start=True, loss="ce", stop_on_success=False, return_success=False,
        clip=(0.0, 1.0), projection=None, image_shape=None, batch_size=256, device="auto",
        random_state=None):
    """Projected gradient descent in an L-infinity or L2 ball (Madry et al., 2018).

    Each step ascends the loss of the true label and projects back:
    L-infinity ``delta <- clip(delta + step_size * sign(g), -epsilon, epsilon)``
    (eq. 4 of the linear-mapping paper), L2 ``delta <- delta + step_size * g / ||g||``
    then ``delta *= min(1, epsilon / ||delta||)`` (the open ball); inputs stay in
    the box ``clip``. Restart 0 starts at ``x`` or, with ``random_start``, uniformly
    in the ball; later restarts start uniformly in the ball. By default a row
    returns the last iterate (of its first restart that misclassifies it, else
    of the last restart); with ``stop_on_success`` it returns the first
    misclassified iterate of any restart, the "is there an adversarial point in
    the ball" search of the manifold risk decomposition. A row is misclassified
    when ``z_y <= max_{j != y} z_j`` (ties count). With ``n_steps=1``,
    ``step_size=epsilon`` and ``random_start=False`` it is exactly :func:`fgsm`.

    Parameters
    ----------
    model : torch.nn.Module, fitted skorch net or estimator, or differentiable sklearn model
        Outputs logits ``(n, n_classes)`` or binary scores ``(n,)``/``(n, 1)`` (read
        as logits ``(0, z)``); seen through :func:`geolearn.models.as_model`. Any
        input normalisation must be part of its forward pass.
    X : array-like of shape (n, ...)
        Clean inputs in the box ``clip``, in the model's layout, or flat rows with
        ``image_shape``.
    y : array-like of shape (n,)
        True labels: the model's ``classes_`` when it has them, else class indices.
    epsilon : float
        The budget (>= 0), in the units of the input box.
    norm : {"linf", "l2"}, default="linf"
    n_steps : int, default=10
        Gradient steps per restart (>= 1).
    step_size : float, optional
        Default ``2.5 * epsilon / n_steps``.
    n_restarts : int, default=1
    random_start : bool, default=True
        Start restart 0 uniformly in the ball (clipped to the box) instead of at ``x``.
    loss : {"ce", "margin"}, default="ce"
        Cross-entropy, or ``max_{j != y} z_j - z_y`` (better against saturated scores).
    stop_on_success : bool, default=False
        Return each row's first misclassified iterate instead of its last one.
    return_success : bool, default=False
        Also return whether each row was misclassified.
    clip : (float, float) or None, default=(0.0, 1.0)
        The input box ``(lo, hi)``; inputs outside it raise. ``None``: no box.
    projection : callable, optional
        ``projection(v, rows) -> v`` on flat ``(b, D)`` tensors, ``rows`` the batch's
        row indices into ``X``: applied to the gradient before normalisation, to
        random starts and to ``delta`` after each step (L2 only).
        :func:`normal_attack` is this PGD with the projection onto each sample's
        normal space.
    image_shape : tuple of int, optional
        ``(C, H, W)`` to fold flat rows into images before the forward pass.
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Checked against the model's device (a model is never moved); batches go
        to the model's device.
    random_state : int, RandomState instance or None, default=None
        Seeds the random start of restart 0 (drawn in numpy for all rows at once,
        so results do not depend on ``batch_size`` or the device) and, per row,
        those of the later restarts.

    Returns
    -------
    X_adv : ndarray of float32, shaped like ``X``
    success : ndarray of bool, shape (n,)
        Only with ``return_success``: whether ``X_adv`` is misclassified.

    See Also
    --------
    fgsm : one signed gradient step.
    normal_attack, in_manifold_attack : PGD restricted to the normal space or the manifold.

    Examples
    --------
    >>> import torch
    >>> from geolearn.adversarial import fgsm, pgd
    >>> net = torch.nn.Linear(4, 3)
    >>> X, y = torch.rand(2, 4).numpy(), [0, 2]
    >>> X_adv = pgd(net, X, y, epsilon=0.1, n_steps=5, random_state=0)
    >>> float(abs(X_adv - X).max()) <= 0.1 + 1e-6
    True
    >>> one_step = pgd(net, X, y, epsilon=0.1, step_size=0.1, n_steps=1, random_start=False)
    >>> bool((one_step == fgsm(net, X, y, epsilon=0.1)).all())
    True

    Is there a misclassified point within L2 distance 0.1 of each row?

    >>> lin = torch.nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = lin.weight.copy_(torch.tensor([[1.0, 0.0]]))
    >>> X_adv, ok = pgd(lin, [[0.05, 0.0], [0.5, 0.0]], [1, 1], epsilon=0.1, norm="l2",
    ...                 n_steps=40, random_start=False, stop_on_success=True,
    ...                 return_success=True, clip=None)
    >>> ok.tolist(), bool(X_adv[0, 0] <= 0)
    ([True, False], True)
    """
    step = check_attack_params(epsilon, norm, n_steps, step_size, n_restarts, loss, batch_size,
                               allow_zero=True)
    if projection is not None and norm != "l2":
        raise ValueError("projection needs norm='l2' (a projected L-infinity box is no box).")
    return _pgd(model, X, y, epsilon=epsilon, norm=norm, n_steps=n_steps, step_size=step,
                n_restarts=n_restarts, random_start=random_start, loss=loss,
                stop_on_success=stop_on_success, return_success=return_success, clip=clip,
                projection=projection, image_shape=image_shape, batch_size=batch_size,
                device=device, random_state=random_state, purpose="pgd")


def fgsm(model, X, y, epsilon, *, clip=(0.0, 1.0), image_shape=None, batch_size=256,
         device="auto"):
    """Fast gradient sign method: one signed gradient step of size ``epsilon``.

    ``x' = clip(x + epsilon * sign(grad_x J(x, y)), lo, hi)`` with ``J`` the
    cross-entropy of the model's logits and the true labels (Goodfellow et
    al., 2015; eq. 3 of the linear-mapping paper), ``sign(0) = 0``: :func:`pgd`
    with ``n_steps=1``, ``step_size=epsilon`` and ``random_start=False``.

    Parameters
    ----------
    model, X, y, clip, image_shape, batch_size, device
        As in :func:`pgd` (``clip=None``: no box, eq. 3 of the paper as printed).
    epsilon : float
        L-infinity budget, in the units of the input box (>= 0).

    Returns
    -------
    X_adv : ndarray of float32, shaped like ``X``

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import fgsm
    >>> net = torch.nn.Linear(4, 3)
    >>> X = np.full((2, 4), 0.5, dtype=np.float32)
    >>> X_adv = fgsm(net, X, [0, 2], epsilon=0.1)
    >>> bool(np.abs(X_adv - X).max() <= 0.1 + 1e-6)
    True
    """
    check_attack_params(epsilon, "linf", 1, None, 1, "ce", batch_size, allow_zero=True)
    return _pgd(model, X, y, epsilon=epsilon, norm="linf", n_steps=1, step_size=epsilon,
                n_restarts=1, random_start=False, loss="ce", stop_on_success=False,
                return_success=False, clip=clip, projection=None, image_shape=image_shape,
                batch_size=batch_size, device=device, random_state=None, purpose="fgsm")


def prepare_attack(model, X, y, *, clip, image_shape, device, purpose, allow_no_box=True):
    """The validated inputs of an attack: ``(classifier, X, flat rows, labels, (lo, hi))``.

    ``X`` is float64 in its own layout, or the float32 C-contiguous array given, not
    copied (the per-row seeds of random restarts hash the values as float64, which
    holds every float32 exactly); the flat rows ``(n, D)`` are folded into the model's
    per-sample shape (``X``'s, or ``image_shape``) by the :class:`Classifier`.
    Labels are class indices (mapped through the model's ``classes_``).
    """
    lo, hi = check_clip(clip, allow_none=allow_no_box)
    X = check_numeric_array(X, dtype=(np.float64, np.float32), allow_nd=True)
    if X.dtype == np.float32 and not (X.flags.c_contiguous and X.flags.writeable):
        X = X.astype(np.float64)  # torch would lay other float32 batches out differently
    check_in_box(X, lo, hi)
    shape = X.shape[1:] if image_shape is None else check_images(X[:1], image_shape).shape[1:]
    flat = X.reshape(len(X), -1)
    clf = Classifier(model, flat.shape[1], shape, device)
    clf.model.require_gradients(purpose)
    estimator = getattr(clf.model, "estimator", model)
    # a model without classes_ is bounded by its first batch's logits, not by a probe
    t = label_indices(estimator, y, len(flat), None)
    if getattr(estimator, "classes_", None) is None:
        clf.check_labels_on_first_pass(t)
    return clf, X, flat, t, (lo, hi)


def _pgd(model, X, y, *, epsilon, norm, n_steps, step_size, n_restarts, random_start, loss,
         stop_on_success, return_success, clip, projection, image_shape, batch_size, device,
         random_state, purpose):
    """:func:`pgd` with validated attack parameters."""
    clf, X, flat, t, (lo, hi) = prepare_attack(model, X, y, clip=clip, image_shape=image_shape,
                                               device=device, purpose=purpose)
    init = None
    if random_start:
        rng = check_random_state(random_state)
        if norm == "linf":
            init = rng.uniform(-epsilon, epsilon, size=flat.shape).astype(np.float32)
        else:
            init = (rng.standard_normal(flat.shape).astype(np.float32),
                    rng.uniform(size=len(flat)).astype(np.float32))
    X_adv, success = run_attack(clf, flat, t, epsilon=epsilon, norm=norm, step_size=step_size,
                                n_steps=n_steps, n_restarts=n_restarts, loss=loss,
                                batch_size=batch_size, random_state=random_state, stream="pgd",
                                box=(lo, hi), projection=projection, init=init,
                                stop_on_success=stop_on_success, need_success=return_success)
    X_adv = X_adv.reshape(X.shape)
    return (X_adv, success) if return_success else X_adv


def run_attack(clf, X, t, *, epsilon, norm, step_size, n_steps, n_restarts, loss, batch_size,
               random_state, stream, box=(-np.inf, np.inf), projection=None, open_ball=True,
               require_move=False, ball_dim=None, init=None, stop_on_success=True,
               need_success=True):
    """:func:`pgd_loop` over batches of validated rows; ``(X_adv float32, success)``.

    ``init``: restart 0's start for all rows, a ``(n, D)`` delta or a
    ``(directions, radii)`` pair of arrays (default: ``X`` itself).
    ``need_success``: as in :func:`pgd_loop`.
    """
    dirs, radii = random_directions(X, n_restarts, random_state, stream, norm)
    X_adv, success = np.empty(X.shape, np.float32), np.zeros(len(X), bool)
    # the gradient steps are judged only when the loop stops on success
    grad_wrong = partial(clf.grad_wrong, loss=loss, need_wrong=stop_on_success)
    labels, rows = torch.as_tensor(t, device=clf.device), torch.arange(len(X))
    with clf.model.frozen(), clf.threads():
        for sl in iter_batches(len(X), batch_size):
            starts = [(clf.to_tensor(d[sl]), clf.to_tensor(r[sl])) for d, r in zip(dirs, radii)]
            first = (None if init is None else clf.to_tensor(init[sl])
                     if isinstance(init, np.ndarray) else tuple(clf.to_tensor(v[sl]) for v in init))
            out, ok = pgd_loop(grad_wrong, clf.to_tensor(X[sl]), labels[sl],
                               epsilon=epsilon, norm=norm, step_size=step_size, n_steps=n_steps,
                               starts=starts, init=first, projection=projection,
                               rows=rows[sl], box=box,
                               open_ball=open_ball, stop_on_success=stop_on_success,
                               require_move=require_move, ball_dim=ball_dim,
                               need_success=need_success)
            X_adv[sl], success[sl] = to_numpy(out), to_numpy(ok)
    return X_adv, success
