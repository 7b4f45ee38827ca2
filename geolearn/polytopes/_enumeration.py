"""Every region of a ReLU network: traversal of the dual graph (paper 1, Algorithm 1)
and, for 2-D boxes, exact polygon subdivision."""

import time
from collections import deque

import numpy as np
from scipy import sparse
from sklearn.utils import Bunch

from .._utils import progress_bar, warn_user
from ..exceptions import PartialResultWarning
from ._lp import (
    chebyshev_lp,
    clip_polygon,
    facet_center,
    facet_radius,
    facets_clarkson,
    facets_lp,
    is_bounded,
    polygon_area,
    stack_rows,
)
from ._maps import forward_bits, hrep, local_maps
from ._segments import segment_exact


def dual_distances(enumeration, i=None):
    """Shortest-path lengths in the dual graph of an enumeration (unweighted).

    Parameters
    ----------
    enumeration : Bunch
        A :meth:`ReLUPolytopes.enumerate_regions` result.
    i : int, default=None
        One source region; None gives the full ``(N, N)`` matrix.

    Returns
    -------
    distances : ndarray of shape (N, N), or (N,) for one source ``i``
        ``inf`` between regions the graph does not connect.

    Examples
    --------
    The four quadrants of the square: opposite quadrants are two facets apart.

    >>> import numpy as np, torch
    >>> from geolearn.polytopes import ReLUPolytopes, dual_distances
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    >>> with torch.no_grad():
    ...     _ = net[0].weight.copy_(torch.eye(2)), net[0].bias.zero_()
    >>> enum = ReLUPolytopes(network=net, bounds=(-1, 1)).fit(np.zeros((1, 2))).enumerate_regions()
    >>> sorted(dual_distances(enum, 0).tolist())
    [0.0, 1.0, 1.0, 2.0]
    """
    from scipy.sparse.csgraph import shortest_path

    dist = shortest_path(enumeration.adjacency, unweighted=True, directed=False,
                         indices=None if i is None else [i])
    return dist if i is None else dist[0]


def _finish(net, patterns, edges, lo, hi, solver, complete, n_degenerate, polygons, *,
            radii=None, bounded=None, device="cpu"):
    patterns = np.asarray(patterns, bool).reshape(-1, net.n_hidden_units)
    N = len(patterns)
    if radii is None or bounded is None:
        radii, bounded = np.empty(N), np.empty(N, bool)
        for r, s in enumerate(patterns):
            A, c = hrep(net, s)
            radii[r] = chebyshev_lp(*stack_rows(A, c, lo, hi)[:2], solver=solver)[1]
            bounded[r] = is_bounded(stack_rows(A, c)[0], solver=solver)
    W, b = local_maps(net, patterns, device=device)
    if edges:
        e = np.array(sorted(set(edges)))
        adj = sparse.coo_matrix((e[:, 2], (e[:, 0], e[:, 1])), shape=(N, N)).tocsr()
        adj = adj.maximum(adj.T).tocsr()
    else:
        adj = sparse.csr_matrix((N, N), dtype=int)
    areas = None if polygons is None else np.array([polygon_area(V) for V in polygons])
    return Bunch(patterns=patterns, n_regions=N, bounded=np.asarray(bounded),
                 chebyshev_radius=np.asarray(radii, float), W=W, b=b, adjacency=adj,
                 polygons=polygons, areas=areas, complete=complete,
                 n_degenerate_crossings=n_degenerate)


def _truncated(budget, n_regions, start, more=""):
    """Warn that a budget (``"max_regions=..."`` or ``"max_time=..."``) stopped the enumeration."""
    name = budget.split("=")[0]
    plural = "s" if n_regions != 1 else ""
    warn_user(f"enumeration stopped at {budget} after {time.monotonic() - start:.1f} s "
              f"with {n_regions} region{plural}{more}: the count is incomplete "
              f"(RegionEnumeration.complete is False). Raise {name}.", PartialResultWarning)


def _out_of_time(start, max_time):
    return max_time is not None and time.monotonic() - start > max_time


def region_neighbours(net, s, lo, hi, *, scale, tol, facet_method, solver):
    """Neighbours across each neuron facet of ``P(s)`` (cut by the box), found by crossing.

    For each facet, the exact segment from just inside its Chebyshev centre
    along the outward normal gives the first region beyond it (spec step 6):
    the one-bit flip generically, a multi-bit one when units vanish together.

    Returns
    -------
    neighbours : list of (unit, pattern)
    n_degenerate : int
        Crossings that flipped more than the facet's bit.
    radius, bounded : the region's Chebyshev radius (cut by the box) and boundedness.
    """
    h = net.n_hidden_units
    A, c = hrep(net, s)
    An, cn, owner, _ = stack_rows(A, c, lo, hi)
    interior, radius = chebyshev_lp(An, cn, solver=solver)
    bounded = is_bounded(stack_rows(A, c)[0], solver=solver)
    r_int = radius
    if np.isinf(radius):  # chebyshev_lp's centre is then the one found with r <= 1
        r_int = 1.0
    if r_int <= tol:
        return [], 0, radius, bounded
    if facet_method == "lp":
        rows, points = facets_lp(An, cn, tol=tol, solver=solver), {}
    else:
        rows, points = facets_clarkson(An, cn, interior, box=None if lo is None else (lo, hi),
                                       tol=tol, solver=solver, return_points=True)
    out, n_degenerate = [], 0
    for row in rows[owner[rows] < h]:
        unit = int(owner[row])
        # a point where a ray left through the facet, unless too close to the facet's edge
        x_f = points.get(int(row))
        r_f = -np.inf if x_f is None else min(facet_radius(An, cn, row, x_f), scale)
        if r_f < 1e-6 * scale:
            x_f, r_f = facet_center(An, cn, row, r_max=scale, solver=solver)
        eps, delta = 1e-7 * scale, min(1e-3 * scale, r_f)
        seg = segment_exact(net, x_f - eps * An[row], x_f + delta * An[row])
        beyond = [p for p in seg.patterns if np.any(p != s)]
        if not beyond:
            continue
        nb = beyond[0]
        n_degenerate += int(np.count_nonzero(nb != s) != 1 or nb[unit] == s[unit])
        out.append((unit, nb))
    return out, n_degenerate, radius, bounded


def traverse(net, start, lo, hi, *, scale, tol, facet_method, solver, max_regions,
             max_time=None, device="cpu", verbose=0):
    """Paper 1, Algorithm 1 with robust neighbours found by crossing each facet.

    Past ``max_regions`` regions no new one is queued; past ``max_time`` seconds the
    traversal stops, keeping the regions expanded so far (at least the first one).
    """
    t0 = time.monotonic()
    s0 = forward_bits(net, start[None])[0][0]
    index, patterns, queue = {s0.tobytes(): 0}, [s0], deque([0])
    edges, radii, bounded, n_degenerate, refused = [], {}, {}, 0, False
    with progress_bar(desc="enumerate_regions", unit="region", verbose=verbose) as bar:
        while queue:
            if radii and _out_of_time(t0, max_time):
                # regions are expanded in the order they were found: keep the first len(radii)
                n = len(radii)
                _truncated(f"max_time={max_time:g}", n, t0,
                           f" expanded ({len(patterns) - n} more found, not expanded)")
                patterns, edges = patterns[:n], [e for e in edges if e[1] < n]
                return _traversed(net, patterns, edges, radii, bounded, lo, hi, solver, False,
                                  n_degenerate, device)
            r = queue.popleft()
            try:
                nbs, n_deg, radii[r], bounded[r] = region_neighbours(
                    net, patterns[r], lo, hi, scale=scale, tol=tol, facet_method=facet_method,
                    solver=solver)
            except RuntimeError as exc:
                raise RuntimeError(f"region {r} of the enumeration: {exc}") from exc
            n_degenerate += n_deg
            for unit, nb in nbs:
                key = nb.tobytes()
                if key not in index:
                    if len(patterns) >= max_regions:
                        refused = True
                        continue
                    index[key] = len(patterns)
                    patterns.append(nb)
                    queue.append(index[key])
                edges.append((r, index[key], unit + 1))
            bar.update()
            bar.set_postfix(found=len(index), queued=len(queue), refresh=False)
        if refused:
            _truncated(f"max_regions={max_regions}", len(patterns), t0)
        return _traversed(net, patterns, edges, radii, bounded, lo, hi, solver, not refused,
                          n_degenerate, device)


def _traversed(net, patterns, edges, radii, bounded, lo, hi, solver, complete, n_degenerate,
               device):
    """The :class:`RegionEnumeration` of the expanded regions of a traversal."""
    n = len(patterns)
    polygons = None
    if net.n_inputs == 2 and lo is not None:
        from ._polytope import Polytope

        polygons = [Polytope(p, *hrep(net, p), None, None, lo, hi).polygon() for p in patterns]
    return _finish(net, patterns, edges, lo, hi, solver, complete, n_degenerate, polygons,
                   radii=[radii[i] for i in range(n)], bounded=[bounded[i] for i in range(n)],
                   device=device)


def _share_edge(V, v1, direction, length, normal, tol):
    """Whether polygon ``V`` has a side of positive length on the segment ``v1 + t direction``."""
    on_line = np.abs((V - v1) @ normal) <= tol
    if on_line.sum() < 2:
        return False
    t = (V[on_line] - v1) @ direction
    return min(t.max(), length) - max(t.min(), 0.0) > tol


def _split(cell, W, b, min_area):
    """The pieces of a convex cell cut by the units ``(W, b)`` of the next layer."""
    V, bits, Wc, bc = cell
    Ahat, bh = W @ Wc, W @ bc + b
    pieces = [(V, [])]
    for a, z0 in zip(Ahat, bh):
        if np.linalg.norm(a) < 1e-14:  # constant unit on this cell: no split
            pieces = [(P, sb + [z0 > 0]) for P, sb in pieces]
            continue
        nxt = []
        for P, sb in pieces:
            for Q, bit in ((clip_polygon(P, a, -z0), False), (clip_polygon(P, -a, z0), True)):
                if polygon_area(Q) > min_area:
                    nxt.append((Q, sb + [bit]))
        pieces = nxt
    out = []
    for P, sb in pieces:
        s = np.array(sb, bool)
        out.append((P, np.concatenate([bits, s]), s[:, None] * Ahat, s * bh))
    return out


def subdivide(net, lo, hi, *, solver, max_regions, max_time=None, device="cpu", verbose=0):
    """Exact 2-D partition of a box: clip convex cells layer by layer (LP-free).

    Each cell is refined through every layer before the next one (depth first, which
    gives the regions in the order of a layer-by-layer refinement), so a budget
    (``max_regions``, ``max_time`` seconds) stops with whole regions: the first ones,
    at least one.
    """
    t0 = time.monotonic()
    box = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]], float)
    min_area = 1e-14 * polygon_area(box)
    layers = list(zip(net.weights[:-1], net.biases[:-1]))
    stack = [((box, np.zeros(0, bool), np.eye(2), np.zeros(2)), 0)]
    cells, complete = [], True
    with progress_bar(desc="enumerate_regions", unit="region", verbose=verbose) as bar:
        while stack:
            if cells and (len(cells) >= max_regions or _out_of_time(t0, max_time)):
                budget = (f"max_regions={max_regions}" if len(cells) >= max_regions
                          else f"max_time={max_time:g}")
                _truncated(budget, len(cells), t0)
                complete = False
                break
            cell, k = stack.pop()
            if k == len(layers):
                cells.append(cell)
                bar.update()
                continue
            stack.extend((piece, k + 1)
                         for piece in reversed(_split(cell, *layers[k], min_area)))
    patterns = np.array([bits for _, bits, _, _ in cells]).reshape(len(cells), -1)
    polygons = [V for V, _, _, _ in cells]
    index = {p.tobytes(): i for i, p in enumerate(patterns)}
    scale = float(np.max(hi - lo))
    edges = []
    for r, V in enumerate(polygons):
        for k in range(len(V)):
            v1, v2 = V[k], V[(k + 1) % len(V)]
            d = v2 - v1
            length = np.linalg.norm(d)
            if length < 1e-9 * scale:
                continue
            normal = np.array([d[1], -d[0]]) / length  # outward for counter-clockwise polygons
            shift = 1e-9 * scale * normal
            p1, p2 = v1 + 1e-6 * d + shift, v2 - 1e-6 * d + shift
            if np.any(np.minimum(p1, p2) < lo) or np.any(np.maximum(p1, p2) > hi):
                continue  # an edge on the box boundary
            for p in segment_exact(net, p1, p2).patterns:
                j = index.get(p.tobytes())
                if j is not None and j != r and _share_edge(polygons[j], v1, d / length, length,
                                                            normal, 1e-9 * scale):
                    unit = int(np.flatnonzero(p != patterns[r])[0])
                    edges.append((r, j, unit + 1))
    return _finish(net, patterns, edges, lo, hi, solver, complete, 0, polygons, device=device)
