"""Randomness keyed on the row: a row's draws depend only on its values and ``random_state``.

Scoring chains (DiffusionDensity) and purification noise (ELBOPurifier) draw their noise
per row from a ``torch.Generator`` seeded with a hash of ``(random_state, the row's
bytes)``, so reordering, subsetting, rebatching or chunking the rows leaves each row's
result unchanged, and torch's global RNG is never read or advanced. Identical rows get
identical draws. The seeds come from :func:`geolearn._utils.row_seeds`, shared with diffeo.
:class:`RowNoise` streams such draws step by step (InpaintingOODDetector's reverse chains).
"""

import torch

from .random import row_seeds  # noqa: F401  (the seeds of row_draws, shared with diffeo)


def row_draws(seeds, draws, *, dtype=torch.float32, device="cpu"):
    """Per-row standard normal / ``U[-1, 1]`` draws from each row's own generator.

    Parameters
    ----------
    seeds : list of int
        From :func:`row_seeds`.
    draws : sequence of (kind, shape)
        ``kind`` is ``"normal"`` or ``"uniform"``; drawn in this order, each over its
        leading axis one slice at a time (so a longer leading axis extends, and never
        changes, the draws of a shorter one).

    Returns
    -------
    list of tensors of shape ``(len(seeds), *shape)``
    """
    outs = [torch.empty((len(seeds), *shape), dtype=dtype) for _, shape in draws]
    gen = torch.Generator()
    for i, seed in enumerate(seeds):
        gen.manual_seed(seed)
        for (kind, _), out in zip(draws, outs):
            for part in out[i]:
                if kind == "normal":
                    part.normal_(generator=gen)
                else:
                    part.uniform_(-1.0, 1.0, generator=gen)
    return [out.to(device) for out in outs]


#: Noise values a :class:`RowNoise` generator draws at once (whole draws of ``n_features``).
NOISE_CHUNK = 4096


class RowNoise:
    """Streams of standard normal draws, one generator per chain (a row, or a row's attempt).

    ``get(j)`` returns draw ``j``, shape ``(len(seeds), n_features)``, of every chain, for
    increasing ``j``. Each generator draws ``chunk`` draws at a time, the chunk fixed by
    ``n_features`` alone, so a chain's draws depend only on its seed, never on the other
    chains it is batched with (InpaintingOODDetector's reverse chains).
    """

    def __init__(self, seeds, n_features, device):
        self.gens = [torch.Generator().manual_seed(s) for s in seeds]
        self.D, self.device = n_features, device
        self.chunk = max(1, NOISE_CHUNK // n_features)
        self.start, self.block = None, None

    def get(self, j):
        start = (j // self.chunk) * self.chunk
        if start != self.start:
            block = torch.stack([torch.randn(self.chunk, self.D, generator=g)
                                 for g in self.gens])
            self.block, self.start = block.transpose(0, 1).to(self.device), start
        return self.block[j - start]
