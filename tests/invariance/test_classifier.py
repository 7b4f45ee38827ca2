import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import EarlyStopping
from torch import nn

from geolearn.datasets import make_transforming_mnist
from geolearn.invariance import (
    FiniteGroup,
    InvariantClassifier,
    integrated_gradients,
    make_invariance_scorer,
    saliency_map,
)
from tests.helpers import (
    assert_message,
    check_bad_inputs,
    check_pipeline_gridsearch_pickle,
)

FAST = dict(hidden_layer_sizes=(16,), max_epochs=3, batch_size=64, device="cpu",
            random_state=0)


@pytest.fixture(scope="module")
def data():
    X, y = make_transforming_mnist(group="rot4", random_state=0, return_X_y=True)
    return X[:240], y[:240]


def identity(x):
    return x


def flip_lr(x):
    return x.flip(-1)


class TinyCNN(nn.Module):
    def __init__(self, n_classes, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(1, channels, 3)
        self.out = nn.Linear(channels * 10 * 10, n_classes)

    def forward(self, x):
        return self.out(torch.relu(self.conv(x)).flatten(1))


def test_fitted_attributes_and_outputs(data):
    X, y = data
    clf = InvariantClassifier(**FAST).fit(X, y)
    assert clf.image_shape_ == (1, 12, 12) and clf.n_features_in_ == 144
    assert clf.group_.order == 4 and clf.module_ is clf.net_.module_
    assert clf.history_ is clf.net_.history and len(clf.history_[:, "train_loss"]) == 3
    assert clf.n_params_ == 144 * 16 + 16 + 16 * 9 + 9
    assert clf.mean_ == pytest.approx(X.mean(), rel=1e-6)
    assert clf.std_ == pytest.approx(X.std(), rel=1e-5)
    assert len(clf.net_.history) == 3
    proba, logits = clf.predict_proba(X), clf.decision_function(X)
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-12)
    with torch.no_grad():
        ref = clf.module_((torch.tensor(X) - X.mean()) * 0 + torch.tensor(X)).numpy()
    np.testing.assert_allclose(logits, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[logits.argmax(1)])
    # predict never augments: repeated calls agree
    np.testing.assert_array_equal(clf.predict_proba(X), proba)


def test_module_normalises_with_global_scalar_statistics(data):
    X, y = data
    clf = InvariantClassifier(**FAST).fit(X, y)
    body = clf.module_.model
    with torch.no_grad():
        ref = body((torch.tensor(X) - clf.mean_) / clf.std_).numpy()
    np.testing.assert_allclose(clf.decision_function(X), ref, rtol=1e-5, atol=1e-5)
    raw = InvariantClassifier(normalize=None, **FAST).fit(X, y)
    assert (raw.mean_, raw.std_) == (0.0, 1.0)


def test_weight_tied_model_is_exactly_invariant(data):
    X, y = data
    wt = InvariantClassifier(weight_tying=True, **FAST).fit(X, y)
    rot = np.rot90(X, 1, axes=(2, 3))
    np.testing.assert_array_equal(wt.decision_function(rot), wt.decision_function(X))
    assert wt.logit_invariance(X) == 0.0 and wt.distribution_invariance(X) == 0.0
    assert wt.saliency_invariance(X[:20], y[:20]) == pytest.approx(1.0, abs=1e-9)
    assert wt.n_params_ == 144 * 16 + 16 + 16 * 9 + 9  # tying adds no parameters
    mean_pool = InvariantClassifier(weight_tying=True, group_pool="mean", **FAST).fit(X, y)
    assert mean_pool.logit_invariance(X) < 1e-10


def test_regulariser_lowers_logit_invariance(data):
    X, y = data
    kw = dict(FAST, max_epochs=8)
    da = InvariantClassifier(**kw).fit(X, y)
    ir = InvariantClassifier(nu=10.0, **kw).fit(X, y)
    assert ir.logit_invariance(X) < 0.2 * da.logit_invariance(X)
    # the two terms of the objective are columns of the history; DA has only the loss
    np.testing.assert_allclose(ir.history_[:, "train_loss"],
                               np.add(ir.history_[:, "ce"], 10.0 * np.array(
                                   ir.history_[:, "invariance"])), rtol=1e-5)
    assert ir.history_[-1, "invariance"] < ir.history_[0, "invariance"]
    assert "invariance" not in da.history_[-1]
    for loss in ("nli", "di"):
        other = InvariantClassifier(nu=10.0, invariance_loss=loss, reg_elements=1, **kw)
        assert other.fit(X, y).distribution_invariance(X) < da.distribution_invariance(X)


def test_same_random_state_reproduces_the_fit(data):
    X, y = data
    a = InvariantClassifier(nu=1.0, **FAST).fit(X, y).predict_proba(X)
    b = InvariantClassifier(nu=1.0, **FAST).fit(X, y).predict_proba(X)
    c = InvariantClassifier(nu=1.0, **dict(FAST, random_state=1)).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    state = torch.random.get_rng_state()
    InvariantClassifier(**FAST).fit(X, y)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is left alone


def test_string_labels_flat_input_and_3d_input(data):
    X, y = data
    names = np.array(list("abcdefghi"))[y]
    clf = InvariantClassifier(**FAST).fit(X, names)
    assert set(clf.predict(X)) <= set(names) and clf.classes_.dtype.kind == "U"
    flat = InvariantClassifier(image_shape=(12, 12), **FAST).fit(X.reshape(len(X), -1), names)
    np.testing.assert_allclose(flat.predict_proba(X.reshape(len(X), -1)), clf.predict_proba(X),
                               rtol=1e-5)
    np.testing.assert_allclose(clf.predict_proba(X[:, 0]), clf.predict_proba(X), rtol=1e-6)
    assert clf.saliency_invariance(X[:10], names[:10]) > 0


def test_custom_module_class_and_instance(data):
    X, y = data
    a = InvariantClassifier(module=TinyCNN, nu=1.0, **FAST).fit(X, y)
    assert isinstance(a.module_.model, TinyCNN)
    instance = TinyCNN(9)
    b = InvariantClassifier(module=instance, **FAST).fit(X, y)
    assert b.module_.model is not instance  # deep-copied at fit
    assert np.isfinite(b.logit_invariance(X[:10]))


def test_select_best_restores_the_best_validation_epoch(data):
    X, y = data
    kw = dict(FAST, max_epochs=10, validation_fraction=0.25)
    best = InvariantClassifier(**kw).fit(X, y)
    hist = best.net_.history
    epoch = [h["epoch"] for h in hist if h["valid_acc_best"]][-1]
    short = InvariantClassifier(**dict(kw, max_epochs=epoch, select_best=None)).fit(X, y)
    np.testing.assert_allclose(best.predict_proba(X), short.predict_proba(X), rtol=1e-6)
    if epoch < 10:
        last = InvariantClassifier(**dict(kw, select_best=None)).fit(X, y)
        assert not np.allclose(best.predict_proba(X), last.predict_proba(X))


def test_report_scores_and_spectral_norms(data):
    X, y = data
    clf = InvariantClassifier(**FAST).fit(X, y)
    r = clf.invariance_report(X[:30], y[:30], steps=8)
    assert set(r) == {"accuracy", "transformed_accuracy", "LI", "DI", "NLI", "SI", "sigma_max",
                      "n_degenerate"}
    assert r.accuracy == clf.score(X[:30], y[:30])
    assert r.transformed_accuracy == clf.transformed_score(X[:30], y[:30], random_state=0)
    assert r.SI == pytest.approx(clf.saliency_invariance(X[:30], y[:30], steps=8))
    assert clf.invariance_report(X[:5]).accuracy is None
    # transformed_score equals the score of X moved by the same drawn elements
    g = torch.Generator().manual_seed(int(np.random.RandomState(3).randint(0, 2**31 - 1)))
    gx, _ = clf.group_.apply_random(torch.tensor(X), g)
    assert clf.transformed_score(X, y, random_state=3) == clf.score(gx.numpy(), y)
    norms = clf.layer_spectral_norms()
    assert list(norms) == ["model.fc0", "model.out"]
    W = clf.module_.model.out.weight.detach().double()
    assert norms["model.out"] == pytest.approx(float(torch.linalg.svdvals(W)[0]))
    maps = clf.saliency_maps(X[:4], y[:4], steps=8)
    assert maps.shape == (4, 12, 12) and np.all(maps >= 0)
    t = np.searchsorted(clf.classes_, y[:4])
    np.testing.assert_allclose(maps, saliency_map(clf, X[:4], t, steps=8, baseline=clf.mean_))


def test_ig_baseline_zeros_is_zero_in_the_normalised_space(data):
    X, y = data
    clf = InvariantClassifier(**FAST).fit(X, y)
    t = np.searchsorted(clf.classes_, y[:5])
    raw = integrated_gradients(clf, X[:5], t, steps=10, baseline=clf.mean_)
    normalised = integrated_gradients(clf.module_.model, (X[:5] - clf.mean_) / clf.std_, t,
                                      steps=10)
    np.testing.assert_allclose(raw, normalised, rtol=1e-4, atol=1e-6)


def test_pipeline_gridsearch_clone_pickle(data):
    X, y = data
    flat = X.reshape(len(X), -1)
    clf = InvariantClassifier(image_shape=(12, 12), **dict(FAST, max_epochs=2))
    search = check_pipeline_gridsearch_pickle(clf, flat, y, param_grid={"nu": [0.0, 1.0]},
                                              scoring=make_invariance_scorer("LI"))
    assert np.all(search.cv_results_["mean_test_score"] <= 0)
    fitted = clone(clf).fit(flat, y)
    loaded = pickle.loads(pickle.dumps(fitted))
    assert loaded.logit_invariance(flat) == fitted.logit_invariance(flat)


def test_bad_inputs_through_shared_helper(data):
    X, y = data
    flat = X.reshape(len(X), -1)[:60]
    check_bad_inputs(InvariantClassifier(image_shape=(12, 12), **dict(FAST, max_epochs=1)),
                     flat, y[:60])


def _raises(exc, match, clf, X, y):
    with pytest.raises(exc) as info:
        clf.fit(X, y)
    assert_message(info, *match)


@pytest.mark.parametrize("params, words", [
    (dict(nu=-1.0), ["nu"]),
    (dict(invariance_loss="l2"), ["invariance_loss"]),
    (dict(group_pool="sum"), ["group_pool"]),
    (dict(normalize="pixel"), ["normalize"]),
    (dict(device="tpu"), ["device"]),
    (dict(group="rot8"), ["group"]),
    (dict(hidden_layer_sizes=(16, 0)), ["hidden_layer_sizes"]),
    (dict(weight_tying=True, module=TinyCNN), ["weight_tying", "module"]),
    (dict(group=[identity], nu=1.0), ["nu", "order 1"]),
    (dict(group=[flip_lr]), ["identity"]),
    (dict(reg_elements=4, nu=1.0), ["reg_elements"]),
])
def test_invalid_parameters_raise_naming_them(data, params, words):
    X, y = data
    _raises(ValueError, words, InvariantClassifier(**{**FAST, **params}), X[:20], y[:20])


def test_invalid_data_raise(data):
    X, y = data
    clf = InvariantClassifier(**FAST)
    _raises(ValueError, ["1 class"], clf, X[:20], np.zeros(20))
    _raises(ValueError, ["inconsistent"], clf, X[:20], y[:19])
    _raises(ValueError, ["y is None"], clf, X[:20], None)
    _raises(ValueError, ["image_shape"], clf, X[:20].reshape(20, -1), y[:20])
    _raises(ValueError, ["image_shape"], InvariantClassifier(image_shape=(12, 13)),
            X[:20].reshape(20, -1), y[:20])
    _raises(ValueError, ["square"], clf, X[:20, :, :, :10], y[:20])
    _raises(ValueError, ["pad"], InvariantClassifier(group="xtrans3", **FAST),
            X[:20, :, :, :10], y[:20])
    _raises(ValueError, ["not closed"],
            InvariantClassifier(group=[identity, lambda x: torch.rot90(x, 1, (-2, -1))],
                                **FAST), X[:20], y[:20])
    _raises(ValueError, ["shape"], InvariantClassifier(group=[identity, lambda x: x[..., 1:]],
                                                       **FAST), X[:20], y[:20])


def test_invalid_use_after_fit(data):
    X, y = data
    clf = InvariantClassifier(**FAST).fit(X[:40], y[:40])
    with pytest.raises(ValueError, match="one label per sample"):
        clf.saliency_invariance(X[:10], y[:9])
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:5, :, :, :10])
    with pytest.warns(UserWarning, match="baseline"):
        clf.saliency_invariance(X[:5], y[:5], baseline=np.arange(144.0).reshape(1, 12, 12),
                                steps=2)
    for kwargs, words in [(dict(target="true"), ["target"]), (dict(threshold=0.0), ["threshold"]),
                          (dict(threshold=1.5), ["threshold"]), (dict(steps=0), ["steps"]),
                          (dict(baseline="ones"), ["baseline"])]:
        for method in (clf.saliency_invariance, clf.saliency_maps):
            with pytest.raises(ValueError) as info:
                method(X[:5], y[:5], **kwargs)
            assert_message(info, *words)


@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function",
                                    "logit_invariance", "distribution_invariance",
                                    "normalized_logit_invariance", "saliency_invariance",
                                    "saliency_maps", "jacobian_sigma_max", "invariance_report"])
def test_not_fitted_error(data, method):
    with pytest.raises(NotFittedError):
        getattr(InvariantClassifier(), method)(data[0][:3])
    with pytest.raises(NotFittedError):
        InvariantClassifier().layer_spectral_norms()
    with pytest.raises(NotFittedError):
        InvariantClassifier().transformed_score(data[0][:3], data[1][:3])


@settings(max_examples=10)
@given(st.integers(0, 239), st.integers(0, 143), st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_values_anywhere_are_rejected(data, i, j, value):
    X, y = data
    bad = X.copy().reshape(len(X), -1)
    bad[i, j] = value
    with pytest.raises(ValueError, match="NaN|infinity"):
        InvariantClassifier(**FAST).fit(bad.reshape(X.shape), y)


# -- the shared skorch training route (issue #14) ----------------------------------------------


def test_user_callbacks_run(data):
    """Regression: ``callbacks`` was not a parameter; EarlyStopping must stop training early."""
    X, y = data
    stop = EarlyStopping(monitor="train_loss", patience=1, threshold=1e9)
    clf = InvariantClassifier(callbacks=[stop], **dict(FAST, max_epochs=30)).fit(X, y)
    assert len(clf.net_.history) == 2  # no epoch improves by 1e9: stopped after patience


def test_warm_start_continues_the_fitted_net(data):
    """Regression: a second ``fit`` restarted; with ``warm_start`` it continues the same net."""
    X, y = data
    cold = InvariantClassifier(**FAST).fit(X, y)
    first = cold.net_
    cold.fit(X, y)
    assert cold.net_ is not first and len(cold.net_.history) == 3
    warm = InvariantClassifier(warm_start=True, **FAST).fit(X, y)
    net, module, mean = warm.net_, warm.module_, warm.mean_
    before = {k: v.clone() for k, v in module.state_dict().items()}
    warm.fit(X[:120] * 0.5, y[:120])  # other data: the normalisation of the first fit stays
    assert warm.net_ is net and warm.module_ is module and len(net.history) == 6
    assert warm.mean_ == mean and float(module.standardize.mean) == pytest.approx(mean)
    assert not torch.equal(module.state_dict()["model.out.weight"], before["model.out.weight"])
    with pytest.raises(ValueError, match="first fit did not see"):
        warm.fit(X[:20], np.where(y[:20] == 0, 42, y[:20]))


def test_module_settings_reach_a_module_class(data):
    """Regression: ``module__*`` settings were refused; they now build the user's module."""
    X, y = data
    clf = InvariantClassifier(module=TinyCNN, module__channels=2, **FAST)
    assert clf.get_params()["module__channels"] == 2
    clf.fit(X, y)
    assert clf.module_.model.conv.out_channels == 2
    assert clone(clf).get_params()["module__channels"] == 2
    clf.set_params(module__channels=3).fit(X, y)
    assert clf.module_.model.conv.out_channels == 3
    for module in (None, TinyCNN(9)):
        with pytest.raises(ValueError, match="module__channels"):
            InvariantClassifier(module=module, module__channels=2, **FAST).fit(X, y)
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['chanels'\\]"):
        InvariantClassifier(chanels=2, **FAST).fit(X, y)  # refused by fit, not __init__


def test_optimizer_settings_override_the_estimator_defaults(data):
    X, y = data
    clf = InvariantClassifier(optimizer="sgd", optimizer__momentum=0.5,
                              optimizer__weight_decay=0.25, **FAST).fit(X, y)
    group = clf.net_.optimizer_.param_groups[0]
    assert (group["momentum"], group["weight_decay"]) == (0.5, 0.25)


def test_grid_search_over_prefixed_settings(data):
    X, y = data
    clf = InvariantClassifier(module=TinyCNN, **dict(FAST, max_epochs=1))
    search = GridSearchCV(clf, {"module__channels": [1, 2], "optimizer__weight_decay": [0.0, 0.1]},
                          cv=2).fit(X, y)
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_
    assert best.module_.model.conv.out_channels == best.module__channels
    assert best.net_.optimizer_.param_groups[0]["weight_decay"] == best.optimizer__weight_decay


def test_clone_and_pickle_keep_settings_and_net(data):
    X, y = data
    stop = EarlyStopping(monitor="train_loss", patience=5)
    clf = InvariantClassifier(module=TinyCNN, module__channels=2, callbacks=[stop],
                              warm_start=True, **FAST)
    twin = clone(clf)
    assert twin.module__channels == 2 and twin.warm_start and twin.callbacks[0] is not stop
    clf.fit(X, y)
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    loaded.fit(X, y)  # the unpickled estimator warm-starts its own net
    assert len(loaded.net_.history) == 6 and len(clf.net_.history) == 3


def test_module_is_the_nets_module_and_not_an_attribute(data):
    """``module_`` is the training base's property (``net_.module_``), never a stale copy."""
    X, y = data
    clf = InvariantClassifier(**FAST)
    assert not hasattr(clf, "module_")
    clf.fit(X, y)
    assert "module_" not in vars(clf) and clf.module_ is clf.net_.module_


def test_net_class_is_the_extension_point(data):
    from geolearn.invariance._nets import InvarianceNet

    X, y = data
    steps = []

    class Counting(InvarianceNet):
        def train_step_single(self, batch, **kw):
            steps.append(len(batch[0]))
            return super().train_step_single(batch, **kw)

    class Custom(InvariantClassifier):
        net_class = Counting

    Custom(**dict(FAST, max_epochs=1, batch_size=120)).fit(X, y)
    assert steps == [120, 120]


def test_a_module_instance_or_class_is_told_apart_without_isinstance_of_module(data):
    """A user module class gets ``n_classes``; an instance is deep-copied (no type branch)."""
    X, y = data
    group = FiniteGroup([identity, flip_lr], name="flip")
    a = InvariantClassifier(group=group, module=TinyCNN, **FAST).fit(X, y)
    b = InvariantClassifier(group=group, module=a.module_.model, **FAST).fit(X, y)
    assert a.module_.model.out.out_features == 9
    assert b.module_.model is not a.module_.model


def test_named_parameters_are_stored_unchecked_and_unknown_keywords_refused():
    """What sklearn's init/set_params smoke check asks, for every named parameter; a keyword
    that is no skorch setting (the check passes ``net_params=``) is refused by ``fit``."""
    import inspect

    names = [p for p in inspect.signature(InvariantClassifier).parameters if p != "net_params"]
    for junk in (-1, 3.0, "helloworld", np.array([1.0, 4.0]), [1], {}, []):
        clf = InvariantClassifier(**dict.fromkeys(names, junk))
        clf.set_params(**dict.fromkeys(names, junk))
        assert all(getattr(clf, n) is junk for n in names)
    clf = InvariantClassifier(net_params=1)
    with pytest.raises(TypeError, match="'net_params'"):
        clf.fit(np.zeros((4, 1, 4, 4), np.float32), [0, 1, 0, 1])


def test_unpicklable_user_group_is_refused_at_fit(data):
    # regression: a group of lambdas used to pass fit and leave an estimator (e.g. a
    # GridSearchCV's best_estimator_) that pickle could not save
    X, y = data
    clf = InvariantClassifier(group=[identity, lambda x: x.flip(-1)], **FAST)
    with pytest.raises(TypeError) as info:
        clf.fit(X[:40], y[:40])
    assert_message(info, "group", "pickl", "module-level", "lambda")
    # a module-level group still fits and survives pickling
    fitted = InvariantClassifier(group=[identity, flip_lr], **FAST).fit(X[:40], y[:40])
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.predict_proba(X[:10]), fitted.predict_proba(X[:10]))
