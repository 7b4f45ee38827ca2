"""Metrics of the generative family's discrete latent codes.

Clustering and emergent-language metrics of a discrete latent code such as GridVAE's
(plug-in estimates, nats): :func:`cluster_accuracy`, :func:`cluster_purity`,
:func:`disentangled_accuracy`, :func:`positional_disentanglement`,
:func:`topographic_similarity`, and :func:`attribute_neighbor_kl` for the neighbourhoods of
an embedding. Supervised disentanglement metrics (MIG and others) are in
:mod:`geolearn.disentanglement.metrics`, manifold-reconstruction metrics in
:mod:`geolearn.meta_learning.metrics`, and the AUROC of OOD scores in
:mod:`geolearn.ood.metrics`.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import pdist
from scipy.stats import spearmanr
from sklearn.metrics import mutual_info_score
from sklearn.metrics.cluster import contingency_matrix
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array, check_consistent_length

__all__ = [
    "attribute_neighbor_kl",
    "cluster_accuracy",
    "cluster_purity",
    "disentangled_accuracy",
    "positional_disentanglement",
    "topographic_similarity",
]


def _check_labels(y_true, y_pred):
    # labels of any type; float labels must be finite
    y_true, y_pred = (check_array(y, ensure_2d=False, dtype=None, ensure_min_samples=0,
                                  input_name=name).ravel()
                      for y, name in [(y_true, "y_true"), (y_pred, "y_pred")])
    check_consistent_length(y_true, y_pred)
    if len(y_true) == 0:
        raise ValueError("y_true and y_pred must be non-empty.")
    return y_true, y_pred


def _check_table(attributes, messages):
    A = check_array(attributes, ensure_2d=False, dtype=None, input_name="attributes")
    M = check_array(messages, ensure_2d=False, dtype=None, input_name="messages")
    A = A[:, None] if A.ndim == 1 else A
    M = M[:, None] if M.ndim == 1 else M
    check_consistent_length(A, M)
    return A, M


def cluster_accuracy(y_true, y_pred):
    """Best one-to-one matching accuracy between clusters and classes (Hungarian).

    Unmatched clusters count as errors.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)

    Returns
    -------
    accuracy : float

    Examples
    --------
    >>> from geolearn.generative.metrics import cluster_accuracy
    >>> cluster_accuracy([0, 0, 1, 1, 2], [5, 5, 3, 3, 3])
    0.8
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    C = contingency_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(C, maximize=True)
    return float(C[rows, cols].sum() / len(y_true))


def cluster_purity(y_true, y_pred):
    """Fraction of samples in the majority class of their cluster.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)

    Returns
    -------
    purity : float

    Examples
    --------
    >>> from geolearn.generative.metrics import cluster_purity
    >>> cluster_purity([0, 0, 1, 1, 2], [5, 5, 3, 3, 3])
    0.8
    """
    y_true, y_pred = _check_labels(y_true, y_pred)
    return float(contingency_matrix(y_true, y_pred).max(axis=0).sum() / len(y_true))


def disentangled_accuracy(attributes, messages):
    """DACC: best injective assignment of attributes to message positions, mean accuracy.

    Each attribute ``a_j`` is matched to a distinct position ``pi(j)`` and scored by
    ``cluster_accuracy(a_j, s_pi(j))``; the best assignment is found with the Hungarian
    algorithm on the (attribute x position) accuracy matrix.

    Parameters
    ----------
    attributes : array-like of shape (n_samples, n_attributes)
    messages : array-like of shape (n_samples, n_positions), n_positions >= n_attributes

    Returns
    -------
    dacc : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative.metrics import disentangled_accuracy
    >>> a = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    >>> disentangled_accuracy(a, a[:, ::-1])
    1.0
    """
    A, M = _check_table(attributes, messages)
    if A.shape[1] > M.shape[1]:
        raise ValueError(f"messages have {M.shape[1]} positions but there are {A.shape[1]} "
                         "attributes; need at least as many positions as attributes.")
    acc = np.array([[cluster_accuracy(A[:, j], M[:, m]) for m in range(M.shape[1])]
                    for j in range(A.shape[1])])
    rows, cols = linear_sum_assignment(acc, maximize=True)
    return float(acc[rows, cols].mean())


def _entropy(x):
    p = np.unique(x, return_counts=True)[1] / len(x)
    return float(-(p * np.log(p)).sum())


def positional_disentanglement(attributes, messages):
    """posdis: mean over informative positions of the normalised MI gap between attributes.

    For each position ``m`` with ``H(s_m) > 0``: ``(I(s_m; a_(1)) - I(s_m; a_(2))) / H(s_m)``
    where ``a_(1), a_(2)`` share the most mutual information with ``s_m``.

    Parameters
    ----------
    attributes : array-like of shape (n_samples, n_attributes), n_attributes >= 2
    messages : array-like of shape (n_samples, n_positions)

    Returns
    -------
    posdis : float (0 when no position carries information)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative.metrics import positional_disentanglement
    >>> a = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    >>> positional_disentanglement(a, a)
    1.0
    """
    A, M = _check_table(attributes, messages)
    if A.shape[1] < 2:
        raise ValueError("positional_disentanglement needs at least 2 attributes.")
    gaps = []
    for m in range(M.shape[1]):
        H = _entropy(M[:, m])
        if H <= 0:
            continue
        mi = np.sort([mutual_info_score(A[:, j], M[:, m]) for j in range(A.shape[1])])
        gaps.append((mi[-1] - mi[-2]) / H)
    return float(np.mean(gaps)) if gaps else 0.0


def topographic_similarity(attributes, messages, max_samples=2000, random_state=None):
    """Spearman correlation of pairwise Hamming distances of attributes and of messages.

    Parameters
    ----------
    attributes : array-like of shape (n_samples, n_attributes)
    messages : array-like of shape (n_samples, n_positions)
    max_samples : int, default=2000
        At most this many samples (a random subset) enter the all-pairs comparison.
    random_state : int, RandomState instance or None, default=None
        Picks the subset.

    Returns
    -------
    topsim : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative.metrics import topographic_similarity
    >>> a = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    >>> topographic_similarity(a, a + 3)
    1.0
    """
    A, M = _check_table(attributes, messages)
    if max_samples < 2:
        raise ValueError(f"max_samples must be at least 2; got {max_samples!r}.")
    if len(A) > max_samples:
        idx = check_random_state(random_state).choice(len(A), max_samples, replace=False)
        A, M = A[idx], M[idx]
    rho = spearmanr(pdist(A, "hamming"), pdist(M, "hamming")).statistic
    return float(rho)


def attribute_neighbor_kl(embedding, attributes):
    """Per-attribute KL between the attribute rate and its rate next to negative neighbours.

    ``KL_j = KL(Bern(p_j) || Bern(p_j|0))`` with ``p_j`` the mean of attribute ``j`` and
    ``p_j|0`` its mean over samples whose Euclidean nearest neighbour in the embedding
    (itself excluded) lacks the attribute (Section 3.3). Large values: the
    neighbourhoods of the embedding carry information about attribute ``j``.

    Parameters
    ----------
    embedding : array-like of shape (n_samples, n_dims)
    attributes : array-like of shape (n_samples, n_attributes) of {0, 1}

    Returns
    -------
    kl : ndarray of shape (n_attributes,)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative.metrics import attribute_neighbor_kl
    >>> E = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> A = np.array([[0], [0], [1], [1]])
    >>> float(attribute_neighbor_kl(E, A)[0]) > 1
    True
    """
    E = check_array(embedding, ensure_min_samples=2, input_name="embedding")
    A = check_array(attributes, ensure_2d=False, input_name="attributes")
    A = A[:, None] if A.ndim == 1 else A
    check_consistent_length(E, A)
    if not np.isin(A, (0, 1)).all():
        raise ValueError("attributes must be binary (0/1).")
    nn = NearestNeighbors(n_neighbors=2).fit(E).kneighbors(E, return_distance=False)
    # the first neighbour is the point itself unless duplicates tie; take the other one
    idx = np.arange(len(E))
    nbr = np.where(nn[:, 0] == idx, nn[:, 1], nn[:, 0])
    eps = 1e-12
    kl = np.empty(A.shape[1])
    for j in range(A.shape[1]):
        p = np.clip(A[:, j].mean(), eps, 1 - eps)
        neg = A[nbr, j] == 0
        q = np.clip(A[neg, j].mean() if neg.any() else 0.0, eps, 1 - eps)
        kl[j] = p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))
    return kl
