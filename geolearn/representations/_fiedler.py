"""Fiedler partitioning of an RDM (Algorithm 1 of "Exploring fMRI RDMs").

The RDM of two categories becomes a graph with adjacency ``A = 1 - R``; the sign of the
Fiedler vector (eigenvector of the second smallest eigenvalue of the Laplacian
``L = D - A``) splits the stimuli in two, and the split's agreement with the categories
measures how well the representation separates them. Pairwise accuracies come with
stratified-bootstrap BCa intervals (Bonferroni-corrected), as in the paper's Figs. 8-9.
"""

import itertools

import numpy as np
from scipy.linalg import eigh
from scipy.special import ndtr, ndtri
from sklearn.base import BaseEstimator, ClusterMixin, _fit_context
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import validate_data

from .._utils import (
    blas_threads,
    check_choice,
    check_scalar_param,
    fitted_on_success,
    resolve_n_jobs,
    thread_map,
    warn_user,
)
from ..exceptions import GeolearnWarning
from ._rdm import METRICS, check_rdm, compute_rdm

NEGATIVE_WEIGHTS = ("clip", "keep", "raise")
_NEG_TOL = 1e-12  # adjacencies above -this are rounding, not negative correlations
_THREADED_M = 2000  # larger eigenproblems keep BLAS's threads


def _blas_threads(m):
    """One BLAS thread for eigenproblems up to ``_THREADED_M`` stimuli.

    Threads gain little on these sizes and, on a busy machine, their spin-waiting made
    a 1,000-stimulus solve 25 times slower; the bootstrap parallelises with joblib instead.
    """
    return blas_threads(1 if m <= _THREADED_M else None)


class FiedlerWarning(GeolearnWarning):
    """A Fiedler partition or its bootstrap interval is unreliable.

    Raised for an indefinite Laplacian (``negative_weights="keep"``), a repeated second
    eigenvalue (the Fiedler vector is not unique), a degenerate partition (disconnected
    graph, all stimuli on one side), a BCa bias correction outside the bootstrap range
    (clipped), and fewer than 500 bootstrap resamples.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from geolearn.representations import FiedlerWarning, fiedler_vector
    >>> R = np.ones((4, 4)) - np.eye(4)              # all stimuli equally far apart
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = fiedler_vector(R)
    >>> any(issubclass(w.category, FiedlerWarning) for w in caught)
    True
    """


def _laplacian(R, negative_weights):
    """Unnormalised Laplacian of ``A = 1 - R`` without self-loops (they cancel in ``D - A``)."""
    A = 1.0 - R
    np.fill_diagonal(A, 0.0)
    negative = A.min() < -_NEG_TOL
    if negative and negative_weights == "raise":
        raise ValueError(
            f"the adjacency 1 - R has negative weights (min {A.min():.3g}, i.e. "
            "dissimilarities above 1); pass negative_weights='clip' to set them to 0 or "
            "'keep' to use them as in the paper's Algorithm 1.")
    if negative_weights == "clip":
        np.maximum(A, 0.0, out=A)
        negative = False
    L = -A
    L.flat[::len(A) + 1] = A.sum(1)
    return L, negative


def _spectrum(R, negative_weights, normalized):
    """``(e2, eigenvalues[:3], issues)`` with ``issues`` the set of degeneracies found."""
    L, negative = _laplacian(R, negative_weights)
    scale = np.linalg.norm(L)
    if normalized:
        degree = np.diagonal(L).copy()
        if (degree < 0).any():
            raise ValueError("normalized=True needs non-negative degrees; some stimuli have a "
                             "negative total adjacency: use negative_weights='clip'.")
        inv_sqrt = np.divide(1.0, np.sqrt(degree), out=np.zeros_like(degree), where=degree > 0)
        L = inv_sqrt[:, None] * L * inv_sqrt[None, :]
        L.flat[::len(L) + 1] = (degree > 0).astype(float)  # isolated stimuli: eigenvalue 1
        scale = np.linalg.norm(L)
    evals, evecs = eigh(L, subset_by_index=[0, 2], check_finite=False)
    e2 = evecs[:, 1] * inv_sqrt if normalized else evecs[:, 1]
    e2 = e2 / np.linalg.norm(e2)
    # sign convention: the entry of largest magnitude (first one among near-ties) is positive
    mag = np.abs(e2)
    top = np.flatnonzero(mag >= mag.max() * (1 - 1e-9))[0]
    if e2[top] < 0:
        e2 = -e2
    issues = set()
    if negative and evals[0] < -1e-10 * scale:
        issues.add("indefinite")
    if evals[2] - evals[1] <= 1e-10 * max(1.0, abs(evals[2])):
        issues.add("not unique")
    if not negative and evals[1] <= 1e-12 * scale:
        issues.add("disconnected")
    if (e2 >= 0).all() or e2.std() < 1e-8 * mag.max():  # after the flip: never all < 0
        issues.add("one-sided")
    return e2, evals, issues


_MESSAGES = {
    "indefinite": "the Laplacian of 1 - R is indefinite (negative adjacencies kept); the "
                  "second smallest eigenvector need not be the cut direction. "
                  "negative_weights='clip' gives a positive semidefinite Laplacian.",
    "not unique": "the second and third smallest Laplacian eigenvalues coincide: the Fiedler "
                  "vector is not unique and the partition is arbitrary.",
    "disconnected": "the graph of 1 - R is disconnected (algebraic connectivity 0): the "
                    "Fiedler vector mixes its components.",
    "one-sided": "the Fiedler vector puts (almost) every stimulus on one side: the partition "
                 "is degenerate.",
}


def _warn(issues, which):
    for issue in sorted(issues & set(which)):
        warn_user(_MESSAGES[issue], FiedlerWarning)


def fiedler_vector(R, *, negative_weights="clip", normalized=False):
    """Fiedler vector and the three smallest eigenvalues of the Laplacian of ``1 - R``.

    Adjacency ``A = 1 - R`` (self-loops dropped: they cancel in ``L = D - A``), degree
    ``D = diag(A 1)``, Laplacian ``L = D - A`` (paper's Algorithm 1, steps 2-5). The
    eigenvector ``e2`` of the second smallest eigenvalue is returned with unit norm and
    with its entry of largest magnitude positive (the first one among ties), so its sign
    is reproducible.

    Parameters
    ----------
    R : array-like of shape (m, m) or (m(m-1)/2,)
        An RDM of at least 3 stimuli.
    negative_weights : {"clip", "keep", "raise"}, default="clip"
        Adjacencies below 0 (dissimilarities above 1, e.g. negative correlations):
        ``"clip"`` sets them to 0 (positive semidefinite Laplacian); ``"keep"`` uses them
        as the paper's Algorithm 1 does (warns when the Laplacian is indefinite);
        ``"raise"`` raises a ValueError.
    normalized : bool, default=False
        Use ``I - D^-1/2 A D^-1/2`` and return ``D^-1/2 u_2`` (normalised to unit length);
        the paper uses the unnormalised Laplacian.

    Returns
    -------
    e2 : ndarray of shape (m,)
    eigenvalues : ndarray of shape (3,)
        The three smallest eigenvalues; ``eigenvalues[1]`` is the algebraic connectivity.

    Warns
    -----
    FiedlerWarning
        Indefinite Laplacian, repeated second eigenvalue, disconnected graph or
        one-sided partition.

    Examples
    --------
    >>> import numpy as np
    >>> R = np.full((4, 4), 0.9)
    >>> R[:2, :2] = R[2:, 2:] = 0.2
    >>> np.fill_diagonal(R, 0.0)
    >>> e2, ev = fiedler_vector(R)
    >>> np.sign(e2), ev.round(6) + 0.0  # + 0.0: no "-0."
    (array([ 1.,  1., -1., -1.]), array([0. , 0.4, 1.8]))
    """
    check_choice(negative_weights, "negative_weights", NEGATIVE_WEIGHTS)
    R = check_rdm(R)
    with _blas_threads(len(R)):
        e2, evals, issues = _spectrum(R, negative_weights, bool(normalized))
    _warn(issues, _MESSAGES)
    return e2, evals


def _binary_labels(labels, m, name="labels"):
    """``(classes, codes)`` for labels of exactly two classes, one per stimulus."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != m:
        raise ValueError(f"{name} must hold one label per stimulus, shape ({m},); got shape "
                         f"{labels.shape}.")
    classes, codes = np.unique(labels, return_inverse=True)
    if len(classes) != 2:
        raise ValueError(f"{name} must contain exactly two classes for a Fiedler accuracy; got "
                         f"{len(classes)} ({classes[:10].tolist()}). Select a pair first, or "
                         "use fiedler_pairwise.")
    return classes, codes


def _score(e2, codes):
    """``(accuracy, recall_0, recall_1)`` of the better assignment of the two parts to the classes.

    The parts are ``e2 < 0`` and ``e2 > 0`` (paper's Algorithm 1, step 6): a stimulus with
    ``e2`` exactly 0 is in neither and counts as misclassified.
    """
    neg, pos = e2 < 0, e2 > 0
    c0, c1 = codes == 0, codes == 1
    hits = np.array([[np.sum(neg & c0), np.sum(pos & c1)],    # part 1 -> class 0
                     [np.sum(pos & c0), np.sum(neg & c1)]])   # part 1 -> class 1
    best = int(hits[1].sum() > hits[0].sum())
    sizes = np.array([c0.sum(), c1.sum()])
    return hits[best].sum() / len(e2), *(hits[best] / np.maximum(sizes, 1))


def _undersample(codes, rng):
    """Sorted indices of a balanced subset: the larger class subsampled without replacement."""
    idx = [np.flatnonzero(codes == c) for c in (0, 1)]
    n = min(len(i) for i in idx)
    keep = [i if len(i) == n else rng.choice(i, n, replace=False) for i in idx]
    return np.sort(np.concatenate(keep))


def fiedler_accuracy(R, labels, *, negative_weights="clip", balance="none", random_state=None):
    """Agreement of the Fiedler partition of an RDM with two classes.

    With parts ``P1 = {e2 < 0}`` and ``P2 = {e2 > 0}`` and classes ``a``, ``b``:
    ``acc = max(|P1 & a| + |P2 & b|, |P1 & b| + |P2 & a|) / m`` (the Fiedler vector's
    sign is arbitrary, hence the better of the two assignments). The paper's printed
    formula ``(|P1| + |P2|) / m`` is 1 for every partition, so this is its reconstruction.
    As in the paper's strict inequalities, a stimulus with ``e2`` exactly 0 is in neither
    part and counts as misclassified (``FiedlerPartition.labels_`` puts it in part 1).
    Its chance level for balanced classes is slightly above 0.5 (the max over the two
    assignments); use :func:`fiedler_pairwise` for intervals and permutation p-values.

    Parameters
    ----------
    R : array-like of shape (m, m) or (m(m-1)/2,)
        RDM of the stimuli of the two classes.
    labels : array-like of shape (m,)
        Exactly two distinct classes.
    negative_weights : {"clip", "keep", "raise"}, default="clip"
        See :func:`fiedler_vector`.
    balance : {"none", "undersample"}, default="none"
        ``"undersample"`` randomly subsamples the larger class to the size of the smaller
        first (an all-one-side partition then scores 0.5, not the majority fraction).
    random_state : int, RandomState instance or None, default=None
        Seeds the undersampling.

    Returns
    -------
    accuracy : float

    Warns
    -----
    FiedlerWarning
        When the partition is degenerate (see :func:`fiedler_vector`): the accuracy is then
        the majority fraction, not a measure of separation.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, (20, 10)) + 3 * np.eye(10)[0],
    ...           rng.normal(0, 1, (20, 10)) + 3 * np.eye(10)[1]]
    >>> from geolearn.representations import compute_rdm
    >>> fiedler_accuracy(compute_rdm(X), np.repeat(["cat", "dog"], 20))
    1.0
    """
    check_choice(negative_weights, "negative_weights", NEGATIVE_WEIGHTS)
    check_choice(balance, "balance", ("none", "undersample"))
    R = check_rdm(R)
    _, codes = _binary_labels(labels, len(R))
    if balance == "undersample":
        keep = _undersample(codes, check_random_state(random_state))
        if len(keep) < 3:
            raise ValueError("balance='undersample' leaves fewer than 3 stimuli; each class "
                             "needs at least 2.")
        R, codes = R[np.ix_(keep, keep)], codes[keep]
    with _blas_threads(len(R)):
        e2, _, issues = _spectrum(R, negative_weights, False)
    _warn(issues, _MESSAGES)
    return float(_score(e2, codes)[0])


def _resample_scores(R, codes, index_sets, negative_weights):
    """Accuracy and degeneracy of the Fiedler partition of each sub-RDM ``R[idx][:, idx]``."""
    out = np.empty((len(index_sets), 2))
    for k, idx in enumerate(index_sets):
        e2, _, issues = _spectrum(R[np.ix_(idx, idx)], negative_weights, False)
        out[k] = _score(e2, codes[idx])[0], bool(issues)
    return out


def _bca_interval(theta_hat, boot, jack, alpha):
    """BCa interval ``(low, high)`` of level ``1 - alpha`` (Efron's z0 and jackknife a)."""
    B = len(boot)
    prop = (np.sum(boot < theta_hat) + 0.5 * np.sum(boot == theta_hat)) / B
    if prop <= 0.0 or prop >= 1.0:
        warn_user(f"the estimate {theta_hat:.4g} lies outside the bootstrap distribution's range: the "
        f"BCa bias correction is clipped (proportion to {0.5 / B:.3g} or {1 - 0.5 / B:.3g}).", FiedlerWarning)
        prop = np.clip(prop, 0.5 / B, 1 - 0.5 / B)
    z0 = ndtri(prop)
    dev = jack.mean() - jack
    ss = np.sum(dev**2)
    a = np.sum(dev**3) / (6.0 * ss**1.5) if ss > 0 else 0.0
    z = ndtri(np.array([alpha / 2, 1 - alpha / 2]))
    levels = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    low, high = np.quantile(boot, levels)
    return float(low), float(high)


def _check_pairs(pairs, classes, counts):
    if pairs is None:
        pairs = list(itertools.combinations(classes.tolist(), 2))
    else:
        pairs = [tuple(p) for p in pairs]
        known = set(classes.tolist())
        for p in pairs:
            if len(p) != 2 or p[0] == p[1] or not set(p) <= known:
                raise ValueError(f"pairs must hold pairs of two distinct classes present in "
                                 f"labels ({classes[:10].tolist()}); got {p!r}.")
    if not pairs:
        raise ValueError("labels must contain at least two classes for fiedler_pairwise.")
    few = [c for c in set(itertools.chain(*pairs)) if counts[c] < 2]
    if few:
        raise ValueError(f"classes {sorted(few)} have fewer than 2 stimuli: the bootstrap "
                         "needs at least 2 per class.")
    return pairs


def fiedler_pairwise(R, labels, *, pairs=None, balance="undersample", n_boot=1000,
                     confidence_level=0.95, bonferroni=True, n_permutations=1000,
                     negative_weights="clip", n_jobs=None, random_state=None):
    """Fiedler accuracy of every class pair with a stratified-bootstrap BCa interval.

    For each pair: the sub-RDM of its stimuli (balanced by undersampling by default), the
    accuracy of its Fiedler partition (:func:`fiedler_accuracy`), ``n_boot`` bootstrap
    resamples of the stimuli stratified by class (class sizes fixed, duplicates kept) and
    the ``m`` jackknife deletions for a bias-corrected and accelerated (BCa) interval,
    Bonferroni-corrected over the pairs as in the paper's Figs. 8-9.

    Significance comes from a label-permutation test over the fixed partition, not from
    the interval against 0.5: the accuracy is the better of the two label assignments, so
    a random partition scores above 0.5 (about ``0.5 + 0.4 / sqrt(m)``; on pure noise the
    BCa interval excludes 0.5 for many pairs). A pair is ``significant`` when its
    permutation p-value is at most the (Bonferroni-adjusted) ``1 - confidence_level``;
    ``chance_level`` is the mean accuracy under that null, the level to read the
    interval against.

    Parameters
    ----------
    R : array-like of shape (m, m) or (m(m-1)/2,)
        RDM of all stimuli.
    labels : array-like of shape (m,)
        Class of each stimulus (any sortable labels).
    pairs : list of (class_a, class_b), optional
        The pairs to evaluate; ``None``: every unordered pair in sorted label order.
    balance : {"undersample", "none"}, default="undersample"
        Subsample the larger class of each pair to the smaller's size (the null accuracy
        of 0.5 only holds for balanced pairs).
    n_boot : int, default=1000
        Bootstrap resamples (fewer than 500 warn: BCa's tails need many).
    confidence_level : float in (0, 1), default=0.95
        Family-wise level; each interval uses ``1 - (1 - confidence_level) / k`` for ``k``
        pairs when ``bonferroni``.
    bonferroni : bool, default=True
    n_permutations : int, default=1000
        Label shuffles over the fixed partition for the permutation p-value (no
        eigensolve, cheap); the smallest p-value is ``1 / (n_permutations + 1)``, so with
        many pairs it must exceed ``k / (1 - confidence_level)`` to reach significance
        (a warning says so). 0 skips the test (``p_permutation``, ``chance_level`` NaN,
        ``significant`` None).
    negative_weights : {"clip", "keep", "raise"}, default="clip"
        See :func:`fiedler_vector`.
    n_jobs : int, optional
        joblib workers over the resamples (``None``: 1).
    random_state : int, RandomState instance or None, default=None
        Seeds balancing, resampling and permutations; a pair's result depends only on
        its classes, the data and ``random_state``.

    Returns
    -------
    results : list of Bunch
        One per pair, with ``class_a``, ``class_b``, ``n_a``, ``n_b`` (stimuli used, after
        balancing), ``accuracy``, ``recall_a``, ``recall_b`` (per-class recall of the
        chosen assignment), ``ci_low``, ``ci_high``, ``confidence_level`` (of this
        interval, Bonferroni-adjusted), ``p_permutation``, ``chance_level`` (the mean
        accuracy of the permuted labels), ``significant`` (``p_permutation`` at most the
        adjusted level),
        ``lambda2`` (algebraic connectivity), ``degenerate`` (see :func:`fiedler_vector`),
        and ``distribution`` (the ``n_boot`` bootstrap accuracies) with
        ``degenerate_fraction`` (the share of degenerate resamples: the paper's cluster of
        failed partitions near 0.5).

    Warns
    -----
    FiedlerWarning
        ``n_boot < 500``; too few permutations for any pair to be significant; a clipped
        BCa bias correction; an indefinite Laplacian or a non-unique Fiedler vector of a
        pair's RDM.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import compute_rdm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(0, 1, (30, 8)) + 4 * np.eye(8)[np.repeat([0, 1, 2], 10)]
    >>> res = fiedler_pairwise(compute_rdm(X), np.repeat([0, 1, 2], 10), n_boot=500,
    ...                        random_state=0)
    >>> [(r["class_a"], r["class_b"], r["accuracy"], r["significant"]) for r in res]
    [(0, 1, 1.0, True), (0, 2, 1.0, True), (1, 2, 1.0, True)]
    """
    check_choice(balance, "balance", ("none", "undersample"))
    check_choice(negative_weights, "negative_weights", NEGATIVE_WEIGHTS)
    n_boot = check_scalar_param(n_boot, "n_boot", kind="integer", low=1)
    n_permutations = check_scalar_param(n_permutations, "n_permutations", kind="integer", low=0)
    confidence_level = check_scalar_param(confidence_level, "confidence_level", low=0, high=1,
                                          closed="neither")
    R = check_rdm(R)
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != len(R):
        raise ValueError(f"labels must hold one label per stimulus, shape ({len(R)},); got "
                         f"shape {labels.shape}.")
    classes, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    pairs = _check_pairs(pairs, classes, dict(zip(classes.tolist(), counts)))
    if n_boot < 500:
        warn_user(f"n_boot={n_boot} < 500: BCa intervals need many resamples for their "
                  "tails; use n_boot >= 1000 for reported intervals.", FiedlerWarning)
    alpha = (1 - confidence_level) / (len(pairs) if bonferroni else 1)
    if n_permutations and 1 / (n_permutations + 1) > alpha:
        warn_user(f"n_permutations={n_permutations}: the smallest permutation p-value, "
                  f"1/{n_permutations + 1}, exceeds the level {alpha:.3g}, so no pair can be "
                  f"significant; use n_permutations >= {int(np.ceil(1 / alpha))}.", FiedlerWarning)
    base = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    results = []
    for pair in pairs:
        results.append(_one_pair(R, inverse, classes, pair, balance, n_boot, n_permutations,
                                 alpha, negative_weights, n_jobs, base))
    return results


def _one_pair(R, inverse, classes, pair, balance, n_boot, n_permutations, alpha,
              negative_weights, n_jobs, base):
    ia, ib = (int(np.searchsorted(classes, c)) for c in pair)
    rng = np.random.default_rng([base, ia, ib])  # per-pair stream: independent of other pairs
    sel = np.flatnonzero((inverse == ia) | (inverse == ib))
    codes = (inverse[sel] == ib).astype(np.int64)
    if balance == "undersample":
        keep = _undersample(codes, rng)
        sel, codes = sel[keep], codes[keep]
    Rs = R[np.ix_(sel, sel)]
    m = len(sel)
    pos = [np.flatnonzero(codes == c) for c in (0, 1)]
    boot = [np.sort(np.concatenate([rng.choice(p, len(p)) for p in pos])) for _ in range(n_boot)]
    index_sets = boot + [np.delete(np.arange(m), i) for i in range(m)]  # + jackknife
    with _blas_threads(m):
        e2, evals, issues = _spectrum(Rs, negative_weights, False)
        if resolve_n_jobs(n_jobs) == 1:
            scores = _resample_scores(Rs, codes, index_sets, negative_weights)
        else:
            # threads: LAPACK releases the GIL, and the one-thread BLAS limit is shared;
            # contiguous chunks in order, so the scores do not depend on n_jobs
            bounds = np.linspace(0, len(index_sets), 4 * resolve_n_jobs(n_jobs) + 1)
            scores = np.concatenate(thread_map(
                lambda b: _resample_scores(Rs, codes, index_sets[b[0]:b[1]], negative_weights),
                [b for b in itertools.pairwise(bounds.astype(int)) if b[1] > b[0]], n_jobs))
    _warn(issues, ("indefinite", "not unique"))
    accuracy, recall_a, recall_b = _score(e2, codes)
    dist, jack_acc = scores[:n_boot, 0], scores[n_boot:, 0]
    ci_low, ci_high = _bca_interval(accuracy, dist, jack_acc, alpha)

    p_perm, chance, significant = np.nan, np.nan, None
    if n_permutations:
        null = np.array([_score(e2, rng.permutation(codes))[0] for _ in range(n_permutations)])
        p_perm = (1 + np.sum(null >= accuracy)) / (n_permutations + 1)
        chance, significant = float(null.mean()), bool(p_perm <= alpha)
    return Bunch(**{
        "class_a": pair[0], "class_b": pair[1], "n_a": len(pos[0]), "n_b": len(pos[1]),
        "accuracy": float(accuracy), "recall_a": float(recall_a), "recall_b": float(recall_b),
        "ci_low": ci_low, "ci_high": ci_high, "confidence_level": 1 - alpha,
        "p_permutation": float(p_perm), "chance_level": chance, "significant": significant,
        "lambda2": float(evals[1]),
        "degenerate": bool(issues), "distribution": dist,
        "degenerate_fraction": float(scores[:n_boot, 1].mean()),
    })


class FiedlerPartition(ClusterMixin, BaseEstimator):
    """Two-way partition of stimuli by the sign of the Fiedler vector of ``1 - RDM``.

    The paper's Algorithm 1 as a clusterer: adjacency ``A = 1 - R``, Laplacian
    ``L = D - A``, ``labels_ = (e2 >= 0)`` with ``e2`` the Fiedler vector under the sign
    convention of :func:`fiedler_vector`. Transductive, like ``SpectralClustering``: there
    is no ``predict`` for unseen stimuli. Score against known classes with
    :func:`fiedler_accuracy` or ``sklearn.metrics.adjusted_rand_score(y, labels_)``.

    Parameters
    ----------
    metric : str, default="precomputed"
        ``"precomputed"``: ``X`` is an ``(m, m)`` RDM; otherwise ``X`` is a stimulus-by-feature
        matrix turned into an RDM with :func:`compute_rdm` and this metric.
    negative_weights : {"clip", "keep", "raise"}, default="clip"
        See :func:`fiedler_vector`.
    normalized : bool, default=False
        Use the normalised Laplacian (an option; the paper uses the unnormalised one).

    Attributes
    ----------
    labels_ : ndarray of shape (m,)
        0 where ``e2 < 0``, 1 where ``e2 >= 0``.
    fiedler_vector_ : ndarray of shape (m,)
    eigenvalues_ : ndarray of shape (3,)
        The three smallest Laplacian eigenvalues.
    algebraic_connectivity_ : float
        ``eigenvalues_[1]``.
    degenerate_ : bool
        True when the partition is unreliable: repeated second eigenvalue, disconnected
        graph, or (almost) all stimuli on one side (a warning says which).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.representations import FiedlerPartition
    >>> R = np.full((5, 5), 0.9)
    >>> R[:2, :2] = R[2:, 2:] = 0.1
    >>> np.fill_diagonal(R, 0.0)
    >>> FiedlerPartition().fit_predict(R)
    array([1, 1, 0, 0, 0])
    """

    _parameter_constraints = {  # noqa: RUF012
        "metric": [StrOptions({"precomputed", *METRICS})],
        "negative_weights": [StrOptions(set(NEGATIVE_WEIGHTS))],
        "normalized": ["boolean"],
    }

    def __init__(self, metric="precomputed", negative_weights="clip", normalized=False):
        self.metric = metric
        self.negative_weights = negative_weights
        self.normalized = normalized

    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the Fiedler partition of the stimuli.

        Parameters
        ----------
        X : array-like of shape (m, m) or (m, n_features)
            An RDM when ``metric="precomputed"``, else one row of features per stimulus.
        y : ignored

        Returns
        -------
        self : FiedlerPartition
        """
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=3)
        if self.metric == "precomputed":
            R = check_rdm(X, "X")
        else:
            R = compute_rdm(X, self.metric)
        with _blas_threads(len(R)):
            e2, evals, issues = _spectrum(R, self.negative_weights, bool(self.normalized))
        _warn(issues, _MESSAGES)
        self.fiedler_vector_ = e2
        self.eigenvalues_ = evals
        self.algebraic_connectivity_ = float(evals[1])
        self.degenerate_ = bool(issues)
        self.labels_ = (e2 >= 0).astype(np.int64)
        return self

    @property
    def _expected_failed_checks(self):
        failed = {
            "check_clustering": "the check's three standardised blobs lie more than 1 apart, "
            "so 1 - d has no edges between them (a disconnected graph, warned as "
            "degenerate), and a two-way cut cannot match three blobs; as precomputed it "
            "even fits feature rows, not a distance matrix.",
        }
        if self.metric == "precomputed":
            failed["check_positive_only_tag_during_fit"] = (
                "the check subtracts the mean from a distance matrix: the result is no RDM "
                "(nonzero diagonal, negative entries), rejected as such.")
        return failed

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.metric == "precomputed"
        return tags
