"""Every torch-trained estimator (a SkorchTrainingMixin), small, with data it fits.

Shared by the accelerate tests and the GPU suite.
"""

import numpy as np

from geolearn.adversarial import ManifoldAdversarialClassifier
from geolearn.disentanglement import DisentangledAttributeAutoencoder
from geolearn.generative import (
    ChartAutoencoder,
    DiffusionDensity,
    DiffusionGenerator,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    VAEGenerator,
)
from geolearn.invariance import InvariantClassifier
from geolearn.meta_learning import MetaManifoldAutoencoder
from geolearn.ood import InpaintingOODDetector
from geolearn.representations import RDMRegularizedClassifier, compute_rdm
from geolearn.subspaces import CentroidSoftmaxClassifier, SVBFNetClassifier


def transforming_mnist(n=128):
    """The first ``n`` images (1, 12, 12) of the rot4 transforming-MNIST set, and labels."""
    from geolearn.datasets import make_transforming_mnist

    X, y = make_transforming_mnist(group="rot4", return_X_y=True, random_state=0)
    return X[:n], y[:n]


TINY = {"hidden_layer_sizes": (8,), "batch_size": 32, "random_state": 0}
#: reference stimuli of RDMRegularizedClassifier, of the width of the "labelled" table
STIMULI = np.random.default_rng(1).uniform(size=(10, 6))

#: Every SkorchTrainingMixin estimator, small, with the data it fits (images or rows).
TORCH_ESTIMATORS = [
    (InvariantClassifier(group="rot4", nu=1.0, hidden_layer_sizes=(8,), max_epochs=2,
                         batch_size=32, random_state=0), "images"),
    (CentroidSoftmaxClassifier(max_epochs=5, random_state=0), "lines"),
    (GridVAE(max_epochs=2, **TINY), "rows"),
    (VAEClassifier(n_latent=2, max_epochs=2, **TINY), "rows"),
    (VAEGenerator(max_epochs=2, **TINY), "rows"),
    (ChartAutoencoder(n_charts=2, max_epochs=2, **TINY), "rows"),
    (FlowDensity(n_layers=2, max_epochs=2, **TINY), "table"),
    (DiffusionDensity(n_timesteps=50, max_epochs=3, n_rounds=1, **TINY), "table"),
    (DiffusionGenerator(n_timesteps=50, max_epochs=2, **TINY), "table"),
    (DisentangledAttributeAutoencoder(image_shape=None, n_latent=4, attribute_dims=(2, 2),
                                      max_epochs=2, batch_size=16, random_state=0),
     "attributes"),
    (MetaManifoldAutoencoder(loss="mse", hidden_layer_sizes=(8,), n_latent=2, max_epochs=4,
                             batch_size=4, random_state=0), "rows"),
    (InpaintingOODDetector(denoiser="mlp", hidden_layer_sizes=(8,), n_timesteps=50, n_inference_steps=4,
                           n_reconstructions=2, n_blocks=2, max_epochs=2, batch_size=32,
                           random_state=0), "rows"),
    (ManifoldAdversarialClassifier(adversary="ambient", adv_n_steps=2, max_epochs=2,
                                   batch_size=16, random_state=0), "labelled"),
    (RDMRegularizedClassifier(rdm_layer="1", rdm_stimuli=STIMULI,
                              rdm_target=compute_rdm(STIMULI, metric="euclidean"),
                              rdm_batch_size=5, max_epochs=2, batch_size=16, random_state=0),
     "labelled"),
    (SVBFNetClassifier(n_components=1, max_epochs=2, batch_size=16, random_state=0), "sets"),
]
IDS = [type(est).__name__ for est, _ in TORCH_ESTIMATORS]


def data(kind):
    """``(X, y)`` of a kind: "images", their flat "rows", "lines", unit "sets", "table",
    "labelled" (the table with two classes), "attributes"."""
    rng = np.random.default_rng(0)
    if kind in ("images", "rows"):
        X, y = transforming_mnist()
        X, y = X[:64], y[:64]
        return (X, y) if kind == "images" else (X.reshape(len(X), -1), y)
    if kind in ("lines", "sets"):  # rows of one-dimensional subspaces of R^3, two classes
        X = rng.normal(size=(40, 3))
        if kind == "sets":  # unit rows: orthonormal bases of the lines
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        return X, (X[:, 0] ** 2 > X[:, 1] ** 2).astype(int)
    X = rng.uniform(size=(48, 6)).astype(np.float32)
    if kind == "labelled":
        return X, (X[:, 0] > 0.5).astype(int)
    return X, (rng.integers(0, 2, size=(48, 2)) if kind == "attributes" else None)


