"""Linear maps between network embeddings and the model-agnostic adversarial detector.

Implements "Leveraging linear mapping for model-agnostic adversarial defense"
(Frontiers in Computer Science, 2023): :class:`LinearEmbeddingMap` fits the
least-squares map between two networks' embeddings, :class:`CanonicalAdversarialDetector`
screens every mapped network with one detector trained in a canonical space, and
:func:`cross_model_detection` runs the paper's Algorithm 1 end to end.

Depends on :mod:`geolearn.adversarial` (the attacks of Algorithm 1); the dependency
goes one way.

Representational similarity (from "Exploring fMRI RDMs: enhancing model robustness through
neurobiological data", Frontiers in Computer Science, 2023): :func:`compute_rdm` turns any
feature matrix into a representational dissimilarity matrix, :func:`compare_rdms` and
:func:`bootstrap_compare_rdms` correlate RDMs, and categorical model RDMs are fitted with
:class:`WeightedRDMModel`. :class:`FiedlerPartition` splits stimuli by the sign of the Fiedler
vector of ``1 - RDM`` (the paper's Algorithm 1); :func:`fiedler_pairwise` scores every class
pair with Bonferroni-corrected BCa bootstrap intervals. :class:`NetworkRDM` gives the RDMs of
a network's layers; :class:`RDMRegularizedClassifier` pulls a layer's RDM towards a reference
RDM while training, and :class:`RDMSimilarityScoring` / :func:`make_rdm_scorer` select models by
representational similarity (HMS).
"""

from ._detector import CanonicalAdversarialDetector
from ._embedding import FourierEmbedding, TorchEmbedder
from ._fiedler import (
    FiedlerPartition,
    FiedlerWarning,
    fiedler_accuracy,
    fiedler_pairwise,
    fiedler_vector,
)
from ._linear_map import LinearEmbeddingMap
from ._network_rdm import NetworkRDM
from ._protocol import cross_model_detection, split_indices
from ._rdm import (
    categorical_rdm,
    category_rdms,
    compute_rdm,
    condense_rdm,
    mean_rdm,
    squareform_rdm,
    stack_condensed,
)
from ._rdm_compare import bootstrap_compare_rdms, compare_rdms
from ._rdm_estimators import RDMTransformer, WeightedRDMModel
from ._rdm_scoring import RDMSimilarityScoring, make_rdm_scorer
from ._rdm_training import RDMLoss, RDMRegularizedClassifier, differentiable_rdm
from .metrics import embedding_mse

__all__ = [
    "CanonicalAdversarialDetector",
    "FiedlerPartition",
    "FiedlerWarning",
    "FourierEmbedding",
    "LinearEmbeddingMap",
    "NetworkRDM",
    "RDMLoss",
    "RDMRegularizedClassifier",
    "RDMSimilarityScoring",
    "RDMTransformer",
    "TorchEmbedder",
    "WeightedRDMModel",
    "bootstrap_compare_rdms",
    "categorical_rdm",
    "category_rdms",
    "compare_rdms",
    "compute_rdm",
    "condense_rdm",
    "cross_model_detection",
    "differentiable_rdm",
    "embedding_mse",
    "fiedler_accuracy",
    "fiedler_pairwise",
    "fiedler_vector",
    "make_rdm_scorer",
    "mean_rdm",
    "split_indices",
    "squareform_rdm",
    "stack_condensed",
]
