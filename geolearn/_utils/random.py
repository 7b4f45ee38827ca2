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


# numpy's SeedSequence (bit_generator.pyx), constants of its hash of the entropy
_MASK32 = 0xFFFFFFFF
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT, _POOL_SIZE = 0xCA01F9DD, 0x4973F715, 16, 4


def _words(n):
    """The uint32 words numpy's SeedSequence reads from a non-negative int, lowest first."""
    words = [0] if n == 0 else []
    while n > 0:
        words.append(n & _MASK32)
        n >>= 32
    return words


def _pcg64_seed_words(entropy):
    """``SeedSequence(entropy_row).generate_state(4, np.uint64)`` for every row of ``entropy``.

    ``entropy`` is a uint32 array (n, L) of assembled entropy words; numpy's
    pool mixing and output hash, vectorised over rows (uint32 products wrap as
    in C).
    """
    n, length = entropy.shape
    hash_const = _INIT_A

    def hashmix(value):
        nonlocal hash_const
        value = value ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_A) & _MASK32
        value = value * np.uint32(hash_const)
        return value ^ (value >> np.uint32(_XSHIFT))

    def mix(x, y):
        result = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
        return result ^ (result >> np.uint32(_XSHIFT))

    zero = np.zeros(n, dtype=np.uint32)
    pool = [hashmix(entropy[:, i] if i < length else zero) for i in range(_POOL_SIZE)]
    for i_src in range(_POOL_SIZE):
        for i_dst in range(_POOL_SIZE):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hashmix(pool[i_src]))
    for i_src in range(_POOL_SIZE, length):
        for i_dst in range(_POOL_SIZE):
            pool[i_dst] = mix(pool[i_dst], hashmix(entropy[:, i_src]))
    hash_const = _INIT_B
    state = np.empty((n, 8), dtype=np.uint32)
    for i_dst in range(8):
        value = pool[i_dst % _POOL_SIZE] ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_B) & _MASK32
        value = value * np.uint32(hash_const)
        state[:, i_dst] = value ^ (value >> np.uint32(_XSHIFT))
    # uint64 words from little-endian pairs of uint32, as numpy's view on every platform
    return state[:, 0::2].astype(np.uint64) | (state[:, 1::2].astype(np.uint64) << np.uint64(32))


class _SeedWords(np.random.bit_generator.ISeedSequence):
    """A seed sequence whose state is already generated: PCG64 seeds itself from it."""

    def __init__(self, words):
        self.words = words

    def generate_state(self, n_words, dtype=np.uint32):  # PCG64 asks for 4 uint64 words
        return self.words


def row_generators(keys, stream=()):
    """``np.random.default_rng([key, *stream])`` for each key, seeded in one vectorised pass.

    The same generators, draw for draw, as numpy's (a test compares them), without
    its per-row ``SeedSequence`` (a hash in Python and an ``np.errstate`` per
    generator: most of the cost of a row's few draws).

    Parameters
    ----------
    keys : sequence of int
        Non-negative seeds, e.g. :func:`row_seeds`.
    stream : tuple of int, default=()
        Non-negative ints appended to each key's entropy.

    Returns
    -------
    generators : list of numpy.random.Generator

    Examples
    --------
    >>> a = row_generators([3, 2**40], (0, 1))
    >>> b = [np.random.default_rng([3, 0, 1]), np.random.default_rng([2**40, 0, 1])]
    >>> all(g.random() == h.random() for g, h in zip(a, b))
    True
    """
    tail = [w for s in stream for w in _words(int(s))]
    rows = [_words(int(key)) + tail for key in keys]
    words = np.empty((len(rows), 4), dtype=np.uint64)
    for length in {len(row) for row in rows}:  # keys below 2**32 have one word fewer
        same = [i for i, row in enumerate(rows) if len(row) == length]
        words[same] = _pcg64_seed_words(np.array([rows[i] for i in same], dtype=np.uint32))
    return [np.random.Generator(np.random.PCG64(_SeedWords(w))) for w in words]
