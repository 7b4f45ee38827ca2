"""Estimator-check instances of the subspaces family (2-D input: one vector per set)."""

from geolearn.subspaces import (
                                SVBF,
                                CentroidSoftmaxClassifier,
                                SubspaceEmbedding,
                                SVBFClassifier,
                                SVBFNetClassifier,
)

ESTIMATORS = [
    SVBF(n_components=1, random_state=0),
    SVBFClassifier(n_components=1, random_state=0),
    CentroidSoftmaxClassifier(max_epochs=100, random_state=0),
    SubspaceEmbedding(),
    SVBFNetClassifier(n_components=1, max_epochs=5, lr=0.05, verbose=0, random_state=0),
]
