"""Image manifolds, probabilistically and semantically: GridVAE and its companions.

From "Probabilistic and semantic descriptions of image manifolds and their
applications": a VAE with a grid mixture prior whose latent dimensions are
discrete symbols (:class:`GridVAE`, :func:`grid_codes`), the VAE classifier of Eq. 29
(:class:`VAEClassifier`), ELBO purification (:class:`ELBOPurifier`), flow and
diffusion-chain log-likelihoods (:class:`FlowDensity`, :class:`DiffusionDensity`),
patch attacks, and the clustering and emergent-language metrics of
:mod:`geolearn.generative.metrics`.

From "Implications of data topology for deep generative models": three generators to
compare on data of known topology (:mod:`geolearn.datasets`, :mod:`geolearn.topology`),
each with ``sample``: the Gaussian-prior :class:`VAEGenerator`, the
:class:`ChartAutoencoder` (several latent charts) and the :class:`DiffusionGenerator`
(a DDPM).

Every diffusion estimator is built on one DDPM core, the public module
:mod:`geolearn.generative.ddpm` (noise schedules, noise predictors, the denoising
objective, samplers, inpainting and its masks): :mod:`geolearn.ood` builds its detector
on it. The families of the other generative papers, :mod:`geolearn.ood`,
:mod:`geolearn.disentanglement` and :mod:`geolearn.meta_learning`, reach this package only
through its public names; it imports none of them.

Built on :mod:`geolearn.adversarial` (one way): :func:`patch_attack` is implemented
there and re-exported here. Like the attacks, :class:`ELBOPurifier` reaches the VAE
through :func:`geolearn.models.as_model` (its ``frozen`` context and input
gradients); the torch estimators train through
:class:`geolearn.models.SkorchTrainingMixin`.
"""

from ._attacks import patch_attack, rectangular_patch_mask
from ._chart_autoencoder import ChartAutoencoder
from ._diffusion import DiffusionDensity
from ._diffusion_generator import DiffusionGenerator
from ._flow import FlowDensity
from ._grid import grid_codes
from ._gridvae import GridVAE
from ._purification import ELBOPurifier
from ._vae_classifier import VAEClassifier
from ._vae_generator import VAEGenerator

__all__ = [
    "ChartAutoencoder",
    "DiffusionDensity",
    "DiffusionGenerator",
    "ELBOPurifier",
    "FlowDensity",
    "GridVAE",
    "VAEClassifier",
    "VAEGenerator",
    "grid_codes",
    "patch_attack",
    "rectangular_patch_mask",
]
