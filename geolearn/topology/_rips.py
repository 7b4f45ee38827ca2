"""The exact Vietoris-Rips persistence of small inputs: the test oracle and the fallback.

The Rips complex is built up to dimension ``maxdim + 1`` (vectorised numpy) and the
coboundary matrices are reduced over Z/p, dimension by dimension with clearing (the
anti-transposed boundary matrix: persistent cohomology, whose pairs are those of
persistent homology; de Silva, Morozov and Vejdemo-Johansson 2011). Over Z/2 a
column is a Python set of coface positions (symmetric difference is the column
addition); over Z/p a dict ``{position: coefficient}``.
"""

import math

import numpy as np

#: The exact backend refuses complexes with more (maxdim+1)-simplices than this.
MAX_SIMPLICES = 200_000
_CHUNK_ENTRIES = 4_000_000


class ComplexTooLarge(Exception):
    """The Rips complex has more top simplices than the exact backend accepts."""

    def __init__(self, count, dim):
        self.count, self.dim = count, dim
        super().__init__(f"more than {count} {dim}-simplices")


def mst_edges(D):
    """Prim's minimum spanning tree of a dense distance matrix: ``(weights, (i, j))``.

    O(n^2) time and O(n) extra memory, vectorised over rows.
    """
    n = len(D)
    best = np.array(D[0], dtype=np.float64)
    parent = np.zeros(n, dtype=np.intp)
    done = np.zeros(n, dtype=bool)
    done[0] = True
    best[0] = np.inf
    weights = np.empty(n - 1)
    edges = np.empty((n - 1, 2), dtype=np.intp)
    for k in range(n - 1):
        j = int(np.argmin(best))
        weights[k], edges[k] = best[j], (parent[j], j)
        done[j] = True
        best[j] = np.inf
        closer = (D[j] < best) & ~done
        best[closer] = D[j][closer]
        parent[closer] = j
    return weights, edges


def _extend(S, values, D, thresh, limit):
    """All simplices ``S + [w]`` with ``w > max(S)`` whose diameter is ``<= thresh``."""
    n, k = len(D), S.shape[1]
    step = max(1, _CHUNK_ENTRIES // max(1, k * n))
    out_s, out_v, count = [], [], 0
    cols = np.arange(n)
    for lo in range(0, len(S), step):
        s, v = S[lo:lo + step], values[lo:lo + step]
        far = D[s].max(axis=1)                                  # (m, n): max distance to w
        ok = (cols[None, :] > s[:, -1:]) & (far <= thresh)
        rows, w = np.nonzero(ok)
        count += len(rows)
        if limit is not None and count > limit:
            raise ComplexTooLarge(limit, k)
        out_s.append(np.column_stack([s[rows], w]))
        out_v.append(np.maximum(v[rows], far[rows, w]))
    if not out_s:
        return np.empty((0, k + 1), dtype=np.intp), np.empty(0)
    return np.concatenate(out_s), np.concatenate(out_v)


def rips_complex(D, maxdim, thresh=np.inf, limit=MAX_SIMPLICES):
    """Simplices of dimension 0..maxdim+1 in filtration order (value, then lexicographic).

    Returns a list of ``(simplices (m_k, k+1) int, values (m_k,))``. Raises
    :class:`ComplexTooLarge` when dimension ``maxdim + 1`` would exceed ``limit``.
    """
    n = len(D)
    top = maxdim + 1
    if limit is not None and not np.isfinite(thresh) and math.comb(n, top + 1) > limit:
        raise ComplexTooLarge(limit, top)
    S, v = np.arange(n, dtype=np.intp)[:, None], np.zeros(n)
    levels = [(S, v)]
    for k in range(1, top + 1):
        S, v = _extend(S, v, D, thresh, limit if k == top else None)
        order = np.argsort(v, kind="stable")                   # S is lexicographic already
        S, v = S[order], v[order]
        levels.append((S, v))
    return levels


def _keys(S, n):
    """Integer key of each sorted simplex (base-n digits)."""
    return (S * n ** np.arange(S.shape[1] - 1, -1, -1, dtype=np.int64)).sum(axis=1)


def _cofaces(faces, cofaces, n):
    """For each face, the positions of its cofaces and the incidence signs (CSR arrays)."""
    m, k1 = cofaces.shape
    if m == 0:
        return np.zeros(len(faces) + 1, dtype=np.intp), np.empty(0, np.intp), np.empty(0, np.int8)
    keys = _keys(faces, n)
    order = np.argsort(keys)
    sorted_keys = keys[order]
    face_idx, pos, sign = [], [], []
    for j in range(k1):
        facet = np.delete(cofaces, j, axis=1)
        face_idx.append(order[np.searchsorted(sorted_keys, _keys(facet, n))])
        pos.append(np.arange(m))
        sign.append(np.full(m, 1 if j % 2 == 0 else -1, dtype=np.int8))
    face_idx, pos, sign = map(np.concatenate, (face_idx, pos, sign))
    by = np.lexsort((pos, face_idx))
    indptr = np.searchsorted(face_idx[by], np.arange(len(faces) + 1))
    return indptr, pos[by], sign[by]


def _negative_edges(edges, n):
    """Edges (in filtration order) that merge two components: the H0 deaths."""
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    neg = np.zeros(len(edges), dtype=bool)
    for e, (a, b) in enumerate(edges.tolist()):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
            neg[e] = True
    return neg


def _reduce_z2(indptr, pos, skip):
    """Column reduction over Z/2; columns are faces in reverse filtration order."""
    pivots, pairs, essential = {}, [], []
    for c in range(len(indptr) - 2, -1, -1):
        if skip[c]:
            continue
        col = set(pos[indptr[c]:indptr[c + 1]].tolist())
        while col:
            low = min(col)
            other = pivots.get(low)
            if other is None:
                pivots[low] = col
                pairs.append((c, low))
                break
            col ^= other
        else:
            essential.append(c)
    return pairs, essential


def _reduce_zp(indptr, pos, sign, skip, p):
    """Column reduction over Z/p with dict columns."""
    pivots, pairs, essential = {}, [], []
    for c in range(len(indptr) - 2, -1, -1):
        if skip[c]:
            continue
        sl = slice(indptr[c], indptr[c + 1])
        col = {q: s % p for q, s in zip(pos[sl].tolist(), sign[sl].tolist())}
        while col:
            low = min(col)
            other = pivots.get(low)
            if other is None:
                inv = pow(col[low], -1, p)
                pivots[low] = {q: (a * inv) % p for q, a in col.items()}  # pivot entry 1
                pairs.append((c, low))
                break
            f = col[low]
            for q, a in other.items():
                b = (col.get(q, 0) - f * a) % p
                if b:
                    col[q] = b
                else:
                    col.pop(q, None)
        else:
            essential.append(c)
    return pairs, essential


def rips_persistence(D, maxdim, thresh=np.inf, coeff=2, limit=MAX_SIMPLICES):
    """Exact Rips persistence diagrams of dimensions 1..maxdim (dimension 0: use the MST).

    Parameters
    ----------
    D : ndarray of shape (n, n), symmetric, zero diagonal
    maxdim : int >= 1
    thresh : float
        Simplices of diameter ``> thresh`` are left out; classes alive there die at inf.
    coeff : int, prime
    limit : int or None
        Refuse (``ComplexTooLarge``) past this many (maxdim+1)-simplices.

    Returns
    -------
    diagrams : list of maxdim arrays (m_k, 2), dimensions 1..maxdim, zero-length pairs
        dropped.
    """
    n = len(D)
    levels = rips_complex(D, maxdim, thresh, limit)
    skip = np.zeros(len(levels[1][0]), dtype=bool)
    skip[_negative_edges(levels[1][0], n)] = True
    diagrams = []
    for k in range(1, maxdim + 1):
        (faces, fv), (cof, cv) = levels[k], levels[k + 1]
        indptr, pos, sign = _cofaces(faces, cof, n)
        if coeff == 2:
            pairs, essential = _reduce_z2(indptr, pos, skip)
        else:
            pairs, essential = _reduce_zp(indptr, pos, sign, skip, coeff)
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        births, deaths = fv[pairs[:, 0]], cv[pairs[:, 1]]
        keep = deaths > births
        dgm = np.concatenate([np.column_stack([births[keep], deaths[keep]]),
                              np.column_stack([fv[essential], np.full(len(essential), np.inf)])])
        diagrams.append(dgm)
        skip = np.zeros(len(cof), dtype=bool)
        skip[pairs[:, 1]] = True
    return diagrams
