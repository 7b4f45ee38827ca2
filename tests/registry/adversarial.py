"""Estimator-check instances of geolearn.adversarial (the built-in MLP takes any width)."""

import torch

from geolearn.adversarial import ManifoldAdversarialClassifier

# Adam: the paper's full-batch SGD needs hundreds of epochs to fit the checks' blobs
_FAST = dict(optimizer=torch.optim.Adam, lr=0.05, max_epochs=20, random_state=0)

ESTIMATORS = [
    ManifoldAdversarialClassifier(**_FAST),
    ManifoldAdversarialClassifier(adversary="ambient", adv_n_steps=2, **_FAST),
]
