"""Input validation shared by the family's estimators and functions: sets to bases, labels."""

from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, column_or_1d

from .._utils import warn_user
from ..exceptions import GeolearnWarning
from ._sets import as_bases, check_sets

# sklearn's dtype check casts random tables to integers, which leaves all-zero rows.
ZERO_SET_CHECKS = {
    "check_estimators_dtypes": "its integer data contain all-zero rows, i.e. sets that "
                               "span no subspace; they raise a ValueError by design",
}


def check_bases(X, estimator=None, *, reset=True, input_type="auto", subspace_dim=None,
                set_shape=None):
    """Validate sets (:func:`check_sets`) and return orthonormal bases of them (:func:`as_bases`).

    Parameters
    ----------
    X : set array
        As in :func:`check_sets`.
    estimator : estimator or None, default=None
        Sets or checks its ``n_features_in_``. An estimator says with a
        ``GeolearnWarning`` when ``input_type="auto"`` finds raw sets at ``fit``
        (once: later calls orthonormalise as the fit said); the functions
        (``estimator=None``) document that they orthonormalise.
    reset : bool, default=True
    input_type : {"auto", "basis", "data"}, default="auto"
    subspace_dim : int or None, default=None
    set_shape : (int, int) or None, default=None

    Returns
    -------
    bases : ndarray of shape (r, n, L)
    dims : ndarray of shape (r,)
    """
    sets, dims = check_sets(X, set_shape=set_shape, estimator=estimator, reset=reset)
    bases, dims, was_data = as_bases(sets, dims, input_type, subspace_dim)
    if was_data and input_type == "auto" and estimator is not None and reset:
        silence = ("Pass input_type='data' to do this silently or orthonormalise"
                   if hasattr(estimator, "input_type") else "Orthonormalise them")
        warn_user("X holds sets that are not orthonormal bases: each is replaced by an "
        f"orthonormal basis of its span (top left singular vectors). {silence} with "
        "SubspaceEmbedding.", GeolearnWarning)
    return bases, dims


def check_labeled_bases(X, y, estimator, *, reset=True, **options):
    """:func:`check_bases` on a classifier's training sets, then their class labels ``y``.

    Parameters
    ----------
    X : set array
    y : array-like of shape (r,)
    estimator : classifier
    reset : bool, default=True
    **options
        ``input_type``, ``subspace_dim``, ``set_shape`` of :func:`check_bases`.

    Returns
    -------
    bases : ndarray of shape (r, n, L)
    dims : ndarray of shape (r,)
    y : ndarray of shape (r,)
    """
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target "
                         "y is None.")
    bases, dims = check_bases(X, estimator, reset=reset, **options)
    y = column_or_1d(y, warn=True)
    check_consistent_length(bases, y)
    check_classification_targets(y)
    return bases, dims, y


def check_two_classes(classes, estimator):
    """Raise unless ``classes`` (sorted unique labels) holds at least two."""
    if len(classes) < 2:
        raise ValueError(f"{type(estimator).__name__} needs samples of at least 2 classes; "
                         f"got 1 class ({classes[0]!r}).")


class _SetsMixin:
    """Set input of an estimator with ``input_type``, ``subspace_dim`` and ``set_shape``."""

    _expected_failed_checks = ZERO_SET_CHECKS

    @property
    def _set_options(self):
        return {"input_type": self.input_type, "subspace_dim": self.subspace_dim,
                "set_shape": self.set_shape}

    def _bases(self, X, reset):
        return check_bases(X, self, reset=reset, **self._set_options)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags
