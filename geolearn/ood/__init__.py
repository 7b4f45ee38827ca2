"""Out-of-distribution detection by diffusion inpainting (LMD).

From "Leveraging diffusion models for unsupervised out-of-distribution detection on image
manifold" (LMD: Lift, Map, Detect): the :class:`InpaintingOODDetector`, an outlier detector
that scores an image by how much diffusion inpainting changes it, and the AUROC helpers of
:mod:`geolearn.ood.metrics` (:func:`~geolearn.ood.metrics.ood_roc_auc`,
:func:`~geolearn.ood.metrics.make_ood_auroc_scorer`).

Built on :mod:`geolearn.generative` (one way): the detector's diffusion model is the
generative family's DDPM core, :mod:`geolearn.generative.ddpm` (schedule, noise
predictors, respaced grid, replacement inpainting sampler, masks). It trains through
:class:`geolearn.models.ObjectiveNet`, and reaches the LPIPS network of its ``"lpips"``
distance through :func:`geolearn.models.as_model`.
"""

from ._detector import InpaintingOODDetector
from .metrics import make_ood_auroc_scorer, ood_roc_auc

__all__ = ["InpaintingOODDetector", "make_ood_auroc_scorer", "ood_roc_auc"]
