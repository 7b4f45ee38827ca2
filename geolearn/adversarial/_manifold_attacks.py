"""Normal and in-manifold attacks: PGD restricted to N_x M, searches over M, grids over charts.

Perturbations of data lying near (not on) a learned manifold use the offset
convention ``x' = x + p' - pi(x)`` with ``p'`` on the manifold, so that
analytic manifolds (``pi(x) = x``) and learned ones share one code path.
"""

import numpy as np
import torch
from sklearn.neighbors import NearestNeighbors

from .._utils import (
    check_choice,
    check_squares_finite,
    iter_batches,
    row_seeds,
    to_numpy,
)
from ._pgd import (
    Classifier,
    attack_loss,
    check_attack_params,
    flat_inputs,
    label_indices,
    run_attack,
    wrong,
)

IN_METHODS = ("auto", "grid", "tangent_pgd", "project", "latent")
#: the most grid evaluations (model forward passes of single points) a call may ask for
MAX_GRID = 5e7
BISECTIONS = 15
LATENT_BISECTIONS = 20


def _check_budget(X_adv, X, rho, what):
    """Every returned perturbation must lie in its budget: a violation is a bug, never data."""
    n = np.linalg.norm(X_adv.astype(np.float64) - X, axis=1)
    if n.size and n.max() > rho * (1 + 1e-5) + 1e-6:
        raise RuntimeError(f"{what} left its budget {rho:g} (||x' - x|| = {n.max():.6g}).")


def has_chart(manifold):
    return bool(getattr(manifold, "has_chart", False)) and manifold.intrinsic_dim <= 2


def is_latent(manifold):
    return hasattr(manifold, "decode_tensor") and hasattr(manifold, "encode_tensor")


def normal_projection(T):
    """The hook ``v -> v - T (T^T v)`` of per-sample bases ``T`` ``(n, D, d)`` (a tensor)."""

    def project(v, rows):
        Tb = T[rows.to(T.device)]
        return v - torch.einsum("bij,bj->bi", Tb, torch.einsum("bij,bi->bj", Tb, v))

    return project


def tangent_projection(T):
    """The hook ``v -> T (T^T v)`` of per-sample bases ``T`` ``(n, D, d)`` (a tensor)."""

    def project(v, rows):
        Tb = T[rows.to(T.device)]
        return torch.einsum("bij,bj->bi", Tb, torch.einsum("bij,bi->bj", Tb, v))

    return project


def grid_step_default(epsilon, grid_step):
    return epsilon / 20 if grid_step is None else float(grid_step)


def disk_offsets(codim, radius, step):
    """Grid points of the closed ``codim``-disk of ``radius`` without 0, nearest first."""
    k = np.arange(1, int(np.floor(radius / step + 1e-9)) + 1) * step
    if codim == 1:
        s = np.concatenate([k, [radius]])
        pts = np.concatenate([s, -s])[:, None]
    else:
        a = np.concatenate([-k[::-1], [0.0], k])
        pts = np.stack(np.meshgrid(a, a), -1).reshape(-1, 2)
        r = np.linalg.norm(pts, axis=1)
        pts = pts[(r > 0) & (r <= radius * (1 + 1e-12))]
    pts = np.unique(pts, axis=0)
    return pts[np.argsort(np.linalg.norm(pts, axis=1), kind="stable")]


def normal_bases(T):
    """Orthonormal bases ``(n, D, D - d)`` of the normal spaces of tangent bases ``T``."""
    U = np.linalg.svd(T, full_matrices=True)[0]
    return U[:, :, T.shape[2]:]


def grid_offsets_attack(clf, X, t, offsets, batch_size):
    """First (nearest) ``x + offsets[i, k]`` the model gets wrong: ``offsets`` ``(n, P, D)``.

    Returns ``(X_adv float32, success)``; rows without a hit keep ``x``.
    """
    n, P, D = offsets.shape
    X_adv, ok = X.astype(np.float32), np.zeros(n, bool)
    rows = max(1, int(batch_size * 64 // max(P, 1)))
    with torch.no_grad(), clf.model.frozen(), clf.threads():
        for sl in iter_batches(n, rows):
            cand = X[sl, None, :] + offsets[sl]
            m = len(cand)
            tt = torch.as_tensor(np.repeat(t[sl], P), device=clf.device)
            bad = to_numpy(clf.wrong(clf.to_tensor(cand.reshape(m * P, D)), tt)).reshape(m, P)
            hit = bad.any(1)
            first = bad.argmax(1)
            X_adv[sl][hit] = cand[np.arange(m), first][hit]
            ok[sl] = hit
    return X_adv, ok


def normal_core(clf, X, t, T, *, epsilon, method, n_steps, step_size, n_restarts, loss,
                grid_step, batch_size, random_state, require_move=True):
    """Normal attack on validated rows with tangent bases ``T``; ``(X_adv, success)``."""
    D, d = T.shape[1], T.shape[2]
    if method == "grid":
        N = normal_bases(T)
        s = disk_offsets(D - d, epsilon, grid_step_default(epsilon, grid_step))
        X_adv, ok = grid_offsets_attack(clf, X, t, np.einsum("nij,pj->npi", N, s), batch_size)
    else:
        hook = normal_projection(torch.as_tensor(T, dtype=clf.model.dtype, device=clf.device))
        X_adv, ok = run_attack(clf, X, t, epsilon=epsilon, norm="l2", step_size=step_size,
                               n_steps=n_steps, n_restarts=n_restarts, loss=loss,
                               batch_size=batch_size, random_state=random_state,
                               stream="normal", projection=hook, open_ball=False,
                               require_move=require_move, ball_dim=D - d)
    if not require_move:  # a probe on the boundary is itself a sign change
        ok |= to_numpy(_wrong_np(clf, X, t, batch_size))
    _check_budget(X_adv, X, epsilon, "normal attack")
    # float32 rounding of x + delta leaves ~1e-7 |x| of tangential error
    delta = X_adv.astype(np.float64) - X.astype(np.float32)
    tang = np.linalg.norm(np.einsum("nij,ni->nj", T, delta), axis=1)
    slack = 1e-4 * np.linalg.norm(delta, axis=1) + 1e-6 * np.maximum(1, np.abs(X).max(1))
    if np.any(tang > slack):
        raise RuntimeError("normal attack: a perturbation left the normal space.")
    return X_adv, ok


def _wrong_np(clf, X, t, batch_size):
    out = np.empty(len(X), bool)
    with torch.no_grad(), clf.model.frozen(), clf.threads():
        for sl in iter_batches(len(X), batch_size * 8):
            out[sl] = to_numpy(clf.wrong(clf.to_tensor(X[sl]),
                                         torch.as_tensor(t[sl], device=clf.device)))
    return out


def predictions(clf, X, batch_size):
    """``argmax`` labels of flat rows."""
    out = np.empty(len(X), np.int64)
    with torch.no_grad(), clf.model.frozen(), clf.threads():
        for sl in iter_batches(len(X), batch_size * 8):
            out[sl] = to_numpy(clf.logits(clf.to_tensor(X[sl])).argmax(1))
    return out


class ChartGrid:
    """Chart grid of a manifold (d <= 2) covering ``X``'s in-manifold balls up to ``rho_max``.

    ``points`` ``(G, D)``; ``bad[g, c]`` whether grid point ``g`` is wrong for
    label ``c``; ``pred`` its labels; radius queries by a neighbour index.
    """

    def __init__(self, clf, manifold, X, rho_max, step, batch_size):
        axes = chart_axes(manifold, X, rho_max, step)
        self.size = int(np.prod([len(a) for a in axes]))
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))
        self.points = manifold.from_chart(grid)
        z = []
        with torch.no_grad(), clf.model.frozen(), clf.threads():
            for sl in iter_batches(len(grid), batch_size * 64):
                z.append(to_numpy(clf.logits(clf.to_tensor(self.points[sl]))))
        z = torch.as_tensor(np.concatenate(z))
        C = z.shape[1]
        self.bad = np.stack([to_numpy(wrong(z, torch.full((len(z),), c))) for c in range(C)], 1)
        self.pred = to_numpy(z.argmax(1))
        self.index = NearestNeighbors().fit(self.points)

    def neighbours(self, X, rho):
        return self.index.radius_neighbors(X, rho, sort_results=True)

    def attack(self, X, t, rho, std):
        """First (nearest) wrong grid point within ``rho`` of each row; x itself counts."""
        dist, idx = self.neighbours(X, rho)
        X_adv, ok = X.astype(np.float32), std.copy()
        for i, (nb, ti) in enumerate(zip(idx, t)):
            hits = nb[self.bad[nb, ti]]
            if not ok[i] and len(hits):
                X_adv[i], ok[i] = self.points[hits[0]], True
        return X_adv, ok


def chart_box(manifold, X, rho_max, step):
    """``(lo, hi, h)`` of the chart grid: ``chart_bounds``, infinite ones cut to the data +- rho.

    The chart step ``h`` is ``step`` divided by the manifold's scale (its
    radius, or 1 for flat charts), so grid neighbours are about ``step`` apart in R^D.
    """
    reach = manifold.reach
    h = step / (reach if reach is not None and np.isfinite(reach) else 1.0)
    U = manifold.chart(X)
    box = np.array(manifold.chart_bounds, dtype=np.float64)
    # unbounded coordinates: a fixed lattice of multiples of h, so that the grid points
    # near a row do not depend on the other rows
    lo = np.where(np.isfinite(box[:, 0]), box[:, 0], h * (np.floor((U.min(0) - rho_max) / h) - 1))
    hi = np.where(np.isfinite(box[:, 1]), box[:, 1], h * (np.ceil((U.max(0) + rho_max) / h) + 1))
    return lo, hi, h


def chart_grid_size(manifold, X, rho_max, step):
    lo, hi, h = chart_box(manifold, X, rho_max, step)
    return float(np.prod(np.ceil((hi - lo) / h) + 1))


def chart_axes(manifold, X, rho_max, step):
    """Grid axes of the chart box (see :func:`chart_box`), refused beyond the grid limit."""
    check_grid_size(chart_grid_size(manifold, X, rho_max, step))
    lo, hi, h = chart_box(manifold, X, rho_max, step)
    return [np.append(a + h * np.arange(np.ceil((b - a) / h - 1e-9)), b) for a, b in zip(lo, hi)]


def disk_size(dim, radius, step):
    """The number of points of :func:`disk_offsets` (an upper bound, without building them)."""
    K = np.floor(radius / step + 1e-9)
    # lattice points in a disk of radius K (in steps): fewer than pi (K + 1)^2
    return float(2 * K + 2 if dim == 1 else np.pi * (K + 1) ** 2)


def check_grid_size(count):
    if count > MAX_GRID:
        raise ValueError(f"the grid needs about {count:.3g} evaluations, more than "
                         f"{MAX_GRID:.0e}: "
                         "raise grid_step, or use attack='pgd'.")


def tangent_pgd(clf, manifold, X, t, *, rho, n_steps, step_size, loss, batch_size, std,
                path_steps=0):
    """In-manifold PGD along the tangent planes with budget bisection (offset convention).

    Returns ``(X_adv, success, path)``; ``path`` ``(path_steps, n, D)`` holds
    evenly spaced iterates (for NNR probes), or None.
    """
    P0 = manifold.project(X)
    X_adv, ok = X.astype(np.float32), std.copy()
    keep = (np.unique(np.linspace(1, n_steps, path_steps).round().astype(int))
            if path_steps else np.array([], int))
    path = np.repeat(X[None].astype(np.float32), len(keep), 0) if path_steps else None
    with clf.model.frozen(), clf.threads():
        for sl in iter_batches(len(X), batch_size):
            rows = np.arange(sl.start, sl.stop)[~ok[sl]]
            x, p0 = X[rows], P0[rows]
            p = p0.copy()
            for step in range(1, n_steps + 1):
                if len(rows) == 0:
                    break
                xa = x + p - p0
                g, bad = clf.grad_wrong(clf.to_tensor(xa), torch.as_tensor(t[rows],
                                                                           device=clf.device),
                                        loss=loss)
                g = to_numpy(g).astype(np.float64)
                T = manifold.tangent_basis(p)
                g = np.einsum("nij,nj->ni", T, np.einsum("nij,ni->nj", T, g))
                gn = np.linalg.norm(g, axis=1, keepdims=True)
                s = np.where(gn > 0, step_size * g / np.maximum(gn, 1e-300), 0.0)
                p = _bisect_step(manifold, p, s, p0, rho)
                xa = x + p - p0
                bad = to_numpy(clf.wrong(clf.to_tensor(xa), torch.as_tensor(
                    t[rows], device=clf.device)))
                if step in keep and path is not None:
                    path[np.searchsorted(keep, step), rows] = xa
                if bad.any():  # solved rows leave (their later path entries stay x)
                    X_adv[rows[bad]], ok[rows[bad]] = xa[bad], True
                    x, p0, p, rows = x[~bad], p0[~bad], p[~bad], rows[~bad]
    _check_budget(X_adv, X, rho, "in-manifold attack")
    return X_adv, ok, path


def _bisect_step(manifold, p, s, p0, rho):
    """``pi(p + tau s)`` for the largest ``tau`` in [0, 1] (bisection) within ``rho`` of ``p0``."""
    cand = manifold.project(p + s)
    over = np.linalg.norm(cand - p0, axis=1) > rho
    if over.any():
        lo, hi = np.zeros(over.sum()), np.ones(over.sum())
        for _ in range(BISECTIONS):
            mid = (lo + hi) / 2
            inside = np.linalg.norm(manifold.project(p[over] + mid[:, None] * s[over])
                                    - p0[over], axis=1) <= rho
            lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
        cand[over] = manifold.project(p[over] + lo[:, None] * s[over])
    # a non-idempotent projection (local PCA) may still leave the ball: then stay
    stay = np.linalg.norm(cand - p0, axis=1) > rho
    cand[stay] = p[stay]
    return cand


def project_attack(clf, manifold, X, t, *, rho, n_steps, step_size, n_restarts, loss,
                   batch_size, random_state, std):
    """The paper's synthetic method: ambient L2 PGD at ``rho``, projection, segment bisection."""
    A, _ = run_attack(clf, X, t, epsilon=rho, norm="l2", step_size=step_size, n_steps=n_steps,
                      n_restarts=n_restarts, loss=loss, batch_size=batch_size,
                      random_state=random_state, stream="project", open_ball=False)
    P0 = manifold.project(X)
    s = A.astype(np.float64) - X
    p = _bisect_step(manifold, P0, s, P0, rho)
    X_adv = X + p - P0
    bad = _wrong_np(clf, X_adv, t, batch_size)
    ok = std | bad
    out = np.where(bad[:, None], X_adv, X).astype(np.float32)
    _check_budget(out, X, rho, "in-manifold attack")
    return out, ok


def latent_attack(clf, manifold, X, t, *, rho, n_steps, step_size, loss, batch_size, std):
    """Latent PGD: ``x' = x + dec(z + u) - dec(z)``, steps ``eta / sigma_max(J_dec)``."""
    X_adv, ok = X.astype(np.float32), std.copy()
    J = manifold.decoder_jacobian(X)
    sigma = np.linalg.norm(J, ord=2, axis=(1, 2))
    with clf.model.frozen(), manifold.frozen(), clf.threads():
        for sl in iter_batches(len(X), batch_size):
            rows = np.arange(sl.start, sl.stop)[~ok[sl]]
            if len(rows) == 0:
                continue
            x = clf.to_tensor(X[rows])
            with torch.no_grad():
                z0 = manifold.encode_tensor(x)
                d0 = manifold.decode_tensor(z0)
            u = torch.zeros_like(z0)
            tt = torch.as_tensor(t[rows], device=clf.device)
            eta = torch.as_tensor(step_size / np.maximum(sigma[rows], 1e-12),
                                  dtype=z0.dtype, device=z0.device)[:, None]
            active = torch.ones(len(rows), dtype=torch.bool, device=z0.device)

            def offset(v, z0=z0, d0=d0, x=x):
                return x + (manifold.decode_tensor(z0 + v) - d0).to(x)

            for _ in range(n_steps):
                with torch.enable_grad():
                    v = u.detach().requires_grad_(True)
                    g = torch.autograd.grad(attack_loss(clf.logits(offset(v)), tt, loss), v)[0]
                gn = torch.linalg.vector_norm(g, dim=1, keepdim=True)
                u = u + (eta * g / gn.clamp_min(1e-30) * (gn > 0) * active[:, None]).detach()
                with torch.no_grad():
                    u = _bisect_latent(manifold, z0, d0, u, rho)
                    xa = offset(u)
                    bad = wrong(clf.logits(xa), tt) & active
                if bad.any():
                    hit = to_numpy(bad)
                    X_adv[rows[hit]], ok[rows[hit]] = to_numpy(xa)[hit], True
                    active &= ~bad
                if not active.any():
                    break
    _check_budget(X_adv, X, rho, "latent in-manifold attack")
    return X_adv, ok


def _bisect_latent(manifold, z0, d0, u, rho):
    """``tau u`` for the largest ``tau`` in [0, 1] with ``||dec(z0 + tau u) - dec(z0)|| <= rho``."""
    def dist(v):
        return torch.linalg.vector_norm(manifold.decode_tensor(z0 + v) - d0, dim=1)

    over = dist(u) > rho
    if over.any():
        lo, hi = torch.zeros(int(over.sum()), device=u.device), torch.ones(
            int(over.sum()), device=u.device)
        uo, zo, do = u[over], z0[over], d0[over]
        for _ in range(LATENT_BISECTIONS):
            mid = (lo + hi) / 2
            inside = torch.linalg.vector_norm(manifold.decode_tensor(zo + mid[:, None] * uo)
                                              - do, dim=1) <= rho
            lo, hi = torch.where(inside, mid, lo), torch.where(inside, hi, mid)
        u = u.clone()
        u[over] = lo[:, None] * uo
    return u


def resolve_in_method(method, manifold, n_grid=None):
    """The in-manifold method ``"auto"`` stands for (see :func:`in_manifold_attack`)."""
    check_choice(method, "method", IN_METHODS)
    if method == "grid" and not has_chart(manifold):
        raise ValueError("method='grid' needs a manifold with a chart and intrinsic_dim <= 2; "
                         f"got intrinsic_dim={manifold.intrinsic_dim}, has_chart="
                         f"{bool(getattr(manifold, 'has_chart', False))}.")
    if method == "latent" and not is_latent(manifold):
        raise ValueError("method='latent' needs a LatentManifold (encode_tensor/decode_tensor).")
    if method != "auto":
        return method
    if has_chart(manifold) and (n_grid is None or n_grid <= MAX_GRID):
        return "grid"
    return "latent" if is_latent(manifold) else "tangent_pgd"


def in_manifold_core(clf, manifold, X, t, std, *, rho, method, n_steps, step_size, n_restarts,
                     loss, grid_step, batch_size, random_state, grid=None, T=None):
    """In-manifold attack at budget ``rho`` on validated rows; ``(X_adv, success)``.

    ``method="plane"``: PGD in the tangent planes ``x + span(T_x)`` (a linearised
    manifold given by tangent bases ``T``).
    """
    if method == "plane":
        hook = tangent_projection(torch.as_tensor(T, dtype=clf.model.dtype, device=clf.device))
        A, hit = run_attack(clf, X, t, epsilon=rho, norm="l2", step_size=step_size,
                            n_steps=n_steps, n_restarts=n_restarts, loss=loss,
                            batch_size=batch_size, random_state=random_state, stream="plane",
                            projection=hook, open_ball=False, ball_dim=T.shape[2])
        _check_budget(A, X, rho, "tangent-plane attack")
        return A, std | hit  # the last iterate of unsolved rows: the NNR probes start there
    if method == "grid":
        grid = grid or ChartGrid(clf, manifold, X, rho, grid_step, batch_size)
        return grid.attack(X, t, rho, std)
    if method == "latent":
        return latent_attack(clf, manifold, X, t, rho=rho, n_steps=n_steps,
                             step_size=step_size, loss=loss, batch_size=batch_size, std=std)
    if method == "project":
        return project_attack(clf, manifold, X, t, rho=rho, n_steps=n_steps,
                              step_size=step_size, n_restarts=n_restarts, loss=loss,
                              batch_size=batch_size, random_state=random_state, std=std)
    return tangent_pgd(clf, manifold, X, t, rho=rho, n_steps=n_steps, step_size=step_size,
                       loss=loss, batch_size=batch_size, std=std)[:2]


def random_manifold_probes(manifold, X, radius, n_probes, random_state):
    """``n_probes`` random on-manifold points per row within ``radius`` (offset convention).

    Random unit tangent direction, length ``radius U^{1/d}``, projected and
    budget-bisected; ``(n_probes, n, D)``. Seeded per row.
    """
    n, D = X.shape
    P0 = manifold.project(X)
    T = manifold.tangent_basis(P0)
    d = T.shape[2]
    G, L = np.empty((n_probes, n, d)), np.empty((n_probes, n))
    for i, seed in enumerate(row_seeds(X, random_state, "nnr-probes")):
        rng = np.random.default_rng(seed)
        G[:, i], L[:, i] = rng.standard_normal((n_probes, d)), rng.uniform(size=n_probes)
    out = np.empty((n_probes, n, D))
    for k in range(n_probes):
        v = np.einsum("nij,nj->ni", T, G[k])
        v *= (radius * L[k] ** (1 / d) / np.maximum(np.linalg.norm(v, axis=1), 1e-300))[:, None]
        out[k] = X + _bisect_step(manifold, P0, v, P0, radius) - P0
    return out


def random_plane_probes(X, T, radius, n_probes, random_state):
    """``n_probes`` random points per row in its tangent plane within ``radius``, seeded per row."""
    n, D, d = T.shape
    out = np.empty((n_probes, n, D))
    for i, seed in enumerate(row_seeds(X, random_state, "nnr-plane-probes")):
        rng = np.random.default_rng(seed)
        G, L = rng.standard_normal((n_probes, d)), rng.uniform(size=n_probes)
        v = G @ T[i].T
        out[:, i] = X[i] + v * (radius * L ** (1 / d) / np.linalg.norm(v, axis=1))[:, None]
    return out


def _validated(model, X, y, image_shape, device, manifold=None):
    X, shape = flat_inputs(X, image_shape)
    clf = Classifier(model, X.shape[1], shape, device)
    t = label_indices(getattr(clf.model, "estimator", model), y, len(X), clf.n_classes)
    if manifold is not None and manifold.ambient_dim != X.shape[1]:
        raise ValueError(f"manifold.ambient_dim={manifold.ambient_dim} but X has "
                         f"{X.shape[1]} features (flattened).")
    if manifold is not None:  # projections onto the manifold take squared distances
        check_squares_finite(X)
    return X, clf, t


def normal_attack(model, X, y, *, epsilon, manifold=None, tangent_bases=None, method="pgd",
                  n_steps=40, step_size=None, n_restarts=1, loss="ce", grid_step=None,
                  image_shape=None, batch_size=512, device="auto", random_state=None):
    """Search the normal disk ``{x + v : v in N_x M, 0 < ||v|| <= eps}`` for a misclassification.

    PGD whose gradients and perturbations are projected onto each sample's
    normal space ``v - T (T^T v)`` before the L2 normalisation and ball
    projection (an exact projection: the disk is convex), or, with
    ``method="grid"`` and codimension ``D - d <= 2``, an enumeration of the disk
    on a grid of step ``grid_step``. Success needs a perturbation ``v != 0``.

    Parameters
    ----------
    model : torch.nn.Module, fitted skorch net or differentiable sklearn model
        As in :func:`pgd` ("grid" needs only predictions).
    X : array-like of shape (n, D) or (n, C, H, W)
    y : array-like of shape (n,)
    epsilon : float
        The budget (> 0).
    manifold : manifold object, optional
        Gives the tangent bases (``tangent_basis(X)``).
    tangent_bases : array-like of shape (n, D, d), optional
        Known orthonormal tangent bases instead of a manifold.
    method : {"pgd", "grid"}, default="pgd"
    n_steps, step_size, n_restarts, loss, batch_size, device, random_state
        As in :func:`pgd`.
    grid_step : float, optional
        Grid resolution; default ``epsilon / 20``.
    image_shape : tuple of int, optional
        ``(C, H, W)`` the model takes when ``X`` is flat.

    Returns
    -------
    X_adv : ndarray of float32, shape (n, D)
    success : ndarray of bool, shape (n,)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import normal_attack
    >>> from geolearn.manifold import AffineManifold
    >>> net = torch.nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[0.0, 1.0]]))  # the boundary is the line x2 = 0
    >>> line = AffineManifold([[1.0], [0.0]])                # normal direction: x2
    >>> X_adv, ok = normal_attack(net, [[0.0, 0.05], [0.0, 0.5]], [1, 1], epsilon=0.1,
    ...                           manifold=line)
    >>> ok.tolist(), float(X_adv[0, 0])
    ([True, False], 0.0)
    """
    step = check_attack_params(epsilon, "l2", n_steps, step_size, n_restarts, loss, batch_size)
    check_choice(method, "method", ("pgd", "grid"))
    X, clf, t = _validated(model, X, y, image_shape, device, manifold)
    if tangent_bases is None:
        if manifold is None:
            raise ValueError("normal_attack needs a manifold or tangent_bases.")
        tangent_bases = manifold.tangent_basis(X)
    T = check_tangent_bases(tangent_bases, len(X), X.shape[1])
    if method == "grid":
        check_codim(T)
        check_grid_size(len(X) * disk_size(T.shape[1] - T.shape[2], epsilon,
                                           grid_step_default(epsilon, grid_step)))
    else:
        clf.require_gradients("normal_attack")
    return normal_core(clf, X, t, T, epsilon=epsilon, method=method, n_steps=n_steps,
                       step_size=step, n_restarts=n_restarts, loss=loss, grid_step=grid_step,
                       batch_size=batch_size, random_state=random_state)


def check_codim(T):
    if T.shape[1] - T.shape[2] > 2:
        raise ValueError(f"the normal grid needs codimension D - d <= 2; got "
                         f"{T.shape[1] - T.shape[2]}: use method='pgd'.")


def check_tangent_bases(T, n, D, name="tangent_bases"):
    """``T`` checked (``max |T^T T - I| <= 1e-4``), then re-orthonormalised, float64 ``(n, D, d)``."""
    T = np.asarray(T, dtype=np.float64)
    if T.ndim != 3 or T.shape[:2] != (n, D):
        raise ValueError(f"{name} must have shape (n_samples={n}, D={D}, d); got {T.shape}.")
    if not np.isfinite(T).all():
        raise ValueError(f"{name} must be finite.")
    err = np.abs(np.einsum("nij,nik->njk", T, T) - np.eye(T.shape[2])).max() if T.size else 0.0
    if err > 1e-4:
        raise ValueError(f"{name} must have orthonormal columns (max |T^T T - I| = {err:.3g} > "
                         "1e-4); orthonormalise them (e.g. numpy.linalg.qr).")
    # float32 bases pass the check with errors up to 1e-4: make them exact (same spans)
    Q, R = np.linalg.qr(T)
    return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]


def in_manifold_attack(model, X, y, *, manifold, epsilon, method="auto", n_steps=40,
                       step_size=None, n_restarts=1, loss="ce", grid_step=None, image_shape=None,
                       batch_size=512, device="auto", random_state=None):
    """Search ``B_in_eps(x) = {x' in M : ||x' - x|| <= eps}`` for a misclassification.

    ``x`` itself belongs to the ball, so misclassified samples succeed.
    Methods: ``"grid"`` (chart grid, ``d <= 2``; exact up to ``grid_step``),
    ``"tangent_pgd"`` (steps along ``P_T g``, projection onto ``M``, budget
    bisection), ``"project"`` (ambient PGD, projection, bisection along the
    segment: the paper's synthetic method), ``"latent"`` (PGD on the code ``u``
    of ``x + dec(z + u) - dec(z)``, for a :class:`~geolearn.manifold.LatentManifold`);
    ``"auto"`` picks grid, latent or tangent_pgd in that order.

    Parameters
    ----------
    model : torch.nn.Module, fitted skorch net or differentiable sklearn model
        As in :func:`pgd` ("grid" needs only predictions).
    X : array-like of shape (n, D) or (n, C, H, W)
    y : array-like of shape (n,)
    manifold : manifold object
        E.g. :class:`~geolearn.manifold.SphereManifold`.
    epsilon : float
        The budget (> 0), an ambient distance.
    method : {"auto", "grid", "tangent_pgd", "project", "latent"}, default="auto"
    n_steps, step_size, n_restarts, loss, batch_size, device, random_state
        As in :func:`pgd`.
    grid_step : float, optional
        Ambient grid resolution; default ``epsilon / 20``.
    image_shape : tuple of int, optional

    Returns
    -------
    X_adv : ndarray of float32, shape (n, D)
    success : ndarray of bool, shape (n,)

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.adversarial import in_manifold_attack
    >>> from geolearn.manifold import SphereManifold
    >>> net = torch.nn.Linear(2, 1, bias=False)   # the boundary x1 = 0 cuts the circle
    >>> with torch.no_grad():
    ...     _ = net.weight.copy_(torch.tensor([[1.0, 0.0]]))
    >>> X = [[np.cos(1.5), np.sin(1.5)], [1.0, 0.0]]
    >>> _, ok = in_manifold_attack(net, X, [1, 1], manifold=SphereManifold(), epsilon=0.2)
    >>> ok.tolist()
    [True, False]
    """
    step = check_attack_params(epsilon, "l2", n_steps, step_size, n_restarts, loss, batch_size)
    X, clf, t = _validated(model, X, y, image_shape, device, manifold)
    method = resolve_in_method(method, manifold)
    if method != "grid":
        clf.require_gradients("in_manifold_attack")
    std = _wrong_np(clf, X, t, batch_size)
    return in_manifold_core(clf, manifold, X, t, std, rho=epsilon, method=method,
                            n_steps=n_steps, step_size=step, n_restarts=n_restarts, loss=loss,
                            grid_step=grid_step_default(epsilon, grid_step),
                            batch_size=batch_size, random_state=random_state)
