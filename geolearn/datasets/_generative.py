"""Data of the generative family: two-digit composites and 2-D point shapes (GridVAE study),
rotating-glyph images (manifold representation meta-learning), 3D-Shapes-like scenes and
the 3D Shapes reader (disentangling autoencoders, DAE-OG)."""

import numpy as np
from sklearn.utils import check_random_state

from .._utils import check_scalar_param


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

    check_scalar_param(n_train, "n_train", kind="integer", low=1)
    check_scalar_param(n_test, "n_test", kind="integer", low=1)
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

    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
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
    check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
    check_scalar_param(image_size, "image_size", kind="integer", low=1)
    if n_channels not in (1, 3) or isinstance(n_channels, bool):
        raise ValueError(f"n_channels must be 1 (grey) or 3 (RGB); got {n_channels!r}.")
    low, high = _check_scale_range(scale_range)
    rng = check_random_state(random_state)
    theta = rng.uniform(0, 2 * np.pi, n_samples)
    scale = rng.uniform(low, high, n_samples)
    X = _render_glyphs(theta, scale, image_size, int(n_channels))
    return (X, {"theta": theta, "scale": scale}) if return_params else X


# ------------------------------------------------------------------- 3D-Shapes-like images
#: Factors of ``make_shapes3d_like`` (and of DeepMind's 3D Shapes), in column order.
SHAPES3D_FACTORS = ("floor_hue", "wall_hue", "object_hue", "scale", "shape", "orientation")
_SHAPES3D_SIZES = (10, 10, 10, 8, 4, 15)
_SHAPES3D_SHAPES = ("square", "disc", "triangle", "cross")
_WALL_FRACTION = 0.6                      # the wall fills the top 60 % of the image
_OBJECT_CENTRE = (0.5, 0.62)              # (x, y) in units of the side, y pointing down
_OBJECT_BASE = 0.25                       # base size (side of the bounding box) / image side
_SHAPES3D_SUPERSAMPLE = 4


def _hue_to_rgb(hue):
    """RGB of hues in [0, 1) on the HSV circle with S = V = 1, shape ``(..., 3)``."""
    h6 = (np.asarray(hue, dtype=np.float64) % 1.0) * 6.0
    return np.clip(np.stack([np.abs(h6 - 3) - 1, 2 - np.abs(h6 - 2), 2 - np.abs(h6 - 4)],
                            axis=-1), 0.0, 1.0)


def _inside_shape(shape, u, v, half):
    """Sub-pixel ``(u, v)`` (object frame, y down) inside the shape of half-size ``half``."""
    if shape == 0:                                               # square
        return np.maximum(np.abs(u), np.abs(v)) <= half
    if shape == 1:                                               # disc
        return u * u + v * v <= half * half
    if shape == 2:                                               # triangle, apex up
        return (v <= half) & (2 * np.abs(u) <= v + half)
    arm = half / 3.0                                             # cross (plus sign)
    au, av = np.abs(u), np.abs(v)
    return ((au <= arm) & (av <= half)) | ((av <= arm) & (au <= half))


def _object_coverage(shape, theta, half, dx, dy):
    """Fraction of each window pixel covered by the rotated object, ``(m, rows, cols)``.

    A sub-pixel at offset ``q = (dx, dy)`` from the object's centre is inside the object
    rotated by ``theta`` (counter-clockwise as displayed, y down) iff ``R(-theta) q`` is
    inside the upright shape: ``u = c dx - s dy``, ``v = s dx + c dy``.
    """
    c, s = np.cos(theta)[:, None, None], np.sin(theta)[:, None, None]
    u = c * dx[None, None, :] - s * dy[None, :, None]
    v = s * dx[None, None, :] + c * dy[None, :, None]
    inside = _inside_shape(shape, u, v, half[:, None, None])
    ss = _SHAPES3D_SUPERSAMPLE
    m, rows, cols = inside.shape
    return inside.reshape(m, rows // ss, ss, cols // ss, ss).mean(axis=(2, 4))


def _render_shapes3d(factors, sizes, image_size):
    """``(n, 3, s, s)`` float32 images of the scenes of ``factors``; chunked over images."""
    s, ss = image_size, _SHAPES3D_SUPERSAMPLE
    floor_rgb = _hue_to_rgb(factors[:, 0] / sizes[0])
    wall_rgb = _hue_to_rgb(factors[:, 1] / sizes[1])
    object_rgb = _hue_to_rgb(factors[:, 2] / sizes[2])
    half = 0.5 * _OBJECT_BASE * np.linspace(0.75, 1.25, sizes[3])[factors[:, 3]]
    theta = np.deg2rad(np.linspace(-30.0, 30.0, sizes[5])[factors[:, 5]])
    # the rows and columns the object can reach (its circumscribed circle), plus a pixel
    reach = half.max() * np.sqrt(2.0) if len(half) else 0.0
    cx, cy = _OBJECT_CENTRE
    r0, r1 = max(0, int(np.floor((cy - reach) * s)) - 1), min(s, int(np.ceil((cy + reach) * s)) + 1)
    c0, c1 = max(0, int(np.floor((cx - reach) * s)) - 1), min(s, int(np.ceil((cx + reach) * s)) + 1)
    dy = (r0 + (np.arange((r1 - r0) * ss) + 0.5) / ss) / s - cy
    dx = (c0 + (np.arange((c1 - c0) * ss) + 0.5) / ss) / s - cx
    # background: each row's exact fraction of wall (the horizon can cut a row)
    wall = np.clip(_WALL_FRACTION * s - np.arange(s), 0.0, 1.0)[None, None, :, None]
    X = np.empty((len(factors), 3, s, s), dtype=np.float32)
    step = max(1, _CHUNK_SUBPIXELS // max(1, len(dx) * len(dy)))
    for lo in range(0, len(factors), step):
        sl = slice(lo, lo + step)
        img = (wall * wall_rgb[sl, :, None, None]
               + (1.0 - wall) * floor_rgb[sl, :, None, None]) * np.ones((1, 1, 1, s))
        cover = np.zeros((len(img), r1 - r0, c1 - c0))
        shapes = factors[sl, 4]
        for k in np.unique(shapes):
            rows = np.flatnonzero(shapes == k)
            cover[rows] = _object_coverage(int(k), theta[sl][rows], half[sl][rows], dx, dy)
        a = cover[:, None]
        window = img[:, :, r0:r1, c0:c1]
        img[:, :, r0:r1, c0:c1] = (1.0 - a) * window + a * object_rgb[sl, :, None, None]
        X[sl] = img
    return X


def _check_factor_sizes(factor_sizes):
    if factor_sizes is None:
        return _SHAPES3D_SIZES
    try:
        sizes = tuple(factor_sizes)
    except TypeError:
        sizes = None
    if sizes is None or len(sizes) != 6:
        raise ValueError(f"factor_sizes must be 6 positive integers (floor hue, wall hue, "
                         f"object hue, scale, shape, orientation); got {factor_sizes!r}.")
    for name, size in zip(SHAPES3D_FACTORS, sizes):
        check_scalar_param(size, f"factor_sizes[{name}]", kind="integer", low=1)
    if sizes[4] > len(_SHAPES3D_SHAPES):
        raise ValueError(f"factor_sizes[shape] must be at most {len(_SHAPES3D_SHAPES)} "
                         f"({', '.join(_SHAPES3D_SHAPES)}); got {sizes[4]}.")
    return tuple(int(v) for v in sizes)


def make_shapes3d_like(factor_sizes=None, image_size=64, n_samples=None, random_state=None):
    """Offline 3D-Shapes-like scenes: a coloured object in front of a wall, on a floor.

    A flat 2-D stand-in for DeepMind's 3D Shapes (same six factors, same default
    number of values). The wall fills the top 60 % of the image and the floor the rest;
    the object is centred at half width and 62 % of the height (from the top), with a
    bounding box of side ``image_size / 4 x scale``, rotated about its centre by the
    orientation, counter-clockwise as displayed for positive angles. Factors, in column
    order (``SHAPES3D_FACTORS``), value ``k`` of a factor with ``m`` values meaning:

    - floor hue, wall hue, object hue: hue ``k / m`` on the HSV circle, S = V = 1
      (0 is red);
    - scale: ``np.linspace(0.75, 1.25, m)[k]``;
    - shape: square, disc, triangle (apex up), cross (a plus sign), the first ``m``;
    - orientation: ``np.linspace(-30, 30, m)[k]`` degrees.

    A factor with one value takes the first of its list (hue 0, scale 0.75, -30 degrees).
    The object is rendered on a 4x finer grid inside its reach and averaged (anti-aliased
    edges); the row that the horizon cuts mixes wall and floor by its covered fraction.

    Parameters
    ----------
    factor_sizes : sequence of 6 int, default=None
        Number of values of each factor; None is 3D Shapes' ``(10, 10, 10, 8, 4, 15)``.
        The shape factor has at most 4 values.
    image_size : int, default=64
        Side of the square images in pixels (at least 8).
    n_samples : int, default=None
        None: every combination of the factor values once, in C order (the last factor
        varies fastest; 480,000 images, about 24 GB of float32, at the default sizes:
        pass ``n_samples`` or smaller ``factor_sizes`` for less). An int: that many
        distinct combinations drawn without replacement, in the order drawn.
    random_state : int, RandomState instance or None, default=None
        Draws the combinations when ``n_samples`` is given.

    Returns
    -------
    X : ndarray of shape (n, 3 * image_size * image_size), float32 in [0, 1]
        Flat images, each a C-order ``(3, image_size, image_size)`` RGB array.
    factors : ndarray of shape (n, 6), int64
        The value index of each factor.

    Examples
    --------
    >>> from geolearn.datasets import make_shapes3d_like
    >>> X, factors = make_shapes3d_like((1, 5, 5, 4, 3, 5), image_size=32)
    >>> X.shape, X.dtype, factors.shape
    ((1500, 3072), dtype('float32'), (1500, 6))
    >>> X, factors = make_shapes3d_like(image_size=16, n_samples=10, random_state=0)
    >>> X.shape, bool(X.min() >= 0 and X.max() <= 1)
    ((10, 768), True)
    """
    sizes = _check_factor_sizes(factor_sizes)
    image_size = check_scalar_param(image_size, "image_size", kind="integer", low=1)
    if image_size < 8:
        raise ValueError(f"image_size must be at least 8; got {image_size}.")
    total = int(np.prod(sizes))
    if n_samples is None:
        index = np.arange(total)
    else:
        check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
        if n_samples > total:
            raise ValueError(f"n_samples must be at most the number of factor combinations "
                             f"{total} (drawn without replacement); got {n_samples}.")
        index = check_random_state(random_state).choice(total, n_samples, replace=False)
    factors = np.stack(np.unravel_index(index, sizes), axis=1).astype(np.int64)
    X = _render_shapes3d(factors, sizes, image_size)
    return X.reshape(len(X), -1), factors


def load_3dshapes(path, n_samples=None, random_state=None):
    """Read DeepMind's ``3dshapes.h5`` (user-provided; nothing is downloaded). Needs h5py.

    The file holds ``images`` (480,000 x 64 x 64 x 3 uint8) and ``labels`` (480,000 x 6
    float: floor hue, wall hue, object hue, scale, shape, orientation). The output has the
    layout of :func:`make_shapes3d_like`, so the two are interchangeable.

    Parameters
    ----------
    path : str or path-like
        The HDF5 file (from https://github.com/deepmind/3d-shapes).
    n_samples : int, default=None
        None: every image (about 24 GB as float32). An int: that many images drawn
        without replacement, returned in file order.
    random_state : int, RandomState instance or None, default=None
        Draws the images when ``n_samples`` is given.

    Returns
    -------
    X : ndarray of shape (n, 3 * H * W), float32 in [0, 1]
        Flat images, each a C-order ``(3, H, W)`` array (channels first).
    factors : ndarray of shape (n, 6), int64
        Index of each label among the sorted distinct values of its column in the whole
        file (e.g. orientation -30 degrees is 0).

    Raises
    ------
    ImportError
        h5py is not installed (it is not a dependency of geolearn: ``pip install h5py``).
    ValueError
        The file lacks ``images`` or ``labels``, or they do not match.

    Examples
    --------
    >>> from geolearn.datasets import load_3dshapes
    >>> X, factors = load_3dshapes("3dshapes.h5", n_samples=1000)  # doctest: +SKIP
    """
    try:
        import h5py
    except ImportError as exc:
        raise ImportError("load_3dshapes needs h5py to read the HDF5 file, and h5py is not "
                          "installed: pip install h5py (geolearn does not depend on it). "
                          "make_shapes3d_like generates similar images offline.") from exc
    with h5py.File(path, "r") as f:
        if "images" not in f or "labels" not in f:
            raise ValueError(f"{path!s} must hold the datasets 'images' and 'labels' of "
                             f"3dshapes.h5; found {sorted(f.keys())}.")
        images, labels = f["images"], np.asarray(f["labels"][:])
        if labels.ndim != 2 or len(images.shape) != 4 or images.shape[0] != len(labels):
            raise ValueError(f"expected images (n, H, W, C) and labels (n, n_factors); got "
                             f"{tuple(images.shape)} and {labels.shape}.")
        n_total = len(labels)
        factors = np.stack([np.unique(labels[:, i], return_inverse=True)[1].ravel()
                            for i in range(labels.shape[1])], axis=1).astype(np.int64)
        if n_samples is None:
            index = np.arange(n_total)
        else:
            check_scalar_param(n_samples, "n_samples", kind="integer", low=1)
            if n_samples > n_total:
                raise ValueError(f"n_samples must be at most the {n_total} images of the "
                                 f"file; got {n_samples}.")
            index = np.sort(check_random_state(random_state).choice(n_total, n_samples,
                                                                    replace=False))
        _, H, W, C = images.shape
        X = np.empty((len(index), C, H, W), dtype=np.float32)
        scale = 1.0 / 255.0 if np.dtype(images.dtype) == np.uint8 else 1.0
        step = 10_000
        for lo in range(0, len(index), step):
            block = np.asarray(images[index[lo:lo + step]])  # increasing: h5py fancy index
            X[lo:lo + step] = np.moveaxis(block, -1, 1) * scale
    return X.reshape(len(X), -1), factors[index]
