"""Seeded set arrays with known geometry for the subspaces tests."""

import numpy as np


def orth(M):
    return np.linalg.qr(M)[0]


def common_line_sets(n=20, r=30, l=3, seed=0):
    """Sets ``orth([u, G_i])`` that all contain the unit vector ``u``."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    X = np.stack([orth(np.column_stack([u, rng.standard_normal((n, l - 1))])) for _ in range(r)])
    return X, u


def haar_sets(n=20, r=30, l=3, seed=0):
    """Haar-random ``l``-dimensional subspaces of R^n as orthonormal bases."""
    rng = np.random.default_rng(seed)
    return np.stack([orth(rng.standard_normal((n, l))) for _ in range(r)])


def random_orthogonal(n, rng):
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R))


def projector(K):
    return K @ K.T
