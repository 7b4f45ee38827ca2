"""Display classes, one per kind of picture (matplotlib, imported lazily).

Each family keeps its Displays in ``geolearn/plotting/_<family>.py``. Displays
follow scikit-learn's convention: ``from_estimator`` (an estimator computes the
data) or ``from_results`` (precomputed results) builds and draws,
``plot(ax=None)`` draws and returns self, with ``ax_``,
``figure_`` and the artists as attributes. matplotlib is imported only when a
Display draws (the ``plot`` extra).
"""

from ._adversarial import AdversarialExamplesDisplay, RiskCurveDisplay
from ._base import check_matplotlib
from ._diffeo import DeformationGridDisplay, StabilityCurveDisplay
from ._disentanglement import AttributeTraversalDisplay, BlockOrthogonalityDisplay
from ._generative import (
    GeneratedSamplesDisplay,
    LatentGridDisplay,
    LatentTraversalDisplay,
)
from ._inspection import GeometryHistoryDisplay
from ._invariance import InvarianceReportDisplay, SaliencyOrbitDisplay
from ._manifold import DiffusionEmbeddingDisplay, NystromProjectionDisplay
from ._meta_learning import ReconstructionDisplay, TrainingCurvesDisplay
from ._ood import InpaintingDisplay, OODScoreDisplay
from ._polytopes import PolytopePartitionDisplay, SegmentRegionsDisplay
from ._rdm import FiedlerDisplay, RDMComparisonDisplay, RDMDisplay
from ._representations import CanonicalSpaceDisplay, DetectionScoreDisplay
from ._riemannian import GeometrySliceDisplay
from ._subspaces import PrincipalAnglesDisplay, SVBFConvergenceDisplay
from ._topology import PersistenceDiagramDisplay

__all__ = [
    "AdversarialExamplesDisplay",
    "AttributeTraversalDisplay",
    "BlockOrthogonalityDisplay",
    "CanonicalSpaceDisplay",
    "DeformationGridDisplay",
    "DetectionScoreDisplay",
    "DiffusionEmbeddingDisplay",
    "FiedlerDisplay",
    "GeneratedSamplesDisplay",
    "GeometryHistoryDisplay",
    "GeometrySliceDisplay",
    "InpaintingDisplay",
    "InvarianceReportDisplay",
    "LatentGridDisplay",
    "LatentTraversalDisplay",
    "NystromProjectionDisplay",
    "OODScoreDisplay",
    "PersistenceDiagramDisplay",
    "PolytopePartitionDisplay",
    "PrincipalAnglesDisplay",
    "RDMComparisonDisplay",
    "RDMDisplay",
    "ReconstructionDisplay",
    "RiskCurveDisplay",
    "SVBFConvergenceDisplay",
    "SaliencyOrbitDisplay",
    "SegmentRegionsDisplay",
    "StabilityCurveDisplay",
    "TrainingCurvesDisplay",
    "check_matplotlib",
]
