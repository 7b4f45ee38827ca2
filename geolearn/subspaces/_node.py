"""The torch pieces of Algorithm III (paper Sec. 5.3): SVBFNode and the centroid head."""

import torch
from torch import nn
from torch.nn.utils.parametrizations import orthogonal

# Smallest eigengap used when differentiating the top eigenvector (detach=False).
_EIGENGAP = 1e-6


def unit_rows(omega):
    """``omega`` with each row scaled to unit norm (the centroids ``w_j``)."""
    return omega / torch.linalg.vector_norm(omega, dim=1, keepdim=True)


def centroid_logits(b, omega, T):
    """Logits ``(b^T w_j)^2 / T`` of coordinates ``b`` against unit centroids (paper Eq. 7).

    Squared, so invariant to the sign of ``b``, which is defined up to sign.
    """
    return (b @ unit_rows(omega).T).square() / T


class _TopEigenpair(torch.autograd.Function):
    """Top eigenvalue and eigenvector of symmetric matrices, with a clamped eigengap.

    The eigenvector's derivative is ``sum_{j>1} v_j v_j^T dA v_1 / (lambda_1 - lambda_j)``;
    clamping the gaps at ``_EIGENGAP`` keeps it finite when the top eigenvalues meet.
    """

    @staticmethod
    def forward(ctx, A):
        vals, vecs = torch.linalg.eigh(A)
        ctx.save_for_backward(vals, vecs)
        return vals[..., -1], vecs[..., -1]

    @staticmethod
    def backward(ctx, g_val, g_vec):
        vals, vecs = ctx.saved_tensors
        v = vecs[..., -1:]
        grad = g_val[..., None, None] * (v @ v.mT)
        gap = (vals[..., -1:] - vals).clamp_min(_EIGENGAP)
        coef = (vecs.mT @ g_vec[..., None]).squeeze(-1) / gap
        coef[..., -1] = 0.0
        outer = (vecs @ coef[..., None]) @ v.mT
        return grad + 0.5 * (outer + outer.mT)


class SVBFNode(nn.Module):
    """A Schubert-variety layer: sets in, their coordinates ``b`` on ``W = span(K)`` out.

    For each set ``X`` (``n x l``, orthonormal columns) it returns the unit vector
    ``b`` (``k``) with ``K b`` the direction of ``W`` closest to ``span(X)``: the top
    eigenvector of ``(X^T K)^T (X^T K)``, sign-normalised (largest-magnitude entry
    positive). Its eigenvalue is ``cos^2 theta_1``; ``fit_loss_`` is minus its
    batch mean (``"cos"``: of ``cos theta_1``), so minimising it fits the variety
    (paper Eq. 3 and Eq. 7).

    Parameters
    ----------
    n_features : int
        ``n``.
    n_components : int
        ``k``.
    objective : {"cos2", "cos"}, default="cos2"
    orthogonality : {"parametrize", "penalty"}, default="parametrize"
        ``"parametrize"`` keeps ``K`` orthonormal exactly
        (:func:`torch.nn.utils.parametrizations.orthogonal`; Householder map for
        tall ``K``); ``"penalty"`` leaves ``K`` free and exposes
        ``orth_loss_ = ||K^T K - I||_F^2`` to add to the loss (the paper's).
    detach : bool, default=True
        Return ``b`` detached, as in the paper: a class loss on ``b`` then trains
        only the layers after the node, and ``K`` learns from ``fit_loss_``.
        ``detach=False`` backpropagates through the eigenvector (eigengap
        clamped at 1e-6).

    Attributes
    ----------
    fit_loss_ : torch.Tensor
        Set by :meth:`forward`.
    fit_losses_ : torch.Tensor of shape (n_sets,)
        The sets' own terms of ``fit_loss_`` (its mean), for a weighted mean.
    orth_loss_ : torch.Tensor
        Set by :meth:`forward` (zero with ``"parametrize"``).

    Examples
    --------
    >>> import torch
    >>> from geolearn.subspaces import SVBFNode
    >>> _ = torch.manual_seed(0)
    >>> node = SVBFNode(n_features=6, n_components=2)
    >>> X = torch.linalg.qr(torch.randn(5, 6, 3)).Q         # 5 sets of 3 vectors
    >>> b = node(X)
    >>> b.shape, bool(torch.allclose(b.norm(dim=1), torch.ones(5)))
    (torch.Size([5, 2]), True)
    >>> bool(-1 <= node.fit_loss_ <= 0)
    True
    """

    def __init__(self, n_features, n_components, objective="cos2", orthogonality="parametrize",
                 detach=True):
        super().__init__()
        if objective not in ("cos2", "cos"):
            raise ValueError(f"objective must be 'cos2' or 'cos'; got {objective!r}.")
        if orthogonality not in ("parametrize", "penalty"):
            raise ValueError("orthogonality must be 'parametrize' or 'penalty'; got "
                             f"{orthogonality!r}.")
        if not 1 <= n_components <= n_features:
            raise ValueError(f"n_components must be in [1, n_features] = [1, {n_features}]; "
                             f"got {n_components!r}.")
        self._init_args = (n_features, n_components, objective, orthogonality, detach)
        self.objective = objective
        self.orthogonality = orthogonality
        self.detach = detach
        # weight (n, k) is K; Linear maps coordinates b to directions K b
        self.basis = nn.Linear(n_components, n_features, bias=False)
        nn.init.orthogonal_(self.basis.weight)
        if orthogonality == "parametrize":
            orthogonal(self.basis)

    def __reduce__(self):
        # parametrized modules refuse to pickle; rebuild from the arguments and the weights
        return _rebuild_node, (self._init_args, self.state_dict(), self.training)

    @property
    def K(self):
        """The ``(n, k)`` basis of ``W``."""
        return self.basis.weight

    def forward(self, X):
        K = self.K
        Y = torch.einsum("bnl,nk->blk", X, K)
        lam, b = _TopEigenpair.apply(Y.mT @ Y)
        idx = b.abs().argmax(dim=1, keepdim=True)
        b = b * torch.sign(torch.gather(b, 1, idx)).detach()
        cos2 = lam.clamp(0.0, 1.0)
        fit = cos2 if self.objective == "cos2" else cos2.clamp_min(1e-12).sqrt()
        self.fit_losses_ = -fit
        self.fit_loss_ = self.fit_losses_.mean()
        if self.orthogonality == "penalty":
            eye = torch.eye(K.shape[1], dtype=K.dtype, device=K.device)
            self.orth_loss_ = torch.linalg.matrix_norm(K.T @ K - eye).square()
        else:
            self.orth_loss_ = K.new_zeros(())
        return b.detach() if self.detach else b


def _rebuild_node(init_args, state_dict, training):
    node = SVBFNode(*init_args)
    node.load_state_dict(state_dict)
    return node.to(next(iter(state_dict.values())).dtype).train(training)
