"""Episodes of manifold meta-learning: the meta split and the episodic batches (MRML, Sec. 4.2).

:class:`NeighborhoodHoldout` holds out one local neighbourhood of the data (an
anchor and its nearest neighbours) as a cross-validation splitter;
:class:`EpisodicSampler` draws the disjoint (meta-train, meta-test) batch pairs
of each training iteration.
"""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.model_selection import BaseCrossValidator
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._utils import check_scalar_param

#: Strategy names of the paper's settings A, B and C, and the names geolearn uses.
STRATEGY_ALIASES = {"A": "nearest", "B": "random", "C": "neighborhood"}
STRATEGIES = ("nearest", "random", "neighborhood", *STRATEGY_ALIASES)


def _flat(X):
    """Images and other n-D arrays as flat rows (2-D input passes unchanged)."""
    return np.reshape(np.asarray(X), (len(X), -1)) if np.ndim(X) > 2 else X


def _stream_pair(random_state):
    """Two independent generators from one ``random_state``: the meta-train and meta-test draws.

    Keeping them apart makes the meta-train batches of a seed the same whatever the
    strategy, so ``meta_test_weight=0`` retraces the plain autoencoder exactly.
    """
    seed = int(check_random_state(random_state).randint(0, 2**31 - 1))
    return tuple(np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))


class EpisodicSampler(BaseEstimator):
    """Disjoint (meta-train, meta-test) index batches that mimic a distribution shift.

    Each :meth:`sample` draws ``S_train``, ``batch_size`` rows uniformly without
    replacement, and a meta-test batch ``S_test`` of the same size, disjoint from it:

    - ``"nearest"`` (the paper's setting A): for each row of ``S_train`` in random
      order, its nearest neighbour among the rows neither in ``S_train`` nor already
      chosen;
    - ``"random"`` (B): ``batch_size`` rows drawn uniformly from the rest;
    - ``"neighborhood"`` (C): an anchor drawn uniformly from the rest and its
      ``batch_size`` nearest neighbours in the rest, the anchor included.

    Neighbours are Euclidean, from one :class:`~sklearn.neighbors.NearestNeighbors`
    index built in :meth:`fit`. The meta-train and meta-test draws come from two
    independent streams of ``random_state``, so the meta-train batches of a seed do
    not depend on the strategy.

    Parameters
    ----------
    strategy : {"neighborhood", "nearest", "random", "A", "B", "C"}, default="neighborhood"
        How the meta-test batch is chosen; "A", "B" and "C" are the paper's names.
    batch_size : int, default=64
        ``B``: the size of both batches. :meth:`fit` needs at least ``2 B + 1`` rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the draws; a fitted sampler replays the same episodes after a refit.

    Attributes
    ----------
    n_samples_ : int
        Rows of the fitted ``X``.
    n_features_in_ : int
    strategy_ : str
        The strategy's geolearn name ("nearest", "random" or "neighborhood").

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.meta_learning import EpisodicSampler
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> sampler = EpisodicSampler("neighborhood", batch_size=8, random_state=0).fit(X)
    >>> train_idx, test_idx = sampler.sample()
    >>> len(train_idx), len(test_idx), len(np.intersect1d(train_idx, test_idx))
    (8, 8, 0)
    """

    _parameter_constraints = {  # noqa: RUF012
        "strategy": [StrOptions(set(STRATEGIES))],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, strategy="neighborhood", batch_size=64, random_state=None):
        self.strategy = strategy
        self.batch_size = batch_size
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Index the rows of ``X`` (the set ``S`` that episodes are drawn from).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (flattened)
        y : ignored

        Returns
        -------
        self : EpisodicSampler
        """
        self.strategy_ = STRATEGY_ALIASES.get(self.strategy, self.strategy)
        B = self.batch_size
        X = validate_data(self, _flat(X), dtype=np.float64, ensure_min_samples=2)
        if len(X) < 2 * B + 1:
            raise ValueError(f"EpisodicSampler needs at least 2 * batch_size + 1 = {2 * B + 1} "
                             f"samples (batch_size={B}); got {len(X)}. Lower batch_size.")
        self.n_samples_ = len(X)
        self._X = X
        # 2B neighbours always hold an unused one: at most 2B - 1 rows are excluded
        self._n_query = min(2 * B, len(X))
        if self.strategy_ != "random":
            self._index = NearestNeighbors(n_neighbors=self._n_query).fit(X)
            # the neighbour lists of the rows queried so far (-1: not yet): the index is
            # fixed, so each row is searched once however many episodes it appears in
            self._knn = np.full((len(X), self._n_query), -1, dtype=np.intp)
        self._train_rng, self._test_rng = _stream_pair(self.random_state)
        return self

    def sample(self):
        """Draw one episode.

        Returns
        -------
        train_idx, test_idx : ndarray of shape (batch_size,)
            Disjoint row indices into the fitted ``X``.
        """
        check_is_fitted(self, "n_samples_")
        train = self._train_rng.choice(self.n_samples_, self.batch_size, replace=False)
        used = np.zeros(self.n_samples_, dtype=bool)
        used[train] = True
        if self.strategy_ == "random":
            test = self._test_rng.choice(np.flatnonzero(~used), self.batch_size, replace=False)
        elif self.strategy_ == "neighborhood":
            anchor = self._test_rng.choice(np.flatnonzero(~used))
            neighbours = self._neighbours(np.array([anchor]))[0]
            test = neighbours[~used[neighbours]][:self.batch_size]
        else:
            test = self._nearest_unused(train, used)
        return train, np.asarray(test, dtype=np.intp)

    def _neighbours(self, rows):
        """The ``2 B`` nearest rows of each of ``rows``, nearest first (searched once per row)."""
        missing = np.unique(rows[self._knn[rows, 0] < 0])
        if len(missing):
            self._knn[missing] = self._index.kneighbors(self._X[missing], return_distance=False)
        return self._knn[rows]

    def _nearest_unused(self, train, used):
        """Setting A: each train row's nearest neighbour not yet used, in a random row order."""
        order = self._test_rng.permutation(len(train))
        neighbours = self._neighbours(train[order])
        test = np.empty(len(train), dtype=np.intp)
        for k, row in enumerate(neighbours):
            j = row[np.argmax(~used[row])]  # the first unused: one always is (see fit)
            used[j] = True
            test[order[k]] = j
        return test


class NeighborhoodHoldout(BaseCrossValidator):
    """Cross-validation that holds out one local neighbourhood of the data per split.

    Each split draws an anchor row uniformly at random; the test set is the anchor and
    its ``n_holdout - 1`` nearest neighbours (Euclidean, on the flattened rows), the
    training set is every other row. With ``groups``, the neighbours are taken from
    the anchor's group only (the paper's multi-object runs hold out views of one
    object), and every group must have more than ``n_holdout`` rows. Use it as
    ``cv=`` in :func:`~sklearn.model_selection.cross_validate` or
    :class:`~sklearn.model_selection.GridSearchCV` to score how a model generalises
    to a region of the data it never saw.

    Parameters
    ----------
    n_holdout : int, default=100
        Size of each test set.
    n_splits : int, default=1
        Number of splits, each with a fresh anchor.
    random_state : int, RandomState instance or None, default=None
        Seeds the anchors; an int gives the same splits on every call to :meth:`split`.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.meta_learning import NeighborhoodHoldout
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> cv = NeighborhoodHoldout(n_holdout=10, n_splits=3, random_state=0)
    >>> [(len(train), len(test)) for train, test in cv.split(X)]
    [(40, 10), (40, 10), (40, 10)]
    """

    def __init__(self, n_holdout=100, n_splits=1, random_state=None):
        self.n_holdout = n_holdout
        self.n_splits = n_splits
        self.random_state = random_state

    def get_n_splits(self, X=None, y=None, groups=None):
        """The number of splits, ``n_splits``.

        Parameters
        ----------
        X, y, groups : ignored

        Returns
        -------
        n_splits : int
        """
        return check_scalar_param(self.n_splits, "n_splits", kind="integer", low=1)

    def split(self, X, y=None, groups=None):
        """Yield ``(train_idx, test_idx)`` for each held-out neighbourhood.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or images (flattened)
        y : ignored
        groups : array-like of shape (n_samples,), default=None
            Neighbourhoods stay within the anchor's group.

        Yields
        ------
        train_idx, test_idx : ndarray of int
        """
        return super().split(X, y, groups)

    def _iter_test_indices(self, X, y=None, groups=None):
        n_splits = self.get_n_splits()
        m = check_scalar_param(self.n_holdout, "n_holdout", kind="integer", low=1)
        X = check_array(_flat(X), dtype=np.float64)
        groups = np.zeros(len(X)) if groups is None else np.asarray(groups)
        if groups.shape != (len(X),):
            raise ValueError(f"groups must have shape ({len(X)},) (one per row of X); got "
                             f"{groups.shape}.")
        labels, sizes = np.unique(groups, return_counts=True)
        if m >= sizes.min():
            where = "n_samples" if len(labels) == 1 else "the smallest group's size"
            raise ValueError(f"n_holdout={m} must be smaller than {where} ({sizes.min()}).")
        rng = check_random_state(self.random_state)
        for _ in range(n_splits):
            anchor = rng.randint(len(X))
            members = np.flatnonzero(groups == groups[anchor])
            d = np.sum((X[members] - X[anchor]) ** 2, axis=1)
            d[members == anchor] = -1.0  # the anchor first, even among duplicates of it
            yield members[np.argsort(d, kind="stable")[:m]]
