"""FlowDensity and DiffusionDensity: closed forms, exact chains, inverses, bad inputs."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from geolearn.generative import DiffusionDensity, FlowDensity
from geolearn.generative.ddpm import make_beta_schedule
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

FLOW = dict(n_layers=2, hidden_layer_sizes=(16,), max_epochs=3, batch_size=64, random_state=0)
DIFF = dict(n_timesteps=50, hidden_layer_sizes=(16,), max_epochs=10, batch_size=64, n_rounds=2,
            random_state=0)


@pytest.fixture(scope="module")
def gauss():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 3)) @ np.array([[1.0, 0.3, 0.0], [0, 2.0, 0.5], [0, 0, 0.5]])


# -- flow ----------------------------------------------------------------------------------

def test_untrained_flow_is_the_standardised_gaussian(gauss):
    flow = FlowDensity(**{**FLOW, "max_epochs": 1, "lr": 1e-12}).fit(gauss)  # the initial net
    m, s = gauss.mean(0), gauss.std(0)
    expected = multivariate_normal(m, np.diag(s ** 2)).logpdf(gauss)
    np.testing.assert_allclose(flow.score_samples(gauss), expected, rtol=1e-5)


def test_flow_log_det_equals_autograd_jacobian(gauss):
    flow = FlowDensity(**{**FLOW, "max_epochs": 5, "n_layers": 4}).fit(gauss)
    module = flow.module_.double()
    for layer in module.layers:  # make the couplings far from the identity
        torch.nn.init.normal_(layer.net[-1].weight, std=0.5)
    x = torch.as_tensor(gauss[:5])
    _, log_det = module(x)
    for i in range(5):
        J = torch.autograd.functional.jacobian(lambda v: module(v[None])[0][0], x[i])
        assert log_det[i].item() == pytest.approx(torch.linalg.slogdet(J)[1].item(), abs=1e-5)
    module.float()


def test_flow_inverse_and_components(gauss):
    flow = FlowDensity(**FLOW).fit(gauss)
    np.testing.assert_allclose(flow.inverse_transform(flow.transform(gauss)), gauss, atol=1e-4)
    comp = flow.log_prob_components(gauss[:10])
    np.testing.assert_allclose(comp["log_px"], comp["log_pz"] + comp["log_det"])
    np.testing.assert_allclose(comp["nll_per_dim"], -comp["log_px"] / 3)
    np.testing.assert_array_equal(comp["log_px"], flow.score_samples(gauss[:10]))
    assert flow.score(gauss[:10]) == pytest.approx(comp["log_px"].mean())
    assert flow.sample(7, random_state=0).shape == (7, 3)
    assert flow.masks_.shape == (2, 3) and np.all(flow.masks_.sum(1) == 1)
    assert len(flow.history_) == 3
    assert flow.history_[-1, "train_loss"] < flow.history_[0, "train_loss"]


@pytest.mark.parametrize("d", [2, 3, 5])
def test_flow_masks_transform_every_feature_every_second_layer(d):
    X = np.random.RandomState(0).randn(40, d)
    masks = FlowDensity(n_layers=6, hidden_layer_sizes=(4,), max_epochs=1, random_state=0).fit(X).masks_
    assert (masks.sum(1) == d // 2).all()
    # a feature passed through by one coupling is transformed by the next
    assert not (masks[1:] & masks[:-1]).any()


def test_flow_bad_inputs(gauss):
    check_bad_inputs(FlowDensity(**FLOW), gauss)
    with pytest.raises(ValueError, match="KernelDensity"):
        FlowDensity(**FLOW).fit(gauss[:, :1])
    const = gauss.copy()
    const[:, 1] = 4.0
    with pytest.raises(ValueError, match="VarianceThreshold"):
        FlowDensity(**FLOW).fit(const)
    with pytest.raises(ValueError, match="n_samples"):
        FlowDensity(**FLOW).fit(gauss).sample(0)


def test_flow_pipeline_gridsearch_pickle(gauss):
    check_pipeline_gridsearch_pickle(FlowDensity(**FLOW), gauss,
                                     param_grid={"n_layers": [1, 2]})


# -- diffusion -----------------------------------------------------------------------------

def _with_exact_predictor(est, v):
    """Replace eps_theta by the exact noise predictor of data N(0, v I)."""
    a = est.alphas_cumprod_

    def eps(x_t, t):
        return math.sqrt(1 - a[t]) * x_t / (a[t] * v + 1 - a[t])
    est._eps_override = eps
    return est


def test_schedules():
    b = make_beta_schedule(100)
    np.testing.assert_allclose(b[[0, -1]], [1e-3, 0.2])
    assert 1e-5 < np.prod(1 - b) < 1e-4  # reaches noise: alpha_bar_T = 2.0e-5
    c = make_beta_schedule(100, "cosine")
    assert c.max() <= 0.999 and np.all(np.diff(c) >= 0)


@pytest.mark.parametrize("step", [1, 7, 30])
def test_exact_predictor_on_standard_normal_data_gives_the_exact_density(step):
    """v = 1: the reverse kernel is the exact reversal of a stationary chain; Eq. 23 telescopes."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    est = DiffusionDensity(standardize=False, **{**DIFF, "n_timesteps": 30})
    est = _with_exact_predictor(est.fit(X), 1.0)
    rounds = est.score_samples_rounds(X, n_rounds=3, step=step)
    exact = multivariate_normal(np.zeros(3), np.eye(3)).logpdf(X)
    np.testing.assert_allclose(rounds, np.broadcast_to(exact, rounds.shape), atol=1e-8)


def test_exact_predictor_on_narrow_gaussian_is_close_and_posterior_variance_is_not():
    rng = np.random.default_rng(1)
    d, v = 2, 0.5
    X = rng.normal(scale=math.sqrt(v), size=(500, d))
    est = _with_exact_predictor(
        DiffusionDensity(standardize=False, **{**DIFF, "n_timesteps": 100}).fit(X), v)
    exact = multivariate_normal(np.zeros(d), v * np.eye(d)).logpdf(X)
    gap1 = abs(est.score_samples_rounds(X, n_rounds=100, step=1).mean() - exact.mean())
    gap10 = abs(est.score_samples_rounds(X, n_rounds=100, step=10).mean() - exact.mean())
    assert gap1 <= 0.01 * d and gap10 <= 0.05 * d
    est.set_params(reverse_variance="posterior")
    assert exact.mean() - est.score_samples_rounds(X, n_rounds=20, step=1).mean() >= 0.3 * d


def test_diffusion_outputs_and_reproducibility(gauss, monkeypatch):
    est = DiffusionDensity(**DIFF).fit(gauss)
    assert est.betas_.shape == (50,) and est.alphas_cumprod_[0] == 1.0
    assert len(est.history_[-1, "batches", :, "train_loss"]) == 10
    np.testing.assert_array_equal(est.score_samples(gauss[:5]), est.score_samples(gauss[:5]))
    assert est.sample(4, step=5, random_state=0).shape == (4, 3)
    # the standardisation correction puts the density in input units (the chains are keyed
    # on the rows' values; key them on position here so both models see the same noise)
    monkeypatch.setattr("geolearn.generative._diffusion.row_seeds",
                        lambda X, random_state, stream: list(range(len(X))))
    scaled = DiffusionDensity(**DIFF).fit(gauss * 10)
    np.testing.assert_allclose(scaled.score_samples(gauss[:5] * 10),
                               est.score_samples(gauss[:5]) - 3 * math.log(10), rtol=1e-4)


def test_diffusion_bad_inputs(gauss):
    check_bad_inputs(DiffusionDensity(**DIFF), gauss)
    with pytest.raises(ValueError, match="does not reach noise"):
        DiffusionDensity(**{**DIFF, "n_timesteps": 5, "beta_end": 1e-4}).fit(gauss)
    est = DiffusionDensity(**DIFF).fit(gauss)
    with pytest.raises(ValueError, match="step"):
        est.score_samples_rounds(gauss, step=0)
    with pytest.raises(ValueError, match="step"):
        est.score_samples_rounds(gauss, step=51)
    with pytest.raises(ValueError, match="n_rounds"):
        est.score_samples_rounds(gauss, n_rounds=0)
    with pytest.warns(UserWarning, match="high dimension"):
        DiffusionDensity(**DIFF).fit(np.random.default_rng(0).normal(size=(80, 65)))


def test_diffusion_pipeline_gridsearch_pickle(gauss):
    check_pipeline_gridsearch_pickle(DiffusionDensity(**DIFF), gauss,
                                     param_grid={"likelihood_step": [1, 5]})
