"""Small, fast instances of the generative family for sklearn's estimator checks.

The checks feed data outside [0, 1], so the VAEs use a Gaussian likelihood with an
identity output.
"""

from geolearn.generative import (
    ChartAutoencoder,
    DiffusionDensity,
    DiffusionGenerator,
    ELBOPurifier,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    VAEGenerator,
)

_TINY = dict(hidden_layer_sizes=(8,), likelihood="gaussian", output_activation="identity",
             batch_size=32, random_state=0, device="cpu")

ESTIMATORS = [
    GridVAE(max_epochs=2, **_TINY),
    VAEClassifier(n_latent=2, max_epochs=30, lr=1e-2, classification_weight=8.0, **_TINY),
    ELBOPurifier(VAEClassifier(n_latent=2, max_epochs=2, **_TINY), n_steps=4, clip=(-1e3, 1e3),
                 random_state=0),
    FlowDensity(n_layers=2, hidden_layer_sizes=(8,), max_epochs=2, batch_size=32, random_state=0,
                device="cpu"),
    DiffusionDensity(n_timesteps=50, hidden_layer_sizes=(8,), max_epochs=5, batch_size=32,
                     n_rounds=2,
                     random_state=0, device="cpu"),
    ChartAutoencoder(n_charts=2, hidden_layer_sizes=(8,), max_epochs=2, batch_size=32,
                     random_state=0,
                     device="cpu"),
    VAEGenerator(hidden_layer_sizes=(8,), max_epochs=2, batch_size=32, random_state=0,
                 device="cpu"),
    DiffusionGenerator(n_timesteps=50, hidden_layer_sizes=(8,), max_epochs=2, batch_size=32,
                       random_state=0, device="cpu"),
]
