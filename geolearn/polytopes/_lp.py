"""Linear programs on one polyhedron ``{x : A x <= c}`` (float64, HiGHS by default).

Rows are normalised to unit length first, so slacks are Euclidean distances
and the tolerance ``tol`` is a distance.
"""

import contextlib
import os
import sys
import threading

import numpy as np
from scipy.optimize import linprog

from .._utils import check_choice

_SOLVERS = ("auto", "highs", "highspy", "cvxpy")
_ZERO_ROW = 1e-14


def check_solver(lp_solver):
    check_choice(lp_solver, "lp_solver", _SOLVERS)
    if lp_solver == "auto":
        return "highspy" if _highspy() is not None else "highs"
    if lp_solver == "highspy" and _highspy() is None:
        raise ValueError("lp_solver='highspy' needs the highspy package: pip install highspy "
                         "(or use lp_solver='highs').")
    return lp_solver


def _highspy():
    try:
        import highspy
    except ImportError:
        return None
    return highspy


_local = threading.local()
_stdout_lock = threading.Lock()


@contextlib.contextmanager
def _silent_stdout():
    """Send the process's C-level stdout to devnull: HiGHS prints its banner when a
    ``Highs`` object is built, before ``output_flag`` can be turned off."""
    with _stdout_lock:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _new_highs(highspy):
    with _silent_stdout():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    # HiGHS' parallel simplex makes the outcome of hard LPs vary from run to run
    h.setOptionValue("parallel", "off")
    return h


def _solve_highspy(cost, A_ub, b_ub, A_eq, b_eq, bounds, what):
    """The same LP through HiGHS' own API: no scipy wrapper overhead (~3x faster on small LPs)."""
    highspy = _highspy()
    inf = highspy.kHighsInf
    h = getattr(_local, "highs", None)
    if h is None:
        h = _local.highs = _new_highs(highspy)
    h.clearModel()
    n = len(cost)
    M = np.vstack([A_ub, A_eq]) if A_eq is not None else np.asarray(A_ub).reshape(-1, n)
    lower = np.concatenate([np.full(len(b_ub), -inf), [] if A_eq is None else b_eq])
    upper = np.concatenate([b_ub, [] if A_eq is None else b_eq])
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, len(M)
    lp.col_cost_ = np.asarray(cost, float)
    lp.col_lower_ = np.array([-inf if lo is None else lo for lo, _ in bounds], float)
    lp.col_upper_ = np.array([inf if hi is None else hi for _, hi in bounds], float)
    lp.row_lower_, lp.row_upper_ = lower.astype(float), upper.astype(float)
    k = len(M)  # the dense matrix, column-wise
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.arange(0, k * n + 1, k, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(k, dtype=np.int32), n)
    lp.a_matrix_.value_ = np.ascontiguousarray(M.T, dtype=float).ravel()
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    known = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible,
             highspy.HighsModelStatus.kUnbounded)
    # presolve could not tell unbounded from infeasible, or the simplex stalled on a badly
    # scaled region far from the origin ("Unknown"): retry without presolve, then by IPM
    for option, value, default in (("presolve", "off", "choose"), ("solver", "ipm", "choose")):
        if status in known:
            break
        h.setOptionValue(option, value)
        h.clearSolver()
        h.run()
        status = h.getModelStatus()
        h.setOptionValue(option, default)
    if status == highspy.HighsModelStatus.kOptimal:
        return "optimal", np.array(h.getSolution().col_value)
    if status == highspy.HighsModelStatus.kInfeasible:
        return "infeasible", None
    if status == highspy.HighsModelStatus.kUnbounded:
        return "unbounded", None
    # HiGHS could not decide even so: an interior-point conic solver (Clarabel, through
    # cvxpy) settles the badly scaled LPs of regions far from the origin
    return _solve_cvxpy(cost, A_ub, b_ub, A_eq, b_eq, bounds,
                        f"{what} (HiGHS returned {h.modelStatusToString(status)})")


def solve_lp(cost, A_ub, b_ub, *, A_eq=None, b_eq=None, bounds=None, solver="highs", what="LP"):
    """Minimise ``cost @ x`` subject to ``A_ub x <= b_ub``, ``A_eq x = b_eq`` and ``bounds``.

    Returns ``(status, x)`` with status ``'optimal'``, ``'unbounded'`` or
    ``'infeasible'``; any other solver outcome raises ``RuntimeError`` naming ``what``.
    """
    n = len(cost)
    bounds = [(None, None)] * n if bounds is None else bounds
    if solver == "cvxpy":
        return _solve_cvxpy(cost, A_ub, b_ub, A_eq, b_eq, bounds, what)
    if solver == "highspy":
        return _solve_highspy(cost, A_ub, b_ub, A_eq, b_eq, bounds, what)
    for method in ("highs", "highs-ipm"):  # IPM when the simplex hits numerical trouble
        res = linprog(cost, A_ub=A_ub if len(b_ub) else None, b_ub=b_ub if len(b_ub) else None,
                      A_eq=A_eq, b_eq=b_eq, bounds=bounds, method=method)
        if res.status != 4:
            break
    if res.status == 0:
        return "optimal", res.x
    if res.status == 2:
        return "infeasible", None
    if res.status == 3:
        return "unbounded", None
    raise RuntimeError(f"{what}: HiGHS returned status {res.status} ({res.message}).")


def _solve_cvxpy(cost, A_ub, b_ub, A_eq, b_eq, bounds, what):
    import cvxpy as cp

    x = cp.Variable(len(cost))
    cons = [A_ub @ x <= b_ub] if len(b_ub) else []
    if A_eq is not None:
        cons.append(A_eq @ x == b_eq)
    for j, (lo, hi) in enumerate(bounds):
        if lo is not None:
            cons.append(x[j] >= lo)
        if hi is not None:
            cons.append(x[j] <= hi)
    prob = cp.Problem(cp.Minimize(cost @ x), cons)
    prob.solve()
    if prob.status == cp.OPTIMAL:
        return "optimal", np.asarray(x.value)
    if prob.status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        return "unbounded", None
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return "infeasible", None
    raise RuntimeError(f"{what}: cvxpy returned status {prob.status!r}.")


def stack_rows(A, c, lo=None, hi=None):
    """Normalised rows of ``{A x <= c} cap box`` and the owner of each row.

    Owners are ``0..h-1`` for the rows of ``A`` and ``h + j`` (``x_j <= hi_j``)
    or ``h + m + j`` (``-x_j <= -lo_j``) for box rows. Zero rows of ``A`` are
    dropped (they hold everywhere when ``c_k >= 0``).

    Returns
    -------
    An, cn, owner, empty : the rows, their owners, and whether a violated zero
        row makes the set empty.
    """
    h, m = A.shape
    norms = np.linalg.norm(A, axis=1)
    keep = norms >= _ZERO_ROW
    empty = bool(np.any(c[~keep] < 0))
    An, cn, owner = A[keep] / norms[keep, None], c[keep] / norms[keep], np.flatnonzero(keep)
    if lo is not None:
        eye = np.eye(m)
        An = np.vstack([An, eye, -eye])
        cn = np.concatenate([cn, hi, -lo])
        owner = np.concatenate([owner, h + np.arange(2 * m)])
    return An, cn, owner, empty


def chebyshev_lp(An, cn, *, r_max=None, solver="highs", what="Chebyshev LP"):
    """Largest ball ``B(x_c, r)`` inside ``{An x <= cn}`` (unit rows; paper 1, eqs. 7-8).

    Returns ``(center, radius)``: ``radius = inf`` when the LP is unbounded (the
    centre is then the one found with ``r <= 1``); ``radius <= 0`` means the
    set has an empty interior.
    """
    m = An.shape[1]
    if len(cn) == 0:
        return np.zeros(m), np.inf
    cost = np.zeros(m + 1)
    cost[0] = -1.0
    M = np.hstack([np.ones((len(cn), 1)), An])
    bounds = [(None, r_max)] + [(None, None)] * m
    status, sol = solve_lp(cost, M, cn, bounds=bounds, solver=solver, what=what)
    if status == "unbounded":
        center, _ = chebyshev_lp(An, cn, r_max=1.0, solver=solver, what=what)
        return center, np.inf
    if status == "infeasible":  # cannot happen with a free radius; kept for exactness
        raise RuntimeError(f"{what}: infeasible.")
    return sol[1:], float(sol[0])


def _max_row(An, cn, i, others, solver, what):
    """``max a_i x`` over the rows ``others`` plus ``a_i x <= c_i + 1`` (bounded)."""
    rows = np.append(others, i)
    b = cn[rows].copy()
    b[-1] += 1.0
    status, x = solve_lp(-An[i], An[rows], b, solver=solver, what=what)
    if status != "optimal":
        raise RuntimeError(f"{what}: redundancy LP for row {i} is {status}; the region is empty.")
    return x, float(An[i] @ x)


def _dedupe(An, cn):
    """Indices of the first occurrence of each repeated normalised row (to 1e-12)."""
    _, first = np.unique(np.round(np.column_stack([An, cn]), 12), axis=0, return_index=True)
    return np.sort(first)


def facets_lp(An, cn, *, tol=1e-7, solver="highs", what="facet LP"):
    """Non-redundant rows by the paper's scheme: one LP per row, removing redundant rows as found.

    Returns the indices of the facet rows (paper 1, LP 6).
    """
    rows = _dedupe(An, cn)
    active = np.ones(len(An), bool)
    active[np.setdiff1d(np.arange(len(An)), rows)] = False
    for i in rows:
        active[i] = False
        _, value = _max_row(An, cn, i, np.flatnonzero(active), solver, what)
        active[i] = value > cn[i] + tol
    return np.flatnonzero(active)


def _ray_hits(An, cn, candidates, interior, directions):
    """Rows hit first (and alone) by rays from ``interior``: facets, with a point on each."""
    slack = cn[candidates] - An[candidates] @ interior
    speed = An[candidates] @ directions.T
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(speed > 0, slack[:, None] / speed, np.inf)
    first = t.min(axis=0)
    unique = np.isfinite(first) & (np.sum(t <= first * (1 + 1e-9), axis=0) == 1)
    rows = candidates[np.argmin(t, axis=0)[unique]]
    points = interior + first[unique, None] * directions[unique]
    return dict(zip(rows.tolist(), points))


def facets_clarkson(An, cn, interior, *, box=None, tol=1e-7, solver="highs", n_rays=None,
                    random_state=0, return_points=False, what="facet LP"):
    """Non-redundant rows by Clarkson's output-sensitive algorithm.

    A ray pre-pass first marks the rows hit first by rays from the interior
    point (along every row normal and ``n_rays`` random directions) as facets,
    without LPs. Then each LP only holds the facets found so far; when row
    ``i`` is not yet proven redundant, a ray from the interior point to the
    LP's maximiser exits the polyhedron through a facet, which joins the set.
    Ties along a ray (the ray meets a lower-dimensional face) fall back to the
    full test. The random directions come from ``random_state`` (fixed by
    default), so a region's facets never vary from run to run.

    Parameters
    ----------
    interior : ndarray of shape (m,)
        A point with strictly positive slack on every row.
    box : (lo, hi), optional
        When the last ``2 m`` rows are this box (as :func:`stack_rows` puts
        them), rows that hold on the whole box are redundant without an LP.
    n_rays : int, optional
        Random rays of the pre-pass (default ``2 * len(An)``).
    return_points : bool, default=False
        Also return ``{row: point}``, a point on the facet of each row where a
        ray left the polyhedron (most facets get one).

    Returns
    -------
    rows : ndarray of int
    points : dict, only if ``return_points``
    """
    candidates = _dedupe(An, cn)
    slack = cn - An @ interior
    facet = np.zeros(len(An), bool)
    decided = np.zeros(len(An), bool)
    if box is not None:
        decided[:len(An) - 2 * len(box[0])] = _inside_box(An, cn, box, tol)
    rng = np.random.default_rng(random_state)
    directions = np.vstack([An[candidates],
                            rng.standard_normal((2 * len(An) if n_rays is None else n_rays,
                                                 An.shape[1]))])
    points = _ray_hits(An, cn, candidates, interior, directions)
    hit = list(points)
    facet[hit] = decided[hit] = True
    if box is not None and 4 * len(box[0]) < np.count_nonzero(~decided[candidates]):
        # the bounding box of {facets found so far} cap box (2m small LPs) proves many rows
        # redundant at once
        bbox = _facets_bbox(An, cn, facet, box, solver, what)
        decided[:len(An) - 2 * len(box[0])] |= _inside_box(An, cn, bbox, tol)
    for i in candidates:
        _clarkson_row(An, cn, i, candidates, slack, interior, facet, decided, points,
                      solver=solver, tol=tol, what=what)
    rows = np.flatnonzero(facet)
    return (rows, points) if return_points else rows


def _inside_box(An, cn, box, tol):
    """Which rows before the last ``2 m`` (the box rows) hold on the whole box ``(lo, hi)``."""
    lo, hi = box
    k = len(An) - 2 * len(lo)
    box_max = np.maximum(An[:k] * lo, An[:k] * hi).sum(axis=1)
    return box_max <= cn[:k] + tol


def _facets_bbox(An, cn, facet, box, solver, what):
    """The bounding box ``(2, m)`` of ``{facet rows found so far} cap box`` (2 m LPs)."""
    lo, hi = box
    known = np.union1d(np.flatnonzero(facet), np.arange(len(An) - 2 * len(lo), len(An)))
    bbox = np.empty((2, len(lo)))
    for j in range(len(lo)):
        for side, sign in ((0, 1.0), (1, -1.0)):
            status, x = solve_lp(sign * np.eye(len(lo))[j], An[known], cn[known],
                                 solver=solver, what=what)
            bbox[side, j] = x[j] if status == "optimal" else (lo[j], hi[j])[side]
    return bbox


def _clarkson_row(An, cn, i, candidates, slack, interior, facet, decided, points, *, solver,
                  tol, what):
    """Decide row ``i`` (updating ``facet``, ``decided`` and ``points`` in place): LPs over the
    facets found so far, each maximiser's ray adding the facet it leaves through."""
    while not decided[i]:
        x, value = _max_row(An, cn, i, np.flatnonzero(facet), solver, what)
        if value <= cn[i] + tol:
            decided[i] = True
            return
        speed = An[candidates] @ (x - interior)
        t = np.full(len(candidates), np.inf)
        ahead = speed > 0
        t[ahead] = slack[candidates][ahead] / speed[ahead]
        hits = candidates[t <= t.min() * (1 + 1e-9)]
        if len(hits) > 1:  # the ray meets a lower-dimensional face
            # the full test against every row not already removed (iterative removal keeps
            # one of two near-identical rows)
            removed = decided & ~facet
            removed[i] = True
            others = candidates[~removed[candidates]]
            _, value = _max_row(An, cn, i, others, solver, what)
            facet[i] = value > cn[i] + tol
            decided[i] = True
            return
        facet[hits[0]] = decided[hits[0]] = True
        points.setdefault(int(hits[0]), interior + t.min() * (x - interior))


def is_bounded(An, solver="highs", what="boundedness LP"):
    """Whether a non-empty ``{An x <= cn}`` is bounded (Stiemke: ``rank A = m`` and
    ``A^T lambda = 0`` for some ``lambda >= 1``)."""
    k, m = An.shape
    if k == 0 or np.linalg.matrix_rank(An) < m:
        return False
    status, _ = solve_lp(np.zeros(k), np.zeros((0, k)), np.zeros(0), A_eq=An.T, b_eq=np.zeros(m),
                         bounds=[(1.0, None)] * k, solver=solver, what=what)
    return status == "optimal"


def facet_radius(An, cn, i, x):
    """Radius of the largest ball around ``x`` (on facet ``i``) inside the facet, in its plane."""
    others = np.delete(np.arange(len(cn)), i)
    a = An[i]
    proj = np.linalg.norm(An[others] - np.outer(An[others] @ a, a), axis=1)
    slack = cn[others] - An[others] @ x
    keep = proj > 1e-12  # rows parallel to the facet do not bound it inside its plane
    return float(np.min(slack[keep] / proj[keep], initial=np.inf))


def facet_center(An, cn, i, *, r_max, solver="highs", what="facet LP"):
    """Chebyshev centre of facet ``i`` inside its hyperplane (ball radius measured in it)."""
    others = np.delete(np.arange(len(cn)), i)
    a = An[i]
    proj = np.linalg.norm(An[others] - np.outer(An[others] @ a, a), axis=1)
    m = An.shape[1]
    cost = np.zeros(m + 1)
    cost[0] = -1.0
    M = np.hstack([proj[:, None], An[others]])
    status, sol = solve_lp(cost, M, cn[others], A_eq=np.append(0.0, a)[None], b_eq=cn[i:i + 1],
                           bounds=[(None, r_max)] + [(None, None)] * m, solver=solver, what=what)
    if status != "optimal":
        raise RuntimeError(f"{what}: facet centre LP for row {i} is {status}.")
    return sol[1:], float(sol[0])


def clip_polygon(V, a, c):
    """The part ``{x : a x <= c}`` of a convex polygon with ordered vertices ``V`` (k, 2)."""
    if len(V) == 0:
        return V
    d = V @ a - c
    inside = d <= 0
    if inside.all():
        return V
    if not inside.any():
        return V[:0]
    out = []
    for k in range(len(V)):
        j = (k + 1) % len(V)
        if inside[k]:
            out.append(V[k])
        if inside[k] != inside[j]:
            t = d[k] / (d[k] - d[j])
            out.append(V[k] + t * (V[j] - V[k]))
    return np.asarray(out)


def polygon_area(V):
    """Area of a polygon with ordered vertices (shoelace)."""
    if len(V) < 3:
        return 0.0
    x, y = V[:, 0], V[:, 1]
    return 0.5 * abs(float(x @ np.roll(y, -1) - y @ np.roll(x, -1)))
