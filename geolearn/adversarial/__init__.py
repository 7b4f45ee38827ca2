"""Adversarial attacks shared by every family: FGSM, PGD and Carlini-Wagner L2.

The attacks work on any differentiable classifier that :func:`geolearn.models.as_model`
accepts (torch modules, fitted skorch nets, scikit-learn MLPs), take inputs in a box
``clip=(lo, hi)`` and return float32 arrays shaped like their input.
"""

from ._attacks import carlini_wagner_l2, fgsm, pgd

__all__ = ["carlini_wagner_l2", "fgsm", "pgd"]
