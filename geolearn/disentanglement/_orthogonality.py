"""Block-orthogonality penalty on latent codes (DAE-OG, Eqs. 1 and 6).

The latent code of one sample is split into ``k`` contiguous blocks of equal size; each block
is normalised to unit length and the penalty is a matrix norm of ``G - I``, where ``G`` is the
``k x k`` Gram matrix of the normalised blocks (its off-diagonal entries are the cosines
between blocks). It is zero iff the blocks are pairwise orthogonal and is invariant to a
positive rescaling of each block.
"""

import numbers

import torch
from torch import nn

from .._utils import check_choice, check_scalar_param

_NORMS = ("fro", "fro_squared", "spectral")
_REDUCTIONS = ("mean", "sum", "none")
#: added under the square root of the Frobenius norm, so its gradient is finite at 0
_FRO_SMOOTHING = 1e-12


def _check_block_param(value, name):
    value = check_scalar_param(value, name, kind="integer", low=1, allow_none=True)
    return None if value is None else int(value)


class OrthogonalityLoss(nn.Module):
    r"""Penalty ``||G - I||`` on the Gram matrix of the unit-normalised latent blocks.

    For one sample, ``z`` in ``R^{n_out}`` is split into ``k`` contiguous blocks
    ``z^1..z^k`` of size ``m = n_out / k``; ``zhat^i = z^i / max(||z^i||, eps)`` and
    ``G_ij = <zhat^i, zhat^j>``. The loss of the sample is a norm of ``G - I`` (the
    diagonal of ``G - I`` is taken as 0, so a block of zero norm contributes cosines 0 and
    no NaN), reduced over the batch.

    Parameters
    ----------
    n_blocks : int, optional
        Number of blocks ``k``. Exactly one of ``n_blocks`` and ``block_size`` is given.
    block_size : int, optional
        Size ``m`` of each block.
    norm : {"fro", "fro_squared", "spectral"}, default="fro"
        ``"fro"``: ``sqrt(2 sum_{i<j} cos^2(z^i, z^j) + 1e-12)`` (the smoothing keeps the
        gradient finite at exact orthogonality, where the value is ``1e-6``);
        ``"fro_squared"``: ``2 sum_{i<j} cos^2``; ``"spectral"``: the largest absolute
        eigenvalue of ``G - I``. The paper writes ``||.||_2`` without naming the matrix
        norm; the Frobenius norm is geolearn's reading.
    eps : float, default=1e-8
        Floor on block norms before normalising.
    reduction : {"mean", "sum", "none"}, default="mean"
        Over the batch; ``"none"`` returns one value per sample, shape ``(B,)``.

    Notes
    -----
    Exact orthogonality needs ``m >= k``. The value lies in ``[0, sqrt(k (k - 1))]``
    (``"fro"``, up to the smoothing) and in ``[0, k (k - 1)]`` (``"fro_squared"``).

    Examples
    --------
    >>> import torch
    >>> from geolearn.disentanglement import OrthogonalityLoss
    >>> z = torch.tensor([[1.0, 0.0, 0.0, 2.0],    # blocks (1, 0) and (0, 2): orthogonal
    ...                   [1.0, 1.0, 3.0, 3.0]])   # blocks parallel: cos = 1
    >>> loss = OrthogonalityLoss(n_blocks=2, reduction="none")
    >>> [round(v, 4) for v in loss(z).tolist()]
    [0.0, 1.4142]
    >>> round(OrthogonalityLoss(block_size=2, norm="fro_squared")(z).item(), 4)
    1.0
    """

    def __init__(self, n_blocks=None, block_size=None, norm="fro", eps=1e-8, reduction="mean"):
        super().__init__()
        if (n_blocks is None) == (block_size is None):
            raise ValueError("Give exactly one of n_blocks and block_size; got "
                             f"n_blocks={n_blocks!r}, block_size={block_size!r}.")
        self.n_blocks = _check_block_param(n_blocks, "n_blocks")
        self.block_size = _check_block_param(block_size, "block_size")
        self.norm = check_choice(norm, "norm", _NORMS)
        if (not isinstance(eps, numbers.Real) or isinstance(eps, bool)
                or not (eps > 0 and eps < float("inf"))):
            raise ValueError(f"eps must be a finite number > 0; got {eps!r}.")
        self.eps = float(eps)
        self.reduction = check_choice(reduction, "reduction", _REDUCTIONS)

    def extra_repr(self):
        size = (f"n_blocks={self.n_blocks}" if self.n_blocks is not None
                else f"block_size={self.block_size}")
        return f"{size}, norm={self.norm!r}, eps={self.eps:g}, reduction={self.reduction!r}"

    def _blocks(self, z):
        if not isinstance(z, torch.Tensor):
            raise TypeError(f"z must be a torch.Tensor of shape (B, n_out); got {type(z).__name__}.")
        if z.dim() != 2:
            raise ValueError(f"z must be 2-D of shape (B, n_out); got shape {tuple(z.shape)}.")
        if z.shape[0] < 1:
            raise ValueError("z must hold at least one sample; got shape "
                             f"{tuple(z.shape)}.")
        if not torch.isfinite(z).all():
            raise ValueError("z contains NaN or infinity.")
        n_out = z.shape[1]
        if self.n_blocks is not None:
            k = self.n_blocks
            if n_out % k:
                raise ValueError(f"z has n_out={n_out} columns, not divisible by "
                                 f"n_blocks={k}.")
            m = n_out // k
        else:
            m = self.block_size
            if n_out % m:
                raise ValueError(f"z has n_out={n_out} columns, not divisible by "
                                 f"block_size={m}.")
            k = n_out // m
        return z.reshape(z.shape[0], k, m)

    def gram(self, z):
        """Gram matrices ``G`` (B, k, k) of the unit-normalised blocks of ``z`` (B, n_out).

        Examples
        --------
        >>> import torch
        >>> G = OrthogonalityLoss(n_blocks=2).gram(torch.tensor([[3.0, 4.0, 4.0, 3.0]]))
        >>> [round(v, 2) for v in G[0].flatten().tolist()]
        [1.0, 0.96, 0.96, 1.0]
        """
        blocks = self._blocks(z)
        norms = torch.linalg.vector_norm(blocks, dim=2, keepdim=True).clamp_min(self.eps)
        unit = blocks / norms
        return unit @ unit.transpose(1, 2)

    def forward(self, z):
        """Loss of the batch ``z`` (B, n_out): a scalar, or (B,) with ``reduction="none"``."""
        G = self.gram(z)
        k = G.shape[1]
        off = G.masked_fill(torch.eye(k, dtype=torch.bool, device=G.device), 0.0)
        if self.norm == "spectral":
            values = torch.linalg.eigvalsh(off).abs().amax(dim=1)
        else:
            s = off.pow(2).sum(dim=(1, 2))
            values = s if self.norm == "fro_squared" else torch.sqrt(s + _FRO_SMOOTHING)
        if self.reduction == "mean":
            return values.mean()
        if self.reduction == "sum":
            return values.sum()
        return values
