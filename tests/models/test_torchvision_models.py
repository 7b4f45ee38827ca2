"""Real torchvision CNNs (untrained: ``weights=None``, nothing is downloaded) at 3x32x32.

Skipped where torchvision is not installed; CI installs a matching torch/torchvision pair and
runs these with ``-m torchvision`` (see ``.ci/run``). ``tests/models/test_resnet_models.py``
checks each family in depth on a small ResNet-style module; here the real architectures
(nested blocks, batch norm, dropout heads, depthwise convolutions, in-place activations) go
through the one door and a representative call of each family.
"""

import numpy as np
import pytest
import torch

from geolearn.adversarial import pgd
from geolearn.diffeo import DiffeoStability
from geolearn.invariance import integrated_gradients, logit_invariance
from geolearn.models import as_model
from geolearn.representations import LinearEmbeddingMap, NetworkRDM, TorchEmbedder
from geolearn.riemannian import RiemannianFeatureGeometry

models = pytest.importorskip("torchvision.models")

pytestmark = [pytest.mark.torchvision,
              pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning")]

SHAPE = (3, 32, 32)
X = torch.rand(4, *SHAPE, generator=torch.Generator().manual_seed(0)).numpy()
FLAT = X.reshape(len(X), -1)
Y = np.arange(4) % 10
# (constructor, a nested layer) per architecture
ARCHITECTURES = {
    "resnet18": (models.resnet18, "layer3.0.conv1"),
    "vgg11": (models.vgg11, "features.18"),
    "mobilenet_v3_small": (models.mobilenet_v3_small, "features.9.block.0.0"),
}
# vgg11's 130 million parameters take about 15 s to build and probe on one CPU core
PARAMS = [pytest.param(name, marks=pytest.mark.slow) if name == "vgg11" else name
          for name in ARCHITECTURES]


def _build(name, seed=0):
    torch.manual_seed(seed)  # torchvision initialises from torch's global generator
    net = ARCHITECTURES[name][0](weights=None, num_classes=10).eval()
    net.train()  # batch-norm statistics of a few batches, as a trained network has
    with torch.no_grad():
        for _ in range(2):
            net(torch.rand(8, *SHAPE))
    return net.eval()


@pytest.fixture(scope="module", params=PARAMS)
def arch(request):
    return request.param, _build(request.param), ARCHITECTURES[request.param][1]


def _logits(net, X):
    with torch.no_grad():
        return net(torch.as_tensor(X)).numpy()


def test_one_door(arch):
    """Nested layer names, outputs in eval mode, flat rows folded by image_shape, a clear
    error for rows given without it."""
    _, net, layer = arch
    m = as_model(net)
    assert layer in m.layer_names
    np.testing.assert_allclose(m.forward(X), _logits(net, X), rtol=1e-5, atol=1e-5)
    assert m.sample_layout(FLAT.shape[1:], SHAPE) == SHAPE
    assert m.features(X, layer=layer).shape[0] == len(X)
    with pytest.raises(ValueError, match="expecting 3 input channels"):
        m.forward(FLAT)


def test_diffeo_stability_on_flat_rows(arch):
    """Regression: ``DiffeoStability(resnet18, image_shape=(3, 32, 32)).fit(X_flat)`` raised
    conv2d's RuntimeError."""
    _, net, layer = arch
    res = DiffeoStability(net, image_shape=SHAPE, layers=[layer], random_state=0).fit(FLAT)
    res = res.stability(FLAT)
    on_images = DiffeoStability(net, random_state=0).fit(X).stability(X)
    assert res.R == pytest.approx(on_images.R, rel=1e-5)
    assert np.isfinite(res.layers[layer].R)


def test_invariance_and_attributions(arch):
    _, net, _ = arch
    li = logit_invariance(net, FLAT, "rot4", image_shape=SHAPE, reduction="none")
    np.testing.assert_allclose(li, logit_invariance(net, X, "rot4", reduction="none"),
                               rtol=1e-5)
    ig = integrated_gradients(net, FLAT[:2], Y[:2], steps=4, image_shape=SHAPE)
    np.testing.assert_allclose(ig, integrated_gradients(net, X[:2], Y[:2], steps=4),
                               rtol=1e-5, atol=1e-9)
    assert np.any(ig != 0)


def test_representations(arch):
    name, net, layer = arch
    est = NetworkRDM(net, layers=[layer], image_shape=SHAPE).fit(FLAT)
    assert est.rdms_[layer].shape == (4, 4)
    A = TorchEmbedder(net, layer=layer, image_shape=SHAPE).fit_transform(FLAT)
    B = TorchEmbedder(_build(name, seed=1), layer=layer).fit_transform(X)
    assert A.shape == B.shape
    assert np.isfinite(LinearEmbeddingMap(alpha=1e-3).fit(A, B).score(A, B))


def test_attack(arch):
    _, net, _ = arch
    adv = pgd(net, FLAT, Y, 0.03, n_steps=2, image_shape=SHAPE, random_state=0)
    assert adv.shape == FLAT.shape and np.abs(adv - FLAT).max() <= 0.03 + 1e-6


@pytest.mark.filterwarnings("ignore::geolearn.exceptions.NumericalWarning")
def test_riemannian_on_the_logits(arch):
    _, net, _ = arch
    geometry = RiemannianFeatureGeometry(feature_map=net, image_shape=SHAPE,
                                         quantities="log_volume", rank=4)
    assert np.all(np.isfinite(geometry.fit(FLAT[:1]).transform(FLAT[:1])))
