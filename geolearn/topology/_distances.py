"""Wasserstein and bottleneck distances between persistence diagrams.

Exact matchings of our own, or GUDHI's hera (the ``tda`` extra) for large diagrams.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from .._utils import check_choice, warn_user
from .._utils.validation import check_diagram
from ..exceptions import GeolearnWarning

_WARN_SIZE = 5000
#: Finite points (both diagrams together) beyond which ``backend="auto"`` uses hera's
#: Wasserstein auction where GUDHI is installed: at 1,000 points a diagram it takes 0.21 s
#: against the exact assignment's 1.3 s (p=1), 4 s against 20 s at 2,000 (p=2).
_GUDHI_SIZE = 2000
#: hera's relative error bound: its Wasserstein distance is within a factor 1 + delta of
#: the exact one (its bottleneck distance is exact, delta 0).
_HERA_DELTA = 1e-6


def _hera():
    """GUDHI's hera module, or None when GUDHI is not installed."""
    try:
        from gudhi import hera
    except ImportError:
        return None
    return hera


def _backend(backend, n_points, p, q):
    """``"exact"`` or ``"gudhi"``: the backend that computes a distance of these diagrams."""
    check_choice(backend, "backend", ("auto", "exact", "gudhi"))
    if backend == "exact":
        return backend
    bottleneck_off_linf = np.isinf(p) and not np.isinf(q)
    if backend == "gudhi":
        if _hera() is None:
            raise ImportError("backend='gudhi' needs GUDHI: pip install 'geolearn[tda]' (or "
                              "gudhi); or use backend='exact'.")
        if bottleneck_off_linf:
            raise ValueError("backend='gudhi' computes the bottleneck distance (p=inf) with "
                             f"the L_inf ground norm only; got internal_p={q!r}: use "
                             "internal_p=np.inf or backend='exact'.")
        return backend
    # auto: hera's exact bottleneck is slower than ours (0.51 s against 0.21 s at 1,000
    # points a diagram), its Wasserstein auction faster on large diagrams
    if np.isfinite(p) and n_points > _GUDHI_SIZE and _hera() is not None:
        return "gudhi"
    return "exact"


def _hera_cost(A, B, p, q):
    """hera's counterpart of :func:`_finite_cost` (diagonal points, at no cost, left out)."""
    hera = _hera()
    A, B = A[A[:, 1] > A[:, 0]], B[B[:, 1] > B[:, 0]]
    if np.isinf(p):
        return float(hera.bottleneck_distance(A, B, 0.0))
    return float(hera.wasserstein_distance(A, B, order=p, internal_p=q, delta=_HERA_DELTA)) ** p


def _check_order(value, name):
    if value is None or np.isnan(value) or value < 1:
        raise ValueError(f"{name} must be a number >= 1 (np.inf allowed); got {value!r}.")
    return float(value)


def _to_diagonal(D, q):
    """L_q distance of each point to the diagonal: (d - b) / 2 * 2^(1/q)."""
    half = (D[:, 1] - D[:, 0]) / 2
    return half if np.isinf(q) else half * 2.0 ** (1.0 / q)


def _pairwise(A, B, q):
    diff = np.abs(A[:, None, :] - B[None, :, :])
    return diff.max(axis=2) if np.isinf(q) else (diff**q).sum(axis=2) ** (1.0 / q)


def _split(D):
    inf = np.isinf(D[:, 1])
    return D[~inf], np.sort(D[inf, 0])


def _covers(G, rows):
    """Whether the bipartite graph ``G`` (bool, rows x columns) matches every row of ``rows``."""
    if not rows.any():
        return True
    matched = maximum_bipartite_matching(csr_matrix(G[rows]), perm_type="column")
    return bool((matched >= 0).all())


def _bottleneck_value(A, B, q):
    """Smallest t admitting a matching of cost <= t (binary search over the candidate costs).

    At threshold t the points farther than t from the diagonal must be matched across.
    By the Mendelsohn-Dulmage theorem a matching covering both forced sets exists iff
    one covers A's and one covers B's, each a maximum bipartite matching (Hopcroft-Karp).
    """
    da, db = _to_diagonal(A, q), _to_diagonal(B, q)
    if len(A) == 0 or len(B) == 0:
        return float(np.r_[da, db].max())
    C = _pairwise(A, B, q)
    values = np.unique(np.r_[C.ravel(), da, db])
    lo, hi = 0, len(values) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        t = values[mid]
        G = C <= t
        if _covers(G, da > t) and _covers(G.T, db > t):
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


def _finite_cost(A, B, p, q):
    """Optimal matching of the finite points: its sum of costs^p, or bottleneck if p = inf.

    A rectangular assignment: each point a of the smaller diagram (rows) goes to a point
    b of the other (cost ``c(a, b)^p - d(b)^p``) or to a diagonal copy of its own
    (``d(a)^p``; the other copies are forbidden), and every b pays ``d(b)^p`` up front, so
    an unmatched b costs ``d(b)^p``. The same optimum as the augmented (m1 + m2)-square
    problem without its constant blocks, whose ties make the assignment about 10x slower
    (2,600 H0 points: 5.7 s against 0.4 s). The sum is taken over the original costs of
    the matching found, so equal diagrams give exactly 0.
    """
    if len(A) + len(B) == 0:
        return 0.0
    if np.isinf(p):
        return _bottleneck_value(A, B, q)
    A, B = (A, B) if len(A) <= len(B) else (B, A)
    m1, m2 = len(A), len(B)
    da, db = _to_diagonal(A, q) ** p, _to_diagonal(B, q) ** p
    pair = _pairwise(A, B, q) ** p
    C = np.full((m1, m2 + m1), np.inf)
    C[:, :m2] = pair - db
    C[np.arange(m1), m2 + np.arange(m1)] = da
    rows, cols = linear_sum_assignment(C)
    matched = cols < m2
    free_b = np.ones(m2, dtype=bool)
    free_b[cols[matched]] = False
    return float(pair[rows[matched], cols[matched]].sum() + da[rows[~matched]].sum()
                 + db[free_b].sum())


def diagram_wasserstein(D1, D2, p=2, internal_p=np.inf, *, backend="auto"):
    """p-Wasserstein distance W_{p,q} between two persistence diagrams.

    ``W_{p,q}(D1, D2) = (inf_M sum_x ||x - M(x)||_q^p)^(1/p)`` over bijections ``M``
    between ``D1`` plus the diagonal and ``D2`` plus the diagonal (each with infinite
    multiplicity), solved exactly by ``scipy.optimize.linear_sum_assignment`` (each point
    of the smaller diagram to a point of the other or to the diagonal: the augmented
    ``(m1 + m2)``-square problem without its constant blocks). With ``internal_p = inf``
    the cost of sending ``(b, d)`` to the diagonal is ``(d - b) / 2``. ``p = inf`` gives
    the bottleneck distance.

    Essential points (death ``inf``) of the two diagrams are matched among themselves
    by sorted birth (cost ``|b1 - b2|^p``) and left out of the finite matching; when the
    diagrams have different numbers of them the distance is ``inf`` (never a finite
    number that ignores them).

    Parameters
    ----------
    D1, D2 : array-like of shape (m1, 2) and (m2, 2)
        (birth, death) rows, ``birth <= death``; one homology dimension each.
    p : float, default=2
        Order, ``>= 1`` or ``np.inf``.
    internal_p : float, default=np.inf
        The ground norm L_q on the plane, ``>= 1``.
    backend : {"auto", "exact", "gudhi"}, default="auto"
        How the finite points are matched. ``"exact"``: the assignment above
        (``O((m1 + m2)^3)`` time, ``O((m1 + m2)^2)`` memory). ``"gudhi"``: GUDHI's
        hera (the ``tda`` extra): an auction within a relative error of 1e-6 for finite
        ``p``, hera's exact bottleneck for ``p = inf`` (``internal_p = inf`` only).
        ``"auto"``: hera for finite ``p`` beyond 2,000 finite points when GUDHI is
        installed (where its auction is the faster, ``benchmarks/RESULTS.md``), else
        the exact matching.

    Returns
    -------
    distance : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology import diagram_wasserstein
    >>> diagram_wasserstein([[0, 2]], np.empty((0, 2)))       # to the diagonal: (2 - 0) / 2
    1.0
    >>> diagram_wasserstein([[0, 2]], [[0, 3]], p=1)
    1.0
    >>> diagram_wasserstein([[0, np.inf]], [[1, 2]])
    inf
    """
    p = _check_order(p, "p")
    q = _check_order(internal_p, "internal_p")
    A, ea = _split(check_diagram(D1, "D1"))
    B, eb = _split(check_diagram(D2, "D2"))
    backend = _backend(backend, len(A) + len(B), p, q)
    if len(ea) != len(eb):
        return float("inf")
    if backend == "exact" and len(A) + len(B) > _WARN_SIZE:
        warn_user(f"diagram_wasserstein on {len(A) + len(B)} finite points: the exact "
                  "assignment costs O((m1 + m2)^3) time and O((m1 + m2)^2) memory; "
                  "backend='gudhi' (GUDHI's hera) is faster.", GeolearnWarning)
    # the costs are sums of |x|^p: where they would overflow, compute at unit scale (the
    # distance is homogeneous of degree 1)
    scale = max(np.abs(A).max(initial=0.0), np.abs(B).max(initial=0.0),
                np.abs(ea).max(initial=0.0), np.abs(eb).max(initial=0.0))
    n_terms = 2 * (len(A) + len(B) + len(ea))
    if np.isfinite(p) and scale > 0 and (
            p * np.log(2 * scale) + np.log(n_terms) > np.log(np.finfo(np.float64).max)):
        A, B, ea, eb = A / scale, B / scale, ea / scale, eb / scale
    else:
        scale = 1.0
    ess = np.abs(ea - eb)
    finite = (_finite_cost if backend == "exact" else _hera_cost)(A, B, p, q)
    if np.isinf(p):
        return float(max(finite, ess.max(initial=0.0)))
    return scale * float((finite + (ess**p).sum()) ** (1.0 / p))


def diagram_bottleneck(D1, D2, *, backend="auto"):
    """Bottleneck distance: the smallest largest L_inf displacement of a matching.

    The same matching problem as :func:`diagram_wasserstein` with ``p = inf``, solved
    exactly by a binary search over the candidate costs, each step two maximum bipartite
    matchings (Hopcroft-Karp, ``scipy.sparse.csgraph``) of the pairs within the threshold.
    Essential points are matched by sorted birth; different numbers of them give ``inf``.

    Parameters
    ----------
    D1, D2 : array-like of shape (m1, 2) and (m2, 2)
    backend : {"auto", "exact", "gudhi"}, default="auto"
        ``"gudhi"``: GUDHI's hera (exact too; the ``tda`` extra). ``"auto"`` is the
        exact matching here, which is faster than hera's at every size measured
        (``benchmarks/RESULTS.md``).

    Returns
    -------
    distance : float

    Examples
    --------
    >>> from geolearn.topology import diagram_bottleneck
    >>> diagram_bottleneck([[0, 2], [0, 10]], [[0, 3]])  # (0, 10) to the diagonal: 5
    5.0
    """
    return diagram_wasserstein(D1, D2, p=np.inf, internal_p=np.inf, backend=backend)
