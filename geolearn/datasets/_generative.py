"""Data of the generative family: two-digit composites and 2-D point shapes (GridVAE study),
rotating-glyph images (manifold representation meta-learning)."""

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_positive_integer


def make_two_digit_composites(n_train=6000, n_test=2000, digits=(0, 1, 2, 3, 4, 5),
                              random_state=0):
    """Images of two bundled 8x8 digits side by side (the paper's two-digit MNIST, reduced).

    The chosen digits of ``sklearn.datasets.load_digits`` are scaled to [0, 1] and
    split 50/50 into a train and a test pool; each composite draws a left and a
    right label uniformly and an image of each label from its pool, so test
    composites never reuse a training digit image.

    Parameters
    ----------
    n_train, n_test : int, default=6000, 2000
        Number of composites in each split.
    digits : sequence of int, default=(0, 1, 2, 3, 4, 5)
        Digit classes used (distinct, in 0-9).
    random_state : int, RandomState instance or None, default=0

    Returns
    -------
    X_train : ndarray of shape (n_train, 128)
        Row-major 8x16 images (left digit in columns 0-7).
    y_train : ndarray of shape (n_train,)
        Composite class ``index(left) * len(digits) + index(right)``.
    codes_train : ndarray of shape (n_train, 2)
        ``(index(left), index(right))``.
    X_test, y_test, codes_test
        The same for the test split.

    Examples
    --------
    >>> from geolearn.datasets import make_two_digit_composites
    >>> Xtr, ytr, ctr, Xte, yte, cte = make_two_digit_composites(100, 50, random_state=0)
    >>> Xtr.shape, int(ytr.max()) < 36, ctr.shape
    ((100, 128), True, (100, 2))
    """
    from sklearn.datasets import load_digits

    check_positive_integer(n_train, "n_train")
    check_positive_integer(n_test, "n_test")
    digits = [int(d) for d in digits]
    if len(digits) < 1 or len(set(digits)) != len(digits) or not all(0 <= d <= 9 for d in digits):
        raise ValueError(f"digits must be distinct integers in 0-9; got {digits!r}.")
    rng = check_random_state(random_state)
    data = load_digits()
    keep = np.isin(data.target, digits)
    images = data.images[keep] / 16.0
    labels = np.array([digits.index(d) for d in data.target[keep]])
    perm = rng.permutation(len(images))
    pools = (perm[: len(perm) // 2], perm[len(perm) // 2:])
    return (*_compose(images, labels, len(digits), pools[0], n_train, rng),
            *_compose(images, labels, len(digits), pools[1], n_test, rng))


def _compose(images, labels, n_labels, pool, n, rng):
    """``n`` composites of a uniform left and right label, each digit image drawn from ``pool``."""
    by_label = [pool[labels[pool] == k] for k in range(n_labels)]
    codes = rng.randint(n_labels, size=(n, 2))
    left = np.array([rng.choice(by_label[c]) for c in codes[:, 0]])
    right = np.array([rng.choice(by_label[c]) for c in codes[:, 1]])
    X = np.concatenate([images[left], images[right]], axis=2).reshape(n, -1)
    return X, codes[:, 0] * n_labels + codes[:, 1], codes


def make_point_shapes(n_samples=10000, shapes=("swiss_roll", "circles", "moons", "s_curve"),
                      random_state=None):
    """2-D point clouds of a few shapes, centred and scaled alike (the paper's Fig. 5 data).

    Swiss roll and S curve keep columns 0 and 2 of scikit-learn's 3-D generators;
    circles use ``factor=0.5``; no noise. Each set is centred and divided by
    ``sqrt(mean squared norm / 2)``, so every shape has unit variance per coordinate
    on average.

    Parameters
    ----------
    n_samples : int, default=10000
        Points per shape.
    shapes : sequence of {'swiss_roll', 'circles', 'moons', 's_curve'}
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    points : dict of str to ndarray of shape (n_samples, 2)

    Examples
    --------
    >>> from geolearn.datasets import make_point_shapes
    >>> pts = make_point_shapes(500, random_state=0)
    >>> sorted(pts), pts["moons"].shape
    (['circles', 'moons', 's_curve', 'swiss_roll'], (500, 2))
    """
    from sklearn import datasets

    check_positive_integer(n_samples, "n_samples")
    rng = check_random_state(random_state)
    makers = {
        "swiss_roll": lambda s: datasets.make_swiss_roll(n_samples, random_state=s)[0][:, [0, 2]],
        "circles": lambda s: datasets.make_circles(n_samples, factor=0.5, random_state=s)[0],
        "moons": lambda s: datasets.make_moons(n_samples, random_state=s)[0],
        "s_curve": lambda s: datasets.make_s_curve(n_samples, random_state=s)[0][:, [0, 2]],
    }
    out = {}
    for name in shapes:
        if name not in makers:
            raise ValueError(f"shapes must be among {sorted(makers)}; got {name!r}.")
        X = makers[name](rng).astype(np.float64)
        X -= X.mean(axis=0)
        out[name] = X / np.sqrt((X ** 2).sum(axis=1).mean() / 2)
    return out


# --------------------------------------------------------------- rotating-glyph images
#: Glyph in units of the image side, about the centre, y pointing down (spec section 4).
_TRIANGLE = np.array([[0.0, -0.42], [0.36, 0.30], [-0.36, 0.30]])
_DISC_CENTRE, _DISC_RADIUS = np.array([0.0, -0.15]), 0.1
_ORANGE, _BLUE = np.array([1.0, 0.5, 0.0]), np.array([0.0, 0.0, 1.0])
#: ITU-R BT.601 luma weights: what ``n_channels=1`` renders.
_LUMA = np.array([0.299, 0.587, 0.114])
_SUPERSAMPLE = 4
_GLYPH_RADIUS = float(np.linalg.norm(_TRIANGLE, axis=1).max())
# sub-pixels held at once by the renderer (a few arrays of this many float64 each)
_CHUNK_SUBPIXELS = 2**21


def _glyph_fractions(theta, scale, image_size):
    """Fractions of each pixel covered by the triangle (disc removed) and by the disc.

    A sub-pixel centre ``q`` (image-side units about the centre) is inside the glyph rotated
    by ``theta`` and scaled by ``s`` iff ``R(-theta) q / s`` is inside the base glyph; ``R``
    is counter-clockwise as displayed with y down, so ``R(-theta) q = (c x - s y, s x + c y)``,
    separable in the column x and the row y.
    """
    S = image_size * _SUPERSAMPLE
    k = (np.arange(S) + 0.5) / S - 0.5
    c, s = (np.cos(theta) / scale)[:, None, None], (np.sin(theta) / scale)[:, None, None]
    u = c * k[None, None, :] - s * k[None, :, None]               # (m, rows, columns)
    v = s * k[None, None, :] + c * k[None, :, None]
    disc = (u - _DISC_CENTRE[0]) ** 2 + (v - _DISC_CENTRE[1]) ** 2 <= _DISC_RADIUS**2
    inside = ~disc
    for a, b in zip(_TRIANGLE, np.roll(_TRIANGLE, -1, axis=0)):  # vertices run clockwise on screen
        inside &= (b[0] - a[0]) * (v - a[1]) - (b[1] - a[1]) * (u - a[0]) >= 0
    shape = (len(theta), image_size, _SUPERSAMPLE, image_size, _SUPERSAMPLE)
    return (inside.reshape(shape).mean(axis=(2, 4)), disc.reshape(shape).mean(axis=(2, 4)))


def _render_glyphs(theta, scale, image_size, n_channels):
    """``(n, n_channels, image_size, image_size)`` float64 images of the rotated glyph."""
    colours = np.stack([_ORANGE, _BLUE]) if n_channels == 3 else np.stack(
        [_ORANGE, _BLUE]) @ _LUMA[:, None]
    X = np.empty((len(theta), n_channels, image_size, image_size))
    step = max(1, _CHUNK_SUBPIXELS // (image_size * _SUPERSAMPLE) ** 2)
    for lo in range(0, len(theta), step):
        tri, disc = _glyph_fractions(theta[lo:lo + step], scale[lo:lo + step], image_size)
        # colours mix linearly, so pooling the two masks pools the colour image
        X[lo:lo + step] = (tri[:, None] * colours[0][None, :, None, None]
                           + disc[:, None] * colours[1][None, :, None, None])
    return X


def _check_scale_range(scale_range):
    try:
        low, high = (float(v) for v in scale_range)
    except (TypeError, ValueError):
        raise ValueError(f"scale_range must be two numbers (low, high); got {scale_range!r}."
                         ) from None
    largest = 0.5 / _GLYPH_RADIUS
    if not (np.isfinite(low) and np.isfinite(high) and 0 < low <= high <= largest):
        raise ValueError(f"scale_range must satisfy 0 < low <= high <= {largest:.4f} (larger "
                         f"glyphs leave the image); got {scale_range!r}.")
    return low, high


def make_rotating_shape_images(n_samples=1313, image_size=32, n_channels=3,
                               scale_range=(0.7, 1.0), random_state=None, return_params=False):
    """Images of an asymmetric coloured glyph, rotated and scaled: an annulus of images.

    Surrogate for LineMOD's view-sphere images (manifold representation meta-learning,
    not available offline). On black, a filled triangle with vertices ``s (0, -0.42)``,
    ``s (0.36, 0.30)``, ``s (-0.36, 0.30)`` in colour ``(R, G, B) = (1, 0.5, 0)`` and,
    drawn on top, a disc of radius ``0.1 s`` centred at ``s (0, -0.15)`` in blue
    ``(0, 0, 1)``; coordinates in units of the image side, about the image centre, y
    pointing down (at ``theta = 0`` the disc is above the triangle's centroid). The glyph
    is rotated by ``theta ~ U[0, 2 pi)`` counter-clockwise as displayed and scaled by
    ``s ~ U(scale_range)``, rendered on a 4x finer grid (a sub-pixel is in a shape iff
    its centre is) and 4 x 4 average-pooled. Rotation by pi changes the image, so
    ``theta -> image`` is injective and the images form an annulus (H1 = 1).

    Parameters
    ----------
    n_samples : int, default=1313
    image_size : int, default=32
        Side H = W of the images in pixels.
    n_channels : {1, 3}, default=3
        3: RGB. 1: grey luminance ``0.299 R + 0.587 G + 0.114 B`` of the RGB image
        (triangle 0.5925, disc 0.114).
    scale_range : (float, float), default=(0.7, 1.0)
        ``0 < low <= high <= 1.067`` (beyond, the rotated glyph leaves the image);
        ``low == high`` fixes the scale (a circle of images).
    random_state : int, RandomState instance or None, default=None
        Draws theta, then the scales.
    return_params : bool, default=False
        Also return the parameters of each image.

    Returns
    -------
    X : ndarray of shape (n_samples, n_channels, image_size, image_size), float64 in [0, 1]
    params : dict, only when ``return_params``
        ``{"theta": (n_samples,) angles in [0, 2 pi), "scale": (n_samples,) scales}``.

    Examples
    --------
    >>> from geolearn.datasets import make_rotating_shape_images
    >>> X, params = make_rotating_shape_images(4, image_size=16, random_state=0,
    ...                                        return_params=True)
    >>> X.shape, X.dtype, sorted(params)
    ((4, 3, 16, 16), dtype('float64'), ['scale', 'theta'])
    >>> bool(X.min() >= 0 and X.max() <= 1)
    True
    """
    check_positive_integer(n_samples, "n_samples")
    check_positive_integer(image_size, "image_size")
    if n_channels not in (1, 3) or isinstance(n_channels, bool):
        raise ValueError(f"n_channels must be 1 (grey) or 3 (RGB); got {n_channels!r}.")
    low, high = _check_scale_range(scale_range)
    rng = check_random_state(random_state)
    theta = rng.uniform(0, 2 * np.pi, n_samples)
    scale = rng.uniform(low, high, n_samples)
    X = _render_glyphs(theta, scale, image_size, int(n_channels))
    return (X, {"theta": theta, "scale": scale}) if return_params else X
