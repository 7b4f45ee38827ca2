"""Randomness keyed on the row: a row's draws depend only on its values and ``random_state``.

A method that draws noise per row (diffeo's deformations and stability probes,
generative's scoring chains and purification) seeds each row's generator with a hash of
``(random_state, stream, the row's bytes)``, so reordering, subsetting, rebatching or
chunking the rows leaves each row's result unchanged, and no global RNG is read or
advanced. Identical rows get identical draws.
"""

import hashlib
import numbers

import numpy as np
from sklearn.utils import check_random_state


def row_seeds(X, random_state, stream=""):
    """One 64-bit seed per row of ``X``: blake2b of ``(random_state, stream, row bytes)``.

    An int ``random_state`` is the key itself; a ``RandomState`` (or None) gives one draw
    from it per call, so with None every call differs. Rows are hashed as they are: pass
    them in one dtype (e.g. float64) for the same values to give the same seeds.

    Examples
    --------
    >>> X = np.array([[0.0, 1.0], [2.0, 3.0]])
    >>> row_seeds(X, 0) == row_seeds(X[::-1], 0)[::-1]
    True
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
