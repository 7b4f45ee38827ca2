"""The adapter's cost: ``as_model`` against the torch code a user would write by hand.

Every family reaches models through :func:`geolearn.models.as_model`; this checks that the one
door adds no overhead. Peers, in the same run on the same module and data:

- outputs: ``module(x)`` under ``torch.no_grad()`` in eval mode, in the same batches;
- Jacobians: ``torch.func.vmap(torch.func.jacrev(f))`` over the whole batch;
- input gradients: ``torch.autograd.grad`` of the batch-summed target output.

Run: ``OMP_NUM_THREADS=2 PYTHONPATH=. python benchmarks/bench_models.py [--contended]``
(``--contended``: beside one competing CPU-bound process).
"""

import sys

import numpy as np
import torch
from torch.func import jacrev, vmap

from benchmarks._runner import compare, contended, header
from geolearn.models import as_model


def _mlp(d_in=784, width=256, d_out=10, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d_in, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, d_out)).eval()


def main(busy=False):
    header("adapter overhead" + (" (contended: one competing process)" if busy else " (idle)"))
    net = _mlp()
    rng = np.random.RandomState(0)
    X = rng.rand(4096, 784).astype(np.float32)
    y = rng.randint(0, 10, len(X))
    m = as_model(net, batch_size=1024)

    def peer_forward():
        with torch.no_grad():
            return np.concatenate([net(torch.from_numpy(X[i:i + 1024])).numpy()
                                   for i in range(0, len(X), 1024)])

    def peer_jacobian():
        x = torch.from_numpy(X[:256])
        return vmap(jacrev(lambda v: net(v.unsqueeze(0)).squeeze(0)))(x).detach().numpy()

    def peer_gradient():
        x = torch.from_numpy(X).requires_grad_(True)
        out = net(x).gather(1, torch.from_numpy(y).view(-1, 1))
        return torch.autograd.grad(out.sum(), x)[0].numpy()

    np.testing.assert_allclose(m.forward(X), peer_forward(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.jacobian(X[:256]), peer_jacobian(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.input_gradient(X, targets=y, batch_size=len(X)), peer_gradient(),
                               rtol=1e-5, atol=1e-6)
    with contended(busy):
        compare("forward, 4,096 x 784 -> 10, batches of 1,024", lambda: m.forward(X),
                peer_forward, repeat=7)
        compare("jacobian, 256 samples (10 x 784 each)", lambda: m.jacobian(X[:256]),
                peer_jacobian, repeat=7)
        compare("input_gradient, 4,096 samples, one pass",
                lambda: m.input_gradient(X, targets=y, batch_size=len(X)), peer_gradient, repeat=7)


if __name__ == "__main__":
    main(busy="--contended" in sys.argv)
