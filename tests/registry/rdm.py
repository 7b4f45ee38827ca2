"""Estimator-check instances of the RDM (representational similarity) estimators.

The checks vary the number of features, so NetworkRDM reads a module that takes any width
(average-pooled to 4 values before its Linear layer), with the euclidean metric (1-feature
rows are constant, so their correlation distance is undefined), and RDMRegularizedClassifier
takes reference stimuli of each check's width (``CHECK_PARAMS``).
"""

import numpy as np
import torch

from geolearn.representations import (
    FiedlerPartition,
    NetworkRDM,
    RDMRegularizedClassifier,
    RDMTransformer,
    WeightedRDMModel,
    compute_rdm,
)

_ANY_WIDTH = torch.nn.Sequential(torch.nn.Unflatten(1, (1, -1)), torch.nn.AdaptiveAvgPool1d(4),
                                 torch.nn.Flatten(), torch.nn.Linear(4, 3))


def _stimuli(n_features):
    """Reference stimuli of ``n_features`` features and their RDM."""
    stimuli = np.random.default_rng(0).normal(size=(10, n_features))
    return {"rdm_stimuli": stimuli, "rdm_target": compute_rdm(stimuli, metric="euclidean")}


#: The width of the checks' tables that have not 3 features, the registered instance's.
_WIDTHS = {
    **dict.fromkeys(["check_classifier_data_not_an_array", "check_classifiers_classes",
                     "check_classifiers_train", "check_estimators_fit_returns_self",
                     "check_estimators_overwrite_params", "check_fit_check_is_fitted",
                     "check_fit_idempotent", "check_n_features_in",
                     "check_readonly_memmap_input", "check_sample_weights_not_an_array",
                     "check_sample_weights_not_overwritten", "check_sample_weights_pandas_series",
                     "check_sample_weights_shape"], 2),
    "check_classifiers_one_label_sample_weights": 10,
    "check_sample_weight_equivalence_on_dense_data": 30,
    "check_n_features_in_after_fitting": 4,
    "check_positive_only_tag_during_fit": 4,
    "check_estimators_dtypes": 5,
    "check_dtype_object": 10,
    "check_fit2d_1feature": 1,
}

#: RDMRegularizedClassifier's reference stimuli pass through the module with X, so they have
#: X's width: each check runs with stimuli of its tables' width.
CHECK_PARAMS = {RDMRegularizedClassifier: {check: _stimuli(width)
                                           for check, width in _WIDTHS.items()}}

ESTIMATORS = [
    RDMTransformer(),
    RDMTransformer(metric="zscore_correlation"),
    RDMTransformer(metric="cosine"),
    RDMTransformer(metric="euclidean"),
    WeightedRDMModel(),
    WeightedRDMModel(criterion="pearson"),
    WeightedRDMModel(nonnegative=True, normalize=False),
    NetworkRDM(_ANY_WIDTH, metric="euclidean", random_state=0),
    # precomputed: the checks pass euclidean distance matrices; euclidean: feature rows
    # (cosine is undefined for the zero rows of some checks)
    FiedlerPartition(),
    FiedlerPartition(metric="euclidean"),
    # Adam: plain SGD needs far more epochs to fit the checks' blobs
    RDMRegularizedClassifier(rdm_layer="1", **_stimuli(3), rdm_batch_size=5,
                             optimizer=torch.optim.Adam, lr=0.05, max_epochs=20, random_state=0),
]
