"""Linear regions of ReLU networks (paper 1) and their local linear maps (paper 2).

A ReLU network cuts its input space into convex polyhedra, each with one
affine map. :class:`ReLUPolytopes` computes them exactly for trained MLPs:
bit strings, H-representations, facets and Chebyshev balls by linear
programming, regions along segments and 2-D slices, enumeration with the dual
graph and the papers' statistics; for conv ReLU nets (with max and average
pooling) the bit strings, local maps, segments and slices.
:class:`LocalLinearClustering` and :class:`LocalLinearMap` treat the local
affine maps as points of a dual space (network reduction by k-means;
least-squares maps between two networks).
"""

from ._conv import ConvReLUNet
from ._enumeration import dual_distances
from ._local_linear import LocalLinearClustering, LocalLinearMap, local_rows
from ._network import ReLUNet, as_relu_network
from ._polytope import Polytope
from ._relu_polytopes import ReLUPolytopes
from ._segments import segment_region_counts
from ._stats import describe, nn_agreement

__all__ = [
    "ConvReLUNet",
    "LocalLinearClustering",
    "LocalLinearMap",
    "Polytope",
    "ReLUNet",
    "ReLUPolytopes",
    "as_relu_network",
    "describe",
    "dual_distances",
    "local_rows",
    "nn_agreement",
    "segment_region_counts",
]
