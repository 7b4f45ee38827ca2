"""Data of the GridVAE study: two-digit composites and 2-D point shapes."""

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
