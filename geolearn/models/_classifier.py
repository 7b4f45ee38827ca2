"""The classifier side of the one training route: validated inputs, labels and predictions.

:class:`SkorchClassifierMixin` is what a classifier trained through
:class:`~geolearn.models.SkorchTrainingMixin` with a skorch ``NeuralNetClassifier``
subclass adds to it: scikit-learn's input validation (float32 rows, NaN and inf
refused, DataFrames and their feature names), any labels (``classes_``), per-sample
weights of the training loss (:class:`WeightedLossNetMixin` on its net), and
``predict``/``predict_proba`` through the fitted net.
"""

import copy
import functools
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, Options
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)
from skorch.utils import to_numpy

from .._utils import TensorDataset, check_hidden_sizes
from ._training import LeanLoopMixin, SkorchTrainingMixin, weighted_mean


def _mlp_module(n_features, n_classes, hidden_layer_sizes=(16,)):
    """A ReLU MLP from ``n_features`` inputs to ``n_classes`` logits.

    Its layers are numbered as in ``torch.nn.Sequential``: the hidden activations
    after the ``i``-th ReLU are layer ``str(2 * i + 1)``.

    Parameters
    ----------
    n_features, n_classes : int
    hidden_layer_sizes : tuple of int, default=(16,)

    Returns
    -------
    module : torch.nn.Sequential
    """
    layers, width = [], n_features
    for size in hidden_layer_sizes:
        layers += [torch.nn.Linear(width, size), torch.nn.ReLU()]
        width = size
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, n_classes))


def _collate(batch):
    """A :class:`TensorDataset`'s batch as it is (a tuple); single rows collated by torch."""
    return batch if isinstance(batch, tuple) else torch.utils.data.default_collate(batch)


def _labels(y):
    """The labels of a batch's targets, ``y`` or ``(y, sample_weight)``, as numpy."""
    return to_numpy(y[0] if isinstance(y, (tuple, list)) else y)


#: why a float32 net fails scikit-learn's sample-weight equivalence check (its tolerance 1e-7)
FLOAT32_WEIGHTS_REASON = (
    "the network trains in float32 and the weighted and repeated batches sum their rows in "
    "different orders, so the two fits agree to about 4e-6 relative, not the check's 1e-7; "
    "tests/test_sample_weight.py checks the equivalence to 1e-5 and that a weight 0 equals "
    "dropping the row exactly")


class WeightedLossNetMixin(LeanLoopMixin):
    """skorch classifier-net mixin: a target ``(y, sample_weight)`` weights the criterion.

    The net of a :class:`SkorchClassifierMixin` classifier fitted with
    ``sample_weight`` gets batches whose target is the pair ``(y, sample_weight)``;
    ``get_loss`` then returns ``sum_i w_i l_i / sum_i w_i`` of the criterion's
    per-sample losses ``l_i`` (its ``reduction="none"``), so that integer weights
    equal repeated rows and a weight 0 drops a row. A plain target gives the
    criterion as it is. It trains through :class:`LeanLoopMixin`'s loop. Put it before
    ``NeuralNetClassifier`` in the bases; a
    subclass's ``get_loss`` that adds per-sample terms of its own reads the
    weights with :meth:`split_target`.

    Examples
    --------
    >>> import torch
    >>> from skorch import NeuralNetClassifier
    >>> from geolearn.models._internal import WeightedLossNetMixin
    >>> class Net(WeightedLossNetMixin, NeuralNetClassifier):
    ...     pass
    >>> net = Net(torch.nn.Linear(2, 2), criterion=torch.nn.CrossEntropyLoss).initialize()
    >>> logits, y = torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0])
    >>> weighted = net.get_loss(logits, (y, torch.tensor([2.0, 0.0])))
    >>> bool(torch.isclose(weighted, net.get_loss(logits[:1], y[:1])))
    True
    """

    @staticmethod
    def split_target(y_true):
        """``(y, sample_weight)`` of a batch's target; ``sample_weight`` is None if unweighted."""
        if isinstance(y_true, (tuple, list)):
            return y_true[0], y_true[1]
        return y_true, None

    def get_loss(self, y_pred, y_true, X=None, training=False):
        y_true, sample_weight = self.split_target(y_true)
        if sample_weight is None:
            return super().get_loss(y_pred, y_true, X=X, training=training)
        criterion = self.criterion_
        if not hasattr(criterion, "reduction"):
            raise TypeError(f"sample_weight needs a criterion with a reduction attribute (as "
                            f"torch.nn losses have) to compute per-sample losses; got "
                            f"{type(criterion).__name__}.")
        reduction, criterion.reduction = criterion.reduction, "none"
        try:
            losses = super().get_loss(y_pred, y_true, X=X, training=training)
        finally:
            criterion.reduction = reduction
        return weighted_mean(losses, sample_weight)


class SkorchClassifierMixin(SkorchTrainingMixin):
    """A classifier trained through :class:`SkorchTrainingMixin` with a skorch classifier net.

    It validates ``X`` as scikit-learn does (float32 rows for the module; NaN and
    infinity refused; pandas DataFrames read, their column names kept in
    ``feature_names_in_``), takes any labels (``classes_`` holds them, the net
    trains on their indices), refuses a ``y`` with a single class, and predicts
    through the fitted net. ``fit(X, y, sample_weight)`` trains on the weighted
    mean of the per-sample losses (:class:`WeightedLossNetMixin`, which the
    classifier's net must have): rows of weight 0 are left out, and negative or
    all-zero weights refused. ``module=None`` is a ReLU MLP of ``hidden_layer_sizes``;
    a module instance is copied at every cold ``fit``, so that refits start from
    the same weights and the user's module is left as it was. A warm ``fit``
    continues the fitted net for ``max_epochs`` more epochs at this fit's ``lr``
    and ``batch_size``.

    Its ``_parameter_constraints`` are those of the training settings every such
    classifier has (``criterion``, ``optimizer``, ``lr``, ``max_epochs``,
    ``batch_size``, ``train_split``, ``callbacks``, ``warm_start``, ``device``,
    ``verbose``, ``random_state``); a classifier adds its own to them and
    decorates its ``fit`` with scikit-learn's ``_fit_context``.

    Fitted: ``classes_``, ``n_features_in_`` (and ``feature_names_in_``),
    ``history_`` (the net's skorch ``History``), and the training route's
    ``net_``, ``module_``, ``device_``.

    Examples
    --------
    >>> from geolearn.adversarial import ManifoldAdversarialClassifier
    >>> from geolearn.models import SkorchClassifierMixin
    >>> issubclass(ManifoldAdversarialClassifier, SkorchClassifierMixin)
    True
    """

    _parameter_constraints = {
        "criterion": [callable],
        "optimizer": [callable],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        # skorch's -1: one batch of all the rows
        "batch_size": [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
        "train_split": [callable, None],
        "callbacks": [list, None],
        "warm_start": ["boolean"],
        "device": [str, torch.device, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    #: ``validate_data`` settings of ``X`` (``allow_nd`` for non-tabular inputs).
    _input_checks = {"dtype": np.float32}

    def _check_X(self, X, *, reset):
        """``X`` as float32 rows; ``reset`` records ``n_features_in_`` (a cold fit)."""
        if not reset:
            check_is_fitted(self)
        return validate_data(self, X, reset=reset, **self._input_checks)

    def _check_y(self, y, n_samples, *, reset):
        """``y`` as int64 indices into ``classes_`` (found when ``reset``, else checked)."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None.")
        y = column_or_1d(y, warn=True)
        check_consistent_length(np.empty(n_samples), y)
        check_classification_targets(y)
        if reset:
            self.classes_ = np.unique(y)
            if len(self.classes_) < 2:
                raise ValueError(f"y has {len(self.classes_)} class; {type(self).__name__} "
                                 "needs at least 2 classes.")
        unknown = np.setdiff1d(y, self.classes_)
        if len(unknown):
            raise ValueError(f"y has labels {unknown[:5]} that the first fit did not see; a "
                             f"warm start continues with classes_ {self.classes_}.")
        return np.searchsorted(self.classes_, y).astype(np.int64)

    def _fit_data(self, X, y, sample_weight=None):
        """Checked ``X``, encoded ``y`` and weights; rows of weight 0 are left out.

        ``y`` is encoded against the first fit's ``classes_`` when warm.
        """
        warm = self._warm()
        X = self._check_X(X, reset=not warm)
        y = self._check_y(y, len(X), reset=not warm)
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                 ensure_non_negative=True)
            kept = sample_weight > 0
            X, y, sample_weight = X[kept], y[kept], sample_weight[kept]
        return X, y, sample_weight

    def _training_data(self, X, y, sample_weight):
        """``X`` for ``_fit_net`` and the net settings that read it.

        With ``sample_weight`` it is a :class:`TensorDataset` whose batches' targets are
        ``(y, sample_weight)`` (``y`` still goes to ``_fit_net``, for the stratified
        validation split). The settings serve both kinds of data, so that a warm fit may
        bring weights or not.
        """
        settings = {"iterator_train__collate_fn": _collate,
                    "iterator_valid__collate_fn": _collate,
                    "callbacks__valid_acc__target_extractor": _labels}
        if sample_weight is None:
            return X, settings
        return TensorDataset(torch.from_numpy(X), torch.from_numpy(y),
                             torch.from_numpy(sample_weight)), settings

    def _module(self, n_features):
        """The module to train: the user's (a copy of an instance), or an MLP."""
        if self.module is None:
            sizes = check_hidden_sizes(self.hidden_layer_sizes, "hidden_layer_sizes")
            # built by the net under the training seed: reproducible initial weights
            return functools.partial(_mlp_module, n_features, len(self.classes_), sizes)
        # an instance would keep its trained weights from one fit to the next
        return copy.deepcopy(self.module) if isinstance(self.module, torch.nn.Module) else self.module

    def _after_fit(self):
        self.history_ = self.net_.history
        return self

    def predict_proba(self, X):
        """Class probabilities (the net's ``predict_proba``: softmax of the logits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        X = self._check_X(X, reset=False)
        return self.net_.predict_proba(X)

    def predict(self, X):
        """The most probable class of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]
