"""Estimator-check instances of the disentanglement family."""

from geolearn.disentanglement import DisentangledAttributeAutoencoder

ESTIMATORS = [
    DisentangledAttributeAutoencoder(image_shape=None, n_latent=4, attribute_dims=(2, 2),
                                     max_epochs=2, batch_size=8, random_state=0, device="cpu"),
]
