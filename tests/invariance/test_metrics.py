import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from torch import nn

from geolearn.invariance import (
    distribution_invariance,
    integrated_gradients,
    jacobian_sigma_max,
    logit_invariance,
    make_invariance_scorer,
    metrics,
    normalized_logit_invariance,
    refit_best_subject_to,
    saliency_invariance,
    saliency_map,
)
from geolearn.invariance._saliency import postprocess_saliency
from geolearn.models import GradientsUnavailableError, ModelAdapter, as_model


def small_net(d=36, k=3, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, k))


@pytest.fixture
def X():
    return np.random.default_rng(0).random((7, 1, 6, 6), dtype=np.float32)


def brute_force(net, X, name):
    """LI, DI, NLI by explicit loops over samples and non-identity rotations."""
    li, di, nli = [], [], []
    with torch.no_grad():
        for x in torch.tensor(X):
            f = net(x[None])[0].double()
            for k in (1, 2, 3):
                fg = net(torch.rot90(x, k, dims=(-2, -1))[None])[0].double()
                li.append(0.5 * float(((f - fg) ** 2).sum()))
                nli.append(float(((f - fg) ** 2).sum() / ((f**2).sum() + 1e-8)))
                u, q = torch.softmax(f, 0), torch.softmax(fg, 0)
                di.append(float((u * (u.log() - q.log())).sum()))
    return {"LI": np.mean(li), "DI": np.mean(di), "NLI": np.mean(nli)}[name]


@pytest.mark.parametrize("fn, name", [(logit_invariance, "LI"), (distribution_invariance, "DI"),
                                      (normalized_logit_invariance, "NLI")])
def test_output_metrics_match_brute_force(X, fn, name):
    net = small_net()
    assert fn(net, X, "rot4") == pytest.approx(brute_force(net, X, name), rel=1e-5)
    per_pair = fn(net, X, "rot4", reduction="none", batch_size=3)
    assert per_pair.shape == (7, 3) and np.all(per_pair >= 0)
    assert per_pair.mean() == pytest.approx(fn(net, X, "rot4"), rel=1e-5)


def test_flat_input_with_image_shape_gives_the_same_values(X):
    net = small_net()
    flat = X.reshape(len(X), -1)
    assert logit_invariance(net, flat, "rot4", image_shape=(6, 6)) == pytest.approx(
        logit_invariance(net, X, "rot4"), rel=1e-12)
    with pytest.raises(ValueError, match="image_shape"):
        logit_invariance(net, flat, "rot4")


def test_metrics_accept_callables_skorch_and_sklearn_estimators(X):
    from skorch import NeuralNetClassifier

    net = small_net()
    ref = logit_invariance(net, X, "rot4")
    assert logit_invariance(lambda x: net(x), X, "rot4") == pytest.approx(ref, rel=1e-12)
    y = np.arange(7) % 3
    sk = NeuralNetClassifier(small_net, max_epochs=1, train_split=None).fit(X, y)
    assert logit_invariance(sk, X, "rot4") == pytest.approx(
        logit_invariance(sk.module_, X, "rot4"), rel=1e-12)
    # a linear model: LI and DI through decision_function (the "auto" response)
    flat = X.reshape(7, -1)
    lr = LogisticRegression().fit(flat, y)
    li = logit_invariance(lr, flat, "rot4", image_shape=(6, 6))
    rot = np.rot90(X, 1, axes=(2, 3)).reshape(7, -1)
    d = lr.decision_function(flat) - lr.decision_function(rot)
    assert li > 0 and np.isfinite(distribution_invariance(lr, flat, "rot4", image_shape=(6, 6)))
    assert logit_invariance(lr, flat, "rot4", image_shape=(6, 6), reduction="none")[:, 0] == \
        pytest.approx(0.5 * (d**2).sum(1))
    # a black box: SI and the Jacobian impossible
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(flat, y)
    with pytest.raises(TypeError, match="gradients"):
        saliency_invariance(forest, flat, "rot4", y, image_shape=(6, 6))
    with pytest.raises(GradientsUnavailableError):
        jacobian_sigma_max(forest, flat)


def test_mlp_classifier_is_converted_and_differentiable(X):
    flat = X.reshape(7, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((5,), max_iter=5, random_state=0).fit(flat, np.arange(7) % 3)
    si = saliency_invariance(mlp, flat, "rot4", np.arange(7) % 3, image_shape=(6, 6), steps=4)
    assert 0 <= si <= 1


@given(st.integers(0, 2**16), st.sampled_from(["LI", "DI", "NLI"]))
def test_exactly_invariant_model_has_zero_output_errors(seed, name):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4, 1, 6, 6))
    W = torch.tensor(rng.normal(size=(36, 3)), dtype=torch.float32)  # callables run in float32

    def f(x):  # invariant: pools a linear map over the orbit
        return torch.stack([torch.rot90(x, k, dims=(-2, -1)).flatten(1) @ W
                            for k in range(4)]).amax(0)

    fn = {"LI": logit_invariance, "DI": distribution_invariance,
          "NLI": normalized_logit_invariance}[name]
    assert fn(f, X, "rot4") < 1e-20


def test_output_metric_errors(X):
    net = small_net()
    with pytest.raises(ValueError, match="reduction"):
        logit_invariance(net, X, "rot4", reduction="sum")
    with pytest.raises(ValueError, match="only the identity"):
        logit_invariance(net, X, [lambda x: x])
    Xn = X.copy()
    Xn[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        logit_invariance(net, Xn, "rot4")


def test_integrated_gradients_exact_for_linear_model():
    """Spec E2(c): IG of a linear function is exact for any number of steps."""
    lin = nn.Linear(12, 4).double()
    X = np.random.default_rng(1).normal(size=(5, 12))
    for steps in (1, 3, 50):
        ig = integrated_gradients(lin, X, [0, 1, 2, 3, 0], steps=steps, image_shape=(3, 4))
        expected = X * lin.weight.detach().numpy()[[0, 1, 2, 3, 0]]
        np.testing.assert_allclose(ig, expected, rtol=1e-12, atol=1e-12)


def test_integrated_gradients_midpoint_rule_and_baseline():
    # f = sum x^2 (one output): IG_i = (x_i - b_i) * (x_i + b_i) exactly under the midpoint rule
    def f(x):
        return (x.flatten(1) ** 2).sum(1, keepdim=True)

    X = np.random.default_rng(2).normal(size=(3, 1, 2, 2))
    b = np.full((1, 2, 2), 0.3)
    ig = integrated_gradients(f, X, 0, steps=2, baseline=b)  # a callable runs in float32
    np.testing.assert_allclose(ig, (X - 0.3) * (X + 0.3), rtol=1e-5)
    np.testing.assert_allclose(integrated_gradients(f, X, 0, steps=2, baseline=0.3), ig)
    with pytest.raises(ValueError, match="baseline"):
        integrated_gradients(f, X, 0, baseline=np.zeros(3))
    with pytest.raises(ValueError, match="steps"):
        integrated_gradients(f, X, 0, steps=0)


def test_smoothing_commutes_with_the_group():
    A = torch.rand(2, 6, 6, dtype=torch.float64)
    rot = lambda m: torch.rot90(m, 1, dims=(-2, -1))  # noqa: E731
    shift = lambda m: torch.roll(m, 2, dims=-1)  # noqa: E731
    torch.testing.assert_close(postprocess_saliency(rot(A)), rot(postprocess_saliency(A)))
    torch.testing.assert_close(postprocess_saliency(shift(A), padding="circular_x"),
                               shift(postprocess_saliency(A, padding="circular_x")))
    assert not torch.allclose(postprocess_saliency(shift(A)), shift(postprocess_saliency(A)))


def test_saliency_invariance_is_one_for_an_invariant_model_and_lower_otherwise(X):
    W = torch.randn(36, 3)

    def invariant(x):
        return torch.stack([torch.rot90(x, k, dims=(-2, -1)).flatten(1) @ W
                            for k in range(4)]).amax(0)

    si, details = saliency_invariance(invariant, X, "rot4", np.arange(7) % 3, steps=10,
                                      return_details=True)
    assert si == pytest.approx(1.0, abs=1e-6)
    assert details.maps.shape == (7, 4, 6, 6) and details.per_pair.shape == (7, 3)
    assert saliency_invariance(small_net(), X, "rot4", np.arange(7) % 3, steps=10) < 0.99


def test_saliency_map_realignment_uses_the_inverse():
    """A model reading one fixed pixel: realigned maps of the orbit land on the same pixel
    only if g^-1 (not g) is applied to the map of gx."""
    def corner(x):
        v = x[:, 0, 0, 1]
        return torch.stack([v, -v], 1)

    X = np.random.default_rng(3).random((2, 1, 5, 5)) + 0.5
    _, d = saliency_invariance(corner, X, "rot4", [0, 0], steps=4, sigma=1e-3,
                               return_details=True)
    # m(gx) lights up pixel (0, 1) of gx = pixel g^-1 (0, 1) of x; after g^-1 alignment the
    # map of every element must sit on the pixel of x that moved to (0, 1)
    for k in range(4):
        src = np.unravel_index(np.argmax(d.maps[0, k]), (5, 5))
        moved = np.zeros((5, 5))
        moved[src] = 1
        assert np.rot90(moved, k)[0, 1] == 1


def test_saliency_degenerate_pairs_and_errors(X):
    def zero(x):
        return x.flatten(1)[:, :3] * 0

    with pytest.warns(UserWarning, match="degenerate"):
        si, d = saliency_invariance(zero, X, "rot4", None, steps=2, return_details=True)
    assert np.isnan(si) and d.n_degenerate == 21
    net = small_net()
    with pytest.raises(ValueError, match="one label per sample"):
        saliency_invariance(net, X, "rot4", [0, 1], steps=2)
    with pytest.raises(ValueError, match="target must be 'label' or 'pred'"):
        saliency_invariance(net, X, "rot4", target="true")
    with pytest.raises(ValueError, match="threshold must be in"):
        saliency_map(net, X, 0, threshold=0.0)
    with pytest.warns(UserWarning, match="baseline is not invariant"):
        saliency_invariance(net, X, "rot4", steps=2, baseline=np.arange(36.0).reshape(1, 6, 6))


def test_jacobian_sigma_max_matches_svd(X):
    net = small_net().double()
    s = jacobian_sigma_max(net, X.astype(np.float64), reduction="none", batch_size=3)
    x = torch.tensor(X, dtype=torch.float64)
    for i in range(len(X)):
        J = torch.autograd.functional.jacobian(lambda v: net(v[None])[0], x[i]).reshape(3, -1)
        assert s[i] == pytest.approx(float(torch.linalg.matrix_norm(J, 2)), rel=1e-10)
    assert jacobian_sigma_max(net, X) == pytest.approx(s.mean(), rel=1e-5)
    assert jacobian_sigma_max(net, X, reduction="median") == pytest.approx(np.median(s), rel=1e-5)


def test_scorers_and_refit_rule(X):
    net = small_net()
    y = np.arange(7) % 3
    li = make_invariance_scorer("LI", group="rot4")
    assert li(net, X, y) == pytest.approx(-logit_invariance(net, X, "rot4"))
    si = make_invariance_scorer("SI", group="rot4", steps=4)
    assert si(net, X, y) == pytest.approx(saliency_invariance(net, X, "rot4", y, steps=4))
    assert make_invariance_scorer("sigma_max")(net, X) == pytest.approx(
        -jacobian_sigma_max(net, X))
    with pytest.raises(ValueError, match="group_"):
        make_invariance_scorer("LI")(net, X, y)
    with pytest.raises(ValueError, match="metric"):
        make_invariance_scorer("XI")
    pick = refit_best_subject_to("acc", "SI", 0.95)
    assert pick({"mean_test_acc": [0.99, 0.9, 0.95], "mean_test_SI": [0.2, 0.97, 0.96]}) == 2
    with pytest.raises(ValueError, match="no candidate"):
        pick({"mean_test_acc": [0.9], "mean_test_SI": [0.5]})


# -- the one door to models (issue #14) -------------------------------------------------------


def _rotations(flat, side):
    images = flat.reshape(len(flat), 1, side, side)
    return [np.rot90(images, k, axes=(2, 3)).reshape(len(flat), -1) for k in (1, 2, 3)]


def _kl_of_proba(p, q):
    return np.where(p > 0, p * (np.log(p) - np.log(np.clip(q, 1e-12, 1))), 0).sum(1)


def test_black_box_without_decision_function_is_seen_through_centred_log_probabilities(X):
    """Regression: LI needed decision_function (TypeError for a forest); the "auto" response
    now gives centred log-probabilities, and DI their softmax, i.e. predict_proba."""
    flat = X.reshape(7, -1).astype(np.float64)
    y = np.arange(7) % 3
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(flat, y)
    assert as_model(forest).response == "clr_proba"

    def clr(p):
        logp = np.log(np.clip(p, 1e-12, 1))
        return logp - logp.mean(1, keepdims=True)

    p0 = forest.predict_proba(flat)
    li = [0.5 * ((clr(p0) - clr(forest.predict_proba(r))) ** 2).sum(1) for r in _rotations(flat, 6)]
    got = logit_invariance(forest, flat, "rot4", image_shape=(6, 6), reduction="none")
    np.testing.assert_allclose(got, np.stack(li, 1), rtol=1e-12, atol=1e-12)
    p0 = np.clip(p0, 1e-12, 1)
    p0 /= p0.sum(1, keepdims=True)
    di = [_kl_of_proba(p0, forest.predict_proba(r)) for r in _rotations(flat, 6)]
    got = distribution_invariance(forest, flat, "rot4", image_shape=(6, 6), reduction="none")
    np.testing.assert_allclose(got, np.stack(di, 1), rtol=1e-9, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([2, 3]))
def test_distribution_invariance_of_a_logistic_black_box_is_the_kl_of_predict_proba(seed, k):
    """DI applies softmax to the black box's decision_function: for logistic regression that
    is predict_proba, binary (one decision column = log-odds) and multinomial alike."""
    rng = np.random.default_rng(seed)
    flat = rng.normal(size=(12, 16))
    lr = LogisticRegression().fit(flat, np.arange(12) % k)
    p0 = lr.predict_proba(flat)
    expected = np.stack([_kl_of_proba(p0, lr.predict_proba(r)) for r in _rotations(flat, 4)], 1)
    got = distribution_invariance(lr, flat, "rot4", image_shape=(4, 4), reduction="none")
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_single_output_models_are_read_as_binary_log_odds(X):
    """A one-column output ``f`` is the log-odds of class 1: u = (sigmoid(-f), sigmoid(f))."""
    net = small_net(k=1)
    with torch.no_grad():
        f = net(torch.tensor(X)).double().numpy()[:, 0]
        fg = net(torch.rot90(torch.tensor(X), 1, dims=(-2, -1))).double().numpy()[:, 0]

    def sig(z):
        return 1 / (1 + np.exp(-z))

    u, q = np.stack([sig(-f), sig(f)], 1), np.stack([sig(-fg), sig(fg)], 1)
    got = distribution_invariance(net, X, "rot4", reduction="none")[:, 0]
    np.testing.assert_allclose(got, (u * (np.log(u) - np.log(q))).sum(1), rtol=1e-9)
    assert np.all(got > 0)


class _ModuleOwner(BaseEstimator):
    """An estimator exposing a fitted torch ``module_`` (no skorch ``net_``)."""

    def __init__(self, module=None):
        self.module = module

    def fit(self, X=None, y=None):
        self.module_ = self.module
        return self


def test_every_model_kind_reaches_the_metrics_through_as_model(X):
    """Regression: metrics had their own routes (``net_`` special case, a private wrapper of
    callables); every model now goes through ``as_model`` and gives the same numbers."""
    net = small_net()
    ref = {fn: fn(net, X, "rot4") for fn in (logit_invariance, distribution_invariance)}
    y = np.arange(7) % 3
    for model in (_ModuleOwner(net).fit(), as_model(net), lambda x: net(x)):
        for fn, value in ref.items():
            assert fn(model, X, "rot4") == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(saliency_map(model, X, y, steps=3),
                                   saliency_map(net, X, y, steps=3), rtol=1e-6, atol=1e-12)
    assert not hasattr(metrics, "_adapter") and not hasattr(metrics, "_Callable")


def test_integrated_gradients_go_through_the_adapter_and_leave_the_model_as_it_was(monkeypatch):
    """Regression: IG computed input gradients by hand under ``adapter.eval_mode()`` (gone);
    it now uses ``ModelAdapter.input_gradient`` inside ``frozen()``: dropout is off, no
    parameter gradient is touched, and each submodule's mode is restored."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(36, 8), nn.Dropout(0.5), nn.Tanh(),
                        nn.Linear(8, 3))
    net.train()
    net[2].eval()
    net[4].weight.requires_grad_(False)
    X = np.random.default_rng(0).random((5, 1, 6, 6), dtype=np.float32)
    calls = []
    original = ModelAdapter.input_gradient

    def spy(self, *args, **kwargs):
        calls.append(self.module.training)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelAdapter, "input_gradient", spy)
    a = integrated_gradients(net, X, [0, 1, 2, 0, 1], steps=4, batch_size=2)
    assert len(calls) == 4 * 3 and not any(calls)  # steps x batches, all in eval mode
    b = integrated_gradients(net, X, [0, 1, 2, 0, 1], steps=4, batch_size=2)
    np.testing.assert_array_equal(a, b)  # dropout off: deterministic
    assert [m.training for m in net] == [True, True, False, True, True]
    assert [p.requires_grad for p in net.parameters()] == [True, True, False, True]
    assert all(p.grad is None for p in net.parameters())
