"""Randomness keyed on the row: a row's draws depend only on its values and ``random_state``.

Scoring chains (DiffusionDensity) and purification noise (ELBOPurifier) draw their noise
per row from a ``torch.Generator`` seeded with a hash of ``(random_state, the row's
bytes)``, so reordering, subsetting, rebatching or chunking the rows leaves each row's
result unchanged, and torch's global RNG is never read or advanced. Identical rows get
identical draws. (The idea of :mod:`geolearn.diffeo`'s per-block seeds, keyed on the
row's values instead of its position.)
"""

import hashlib
import numbers

import numpy as np
import torch
from sklearn.utils import check_random_state


def row_seeds(X, random_state, stream=""):
    """One 64-bit seed per row of ``X``: blake2b of ``(random_state, stream, row bytes)``.

    An int ``random_state`` is the key itself; a ``RandomState`` (or None) gives one draw
    from it per call, so with None every call differs.
    """
    if isinstance(random_state, numbers.Integral):
        key = int(random_state)
    else:
        key = int(check_random_state(random_state).randint(0, 2**63 - 1, dtype=np.int64))
    key = hashlib.blake2b(f"{key}/{stream}".encode(), digest_size=32).digest()
    X = np.ascontiguousarray(X)
    X = X.reshape(len(X), -1) + X.dtype.type(0)  # -0.0 -> 0.0: equal rows, equal seeds
    return [int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8, key=key).digest(),
                           "little") for row in X]


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
