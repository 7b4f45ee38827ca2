"""Persistent homology and distribution metrics for data with known topology.

From "Implications of data topology for deep generative models" (Jin et al. 2024):
Vietoris-Rips persistence diagrams (:func:`persistence_diagrams`: H0 exactly from the
minimum spanning tree, higher dimensions by giotto-ph, the ``tda`` extra, or by an exact
built-in reduction on small inputs), diagram distances, Betti numbers and curves, a
transformer turning point clouds into topological features
(:class:`PersistenceTransformer`), a scorer ranking generators by the diagram distance
of their samples to the data, and the paper's distribution metrics
(:mod:`geolearn.topology.metrics`: empirical W2 and its protocol, Frechet distance,
density/coverage, cyclooctane bond-length error). Data sets with known topology live in
:mod:`geolearn.datasets`; the bond-length error is built on its public
:func:`~geolearn.datasets.bond_lengths` and ``CC_BOND``.
"""

from ._betti import betti_curve, betti_numbers
from ._distances import diagram_bottleneck, diagram_wasserstein
from ._persistence import persistence_diagrams
from ._scorers import make_diagram_distance_scorer
from ._transformer import PersistenceTransformer
from .metrics import (
    bond_length_error,
    density_coverage,
    empirical_wasserstein2,
    frechet_distance,
    wasserstein2_protocol,
)

__all__ = [
    "PersistenceTransformer",
    "betti_curve",
    "betti_numbers",
    "bond_length_error",
    "density_coverage",
    "diagram_bottleneck",
    "diagram_wasserstein",
    "empirical_wasserstein2",
    "frechet_distance",
    "make_diagram_distance_scorer",
    "persistence_diagrams",
    "wasserstein2_protocol",
]
