"""Validation of model inputs, labels, masks and attack parameters."""

import numpy as np

from .._utils.validation import (  # noqa: F401  (re-exported for the family)
    check_labels,
    check_mask,
    check_model_inputs,
)


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


