"""``ModelAdapter.input_gradient_fn``: the input gradient as a tensor function for attack loops."""

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geolearn.models import as_model


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Dropout(0.5),
                               torch.nn.Linear(7, 3))


def _ce(z, t):
    return F.cross_entropy(z, t, reduction="sum")


@settings(max_examples=20, deadline=None)
@given(X=arrays(np.float32, (6, 5), elements=st.floats(-3, 3, width=32)), seed=st.integers(0, 9))
def test_it_is_input_gradient_bit_for_bit(X, seed):
    m = as_model(_net(seed))
    t = torch.as_tensor(np.arange(6) % 3)
    x = torch.as_tensor(X)
    with m.frozen():
        got = m.input_gradient_fn(_ce)(x, t)
    torch.testing.assert_close(got, m.input_gradient(x, _ce, targets=t), rtol=0, atol=0)
    with m.frozen():
        hidden = m.input_gradient_fn(layer="1")(x)
    torch.testing.assert_close(hidden, m.input_gradient(x, layer="1"), rtol=0, atol=0)


def test_it_leaves_modes_and_parameter_grads_to_the_frozen_block():
    net = _net().train()
    m = as_model(net)
    grad = m.input_gradient_fn(_ce)
    x, t = torch.randn(4, 5), torch.tensor([0, 1, 2, 0])
    with m.frozen():
        a, b = grad(x, t), grad(x, t)  # dropout off inside the block: deterministic
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert net.training and all(p.grad is None for p in net.parameters())
    with torch.no_grad():  # it enables gradients itself
        assert grad(x, t).shape == (4, 5)
