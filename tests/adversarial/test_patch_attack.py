"""patch_attack on a torch module and, through ``as_model``, on a fitted VAEClassifier."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier

import geolearn.generative
from geolearn.adversarial import patch_attack
from geolearn.generative import VAEClassifier, rectangular_patch_mask
from geolearn.models import GradientsUnavailableError


@pytest.fixture(scope="module")
def digits():
    """240 digits of 3 classes in [0, 1] with string labels, and a small VAEClassifier on them."""
    X, y = load_digits(n_class=3, return_X_y=True)
    X, y = X[:240] / 16.0, np.array(["zero", "one", "two"])[y[:240]]
    clf = VAEClassifier(n_latent=4, hidden_layer_sizes=(32,), max_epochs=15, batch_size=32,
                        random_state=0).fit(X, y)
    return clf, X, y


def test_generative_reexports_the_same_function():
    assert geolearn.generative.patch_attack is patch_attack


@pytest.mark.parametrize("method", ["pgd", "nag"])
def test_patch_attack_changes_only_the_patch_and_hurts(digits, method):
    clf, X, y = digits
    mask = rectangular_patch_mask((8, 8), 0, 0, 8, 3)
    X_adv = patch_attack(clf, X[:60], y[:60], mask, method=method, n_steps=60, step_size=0.05,
                         random_state=0)
    np.testing.assert_array_equal(X_adv[:, ~mask], X[:60, ~mask])
    assert X_adv.min() >= 0 and X_adv.max() <= 1
    assert clf.score(X_adv, y[:60]) < clf.score(X[:60], y[:60]) - 0.3


def test_patch_attack_on_a_torch_module():
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 2)
    X = np.full((3, 4), 0.5)
    y = net(torch.as_tensor(X, dtype=torch.float32)).argmax(1).numpy()
    mask = np.array([True, True, False, False])
    X_adv = patch_attack(net, X, y, mask, n_steps=100, step_size=0.05, random_start=False)
    # a linear model is driven to the box corner that most lowers the true logit's margin
    w = (net.weight[1 - y[0]] - net.weight[y[0]]).detach().numpy()
    np.testing.assert_array_equal(X_adv[0, :2], (w[:2] > 0).astype(float))


@pytest.mark.parametrize("kwargs, match", [
    (dict(mask=np.zeros(64, bool)), "all False"),
    (dict(mask=np.ones(10, bool)), "10 entries"),
    (dict(n_steps=0), "n_steps"),
    (dict(step_size=0.0), "step_size"),
    (dict(method="fgsm"), "method"),
    (dict(y=np.array(["seven"] * 240)), "unknown"),
    (dict(X=None), r"outside clip=\(0, 1\)"),
    (dict(clip=(1.0, 0.0)), "lo < hi"),
    (dict(image_shape=(3, 8, 8)), "192 values per image but X has 64 features"),
])
def test_patch_attack_bad_inputs(digits, kwargs, match):
    clf, X, y = digits
    args = dict(X=X, y=y, mask=rectangular_patch_mask((8, 8), 0, 0, 8, 2))
    args.update(kwargs)
    if args["X"] is None:
        args["X"] = X * 2
    with pytest.raises(ValueError, match=match):
        patch_attack(clf, args.pop("X"), args.pop("y"), args.pop("mask"), **args)


def test_patch_attack_rejects_a_model_without_logits():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        patch_attack(object(), np.zeros((2, 4)), [0, 1], np.ones(4, bool))
    forest = RandomForestClassifier(n_estimators=2, random_state=0).fit(np.eye(4), [0, 1, 0, 1])
    with pytest.raises(GradientsUnavailableError, match="patch_attack needs gradients"):
        patch_attack(forest, np.zeros((2, 4)), [0, 1], np.ones(4, bool))


@pytest.mark.parametrize("method", ["pgd", "nag"])
def test_patch_attack_restores_every_submodule_mode_and_grad_flag(method):
    # regression: a train-mode model with one Dropout in eval mode (and one frozen
    # parameter) must come back exactly as it was, submodule by submodule
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Dropout(0.5), torch.nn.ReLU(),
                              torch.nn.Linear(8, 2), torch.nn.Dropout(0.2))
    net.train()
    net[1].eval()
    net[3].bias.requires_grad_(False)
    modes = [m.training for m in net.modules()]
    flags = [p.requires_grad for p in net.parameters()]
    X = np.random.default_rng(0).random((6, 16))
    mask = np.zeros(16, dtype=bool)
    mask[:4] = True
    patch_attack(net, X, [0, 1, 0, 1, 0, 1], mask, method=method, n_steps=3, random_state=0)
    assert [m.training for m in net.modules()] == modes
    assert [p.requires_grad for p in net.parameters()] == flags
