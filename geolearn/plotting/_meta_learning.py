"""Displays of manifold meta-learning: reconstructions side by side, metric curves over training."""

import numpy as np

from ._base import axes_row
from ._generative import colour_mosaic

#: History columns that are not curves to draw.
_NOT_CURVES = ("epoch", "iteration", "batches", "dur", "train_batch_count", "valid_batch_count")


def _as_named(estimators):
    """``{name: estimator}`` from a dict, a sequence (named by class and position) or one."""
    if isinstance(estimators, dict):
        return dict(estimators)
    if hasattr(estimators, "fit"):
        estimators = [estimators]
    return {f"{type(e).__name__} {i}": e for i, e in enumerate(estimators)}


class ReconstructionDisplay:
    """The data and each model's reconstructions of it, side by side.

    Images: one row of tiles for the data and one per model (colour for three
    channels). Vectors: one panel per model, data and reconstructions on the data's
    first two principal axes, each reconstruction joined to its original.

    Parameters
    ----------
    data : ndarray of shape (n_samples, n_features)
    reconstructions : dict of str to ndarray of shape (n_samples, n_features)
    image_shape : tuple of int, default=None
        ``(C, H, W)`` (or ``(H, W)``): draw images.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.meta_learning import MetaManifoldAutoencoder
    >>> from geolearn.plotting import ReconstructionDisplay
    >>> X = np.random.default_rng(0).random((60, 8))
    >>> ae = MetaManifoldAutoencoder(hidden_layer_sizes=(8,), max_epochs=5, batch_size=8,
    ...                              random_state=0).fit(X)
    >>> disp = ReconstructionDisplay.from_estimator({"meta": ae}, X[:10])
    >>> sorted(disp.reconstructions), len(disp.axes_)
    (['meta'], 1)
    """

    def __init__(self, data, reconstructions, image_shape=None):
        self.data = data
        self.reconstructions = reconstructions
        self.image_shape = image_shape

    @classmethod
    def from_estimator(cls, estimators, X, image_shape=None, n_images=8, axes=None):
        """Reconstruct ``X`` with each fitted estimator (``reconstruct``) and draw.

        Parameters
        ----------
        estimators : estimator, dict of str to estimator, or sequence of estimators
            Fitted estimators with ``reconstruct(X)``.
        X : array-like of shape (n_samples, n_features), or images (n, C, H, W)
        image_shape : tuple of int, default=None
            Defaults to the first estimator's ``image_shape_``.
        n_images : int, default=8
            Tiles per row (images only).
        axes : matplotlib Axes or array of them, default=None

        Returns
        -------
        display : ReconstructionDisplay
        """
        estimators = _as_named(estimators)
        recs = {name: est.reconstruct(X) for name, est in estimators.items()}
        X = np.asarray(X, dtype=float)
        if image_shape is None:
            image_shape = getattr(next(iter(estimators.values())), "image_shape_", None)
        return cls(X.reshape(len(X), -1), recs, image_shape).plot(axes=axes, n_images=n_images)

    def plot(self, axes=None, n_images=8):
        """Draw the images' rows or the point panels.

        Parameters
        ----------
        axes : matplotlib Axes or array of them, default=None
            One Axes for images, one per model for vectors.
        n_images : int, default=8

        Returns
        -------
        self
        """
        n_panels = 1 if self.image_shape is not None else len(self.reconstructions)
        self.figure_, self.axes_ = axes_row(axes, n_panels, "ReconstructionDisplay")
        if self.image_shape is not None:
            self._plot_images(n_images)
        else:
            self._plot_points()
        return self

    def _plot_images(self, n_images):
        shape = tuple(self.image_shape)
        shape = (1, *shape) if len(shape) == 2 else shape
        rows = [self.data, *self.reconstructions.values()]
        tiles = np.stack([np.asarray(r, dtype=float)[:n_images].reshape(-1, *shape)
                          for r in rows])
        ax = self.axes_[0]
        ax.imshow(np.clip(colour_mosaic(tiles), 0, 1))
        H = shape[1]
        ax.set_yticks([i * (H + 1) + H / 2 - 0.5 for i in range(len(rows))],
                      ["data", *self.reconstructions])
        ax.set_xticks([])

    def _plot_points(self):
        mean = self.data.mean(axis=0)
        axes = np.linalg.svd(self.data - mean, full_matrices=False)[2][:2]
        P = (self.data - mean) @ axes.T
        for ax, (name, rec) in zip(self.axes_, self.reconstructions.items()):
            Q = (np.asarray(rec, dtype=float) - mean) @ axes.T
            ax.plot(np.c_[P[:, 0], Q[:, 0]].T, np.c_[P[:, 1], Q[:, 1]].T, color="0.7", lw=0.5)
            ax.scatter(*P.T[:2], s=6, label="data")
            ax.scatter(*Q.T[:2], s=6, label="reconstruction")
            ax.set(title=name, xlabel="PC 1", ylabel="PC 2")
            ax.legend(loc="best", fontsize="small")


class TrainingCurvesDisplay:
    """Curves of ``history_`` columns over training, one panel per column.

    The x-axis is the history's ``"iteration"`` column where it has one
    (:class:`~geolearn.meta_learning.MetaManifoldAutoencoder`), else its ``"epoch"``.

    Parameters
    ----------
    histories : dict of str to skorch.history.History
        Each a fitted estimator's ``history_`` (or any sequence of per-epoch dicts
        with ``"epoch"`` or ``"iteration"``).
    keys : sequence of str
        The columns, e.g. ``"train_loss"``, ``"kl"`` or those of
        :class:`~geolearn.meta_learning.ReconstructionMetrics` (``"holdout_persistence"``).

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
    lines_ : dict of (key, name) to matplotlib Line2D
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.meta_learning import MetaManifoldAutoencoder
    >>> from geolearn.plotting import TrainingCurvesDisplay
    >>> X = np.random.default_rng(0).random((60, 8))
    >>> ae = MetaManifoldAutoencoder(hidden_layer_sizes=(8,), max_epochs=20, log_every=5,
    ...                              batch_size=8,
    ...                              random_state=0).fit(X)
    >>> disp = TrainingCurvesDisplay.from_estimator({"meta": ae}, keys=["train_loss"])
    >>> disp.lines_["train_loss", "meta"].get_xdata().tolist()
    [5, 10, 15, 20]
    """

    def __init__(self, histories, keys):
        self.histories = histories
        self.keys = keys

    @classmethod
    def from_estimator(cls, estimators, keys=None, axes=None):
        """Draw the ``history_`` of each fitted estimator.

        Parameters
        ----------
        estimators : estimator, dict of str to estimator, or sequence of estimators
            Fitted gradient-trained estimators.
        keys : sequence of str, default=None
            Defaults to every numeric column the last epochs share, except the
            epoch and iteration counts and skorch's bookkeeping.
        axes : array of matplotlib Axes, default=None

        Returns
        -------
        display : TrainingCurvesDisplay
        """
        histories = {name: est.history_ for name, est in _as_named(estimators).items()}
        if keys is None:
            shared = set.intersection(*(set(h[-1]) for h in histories.values()))
            keys = sorted(k for k in shared
                          if k not in _NOT_CURVES and not k.endswith("_best"))
        for name, history in histories.items():
            missing = [k for k in keys if k not in history[-1]]
            if missing:
                raise ValueError(f"the history of {name!r} has no {missing}; it holds "
                                 f"{sorted(history[-1])}.")
        return cls(histories, list(keys)).plot(axes=axes)

    def plot(self, axes=None):
        """Draw one panel per key, one line per history.

        Parameters
        ----------
        axes : array of matplotlib Axes, default=None

        Returns
        -------
        self
        """
        self.figure_, self.axes_ = axes_row(axes, len(self.keys), "TrainingCurvesDisplay",
                                            (4, 3.5))
        self.lines_ = {}
        for ax, key in zip(self.axes_, self.keys):
            xlabels = set()
            for name, history in self.histories.items():
                rows = [h for h in history if key in h]
                x = "iteration" if rows and "iteration" in rows[0] else "epoch"
                xlabels.add(x)
                (self.lines_[key, name],) = ax.plot([h[x] for h in rows],
                                                    [h[key] for h in rows], label=name)
            ax.set(xlabel=" / ".join(sorted(xlabels)), title=key)
            ax.legend(loc="best", fontsize="small")
        return self
