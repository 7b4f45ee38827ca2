"""Estimator-check instances of the RDM (representational similarity) estimators."""

from geolearn.representations import RDMTransformer, WeightedRDMModel

ESTIMATORS = [
    RDMTransformer(),
    RDMTransformer(metric="zscore_correlation"),
    RDMTransformer(metric="cosine"),
    RDMTransformer(metric="euclidean"),
    WeightedRDMModel(),
    WeightedRDMModel(criterion="pearson"),
    WeightedRDMModel(nonnegative=True, normalize=False),
]
