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
from .gridvae import GridVAE
from .latent_regularizers import LatentRegularizerMixin, latent_regularization
from .meta_autoencoder import MetaManifoldAutoencoder, MLDGNet, ReconstructionMetrics
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
    "GridVAE",
    "LatentRegularizerMixin",
    "MLDGNet",
    "MetaManifoldAutoencoder",
    "NeighborhoodHoldout",
    "ReconstructionMetrics",
    "VAEClassifier",
    "VAEGenerator",
    "grid_codes",
    "latent_regularization",
    "patch_attack",
    "rectangular_patch_mask",
]
