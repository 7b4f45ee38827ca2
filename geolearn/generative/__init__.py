"""Image manifolds, probabilistically and semantically: GridVAE and its companions.

From "Probabilistic and semantic descriptions of image manifolds and their
applications": a VAE with a grid mixture prior whose latent dimensions are
discrete symbols (:class:`GridVAE`), the VAE classifier of Eq. 29
(:class:`VAEClassifier`), ELBO purification (:class:`ELBOPurifier`), flow and
diffusion-chain log-likelihoods (:class:`FlowDensity`, :class:`DiffusionDensity`),
patch attacks and emergent-language metrics.

Built on :mod:`geolearn.adversarial` (one way): :func:`patch_attack` is implemented
there and re-exported here. Like the attacks, :class:`ELBOPurifier` reaches the VAE
through :func:`geolearn.models.as_model` (its ``frozen`` context and input
gradients); the torch estimators train through
:class:`geolearn.models.SkorchTrainingMixin`.
"""

from ._grid import grid_codes
from .attacks import patch_attack, rectangular_patch_mask
from .diffusion import DiffusionDensity
from .flow import FlowDensity
from .gridvae import GridVAE
from .purification import ELBOPurifier
from .vae_classifier import VAEClassifier

__all__ = [
    "DiffusionDensity",
    "ELBOPurifier",
    "FlowDensity",
    "GridVAE",
    "VAEClassifier",
    "grid_codes",
    "patch_attack",
    "rectangular_patch_mask",
]
