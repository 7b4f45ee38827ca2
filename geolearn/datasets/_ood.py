"""Out-of-distribution test images for detectors trained on the 8x8 digits: filled shapes
and natural-image patches, rendered at 32x32 and average-pooled, in [0, 1] like
:func:`load_digits_images` (the reduced-scale reproduction of the diffusion-inpainting
OOD paper, "Leveraging diffusion models for unsupervised out-of-distribution detection on
image manifold")."""

import numpy as np
from sklearn.utils import Bunch, check_random_state

from .._utils import check_scalar_param

#: Side in pixels at which shapes are rendered before pooling.
_RENDER_SIZE = 32
_SHAPE_KINDS = ("ellipse", "rectangle")


def _check_pool(pool, size):
    check_scalar_param(pool, "pool", kind="integer", low=1)
    if size % pool:
        raise ValueError(f"pool must divide the rendered side {size}; got {pool!r}.")
    return pool


def _average_pool(images, pool):
    """Mean over non-overlapping ``pool x pool`` blocks of ``(n, H, W)`` images."""
    n, H, W = images.shape
    return images.reshape(n, H // pool, pool, W // pool, pool).mean(axis=(2, 4))


def make_shape_images(n_samples=150, *, shapes=_SHAPE_KINDS, pool=4, random_state=None,
                      return_X_y=False):
    """Random filled ellipses and rectangles, rendered at 32x32 and average-pooled.

    Each image draws a kind uniformly from ``shapes``, a centre uniform in
    ``[10, 22]^2``, two half-axes uniform in ``[4, 11]`` and an angle uniform in
    ``[0, pi)`` (32-pixel units). A pixel of the 32x32 rendering is 1 when its centre
    lies inside the shape (rotated about its centre), else 0; shapes may be cut by the
    border. The rendering is averaged over ``pool x pool`` blocks, so the default gives
    8x8 images in ``[0, 1]`` on the scale of :func:`load_digits_images`. The draws do
    not depend on ``pool``: ``pool=1`` returns the 32x32 rendering of the same shapes.

    Parameters
    ----------
    n_samples : int, default=150
        Number of images.
    shapes : sequence of {'ellipse', 'rectangle'}, default=('ellipse', 'rectangle')
        Kinds to draw from.
    pool : int, default=4
        Side of the averaging blocks; must divide 32 (output side ``32 / pool``).
    random_state : int, RandomState instance or None, default=None
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.

    Returns
    -------
    data : Bunch
        ``data`` and ``images``: (n_samples, 1, 32 / pool, 32 / pool) float32;
        ``target``: (n_samples,) index of the kind in ``target_names`` (= ``shapes``);
        ``centres`` (n_samples, 2) as (column, row), ``half_axes`` (n_samples, 2) and
        ``angles`` (n_samples,) in 32-pixel units; ``image_shape``.
        ``(X, y)`` when ``return_X_y``.

    Examples
    --------
    >>> from geolearn.datasets import make_shape_images
    >>> X, y = make_shape_images(20, random_state=0, return_X_y=True)
    >>> X.shape, X.dtype, bool(0 <= X.min() and X.max() <= 1)
    ((20, 1, 8, 8), dtype('float32'), True)
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    _check_pool(pool, _RENDER_SIZE)
    shapes = tuple(shapes)
    if not shapes or any(s not in _SHAPE_KINDS for s in shapes) or len(set(shapes)) < len(shapes):
        raise ValueError(f"shapes must be distinct kinds among {list(_SHAPE_KINDS)}; "
                         f"got {shapes!r}.")
    rng = check_random_state(random_state)
    kind = rng.randint(len(shapes), size=n_samples)
    centres = rng.uniform(10, 22, size=(n_samples, 2))
    half_axes = rng.uniform(4, 11, size=(n_samples, 2))
    angles = rng.uniform(0, np.pi, size=n_samples)
    # shape coordinates of every pixel centre: R(-angle) (p - centre), one image per slice
    grid = np.arange(_RENDER_SIZE) + 0.5
    dx = grid[None, None, :] - centres[:, 0, None, None]
    dy = grid[None, :, None] - centres[:, 1, None, None]
    c, s = np.cos(angles)[:, None, None], np.sin(angles)[:, None, None]
    u = (c * dx + s * dy) / half_axes[:, 0, None, None]
    v = (c * dy - s * dx) / half_axes[:, 1, None, None]
    is_ellipse = (np.asarray(shapes)[kind] == "ellipse")[:, None, None]
    inside = np.where(is_ellipse, u ** 2 + v ** 2 <= 1, (np.abs(u) <= 1) & (np.abs(v) <= 1))
    X = _average_pool(inside.astype(np.float64), pool).astype(np.float32)[:, None]
    y = kind.astype(np.int64)
    if return_X_y:
        return X, y
    return Bunch(data=X, images=X, target=y, target_names=list(shapes), centres=centres,
                 half_axes=half_axes, angles=angles, image_shape=X.shape[1:],
                 DESCR="Filled ellipses and rectangles rendered at 32x32, average-pooled.")


def _sample_grayscale():
    """scikit-learn's bundled sample photographs as grayscale (H, W) arrays in [0, 1]."""
    from sklearn.datasets import load_sample_images

    try:
        photos = load_sample_images()
    except ImportError as exc:
        raise ImportError(
            "load_natural_patches reads scikit-learn's bundled photographs with Pillow, which "
            'comes with matplotlib: pip install "geolearn[plot]" (or pip install pillow).'
        ) from exc
    names = [name.rsplit("/", 1)[-1].rsplit(".", 1)[0] for name in photos.filenames]
    return [img.mean(axis=2) / 255.0 for img in photos.images], names


def load_natural_patches(n_samples=150, *, patch_size=32, pool=4, random_state=None,
                         return_X_y=False):
    """Grayscale crops of scikit-learn's two sample photographs, average-pooled.

    Each patch picks one of the photographs of :func:`sklearn.datasets.load_sample_images`
    (china, flower) uniformly, converts it to grayscale (mean over RGB / 255) and crops a
    ``patch_size`` square at a uniform position inside it, then averages over
    ``pool x pool`` blocks: the defaults give 8x8 images in ``[0, 1]`` on the scale of
    :func:`load_digits_images`. Nothing is downloaded (the photographs ship with
    scikit-learn; reading them needs Pillow).

    Parameters
    ----------
    n_samples : int, default=150
        Number of patches.
    patch_size : int, default=32
        Side of the crops in photograph pixels.
    pool : int, default=4
        Side of the averaging blocks; must divide ``patch_size``.
    random_state : int, RandomState instance or None, default=None
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.

    Returns
    -------
    data : Bunch
        ``data`` and ``images``: (n_samples, 1, patch_size / pool, patch_size / pool)
        float32; ``target``: (n_samples,) index of the photograph in ``target_names``;
        ``corners``: (n_samples, 2) (row, column) of each crop's top-left pixel;
        ``image_shape``. ``(X, y)`` when ``return_X_y``.

    Examples
    --------
    >>> from geolearn.datasets import load_natural_patches
    >>> patches = load_natural_patches(10, random_state=0)
    >>> patches.data.shape, patches.target_names
    ((10, 1, 8, 8), ['china', 'flower'])
    """
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(patch_size, "patch_size", kind="integer", low=1)
    _check_pool(pool, patch_size)
    photos, names = _sample_grayscale()
    side = min(min(p.shape) for p in photos)
    if patch_size > side:
        raise ValueError(f"patch_size must be at most {side} (the photographs' smaller side); "
                         f"got {patch_size!r}.")
    rng = check_random_state(random_state)
    which = rng.randint(len(photos), size=n_samples)
    corners = np.empty((n_samples, 2), dtype=np.int64)
    crops = np.empty((n_samples, patch_size, patch_size))
    for i, k in enumerate(which):
        H, W = photos[k].shape
        corners[i] = rng.randint(H - patch_size + 1), rng.randint(W - patch_size + 1)
        r, c = corners[i]
        crops[i] = photos[k][r:r + patch_size, c:c + patch_size]
    X = _average_pool(crops, pool).astype(np.float32)[:, None]
    y = which.astype(np.int64)
    if return_X_y:
        return X, y
    return Bunch(data=X, images=X, target=y, target_names=names, corners=corners,
                 image_shape=X.shape[1:],
                 DESCR="Grayscale crops of scikit-learn's sample photographs, average-pooled.")
