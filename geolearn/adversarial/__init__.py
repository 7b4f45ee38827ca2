"""Adversarial attacks shared by every family, and the manifold decomposition of adversarial risk.

Every attack works on any differentiable classifier that :func:`geolearn.models.as_model`
accepts (torch modules, fitted skorch nets, scikit-learn MLPs, fitted estimators that train
a torch module such as :class:`geolearn.generative.VAEClassifier`). They take inputs in a box
``clip=(lo, hi)``; FGSM, PGD and Carlini-Wagner return float32 arrays shaped like their
input, :func:`patch_attack` float64 ones. :func:`pgd` searches L2 or L-infinity balls, with
restarts, a margin loss, a per-sample projection hook and, with ``stop_on_success``, the
first misclassified point of each ball; :func:`fgsm` is its one-step case.

The manifold decomposition ("Manifold-driven decomposition for adversarial robustness",
Frontiers in Computer Science, 2024): :func:`risk_decomposition` measures the standard,
normal, in-manifold and nearby-normal risks with :func:`normal_attack` and
:func:`in_manifold_attack`, and checks Theorem 1's bound sample by sample;
:class:`RiskDecomposition` and :func:`make_risk_scorer` bring it to scikit-learn;
:class:`ManifoldAdversarialClassifier` trains against these adversaries;
:func:`make_pessimistic_example` is the paper's Theorem 2.

Dependencies: this package imports ``geolearn.manifold`` (one way) for its manifold
objects (:class:`geolearn.manifold.SphereManifold` and friends); no other family.
"""

from ._attacks import carlini_wagner_l2, patch_attack
from ._manifold_attacks import in_manifold_attack, normal_attack
from ._manifold_training import ManifoldAdversarialClassifier
from ._pessimistic import make_pessimistic_example
from ._pgd import fgsm, pgd
from ._risk import (
    RiskDecomposition,
    make_risk_scorer,
    risk_curve,
    risk_decomposition,
)

__all__ = [
    "ManifoldAdversarialClassifier",
    "RiskDecomposition",
    "carlini_wagner_l2",
    "fgsm",
    "in_manifold_attack",
    "make_pessimistic_example",
    "make_risk_scorer",
    "normal_attack",
    "patch_attack",
    "pgd",
    "risk_curve",
    "risk_decomposition",
]
