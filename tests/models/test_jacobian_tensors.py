"""ModelAdapter.jacobian on tensors: used as they are, a tensor back, the same memory bound."""

import numpy as np
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
    per_sample = 4 * 3 * 8
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
