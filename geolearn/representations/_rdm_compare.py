"""Comparing RDMs: correlation of condensed RDMs and its stimulus bootstrap.

The paper's biological similarity (eq. 4) is the Pearson correlation of two condensed RDMs
on the same stimuli; the human-model similarity HMS is their Spearman correlation. The
stimulus bootstrap resamples stimuli, never recomputes an RDM: a resample that draws
stimulus ``i`` ``c_i`` times holds every pair ``(i, j)`` of distinct stimuli ``c_i c_j``
times (pairs of two copies of one stimulus are excluded), so each statistic is the
weighted statistic of the original pairs with weights ``c_i c_j``. That is exact: Pearson
and cosine become ratios of quadratic forms ``c^T M c / 2`` (matrix products for all
resamples at once), Spearman takes weighted average ranks from cumulative sums in one fixed
sort order (O(p) per resample, no sort).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats
from sklearn.utils import Bunch, check_random_state

from .._utils import check_choice, check_scalar_param, warn_user
from ..exceptions import NumericalWarning
from ._rdm import condensed_and_size

METHODS = ("pearson", "spearman", "kendall_tau_a", "cosine")
_BATCH_ENTRIES = 2**22  # resamples x pairs processed at once (about 32 MB per float64 array)


def _paired(R1, R2):
    """Condensed vectors of two RDMs on the same stimuli, pairs undefined in either dropped.

    Returns the vectors, the number of stimuli and the mask of kept pairs (None: all).
    """
    a, m = condensed_and_size(R1, "R1")
    b, m2 = condensed_and_size(R2, "R2")
    if m != m2:
        raise ValueError(f"R1 and R2 describe different numbers of stimuli ({m} and {m2}); "
                         "compare RDMs of the same stimuli in the same order.")
    keep = None
    if np.isnan(a.min()) or np.isnan(b.min()):  # min propagates NaN: no mask in one pass
        keep = ~(np.isnan(a) | np.isnan(b))
        a, b = a[keep], b[keep]
    if a.size < 3:
        raise ValueError(f"R1 and R2 share {a.size} defined pairs; a comparison needs at "
                         "least 3 (NaN marks undefined pairs).")
    return _unsquared(a), _unsquared(b), m, keep


def _unsquared(v):
    """``v`` scaled to a largest entry of 1 where its sums of squares would overflow.

    Every comparison in :data:`METHODS` is invariant to the scale of each vector.
    """
    scale = max(v.max(), -v.min())  # |v|.max() without an |v| copy
    return v / scale if scale > np.sqrt(np.finfo(np.float64).max / (4 * v.size)) else v


def _check_varies(v, name, method):
    """Correlation-type comparisons are undefined for a constant vector: an error, not NaN."""
    if method == "cosine":
        if not np.any(v):
            raise ValueError(f"{name} is all zeros: its cosine similarity is undefined.")
        return
    low, high = v.min(), v.max()
    if high - low <= 1e-12 * max(high, -low):
        raise ValueError(f"{name} is constant over its defined pairs: the {method} comparison "
                         "is undefined. Compare RDMs whose dissimilarities vary.")


def _dot(x, y):
    # einsum, not BLAS ddot: a threaded level-1 BLAS call stalls on a busy machine
    return np.einsum("i,i->", x, y)


def _cosine(a, b):
    return float(_dot(a, b) / np.sqrt(_dot(a, a) * _dot(b, b)))


def _pearson(a, b):
    return _cosine(a - a.mean(), b - b.mean())


def _tau_a(a, b):
    """Kendall's tau-a in O(p log p): ``(concordant - discordant) / (p (p - 1) / 2)``.

    The pairs are counted exactly in integers, as scipy's tau-b does (two stable sorts, then
    the discordant pairs by its Fenwick-tree count ``_kendall_dis``), from the two sorts of
    :func:`_sorted_order`; where that private scipy function is missing, tau-b rescaled by
    the tie counts.
    """
    try:
        from scipy.stats._stats import _kendall_dis
    except ImportError:  # pragma: no cover - scipy renamed its private helper
        return _tau_a_from_tau_b(a, b)
    n = a.size
    a, b = a + 0.0, b + 0.0  # -0.0 to 0.0: the sort keys are bit patterns, ties must be equal
    by_b, sb = _sorted_order(b)
    rank_b = _dense_ranks(sb)
    by_a, sa = _sorted_order(a[by_b])  # stable: ties of a stay in the order of b
    x, y = _dense_ranks(sa), rank_b[by_a]
    discordant = int(_kendall_dis(x, y))
    joint = np.flatnonzero(np.r_[True, (x[1:] != x[:-1]) | (y[1:] != y[:-1]), True])
    total = n * (n - 1) // 2
    tied_x, tied_y = _tied_pairs(np.bincount(x)), _tied_pairs(np.bincount(y))
    # concordant - discordant = total - tied in x - tied in y + tied in both - 2 discordant
    c = total - tied_x - tied_y + _tied_pairs(np.diff(joint)) - 2 * discordant
    return c / total


def _dense_ranks(sorted_values):
    """1-based ranks of sorted values, ties sharing one (the Fenwick tree needs ranks >= 1)."""
    return np.r_[True, sorted_values[1:] != sorted_values[:-1]].cumsum(dtype=np.intp)


def _tied_pairs(counts):
    """The number of pairs within groups of ``counts`` tied values."""
    counts = counts.astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def _tau_a_from_tau_b(a, b):
    """Kendall's tau-a from scipy's tau-b, rescaled by the tie counts."""
    tau_b = stats.kendalltau(a, b).statistic
    n = a.size
    p0 = n * (n - 1) / 2.0
    t1, t2 = (float(np.sum(u * (u - 1.0) / 2.0)) for u in
              (np.unique(a, return_counts=True)[1], np.unique(b, return_counts=True)[1]))
    return float(tau_b * np.sqrt((p0 - t1) * (p0 - t2)) / p0)


def _sorted_order(v):
    """``(order, v[order])`` for float64 ``v``, from one vectorised sort of packed keys.

    Each key holds the value's order-preserving bit pattern, its low bits replaced by the
    index; sorting these integers (SIMD sort, no argsort) orders the values up to the
    dropped bits. Runs whose prefixes tie and whose values come out of order are then
    sorted exactly, so the result is an exact argsort (about twice as fast as one).
    """
    n = v.size
    bits = max(1, (n - 1).bit_length())
    u = np.ascontiguousarray(v, dtype=np.float64).view(np.uint64)
    key = np.where(u >> np.uint64(63), ~u, u | np.uint64(1 << 63))
    key >>= np.uint64(bits)
    key <<= np.uint64(bits)
    key |= np.arange(n, dtype=np.uint64)
    key.sort()
    order = (key & np.uint64((1 << bits) - 1)).astype(np.intp)
    sv = v[order]
    bad = np.flatnonzero(sv[1:] < sv[:-1])
    if bad.size:
        key >>= np.uint64(bits)
        run = np.cumsum(np.r_[True, key[1:] != key[:-1]])
        sub = np.flatnonzero(np.isin(run, run[bad]))
        fix = np.lexsort((sv[sub], run[sub]))
        order[sub] = order[sub][fix]
        sv[sub] = sv[sub][fix]
    return order, sv


def _rank(v):
    """Average ranks (ties share the mean of their ranks), as ``scipy.stats.rankdata``."""
    order, sv = _sorted_order(v)
    new = np.empty(v.size, dtype=bool)
    new[0] = True
    np.not_equal(sv[1:], sv[:-1], out=new[1:])
    ranks = np.empty(v.size)
    if new.all():
        ranks[order] = np.arange(1.0, v.size + 1.0)
        return ranks
    starts = np.flatnonzero(new)
    mean_rank = (starts + np.append(starts[1:], v.size) + 1) / 2.0
    ranks[order] = mean_rank[np.cumsum(new) - 1]
    return ranks


def _ranks(a, b):
    """Ranks of both vectors; large ones sorted in two threads (argsort releases the GIL)."""
    if a.size < 2**16:
        return _rank(a), _rank(b)
    with ThreadPoolExecutor(2) as pool:
        return tuple(pool.map(_rank, (a, b)))


def _statistic(a, b, method):
    if method == "pearson":
        return _pearson(a, b)
    if method == "spearman":
        return _pearson(*_ranks(a, b))
    if method == "kendall_tau_a":
        return _tau_a(a, b)
    return _cosine(a, b)


def compare_rdms(R1, R2, method="pearson"):
    """Similarity of two RDMs on the same stimuli (the paper's biological similarity, eq. 4).

    Parameters
    ----------
    R1, R2 : array-like of shape (m, m) or (m(m-1)/2,)
        RDMs of the same stimuli in the same order. NaN entries (pairs undefined, e.g.
        in a mean-subject RDM) are masked pairwise in both.
    method : {"pearson", "spearman", "kendall_tau_a", "cosine"}, default="pearson"
        Correlation of the condensed vectors; ``"spearman"`` uses average ranks (HMS);
        ``"kendall_tau_a"`` counts ties in the denominator (for categorical model RDMs);
        ``"cosine"`` does not centre.

    Returns
    -------
    similarity : float

    Raises
    ------
    ValueError
        If either vector is constant (zero for ``"cosine"``): the comparison is undefined.

    Examples
    --------
    >>> R1 = [0.1, 0.5, 0.9]
    >>> R2 = [0.2, 0.3, 0.8]
    >>> round(compare_rdms(R1, R2), 4), compare_rdms(R1, R2, "spearman")
    (0.9333, 1.0)
    """
    check_choice(method, "method", METHODS)
    a, b, _, _ = _paired(R1, R2)
    _check_varies(a, "R1", method)
    _check_varies(b, "R2", method)
    return _statistic(a, b, method)


def _ties(v):
    """Sort order of ``v`` and the sizes of its tie groups in that order (None if no ties)."""
    order, sv = _sorted_order(v)
    new = np.concatenate([[True], sv[1:] != sv[:-1]])
    if new.all():
        return order, None
    return order, np.diff(np.append(np.flatnonzero(new), v.size))


def _sorted_ranks(Ws, sizes):
    """Average ranks in the multiset where sorted value ``k`` appears ``Ws[k, b]`` times.

    ``Ws`` (p, n_resamples) holds the weights in sorted order; ``sizes`` the tie-group sizes.
    A value after ``c`` copies of smaller ones, itself ``w`` times, has mean rank
    ``c + (w + 1) / 2`` (a tie group is one value of weight the group's total).
    """
    if sizes is None:
        cum = np.cumsum(Ws, axis=0)
        cum -= (Ws - 1.0) / 2.0
        return cum
    G = np.add.reduceat(Ws, np.cumsum(sizes) - sizes, axis=0)
    rank = np.cumsum(G, axis=0)
    rank -= (G - 1.0) / 2.0
    return np.repeat(rank, sizes, axis=0)


def _quadratic_stats(counts, a, b, I, J, method):
    """Pearson/cosine of every resample from weighted sums ``sum_{i<j} c_i c_j M_ij``.

    Each sum is the quadratic form ``c^T M c / 2`` of a zero-diagonal symmetric ``M``:
    one BLAS product per summed quantity for all resamples at once.
    """
    m = counts.shape[1]

    def qform(v):
        M = np.zeros((m, m))
        M[I, J] = v
        M[J, I] = v
        return 0.5 * np.einsum("bm,bm->b", counts @ M, counts)

    sab, saa, sbb = qform(a * b), qform(a * a), qform(b * b)
    raw_aa, raw_bb = saa, sbb
    if method == "pearson":
        s, sa, sb = qform(np.ones_like(a)), qform(a), qform(b)
        with np.errstate(invalid="ignore", divide="ignore"):
            sab, saa, sbb = sab - sa * sb / s, saa - sa * sa / s, sbb - sb * sb / s
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sab / np.sqrt(saa * sbb)
    # a resample whose vector is constant has (up to rounding) no variance: undefined
    out[~((saa > 1e-12 * raw_aa) & (sbb > 1e-12 * raw_bb))] = np.nan
    return out


def _spearman_batch(cT, a_sorted, b_sorted, back):
    """Spearman of a batch of resamples; ``cT`` (m, n_batch) holds the draw counts."""
    (Ia, Ja, sizes_a), (Ib, Jb, sizes_b) = a_sorted, b_sorted
    Wa = cT[Ia] * cT[Ja]                                    # pair weights in a's order
    ra = _sorted_ranks(Wa, sizes_a)
    rb = _sorted_ranks(cT[Ib] * cT[Jb], sizes_b)[back]      # moved to a's order
    mean = (Wa.sum(0) + 1.0) / 2.0  # average ranks sum to N (N + 1) / 2
    ra -= mean
    rb -= mean
    wra = Wa * ra
    sxy = np.einsum("pb,pb->b", wra, rb)
    sxx = np.einsum("pb,pb->b", wra, ra)
    wra = np.multiply(Wa, rb, out=wra)
    syy = np.einsum("pb,pb->b", wra, rb)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sxy / np.sqrt(sxx * syy)


def _bootstrap_distribution(counts, a, b, I, J, method):
    """The statistic of every resample, given the draw counts of each stimulus."""
    if method in ("pearson", "cosine"):
        if method == "pearson":  # centring once keeps the weighted sums well conditioned
            a, b = a - a.mean(), b - b.mean()
        return _quadratic_stats(counts, a, b, I, J, method)
    if method == "spearman":
        (oa, sizes_a), (ob, sizes_b) = _ties(a), _ties(b)
        back = np.argsort(ob)[oa]
        a_sorted, b_sorted = (I[oa], J[oa], sizes_a), (I[ob], J[ob], sizes_b)
        cT = np.ascontiguousarray(counts.T)
        step = max(1, _BATCH_ENTRIES // a.size)
        return np.concatenate([_spearman_batch(cT[:, k:k + step], a_sorted, b_sorted, back)
                               for k in range(0, len(counts), step)])
    # tau-a has no O(p) weighted form here: expand each resample's multiset explicitly
    out = np.empty(len(counts))
    for k, c in enumerate(counts.astype(np.int64)):
        w = c[I] * c[J]
        ea, eb = np.repeat(a, w), np.repeat(b, w)
        out[k] = _tau_a(ea, eb) if np.ptp(ea) > 0 and np.ptp(eb) > 0 else np.nan
    return out


def bootstrap_compare_rdms(R1, R2, method="pearson", n_boot=1000, confidence_level=0.95,
                           p_method="t", random_state=None):
    """RDM comparison with a stimulus bootstrap: standard error, interval and p-value.

    Stimuli are drawn with replacement; the comparison is recomputed on the sub-RDMs,
    leaving out the pairs of two copies of the same stimulus (their dissimilarity is 0 by
    construction). The paper reports its RDM correlations with such bootstrap p-values.

    Parameters
    ----------
    R1, R2 : array-like of shape (m, m) or (m(m-1)/2,)
        RDMs of the same stimuli; NaN entries are masked pairwise.
    method : {"pearson", "spearman", "kendall_tau_a", "cosine"}, default="pearson"
        As in :func:`compare_rdms`. ``"kendall_tau_a"`` resamples are computed one by one
        (slow for large ``m``).
    n_boot : int, default=1000
    confidence_level : float, default=0.95
        Of the percentile interval, in (0, 1).
    p_method : {"t", "percentile"}, default="t"
        ``"t"``: ``t = statistic / se`` and ``p = 1 - T_{m-1}(t)`` (one-sided t-test against
        0, rsatoolbox's convention); ``"percentile"``: ``(1 + #{theta* <= 0}) / (n_boot + 1)``.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    result : Bunch
        ``statistic`` (float, the comparison on all stimuli), ``se`` (bootstrap
        standard error: the sample standard deviation of ``distribution``),
        ``ci_low``, ``ci_high`` (percentile confidence interval), ``p_value``
        (one-sided, of ``statistic > 0``) and ``distribution`` (ndarray of shape
        (n_boot,), the bootstrap statistics).

    Warns
    -----
    NumericalWarning
        When some resamples leave a constant vector (the comparison is undefined there);
        they are NaN in ``distribution`` and left out of the summaries.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 5))
    >>> from geolearn.representations import compute_rdm
    >>> R1 = compute_rdm(X)
    >>> R2 = compute_rdm(X + 0.5 * rng.normal(size=X.shape))
    >>> res = bootstrap_compare_rdms(R1, R2, n_boot=200, random_state=0)
    >>> bool(res.ci_low < res.statistic < res.ci_high), bool(res.p_value < 0.001)
    (True, True)
    """
    check_choice(method, "method", METHODS)
    check_choice(p_method, "p_method", ("t", "percentile"))
    n_boot = check_scalar_param(n_boot, "n_boot", kind="integer", low=1)
    confidence_level = check_scalar_param(confidence_level, "confidence_level", low=0, high=1,
                                          closed="neither")
    a, b, m, keep = _paired(R1, R2)
    _check_varies(a, "R1", method)
    _check_varies(b, "R2", method)
    statistic = _statistic(a, b, method)

    rng = check_random_state(random_state)
    draws = rng.randint(m, size=(n_boot, m))
    counts = np.zeros((n_boot, m))
    np.add.at(counts, (np.arange(n_boot)[:, None], draws), 1.0)
    I, J = np.triu_indices(m, 1)
    if keep is not None:
        I, J = I[keep], J[keep]
    dist = _bootstrap_distribution(counts, a, b, I, J, method)
    return _summarise(statistic, dist, m, confidence_level, p_method)


def _summarise(statistic, dist, m, confidence_level, p_method):
    finite = dist[np.isfinite(dist)]
    if finite.size < dist.size:
        warn_user(f"{dist.size - finite.size} of {dist.size} bootstrap resamples gave a constant "
        "RDM vector (comparison undefined); they are NaN in distribution and left out.", NumericalWarning)
    if finite.size == 0:
        raise ValueError("every bootstrap resample gave a constant RDM vector; the "
                         "bootstrap is undefined for these RDMs.")
    se = float(np.std(finite, ddof=1)) if finite.size > 1 else 0.0
    alpha = 1.0 - confidence_level
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    if p_method == "percentile":
        p = (1.0 + np.sum(finite <= 0)) / (finite.size + 1.0)
    elif se > 0:
        p = stats.t.sf(statistic / se, m - 1)
    else:
        p = 0.0 if statistic > 0 else 1.0
    return Bunch(statistic=float(statistic), se=se, ci_low=float(low), ci_high=float(high),
                 p_value=float(p), distribution=dist)
