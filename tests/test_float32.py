"""Transformers return float32 for float32 input where their computation allows it.

Those that run torch networks (which compute in float32 anyway) or lose nothing at float32
precision preserve float32 and declare it in their ``preserves_dtype`` tag, so that
scikit-learn's ``check_transformer_preserve_dtypes`` verifies it too; the rest need float64
(eigenproblems, exact affine maps, curvature, principal angles, persistence) and say so.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import TransformerMixin, clone
from sklearn.utils import get_tags

from geolearn.datasets import load_digits_images
from geolearn.diffeo import MaxEntropyDiffeo
from geolearn.disentanglement import DisentangledAttributeAutoencoder
from geolearn.generative import (
    ChartAutoencoder,
    ELBOPurifier,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    VAEGenerator,
)
from geolearn.meta_learning import MetaManifoldAutoencoder
from geolearn.representations import FourierEmbedding, LinearEmbeddingMap, TorchEmbedder
from tests.registry import all_registered
from tests.registry.representations import summary_net

RNG = np.random.default_rng(0)
X = RNG.random((40, 4))
Y_CLASS = (X[:, 0] > 0.5).astype(int)
Y_EMBED = X @ RNG.normal(size=(4, 3))
_TINY = dict(hidden_layer_sizes=(8,), batch_size=16, random_state=0, device="cpu")

PRESERVING = [
    (GridVAE(max_epochs=2, **_TINY), None),
    (VAEClassifier(n_latent=2, max_epochs=2, **_TINY), Y_CLASS),
    (ELBOPurifier(VAEClassifier(n_latent=2, max_epochs=2, **_TINY), n_steps=3, random_state=0),
     Y_CLASS),
    (FlowDensity(n_layers=2, max_epochs=2, **_TINY), None),
    (ChartAutoencoder(n_charts=2, max_epochs=2, **_TINY), None),
    (VAEGenerator(max_epochs=2, **_TINY), None),
    (MetaManifoldAutoencoder(loss="mse", hidden_layer_sizes=(8,), n_latent=2, max_epochs=4,
                             batch_size=4,
                             log_every=2, random_state=0, device="cpu"), None),
    (DisentangledAttributeAutoencoder(image_shape=None, n_latent=4, attribute_dims=(2, 2),
                                      max_epochs=2, batch_size=8, random_state=0, device="cpu"),
     np.stack([Y_CLASS, 1 - Y_CLASS], 1)),
    (TorchEmbedder(summary_net()), None),
    (FourierEmbedding(), None),
    (FourierEmbedding(part="phase"), None),
    (LinearEmbeddingMap(alpha=0.5), Y_EMBED),
]

# float64 is what their computation needs (the reason is in each one's __sklearn_tags__)
FLOAT64_ONLY = {"CIDM", "OnManifoldPGD", "LocalLinearMap", "RiemannianFeatureGeometry", "SVBF",
                "SubspaceEmbedding", "PersistenceTransformer", "ReLUPolytopes", "RDMTransformer"}


def _ids(cases):
    return [type(est).__name__ for est, _ in cases]


@pytest.mark.parametrize("estimator, y", PRESERVING, ids=_ids(PRESERVING))
def test_float32_in_float32_out_and_agrees_with_float64(estimator, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short fits: convergence is not the point
        est = clone(estimator).fit(X, y)
    assert "float32" in get_tags(est).transformer_tags.preserves_dtype
    out64 = est.transform(X)
    out32 = est.transform(X.astype(np.float32))
    assert out64.dtype == np.float64 and out32.dtype == np.float32
    scale = max(float(np.abs(out64).max()), 1.0)
    np.testing.assert_allclose(out32, out64, rtol=1e-4, atol=1e-4 * scale)


def test_max_entropy_diffeo_preserves_float32_on_images():
    X_img = load_digits_images(upsample=2, return_X_y=True)[0][:20]  # float32
    aug = MaxEntropyDiffeo(T=0.005, apply_on="always", random_state=0).fit(X_img)
    assert get_tags(aug).transformer_tags.preserves_dtype == ["float64", "float32"]
    out32, out64 = aug.transform(X_img), aug.transform(X_img.astype(np.float64))
    assert out32.dtype == np.float32 and out64.dtype == np.float64
    np.testing.assert_allclose(out32, out64, rtol=1e-4, atol=1e-5)


def test_every_transformer_is_audited():
    """A new transformer must preserve float32 or join FLOAT64_ONLY with a reason."""
    preserving = {type(est).__name__ for est, _ in PRESERVING} | {"MaxEntropyDiffeo"}
    for est in all_registered():
        if not isinstance(est, TransformerMixin):
            continue
        name = type(est).__name__
        dtypes = get_tags(est).transformer_tags.preserves_dtype
        if name in preserving:
            assert dtypes == ["float64", "float32"], name
        else:
            assert name in FLOAT64_ONLY, f"{name}: preserve float32 or declare why not"
            assert "float32" not in dtypes, name


@settings(max_examples=30, deadline=None)
@given(X=arrays(np.float32, st.tuples(st.integers(2, 12), st.integers(2, 6)),
                elements=st.floats(-1e3, 1e3, width=32)))
def test_float32_property_of_the_stateless_and_linear_maps(X):
    Y = X.astype(np.float64) @ np.arange(1.0, 1.0 + 2 * X.shape[1]).reshape(X.shape[1], 2)
    for est in (FourierEmbedding(), LinearEmbeddingMap(alpha=1.0).fit(X, Y)):
        out32, out64 = est.fit(X, Y).transform(X), est.transform(X.astype(np.float64))
        assert out32.dtype == np.float32 and out64.dtype == np.float64
        np.testing.assert_allclose(out32, out64.astype(np.float32), rtol=0, atol=0)
