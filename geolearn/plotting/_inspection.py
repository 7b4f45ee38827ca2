"""Display of geometry measures recorded during training, beside the training loss."""

import numbers

from ._base import axes_row

#: skorch's bookkeeping columns, never a measure.
_BOOKKEEPING = ("epoch", "batches", "dur", "train_batch_count", "valid_batch_count")


def _default_measures(history):
    """Numeric columns of any epoch that are neither losses, accuracies nor bookkeeping."""
    found = {}
    for row in history:
        for key, value in row.items():
            if (key not in _BOOKKEEPING and not key.endswith(("_best", "_loss", "_acc"))
                    and isinstance(value, numbers.Real) and not isinstance(value, bool)):
                found[key] = None
    return list(found)


class GeometryHistoryDisplay:
    """Geometry measures against epochs, beside the training (and validation) loss.

    The first panel draws ``train_loss`` (and ``valid_loss`` where recorded),
    each next panel one measure at the epochs where it was recorded (by
    :class:`geolearn.inspection.GeometryTracker`, say, every ``every`` epochs).

    Parameters
    ----------
    history : skorch.history.History or list of dict
        One dict per epoch with ``"epoch"``.
    measures : list of str
        The history columns drawn.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
        The loss panel, then one per measure.
    lines_ : dict of str to matplotlib Line2D
        By column (``"train_loss"``, ``"valid_loss"`` and each measure).
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.plotting import GeometryHistoryDisplay
    >>> history = [{"epoch": 1, "train_loss": 0.9}, {"epoch": 2, "train_loss": 0.5, "R_f": 0.8},
    ...            {"epoch": 3, "train_loss": 0.4}, {"epoch": 4, "train_loss": 0.3, "R_f": 0.5}]
    >>> disp = GeometryHistoryDisplay.from_results(history)
    >>> disp.measures, disp.lines_["R_f"].get_xdata().tolist()
    (['R_f'], [2, 4])
    """

    def __init__(self, history, measures):
        self.history = history
        self.measures = measures

    @classmethod
    def from_estimator(cls, estimator, measures=None, axes=None):
        """Draw the history of a fitted skorch net or gradient-trained estimator.

        Parameters
        ----------
        estimator : skorch.NeuralNet or estimator
            A skorch net (its ``history``) or a geolearn estimator (its ``history_``).
        measures : list of str, default=None
            The columns to draw; default: every numeric column but the losses,
            accuracies and skorch's bookkeeping.
        axes : array of matplotlib Axes, default=None
            One for the loss, then one per measure.

        Returns
        -------
        display : GeometryHistoryDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import numpy as np, torch
        >>> from skorch import NeuralNetClassifier
        >>> from geolearn.inspection import GeometryTracker
        >>> from geolearn.plotting import GeometryHistoryDisplay
        >>> X = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
        >>> y = (X[:, 0] > 0).astype(np.int64)
        >>> net = NeuralNetClassifier(
        ...     torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)),
        ...     max_epochs=3, train_split=None, verbose=0,
        ...     callbacks=[GeometryTracker("region_density", X)]).fit(X, y)
        >>> GeometryHistoryDisplay.from_estimator(net).measures
        ['region_density']
        """
        history = getattr(estimator, "history_", None)
        if history is None:
            history = getattr(estimator, "history", None)
        if history is None:
            raise TypeError(f"{type(estimator).__name__} has no history_ or history: pass a "
                            "fitted skorch net or gradient-trained estimator.")
        return cls.from_results(history, measures=measures, axes=axes)

    @classmethod
    def from_results(cls, history, measures=None, axes=None):
        """Draw a training history.

        Parameters
        ----------
        history : skorch.history.History or list of dict
            One dict per epoch with ``"epoch"``.
        measures : list of str, default=None
            The columns to draw; default: every numeric column but the losses,
            accuracies and skorch's bookkeeping.
        axes : array of matplotlib Axes, default=None
            One for the loss, then one per measure.

        Returns
        -------
        display : GeometryHistoryDisplay

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from geolearn.plotting import GeometryHistoryDisplay
        >>> history = [{"epoch": e, "train_loss": 1 / e, "log_volume": 0.1 * e} for e in (1, 2)]
        >>> len(GeometryHistoryDisplay.from_results(history).axes_)
        2
        """
        if len(history) == 0:
            raise ValueError("history is empty: nothing to draw.")
        measures = _default_measures(history) if measures is None else list(measures)
        if not measures:
            raise ValueError("the history records no measure besides losses and skorch's "
                             "bookkeeping; pass measures= or track some with GeometryTracker.")
        recorded = {key for row in history for key in row}
        missing = [m for m in measures if m not in recorded]
        if missing:
            raise ValueError(f"the history records no {missing}; it holds {sorted(recorded)}.")
        return cls(history, measures).plot(axes=axes)

    def plot(self, axes=None):
        """Draw the loss panel and one panel per measure.

        Parameters
        ----------
        axes : array of matplotlib Axes, default=None

        Returns
        -------
        self
        """
        self.figure_, self.axes_ = axes_row(axes, 1 + len(self.measures),
                                            "GeometryHistoryDisplay", (4, 3.2))
        self.lines_ = {}
        for ax, keys in zip(self.axes_, [("train_loss", "valid_loss"),
                                         *((m,) for m in self.measures)]):
            for key in keys:
                rows = [row for row in self.history if key in row]
                if rows:
                    (self.lines_[key],) = ax.plot([row["epoch"] for row in rows],
                                                  [row[key] for row in rows], "o-", ms=3,
                                                  label=key)
            ax.set(xlabel="epoch", title="loss" if keys[0] == "train_loss" else keys[0])
        if "valid_loss" in self.lines_:
            self.axes_[0].legend(loc="best", fontsize="small")
        self.figure_.tight_layout()
        return self
