"""Disentangling autoencoders: orthogonal latent blocks and the graph divergence loss (DAE-OG).

From "Orthogonality and graph divergence losses promote disentanglement in generative
models": the torch losses :class:`OrthogonalityLoss` (orthogonal latent blocks) and
:class:`GraphDivergenceLoss` (a smoothed 1-NN two-sample statistic, with the numpy tests
:func:`knn_graph_statistic`, :func:`smoothed_knn_statistic`,
:func:`knn_permutation_pvalue`), :class:`LatentRegularizerMixin` and
:func:`latent_regularization` to add them to any skorch autoencoder net, the
:class:`DisentangledAttributeAutoencoder` (DAE-OG), and the supervised disentanglement
metrics of :mod:`geolearn.disentanglement.metrics` (MIG, MIG-sup, DCIMIG, JEMMIG, PSNR and
their GridSearchCV scorer).

Built on :mod:`geolearn.models` only: the autoencoder trains through
:class:`geolearn.models.SkorchTrainingMixin` with :class:`geolearn.models.ObjectiveNet`.
"""

from ._autoencoder import DisentangledAttributeAutoencoder
from ._graph_divergence import (
    GraphDivergenceLoss,
    knn_graph_statistic,
    knn_permutation_pvalue,
    smoothed_knn_statistic,
)
from ._latent_regularizers import LatentRegularizerMixin, latent_regularization
from ._orthogonality import OrthogonalityLoss

__all__ = [
    "DisentangledAttributeAutoencoder",
    "GraphDivergenceLoss",
    "LatentRegularizerMixin",
    "OrthogonalityLoss",
    "knn_graph_statistic",
    "knn_permutation_pvalue",
    "latent_regularization",
    "smoothed_knn_statistic",
]
