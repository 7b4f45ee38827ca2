"""Estimator-check instances of the meta-learning family.

The checks feed data outside [0, 1], so the meta-learned autoencoder uses a squared-error
loss.
"""

from geolearn.meta_learning import EpisodicSampler, MetaManifoldAutoencoder

ESTIMATORS = [
    MetaManifoldAutoencoder(loss="mse", hidden_layer_sizes=(8,), n_latent=2, max_epochs=4,
                            batch_size=4,
                            log_every=2, random_state=0, device="cpu"),
    EpisodicSampler(batch_size=2, random_state=0),
]
