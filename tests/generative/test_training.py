"""The family's one training route: skorch through ``geolearn.models.SkorchTrainingMixin``.

warm_start, callbacks, prefixed skorch settings (module__/optimizer__/iterator_train__) in
GridSearchCV, clone and pickle, the seeded module build, and evaluation that leaves the
user's module modes as they were.
"""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import Callback, EarlyStopping

from geolearn.generative import (
    DiffusionDensity,
    ELBOPurifier,
    FlowDensity,
    GridVAE,
    VAEClassifier,
)
from geolearn.models import ObjectiveNet, SkorchTrainingMixin, as_model

VAE = dict(hidden_layer_sizes=(8,), max_epochs=2, batch_size=16, random_state=0, device="cpu")
FLOW = dict(n_layers=2, hidden_layer_sizes=(8,), max_epochs=2, batch_size=32, random_state=0,
            device="cpu")
DIFF = dict(n_timesteps=30, hidden_layer_sizes=(8,), max_epochs=4, batch_size=32, n_rounds=1,
            random_state=0, device="cpu")


@pytest.fixture(scope="module")
def unit():
    return np.random.default_rng(0).random((48, 6))


@pytest.fixture(scope="module")
def gauss():
    return np.random.default_rng(0).normal(size=(96, 3))


def _cases(unit, gauss):
    y = (unit[:, 0] > 0.5).astype(int)
    return [(GridVAE(**VAE), unit, None), (VAEClassifier(n_latent=2, **VAE), unit, y),
            (FlowDensity(**FLOW), gauss, None), (DiffusionDensity(**DIFF), gauss, None)]


def _weights(est):
    return [p.detach().clone() for p in est.module_.parameters()]


def test_every_torch_estimator_is_on_the_shared_base(unit, gauss):
    for est, _, _ in _cases(unit, gauss):
        assert isinstance(est, SkorchTrainingMixin) and type(est).net_class is ObjectiveNet


@pytest.mark.parametrize("index", range(4))
def test_warm_start_continues_training(unit, gauss, index):
    est, X, y = _cases(unit, gauss)[index]
    cold = clone(est).fit(X, y)
    first_weights = _weights(cold)
    cold.fit(X, y)  # without warm_start a refit starts again, from the same seeded weights
    assert len(cold.net_.history) == (1 if isinstance(est, DiffusionDensity) else 2)
    for a, b in zip(first_weights, _weights(cold)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    warm = clone(est).set_params(warm_start=True).fit(X, y)
    net, before = warm.net_, _weights(warm)
    warm.fit(X, y)
    assert warm.net_ is net
    assert len(warm.net_.history) == (2 if isinstance(est, DiffusionDensity) else 4)
    assert any(not torch.equal(a, b) for a, b in zip(before, _weights(warm)))


def test_warm_start_trains_with_the_current_epochs_and_rate(unit):
    vae = GridVAE(**{**VAE, "max_epochs": 1}, warm_start=True).fit(unit)
    assert vae.n_iter_ == 1
    vae.set_params(max_epochs=3, lr=0.5).fit(unit)
    assert vae.n_iter_ == 4 and vae.net_.optimizer_.param_groups[0]["lr"] == 0.5


def test_warm_start_keeps_what_the_first_fit_learnt(gauss):
    flow = FlowDensity(warm_start=True, **FLOW).fit(gauss)
    mean, masks = flow.mean_.copy(), flow.masks_.copy()
    flow.fit(gauss[:50] * 3 + 1)
    np.testing.assert_array_equal(flow.mean_, mean)
    np.testing.assert_array_equal(flow.masks_, masks)
    with pytest.raises(ValueError, match="3 features"):
        flow.fit(gauss[:, :2])
    vae = VAEClassifier(n_latent=2, warm_start=True, **VAE)
    X = np.random.default_rng(1).random((30, 6))
    vae.fit(X, np.arange(30) % 3)
    with pytest.raises(ValueError, match="previously unseen labels"):
        vae.fit(X, np.arange(30) % 4)


def test_early_stopping_callback(unit, gauss):
    stop = EarlyStopping(monitor="train_loss", patience=1, threshold=1e9)
    vae = GridVAE(**{**VAE, "max_epochs": 30}, callbacks=[stop]).fit(unit)
    assert vae.n_iter_ == 2 < 30
    flow = FlowDensity(**{**FLOW, "max_epochs": 30}, callbacks=[stop]).fit(gauss)
    assert len(flow.history_) == 2


def test_diffusion_callbacks_see_every_step(gauss):
    class Count(Callback):
        def initialize(self):
            self.batches = 0
            return self

        def on_batch_end(self, net, **kwargs):
            self.batches += 1

    count = Count()
    DiffusionDensity(**DIFF, callbacks=[count]).fit(gauss)
    assert count.batches == DIFF["max_epochs"]


def test_module_and_optimizer_settings_reach_the_net_and_grid_search(unit, gauss):
    vae = GridVAE(**VAE, module__logvar_range=(-2.0, 1.0), optimizer__betas=(0.5, 0.9))
    assert vae.get_params()["module__logvar_range"] == (-2.0, 1.0)
    vae.fit(unit)
    assert vae.module_.logvar_range == (-2.0, 1.0)
    assert vae.net_.optimizer_.param_groups[0]["betas"] == (0.5, 0.9)
    search = GridSearchCV(GridVAE(**VAE), {"module__logvar_range": [(-1.0, 1.0), (-3.0, 2.0)]},
                          cv=2).fit(unit)
    assert search.best_estimator_.module_.logvar_range == search.best_params_[
        "module__logvar_range"]
    search = GridSearchCV(FlowDensity(**FLOW), {"optimizer__weight_decay": [0.0, 0.5]},
                          cv=2).fit(gauss)
    assert (search.best_estimator_.net_.optimizer_.param_groups[0]["weight_decay"]
            == search.best_params_["optimizer__weight_decay"])
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['hiden_sizes'\\]"):
        GridVAE(hiden_sizes=(3,)).fit(np.random.RandomState(0).rand(8, 4))


def test_iterator_settings_reach_the_loader(gauss):
    seen = []

    class Spy(Callback):
        def on_batch_begin(self, net, batch=None, **kwargs):
            seen.append(len(batch[0]))

    FlowDensity(**{**FLOW, "max_epochs": 1}, callbacks=[Spy()],
                iterator_train__batch_size=40, iterator_train__drop_last=True).fit(gauss)
    assert seen == [40, 40]


def test_clone_and_pickle_keep_the_settings_and_the_outputs(unit):
    vae = GridVAE(**VAE, module__logvar_range=(-4.0, 2.0))
    assert clone(vae).get_params()["module__logvar_range"] == (-4.0, 2.0)
    vae.fit(unit)
    again = pickle.loads(pickle.dumps(vae))
    np.testing.assert_array_equal(again.transform(unit), vae.transform(unit))
    np.testing.assert_array_equal(again.score_samples(unit), vae.score_samples(unit))


def test_untrained_module_is_built_under_the_seed(gauss):
    a = FlowDensity(**{**FLOW, "max_epochs": 1}).fit(gauss)
    b = FlowDensity(**{**FLOW, "max_epochs": 1}).fit(gauss)
    for p, q in zip(_weights(a), _weights(b)):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    c = VAEClassifier(n_latent=2, **{**VAE, "max_epochs": 1, "random_state": 1})
    d = VAEClassifier(n_latent=2, **{**VAE, "max_epochs": 1, "random_state": 2})
    y = np.arange(len(gauss)) % 2
    X = np.random.default_rng(0).random((len(gauss), 6))
    assert not torch.equal(_weights(c.fit(X, y))[0], _weights(d.fit(X, y))[0])


class _DropoutBackbone(torch.nn.Module):
    """A user's backbone (``architecture=callable``) that holds dropout."""

    def __init__(self, n_features, n_latent, image_shape):
        super().__init__()
        self.enc = torch.nn.Sequential(torch.nn.Linear(n_features, 8), torch.nn.Dropout(0.5))
        self.mu = torch.nn.Linear(8, n_latent)
        self.logvar = torch.nn.Linear(8, n_latent)
        self.dec = torch.nn.Linear(n_latent, n_features)

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h)

    def decode(self, z):
        return self.dec(z)


def _modes(module):
    return {name: m.training for name, m in module.named_modules()}


def test_evaluation_leaves_mixed_modes_as_the_user_set_them(unit):
    """Regression: inference used to call ``module_.eval()`` and leave the module so."""
    vae = GridVAE(architecture=_DropoutBackbone, **VAE).fit(unit)
    vae.module_.train()
    vae.module_.backbone.enc[1].eval()  # the user turned one dropout off, the rest trains
    modes = _modes(vae.module_)
    vae.inverse_transform(vae.transform(unit)), vae.score_samples(unit)
    vae.sample(2, random_state=0)
    assert _modes(vae.module_) == modes
    ELBOPurifier(vae, n_steps=2, random_state=0).fit(unit).transform(unit[:4])
    assert _modes(vae.module_) == modes
    flow = FlowDensity(**FLOW).fit(np.random.default_rng(0).normal(size=(40, 3)))
    flow.module_.train()
    flow.module_.layers[0].eval()
    modes = _modes(flow.module_)
    flow.score_samples(np.zeros((2, 3))), flow.sample(2, random_state=0)
    assert _modes(flow.module_) == modes


def test_as_model_sees_the_primary_output(unit):
    vae = GridVAE(**VAE).fit(unit)
    np.testing.assert_allclose(as_model(vae).forward(unit), vae.transform(unit), rtol=1e-6)
    x = torch.as_tensor(unit[:3], dtype=torch.float32)
    with torch.no_grad():
        assert len(vae.module_(x)) == 2
        clf = VAEClassifier(n_latent=2, **VAE).fit(unit, np.arange(48) % 3)
        logits, mu, logvar = clf.module_(x)
    assert logits.shape == (3, 3) and mu.shape == logvar.shape == (3, 2)


@pytest.mark.parametrize("cls", [GridVAE, VAEClassifier, FlowDensity, DiffusionDensity])
def test_init_and_set_params_store_any_value_unchecked(cls):
    """What sklearn's check_do_not_raise_errors_in_init_or_set_params asks; a keyword that is
    no skorch setting (the check passes ``net_params=``) is refused by ``fit``."""
    import inspect

    names = [n for n, p in inspect.signature(cls).parameters.items()
             if p.kind is not p.VAR_KEYWORD]
    for junk in (-1, 3.0, "helloworld", np.array([1.0, 4.0]), [1], {}, []):
        est = cls(**{n: junk for n in names})
        est.set_params(**{n: junk for n in names})
        assert all(est.get_params()[n] is junk for n in names)
    est = cls(net_params={})
    with pytest.raises(TypeError, match="net_params"):
        est.fit(np.random.RandomState(0).rand(8, 4), np.arange(8) % 2)
