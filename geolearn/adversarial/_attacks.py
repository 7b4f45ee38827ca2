"""Carlini-Wagner L2 and patch attacks on any differentiable classifier (FGSM, PGD: ``_pgd``).

Every attack reaches its model through :func:`geolearn.models.as_model`, so it works
on a ``torch.nn.Module``, a fitted skorch net, a converted scikit-learn MLP or a
fitted estimator that trains a torch module (e.g.
:class:`geolearn.generative.VAEClassifier`, whose module's first output is its
class logits) alike. The model is :meth:`~geolearn.models.ModelAdapter.frozen`
during the attack (eval mode, no parameter gradients, every submodule's mode
restored afterwards), and input gradients come from
:meth:`~geolearn.models.ModelAdapter.input_gradient_fn`, so the parameters' ``.grad``
buffers are never touched; the loss is summed over the batch so that each
sample's gradient does not depend on ``batch_size``.
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.utils import check_random_state

from .._utils import check_numeric_array, check_scalar_param, iter_batches, to_numpy, warn_user
from ..exceptions import GeolearnWarning
from ..models import as_model
from ._pgd import flat_inputs, prepare_attack
from ._validation import check_clip, check_in_box, check_logits, check_mask


def cross_entropy(logits, y):
    """Batch-summed cross-entropy of ``logits`` and integer labels ``y`` (the attacks' loss).

    The loss given to :meth:`~geolearn.models.ModelAdapter.input_gradient_fn`; the
    logits are checked to be ``(n, n_classes)`` with every label indexing a class.
    """
    check_logits(logits, y)
    return F.cross_entropy(logits, y, reduction="sum")


def signed_step(x_adv, grad, step_size, lo, hi):
    """Ascent step ``x_adv + step_size * sign(grad)``, clipped to ``[lo, hi]``."""
    return (x_adv + step_size * grad.sign()).clamp(lo, hi)


def carlini_wagner_l2(model, X, y, *, c=1.0, kappa=0.0, n_steps=100, lr=0.01,
                      binary_search_steps=0, clip=(0.0, 1.0), image_shape=None, batch_size=256,
                      device="auto"):
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
        As in :func:`pgd`.
    clip : (float, float), default=(0.0, 1.0)
        The input box; required (the tanh change of variables needs it).
    c : float, default=1.0
        Weight of the margin term (> 0); the starting value when
        ``binary_search_steps > 0``.
    kappa : float, default=0.0
        Confidence margin (>= 0).
    n_steps : int, default=100
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
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Linear(4, 3)
    >>> X = np.full((2, 4), 0.5, dtype=np.float32)
    >>> X_adv, success = carlini_wagner_l2(net, X, [0, 2], c=10.0, n_steps=50, lr=0.1)
    >>> X_adv.shape, success.dtype
    ((2, 4), dtype('bool'))
    """
    _check_cw_params(c, kappa, n_steps, lr, binary_search_steps, batch_size)
    clf, X, flat, t, box = prepare_attack(model, X, y, clip=clip, image_shape=image_shape,
                                          device=device, purpose="carlini_wagner_l2",
                                          allow_no_box=False)
    X_adv, success = np.empty(flat.shape, dtype=np.float32), np.zeros(len(flat), dtype=bool)
    with clf.model.frozen(), torch.enable_grad():
        for sl in iter_batches(len(flat), batch_size):
            x, target = clf.to_tensor(flat[sl]), torch.as_tensor(t[sl], device=clf.device)
            X_adv[sl], success[sl] = map(to_numpy, _cw_batch(
                clf, box, x, target, c=c, kappa=kappa, n_steps=n_steps, lr=lr,
                bisections=binary_search_steps))
    _warn_cw_failures(success)
    return X_adv.reshape(X.shape), success


def _check_cw_params(c, kappa, n_steps, lr, binary_search_steps, batch_size):
    check_scalar_param(c, "c", low=0, closed="neither")
    check_scalar_param(kappa, "kappa", low=0)
    check_scalar_param(n_steps, "n_steps", kind="integer", low=1)
    check_scalar_param(lr, "lr", low=0, closed="neither")
    check_scalar_param(binary_search_steps, "binary_search_steps", kind="integer", low=0)
    check_scalar_param(batch_size, "batch_size", kind="integer", low=1)


def _warn_cw_failures(success):
    failed = int((~success).sum())
    if failed:
        warn_user(f"carlini_wagner_l2: {failed} of {len(success)} samples were never misclassified; "
        "their last iterate is returned (flagged False in success). Raise c, n_steps or "
        "binary_search_steps.", GeolearnWarning)


def _tanh_box(w, lo, hi):
    """C&W's change of variables ``x'(w) = lo + (hi - lo) (tanh(w) + 1) / 2``."""
    return lo + (hi - lo) * (torch.tanh(w) + 1) / 2


def _cw_batch(clf, box, x, t, *, c, kappa, n_steps, lr, bisections):
    """C&W on one batch: ``(best iterates, whether a misclassified iterate was found)``."""
    lo, hi = box
    w0 = torch.atanh((2 * (x - lo) / (hi - lo) - 1).clamp(-1 + 1e-6, 1 - 1e-6))
    const = torch.full((len(x),), float(c), dtype=x.dtype, device=x.device)
    lower = torch.zeros_like(const)
    upper = torch.full_like(const, float("inf"))
    best_l2 = torch.full_like(const, float("inf"))
    best = x.clone()
    found = torch.zeros(len(x), dtype=torch.bool, device=x.device)
    for _ in range(max(1, bisections)):
        last, run_found, best_l2 = _cw_run(clf, box, x, t, w0, const, best, best_l2,
                                           kappa=kappa, n_steps=n_steps, lr=lr)
        best[~found & ~run_found] = last[~found & ~run_found]
        found |= run_found
        # bisection of c: shrink where the run succeeded, grow where it failed
        upper = torch.where(run_found, torch.minimum(upper, const), upper)
        lower = torch.where(run_found, lower, torch.maximum(lower, const))
        const = torch.where(torch.isinf(upper), const * 10, (lower + upper) / 2)
    return best, found


def _cw_run(clf, box, x, t, w0, const, best, best_l2, *, kappa, n_steps, lr):
    """One C&W run of ``n_steps`` Adam steps from ``w0``; updates ``best`` in place.

    Adam here is the attack's optimiser over the perturbation ``w`` (the model is
    frozen), not model training, so it is not a skorch loop.

    Returns ``(last iterate, misclassified during the run, best_l2)``.
    """
    w = w0.clone().requires_grad_(True)
    optimizer = torch.optim.Adam([w], lr=lr)
    run_found = torch.zeros(len(x), dtype=torch.bool, device=x.device)
    for _ in range(n_steps):
        x_adv = _tanh_box(w, *box)
        z = clf.logits(x_adv)
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
    return _tanh_box(w, *box).detach(), run_found, best_l2


def patch_attack(estimator, X, y, mask, *, method="pgd", n_steps=2048, step_size=1 / 255,
                 momentum=1.0, random_start=True, clip=(0.0, 1.0), image_shape=None,
                 batch_size=256, random_state=None):
    """Untargeted patch attack: maximise the cross-entropy by changing only ``mask`` pixels.

    ``x_adv = x * (1 - M) + delta * M``. 'pgd' takes signed-gradient steps on ``delta``
    from a uniform random start (Madry et al.); 'nag' adds a Nesterov look-ahead and an
    accumulated l1-normalised gradient with decay ``momentum`` (Lin et al., "Nesterov
    accelerated gradient and scale invariance for adversarial attacks"). Every step is
    clipped to ``clip``.

    Parameters
    ----------
    estimator : torch.nn.Module, fitted skorch net or estimator, or differentiable sklearn model
        Seen through :func:`geolearn.models.as_model`; its output (the first one of a
        tuple) is the logits, as for a fitted
        :class:`geolearn.generative.VAEClassifier` (``h(mu(x))``). ``y`` holds its
        ``classes_`` when it has them, class indices otherwise.
    X : array-like of shape (n_samples, n_features) or (n_samples, C, H, W)
        Clean inputs inside ``clip``: flat rows, or images, which the model takes as
        they are.
    y : array-like of shape (n_samples,)
    mask : array-like of bool, shape (n_features,), the image shape or (H, W)
        The patch support (see :func:`geolearn.generative.rectangular_patch_mask`); an
        ``(H, W)`` mask of images covers every channel.
    method : {'pgd', 'nag'}, default='pgd'
    n_steps : int, default=2048
    step_size : float, default=1/255
    momentum : float, default=1.0
        Decay of the 'nag' accumulator.
    random_start : bool, default=True
        Start the patch from U[clip] instead of the clean pixels.
    clip : (float, float), default=(0.0, 1.0)
    image_shape : tuple of int, optional
        ``(C, H, W)`` or ``(H, W)`` of the images flat rows hold: a model that takes
        images (a CNN, see :meth:`geolearn.models.ModelAdapter.sample_layout`) gets
        the rows folded into them; a model of flat rows gets the rows.
    batch_size : int, default=256
    random_state : int, RandomState instance or None, default=None
        Seeds the random start, drawn for all rows at once (the result does not
        depend on ``batch_size``); torch's global RNG is neither read nor reseeded.

    Returns
    -------
    X_adv : ndarray of float64, shaped like ``X``
        Pixels outside the mask are bit-identical to X.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import patch_attack
    >>> net = torch.nn.Linear(16, 2)
    >>> X = np.random.default_rng(0).random((4, 16))
    >>> mask = np.zeros(16, dtype=bool); mask[:4] = True
    >>> X_adv = patch_attack(net, X, [0, 1, 0, 1], mask, n_steps=5, random_state=0)
    >>> bool(np.all(X_adv[:, ~mask] == X[:, ~mask]))
    True

    A CNN on flat rows of 3x8x8 colour images, with a 3x3 patch in every channel:

    >>> from geolearn.generative import rectangular_patch_mask
    >>> cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(),
    ...                           torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2))
    >>> rows = np.random.default_rng(0).random((4, 3 * 8 * 8))
    >>> patch = rectangular_patch_mask((3, 8, 8), top=2, left=2, height=3, width=3)
    >>> X_adv = patch_attack(cnn, rows, [0, 1, 0, 1], patch, n_steps=5,
    ...                      image_shape=(3, 8, 8), random_state=0)
    >>> X_adv.shape, bool(np.all(X_adv[:, ~patch] == rows[:, ~patch]))
    ((4, 192), True)
    """
    model = as_model(estimator)
    model.require_gradients("patch_attack")
    X, shape, layout, y, mask, box = _check_patch_inputs(model, X, y, mask, method, n_steps,
                                                         step_size, clip, image_shape)
    M, out = torch.as_tensor(mask, dtype=torch.float32, device=model.device), X.copy()
    # the random start is drawn once for all rows from random_state alone: no global torch
    # RNG (which other threads share), and the same start whatever the batch_size
    start = X.copy()
    if random_start:
        start[:, mask] = check_random_state(random_state).uniform(*box, (len(X), mask.sum()))
    with model.frozen():
        for sl in iter_batches(len(X), batch_size):
            out[sl, mask] = _patch_batch(model, X[sl], start[sl], y[sl], M, layout, method,
                                         n_steps, step_size, momentum, box)[:, mask]
    return out.reshape(shape)


def _check_patch_inputs(model, X, y, mask, method, n_steps, step_size, clip, image_shape):
    """``(flat float64 rows, X's shape, the model's sample layout, y as class indices, flat
    mask, (lo, hi))``, or a clear error."""
    X = check_numeric_array(X, dtype=np.float64, ensure_2d=False, allow_nd=True)
    shape = X.shape
    X, images = flat_inputs(X, image_shape)
    # images given stay images; flat rows are folded only for a model that takes images
    layout = model.sample_layout(shape[1:], images)
    model.check_sample_shape(layout)
    if method not in ("pgd", "nag"):
        raise ValueError(f"method must be 'pgd' or 'nag'; got {method!r}.")
    check_scalar_param(n_steps, "n_steps", kind="integer", low=1)
    check_scalar_param(step_size, "step_size", low=0, closed="neither")
    lo, hi = check_clip(clip)
    check_in_box(X, lo, hi)
    if images is not None and np.shape(mask) == tuple(images[1:]):
        mask = np.broadcast_to(mask, images)  # an (H, W) patch in every channel
    mask = check_mask(mask, X.shape[1])
    y = np.asarray(y).ravel()
    if len(y) != len(X):
        raise ValueError(f"y has {len(y)} labels but X has {len(X)} samples.")
    classes = getattr(model.estimator, "classes_", None)
    if classes is not None:
        unknown = np.setdiff1d(y, classes)
        if unknown.size:
            raise ValueError(f"y contains labels unknown to the classifier: {unknown[:5]}.")
        y = np.searchsorted(classes, y)
    return X, shape, layout, y, mask, (lo, hi)


def _patch_batch(model, X, start, y, M, layout, method, n_steps, step_size, momentum, box):
    """``n_steps`` signed steps on the patch ``M`` of one batch from ``start`` (frozen model).

    The rows stay flat; the model gets them in its sample ``layout``. Returns the
    attacked rows as float64.
    """
    lo, hi = box
    row_gradient = model.input_gradient_fn(cross_entropy)

    def gradient(x, target):
        return row_gradient(x.reshape(len(x), *layout), target).reshape(x.shape)

    x = model.to_tensor(X)
    target = torch.as_tensor(y, dtype=torch.long, device=model.device)
    x_adv = x * (1 - M) + model.to_tensor(start) * M
    acc = torch.zeros_like(x)
    for _ in range(n_steps):
        probe = x_adv
        if method == "nag":
            probe = (x_adv + step_size * momentum * acc * M).clamp(lo, hi)
        grad = gradient(probe, target)
        if method == "nag":
            acc = momentum * acc + grad / grad.abs().sum(1, keepdim=True).clamp_min(1e-12)
            grad = acc
        x_adv = signed_step(x_adv, grad * M, step_size, lo, hi)
    return to_numpy(x_adv).astype(np.float64)
