"""Unit tests of OnManifoldPGD on two concentric circles and a linear classifier."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNetClassifier

from geolearn.datasets import make_circle_points
from geolearn.manifold import OnManifoldPGD
from geolearn.models import GradientsUnavailableError
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

FAST = {"cidm_params": {"n_eigenpairs": 20}, "random_state": 0}


def _cut_net():
    """Logits (0.5 - x0, x0 - 0.5): class 1 right of x0 = 0.5."""
    net = torch.nn.Linear(2, 2)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
        net.bias.copy_(torch.tensor([0.5, -0.5]))
    return net


@pytest.fixture(scope="module")
def rings():
    X1, t1 = make_circle_points(150, grid=True, return_params=True)
    X2, t2 = make_circle_points(150, radius=2.0, grid=True, return_params=True)
    X = np.r_[X1, X2]
    y = np.r_[np.zeros(150, int), np.ones(150, int)]
    return X, y, np.r_[t1, t2]


@pytest.fixture(scope="module")
def starts():
    t = np.array([1.8, 2.3, -1.8, -2.3])  # within a quarter turn of the cut at +-1.05 rad
    return np.c_[np.cos(t), np.sin(t)]


@pytest.mark.parametrize("params", [
    {"tangent": "jacobian", "intrinsic_dim": 1},
    {"tangent": "local_pca", "intrinsic_dim": 1},
    {"tangent": "sec", "sec_params": {"n_frame": 6}},
    {"tangent": "jacobian", "intrinsic_dim": 1, "direction": "pullback"},
    {"tangent": "jacobian", "intrinsic_dim": 1, "update_tangent": True, "n_projection_iter": 2},
])
def test_attack_crosses_the_boundary_on_the_circle(rings, starts, params):
    X, y, _ = rings
    attack = OnManifoldPGD(_cut_net(), **FAST, **params).fit(X, y)
    res = attack.generate(starts, y=np.zeros(4, int))
    assert res.success.all() and (res.y_pred == 1).all()
    assert np.all(res.X_adv[:, 0] > 0.5)  # across the cut
    assert np.abs(np.linalg.norm(res.X_adv, axis=1) - 1).max() < 0.02  # on the class manifold
    assert np.all(res.n_steps >= 1) and np.all(res.manifold_residual < 0.02)
    assert np.all(res.tangent_rank == 1)
    assert np.all((res.tangent_fraction > 0) & (res.tangent_fraction <= 1 + 1e-9))
    np.testing.assert_allclose(res.distance, np.linalg.norm(res.X_adv - starts, axis=1))
    assert set(np.unique(res.step_size)) <= set(attack.step_sizes_[0])


def test_fixed_tangent_limits_the_reach(rings):
    """With the tangent fixed at the start, motion stops a quarter turn away (sticky point)."""
    X, y, _ = rings
    start = np.array([[-1.0, 0.0]])  # boundary at +-1.05 rad from x0 = 0.5, 2.09 rad away
    fixed = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, n_steps=60,
                          **FAST).fit(X, y)
    res = fixed.generate(start, y=[0])
    assert not res.success[0] and res.n_steps[0] < 60  # stalled, reported, not raised
    moving = fixed.set_params(update_tangent=True).generate(start, y=[0])
    assert moving.success[0]


def test_misclassified_start_and_default_labels(rings):
    X, y, _ = rings
    attack = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    outer = np.array([[-2.0, 0.0], [0.0, -2.0]])  # class 1 ring, predicted 0
    res = attack.generate(outer, y=[1, 1])
    assert res.success.all() and (res.n_steps == 0).all()
    # y=None: the model's prediction is the source class
    x = np.array([[-0.3, 0.95]])
    res = attack.generate(x)
    assert res.success[0] and res.y_pred[0] == 1
    assert attack.score(x, [0]) == 1.0
    np.testing.assert_allclose(attack.transform(x), res.X_adv)


def test_intrinsic_coordinates(rings, starts):
    X, y, t = rings
    attack = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, **FAST)
    attack.fit(X, y, intrinsic_params=np.c_[np.cos(t), np.sin(t)])
    res = attack.generate(starts, y=np.zeros(4, int))
    recovered = np.arctan2(res.intrinsic[:, 1], res.intrinsic[:, 0])
    true = np.arctan2(res.X_adv[:, 1], res.X_adv[:, 0])
    assert np.abs(np.angle(np.exp(1j * (recovered - true)))).max() < 0.05


def test_local_patch_and_clip(rings, starts):
    X, y, _ = rings
    attack = OnManifoldPGD(_cut_net(), tangent="sec", local_patch=60, clip=(-0.9, 0.9),
                           cidm_params={"n_eigenpairs": 24}, sec_params={"n_frame": 6},
                           random_state=0).fit(X, y)
    res = attack.generate(starts[:2], y=[0, 0])
    assert res.success.all()
    assert np.abs(res.X_adv).max() <= 0.9


def test_skorch_and_mlp_through_the_adapter(rings, starts):
    X, y, _ = rings
    Xt = X.astype(np.float32)
    labels = (X[:, 0] > 0.5).astype(np.int64)
    net = NeuralNetClassifier(_cut_net(), max_epochs=0, train_split=None, verbose=0,
                              criterion=torch.nn.CrossEntropyLoss)
    net.fit(Xt, labels)
    res = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y).generate(
        starts, y=np.zeros(4, int))
    assert res.success.all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((8,), max_iter=200, random_state=0).fit(X, labels)
    attack = OnManifoldPGD(mlp, loss="nll", tangent="jacobian", intrinsic_dim=1, n_steps=30,
                           **FAST)
    res = attack.fit(X, y).generate(starts[:2], y=[0, 0])
    assert np.all(res.y_pred == mlp.predict(res.X_adv))
    assert np.all(res.success == (mlp.predict(res.X_adv) != 0))


def test_sklearn_integration(rings):
    X, y, _ = rings
    est = OnManifoldPGD(_cut_net(), step_size=0.2, n_steps=5, tangent="jacobian",
                        intrinsic_dim=1, cidm_params={"n_eigenpairs": 10}, random_state=0)
    idx = np.random.default_rng(0).permutation(len(X))[:80]
    search = check_pipeline_gridsearch_pickle(est, X[idx], y[idx],
                                              param_grid={"step_size": [0.1, 0.3]})
    assert 0 <= search.best_score_ <= 1


def test_bad_inputs(rings):
    X, y, _ = rings
    est = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, **FAST)
    check_bad_inputs(est, X, y, cases=("nan", "inf", "ndim", "unfitted"))
    with pytest.raises(GradientsUnavailableError, match="needs gradients"):
        OnManifoldPGD(SVC().fit(X, y)).fit(X, y)
    with pytest.raises(ValueError, match="image_shape"):
        est.set_params(image_shape=(1, 3, 1)).fit(X, y)
    est.set_params(image_shape=None)
    with pytest.raises(ValueError, match="class 1 has 5 samples"):
        est.fit(X[:155], y[:155])
    with pytest.raises(ValueError, match="intrinsic_dim=3"):
        OnManifoldPGD(_cut_net(), intrinsic_dim=3).fit(X, y)
    with pytest.raises(ValueError, match="intrinsic_params has 3 rows"):
        est.fit(X, y, intrinsic_params=np.zeros(3))
    est.fit(X, y)
    with pytest.raises(ValueError, match="not seen in fit"):
        est.generate(X[:2], y=[0, 5])
    with pytest.raises(ValueError, match="features"):
        est.generate(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="step_size"):
        est.set_params(step_size=[0.2, 0.1]).fit(X, y)


def test_images_are_folded_for_the_model(rings):
    X, y, _ = rings

    class ImageNet(torch.nn.Module):
        def forward(self, x):
            assert x.shape[1:] == (1, 2, 1)
            return _cut_net()(x.flatten(1))

    attack = OnManifoldPGD(ImageNet(), image_shape=(1, 2, 1), tangent="jacobian",
                           intrinsic_dim=1, **FAST).fit(X.reshape(-1, 1, 2, 1), y)
    res = attack.generate(np.array([[-0.5, 0.87]]), y=[0])
    assert res.success[0] and res.X_adv.shape == (1, 2)


def _mixed_state_net():
    """The cut net behind dropout, with mixed train/eval modes and requires_grad flags."""
    net = torch.nn.Sequential(torch.nn.Dropout(0.5), _cut_net(), torch.nn.Dropout(0.5))
    net.train()
    net[1].eval()
    net[2].eval()  # the root and the first dropout train, the rest evaluates
    net[1].weight.requires_grad_(False)  # the weight frozen by the user, the bias trainable
    return net


def test_generate_leaves_every_mode_and_gradient_flag_as_it_was(rings, starts):
    """Regression (#14): the attack freezes the model through ModelAdapter.frozen(): eval mode
    and no parameter gradients while it runs, each submodule and parameter restored after."""
    X, y, _ = rings
    net = _mixed_state_net()
    modes = [m.training for m in net.modules()]
    flags = [p.requires_grad for p in net.parameters()]
    attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    res = attack.generate(starts, y=np.zeros(4, int))
    assert [m.training for m in net.modules()] == modes == [True, True, False, False]
    assert [p.requires_grad for p in net.parameters()] == flags == [False, True]
    assert all(p.grad is None for p in net.parameters())  # only input gradients were taken
    # dropout was off during the attack: the result is that of the cut net alone
    ref = OnManifoldPGD(_cut_net(), tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    expected = ref.generate(starts, y=np.zeros(4, int))
    for key in ("X_adv", "success", "n_steps", "step_size", "tangent_fraction"):
        np.testing.assert_array_equal(res[key], expected[key])


_FITTED = {}


@settings(max_examples=12, deadline=None)
@given(modes=st.lists(st.booleans(), min_size=4, max_size=4),
       flags=st.lists(st.booleans(), min_size=2, max_size=2),
       rows=st.integers(1, 4), pullback=st.booleans())
def test_any_mixed_state_is_restored_property(rings, starts, modes, flags, rows, pullback):
    """Whatever the modes and flags, generate leaves them as they were (and never fills .grad)."""
    if "attack" not in _FITTED:
        X, y, _ = rings
        _FITTED["attack"] = OnManifoldPGD(_mixed_state_net(), tangent="jacobian",
                                          intrinsic_dim=1, n_steps=10, **FAST).fit(X, y)
    attack = _FITTED["attack"].set_params(direction="pullback" if pullback else "tangent")
    net = attack.estimator
    for m, training in zip(net.modules(), modes):
        m.training = training
    for p, flag in zip(net.parameters(), flags):
        p.requires_grad_(flag)
    attack.generate(starts[:rows], y=np.zeros(rows, int))
    assert [m.training for m in net.modules()] == modes
    assert [p.requires_grad for p in net.parameters()] == flags
    assert all(p.grad is None for p in net.parameters())


@pytest.mark.parametrize("fail_at_call", [1, 2])
def test_an_error_inside_the_attack_restores_the_model(rings, starts, fail_at_call):
    """A model that raises (in a prediction, or in a gradient step) is still restored."""
    X, y, _ = rings
    net = _mixed_state_net()
    attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    calls = []

    def explode(module, inputs, output):
        calls.append(torch.is_grad_enabled())
        if len(calls) == fail_at_call:
            raise RuntimeError("boom")

    net[1].register_forward_hook(explode)
    with pytest.raises(RuntimeError, match="boom"):
        attack.generate(starts, y=np.zeros(4, int))
    assert calls[-1] == (fail_at_call == 2)  # a prediction first, then a gradient step
    assert [m.training for m in net.modules()] == [True, True, False, False]
    assert [p.requires_grad for p in net.parameters()] == [False, True]


def test_an_unfitted_estimator_is_fitted_by_fit(rings, starts):
    """Regression (#14): the fitting policy of geolearn.models.fit_or_use. An unfitted
    classifier is cloned and fitted on X, y (it used to raise NotFittedError); the given
    estimator stays unfitted."""
    X, y, _ = rings
    mlp = MLPClassifier((8,), max_iter=300, random_state=0)
    attack = OnManifoldPGD(mlp, loss="nll", tangent="jacobian", intrinsic_dim=1, n_steps=10,
                           **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MLP's convergence warning
        attack.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(mlp)
    assert attack.estimator_ is not mlp and attack.model_.estimator is attack.estimator_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clone(mlp).fit(X.astype(np.float32), y)
    np.testing.assert_array_equal(attack.estimator_.coefs_[0], expected.coefs_[0])
    res = attack.generate(starts, y=[0, 0, 0, 0])
    np.testing.assert_array_equal(res.y_pred, attack.estimator_.predict(res.X_adv))


def test_an_unfitted_skorch_net_is_fitted_and_a_frozen_estimator_used_as_is(rings, starts):
    X, y, _ = rings
    net = NeuralNetClassifier(_cut_net, max_epochs=2, train_split=None, verbose=0,
                              criterion=torch.nn.CrossEntropyLoss)
    attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    assert not getattr(net, "initialized_", False) and attack.estimator_.initialized_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((8,), max_iter=200, random_state=0).fit(X, (X[:, 0] > 0.5))
    frozen = FrozenEstimator(mlp)
    attack = OnManifoldPGD(frozen, loss="nll", tangent="jacobian", intrinsic_dim=1,
                           n_steps=10, **FAST)
    fitted = clone(attack).fit(X, y)  # FrozenEstimator survives clone: never refitted
    assert fitted.estimator_ is frozen and fitted.model_.estimator is mlp
    attack.fit(X, y)
    assert attack.estimator_ is frozen and attack.model_.estimator is mlp
    res = attack.generate(starts[:2], y=[0, 0])
    np.testing.assert_array_equal(res.y_pred, mlp.predict(res.X_adv))


def test_fit_leaves_a_torch_model_as_it_was(rings):
    """What the estimator check on overwritten parameters cannot see (joblib hashes a module
    and its deepcopy differently): fit changes neither the weights nor the mode."""
    X, y, _ = rings
    net = _cut_net().train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    attack = OnManifoldPGD(net, tangent="jacobian", intrinsic_dim=1, **FAST).fit(X, y)
    assert attack.estimator_ is net and net.training
    for k, v in net.state_dict().items():
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)
