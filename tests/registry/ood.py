"""Estimator-check instances of the out-of-distribution family."""

from geolearn.ood import InpaintingOODDetector

ESTIMATORS = [
    InpaintingOODDetector(n_blocks=1, n_timesteps=50, n_inference_steps=4,
                          hidden_layer_sizes=(8,), max_epochs=1, n_reconstructions=2,
                          validation_fraction=0.2, batch_size=32, random_state=0, device="cpu"),
]
