"""Seeded calls never read, advance or reseed torch's global RNG.

Regression: converting a fitted scikit-learn MLP (``as_model``, ``mlp_to_torch``, and so
ReLUPolytopes and the local linear maps of an MLP) drew torch's default initialisation of
every layer from the global generator before overwriting it, and ``patch_attack`` seeded
its random start by reseeding the global generator, so another thread drawing from it
meanwhile (or a second attack) changed a seeded attack's result.
"""

import numpy as np
import pytest
import torch
from sklearn.neural_network import MLPClassifier

from geolearn.adversarial import patch_attack
from geolearn.diffeo import relative_stability
from geolearn.models import as_model, mlp_to_torch
from geolearn.polytopes import LocalLinearClustering, LocalLinearMap, ReLUPolytopes
from tests.threads import check_all_equal, run_in_threads

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (60, 4))
y = (X[:, 0] > X[:, 1]).astype(int)
MLP = MLPClassifier((8,), max_iter=2000, random_state=0).fit(X, y)
NET = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
MASK = np.array([True, True, False, False])
IMAGES = rng.random((30, 64))  # 8x8 images, flat
MLP64 = MLPClassifier((8,), max_iter=2000, random_state=0).fit(IMAGES, np.arange(30) % 2)


def _patch(batch_size=256):
    return patch_attack(NET, (X[:12] + 1) / 2, y[:12], MASK, n_steps=3, step_size=0.01,
                        random_start=True, batch_size=batch_size, random_state=0)


CALLS = {
    "as_model(mlp)": lambda: as_model(MLP).forward(X),
    "mlp_to_torch": lambda: mlp_to_torch(MLP)(torch.as_tensor(X, dtype=torch.float32)),
    "ReLUPolytopes(mlp)": lambda: ReLUPolytopes(MLP, random_state=0).fit_transform(X),
    "LocalLinearMap(mlp)": lambda: LocalLinearMap(MLP, MLP, device="cpu").fit(X).transform(X),
    "LocalLinearClustering(mlp)": lambda: LocalLinearClustering(
        MLP, n_clusters=2, random_state=0, n_init=2).fit(X).predict(X),
    "patch_attack": _patch,
    "relative_stability(mlp)": lambda: relative_stability(
        MLP64, IMAGES, image_shape=(8, 8), c=2, random_state=0).R,
}


@pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning")  # a tiny probe set
@pytest.mark.parametrize("name", CALLS)
def test_the_global_torch_rng_is_untouched(name):
    state = torch.get_rng_state()
    first = CALLS[name]()
    assert torch.equal(torch.get_rng_state(), state)
    torch.rand(5)  # a result does not depend on what was drawn from the global RNG before
    np.testing.assert_array_equal(np.asarray(CALLS[name]().detach() if name == "mlp_to_torch"
                                             else CALLS[name]()),
                                  np.asarray(first.detach() if name == "mlp_to_torch"
                                             else first))


def test_seeded_patch_attack_is_reproducible_beside_threads_using_the_global_rng():
    expected = _patch()
    # the random start is a function of random_state alone, not of the batching
    np.testing.assert_array_equal(_patch(batch_size=5), expected)

    def draw():
        torch.manual_seed(123)  # another user of the global generator, as in a training loop
        return torch.rand(1000).sum().item()

    # one row a batch: each batch's start was drawn after the previous batch's steps, a wide
    # window for the other thread to reseed the generator
    results = run_in_threads([("attack", lambda: _patch(batch_size=1)), ("global", draw)],
                             repeats=10)
    attacks = [r for name, r in results if name == "attack"]
    assert not [r for r in attacks if isinstance(r, Exception)]
    for r in attacks:
        np.testing.assert_array_equal(r, expected)


@pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning")
def test_the_calls_from_threads_match_serial_ones():
    """Every call above, from 8 threads at once, gives its serial result."""
    calls = [(name, lambda fn=fn, name=name: np.asarray(
        fn().detach() if name == "mlp_to_torch" else fn())) for name, fn in CALLS.items()]
    expected = {name: fn() for name, fn in calls}
    check_all_equal(run_in_threads(calls, repeats=2), expected, rtol=0, atol=0)
