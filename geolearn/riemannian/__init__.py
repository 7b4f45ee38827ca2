"""Riemannian geometry of representations: pullback metrics, volume elements, curvature.

A differentiable feature map (a network layer, or a kernel's implicit map) pulls
the Euclidean metric of feature space back to input space. This package
computes that metric, its log volume element (the local area magnification)
and its Ricci scalar curvature, on points, paths, planes and grids
(Zavatone-Veth et al., "How does training shape the Riemannian geometry of
neural network representations?"), and :class:`ConformalKernelSVC`, the
Amari–Wu SVM whose kernel is conformally magnified around its support vectors.

Builds on :mod:`geolearn.models` (Jacobians through the adapter layer) only.
"""

from . import analytic
from ._conformal import ConformalKernelSVC
from ._estimator import RiemannianFeatureGeometry
from ._kernels import (
    KernelMetric,
    erf_nngp_kernel,
    laplacian_kernel,
    linear_kernel,
    mahalanobis_rbf_kernel,
    polynomial_kernel,
    rbf_kernel,
)
from ._metrics import MetricField, PullbackMetric
from ._shallow import Erf, ShallowNet, ShallowNetworkGeometry

__all__ = [
    "ConformalKernelSVC",
    "Erf",
    "KernelMetric",
    "MetricField",
    "PullbackMetric",
    "RiemannianFeatureGeometry",
    "ShallowNet",
    "ShallowNetworkGeometry",
    "analytic",
    "erf_nngp_kernel",
    "laplacian_kernel",
    "linear_kernel",
    "mahalanobis_rbf_kernel",
    "polynomial_kernel",
    "rbf_kernel",
]
