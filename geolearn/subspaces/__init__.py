"""Subspace geometry: Grassmannian tools and Schubert varieties of best fit.

Collections of data sets are summarised by the subspaces their vectors span
(points of a Grassmannian). :class:`SVBF` fits a Schubert variety
``{V : dim(V ∩ W) >= c}`` to such a collection (Karimov, Kirby & Peterson,
2023); :class:`SVBFClassifier` fits one per class and predicts the nearest;
:class:`SVBFNode` is the same computation as a torch layer.
"""

from ._classifier import CentroidSoftmaxClassifier, SVBFClassifier
from ._embedding import SubspaceEmbedding, make_subspace_sets
from ._grassmann import flag_mean, principal_angles, schubert_distance
from ._net import SVBFNetClassifier
from ._node import SVBFNode
from ._svbf import SVBF, working_dimension

__all__ = [
    "CentroidSoftmaxClassifier",
    "SVBF",
    "SVBFClassifier",
    "SVBFNetClassifier",
    "SVBFNode",
    "SubspaceEmbedding",
    "flag_mean",
    "make_subspace_sets",
    "principal_angles",
    "schubert_distance",
    "working_dimension",
]
