"""Solvers for the Schubert variety of best fit.

``mm_solve`` is the default monotone polar ascent: both objectives are convex
in the unconstrained matrix ``K``, so maximising their linearisation over the
Stiefel manifold (a polar factor) never decreases them. The paper's penalised
Adam iteration (Sec. 4.2), kept for reproduction, is trained through skorch in
:mod:`._adam`.

Both solvers work on the transposed bases ``XT`` (r, L, n) -- the sets' vectors as rows, zero
padded -- so that both contractions of an iteration are single matrix products
(``XT @ K`` and ``XT^T @ M`` over the ``r * L`` rows) with no copy of the data, on
normalised weights ``w`` (r,) summing to 1, and on ``blocks``: one ``(k_s, c_s)``
pair per step of the flag (a single pair for a Grassmannian).
"""

import torch

from .._utils import iter_batches
from ._grassmann import top_svd


def objective_and_gradient(XT, w, K, blocks, objective, batch_size=None, gradient=True):
    """``F(K)`` (weighted mean over sets and blocks) and a (super)gradient direction.

    The gradient omits the factor 2 of ``cos2`` (a common scale does not change
    the polar step, whose shift is relative).
    """
    F = XT.new_zeros(())
    G = torch.zeros_like(K) if gradient else None
    m = len(blocks)
    n = XT.shape[2]
    for sl in iter_batches(XT.shape[0], batch_size):
        Y = XT[sl] @ K  # (r, L, k) = X_i^T K
        M = torch.zeros_like(Y) if gradient else None
        for k_s, c_s in blocks:
            A, s, B = top_svd(Y[..., :k_s], c_s)
            f = s.square() if objective == "cos2" else s
            F = F + (w[sl, None] * f).sum() / (c_s * m)
            if gradient:
                coef = (s if objective == "cos2" else torch.ones_like(s)) * (w[sl, None] / (c_s * m))
                M[..., :k_s] += (A * coef[:, None, :]) @ B.mT
        if gradient:
            # (M^T X)^T, not X^T M: BLAS is several times faster with the narrow side first
            G += (M.reshape(-1, M.shape[2]).T @ XT[sl].reshape(-1, n)).T
    return F, G


def polar(G):
    """Orthonormal polar factor ``U V^T`` of ``G = U S V^T``: argmax of <G, K> on St(k, n)."""
    U, _, Vh = torch.linalg.svd(G, full_matrices=False)
    return U @ Vh


def mm_solve(XT, w, K, blocks, objective, *, tol, max_iter, shift, batch_size=None):
    """Monotone polar ascent from ``K``.

    Returns ``K, curve, n_iter, converged`` with ``curve`` the objective of
    every kept iterate (non-decreasing up to rounding) and ``n_iter`` the
    number of polar steps taken.
    """
    curve = []
    K_prev = None
    for t in range(max_iter + 1):
        F, G = objective_and_gradient(XT, w, K, blocks, objective, batch_size)
        F = float(F)
        if t >= 1:
            if F < curve[-1] - 1e-12:  # rounding only: the previous iterate is better
                return K_prev, curve, t, True
            curve.append(F)
            if F - curve[-2] <= tol * max(1.0, abs(curve[-2])):
                return K, curve, t, True
        else:
            curve.append(F)
        if t == max_iter:
            break
        scale = torch.linalg.matrix_norm(G, ord=2)
        scale = scale if scale > 0 else torch.ones_like(scale)
        K_prev, K = K, polar(G + shift * scale * K)
    return K, curve, max_iter, False
