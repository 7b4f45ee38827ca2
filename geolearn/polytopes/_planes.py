"""Regions met by a 2-D slice ``x0 + a u + b v`` of the input space: exact polygon subdivision."""

import numpy as np
import torch
from scipy.spatial import ConvexHull
from sklearn.utils import Bunch
from torch import nn

from ._conv import ConvReLUNet, linear_part, pool_shape, pool_windows
from ._lp import clip_polygon, polygon_area
from ._maps import forward_bits, unique_patterns


def _layers(net):
    """``(layers, input shape)``: a conv net's own layers, or an MLP's as Linear and ReLU."""
    if isinstance(net, ConvReLUNet):
        return net.layers, net.image_shape
    layers = []
    for W, b in zip(net.weights, net.biases):
        linear = nn.Linear(W.shape[1], W.shape[0], dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(torch.as_tensor(W)), linear.bias.copy_(torch.as_tensor(b))
        layers += [linear, nn.ReLU()]
    return layers[:-1], (net.n_inputs,)


def _cut(V, lines, min_area):
    """The pieces of convex polygon ``V`` cut by the lines ``{y : g y + c = 0}``."""
    pieces = [V]
    for g, c in lines:
        new = []
        for piece in pieces:
            d = piece @ g + c
            if d.min() >= 0 or d.max() <= 0:  # the line misses this piece
                new.append(piece)
                continue
            new += [part for part in (clip_polygon(piece, g, -c), clip_polygon(piece, -g, c))
                    if polygon_area(part) > min_area]
        pieces = new
    return pieces


def plane_cells(net, x0, u, v, lo, hi):
    """Convex polygons (in plane coordinates ``(a, b)``) on which ``net`` has one bit string.

    Layer by layer the layer input is ``P + a Qa + b Qb`` inside each cell: a
    ReLU unit's zero line cuts the cells it crosses; a max-pool window whose
    argmax differs between a cell's vertices is cut along the lines where two
    of its entries are equal (a superset of the argmax boundaries: the
    caller merges pieces with equal bit strings). Pieces thinner than
    ``1e-14`` of the square's area are dropped.
    """
    layers, shape = _layers(net)
    min_area = 1e-14 * (hi - lo) ** 2
    cells = [np.array([[lo, lo], [hi, lo], [hi, hi], [lo, hi]], float)]
    P, Qa, Qb = (torch.as_tensor(np.asarray(w, float)).reshape(1, *shape) for w in (x0, u, v))
    with torch.no_grad():
        for layer in layers:
            if isinstance(layer, nn.ReLU):
                p, qa, qb = (w.reshape(len(w), -1).numpy() for w in (P, Qa, Qb))
                cells, parent = _split(cells, _relu_lines, (p, qa, qb), min_area)
                c = _centroids(cells)
                s = torch.as_tensor(p[parent] + c[:, :1] * qa[parent] + c[:, 1:] * qb[parent] > 0)
                P, Qa, Qb = (w[parent] * s.reshape(len(parent), *w.shape[1:]) for w in (P, Qa, Qb))
            elif isinstance(layer, nn.MaxPool2d):
                out = pool_shape(P, layer)
                wp, wa, wb = (pool_windows(w, layer, fill) for w, fill in
                              ((P, -torch.inf), (Qa, 0.0), (Qb, 0.0)))
                np_w = [w.numpy() for w in (wp, wa, wb)]
                cells, parent = _split(cells, _pool_lines, np_w, min_area)
                c = torch.as_tensor(_centroids(cells))[:, :, None, None, None]
                wp, wa, wb = wp[parent], wa[parent], wb[parent]
                arg = (wp + c[:, 0] * wa + c[:, 1] * wb).argmax(dim=3, keepdim=True)
                P, Qa, Qb = (w.gather(3, arg).reshape(len(parent), w.shape[1], *out)
                             for w in (wp, wa, wb))
            else:
                P, Qa, Qb = layer(P), linear_part(layer, Qa), linear_part(layer, Qb)
    return cells


def _split(cells, lines_of, arrays, min_area):
    """Every cell cut by ``lines_of(*(a[i] for a in arrays), V)``; the pieces and their cell."""
    new, parent = [], []
    for i, V in enumerate(cells):
        pieces = _cut(V, lines_of(*(a[i] for a in arrays), V), min_area)
        new += pieces
        parent += [i] * len(pieces)
    return new, np.array(parent, dtype=int)


def _centroids(cells):
    return np.array([V.mean(axis=0) for V in cells])


def _relu_lines(p, qa, qb, V):
    values = p + V @ np.stack([qa, qb])
    cut = np.flatnonzero((values.min(axis=0) < 0) & (values.max(axis=0) > 0))
    return [(np.array([qa[k], qb[k]]), p[k]) for k in cut]


def _pool_lines(wp, wa, wb, V):
    """Lines where two entries of a window are equal, for windows whose argmax is not the
    same at every vertex (where it is, it holds on the whole convex cell)."""
    values = wp + V[:, 0, None, None, None] * wa + V[:, 1, None, None, None] * wb
    arg = values.argmax(axis=-1)
    lines = []
    for c, w in zip(*np.nonzero((arg != arg[:1]).any(axis=0))):
        for i in range(wp.shape[-1]):
            for j in range(i + 1, wp.shape[-1]):
                if np.isfinite(wp[c, w, i]) and np.isfinite(wp[c, w, j]):
                    lines.append((np.array([wa[c, w, i] - wa[c, w, j], wb[c, w, i] - wb[c, w, j]]),
                                  wp[c, w, i] - wp[c, w, j]))
    return lines


def plane_regions(net, x0, u, v, lo, hi):
    """The regions met by the square ``{x0 + a u + b v : lo <= a, b <= hi}``, as a Bunch."""
    cells = plane_cells(net, x0, u, v, lo, hi)
    c = _centroids(cells)
    bits = forward_bits(net, x0 + c[:, :1] * u + c[:, 1:] * v)[0]
    patterns, labels, _ = unique_patterns(bits)
    polygons, areas = [], np.zeros(len(patterns))
    for r in range(len(patterns)):
        pieces = [cells[i] for i in np.flatnonzero(labels == r)]
        areas[r] = sum(polygon_area(V) for V in pieces)
        # the region's part of the plane is convex: the hull of its pieces
        points = np.vstack(pieces)
        polygons.append(pieces[0] if len(pieces) == 1 else points[ConvexHull(points).vertices])
    return Bunch(patterns=patterns, n_regions=len(patterns), polygons=polygons, areas=areas)
