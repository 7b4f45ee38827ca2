"""geolearn: the geometry of learning as scikit-learn estimators.

Subpackages are imported on demand (``import geolearn.diffeo``); importing
``geolearn`` itself pulls in nothing heavy.
"""

__version__ = "0.1.0.dev0"

__all__ = [
    "models",
    "datasets",
    "diffeo",
    "invariance",
    "riemannian",
    "manifold",
    "polytopes",
    "subspaces",
    "representations",
    "adversarial",
    "generative",
    "ood",
    "disentanglement",
    "meta_learning",
    "topology",
    "inspection",
    "plotting",
]
