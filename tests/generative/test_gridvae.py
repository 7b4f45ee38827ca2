"""GridVAE: codes and indices, guidance wiring, the ELBO score, sklearn integration."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from geolearn.exceptions import DataRangeWarning
from geolearn.generative import GridVAE, grid_codes
from geolearn.generative._losses import kl_normal
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

TINY = dict(hidden_layer_sizes=(16,), max_epochs=2, batch_size=32, random_state=0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.random((80, 12))


@pytest.fixture(scope="module")
def fitted(data):
    return GridVAE(**TINY).fit(data)


def test_fitted_attributes(fitted, data):
    assert fitted.n_components_ == 36 and fitted.cluster_centers_.shape == (36, 2)
    assert fitted.n_features_in_ == 12 and fitted.image_shape_ is None
    assert fitted.n_iter_ == 2 and {"train_loss", "recon", "kl"} <= set(fitted.history_[0])
    np.testing.assert_array_equal(fitted.labels_, fitted.predict(data))
    assert fitted.module_ is fitted.net_.module_


def test_predict_is_ravelled_codes(fitted, data):
    codes = fitted.predict_codes(data)
    np.testing.assert_array_equal(fitted.predict(data), np.ravel_multi_index(codes.T, (6, 6)))
    # cluster_centers_ is in the same C order as the flat index
    Z = fitted.transform(data)
    centres = fitted.cluster_centers_[fitted.predict(data)]
    np.testing.assert_array_equal(centres, np.stack([fitted.grid_[m][codes[:, m]]
                                                     for m in range(2)], 1))
    assert np.all(np.abs(Z - centres) <= 0.5 + 1e-12) or np.any(np.abs(Z) > 2.5)


def test_grid_codes_midpoint_boundaries():
    grid = (np.arange(-2.0, 4.0),)
    Z = np.array([[-1.5 + 1e-6], [-1.5], [0.5], [0.5 + 1e-9], [-100.0], [100.0]])
    assert grid_codes(Z, grid).ravel().tolist() == [1, 0, 2, 3, 0, 5]


def test_huge_grid_codes_and_index_without_overflow(data):
    vae = GridVAE(n_latent=40, grid_values=(0, 1), prior_std=1 / 16, kl_estimator="nearest",
                  **TINY).fit(data)
    assert vae.n_components_ == 2**40 and vae.cluster_centers_ is None
    codes = vae.predict_codes(data)
    labels = vae.predict(data)
    assert codes.shape == (80, 40) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, (codes * (2 ** np.arange(39, -1, -1))).sum(1))
    with pytest.raises(ValueError, match="4096"):
        vae.predict_proba(data)


def test_index_beyond_int64_asks_for_codes(data):
    vae = GridVAE(n_latent=64, grid_values=(0, 1), kl_estimator="nearest", **TINY).fit(data)
    assert vae.predict_codes(data).shape == (80, 64)
    with pytest.raises(ValueError, match="predict_codes"):
        vae.predict(data)


def test_predict_proba_is_normalised_and_peaks_at_predict(fitted, data):
    proba = fitted.predict_proba(data)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(proba.argmax(1), fitted.predict(data))


def test_guided_loss_is_eq28_with_the_given_centres(data):
    codes = np.stack([np.arange(80) % 6, (np.arange(80) // 6) % 6], 1)
    vae = GridVAE(kl_estimator="nearest", guidance="full", **{**TINY, "max_epochs": 1})
    vae.fit(data, codes)
    x = torch.as_tensor(data[:16], dtype=torch.float32)
    c = torch.as_tensor(codes[:16], dtype=torch.float32)
    module = vae.module_
    with torch.no_grad():
        mu, lv = module(x)
        torch.manual_seed(5)
        loss, parts = vae.net_.objective(module, (mu, lv), x, c)
        torch.manual_seed(5)
        z = mu + (0.5 * lv).exp() * torch.randn_like(mu)
        recon = torch.nn.functional.binary_cross_entropy_with_logits(
            module.decode(z), x, reduction="none").sum(1)
        target = torch.as_tensor(np.arange(-2.0, 4.0))[codes[:16]].float()
        s2 = (1 / 3) ** 2
        kl = 0.5 * (math.log(s2) - lv - 1 + (lv.exp() + (mu - target) ** 2) / s2).sum(1)
    torch.testing.assert_close(loss, (recon + kl).mean())
    torch.testing.assert_close(parts["kl"], kl.mean())


def test_partial_guidance_and_missing_codes(data):
    y = (np.arange(80) % 6).astype(float)
    y[::5] = np.nan
    with pytest.raises(ValueError, match="missing_guidance"):
        GridVAE(guidance="partial", **TINY).fit(data, y)
    vae = GridVAE(guidance="partial", guided_dims=[1], missing_guidance="round", **TINY)
    assert vae.fit(data, y).guided_dims_ == [1]
    assert np.isfinite(vae.history_[-1, "train_loss"])


@pytest.mark.parametrize("params, y, match", [
    (dict(guidance="full"), None, "needs y"),
    (dict(guidance="full"), np.zeros((80, 3)), "n_latent"),
    (dict(guidance="full"), np.full((80, 2), 6), r"\[0, 6\)"),
    (dict(guidance="full"), np.full((80, 2), 0.5), "integer"),
    (dict(guidance="partial", guided_dims=[0, 0]), np.zeros((80, 2)), "guided_dims"),
    (dict(guidance="partial", guided_dims=[2]), np.zeros(80), "guided_dims"),
    (dict(guidance="partial", guided_dims=[0, 1]), np.zeros(80), "guided_dims"),
    (dict(grid_values=(0, 0)), None, "duplicate"),
    (dict(grid_values=()), None, "grid_values"),
    (dict(grid_values=[(0, 1)] * 3), None, "n_latent"),
    (dict(prior_std=0.0), None, "prior_std"),
    (dict(prior_std=np.inf), None, "prior_std"),
    (dict(n_latent=0), None, "n_latent"),
    (dict(hidden_layer_sizes=(8, 0)), None, "hidden_layer_sizes"),
    (dict(conv_channels=0), None, "conv_channels"),
    (dict(kl_estimator="exact"), None, "kl_estimator"),
    (dict(guidance="semi"), None, "guidance"),
    (dict(likelihood="poisson"), None, "likelihood"),
    (dict(architecture="vit"), None, "architecture"),
    (dict(architecture="conv"), None, "image_shape"),
])
def test_bad_parameters(data, params, y, match):
    with pytest.raises(ValueError, match=match):
        GridVAE(**{**TINY, **params}).fit(data, y)


def test_bernoulli_needs_unit_interval(data):
    with pytest.raises(ValueError, match="MinMaxScaler"):
        GridVAE(**TINY).fit(data * 3)
    vae = GridVAE(likelihood="gaussian", output_activation="identity", **TINY).fit(data * 3)
    assert np.isfinite(vae.score(data * 3))


def test_shared_bad_inputs(data):
    check_bad_inputs(GridVAE(**TINY), data)


def test_inference_input_errors(fitted, data):
    with pytest.raises(ValueError, match="12 features"):
        fitted.transform(data[:, :5])
    with pytest.raises(ValueError, match="n_latent"):
        fitted.inverse_transform(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"\[0, 6\)"):
        fitted.decode_codes([[0, 6]])
    with pytest.raises(ValueError, match="n_samples"):
        fitted.sample(0)
    with pytest.raises(NotFittedError):
        GridVAE().predict_codes(data)


@settings(max_examples=15)
@given(arrays(np.float64, (6, 4), elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_non_finite_or_out_of_range_input_is_rejected(X):
    vae = GridVAE(hidden_layer_sizes=(4,), max_epochs=1)
    # the [0, 1] check forgives rounding errors up to 1e-6
    if np.all(np.isfinite(X)) and X.min() >= -1e-6 and X.max() <= 1 + 1e-6:
        assert vae.fit(X).transform(X).shape == (6, 2)
    else:
        with pytest.raises(ValueError, match="NaN|infinity|likelihood='bernoulli'"):
            vae.fit(X)


def test_non_finite_training_loss_raises(data):
    vae = GridVAE(likelihood="gaussian", output_activation="identity", **TINY)
    with pytest.raises(RuntimeError, match="non-finite at epoch 1"):
        vae.fit(data * 1e30)


def test_score_is_the_elbo_with_the_closed_form_kl_for_a_standard_normal_prior(data):
    """With one grid value at 0 and prior_std=1 the prior is N(0, I): MC KL -> closed form."""
    vae = GridVAE(grid_values=(0.0,), prior_std=1.0, n_mc_score=4000, **TINY).fit(data)
    x = torch.as_tensor(data[:10], dtype=torch.float32)
    xi = torch.randn(4000, 2, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        mu, lv = vae.module_.encode(x)
        z = mu + (0.5 * lv).exp() * xi[:, None]
        log_lik = -torch.nn.functional.binary_cross_entropy_with_logits(
            vae.module_.decode(z.reshape(-1, 2)), x.repeat(4000, 1), reduction="none"
        ).sum(1).reshape(4000, 10).double().mean(0)
        expected = (log_lik - kl_normal(mu, lv).double()).numpy()
    np.testing.assert_allclose(vae.score_samples(data[:10]), expected, atol=0.05)
    assert vae.score(data[:10]) == pytest.approx(vae.score_samples(data[:10]).mean())
    # a single cell: every sample has code 0 and index 0
    assert set(vae.predict(data)) == {0}


def test_score_samples_is_reproducible_and_batch_invariant(fitted, data):
    s = fitted.score_samples(data)
    np.testing.assert_array_equal(s, fitted.score_samples(data))
    np.testing.assert_allclose(fitted.score_samples(data[::-1])[::-1], s, rtol=1e-6)


def test_generation_decode_codes_and_traverse(fitted, data):
    X, labels = fitted.sample(7, random_state=0)
    assert X.shape == (7, 12) and np.all((X > 0) & (X < 1)) and labels.max() < 36
    codes = np.array([[0, 0], [5, 2]])
    np.testing.assert_allclose(fitted.decode_codes(codes),
                               fitted.inverse_transform([[-2.0, -2.0], [3.0, 0.0]]))
    T = fitted.traverse(data[:3], dim=1, values=[-1.0, 0.5])
    Z = fitted.transform(data[:3])
    Z[:, 1] = 0.5
    assert T.shape == (3, 2, 12)
    np.testing.assert_allclose(T[:, 1], fitted.inverse_transform(Z), rtol=1e-6)


def test_image_input_and_conv_architecture():
    rng = np.random.default_rng(1)
    images = rng.random((40, 1, 8, 8)).astype(np.float32)
    vae = GridVAE(architecture="conv", conv_channels=4, **TINY).fit(images)
    assert vae.image_shape_ == (1, 8, 8) and vae.transform(images).shape == (40, 2)
    np.testing.assert_allclose(vae.transform(images.reshape(40, -1)), vae.transform(images))
    assert vae.as_images(vae.inverse_transform(vae.transform(images))).shape == (40, 1, 8, 8)
    with pytest.raises(ValueError, match="image_shape"):
        vae.transform(rng.random((5, 1, 4, 16)))
    res = GridVAE(architecture="resnet", conv_channels=2, image_shape=(8, 8), **TINY)
    assert res.fit(images.reshape(40, -1)).predict(images).shape == (40,)


def test_same_seed_same_model(data):
    a = GridVAE(**TINY).fit(data).transform(data)
    np.testing.assert_allclose(GridVAE(**TINY).fit(data).transform(data), a, atol=1e-6)
    assert not np.allclose(GridVAE(**{**TINY, "random_state": 1}).fit(data).transform(data), a)


def test_pipeline_gridsearch_clone_pickle(data):
    search = check_pipeline_gridsearch_pickle(GridVAE(**TINY), data,
                                              param_grid={"prior_std": [0.25, 1 / 3]})
    assert search.best_params_["prior_std"] in (0.25, 1 / 3)
    pipe = make_pipeline(MinMaxScaler(), GridVAE(**TINY)).fit(data * 5 - 2)
    assert pipe.predict(data).shape == (80,)
    assert list(pipe.get_feature_names_out()) == ["gridvae0", "gridvae1"]


def test_cross_validation_of_a_scaled_pipeline_scores_every_fold(data):
    """Defect: held-out folds of MinMaxScaler'd data leave [0, 1], so every test score was NaN."""
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV, KFold

    X = data * 5 - 2
    pipe = make_pipeline(MinMaxScaler(), GridVAE(**TINY))
    with pytest.warns(DataRangeWarning, match="clipped"):
        search = GridSearchCV(pipe, {"gridvae__prior_std": [0.25, 1 / 3]}, cv=KFold(3),
                              error_score="raise").fit(X)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    # a held-out row is scored as its clipped self
    fitted = clone(pipe).fit(X[:40])
    Z = fitted[0].transform(X[40:])
    assert Z.min() < 0 or Z.max() > 1  # the fold does leave the training range
    with pytest.warns(DataRangeWarning):
        got = fitted[1].score_samples(Z)
    np.testing.assert_allclose(got, fitted[1].score_samples(np.clip(Z, 0, 1)), rtol=1e-6)
    with pytest.raises(ValueError, match="MinMaxScaler"):  # training data is still checked
        GridVAE(**TINY).fit(Z)


def test_batch_estimator_warns_for_tiny_data(data):
    with pytest.warns(UserWarning, match="biased"):
        GridVAE(kl_estimator="batch", **TINY).fit(data[:40])


def test_unavailable_cuda_is_an_error(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA"):
        GridVAE(device="cuda", **TINY).fit(data)
