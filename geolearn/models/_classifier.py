"""The classifier side of the one training route: validated inputs, labels and predictions.

:class:`SkorchClassifierMixin` is what a classifier trained through
:class:`~geolearn.models.SkorchTrainingMixin` with a skorch ``NeuralNetClassifier``
subclass adds to it: scikit-learn's input validation (float32 rows, NaN and inf
refused, DataFrames and their feature names), any labels (``classes_``), and
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
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from .._utils import check_hidden_sizes
from ._training import SkorchTrainingMixin


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


class SkorchClassifierMixin(SkorchTrainingMixin):
    """A classifier trained through :class:`SkorchTrainingMixin` with a skorch classifier net.

    It validates ``X`` as scikit-learn does (float32 rows for the module; NaN and
    infinity refused; pandas DataFrames read, their column names kept in
    ``feature_names_in_``), takes any labels (``classes_`` holds them, the net
    trains on their indices), refuses a ``y`` with a single class, and predicts
    through the fitted net. ``module=None`` is a ReLU MLP of ``hidden_layer_sizes``;
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

    def _fit_data(self, X, y):
        """Checked ``X`` and encoded ``y`` (against the first fit's ``classes_`` when warm)."""
        warm = self._warm()
        X = self._check_X(X, reset=not warm)
        return X, self._check_y(y, len(X), reset=not warm)

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
