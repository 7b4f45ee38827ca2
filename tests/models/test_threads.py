"""One fitted model or adapter shared by threads (a web service, joblib threads).

Regression: ``features(X, layer=...)`` beside ``features(X)`` from 8 threads raised
``_StopForward`` or "layer was not reached" (another call's hook fired in this call's
forward pass), and ``frozen`` left the model in eval mode with frozen parameters (a
late exit restored the state an earlier, overlapping entry had saved).
"""

import time

import numpy as np
import torch

from geolearn.adversarial import patch_attack
from geolearn.models import as_model, frozen
from tests.threads import check_all_equal, model_state, run_in_threads, small_net

X = np.random.default_rng(0).standard_normal((64, 6)).astype(np.float32)


def test_features_of_layers_and_outputs_from_threads():
    net = small_net()
    before = model_state(net)
    m = as_model(net, batch_size=16)
    calls = [("out", lambda: m.features(X)), ("layer2", lambda: m.features(X, layer="2")),
             ("layer5", lambda: m.features(X, layer=5)), ("forward", lambda: m.forward(X))]
    expected = {name: fn() for name, fn in calls}
    results = run_in_threads(calls, repeats=25)
    check_all_equal(results, expected)
    assert model_state(net) == before


def test_feature_fn_gradients_and_jacobians_from_threads():
    net = small_net()
    before = model_state(net)
    m = as_model(net, batch_size=16)
    Xt = torch.as_tensor(X[:8])
    calls = [("grad", lambda: m.input_gradient(X[:16], targets=np.zeros(16, int), layer="4")),
             ("jac", lambda: m.jacobian(X[:4], layer="2")),
             ("jac_out", lambda: m.jacobian(X[:4], mode="fwd")),
             ("fn", lambda: _frozen_call(m, Xt))]
    expected = {name: fn() for name, fn in calls}
    results = run_in_threads(calls, repeats=15)
    check_all_equal(results, expected, rtol=1e-5, atol=1e-6)
    assert model_state(net) == before


def _frozen_call(m, x):
    with m.frozen(), torch.no_grad():
        return m.feature_fn("5")(x).numpy()


def test_frozen_from_threads_restores_mixed_modes_and_flags():
    net = small_net()
    net[1].eval()
    net[4].weight.requires_grad_(False)
    before = model_state(net)

    def use(part):
        with frozen(part):
            for _ in range(3):
                time.sleep(0.001)  # let the other threads enter and leave meanwhile
                assert not any(m.training for m in part.modules())
                assert not any(p.requires_grad for p in part.parameters())
            return 0.0

    calls = [("all", lambda: use(net)), ("head", lambda: use(net[4])), ("first", lambda: use(net[0]))]
    check_all_equal(run_in_threads(calls, repeats=40), {"all": 0.0, "head": 0.0, "first": 0.0})
    assert model_state(net) == before


def test_patch_attack_beside_features_leaves_the_model_as_it_was():
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    net.train()
    before = model_state(net)
    m = as_model(net)
    Xp = np.random.default_rng(1).random((8, 6)).astype(np.float32)
    y = np.arange(8) % 3
    mask = np.array([1, 1, 0, 0, 0, 0], bool)
    calls = [("attack", lambda: patch_attack(net, Xp, y, mask, n_steps=20,
                                                random_start=False)),
             ("features", lambda: m.features(Xp, layer="1")),
             ("out", lambda: m.features(Xp))]
    expected = {name: fn() for name, fn in calls}
    check_all_equal(run_in_threads(calls, repeats=8), expected, rtol=1e-5, atol=1e-6)
    assert model_state(net) == before


def test_no_hooks_are_left_and_other_errors_propagate():
    net = small_net().eval()
    m = as_model(net)
    m.features(X, layer="2")
    m.jacobian(X[:2], layer="4", mode="fwd")
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in net.modules())

    def explode(*args):
        raise ValueError("boom")

    handle = net[1].register_forward_hook(explode)
    try:
        for layer in ("4", None):
            try:
                m.features(X, layer=layer)
            except ValueError as exc:
                assert "boom" in str(exc)
            else:
                raise AssertionError("the model's own error was swallowed")
    finally:
        handle.remove()
    assert not any(mod._forward_hooks or mod._forward_pre_hooks for mod in net.modules())


def test_feature_fn_reads_a_layer_input_and_nested_calls_read_their_own_layer():
    net = small_net().eval()
    m = as_model(net)
    x = torch.as_tensor(X[:5])
    with torch.no_grad():
        assert torch.equal(m.feature_fn("4", input=True)(x), net[:4](x))
        inner = m.feature_fn("2")
        seen = []
        # a forward hook of the user's that runs another adapter call on the same model
        handle = net[4].register_forward_hook(lambda *a: seen.append(inner(x)))
        try:
            out = m.feature_fn("5")(x)
        finally:
            handle.remove()
        assert torch.equal(out, net[:6](x)) and torch.equal(seen[0], net[:3](x))


def test_forward_ad_lock_is_reentrant():
    from geolearn.models import forward_ad_lock, locked_jacfwd

    J = locked_jacfwd(locked_jacfwd(torch.sin))(torch.zeros(3))
    with forward_ad_lock(), forward_ad_lock():
        assert J.shape == (3, 3, 3)
