"""One fitted TorchEmbedder shared by threads (regression: 6 of 12 threaded transforms failed,
another call's final-linear pre-hook or early stop firing in this call's forward pass)."""

import numpy as np
import torch
from torch import nn

from geolearn.models import as_model
from geolearn.representations import TorchEmbedder
from tests.threads import check_all_equal, model_state, run_in_threads


def test_transform_from_threads_matches_serial_and_leaves_the_model_unchanged():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 8),
                        nn.Tanh(), nn.Linear(8, 3)).train()
    net[3].eval()
    before = model_state(net)
    X = np.random.default_rng(0).random((40, 6)).astype(np.float32)
    penultimate = TorchEmbedder(net, batch_size=8).fit(X)
    hidden = TorchEmbedder(net, layer="1", batch_size=8).fit(X)
    m = as_model(net)
    calls = [("penultimate", lambda: penultimate.transform(X)),
             ("hidden", lambda: hidden.transform(X)), ("out", lambda: m.features(X))]
    expected = {name: fn() for name, fn in calls}
    check_all_equal(run_in_threads(calls, repeats=20), expected)
    assert model_state(net) == before
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in net.modules())
