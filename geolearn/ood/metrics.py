"""AUROC of out-of-distribution scores (LMD's evaluation), and its GridSearchCV scorer."""

import numpy as np
from sklearn.metrics import make_scorer, roc_auc_score
from sklearn.utils.validation import check_array, column_or_1d

__all__ = ["make_ood_auroc_scorer", "ood_roc_auc"]


def ood_roc_auc(scores_in, scores_out):
    """AUROC of OOD scores: the chance that an OOD image scores above an in-distribution one.

    ``roc_auc_score(y, s)`` with ``y = 1`` for the OOD images (the paper's convention;
    scores grow with the evidence of being OOD, as ``InpaintingOODDetector.ood_score``).

    Parameters
    ----------
    scores_in : array-like of shape (n_in,)
        Scores of in-distribution images.
    scores_out : array-like of shape (n_out,)
        Scores of out-of-distribution images.

    Returns
    -------
    auroc : float

    Examples
    --------
    >>> from geolearn.ood import ood_roc_auc
    >>> ood_roc_auc([0.1, 0.2, 0.3], [0.25, 0.4])
    0.8333333333333334
    """
    s_in, s_out = (column_or_1d(check_array(s, ensure_2d=False, dtype=np.float64,
                                            ensure_min_samples=0, input_name=name))
                   for s, name in [(scores_in, "scores_in"), (scores_out, "scores_out")])
    if not (len(s_in) and len(s_out)):
        raise ValueError(f"ood_roc_auc needs scores of both kinds; got {len(s_in)} "
                         f"in-distribution and {len(s_out)} OOD scores.")
    y = np.r_[np.zeros(len(s_in)), np.ones(len(s_out))]
    return float(roc_auc_score(y, np.r_[s_in, s_out]))


def _ood_auroc(y_true, normality):
    """``roc_auc_score(y == -1, -score_samples)`` on outlier labels +1 / -1."""
    y_true = column_or_1d(y_true)
    if not np.isin(y_true, (1, -1)).all():
        raise ValueError("the OOD AUROC scorer needs y in {+1 (inlier), -1 (outlier)}; got "
                         f"labels {np.unique(y_true)[:5].tolist()}.")
    return float(roc_auc_score(y_true == -1, -np.asarray(normality)))


def make_ood_auroc_scorer():
    """AUROC scorer for GridSearchCV: ``roc_auc_score(y == -1, -score_samples(X))``.

    ``y`` holds scikit-learn's outlier labels (+1 inlier, -1 outlier); the OOD
    images are the positives and ``-score_samples`` their score (for
    :class:`~geolearn.ood.InpaintingOODDetector` its ``ood_score``), so any
    outlier detector or a Pipeline ending in one is scored. Greater is better.

    Returns
    -------
    scorer : callable ``scorer(estimator, X, y) -> float``
        :func:`sklearn.metrics.make_scorer` of the AUROC with
        ``response_method="score_samples"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import IsolationForest
    >>> from geolearn.ood import make_ood_auroc_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(size=(50, 2)), rng.normal(6, 1, size=(10, 2))]
    >>> y = np.r_[np.ones(50), -np.ones(10)]
    >>> make_ood_auroc_scorer()(IsolationForest(random_state=0).fit(X[:50]), X, y)
    1.0
    """
    # a one-method tuple: make_scorer takes any method name in a tuple, only three alone
    return make_scorer(_ood_auroc, response_method=("score_samples",))
