"""Small networks with known geometry for the polytopes tests."""

import numpy as np
import torch
from torch import nn


def sequential(weights, biases, dtype=torch.float64):
    """``nn.Sequential`` of Linear/ReLU layers with the given ``(out, in)`` weights."""
    layers = []
    for i, (W, b) in enumerate(zip(weights, biases)):
        W = np.asarray(W, float)
        layer = nn.Linear(W.shape[1], W.shape[0], dtype=dtype)
        with torch.no_grad():
            layer.weight.copy_(torch.as_tensor(W))
            layer.bias.copy_(torch.as_tensor(np.asarray(b, float)))
        layers.append(layer)
        if i < len(weights) - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def gaussian_net(sizes, seed, bias=True):
    """Weights and biases ~ N(0, 1) (biases zero when ``bias=False``)."""
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) for a, b in zip(sizes[:-1], sizes[1:])]
    bs = [rng.normal(size=b) if bias else np.zeros(b) for b in sizes[1:]]
    return sequential(Ws, bs)


def xor_net():
    """Paper 2, eq. 2: three regions, the pattern (0, 1) is empty."""
    return sequential([[[1, 1], [1, 1]], [[2, -4]]], [[1, 0], [-1]])


def check_xor_regions(enum):
    """Paper 2, eq. 3: the XOR net's three unbounded regions, -2x-2y+1, 2x+2y+1 and -1."""
    assert enum.n_regions == 3 and not enum.bounded.any()
    maps = {tuple(p.astype(int)): np.append(W[0], b[0])
            for p, W, b in zip(enum.patterns, enum.W, enum.b)}
    assert set(maps) == {(1, 1), (1, 0), (0, 0)}
    np.testing.assert_allclose(maps[(1, 1)], [-2, -2, 1], atol=1e-12)
    np.testing.assert_allclose(maps[(1, 0)], [2, 2, 1], atol=1e-12)
    np.testing.assert_allclose(maps[(0, 0)], [0, 0, -1], atol=1e-12)


class Wrapped(nn.Module):
    """A ReLU MLP behind a custom forward: only autograd can read it."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


def simplex_net(m=5):
    """Spec A2: the region of 0.1 * 1 is the simplex {x >= 0, sum x <= 1}."""
    eye = np.eye(m)
    W1, b1 = np.vstack([eye, -eye]), 2 * np.ones(2 * m)
    W2 = np.vstack([np.hstack([eye / 2, -eye / 2]), np.hstack([np.ones(m) / 2, -np.ones(m) / 2])])
    b2 = np.concatenate([np.zeros(m), [-1]])
    return sequential([W1, W2, np.ones((1, m + 1))], [b1, b2, [0.0]])
