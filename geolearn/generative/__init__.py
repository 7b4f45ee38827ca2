"""Image manifolds, probabilistically and semantically: GridVAE and its companions.

From "Probabilistic and semantic descriptions of image manifolds and their
applications": a VAE with a grid mixture prior whose latent dimensions are
discrete symbols (:class:`GridVAE`), the VAE classifier of Eq. 29
(:class:`VAEClassifier`), ELBO purification (:class:`ELBOPurifier`), flow and
diffusion-chain log-likelihoods (:class:`FlowDensity`, :class:`DiffusionDensity`),
patch attacks and emergent-language metrics.

From "Implications of data topology for deep generative models": three generators to
compare on data of known topology (:mod:`geolearn.datasets`, :mod:`geolearn.topology`),
each with ``sample``: the Gaussian-prior :class:`VAEGenerator`, the
:class:`ChartAutoencoder` (several latent charts) and the :class:`DiffusionGenerator`
(a DDPM). Every diffusion estimator is built on the one DDPM core,
:mod:`geolearn.generative.ddpm`.

From "Recovering manifold representations via unsupervised meta-learning" (MRML): the
:class:`MetaManifoldAutoencoder`, trained by MLDG episodes (:class:`EpisodicSampler`,
skorch's :class:`MLDGNet`), the CV splitter :class:`NeighborhoodHoldout`, the
:class:`ReconstructionMetrics` callback, and the manifold-reconstruction metrics of
:mod:`geolearn.generative.metrics`
(:func:`~geolearn.generative.metrics.persistence_wasserstein`,
:func:`~geolearn.generative.metrics.knn_spectral_distance`,
:func:`~geolearn.generative.metrics.make_manifold_scorer`), usable as GridSearchCV
scorers of any estimator with ``reconstruct``.

From "Orthogonality and graph divergence losses promote disentanglement in generative
models": the torch losses :class:`OrthogonalityLoss` (orthogonal latent blocks) and
:class:`GraphDivergenceLoss` (a smoothed 1-NN two-sample statistic, with the numpy tests
:func:`knn_graph_statistic`, :func:`smoothed_knn_statistic`,
:func:`knn_permutation_pvalue`), :class:`LatentRegularizerMixin` to add them to any
skorch autoencoder net, the :class:`DisentangledAttributeAutoencoder` (DAE-OG), and the
disentanglement metrics of :mod:`geolearn.generative.metrics`.

From "Leveraging diffusion models for unsupervised out-of-distribution detection on image
manifold" (LMD: Lift, Map, Detect): the :class:`InpaintingOODDetector` (an outlier
detector scoring images by how much diffusion inpainting changes them, on the DDPM
core) and the AUROC helpers :func:`ood_roc_auc` and :func:`make_ood_auroc_scorer`.

Built on :mod:`geolearn.topology` (one way): the manifold-reconstruction metrics take
their persistence diagrams and diagram distances from its public
:func:`~geolearn.topology.persistence_diagrams` and
:func:`~geolearn.topology.diagram_wasserstein`.

Built on :mod:`geolearn.adversarial` (one way): :func:`patch_attack` is implemented
there and re-exported here. Like the attacks, :class:`ELBOPurifier` reaches the VAE
through :func:`geolearn.models.as_model` (its ``frozen`` context and input
gradients); the torch estimators train through
:class:`geolearn.models.SkorchTrainingMixin`.
"""

from ._grid import grid_codes
from .attacks import patch_attack, rectangular_patch_mask
from .chart_autoencoder import ChartAutoencoder
from .dae import DisentangledAttributeAutoencoder
from .diffusion import DiffusionDensity
from .diffusion_generator import DiffusionGenerator
from .episodes import EpisodicSampler, NeighborhoodHoldout
from .flow import FlowDensity
from .graph_divergence import (
    GraphDivergenceLoss,
    knn_graph_statistic,
    knn_permutation_pvalue,
    smoothed_knn_statistic,
)
from .gridvae import GridVAE
from .latent_regularizers import LatentRegularizerMixin, latent_regularization
from .meta_autoencoder import MetaManifoldAutoencoder, MLDGNet, ReconstructionMetrics
from .metrics import make_ood_auroc_scorer, ood_roc_auc
from .ood import InpaintingOODDetector
from .orthogonality import OrthogonalityLoss
from .purification import ELBOPurifier
from .vae_classifier import VAEClassifier
from .vae_generator import VAEGenerator

__all__ = [
    "ChartAutoencoder",
    "DiffusionDensity",
    "DiffusionGenerator",
    "DisentangledAttributeAutoencoder",
    "ELBOPurifier",
    "EpisodicSampler",
    "FlowDensity",
    "GraphDivergenceLoss",
    "GridVAE",
    "InpaintingOODDetector",
    "LatentRegularizerMixin",
    "MLDGNet",
    "MetaManifoldAutoencoder",
    "NeighborhoodHoldout",
    "OrthogonalityLoss",
    "ReconstructionMetrics",
    "VAEClassifier",
    "VAEGenerator",
    "grid_codes",
    "knn_graph_statistic",
    "knn_permutation_pvalue",
    "latent_regularization",
    "make_ood_auroc_scorer",
    "ood_roc_auc",
    "patch_attack",
    "rectangular_patch_mask",
    "smoothed_knn_statistic",
]
