"""VAEClassifier, the patch mask and ELBOPurifier (patch_attack: tests/adversarial)."""

import numpy as np
import pytest
import torch
from scipy.special import softmax
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from geolearn._utils.row_noise import row_draws, row_seeds
from geolearn.generative import ELBOPurifier, GridVAE, VAEClassifier, rectangular_patch_mask
from geolearn.models import as_model
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

TINY = dict(n_latent=4, hidden_layer_sizes=(32,), max_epochs=15, batch_size=32, random_state=0)


@pytest.fixture(scope="module")
def data():
    from sklearn.datasets import load_digits

    X, y = load_digits(n_class=3, return_X_y=True)
    return X[:240] / 16.0, np.array(["zero", "one", "two"])[y[:240]]


@pytest.fixture(scope="module")
def clf(data):
    return VAEClassifier(**TINY).fit(*data)


def test_classifier_learns_and_keeps_labels(clf, data):
    X, y = data
    assert set(clf.classes_) == {"zero", "one", "two"}
    assert clf.score(X, y) > 0.9
    assert clf.predict(X).dtype == y.dtype
    np.testing.assert_allclose(clf.predict_proba(X).sum(1), 1.0)
    assert {"train_loss", "recon", "kl", "ce"} <= set(clf.history_[-1])
    assert clf.history_ is clf.net_.history
    assert clf.transform(X).shape == (240, 4)
    # the ELBO hook agrees with score_samples at the mean: a deterministic neg-ELBO
    x = torch.as_tensor(X[:5], dtype=torch.float32)
    with torch.no_grad():
        assert clf._torch_neg_elbo(x, stochastic=False).shape == (5,)
    assert np.all(clf.score_samples(X[:5]) < 0)


def test_head_is_what_drives_predictions(clf, data):
    X, _ = data
    logits = as_model(clf).forward(X)  # the public route to the logits h(mu(x))
    np.testing.assert_array_equal(clf.classes_[logits.argmax(1)], clf.predict(X))
    with torch.no_grad():
        x = torch.as_tensor(X, dtype=torch.float32)
        np.testing.assert_array_equal(logits, clf.module_.head(clf.module_.encode(x)[0]).numpy())
    np.testing.assert_allclose(clf.predict_proba(X), softmax(logits.astype(np.float64), axis=1),
                               rtol=1e-6)


def test_classifier_bad_inputs(data):
    X, y = data
    check_bad_inputs(VAEClassifier(**{**TINY, "max_epochs": 1}), X, y)
    with pytest.raises(ValueError, match="2 classes"):
        VAEClassifier(**TINY).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="prior"):
        VAEClassifier(prior="laplace", **TINY).fit(X, y)


def test_classifier_pipeline_gridsearch_pickle(data):
    X, y = data
    y = np.unique(y, return_inverse=True)[1]  # the helper compares outputs numerically
    check_pipeline_gridsearch_pickle(VAEClassifier(**{**TINY, "max_epochs": 2}), X[:80], y[:80],
                                     param_grid={"classification_weight": [1.0, 8.0]})


def test_grid_prior_classifier_uses_the_relaxed_grid_kl(data):
    X, y = data
    clf = VAEClassifier(prior="grid", grid_values=(0, 1), prior_std=0.25, kl_estimator="nearest",
                        **{**TINY, "max_epochs": 1}).fit(X, y)
    x = torch.as_tensor(X[:20], dtype=torch.float32)
    with torch.no_grad():
        mu, lv = clf.module_.encode(x)
        recon = torch.nn.functional.binary_cross_entropy_with_logits(
            clf.module_.decode(mu), x, reduction="none").sum(1)
        target = (mu > 0.5).float()  # nearest of {0, 1}
        kl = 0.5 * (np.log(0.0625) - lv - 1 + (lv.exp() + (mu - target) ** 2) / 0.0625).sum(1)
        torch.testing.assert_close(clf._torch_neg_elbo(x, stochastic=False), recon + kl)


# -- patch mask ----------------------------------------------------------------------------

def test_patch_mask():
    m = rectangular_patch_mask((2, 4, 5), top=1, left=2, height=2, width=3)
    img = m.reshape(2, 4, 5)
    assert img.sum() == 12 and img[:, 1:3, 2:5].all()
    with pytest.raises(ValueError, match="inside"):
        rectangular_patch_mask((8, 8), 0, 7, 8, 2)


# -- purification --------------------------------------------------------------------------

def test_purifier_raises_the_elbo_and_respects_the_constraints(clf, data):
    X, _ = data
    rng = np.random.default_rng(0)
    noisy = np.clip(X[:50] + rng.normal(scale=0.3, size=X[:50].shape), 0, 1)
    params = dict(n_steps=64, step_size=0.01, epsilon=0.1, random_state=0)
    out = ELBOPurifier(clf, **params).fit(noisy).transform(noisy)
    assert np.abs(out - noisy).max() <= 0.1 + 1e-6 and out.min() >= 0 and out.max() <= 1
    assert clf.score_samples(out).mean() > clf.score_samples(noisy).mean() + 2
    # mask: only the chosen features move
    mask = rectangular_patch_mask((8, 8), 0, 0, 8, 2)
    out_m = ELBOPurifier(clf, **params, mask=mask).fit(noisy).transform(noisy)
    np.testing.assert_array_equal(out_m[:, ~mask], noisy[:, ~mask].astype(np.float32))
    # l2 ball
    out_2 = ELBOPurifier(clf, **{**params, "norm": "l2",
                                 "epsilon": 0.5}).fit(noisy).transform(noisy)
    assert np.linalg.norm(out_2 - noisy, axis=1).max() <= 0.5 + 1e-5


def test_purifier_step_follows_the_input_gradient_of_the_negative_elbo(clf, data):
    """One unbounded step is ``x - step_size * sign(grad_x (-ELBO))`` with the seeded z draw."""
    X, _ = data
    x = X[:20].astype(np.float32)
    out = ELBOPurifier(clf, n_steps=1, step_size=0.05, random_state=0).fit(X).transform(x)
    # each row's z draw comes from its own generator, keyed on the row and random_state
    seeds = row_seeds(x, 0, stream="ELBOPurifier.transform/z")
    (z,) = row_draws(seeds, [("normal", (1, 1, clf.n_latent))])
    xt = torch.as_tensor(x).requires_grad_(True)
    grad = torch.autograd.grad(clf._torch_neg_elbo(xt, noise=z[:, 0, 0]).sum(), xt)[0].numpy()
    np.testing.assert_allclose(out, np.clip(x - 0.05 * np.sign(grad), 0, 1), atol=1e-6)
    assert np.abs(out - x).max() > 0.04


def test_restarts_never_do_worse_than_the_first(clf, data):
    X, _ = data
    params = dict(n_steps=16, epsilon=0.2, random_state=0)
    one = ELBOPurifier(clf, **params).fit(X[:30]).transform(X[:30])
    many = ELBOPurifier(clf, n_restarts=3, **params).fit(X[:30]).transform(X[:30])
    x1, xm = (torch.as_tensor(a, dtype=torch.float32) for a in (one, many))
    with torch.no_grad():
        assert torch.all(clf._torch_neg_elbo(xm, False) <= clf._torch_neg_elbo(x1, False) + 1e-4)


def test_purifier_composition_and_the_fitting_policy(data):
    """An unfitted VAE is cloned and fitted; a fitted one (or a FrozenEstimator) is used as is."""
    X, y = data
    pfy = ELBOPurifier(VAEClassifier(**TINY), n_steps=4, random_state=0).fit(X, y)
    assert pfy.estimator_ is not pfy.estimator and pfy.n_features_in_ == 64
    clf = pfy.estimator_
    assert ELBOPurifier(clf, n_steps=4).fit(X).estimator_ is clf  # fitted: never refitted
    pipe = Pipeline([("pfy", ELBOPurifier(FrozenEstimator(clf), n_steps=4)),
                     ("clf", FrozenEstimator(clf))]).fit(X, y)
    assert pipe.score(X, y) > 0.8
    # a FrozenEstimator survives clone, so a search over the purifier keeps the model
    search = GridSearchCV(pipe, {"pfy__epsilon": [0.05, 0.1]}, cv=2).fit(X, y)
    assert search.best_estimator_["pfy"].estimator_.estimator is clf
    assert list(pfy.get_feature_names_out())[:2] == ["x0", "x1"]
    grid = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, random_state=0).fit(X)
    assert ELBOPurifier(grid, n_steps=2).fit(X).transform(X[:3]).shape == (3, 64)


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=0.0), "epsilon"), (dict(n_restarts=0), "n_restarts"), (dict(norm="l1"), "norm"),
    (dict(mask=np.zeros(64, bool)), "all False"),
])
def test_purifier_bad_parameters(clf, data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ELBOPurifier(clf, **kwargs).fit(data[0])


def test_purifier_input_checks(clf, data):
    X, _ = data
    with pytest.raises(NotFittedError):
        ELBOPurifier(clf, n_steps=2).transform(X)
    pfy = ELBOPurifier(clf, n_steps=2).fit(X)
    with pytest.raises(ValueError, match="clip"):
        pfy.transform(X * 2)
    with pytest.raises(ValueError, match="NaN"):
        pfy.transform(np.full_like(X, np.nan))
