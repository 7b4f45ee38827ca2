"""Regions crossed by a straight segment: exact breakpoints and the paper's bisection."""

import numpy as np
import torch
from sklearn.utils import Bunch
from torch import nn

from .._utils import check_numeric_array
from ._conv import (
    ConvReLUNet,
    as_images,
    flat_rows,
    linear_part,
    pool_shape,
    pool_windows,
)
from ._maps import forward_bits
from ._network import as_relu_network


def _bits(net, X):
    return forward_bits(net, np.atleast_2d(X))[0]


def exact_breaks(net, x_a, x_b):
    """Interval boundaries ``0 = t_0 < ... < t_K = 1`` of the pre-activation signs.

    Layer by layer the layer input is affine in ``t`` on each interval; each
    unit changes sign at ``t = -p/q`` (spec step 7).
    """
    if isinstance(net, ConvReLUNet):
        return np.append(conv_intervals(net, x_a[None], x_b[None])[1], 1.0)
    ts = np.array([0.0, 1.0])
    P, Q = x_a[None], (x_b - x_a)[None]
    for W, b in zip(net.weights[:-1], net.biases[:-1]):
        p, q = P @ W.T + b, Q @ W.T
        with np.errstate(divide="ignore", invalid="ignore"):
            t = -p / q
        lo, hi = ts[:-1, None], ts[1:, None]
        inside = (q != 0) & (t > lo) & (t < hi)
        ts = np.unique(np.concatenate([ts, t[inside]]))
        mid = 0.5 * (ts[:-1] + ts[1:])
        parent = np.searchsorted(lo[:, 0], mid, side="right") - 1
        p, q = p[parent], q[parent]
        s = (p + mid[:, None] * q) > 0
        P, Q = s * p, s * q
    return ts


def split_intervals(lo, hi, owner, t):
    """Cut the intervals ``[lo_i, hi_i]`` at the points ``t`` (of interval ``owner``) strictly
    inside them: the pieces' ``(parent, start, stop)``, in order within each parent."""
    inside = (t > lo[owner]) & (t < hi[owner])
    parent = np.concatenate([np.arange(len(lo)), owner[inside]])
    start = np.concatenate([lo, t[inside]])
    order = np.lexsort((start, parent))
    parent, start = parent[order], start[order]
    fresh = np.r_[True, (parent[1:] != parent[:-1]) | (start[1:] != start[:-1])]
    parent, start = parent[fresh], start[fresh]
    last = np.r_[parent[1:] != parent[:-1], True]
    stop = np.r_[start[1:], 0.0]
    stop[last] = hi[parent[last]]
    return parent, start, stop


def conv_intervals(net, XA, XB):
    """Intervals of ``t`` in [0, 1] on which every segment ``XA[i] -> XB[i]`` stays in one
    region: ``(segment, start, stop)``, in order.

    Layer by layer the layer input is ``P + t Q`` on each interval: a ReLU unit
    switches at ``t = -p / q``; a max-pool window's argmax can only switch where
    two of its entries cross on the window's maximum. Every interval is cut at
    these points (a superset of the boundaries: equal neighbours are merged by
    comparing bit strings).
    """
    n = len(XA)
    seg, lo, hi = np.arange(n), np.zeros(n), np.ones(n)
    P = as_images(net, XA)
    Q = as_images(net, np.asarray(XB, float) - np.asarray(XA, float))
    with torch.no_grad():
        for layer in net.layers:
            if isinstance(layer, nn.ReLU):
                p, q = flat_rows(P).numpy(), flat_rows(Q).numpy()
                owner, unit = np.nonzero(q)
                parent, lo, hi = split_intervals(lo, hi, owner, -p[owner, unit] / q[owner, unit])
                seg, P, Q = seg[parent], P[parent], Q[parent]
                mid = torch.as_tensor(0.5 * (lo + hi)).reshape(-1, *([1] * (P.dim() - 1)))
                s = (P + mid * Q) > 0
                P, Q = P * s, Q * s
            elif isinstance(layer, nn.MaxPool2d):
                shape = pool_shape(P, layer)
                wp, wq = pool_windows(P, layer, -torch.inf), pool_windows(Q, layer, 0.0)
                owner, t = _pool_crossings(wp.numpy(), wq.numpy())
                parent, lo, hi = split_intervals(lo, hi, owner, t)
                seg, wp, wq = seg[parent], wp[parent], wq[parent]
                mid = torch.as_tensor(0.5 * (lo + hi)).reshape(-1, 1, 1, 1)
                arg = (wp + mid * wq).argmax(dim=3, keepdim=True)
                P = wp.gather(3, arg).reshape(len(seg), wp.shape[1], *shape)
                Q = wq.gather(3, arg).reshape(P.shape)
            else:
                P, Q = layer(P), linear_part(layer, Q)
    return seg, lo, hi


def _pool_crossings(wp, wq):
    """``(interval, t)`` where two entries of a window cross at the window's maximum."""
    k = wp.shape[3]
    i, j = np.triu_indices(k, 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # padding: -inf entries
        dp, dq = wp[..., i] - wp[..., j], wq[..., j] - wq[..., i]
        t = dp / dq  # entry i = entry j at t
        at_t = wp[..., i] + t * wq[..., i]
        top = (wp[..., None, :] + t[..., None] * wq[..., None, :]).max(-1)
    scale = np.abs(wp).max(-1, keepdims=True, where=np.isfinite(wp), initial=0) + np.abs(wq).max(
        -1, keepdims=True)
    keep = np.isfinite(t) & (at_t >= top - 1e-9 * scale)
    owner = np.nonzero(keep)[0]
    return owner, t[keep]


def segment_counts_exact(net, XA, XB):
    """Regions crossed by each segment ``XA[i] -> XB[i]``, all segments at once.

    :func:`exact_breaks` vectorised over the intervals of every segment (one
    matrix product per layer for all of them). Each interval's bit string is
    the signs the recurrence computed at its midpoint, layer by layer (no
    second forward pass; conv nets: a forward pass at the midpoints of
    :func:`conv_intervals`); equal neighbours merge as in :func:`segment_exact`,
    whose ``n_regions`` this equals.

    Returns
    -------
    counts : ndarray of shape (n_segments,), int
    """
    XA, XB = np.asarray(XA, float), np.asarray(XB, float)
    n = len(XA)
    if isinstance(net, ConvReLUNet):
        seg, lo, hi = conv_intervals(net, XA, XB)
        patterns = _bits(net, XA[seg] + (0.5 * (lo + hi))[:, None] * (XB - XA)[seg])
        change = (seg[1:] == seg[:-1]) & np.any(patterns[1:] != patterns[:-1], axis=1)
        return 1 + np.bincount(seg[1:][change], minlength=n)
    seg, lo, hi, signs = np.arange(n), np.zeros(n), np.ones(n), []
    P, Q = XA, XB - XA
    for i, (W, b) in enumerate(zip(net.weights[:-1], net.biases[:-1])):
        p, q = P @ W.T + b, Q @ W.T
        owner, unit = np.nonzero(q)
        parent, lo, hi = split_intervals(lo, hi, owner, -p[owner, unit] / q[owner, unit])
        seg, p, q = seg[parent], p[parent], q[parent]
        s = (p + (0.5 * (lo + hi))[:, None] * q) > 0
        signs = [*(bits[parent] for bits in signs), s]
        if i < len(net.weights) - 2:  # the output map does not cut intervals
            P, Q = s * p, s * q
    change = seg[1:] == seg[:-1]
    if signs:
        patterns = np.hstack(signs)
        change &= np.any(patterns[1:] != patterns[:-1], axis=1)
    return 1 + np.bincount(seg[1:][change], minlength=n)


def segment_region_counts(network, XA, XB, *, image_shape=None):
    """Number of linear regions of a ReLU network on each segment ``XA[i] -> XB[i]``, exactly.

    The counts of :meth:`ReLUPolytopes.segment_region_counts` without fitting
    :class:`ReLUPolytopes` on data (whose regions, local maps and statistics
    the segments do not need): all segments at once, exact breakpoints,
    neighbouring pieces with the same bit string merged.

    Parameters
    ----------
    network : ReLUNet, ConvReLUNet, torch.nn.Module or fitted MLP
        A ReLU network :func:`as_relu_network` converts.
    XA, XB : array-like of shape (n_segments, m)
        The segments' ends, as flat rows (images folded by ``image_shape``).
    image_shape : tuple of int, default=None
        ``(C, H, W)`` of the flat rows of a conv net that does not start with
        ``Unflatten``; ignored for MLPs.

    Returns
    -------
    counts : ndarray of shape (n_segments,), int
        Regions met by each segment (1: the segment stays in one region).

    See Also
    --------
    ReLUPolytopes.segment_regions : the regions of one segment, with their bit strings.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.polytopes import segment_region_counts
    >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    >>> with torch.no_grad():  # units switching at x = 0 and x = 1
    ...     _ = net[0].weight.copy_(torch.tensor([[1.0], [1.0]]))
    ...     _ = net[0].bias.copy_(torch.tensor([0.0, -1.0]))
    >>> segment_region_counts(net, [[-1.0], [0.5]], [[2.0], [0.8]])
    array([3, 1])
    """
    net = as_relu_network(network, image_shape=image_shape)
    XA = check_numeric_array(XA, "XA", dtype=np.float64)
    XB = check_numeric_array(XB, "XB", dtype=np.float64)
    if XA.shape != XB.shape:
        raise ValueError(f"XA and XB must have the same shape; got {XA.shape} and {XB.shape}.")
    if XA.shape[1] != net.n_inputs:
        raise ValueError(f"XA has {XA.shape[1]} features, but the network is expecting "
                         f"{net.n_inputs} features as input.")
    return segment_counts_exact(net, XA, XB)


def segment_exact(net, x_a, x_b):
    """The exact regions of a segment (merging equal neighbours), as a Bunch."""
    x_a, x_b = np.asarray(x_a, float), np.asarray(x_b, float)
    ends = _bits(net, np.vstack([x_a, x_b]))
    ts = exact_breaks(net, x_a, x_b)
    mid = 0.5 * (ts[:-1] + ts[1:])
    points = x_a + mid[:, None] * (x_b - x_a)
    patterns = _bits(net, points)
    change = np.any(patterns[1:] != patterns[:-1], axis=1)
    keep = np.concatenate([[True], change])
    # a merged interval's representative point is the midpoint of its whole span
    starts = ts[:-1][keep]
    stops = np.append(ts[1:][np.flatnonzero(keep)[1:] - 1], 1.0)
    points = x_a + (0.5 * (starts + stops))[:, None] * (x_b - x_a)
    patterns = patterns[keep]
    flips = np.count_nonzero(patterns[1:] != patterns[:-1], axis=1)
    return Bunch(t_breaks=starts[1:], patterns=patterns, points=points,
                 n_regions=len(patterns), hamming=int(np.count_nonzero(ends[0] != ends[1])),
                 n_flips=flips)


def segment_bisection(net, x_a, x_b, max_halvings=52):
    """Paper 1, Algorithm 2: accepted points one bit apart by repeated halving.

    A lower bound on the number of regions: an accepted half may hide an even
    number of extra crossings, and multi-bit crossings are skipped (recorded
    as one step) after ``max_halvings`` halvings.
    """
    x_a, x_b = np.asarray(x_a, float), np.asarray(x_b, float)

    def bits(t):
        return _bits(net, x_a + t * (x_b - x_a))[0]

    s_b = bits(1.0)
    t_left, s_left = 0.0, bits(0.0)
    hamming = int(np.count_nonzero(s_left != s_b))
    ts, pats = [], [s_left]
    while np.count_nonzero(s_left != s_b) > 1:
        lo, hi = t_left, 1.0
        for _ in range(max_halvings):
            mid = 0.5 * (lo + hi)
            s_mid = bits(mid)
            d = np.count_nonzero(s_mid != s_left)
            if d == 1:
                break
            lo, hi = (mid, hi) if d == 0 else (lo, mid)
        else:  # a multi-bit crossing: step past it
            mid, s_mid = hi, bits(hi)
        t_left, s_left = mid, s_mid
        ts.append(mid)
        pats.append(s_mid)
    if np.count_nonzero(s_left != s_b):
        ts.append(1.0)
        pats.append(s_b)
    patterns = np.array(pats)
    t_all = np.array([0.0, *ts])
    return Bunch(t_breaks=np.array(ts), patterns=patterns,
                 points=x_a + t_all[:, None] * (x_b - x_a), n_regions=len(patterns),
                 hamming=hamming, n_flips=np.count_nonzero(patterns[1:] != patterns[:-1], axis=1))
