"""Estimator-check instances of geolearn.representations."""

import torch
from torch import nn

from geolearn.representations import (
    CanonicalAdversarialDetector,
    FourierEmbedding,
    LinearEmbeddingMap,
    TorchEmbedder,
)


class RowSummary(nn.Module):
    """Three statistics of each row: a module that accepts any number of features."""

    def forward(self, x):
        x = x.flatten(1)
        return torch.stack([x.mean(1), x.abs().mean(1), x.amax(1)], 1)


def summary_net(seed=0):
    """A tiny classifier on RowSummary features (the estimator checks vary n_features)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(RowSummary(), nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


ESTIMATORS = [
    LinearEmbeddingMap(),
    LinearEmbeddingMap(alpha=1.0, fit_intercept=True),
    LinearEmbeddingMap(alpha=0.5, solver="svd", batch_size=7),
    CanonicalAdversarialDetector(random_state=0),
    TorchEmbedder(summary_net()),
    FourierEmbedding(),
    FourierEmbedding(part="phase"),
]
