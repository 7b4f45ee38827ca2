"""Ricci scalar curvature by the four routes of the spec, on batches of points.

Every function takes float64 tensors with a leading batch dimension and uses
the sign convention in which the unit 2-sphere has ``R = +2``.
"""

import torch
from torch.func import vmap

from ..models._internal import locked_jacfwd as jacfwd  # forward AD is process-global in torch


def _inverse(g):
    """Inverse of a batch of SPD matrices through a Cholesky factorisation."""
    L = torch.linalg.cholesky(g)
    eye = torch.eye(g.shape[-1], dtype=g.dtype, device=g.device).expand_as(g)
    return torch.cholesky_solve(eye, L)


def gauss_christoffel(J, H):
    """Christoffel symbols ``Γ^κ_{μν}`` of the pullback metric ``g = JᵀJ``.

    Parameters
    ----------
    J : tensor of shape (N, m, d)
    H : tensor of shape (N, m, d, d)

    Returns
    -------
    Gamma : tensor of shape (N, d, d, d), indexed ``[κ, μ, ν]``.
    """
    g = J.transpose(1, 2) @ J
    first_kind = torch.einsum("nkl,nkab->nlab", J, H)
    return torch.einsum("nkl,nlab->nkab", _inverse(g), first_kind)


def gauss_ricci(J, H):
    """Ricci scalar of ``g = JᵀJ`` by the Gauss equation ``R = |tr II|² − |II|²``.

    Needs only first and second derivatives of the immersion, never a
    derivative of ``g⁻¹``.

    Parameters
    ----------
    J : tensor of shape (N, m, d)
        Jacobians of the (already scaled) feature map.
    H : tensor of shape (N, m, d, d)
        Hessians of the same map.

    Returns
    -------
    R : tensor of shape (N,)
    """
    g = J.transpose(1, 2) @ J
    ginv = _inverse(g)
    first_kind = torch.einsum("nkl,nkab->nlab", J, H)
    gamma = torch.einsum("nkl,nlab->nkab", ginv, first_kind)
    normal = H - torch.einsum("nkc,ncab->nkab", J, gamma)
    mean = torch.einsum("nab,nkab->nk", ginv, normal)
    second = torch.einsum("nac,nbd,nkab,nkcd->n", ginv, ginv, normal, normal)
    return (mean**2).sum(1) - second


def kernel_gauss_ricci(g, gamma_first, Q):
    """Ricci scalar of a kernel-induced metric from mixed derivatives of ``K``.

    Parameters
    ----------
    g : tensor of shape (N, d, d)
        ``∂x_μ ∂y_ν K`` at ``y = x``.
    gamma_first : tensor of shape (N, d, d, d)
        ``Γ_{λ,μν} = ∂y_λ ∂x_μ ∂x_ν K`` at ``y = x``.
    Q : tensor of shape (N, d, d, d, d)
        ``Q_{μν,αβ} = ∂x_μ ∂x_ν ∂y_α ∂y_β K`` at ``y = x``.

    Returns
    -------
    R : tensor of shape (N,)
    """
    ginv = _inverse(g)
    S = Q - torch.einsum("nlmv,nlk,nkab->nmvab", gamma_first, ginv, gamma_first)
    return (torch.einsum("nmv,nab,nmvab->n", ginv, ginv, S)
            - torch.einsum("nma,nvb,nmvab->n", ginv, ginv, S))


def christoffel_from_metric(metric_fn):
    """A function ``x -> Γ^κ_{μν}(x)`` (single point) for a metric field ``x -> g(x)``."""

    def christoffel(x):
        g = metric_fn(x)
        dg = jacfwd(metric_fn)(x)  # dg[μ, ν, λ] = ∂_λ g_{μν}
        first_kind = 0.5 * (dg.permute(0, 2, 1) + dg - dg.permute(2, 0, 1))
        # first_kind[λ, μ, ν] = ½(∂_μ g_{λν} + ∂_ν g_{λμ} − ∂_λ g_{μν})
        return torch.einsum("kl,lmn->kmn", torch.linalg.inv(g), first_kind)

    return christoffel


def christoffel_ricci(metric_fn, X):
    """Ricci scalar from the definitions, with ``∂g`` and ``∂Γ`` by nested forward-mode AD.

    The reference route: valid for any smooth metric field, slowest and least
    stable (it differentiates through ``g⁻¹``).

    Parameters
    ----------
    metric_fn : callable
        ``x (d,) -> g(x) (d, d)``, differentiable by ``torch.func``.
    X : tensor of shape (N, d)

    Returns
    -------
    R : tensor of shape (N,)
    """
    christoffel = christoffel_from_metric(metric_fn)

    def single(x):
        def with_aux(x):
            gamma = christoffel(x)
            return gamma, gamma

        dgamma, gamma = jacfwd(with_aux, has_aux=True)(x)  # dgamma[ρ, ν, σ, μ] = ∂_μ Γ^ρ_{νσ}
        # Ric_{σν} = ∂_ρ Γ^ρ_{νσ} − ∂_ν Γ^ρ_{ρσ} + Γ^ρ_{ρλ} Γ^λ_{νσ} − Γ^ρ_{νλ} Γ^λ_{ρσ}
        ric = (torch.einsum("rvsr->sv", dgamma) - torch.einsum("rrsv->sv", dgamma)
               + torch.einsum("rrl,lvs->sv", gamma, gamma)
               - torch.einsum("rvl,lrs->sv", gamma, gamma))
        return torch.einsum("sv,sv->", torch.linalg.inv(metric_fn(x)), ric)

    return vmap(single)(X)


def hessian_metric_ricci(g, T, coefficient=-0.25):
    """Ricci scalar of a metric whose derivative ``T_{λμν} = ∂_λ g_{μν}`` is fully symmetric.

    ``R = c [g^{αρ}g^{βλ}g^{σν} T_{αρβ}T_{λνσ} − g^{αρ}g^{βλ}g^{σν} T_{ανβ}T_{λρσ}]`` with
    ``c = −1/4`` (the definition; the paper's public code used −3/4). Callers
    check the symmetry of ``T`` first.

    Parameters
    ----------
    g : tensor of shape (N, d, d)
    T : tensor of shape (N, d, d, d)
    coefficient : float, default=-0.25

    Returns
    -------
    R : tensor of shape (N,)
    """
    ginv = _inverse(g)
    trace = torch.einsum("nar,narb->nb", ginv, T)
    trace_term = torch.einsum("nb,nbl,nl->n", trace, ginv,
                              torch.einsum("nsv,nlvs->nl", ginv, T))
    cross = torch.einsum("nar,nbl,nsv,navb,nlrs->n", ginv, ginv, ginv, T, T)
    return coefficient * (trace_term - cross)


def symmetry_defect(T):
    """``‖T − sym(T)‖ / ‖T‖`` per point, for a batch of 3-tensors ``(N, d, d, d)``."""
    perms = [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2), (0, 3, 2, 1)]
    sym = sum(T.permute(p) for p in perms) / len(perms)
    norm = T.flatten(1).norm(dim=1).clamp_min(torch.finfo(T.dtype).tiny)
    return (T - sym).flatten(1).norm(dim=1) / norm
