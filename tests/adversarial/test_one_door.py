"""The attacks reach every model through ``geolearn.models.as_model``: one frozen context, one
input gradient, no private protocol and no branch on model types (issue #14)."""

import pathlib
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from skorch import NeuralNetClassifier
from torch import nn

import geolearn
from geolearn.adversarial import carlini_wagner_l2, fgsm, patch_attack, pgd
from geolearn.generative import VAEClassifier
from geolearn.models import ModelAdapter, as_model
from tests.test_architecture import _model_type_branches, _private_imports


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 3))


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 8)).astype(np.float32), rng.integers(0, 3, n)


MASK = np.arange(8) < 3
ATTACKS = {
    "fgsm": lambda m, X, y: fgsm(m, X, y, 0.1),
    "pgd": lambda m, X, y: pgd(m, X, y, 0.1, n_steps=3, random_state=0),
    "cw": lambda m, X, y: carlini_wagner_l2(m, X, y, n_steps=3)[0],
    "patch": lambda m, X, y: patch_attack(m, X, y, MASK, n_steps=3, random_state=0),
}


def _state(module):
    return ({name: m.training for name, m in module.named_modules()},
            {name: p.requires_grad for name, p in module.named_parameters()})


@pytest.mark.parametrize("name", ATTACKS)
def test_mixed_modes_come_back_exactly(name):
    """Regression: the attacks' own ``frozen`` reset every submodule to the top module's mode."""
    net = _net().train()
    net[2].eval()  # the user switched dropout off while the rest trains
    net[0].weight.requires_grad_(False)  # and froze one parameter
    before = _state(net)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ATTACKS[name](net, X, y)
    assert _state(net) == before
    assert all(p.grad is None for p in net.parameters())


@pytest.mark.parametrize("name", ATTACKS)
def test_gradients_come_from_the_adapter(name, monkeypatch):
    """Every attack takes its gradient through ``ModelAdapter`` (no hand-made gradient)."""
    calls = []
    # PGD, FGSM and C&W differentiate the adapter's logits; the patch attack its input gradient
    original = ModelAdapter.input_gradient_fn if name == "patch" else ModelAdapter.feature_fn

    def spy(self, *args, **kwargs):
        calls.append(name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelAdapter, original.__name__, spy)
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ATTACKS[name](_net(), X, y)
    assert calls


@settings(max_examples=20, deadline=None)
@given(X=arrays(np.float32, (5, 8), elements=st.floats(0, 1, width=32)),
       eps=st.floats(0, 0.5), seed=st.integers(0, 5))
def test_fgsm_is_one_signed_step_along_the_adapter_gradient(X, eps, seed):
    net = _net(seed)
    y = np.arange(5) % 3
    grad = as_model(net).input_gradient(
        X, lambda z, t: F.cross_entropy(z, t, reduction="sum"), targets=y)
    expected = np.clip(X + np.float32(eps) * np.sign(grad), 0, 1)
    np.testing.assert_array_equal(fgsm(net, X, y, eps), expected)


@settings(max_examples=20, deadline=None)
@given(X=arrays(np.float64, (4, 8), elements=st.floats(-1, 2)),
       mask=arrays(bool, 8).filter(lambda m: m.any()), method=st.sampled_from(["pgd", "nag"]))
def test_patch_attack_changes_only_the_patch_and_stays_in_the_box(X, mask, method):
    out = patch_attack(_net(), X, [0, 1, 2, 0], mask, method=method, n_steps=4, step_size=0.1,
                       clip=(-1.0, 2.0), random_state=0)
    np.testing.assert_array_equal(out[:, ~mask], X[:, ~mask])
    assert out.min() >= -1.0 and out.max() <= 2.0


def test_a_fitted_skorch_classifier_and_vae_classifier_are_attacked_alike():
    """Through ``as_model`` a skorch net or a VAEClassifier needs no protocol of its own."""
    X, y = _data(60)
    torch.manual_seed(0)
    skorch_net = NeuralNetClassifier(_net(), criterion=nn.CrossEntropyLoss, max_epochs=2,
                                     train_split=None, verbose=0).fit(X, y)
    out = patch_attack(skorch_net, X, y, MASK, n_steps=3, random_state=0)
    np.testing.assert_array_equal(out[:, ~MASK], X[:, ~MASK])
    clf = VAEClassifier(n_latent=2, hidden_layer_sizes=(8,), max_epochs=20, lr=1e-2, batch_size=16,
                        random_state=0, device="cpu").fit(X, np.array(["a", "b", "c"])[y])
    target = np.searchsorted(clf.classes_, clf.predict(X))
    X_adv = fgsm(clf, X, clf.predict(X), 0.1)  # labels in the estimator's classes_
    assert np.abs(X_adv - X).max() <= 0.1 + 1e-6
    rows = np.arange(len(X))
    # the attack lowers the probability of the predicted class, as seen by predict_proba
    assert np.all(clf.predict_proba(X_adv)[rows, target] < clf.predict_proba(X)[rows, target])


def test_the_families_use_no_private_protocol_nor_model_type_branch():
    root = pathlib.Path(geolearn.__file__).parent
    families = ("adversarial", "generative", "ood", "disentanglement", "meta_learning")
    assert [b for b in _model_type_branches(root) if b.startswith(families)] == []
    assert [i for i in _private_imports() if i[0].startswith(families)] == []
