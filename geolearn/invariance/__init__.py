"""Learned invariance: finite groups, the LI / DI / SI metrics and InvariantClassifier.

Implements "On genuine invariance learning without weight-tying": data
augmentation (DA), invariance regularisation (IR) and weight-tying (WT) as
settings of :class:`InvariantClassifier`, and the metrics telling genuine
invariance from output-level invariance, usable on any model through
:func:`geolearn.models.as_model`.
"""

from ._classifier import InvariantClassifier
from ._groups import FiniteGroup
from .metrics import (
    distribution_invariance,
    integrated_gradients,
    jacobian_sigma_max,
    logit_invariance,
    make_invariance_scorer,
    normalized_logit_invariance,
    refit_best_subject_to,
    saliency_invariance,
    saliency_map,
)

__all__ = [
    "FiniteGroup",
    "InvariantClassifier",
    "distribution_invariance",
    "integrated_gradients",
    "jacobian_sigma_max",
    "logit_invariance",
    "make_invariance_scorer",
    "normalized_logit_invariance",
    "refit_best_subject_to",
    "saliency_invariance",
    "saliency_map",
]
