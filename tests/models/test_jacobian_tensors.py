"""ModelAdapter.jacobian on tensors: used as they are, a tensor back, the same memory bound."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from geolearn.models import _adapter, as_model

F64 = torch.float64


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 4))


def test_a_tensor_gives_the_same_jacobian_as_an_array():
    m = as_model(_net().double())
    X = torch.randn(7, 3, dtype=F64)
    for mode in ("auto", "fwd", "rev"):
        J = m.jacobian(X, mode=mode)
        assert isinstance(J, torch.Tensor) and J.dtype == F64 and J.shape == (7, 4, 3)
        np.testing.assert_array_equal(J.numpy(), m.jacobian(X.numpy(), mode=mode))


def test_a_tensor_keeps_its_dtype_through_a_function_without_parameters():
    # a parameterless callable's adapter reports float32; a float64 tensor must not be cast
    m = as_model(lambda Z: torch.stack([Z[:, 0] * Z[:, 1], Z[:, 1] ** 3], 1))
    X = torch.tensor([[0.1, 0.2], [1.0 / 3.0, -2.0]], dtype=F64)
    J = m.jacobian(X)
    assert J.dtype == F64
    x, y = X[:, 0], X[:, 1]
    ref = torch.stack([torch.stack([y, x], 1),
                       torch.stack([torch.zeros_like(x), 3 * y**2], 1)], 1)
    torch.testing.assert_close(J, ref, rtol=1e-15, atol=0)


def test_a_tensor_jacobian_has_no_autograd_history_and_respects_max_memory(monkeypatch):
    chunks = []
    net = _net().double()  # parameters require gradients and are captured by a closure
    m = as_model(lambda Z: net(Z))
    X = torch.randn(9, 3, dtype=F64)
    full = m.jacobian(X)
    assert not full.requires_grad and full.grad_fn is None
    assert all(p.grad is None for p in net.parameters())
    # two copies of the 4 x 3 Jacobian, three forward tangents of each saved intermediate
    per_sample = 2 * 4 * 3 * 8 + 3 * 3 * _adapter.saved_bytes(lambda Z: net(Z), X)
    iter_batches = _adapter.iter_batches
    monkeypatch.setattr(_adapter, "iter_batches", lambda n, size: chunks.append(size)
                        or iter_batches(n, size))
    for max_memory in (1, per_sample, 2 * per_sample + 1, 5 * per_sample):
        torch.testing.assert_close(m.jacobian(X, max_memory=max_memory), full,
                                   rtol=1e-13, atol=1e-15)
    assert chunks == [1, 1, 2, 5]
    lin = torch.nn.Linear(3, 4).double()
    J = as_model(lin).jacobian(X, max_memory=1)
    assert torch.equal(J, lin.weight.detach().expand(9, 4, 3))


_JACOBIAN_PEAK = """
import numpy as np, torch
from geolearn.models import as_model
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 4000), torch.nn.Tanh(), torch.nn.Linear(4000, 10))
X = np.random.default_rng(0).random((2000, 8)).astype(np.float32)
model = as_model(net)
model.jacobian(X[:2], max_memory=8_000_000)

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current resident size
before = status("VmRSS:")
model.jacobian(X, max_memory=8_000_000)
print(status("VmHWM:") - before)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux /proc only")
def test_jacobian_peak_memory_stays_within_max_memory():
    """Regression: chunks counted only their Jacobians (640 bytes a sample here), so 1,024
    samples' forward tangents of the width-4000 layer (8 x 4000 each) peaked at 426 MB for
    max_memory=8 MB; the intermediates are counted now."""
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1",
               MALLOC_MMAP_THRESHOLD_="65536")
    run = subprocess.run([sys.executable, "-c", _JACOBIAN_PEAK], capture_output=True,
                         text=True, timeout=120, env=env, check=False)
    assert run.returncode == 0, run.stderr
    peak = int(run.stdout.split()[-1])
    assert peak <= 1.5 * 8_000_000, f"peak {peak / 1e6:.1f} MB for max_memory 8 MB"
