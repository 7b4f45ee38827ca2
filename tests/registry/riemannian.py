"""Estimator-check instances of the riemannian family."""

from torch import nn

from geolearn.riemannian import ConformalKernelSVC, RiemannianFeatureGeometry

ESTIMATORS = [
    # an elementwise map works for any input dimension the checks use
    RiemannianFeatureGeometry(feature_map=nn.Tanh()),
    RiemannianFeatureGeometry(kernel="poly", kernel_params={"degree": 2},
                              quantities=("log_volume", "rank")),
    ConformalKernelSVC(),
]
