"""Adversarial attacks shared by every family: FGSM, PGD, Carlini-Wagner L2 and patch attacks.

Every attack works on any differentiable classifier that :func:`geolearn.models.as_model`
accepts (torch modules, fitted skorch nets, scikit-learn MLPs, fitted estimators that train
a torch module such as :class:`geolearn.generative.VAEClassifier`: this package imports no
other family). They take inputs in a box ``clip=(lo, hi)``; FGSM, PGD and Carlini-Wagner
return float32 arrays shaped like their input, :func:`patch_attack` float64 rows.
"""

from ._attacks import carlini_wagner_l2, fgsm, patch_attack, pgd

__all__ = ["carlini_wagner_l2", "fgsm", "patch_attack", "pgd"]
