"""DisentangledAttributeAutoencoder and the latent regularisers on other autoencoders.

The objective against its formula, the annealing ramp, the attribute codes against the
module, traversals, the regularisers added to GridVAE through its ``net_class``, the
sklearn contract and the spec's bad inputs.
"""

import functools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError

from geolearn.disentanglement import (
    DisentangledAttributeAutoencoder,
    LatentRegularizerMixin,
    OrthogonalityLoss,
    latent_regularization,
)
from geolearn.disentanglement._autoencoder import AttributeAutoencoderModule, DAEObjective
from geolearn.generative import GridVAE
from geolearn.models import ObjectiveNet
from tests.helpers import assert_message, check_bad_inputs, check_pipeline_gridsearch_pickle

IMG = dict(image_shape=(3, 8, 8), n_latent=6, attribute_dims=(2, 3), max_epochs=3,
           batch_size=16, random_state=0, device="cpu")
TAB = dict(image_shape=None, n_latent=4, attribute_dims=(2, 2), max_epochs=3, batch_size=16,
           random_state=0, device="cpu")


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).random((48, 3 * 8 * 8)).astype(np.float32)


@pytest.fixture(scope="module")
def fitted(images):
    return DisentangledAttributeAutoencoder(**IMG).fit(images)


def test_objective_is_reconstruction_plus_weighted_regularisers():
    torch.manual_seed(0)
    module = AttributeAutoencoderModule(192, 6, (2, 3), image_shape=(3, 8, 8))
    x = torch.rand(10, 192)
    objective = DAEObjective(reconstruction="mse", anneal_epochs=4, alpha_orth=0.5,
                             alpha_graph=0.0, n_blocks=2, graph_lambda=0.1,
                             graph_distance_scale=None, orth_norm="fro", graph_space="data",
                             output_activation="identity")
    x_rec, z = module(x)
    for epoch, ramp in ((0, 1 / 5), (2, 3 / 5), (4, 1.0), (9, 1.0)):
        loss, parts = objective(module, (x_rec, z), x, None, epoch=epoch)
        expected = ((x_rec - x) ** 2).mean() + 0.5 * ramp * OrthogonalityLoss(n_blocks=2)(z)
        torch.testing.assert_close(loss, expected)
        assert set(parts) == {"recon", "orth"}
    l2 = DAEObjective(reconstruction="l2", anneal_epochs=0, alpha_orth=0.0, alpha_graph=0.0,
                      n_blocks=2, graph_lambda=0.1, graph_distance_scale=None, orth_norm="fro",
                      graph_space="data", output_activation="identity")
    loss, parts = l2(module, (x_rec, z), x, None)
    torch.testing.assert_close(loss, (x_rec - x).norm(dim=1).mean())
    assert set(parts) == {"recon"}


def test_default_reconstruction_is_the_papers_l2_norm(images):
    """Regression: Eq. 6 weighs the regularisers against ``||X - X_recon||_2``; the old
    per-value MSE default made the same weights hundreds of times stronger on images."""
    dae = DisentangledAttributeAutoencoder(**{**IMG, "alpha_orth": 0.0, "alpha_graph": 0.0,
                                              "max_epochs": 1}).fit(images)
    module, x = dae.module_, torch.as_tensor(images[:8], dtype=torch.float32)
    with torch.no_grad():
        x_rec, z = module(x)
        loss, _ = dae.net_.objective(module, (x_rec, z), x, None)
    torch.testing.assert_close(loss, (x_rec - x).norm(dim=1).mean())


def test_zero_weights_skip_the_regularisers():
    module = AttributeAutoencoderModule(5, 4, (2, 2))
    penalty, parts = latent_regularization(module, torch.rand(6, 5))
    assert penalty.item() == 0 and parts == {}


def test_codes_decode_and_traverse_agree_with_the_module(fitted, images):
    codes = fitted.transform(images)
    assert codes.shape == (48, 5) and fitted.block_size_ == 3
    np.testing.assert_allclose(fitted.inverse_transform(codes), fitted.reconstruct(images),
                               rtol=1e-5, atol=1e-6)
    trav = fitted.traverse(images[0], attribute=1, values=[-2.0, 0.0, 2.0])
    assert trav.shape == (3, 3, 192)
    for c in range(3):
        moved = np.repeat(codes[:1], 3, 0)
        moved[:, 2 + c] = [-2.0, 0.0, 2.0]
        np.testing.assert_allclose(trav[c], fitted.inverse_transform(moved), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(ValueError, match="attribute must be an index"):
        fitted.traverse(images[0], attribute=2, values=[0.0])
    latent = DisentangledAttributeAutoencoder(**IMG, transform_output="latent").fit(images)
    assert latent.transform(images).shape == (48, 6)
    with torch.no_grad():  # the same seed trains the same weights: only the output differs
        z = fitted.module_.encode(torch.as_tensor(images)).numpy()
    np.testing.assert_allclose(latent.transform(images), z, rtol=1e-5, atol=1e-6)
    s1, s2 = fitted.sample(5, random_state=3), fitted.sample(5, random_state=3)
    np.testing.assert_array_equal(s1, s2)
    assert s1.shape == (5, 192) and s1.min() >= 0 and s1.max() <= 1  # the sigmoid decoder


def test_history_records_each_loss_and_weights_change_training(images):
    dae = DisentangledAttributeAutoencoder(**IMG).fit(images)
    assert {"train_loss", "recon", "orth", "stat"} <= set(dae.history_[0])
    dae_g = DisentangledAttributeAutoencoder(**{**IMG, "alpha_orth": 0.0}).fit(images)
    assert "orth" not in dae_g.history_[0] and "stat" in dae_g.history_[0]
    plain = DisentangledAttributeAutoencoder(**{**IMG, "alpha_orth": 0.0, "alpha_graph": 0.0})
    plain.fit(images)
    assert all(h["train_loss"] == pytest.approx(h["recon"]) for h in plain.history_)


def test_orthogonality_weight_makes_blocks_orthogonal():
    X = np.random.default_rng(1).random((128, 12)).astype(np.float32)
    common = dict(image_shape=None, n_latent=8, attribute_dims=(1, 1), alpha_graph=0.0,
                  max_epochs=60, batch_size=32, lr=3e-3, anneal_epochs=0, random_state=0,
                  transform_output="latent", device="cpu")

    def mean_cos(model):
        z = torch.as_tensor(model.transform(X)).reshape(len(X), 2, 4)
        z = z / z.norm(dim=2, keepdim=True)
        return float((z[:, 0] * z[:, 1]).sum(1).abs().mean())

    with_orth = DisentangledAttributeAutoencoder(alpha_orth=1.0, **common).fit(X)
    without = DisentangledAttributeAutoencoder(alpha_orth=0.0, **common).fit(X)
    assert mean_cos(with_orth) < 0.05 < mean_cos(without)


def test_gridvae_trains_with_the_regularisers_through_its_net_class():
    X = np.random.default_rng(2).random((96, 6)).astype(np.float32)
    net = type("RegularizedNet", (LatentRegularizerMixin, ObjectiveNet), {})

    class OrthogonalGridVAE(GridVAE):
        net_class = functools.partial(net, alpha_orth=1.0, n_latent_blocks=2)

    args = dict(n_latent=4, hidden_layer_sizes=(16,), likelihood="gaussian", max_epochs=40, lr=3e-3,
                batch_size=32, random_state=0, device="cpu")
    vae = OrthogonalGridVAE(**args).fit(X)
    orth = vae.net_.history[:, "batches"]
    recorded = [b["orth"] for epoch in orth for b in epoch]
    assert len(recorded) == 40 * 3 and recorded[-1] < recorded[0]
    z = torch.as_tensor(vae.transform(X), dtype=torch.float32)
    base = GridVAE(**args).fit(X)
    zb = torch.as_tensor(base.transform(X), dtype=torch.float32)
    assert OrthogonalityLoss(n_blocks=2)(z) < OrthogonalityLoss(n_blocks=2)(zb)


def test_sklearn_contract_on_tabular_rows():
    X = np.random.default_rng(3).normal(size=(40, 5))
    check_pipeline_gridsearch_pickle(DisentangledAttributeAutoencoder(**TAB), X,
                                     param_grid={"alpha_orth": [0.0, 0.1]})


def test_bad_inputs(images):
    check_bad_inputs(DisentangledAttributeAutoencoder(**IMG), images)
    for bad, words in (({"n_latent": 7}, ("n_latent=7", "divisible")),
                       ({"image_shape": (3, 4, 16), "n_latent": 6}, ("divisible by 8",)),
                       ({"attribute_dims": (2, 0)}, ("attribute_dims",)),
                       ({"batch_size": 1}, ("batch_size >= 2",))):
        X = images if "image_shape" not in bad else images[:, :192]
        with pytest.raises(ValueError) as exc:
            DisentangledAttributeAutoencoder(**{**IMG, **bad}).fit(X)
        assert_message(exc, *words)
    with pytest.raises(ValueError) as exc:
        DisentangledAttributeAutoencoder(**IMG).fit(images * 2)
    assert_message(exc, "MinMaxScaler")
    with pytest.raises(NotFittedError):
        DisentangledAttributeAutoencoder(**IMG).sample(2)
    with pytest.raises(ValueError, match="transform_output"):
        DisentangledAttributeAutoencoder(**IMG).fit(images).inverse_transform(np.zeros((2, 4)))


def test_block_cosines_and_displays_show_the_model(fitted, images):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geolearn.plotting import AttributeTraversalDisplay, BlockOrthogonalityDisplay

    C = fitted.block_cosines(images)
    with torch.no_grad():
        z = fitted.module_.encode(torch.as_tensor(images)).reshape(48, 2, 3)
    cos = torch.nn.functional.cosine_similarity(z[:, 0], z[:, 1], dim=1).abs().mean()
    np.testing.assert_allclose(C, [[1, cos], [cos, 1]], rtol=1e-5)
    disp = BlockOrthogonalityDisplay.from_estimator(fitted, images)
    np.testing.assert_allclose(disp.image_.get_array(), C)
    trav = AttributeTraversalDisplay.from_estimator(fitted, images[0], values=[-1, 1])
    np.testing.assert_allclose(trav.traversals[1].reshape(3, 2, -1),
                               fitted.traverse(images[0], 1, [-1, 1]))
    assert [ax.get_title() for ax in trav.axes_] == ["attribute 0", "attribute 1"]
    named = AttributeTraversalDisplay.from_estimator(fitted, images[0], values=[-1, 1],
                                                     attribute_names=["hue", "scale"])
    assert [ax.get_title() for ax in named.axes_] == ["hue", "scale"]
    plt.close("all")


def test_the_mixin_reads_the_decoders_output_from_the_objective():
    """The graph term compares the data with sigmoid(logits) for a Bernoulli VAE (spec)."""
    from geolearn.generative._base import VAEObjective

    net_class = type("RegularizedNet", (LatentRegularizerMixin, ObjectiveNet), {})
    for likelihood, expected in (("bernoulli", "sigmoid"), ("gaussian", "identity")):
        objective = VAEObjective(prior=None, kl_estimator="sample", likelihood=likelihood,
                                 sigma=1.0, output_activation="identity")
        net = net_class(torch.nn.Linear(2, 2), objective=objective, alpha_graph=0.1)
        assert net._output_activation() == expected
    assert net_class(torch.nn.Linear(2, 2), objective=None,
                     output_activation="sigmoid")._output_activation() == "sigmoid"


@settings(max_examples=10, deadline=None)
@given(st.permutations(range(12)), st.integers(1, 12))
def test_a_rows_codes_depend_only_on_the_row(perm, n):
    dae = _tabular()
    X = dae._rows
    np.testing.assert_allclose(dae.transform(X[list(perm)]), dae.transform(X)[list(perm)],
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(dae.reconstruct(X[:n]), dae.reconstruct(X)[:n], rtol=1e-5,
                               atol=1e-7)


@functools.cache
def _tabular():
    X = np.random.default_rng(4).normal(size=(40, 5)).astype(np.float32)
    dae = DisentangledAttributeAutoencoder(**{**TAB, "batch_size": 5}).fit(X)
    dae._rows = X[:12]
    return dae
