"""Geometry of a model tracked through training, and a one-call geometry report of any model.

Named after :mod:`sklearn.inspection`. :class:`GeometryTracker` is a skorch
callback recording geometry measures (``R_f``, the log volume element, an
invariance error, the similarity of a layer's RDM to a target, the density of
linear regions) in a net's history as it trains, the question the papers ask
of training ("How does training shape the Riemannian geometry of neural network
representations?", Zavatone-Veth et al.; R_f falling as good architectures
train, Petrini et al.). :func:`geometry_report` computes every measure that
applies to one model or several and says why the others were skipped.

Built on the public names of :mod:`geolearn.models` (``as_model``, ``frozen``),
:mod:`geolearn.diffeo` (``relative_stability``), :mod:`geolearn.riemannian`
(``RiemannianFeatureGeometry``), :mod:`geolearn.invariance`
(``logit_invariance``), :mod:`geolearn.representations` (``compute_rdm``,
``compare_rdms``, ``categorical_rdm``) and :mod:`geolearn.polytopes`
(``as_relu_network``, ``segment_region_counts``).
"""

from ._measures import MEASURES, MeasureUnavailableError, register_measure
from ._report import GeometryReport, geometry_report
from ._tracker import GeometryTracker

__all__ = [
    "MEASURES",
    "GeometryReport",
    "GeometryTracker",
    "MeasureUnavailableError",
    "geometry_report",
    "register_measure",
]
