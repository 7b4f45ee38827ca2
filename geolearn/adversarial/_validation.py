"""Validation of model inputs, labels, masks and attack parameters."""

import numbers

import numpy as np
from sklearn.utils.validation import check_array, column_or_1d

from .._utils import check_images


def check_model_inputs(X, image_shape=None, *, min_samples=1, name="X"):
    """Validate inputs of a torch model and return them in the model's layout.

    Parameters
    ----------
    X : array-like of shape (n, ...)
        Rows passed to the model as they are, or flat rows ``(n, C*H*W)``
        folded into images when ``image_shape`` is given.
    image_shape : tuple of int, optional
        ``(H, W)`` or ``(C, H, W)``.
    min_samples : int, default=1
    name : str, default="X"
        Named in error messages.

    Returns
    -------
    X : ndarray of float32, shape (n, *image_shape) or the shape of ``X``
    """
    if image_shape is not None:
        return check_images(X, image_shape, min_samples=min_samples, name=name)
    X = check_array(X, dtype=np.float32, allow_nd=True, ensure_min_samples=min_samples,
                    input_name=name)
    return X


def check_clip(clip, *, allow_none=False):
    """Validate a ``clip=(lo, hi)`` box and return it as two floats.

    ``clip=None`` (where allowed) means no box: ``(-inf, inf)``.
    """
    if clip is None and allow_none:
        return -np.inf, np.inf
    try:
        lo, hi = (float(v) for v in clip)
    except (TypeError, ValueError):
        raise ValueError(f"clip must be a pair (lo, hi) of numbers; got {clip!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(
            f"clip must be a pair (lo, hi) of finite numbers with lo < hi; got {clip!r}."
        )
    return lo, hi


def check_in_box(X, lo, hi, name="X"):
    """Raise when ``X`` leaves ``[lo, hi]`` by over 1e-6: clipping would change clean inputs."""
    below, above = float(X.min()), float(X.max())
    if below < lo - 1e-6 or above > hi + 1e-6:
        raise ValueError(
            f"{name} has values in [{below:.6g}, {above:.6g}], outside clip=({lo:g}, {hi:g}). "
            "Attacks assume inputs in the box before any normalisation (put normalisation in "
            "the model's forward pass), or pass the box your inputs live in as clip."
        )


def check_labels(y, n_samples, name="y"):
    """Validate integer class labels and return them as an int64 array."""
    y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name=name), warn=True)
    if len(y) != n_samples:
        raise ValueError(f"{name} has {len(y)} labels but X has {n_samples} rows.")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.issubdtype(y.dtype, np.floating) or np.any(y != np.round(y)):
            raise ValueError(f"{name} must hold integer class labels; got dtype {y.dtype}.")
    return y.astype(np.int64)


def check_logits(logits, y):
    """Check the model's output is ``(n, n_classes)`` logits and every label indexes a class."""
    if logits.ndim != 2:
        raise ValueError(
            "the model must output logits of shape (n_samples, n_classes); got output of shape "
            f"{tuple(logits.shape)}."
        )
    n_classes = logits.shape[1]
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(
            f"y holds labels in [{int(y.min())}, {int(y.max())}] but the model has {n_classes} "
            f"outputs: labels must lie in [0, {n_classes})."
        )


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


def check_positive(value, name, *, strict=True, integer=False):
    """Validate a scalar parameter: a (positive or non-negative) number, optionally an integer."""
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = value > 0 if strict else value >= 0
    if not ok:
        what = "integer" if integer else "number"
        bound = "> 0" if strict else ">= 0"
        raise ValueError(f"{name} must be a finite {what} {bound}; got {value!r}.")
    return value
