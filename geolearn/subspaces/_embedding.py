"""From data to subspaces: grouping vectors into sets and orthonormal bases of their spans."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted

from ._sets import check_sets, data_bases, unpad
from ._validation import ZERO_SET_CHECKS


def make_subspace_sets(X, y, set_size, *, random_state=None):
    """Group vectors of the same class into disjoint sets (the paper's protocol).

    The vectors of each class are shuffled and cut into sets of ``set_size``;
    leftovers are dropped, classes are never mixed and every vector is used
    at most once.

    Parameters
    ----------
    X : array-like of shape (N, n)
        One vector per row.
    y : array-like of shape (N,)
        Class of each vector.
    set_size : int
        Vectors per set (``l``).
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    sets : ndarray of shape (r, n, set_size)
        Raw sets, vectors as columns (orthonormalise them with
        :class:`SubspaceEmbedding`, or let the estimators do it).
    set_labels : ndarray of shape (r,)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import make_subspace_sets
    >>> X, y = np.arange(20.0).reshape(10, 2), np.array([0] * 5 + [1] * 5)
    >>> sets, labels = make_subspace_sets(X, y, 2, random_state=0)
    >>> sets.shape, labels.tolist()
    ((4, 2, 2), [0, 0, 1, 1])
    """
    X = check_array(X, dtype=np.float64, input_name="X")
    y = np.asarray(y)
    check_consistent_length(X, y)
    check_classification_targets(y)
    if not isinstance(set_size, Integral) or set_size < 1:
        raise ValueError(f"set_size must be a positive integer; got {set_size!r}.")
    rng = check_random_state(random_state)
    sets, labels = [], []
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        n_sets = len(idx) // set_size
        groups = idx[: n_sets * set_size].reshape(n_sets, set_size)
        sets.extend(X[g].T for g in groups)
        labels.extend([label] * n_sets)
    if not sets:
        raise ValueError(f"no class has set_size={set_size} vectors; use a smaller set_size.")
    return np.stack(sets), np.asarray(labels)


class SubspaceEmbedding(TransformerMixin, BaseEstimator):
    """Replace each raw set of vectors by an orthonormal basis of its span.

    Each set ``(n, m_i)`` is mapped to its top ``n_dims`` left singular
    vectors (after subtracting the set's mean vector when ``center=True``).
    Stateless: :meth:`fit` only validates and records ``n_features_in_``.

    Parameters
    ----------
    n_dims : int or None, default=None
        Basis size; ``None`` keeps each set's numerical rank (sets of
        different rank give a list of bases).
    center : bool, default=False
        Subtract each set's mean vector first (an affine rather than linear span).
    rank_tol : float or None, default=None
        Singular values above it count towards the rank; default
        ``max(n, m_i) * eps * sigma_1``.

    Attributes
    ----------
    n_features_in_ : int
        Ambient dimension ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import SubspaceEmbedding
    >>> sets = np.random.default_rng(0).normal(size=(5, 8, 4))
    >>> bases = SubspaceEmbedding(n_dims=3).fit_transform(sets)
    >>> bases.shape, np.allclose(bases[0].T @ bases[0], np.eye(3))
    ((5, 8, 3), True)
    """

    _parameter_constraints = {
        "n_dims": [Interval(Integral, 1, None, closed="left"), None],
        "center": ["boolean"],
        "rank_tol": [Interval(Real, 0, None, closed="left"), None],
    }

    def __init__(self, n_dims=None, center=False, rank_tol=None):
        self.n_dims = n_dims
        self.center = center
        self.rank_tol = rank_tol

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Validate ``X`` and record ``n_features_in_``.

        Parameters
        ----------
        X : array-like of shape (r, n, m), list of (n, m_i) arrays, or (r, n)
        y : None
            Ignored.

        Returns
        -------
        self : SubspaceEmbedding
        """
        check_sets(X, estimator=self, reset=True)
        return self

    def transform(self, X):
        """Orthonormal bases of the sets' spans.

        Parameters
        ----------
        X : array-like of shape (r, n, m), list of (n, m_i) arrays, or (r, n)

        Returns
        -------
        bases : ndarray of shape (r, n, n_dims) or list of (n, rank_i) arrays
        """
        check_is_fitted(self)
        sets, dims = check_sets(X, estimator=self, reset=False)
        return unpad(*data_bases(sets, dims, self.n_dims, center=self.center,
                                 rank_tol=self.rank_tol))

    _expected_failed_checks = ZERO_SET_CHECKS

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        # float64 only: principal angles from SVDs of near-aligned bases need its precision
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
