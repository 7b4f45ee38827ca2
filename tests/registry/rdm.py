"""Estimator-check instances of the RDM (representational similarity) estimators.

The checks vary the number of features, so NetworkRDM reads a module that takes any width
(average-pooled to 4 values before its Linear layer), with the euclidean metric (1-feature
rows are constant, so their correlation distance is undefined).
"""

import numpy as np
import torch

from geolearn.representations import (
    FiedlerPartition,
    NetworkRDM,
    RDMRegularizedClassifier,
    RDMTransformer,
    WeightedRDMModel,
    compute_rdm,
)

_ANY_WIDTH = torch.nn.Sequential(torch.nn.Unflatten(1, (1, -1)), torch.nn.AdaptiveAvgPool1d(4),
                                 torch.nn.Flatten(), torch.nn.Linear(4, 3))

# reference stimuli of 3 features, the width of most of the checks' tables
_STIMULI = np.random.default_rng(0).normal(size=(10, 3))

ESTIMATORS = [
    RDMTransformer(),
    RDMTransformer(metric="zscore_correlation"),
    RDMTransformer(metric="cosine"),
    RDMTransformer(metric="euclidean"),
    WeightedRDMModel(),
    WeightedRDMModel(criterion="pearson"),
    WeightedRDMModel(nonnegative=True, normalize=False),
    NetworkRDM(_ANY_WIDTH, metric="euclidean", random_state=0),
    # precomputed: the checks pass euclidean distance matrices; euclidean: feature rows
    # (cosine is undefined for the zero rows of some checks)
    FiedlerPartition(),
    FiedlerPartition(metric="euclidean"),
    RDMRegularizedClassifier(rdm_layer="1", rdm_stimuli=_STIMULI,
                             rdm_target=compute_rdm(_STIMULI, metric="euclidean"),
                             rdm_batch_size=5, max_epochs=5, random_state=0),
]
