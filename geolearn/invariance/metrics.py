"""Invariance metrics LI, DI, NLI, SI and the input-Jacobian sensitivity sigma_max.

Every function takes any model :func:`geolearn.models.as_model` understands:
a torch module, a fitted skorch net, an estimator that trains a torch module
(such as :class:`InvariantClassifier`), a fitted scikit-learn estimator, or a
plain callable ``tensor -> logits``. A black-box estimator is seen through
the adapter's response (``decision_function``, else centred log-probabilities).
``X`` is in the model's input layout: images ``(n, C, H, W)``, or flat rows
with ``image_shape`` saying how to fold them for the group action (and for a
CNN, which takes them as images: see :meth:`geolearn.models.ModelAdapter.sample_layout`).
"""

import functools
import numbers

import numpy as np
import torch
from sklearn.utils import Bunch

from .._utils import (
    check_dtype_range,
    check_images,
    check_numeric_array,
    iter_batches,
    to_numpy,
    warn_user,
)
from ..exceptions import GeolearnWarning, NumericalWarning
from ..models import as_model
from ._groups import FiniteGroup, resolve_group
from ._saliency import (
    check_saliency_params,
    integrated_gradients_tensor,
    postprocess_saliency,
)

__all__ = [
    "distribution_invariance",
    "integrated_gradients",
    "jacobian_sigma_max",
    "logit_invariance",
    "make_invariance_scorer",
    "normalized_logit_invariance",
    "refit_best_subject_to",
    "saliency_invariance",
    "saliency_map",
]


class _Images:
    """``X`` as ``(n, C, H, W)`` images plus the way back to the model's input layout."""

    def __init__(self, X, image_shape, adapter=None):
        X = to_numpy(X)
        self.images = np.ascontiguousarray(  # views such as np.rot90 have negative strides
            check_images(X, image_shape, dtype=[np.float32, np.float64]))
        if adapter is not None and adapter.differentiable:  # the module casts to its dtype
            check_dtype_range(self.images, adapter.dtype, where="the model's parameters")
        self.layout = np.shape(X)[1:]
        if adapter is not None:  # flat rows are folded for a CNN
            self.layout = adapter.sample_layout(self.layout, self.images.shape[1:])
        self.tensor = torch.from_numpy(self.images)

    @property
    def shape(self):
        return self.images.shape[1:]

    def to_model(self, images):
        """Images (tensor or array) in the model's layout, as a numpy array."""
        return to_numpy(images).reshape(len(images), *self.layout)


def _resolve(group, data, check_group=False):
    return group if _is_checked(group) else resolve_group(group, data.shape,
                                                          check_group=check_group)


def _is_checked(group):
    return isinstance(group, FiniteGroup) and group.identity_index is not None


def _log_proba(outputs):
    """Log-softmax of float64 outputs; one column is read as binary log-odds ``[0, f]``."""
    outputs = torch.from_numpy(outputs)
    if outputs.shape[1] == 1:
        outputs = torch.cat([torch.zeros_like(outputs), outputs], dim=1)
    return torch.log_softmax(outputs, dim=1).numpy()


def _output_fn(adapter, kind):
    """numpy -> (n, K) float64 outputs (``kind="logits"``) or log-probabilities.

    A differentiable model gives its logits; a black box the adapter's response
    (``decision_function``, else the centred log-probabilities, whose softmax is
    ``predict_proba``).
    """
    def outputs(X):
        out = adapter.forward(X).reshape(len(X), -1).astype(np.float64)
        return out if kind == "logits" else _log_proba(out)

    return outputs


def _orbit_errors(model, X, group, error, kind, image_shape, batch_size, device, reduction):
    if reduction not in ("mean", "none"):
        raise ValueError(f"reduction must be 'mean' or 'none'; got {reduction!r}.")
    adapter = as_model(model, device=device, batch_size=batch_size)
    data = _Images(X, image_shape, adapter)
    group = _resolve(group, data)
    if not group.non_identity:
        raise ValueError(f"{group!r} has only the identity: the invariance error is undefined.")
    out = _output_fn(adapter, kind)
    base = out(data.to_model(data.tensor))
    errors = np.stack([error(base, out(data.to_model(group[k](data.tensor))))
                       for k in group.non_identity], axis=1)
    if not np.all(np.isfinite(errors)):
        raise ValueError("the model's outputs are not finite: the invariance error is undefined.")
    return float(errors.mean()) if reduction == "mean" else errors


def logit_invariance(model, X, group, *, reduction="mean", image_shape=None, batch_size=256,
                     device="auto"):
    """Logit invariance error ``LI_f = mean_{x, g != e} 1/2 ||f(x) - f(gx)||^2`` (Eq. 2).

    Parameters
    ----------
    model : torch.nn.Module, skorch net, estimator or callable
        Any model :func:`geolearn.models.as_model` accepts (a torch module, a
        fitted skorch net, an estimator training a torch module such as
        :class:`InvariantClassifier`, a scikit-learn estimator, or a callable
        ``tensor -> logits``). Black-box estimators are read through the
        adapter's "auto" response: ``decision_function``, else the centred
        log-probabilities ``log p - mean log p``.
    X : array-like of shape (n, C, H, W), (n, H, W) or (n, C*H*W)
        Inputs in the model's layout.
    group : {"rot4", "xtrans3"}, FiniteGroup or list of callables
    reduction : {"mean", "none"}, default="mean"
        ``"none"`` returns the ``(n, |G| - 1)`` per-pair errors.
    image_shape : tuple of int, optional
        How to fold flat ``X`` into images for the group action.
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Returns
    -------
    LI : float or ndarray of shape (n, len(group) - 1)

    Examples
    --------
    >>> import torch
    >>> from geolearn.invariance import logit_invariance
    >>> f = lambda x: x.flatten(1) @ torch.ones(16, 3)  # sums pixels: rotation invariant
    >>> X = torch.rand(5, 1, 4, 4).numpy()
    >>> round(logit_invariance(f, X, "rot4"), 6)
    0.0
    """
    return _orbit_errors(model, X, group, lambda a, b: 0.5 * ((a - b) ** 2).sum(1), "logits",
                         image_shape, batch_size, device, reduction)


def normalized_logit_invariance(model, X, group, *, eps=1e-8, reduction="mean", image_shape=None,
                                batch_size=256, device="auto"):
    """Normalised logit invariance ``mean ||f(x) - f(gx)||^2 / (||f(x)||^2 + eps)`` (Sec. 4.4).

    Parameters
    ----------
    model : torch.nn.Module, skorch net, estimator or callable
        Any model :func:`geolearn.models.as_model` accepts, as for
        :func:`logit_invariance`.
    X : array-like of shape (n, C, H, W), (n, H, W) or (n, C*H*W)
        Inputs in the model's layout.
    group : {"rot4", "xtrans3"}, FiniteGroup or list of callables
    eps : float, default=1e-8
        Added to the denominator ``||f(x)||^2``.
    reduction : {"mean", "none"}, default="mean"
        ``"none"`` returns the ``(n, |G| - 1)`` per-pair errors.
    image_shape : tuple of int, optional
        How to fold flat ``X`` into images for the group action.
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Returns
    -------
    NLI : float or ndarray of shape (n, len(group) - 1)

    Examples
    --------
    >>> import torch
    >>> from geolearn.invariance import normalized_logit_invariance
    >>> f = lambda x: x.flatten(1)[:, :2]  # two corner pixels: not invariant
    >>> X = torch.rand(5, 1, 4, 4).numpy()
    >>> normalized_logit_invariance(f, X, "rot4") > 0
    True
    """
    return _orbit_errors(
        model, X, group, lambda a, b: ((a - b) ** 2).sum(1) / ((a**2).sum(1) + eps), "logits",
        image_shape, batch_size, device, reduction)


def _kl(log_u, log_q):
    u = np.exp(log_u)
    return np.where(u > 0, u * (log_u - log_q), 0.0).sum(1)


def distribution_invariance(model, X, group, *, reduction="mean", image_shape=None, batch_size=256,
                            device="auto"):
    """Distribution invariance ``DI_f = mean_{x, g != e} KL(u_x || q_gx)`` (Eq. 1).

    ``u_x = softmax f(x)`` and ``q_gx = softmax f(gx)``.

    Log-probabilities come from ``log_softmax`` of the float64 outputs that
    :func:`logit_invariance` compares: a black box's ``decision_function``
    (whose softmax is ``predict_proba`` for a multinomial or binary logistic
    model), else its centred log-probabilities (whose softmax is
    ``predict_proba``, clipped at 1e-12). A single output column ``f`` is read
    as binary log-odds, ``u = softmax([0, f])``, as scikit-learn's binary
    ``decision_function``.

    Parameters
    ----------
    model : torch.nn.Module, skorch net, estimator or callable
        Any model :func:`geolearn.models.as_model` accepts, as for
        :func:`logit_invariance`.
    X : array-like of shape (n, C, H, W), (n, H, W) or (n, C*H*W)
        Inputs in the model's layout.
    group : {"rot4", "xtrans3"}, FiniteGroup or list of callables
    reduction : {"mean", "none"}, default="mean"
        ``"none"`` returns the ``(n, |G| - 1)`` per-pair errors.
    image_shape : tuple of int, optional
        How to fold flat ``X`` into images for the group action.
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Returns
    -------
    DI : float or ndarray of shape (n, len(group) - 1)

    Examples
    --------
    >>> import torch
    >>> from geolearn.invariance import distribution_invariance
    >>> # logits = invariant part + a non-invariant shift common to all classes
    >>> f = lambda x: x.sum((1, 2, 3))[:, None] * torch.arange(3.0) + x[:, :, 0, 0]
    >>> X = torch.rand(5, 1, 4, 4).numpy()
    >>> distribution_invariance(f, X, "rot4") < 1e-10
    True
    """
    return _orbit_errors(model, X, group, _kl, "log_proba", image_shape, batch_size, device,
                         reduction)


def _check_baseline(baseline, data, dtype):
    if isinstance(baseline, str):
        if baseline != "zeros":
            raise ValueError(f"baseline must be 'zeros', a number or an image; got {baseline!r}.")
        return torch.zeros((), dtype=dtype)
    if isinstance(baseline, numbers.Real):
        return torch.tensor(float(baseline), dtype=dtype)
    b = np.asarray(baseline, dtype=np.float64)
    try:
        b = b.reshape(data.shape)
    except ValueError:
        raise ValueError(
            f"baseline must be 'zeros', a number or one image of shape {data.shape}; got an "
            f"array of shape {b.shape}."
        ) from None
    if not np.all(np.isfinite(b)):
        raise ValueError("baseline must be finite.")
    return torch.as_tensor(b, dtype=dtype)


def _target_indices(model, y, n):
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have one label per sample, shape ({n},); got {y.shape}.")
    classes = getattr(model, "classes_", None)
    if classes is not None:
        idx = np.searchsorted(classes, y).clip(0, len(classes) - 1)
        if not np.all(classes[idx] == y):
            raise ValueError(f"y holds labels that are not in the model's classes_ {classes}.")
        return idx
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError("y (the saliency target) must hold integer class indices.")
    return y


def _check_target_range(adapter, data, images, target):
    """Refuse class indices outside the model's outputs (one forward pass of one row)."""
    if not len(images):
        return
    n_out = adapter.forward(data.to_model(images[:1])).reshape(1, -1).shape[1]
    bad = (target < 0) | (target >= n_out)
    if bad.any():
        raise ValueError(f"target holds class indices outside the model's {n_out} outputs "
                         f"(0 to {n_out - 1}): {np.unique(target[bad])[:5].tolist()}.")


def _ig_images(adapter, data, images, target, baseline, steps, batch_size):
    """IG of the model at ``images`` (tensor (n, C, H, W)), returned as (n, C, H, W)."""
    adapter.require_gradients("integrated gradients")
    target = np.asarray(target)
    _check_target_range(adapter, data, images, target)
    out = []
    b = baseline.reshape(1, *data.layout) if baseline.ndim else baseline
    b = b.to(adapter.device, adapter.dtype)
    with adapter.frozen():
        for sl in iter_batches(len(images), batch_size):
            x = adapter.to_tensor(data.to_model(images[sl]))
            t = torch.as_tensor(target[sl], device=adapter.device, dtype=torch.long)
            ig = integrated_gradients_tensor(adapter.input_gradient, x, t, b, steps)
            out.append(ig.detach().to("cpu", torch.float64).reshape(len(x), *data.shape))
    ig = torch.cat(out) if out else torch.empty((0, *data.shape), dtype=torch.float64)
    bad = ~torch.isfinite(ig.reshape(len(ig), -1)).all(1)
    if bad.any():
        raise ValueError(f"integrated gradients are NaN or infinite for {int(bad.sum())} of "
                         f"{len(ig)} samples: the model's output or its gradient is not finite "
                         "along the path from the baseline (check the model and the input "
                         "scale).")
    return ig


def integrated_gradients(model, X, target, *, steps=50, baseline="zeros", image_shape=None,
                         batch_size=256, device="auto"):
    """Integrated gradients of the logit ``target`` (midpoint rule).

    ``IG_i(x) = (x_i - b_i) (1/m) sum_k d f_t(b + a_k (x - b)) / d x_i`` with
    ``a_k = (k - 1/2) / m``; gradients are accumulated step by step, never
    storing the ``m`` interpolated batches.

    Parameters
    ----------
    model : torch.nn.Module, skorch net, estimator or callable
        A differentiable model (a black box raises ``TypeError``).
    X : array-like of shape (n, ...)
        Inputs in the model's layout.
    target : int or array-like of shape (n,)
        Output index per sample.
    steps : int, default=50
    baseline : "zeros", float or array of one input's shape, default="zeros"
    image_shape : tuple of int, optional
        Needed only for flat ``X``.
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Returns
    -------
    ig : ndarray of X's shape (float64)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.invariance import integrated_gradients
    >>> f = torch.nn.Linear(4, 2)
    >>> X = np.random.default_rng(0).random((3, 4), dtype=np.float32)
    >>> ig = integrated_gradients(f, X, 1, image_shape=(2, 2))
    >>> with torch.no_grad():
    ...     gap = (f(torch.tensor(X)) - f(torch.zeros(1, 4)))[:, 1].numpy()
    >>> np.allclose(ig.sum(1), gap, atol=1e-6)  # completeness
    True
    """
    adapter = as_model(model, device=device, batch_size=batch_size)
    data = _Images(X, image_shape, adapter)
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"steps must be a positive integer; got {steps!r}.")
    target = np.asarray(target)
    n = len(data.images)
    if target.ndim > 1 or (target.ndim == 1 and len(target) != n):
        raise ValueError(f"target must be one class index or one per sample, shape ({n},); "
                         f"got shape {target.shape}.")
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"target must hold integer class indices; got dtype {target.dtype}.")
    target = np.array(np.broadcast_to(target, (n,)))
    ig = _ig_images(adapter, data, data.tensor, target,
                    _check_baseline(baseline, data, torch.float64), int(steps), batch_size)
    return data.to_model(ig)


def _maps(adapter, data, images, target, baseline, steps, batch_size, post):
    ig = _ig_images(adapter, data, images, target, baseline, steps, batch_size)
    return postprocess_saliency(ig.abs().sum(1), **post)


def saliency_map(model, X, target, *, threshold=0.9, sigma=1.0, kernel_size=3, padding="zeros",
                 steps=50, baseline="zeros", image_shape=None, batch_size=256, device="auto"):
    """The paper's saliency map ``m_f``: ``sum_channels |IG|``, thresholded, Gaussian-smoothed.

    Entries below ``threshold * max`` of each map are zeroed, then the map is
    convolved with a normalised ``kernel_size`` Gaussian of std ``sigma``
    (same-size output).

    Parameters
    ----------
    model, X, target, steps, baseline, image_shape, batch_size, device
        As :func:`integrated_gradients`.
    threshold : float in (0, 1], default=0.9
    sigma : float, default=1.0
    kernel_size : int, default=3
    padding : {"zeros", "circular", "circular_x"}, default="zeros"
        Border handling of the smoothing (``"circular_x"`` wraps along x only).

    Returns
    -------
    maps : ndarray of shape (n, H, W)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.invariance import saliency_map
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 3))
    >>> X = np.random.default_rng(0).random((2, 1, 6, 6), dtype=np.float32)
    >>> saliency_map(net, X, [0, 2]).shape
    (2, 6, 6)
    """
    check_saliency_params(threshold, sigma, kernel_size, padding, steps)
    adapter = as_model(model, device=device, batch_size=batch_size)
    data = _Images(X, image_shape, adapter)
    target = np.asarray(target)
    n = len(data.images)
    if target.ndim > 1 or (target.ndim == 1 and len(target) != n):
        raise ValueError(f"target must be one class index or one per sample, shape ({n},); "
                         f"got shape {target.shape}.")
    if not np.issubdtype(target.dtype, np.integer):
        raise ValueError(f"target must hold integer class indices; got dtype {target.dtype}.")
    target = np.array(np.broadcast_to(target, (n,)))
    post = dict(threshold=threshold, sigma=sigma, kernel_size=kernel_size, padding=padding)
    return _maps(adapter, data, data.tensor, target,
                 _check_baseline(baseline, data, torch.float64), steps, batch_size, post).numpy()


def saliency_invariance(model, X, group, y=None, *, target="label", steps=50, baseline="zeros",
                        threshold=0.9, sigma=1.0, kernel_size=3, padding="auto", image_shape=None,
                        batch_size=256, device="auto", return_details=False):
    """Saliency invariance similarity ``SI_f = mean_{x, g != e} cos(m(x), g^-1 m(gx))`` (Eq. 3).

    ``m`` is :func:`saliency_map` for the same target class on every element of
    the orbit; ``g^-1`` realigns the map of ``gx`` to the frame of ``x``. A
    weight-tied (exactly invariant) model with a permutation action and a
    group-invariant baseline scores exactly 1.

    Parameters
    ----------
    model, X, group
        As :func:`logit_invariance` (the model must be differentiable).
    y : array-like of shape (n,), optional
        Labels (mapped through the model's ``classes_`` when it has one, else
        integer output indices).
    target : {"label", "pred"}, default="label"
        ``"label"`` uses ``y`` (``"pred"``, the predicted class of ``x``, when
        ``y`` is None).
    steps, baseline, threshold, sigma, kernel_size, image_shape, batch_size, device
        As :func:`saliency_map`.
    padding : {"auto", "zeros", "circular", "circular_x"}, default="auto"
        ``"auto"``: ``"circular_x"`` for ``xtrans3`` (smoothing then commutes
        with the shifts), ``"zeros"`` otherwise.
    return_details : bool, default=False
        Also return the per-pair similarities and the realigned maps.

    Returns
    -------
    SI : float
        ``nan`` (with a warning) when every pair is degenerate.
    details : Bunch, only with ``return_details``
        ``SI``, ``per_pair`` ``(n, |G| - 1)`` with nan for degenerate pairs,
        ``n_degenerate`` (pairs where a map has norm < 1e-12), ``maps``
        ``(n, |G|, H, W)`` realigned saliency maps, ``group``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.invariance import saliency_invariance
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 3))
    >>> X = np.random.default_rng(0).random((4, 1, 6, 6), dtype=np.float32)
    >>> 0 <= saliency_invariance(net, X, "rot4", steps=8) <= 1
    True
    """
    post = {"threshold": threshold, "sigma": sigma, "kernel_size": kernel_size,
            "padding": padding}
    adapter, data, group, t, b = _saliency_setup(model, X, group, y, target, baseline, steps,
                                                 post, image_shape, batch_size, device)
    maps = _orbit_maps(adapter, data, group, t, b, steps, batch_size, post)
    si, cos, n_degenerate = _orbit_similarity(maps, group)
    if return_details:
        return si, Bunch(SI=si, per_pair=cos, n_degenerate=n_degenerate, maps=maps.numpy(),
                         group=group)
    return si


def _saliency_targets(model, adapter, images, y, target):
    """Class index per sample: ``y`` mapped through ``classes_`` for ``target="label"``
    (when given), else the model's predicted class on ``images`` (model layout)."""
    if target == "label" and y is not None:
        return _target_indices(model, y, len(images))
    return adapter.forward(images).reshape(len(images), -1).argmax(1)


def _saliency_setup(model, X, group, y, target, baseline, steps, post, image_shape, batch_size,
                    device):
    """Checked inputs of :func:`saliency_invariance`; resolves ``post["padding"]``."""
    if target not in ("label", "pred"):
        raise ValueError(f"target must be 'label' or 'pred'; got {target!r}.")
    adapter = as_model(model, device=device, batch_size=batch_size)
    data = _Images(X, image_shape, adapter)
    group = _resolve(group, data)
    if post["padding"] == "auto":
        post["padding"] = "circular_x" if group.name == "xtrans3" else "zeros"
    check_saliency_params(post["threshold"], post["sigma"], post["kernel_size"],
                          post["padding"], steps)
    t = _saliency_targets(model, adapter, data.to_model(data.tensor), y, target)
    b = _check_baseline(baseline, data, torch.float64)
    if b.ndim and any(not torch.allclose(group[k](b[None])[0], b) for k in range(group.order)):
        warn_user("the baseline is not invariant under the group: SI is not exactly 1 even "
                  "for an exactly invariant model.", GeolearnWarning)
    return adapter, data, group, t, b


def _orbit_maps(adapter, data, group, target, baseline, steps, batch_size, post):
    """Saliency maps of every ``g x``, realigned by ``g^-1``: ``(n, |G|, H, W)`` in x's frame."""
    maps = []
    for k in range(group.order):
        m = _maps(adapter, data, group[k](data.tensor), target, baseline, steps, batch_size,
                  post)
        maps.append(torch.as_tensor(group.inverse(k)(m[:, None]))[:, 0])
    return torch.stack(maps, 1)


def _orbit_similarity(maps, group):
    """``(SI, per-pair cosines with nan for degenerate pairs, number of degenerate pairs)``."""
    ref = maps[:, group.identity_index].flatten(1)
    others = maps[:, group.non_identity].flatten(2)
    norm_ref = ref.norm(dim=1, keepdim=True)
    norm_others = others.norm(dim=2)
    cos = (others * ref[:, None]).sum(2) / (norm_ref * norm_others)
    degenerate = (norm_ref < 1e-12) | (norm_others < 1e-12)
    cos = torch.where(degenerate, torch.full_like(cos, float("nan")), cos).numpy()
    n_degenerate = int(degenerate.sum())
    if n_degenerate == cos.size:
        warn_user("every saliency map pair is degenerate (zero map): SI is nan.", NumericalWarning)
        return float("nan"), cos, n_degenerate
    return float(np.nanmean(cos)), cos, n_degenerate


def jacobian_sigma_max(model, X, *, reduction="mean", batch_size=256, device="auto"):
    """Largest singular value of the input Jacobian ``J(x) = df(x)/dx`` (Section 3.3).

    ``sigma_max = sqrt(lambda_max(J J^T))``, from the ``K x K`` eigenproblem in
    float64; Jacobians come from :meth:`ModelAdapter.jacobian` (``vmap`` of
    ``jacrev``) in chunks of ``batch_size``.

    Parameters
    ----------
    model : torch.nn.Module, skorch net, estimator or callable
        As :func:`logit_invariance` (the model must be differentiable).
    X : array-like of shape (n, ...)
        Inputs in the model's layout (no group acts here, so flat rows need no
        ``image_shape``).
    reduction : {"mean", "median", "none"}, default="mean"
    batch_size : int, default=256
    device : str or torch.device, default="auto"
        Where a converted scikit-learn model runs (``"auto"``: CUDA when available,
        else the CPU); a torch model is never moved: a device other than ``"auto"`` is
        checked against its own.

    Returns
    -------
    sigma_max : float or ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.invariance import jacobian_sigma_max
    >>> lin = torch.nn.Linear(5, 3)
    >>> X = np.zeros((2, 5), dtype=np.float32)
    >>> s = jacobian_sigma_max(lin, X)
    >>> bool(np.isclose(s, torch.linalg.matrix_norm(lin.weight, 2).item(), rtol=1e-5))
    True
    """
    if reduction not in ("mean", "median", "none"):
        raise ValueError(f"reduction must be 'mean', 'median' or 'none'; got {reduction!r}.")
    adapter = as_model(model, device=device, batch_size=batch_size)
    adapter.require_gradients("jacobian_sigma_max")
    X = np.ascontiguousarray(check_numeric_array(to_numpy(X), dtype=[np.float32, np.float64],
                                                 allow_nd=True))
    d = int(np.prod(X.shape[1:]))
    sigmas = []
    for sl in iter_batches(len(X), batch_size):
        J = adapter.jacobian(X[sl], batch_size=batch_size, mode="rev")
        J = torch.from_numpy(J.reshape(len(J), -1, d).astype(np.float64))
        lam = torch.linalg.eigvalsh(J @ J.transpose(1, 2))[:, -1]
        sigmas.append(lam.clamp_min(0).sqrt().numpy())
    sigmas = np.concatenate(sigmas)
    if reduction == "none":
        return sigmas
    return float(np.mean(sigmas) if reduction == "mean" else np.median(sigmas))


_METRICS = {
    "LI": (logit_invariance, -1.0),
    "DI": (distribution_invariance, -1.0),
    "NLI": (normalized_logit_invariance, -1.0),
    "SI": (saliency_invariance, 1.0),
    "sigma_max": (jacobian_sigma_max, -1.0),
}


def _invariance_score(estimator, X, y=None, *, metric, group, **kwargs):
    """Greater-is-better ``metric`` of ``estimator`` on ``X``: :func:`make_invariance_scorer`."""
    fn, sign = _METRICS[metric]
    if metric == "sigma_max":
        return sign * fn(estimator, X, **kwargs)
    kwargs.setdefault("image_shape", getattr(estimator, "image_shape_", None))
    if group is None:
        if not hasattr(estimator, "group_"):
            raise ValueError(
                f"make_invariance_scorer({metric!r}) without group needs an estimator "
                f"with a fitted group_; {type(estimator).__name__} has none."
            )
        group = estimator.group_
    if metric == "SI":
        return sign * fn(estimator, X, group, y, **kwargs)
    return sign * fn(estimator, X, group, **kwargs)


def make_invariance_scorer(metric, group=None, **kwargs):
    """A scorer ``(estimator, X, y) -> float`` for ``GridSearchCV`` from an invariance metric.

    ``LI``, ``DI``, ``NLI`` and ``sigma_max`` are negated (greater is better);
    ``SI`` is returned as is.

    Parameters
    ----------
    metric : {"LI", "DI", "NLI", "SI", "sigma_max"}
    group : {"rot4", "xtrans3"}, FiniteGroup, list of callables or None
        ``None`` uses the fitted estimator's ``group_``.
    **kwargs
        Passed to the metric function (e.g. ``steps=20`` for SI).

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y=None) -> float``
        It probes the estimator itself (its logits, gradients or group), so it is
        a scikit-learn scorer callable rather than a ``make_scorer`` of
        predictions; it pickles.

    Examples
    --------
    >>> import torch
    >>> from geolearn.invariance import make_invariance_scorer
    >>> scorer = make_invariance_scorer("LI", group="rot4", image_shape=(1, 4, 4))
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2))
    >>> _ = torch.nn.init.zeros_(net[1].weight)  # a constant network is exactly invariant
    >>> scorer(net, torch.rand(8, 16).numpy())
    -0.0
    """
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {sorted(_METRICS)}; got {metric!r}.")
    return functools.partial(_invariance_score, metric=metric, group=group, **kwargs)


class _RefitBestSubjectTo:
    def __init__(self, score, constraint, threshold):
        self.score = score
        self.constraint = constraint
        self.threshold = threshold

    def __call__(self, cv_results):
        score = np.asarray(cv_results[f"mean_test_{self.score}"], dtype=float)
        constraint = np.asarray(cv_results[f"mean_test_{self.constraint}"], dtype=float)
        ok = np.flatnonzero(constraint >= self.threshold)
        if not len(ok):
            raise ValueError(
                f"no candidate has mean {self.constraint} >= {self.threshold} (best: "
                f"{np.nanmax(constraint):.4g}); lower the threshold or widen the grid."
            )
        return int(ok[np.argmax(score[ok])])


def refit_best_subject_to(score, constraint, threshold):
    """A ``refit`` callable: the best ``score`` among candidates with ``constraint >= threshold``.

    The constraint is read from the mean cross-validated score of each candidate.

    The paper's model selection: best validation accuracy among models with
    ``SI >= 0.95``.

    Parameters
    ----------
    score, constraint : str
        Scorer names of a multi-metric ``GridSearchCV``.
    threshold : float

    Returns
    -------
    refit : callable ``cv_results_ -> best_index``
        Raises ``ValueError`` when no candidate qualifies.

    Examples
    --------
    >>> from geolearn.invariance import refit_best_subject_to
    >>> pick = refit_best_subject_to("acc", "SI", 0.95)
    >>> pick({"mean_test_acc": [0.9, 0.8, 0.7], "mean_test_SI": [0.5, 0.96, 0.99]})
    1
    """
    return _RefitBestSubjectTo(score, constraint, threshold)
