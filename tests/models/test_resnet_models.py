"""A ResNet-style network at 3x32x32 through every model-probing family (issue 37, item 1).

``tests.resnet.TinyResNet`` is laid out like torchvision's ResNets (its own ``forward``, nested
layer names such as ``layer1.0.conv1``, batch norm, a dropout head) at a few thousand
parameters; ``tests/models/test_torchvision_models.py`` runs real torchvision models. Flat rows
given with ``image_shape`` must reach the network as images: before, every method that passes a
model the layout of ``X`` (``DiffeoStability``, the invariance metrics, integrated gradients,
the geometry report) gave it the flat rows and conv2d raised its own RuntimeError.
"""

import numpy as np
import pytest
import torch
from torch import nn

from geolearn.adversarial import (
    carlini_wagner_l2,
    fgsm,
    normal_attack,
    patch_attack,
    pgd,
    risk_decomposition,
)
from geolearn.diffeo import DiffeoStability, make_stability_scorer, relative_stability
from geolearn.generative import rectangular_patch_mask
from geolearn.inspection import geometry_report
from geolearn.invariance import (
    distribution_invariance,
    integrated_gradients,
    jacobian_sigma_max,
    logit_invariance,
    saliency_invariance,
    saliency_map,
)
from geolearn.manifold import AffineManifold
from geolearn.models import as_model
from geolearn.polytopes import local_rows
from geolearn.representations import (
    LinearEmbeddingMap,
    NetworkRDM,
    TorchEmbedder,
    compare_rdms,
    compute_rdm,
    make_rdm_scorer,
)
from geolearn.riemannian import RiemannianFeatureGeometry
from tests.resnet import TinyResNet, images, tiny_resnet

pytestmark = pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning")

SHAPE = (3, 32, 32)
NESTED = "layer2.0.conv2"
X = images(6)
FLAT = X.reshape(len(X), -1)
Y = np.arange(6) % 3


@pytest.fixture(scope="module")
def net():
    return tiny_resnet()


def _logits(net, X):
    with torch.no_grad():
        return net.eval()(torch.as_tensor(X)).numpy()


def test_diffeo_stability_folds_flat_rows(net):
    """Regression: ``DiffeoStability(resnet, image_shape=...).fit(X_flat)`` raised conv2d's
    RuntimeError; flat rows now give the result of the images."""
    on_images = DiffeoStability(net, random_state=0).fit(X).stability(X)
    est = DiffeoStability(net, image_shape=SHAPE, random_state=0).fit(FLAT)
    on_rows = est.stability(FLAT)
    assert on_rows.R == pytest.approx(on_images.R, rel=1e-6)
    assert np.isfinite(on_rows.R) and on_rows.R > 0
    assert relative_stability(net, FLAT, image_shape=SHAPE, random_state=0).R == \
        pytest.approx(on_images.R, rel=1e-6)
    score = make_stability_scorer(image_shape=SHAPE, random_state=0)(net, FLAT)
    assert score == pytest.approx(-np.log10(on_images.R), rel=1e-6)


def test_diffeo_reads_nested_layers(net):
    res = DiffeoStability(net, layers=[NESTED, "layer1.0"], random_state=0).fit(X).stability(X)
    assert set(res.layers) == {NESTED, "layer1.0", "output"}
    assert all(np.isfinite(res.layers[name].R) for name in res.layers)


def test_batch_norm_and_dropout_protocol(net):
    """Probes run in eval mode (running statistics, no dropout) and leave the modes and the
    running statistics as they were, even for a net left in training mode."""
    expected = _logits(net, X)
    stats = net.bn1.running_mean.clone()
    net.train()
    try:
        np.testing.assert_allclose(as_model(net).forward(FLAT.reshape(X.shape)), expected,
                                   rtol=1e-5, atol=1e-6)
        integrated_gradients(net, FLAT, Y, steps=2, image_shape=SHAPE)
        DiffeoStability(net, image_shape=SHAPE, bn_mode="eval", random_state=0).fit(FLAT)
        assert net.training and net.dropout.training and net.layer1[0].bn1.training
        assert torch.equal(net.bn1.running_mean, stats)
    finally:
        net.eval()


def test_nested_layer_names(net):
    m = as_model(net)
    assert {"layer1.0.conv1", "layer2.0.downsample.0", "fc"} <= set(m.layer_names)
    seen = {}
    handle = net.layer1[0].conv1.register_forward_hook(lambda mod, i, o: seen.update(out=o))
    try:
        _logits(net, X)
    finally:
        handle.remove()
    np.testing.assert_allclose(m.features(X, layer="layer1.0.conv1"), seen["out"].numpy(),
                               rtol=1e-6)


def test_flat_rows_without_image_shape_get_a_clear_error(net):
    """A module with its own forward is checked at the first layer its pass applies."""
    with pytest.raises(ValueError, match=r"expecting 3 input channels.*'conv1', a Conv2d"):
        as_model(net).forward(FLAT)
    with pytest.raises(ValueError, match="expecting 3 input channels"):
        as_model(net).forward(X[:, :1])


@pytest.mark.parametrize("metric", [logit_invariance, distribution_invariance])
def test_invariance_metrics_fold_flat_rows(net, metric):
    on_rows = metric(net, FLAT, "rot4", image_shape=SHAPE, reduction="none")
    np.testing.assert_allclose(on_rows, metric(net, X, "rot4", reduction="none"), rtol=1e-6)
    assert np.all(on_rows >= 0) and np.any(on_rows > 0)


def test_integrated_gradients_completeness(net):
    """IG's attributions sum to f(x) - f(0) (the completeness axiom), through batch norm,
    the shortcuts and the pooling; flat rows give the same attributions."""
    ig = integrated_gradients(net, X, Y, steps=64)
    gap = _logits(net, X)[np.arange(6), Y] - _logits(net, np.zeros_like(X))[np.arange(6), Y]
    np.testing.assert_allclose(ig.reshape(6, -1).sum(1), gap, atol=0.01)  # 64 Riemann steps
    np.testing.assert_allclose(integrated_gradients(net, FLAT, Y, steps=64, image_shape=SHAPE)
                               .reshape(ig.shape), ig, rtol=1e-5, atol=1e-8)


def test_saliency(net):
    maps = saliency_map(net, FLAT, Y, steps=4, image_shape=SHAPE)
    assert maps.shape[0] == 6 and np.all((maps >= 0) & (maps <= 1))
    si = saliency_invariance(net, FLAT, "rot4", Y, steps=4, image_shape=SHAPE)
    assert 0 <= si <= 1


def test_jacobian_sigma_max(net):
    sigma = jacobian_sigma_max(net, X[:1], reduction="none")
    J = as_model(net).jacobian(X[:1]).reshape(10, -1)
    assert sigma[0] == pytest.approx(np.linalg.norm(J, 2), rel=1e-5)


@pytest.mark.filterwarnings("ignore:the feature map has m=16 < d=3072")
@pytest.mark.filterwarnings("ignore:the feature map has non-smooth activations")
def test_riemannian_feature_geometry(net):
    geometry = RiemannianFeatureGeometry(feature_map=net, layer="avgpool", image_shape=SHAPE,
                                         quantities="log_volume", rank=4)
    on_rows = geometry.fit(FLAT[:2]).transform(FLAT[:2])
    on_images = RiemannianFeatureGeometry(feature_map=net, layer="avgpool",
                                          quantities="log_volume", rank=4).fit(X[:2])
    np.testing.assert_allclose(on_rows, on_images.transform(X[:2]), rtol=1e-6)
    assert np.all(np.isfinite(on_rows))


def test_network_rdm_over_nested_layers(net):
    est = NetworkRDM(net, image_shape=SHAPE).fit(FLAT)
    assert {"conv1", "layer1.0.conv1", NESTED, "layer2.0.downsample.0", "fc"} <= \
        set(est.layer_names_)
    features = as_model(net).features(X, layer=NESTED).reshape(6, -1)
    np.testing.assert_allclose(est.rdms_[NESTED], compute_rdm(features, "correlation"),
                               atol=1e-6)
    target = compute_rdm(np.eye(6)[Y], "euclidean")
    scorer = make_rdm_scorer(X, target, NESTED)
    assert scorer(net, X, Y) == pytest.approx(compare_rdms(est.rdms_[NESTED], target,
                                                           "spearman"))


def test_network_rdm_reads_its_layers_in_one_pass(net):
    """Every block in one forward pass per batch (plus one sample to size the layers), not a
    pass per layer; the RDMs are those of the layers read one at a time."""
    calls = []
    handle = net.conv1.register_forward_hook(lambda *args: calls.append(1))
    blocks = ["layer1.0", "layer2.0", "layer2.0.conv1", "fc"]
    try:
        est = NetworkRDM(net, layers=blocks, batch_size=4).fit(X)
    finally:
        handle.remove()
    assert len(calls) == 1 + 2  # 6 stimuli in batches of 4
    for layer in blocks:
        alone = NetworkRDM(net, layers=[layer]).fit(X)
        np.testing.assert_allclose(est.rdms_[layer], alone.rdms_[layer], atol=1e-6)
        assert est.n_features_per_layer_[layer] == alone.n_features_per_layer_[layer]


def test_embedding_map_between_two_cnns(net):
    """A linear map from one ResNet's block to another's (the paper's cross-model maps)."""
    other = tiny_resnet(seed=1)
    source = TorchEmbedder(net, layer="layer2.0", image_shape=SHAPE).fit(FLAT)
    target = TorchEmbedder(other, layer="layer2.0").fit(X)
    A, B = source.transform(FLAT), target.transform(X)
    assert A.shape == B.shape == (6, 16 * 16 * 16)
    np.testing.assert_allclose(A, as_model(net).features(X, "layer2.0").reshape(6, -1),
                               rtol=1e-6)
    mapped = LinearEmbeddingMap(alpha=1e-6).fit(A, B)
    assert mapped.score(A, B) > 0.99  # 6 samples, 4096 features: an exact fit
    assert LinearEmbeddingMap(alpha=1e-6).fit(A, A).score(A, A) == pytest.approx(1.0)


@pytest.mark.parametrize("attack", [
    lambda net, X, shape: fgsm(net, X, Y, 0.03, image_shape=shape),
    lambda net, X, shape: pgd(net, X, Y, 0.03, n_steps=3, image_shape=shape, random_state=0),
    lambda net, X, shape: carlini_wagner_l2(net, X, Y, n_steps=3, image_shape=shape)[0],
], ids=["fgsm", "pgd", "carlini_wagner_l2"])
def test_attacks(net, attack):
    adv = attack(net, X, None)
    assert adv.shape == X.shape and adv.min() >= 0 and adv.max() <= 1
    np.testing.assert_allclose(attack(net, FLAT, SHAPE).reshape(X.shape), adv, atol=1e-6)


def test_pgd_raises_the_loss(net):
    adv = pgd(net, X, Y, 0.03, n_steps=5, random_state=0)
    assert np.abs(adv - X).max() <= 0.03 + 1e-6

    def loss(Z):
        return torch.nn.functional.cross_entropy(torch.as_tensor(_logits(net, Z)),
                                                 torch.as_tensor(Y)).item()

    assert loss(adv) > loss(X)


def _loss(net, Z):
    """The mean cross-entropy of ``net`` on ``Z`` (images or flat rows its forward takes)."""
    return torch.nn.functional.cross_entropy(torch.as_tensor(_logits(net, Z)),
                                             torch.as_tensor(Y)).item()


@pytest.mark.parametrize("method", ["pgd", "nag"])
def test_patch_attack_on_images_and_flat_rows(net, method):
    """Regression: ``patch_attack`` took flat rows only, so images raised "Found array with
    dim 4" and rows could not reach a CNN. An 8x8 patch in every channel now changes only its
    pixels and raises the loss; flat rows with ``image_shape`` and an ``(H, W)`` mask give the
    same attack."""
    mask = rectangular_patch_mask(SHAPE, top=8, left=8, height=8, width=8)
    inside = mask.reshape(SHAPE)
    kwargs = dict(method=method, n_steps=10, step_size=0.05, random_state=0)
    adv = patch_attack(net, X, Y, inside, **kwargs)
    assert adv.shape == X.shape
    np.testing.assert_array_equal(adv[:, ~inside], X[:, ~inside])
    assert np.abs(adv - X).max() > 0.1 and adv.min() >= 0 and adv.max() <= 1
    assert _loss(net, adv.astype(np.float32)) > _loss(net, X)
    on_rows = patch_attack(net, FLAT, Y, mask, image_shape=SHAPE, **kwargs)
    np.testing.assert_allclose(on_rows.reshape(X.shape), adv, atol=1e-6)
    np.testing.assert_array_equal(patch_attack(net, FLAT, Y, inside[0], image_shape=SHAPE,
                                               **kwargs), on_rows)
    with pytest.raises(ValueError, match="expecting 3 input channels"):
        patch_attack(net, FLAT, Y, mask, **kwargs)  # rows without image_shape


def test_patch_attack_on_an_mlp_of_flat_rows():
    """``image_shape`` does not fold the rows of a model that takes rows."""
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3072, 16), nn.ReLU(), nn.Linear(16, 10))
    mask = rectangular_patch_mask(SHAPE, top=0, left=0, height=8, width=8)
    adv = patch_attack(mlp, FLAT, Y, mask, n_steps=10, step_size=0.05, image_shape=SHAPE,
                       random_state=0)
    np.testing.assert_array_equal(adv[:, ~mask], FLAT[:, ~mask])
    assert _loss(mlp, adv.astype(np.float32)) > _loss(mlp, FLAT)
    np.testing.assert_array_equal(
        patch_attack(mlp, FLAT, Y, mask, n_steps=10, step_size=0.05, random_state=0), adv)


def test_manifold_attacks_and_risk(net):
    rng = np.random.default_rng(0)
    plane = AffineManifold(np.linalg.qr(rng.normal(size=(3072, 4)))[0],
                           offset=np.full(3072, 0.5))
    Xm = plane.project(FLAT).astype(np.float32)
    adv, _ = normal_attack(net, Xm, Y, epsilon=0.1, manifold=plane, n_steps=2,
                           image_shape=SHAPE, random_state=0)
    assert adv.shape == Xm.shape
    assert np.linalg.norm(adv - Xm, axis=1).max() <= 0.1 + 1e-5
    risks = risk_decomposition(net, Xm, Y, manifold=plane, epsilon=0.1, n_steps=2,
                               image_shape=SHAPE, random_state=0)
    assert 0 <= risks.std_risk <= risks.adv_risk <= 1


def test_local_linear_map_is_exact(net):
    """In eval mode a ResNet with ReLU, batch norm and average pooling is piecewise linear: its
    local map reproduces the logits."""
    W, b = local_rows(net, FLAT[:2], image_shape=SHAPE)
    np.testing.assert_allclose(np.einsum("nom,nm->no", W, FLAT[:2]) + b, _logits(net, X[:2]),
                               rtol=1e-4, atol=1e-4)


def test_geometry_report(net):
    report = geometry_report(net, FLAT, Y, image_shape=SHAPE, layers=[NESTED, None],
                             measures=["relative_stability", "logit_invariance",
                                       "rdm_similarity"])
    frame = report.to_frame()
    assert frame["reason"].isna().all() and np.isfinite(frame["value"]).all()
    assert set(frame["layer"]) == {NESTED, "output"}


class _RowsCNN(nn.Module):
    """A conv net that takes flat rows and folds them itself."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 3)
        self.fc = nn.Linear(2 * 30 * 30, 2)

    def forward(self, x):
        return self.fc(self.conv(x.unflatten(1, (3, 32, 32))).flatten(1))


def test_sample_layout():
    """Flat rows become images for a model whose first layer is a convolution taking them."""
    cnn = nn.Sequential(nn.Conv2d(3, 2, 3), nn.Flatten())
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(3072, 2))
    unflattens = nn.Sequential(nn.Unflatten(1, SHAPE), nn.Conv2d(3, 2, 3))
    rows, shape = (3072,), SHAPE
    assert as_model(cnn).sample_layout(rows, shape) == shape
    assert as_model(TinyResNet()).sample_layout(rows, shape) == shape
    assert as_model(TinyResNet()).sample_layout(rows, None) == rows
    assert as_model(TinyResNet()).sample_layout(shape, shape) == shape
    assert as_model(mlp).sample_layout(rows, shape) == rows
    assert as_model(unflattens).sample_layout(rows, shape) == rows
    inferred = nn.Sequential(nn.Unflatten(1, (3, -1, 32)), nn.Conv2d(3, 2, 3))
    assert as_model(inferred).sample_layout(rows, shape) == rows
    assert as_model(inferred).forward(np.zeros((1, 3072), np.float32)).shape == (1, 2, 30, 30)
    with pytest.raises(ValueError, match="expecting 3072 features"):
        as_model(unflattens).forward(np.zeros((1, 3071), np.float32))
    Z = np.random.default_rng(0).random((4, 3072)).astype(np.float32)
    R = DiffeoStability(unflattens, image_shape=SHAPE, random_state=0).fit(Z).stability(Z).R
    assert np.isfinite(R)


class _Normalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.full((1, 3, 1, 1), 0.5))

    def forward(self, x):
        return x - self.mean  # rows would broadcast to a batch of one 4-D "image"


def test_sample_layout_of_custom_forwards():
    """A model that folds its rows itself keeps them; a CNN whose first convolution gets no
    batch of images from the rows (here, rows broadcast by its normalisation) gets images."""
    rows, Z = (3072,), np.random.default_rng(0).random((4, 3072)).astype(np.float32)
    folds_itself = as_model(_RowsCNN())
    assert folds_itself.sample_layout(rows, SHAPE) == rows
    R = DiffeoStability(_RowsCNN(), image_shape=SHAPE, random_state=0).fit(Z).stability(Z).R
    assert np.isfinite(R)
    normalized = nn.Sequential(_Normalize(), TinyResNet())
    assert as_model(normalized).sample_layout(rows, SHAPE) == SHAPE
    np.testing.assert_allclose(
        logit_invariance(normalized, Z, "rot4", image_shape=SHAPE, reduction="none"),
        logit_invariance(normalized, Z.reshape(4, *SHAPE), "rot4", reduction="none"), rtol=1e-6)


def test_attacks_give_an_mlp_its_rows_when_told_the_image_shape():
    # image_shape says what the rows hold; an MLP takes them as rows (as every image method
    # of the door does), a conv net takes them folded
    from geolearn.adversarial import fgsm, pgd

    rng = np.random.RandomState(0)
    X, y = rng.rand(6, 48), rng.randint(0, 3, 6)
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(48, 3))
    for attack in (fgsm, pgd):
        np.testing.assert_array_equal(attack(mlp, X, y, 0.1, image_shape=(3, 4, 4)),
                                      attack(mlp, X, y, 0.1))
