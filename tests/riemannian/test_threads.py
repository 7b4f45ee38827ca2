"""One fitted RiemannianFeatureGeometry shared by threads.

Regression: 10 of 12 threaded transforms raised "dual Tensor for forward AD but no level
exists": torch's forward-mode AD level (used by jacfwd for Hessians, metric derivatives and
curvature) is process-global, so concurrent forward-mode passes broke each other.
"""

import numpy as np
import torch
from torch import nn

from geolearn.riemannian import PullbackMetric, RiemannianFeatureGeometry
from tests.threads import check_all_equal, model_state, run_in_threads


def test_transform_from_threads_matches_serial_and_leaves_the_model_unchanged():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 6),
                        nn.Sigmoid(), nn.Linear(6, 2)).double().train()
    net[3].weight.requires_grad_(False)
    before = model_state(net)
    X = np.random.default_rng(0).standard_normal((6, 2))
    geo = RiemannianFeatureGeometry(net, layer=4, quantities=("log_volume", "ricci_scalar"))
    geo.fit(X)
    hidden = RiemannianFeatureGeometry(net, layer="1").fit(X)
    pullback = PullbackMetric(net[:2])
    Xt = torch.as_tensor(X)
    calls = [("geo", lambda: geo.transform(X)), ("hidden", lambda: hidden.transform(X)),
             ("derivative", lambda: pullback.metric_derivative(Xt).numpy())]
    expected = {name: fn() for name, fn in calls}
    check_all_equal(run_in_threads(calls, repeats=6), expected, rtol=1e-9, atol=1e-12)
    assert model_state(net) == before
