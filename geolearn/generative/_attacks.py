"""Patch (l0) attacks on a fixed image region: the patch mask, and the attack itself.

:func:`patch_attack` lives in :mod:`geolearn.adversarial` with the other attacks; it is
re-exported here, where the paper's workflow (VAEClassifier, patch attack, ELBO
purification) uses it.
"""

import numpy as np

from .._utils import check_image_shape, check_scalar_param
from ..adversarial import patch_attack

__all__ = ["patch_attack", "rectangular_patch_mask"]


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
        check_scalar_param(v, name, kind="integer", low=0)
    if height < 1 or width < 1 or top + height > H or left + width > W:
        raise ValueError(f"the patch rows {top}:{top + height}, columns {left}:{left + width} "
                         f"must be non-empty and inside the {H}x{W} image.")
    mask = np.zeros((C, H, W), dtype=bool)
    mask[:, top:top + height, left:left + width] = True
    return mask.ravel()
