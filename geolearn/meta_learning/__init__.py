"""Autoencoders meta-learned to keep a manifold's shape where samples are scarce (MRML).

From "Recovering manifold representations via unsupervised meta-learning" (MRML): the
:class:`MetaManifoldAutoencoder`, trained by MLDG episodes (:class:`EpisodicSampler`,
skorch's :class:`MLDGNet`), the CV splitter :class:`NeighborhoodHoldout`, the
:class:`ReconstructionMetrics` callback, and the manifold-reconstruction metrics of
:mod:`geolearn.meta_learning.metrics`
(:func:`~geolearn.meta_learning.metrics.persistence_wasserstein`,
:func:`~geolearn.meta_learning.metrics.knn_spectral_distance`,
:func:`~geolearn.meta_learning.metrics.relative_reduction`,
:func:`~geolearn.meta_learning.metrics.make_manifold_scorer`), usable as GridSearchCV
scorers of any estimator with ``reconstruct``.

Built on :mod:`geolearn.topology` (one way): the metrics take their persistence diagrams
and diagram distances from its public :func:`~geolearn.topology.persistence_diagrams` and
:func:`~geolearn.topology.diagram_wasserstein`. The autoencoder trains through
:class:`geolearn.models.SkorchTrainingMixin`.
"""

from ._autoencoder import MetaManifoldAutoencoder, MLDGNet, ReconstructionMetrics
from ._episodes import EpisodicSampler, NeighborhoodHoldout

__all__ = [
    "EpisodicSampler",
    "MLDGNet",
    "MetaManifoldAutoencoder",
    "NeighborhoodHoldout",
    "ReconstructionMetrics",
]
