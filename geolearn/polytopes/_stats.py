"""Statistics of bit strings: Hamming distances, summaries, nearest-neighbour agreement."""

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils.validation import column_or_1d

from .._utils import check_numeric_array, iter_batches


def _packed(bits):
    return np.packbits(np.asarray(bits, bool), axis=1)


def _popcount(packed, axis):
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(packed).sum(axis=axis, dtype=np.int64)
    return np.unpackbits(packed, axis=axis).sum(axis=axis, dtype=np.int64)


def hamming(B1, B2=None, *, paired=False):
    """Hamming distances between rows of two bit arrays (XOR of packed rows + popcount).

    Returns ``(n1, n2)`` int, or ``(n,)`` when ``paired``.
    """
    P1 = _packed(B1)
    P2 = P1 if B2 is None else _packed(B2)
    if paired:
        return _popcount(P1 ^ P2, axis=1)
    out = np.empty((len(P1), len(P2)), np.int64)
    step = max(1, 2**24 // max(1, P2.size))
    for sl in iter_batches(len(P1), step):
        out[sl] = _popcount(P1[sl, None] ^ P2[None], axis=2)
    return out


def describe(values):
    """Summary statistics of one sample, as in paper 1's tables.

    Parameters
    ----------
    values : array-like of shape (n,)

    Returns
    -------
    summary : Bunch
        ``n``, ``mean``, ``sd`` (sample SD, ``ddof=1``; NaN when ``n < 2``),
        ``median``, ``min``, ``max`` (NaN for an empty sample).

    Examples
    --------
    >>> from geolearn.polytopes import describe
    >>> describe([1, 2, 3])
    {'n': 3, 'mean': 2.0, 'sd': 1.0, 'median': 2.0, 'min': 1.0, 'max': 3.0}
    """
    v = check_numeric_array(values, "values", dtype=np.float64, ensure_2d=False,
                            allow_nd=True, ensure_min_samples=0).ravel()
    n = v.size
    if n == 0:
        return Bunch(n=0, mean=np.nan, sd=np.nan, median=np.nan, min=np.nan, max=np.nan)
    return Bunch(n=n, mean=float(v.mean()), sd=float(v.std(ddof=1)) if n > 1 else np.nan,
                 median=float(np.median(v)), min=float(v.min()), max=float(v.max()))


def nn_agreement(F, y, metric="hamming"):
    """Leave-one-out 1-NN label agreement (paper 1, Table 3).

    The fraction of points whose nearest other point (ties: lowest index)
    has the same label.

    Parameters
    ----------
    F : array-like of shape (n, d)
        Bit strings (``metric='hamming'``, counts of differing entries) or
        coordinates (``metric='euclidean'``).
    y : array-like of shape (n,)
    metric : {'hamming', 'euclidean'}, default='hamming'

    Returns
    -------
    agreement : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.polytopes import nn_agreement
    >>> F = np.array([[0, 0], [0, 1], [1, 1], [1, 1]]); y = [0, 0, 1, 1]
    >>> nn_agreement(F, y)
    1.0
    """
    from scipy.spatial.distance import cdist

    F = check_numeric_array(F, "F", ensure_min_samples=2)
    y = column_or_1d(y, warn=True)
    if len(F) != len(y):
        raise ValueError(f"F must have one row per label; got F of shape {F.shape} and "
                         f"{len(y)} labels.")
    if metric == "hamming":
        D = hamming(F != 0).astype(float)
    elif metric == "euclidean":
        D = cdist(F, F)
    else:
        raise ValueError(f"metric must be 'hamming' or 'euclidean'; got {metric!r}.")
    np.fill_diagonal(D, np.inf)
    return float(np.mean(y[np.argmin(D, axis=1)] == y))
