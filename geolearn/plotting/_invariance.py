"""Displays of the invariance family: saliency maps over a group orbit, the metrics table."""

import numpy as np

from ._base import axes_or_new, check_matplotlib


class SaliencyOrbitDisplay:
    """Saliency maps over a group orbit, realigned to a common orientation (paper's Fig. 3).

    Rows are samples, columns the group elements ``g``; cell ``(i, g)`` shows
    ``g^-1 m(g x_i)``. A genuinely invariant model shows identical rows.

    Parameters
    ----------
    maps : ndarray of shape (n_samples, len(group), H, W)
        Realigned maps (``details.maps`` of
        :func:`geolearn.invariance.saliency_invariance`).
    si : float, optional
        The saliency invariance similarity, shown in the title.
    labels : list of str, optional
        Column titles: the group elements (default: ``g0, g1, ...``).
    name : str, optional
        The model's name, shown in the title.

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes, shape (n_samples, len(group))
    figure_ : matplotlib Figure
    images_ : ndarray of AxesImage
    colorbar_ : matplotlib Colorbar
        One scale shared by all the maps.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.plotting import SaliencyOrbitDisplay
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, 3))
    >>> X = np.random.default_rng(0).random((2, 1, 6, 6), dtype=np.float32)
    >>> disp = SaliencyOrbitDisplay.from_estimator(net, X, group="rot4", steps=4)
    >>> disp.axes_.shape
    (2, 4)
    >>> [ax.get_title() for ax in disp.axes_[0, :2]]
    ['g = rot90(k=0)', 'g = rot90(k=1)']
    """

    def __init__(self, maps, *, si=None, labels=None, name=None):
        self.maps = maps
        self.si = si
        self.labels = labels
        self.name = name

    @classmethod
    def from_estimator(cls, estimator, X, y=None, *, group=None, n_samples=4, name=None,
                       ax=None, **kwargs):
        """Compute the realigned maps of the first ``n_samples`` of ``X`` and plot them.

        ``group=None`` uses the estimator's fitted ``group_``; ``kwargs`` (``steps``,
        ``baseline``, ...) go to the estimator's ``saliency_invariance`` method (an
        :class:`InvariantClassifier`), else to
        :func:`geolearn.invariance.saliency_invariance`. ``name`` titles the figure
        (default: the estimator's class name).
        """
        from ..invariance import FiniteGroup, saliency_invariance

        X = X[:n_samples]
        y = None if y is None else np.asarray(y)[:n_samples]
        if group is None and hasattr(estimator, "saliency_invariance"):
            si, details = estimator.saliency_invariance(X, y, return_details=True, **kwargs)
            group = estimator.group_
        else:
            group = estimator.group_ if group is None else group
            si, details = saliency_invariance(estimator, X, group, y, return_details=True,
                                              **kwargs)
        if isinstance(group, str):  # "rot4" or "xtrans3", as the estimators accept
            group = (FiniteGroup.rot4() if group == "rot4"
                     else FiniteGroup.xtrans3(details.maps.shape[-1]))
        labels = [f"g = {g!r}" for g in group]
        return cls(details.maps, si=si, labels=labels,
                   name=name or type(estimator).__name__).plot(ax=ax)

    def plot(self, ax=None, *, cmap="hot"):
        """Draw the grid; ``ax`` is an array of Axes of shape ``(n_samples, |G|)`` or None.

        On a new figure the name and SI go in its title; on given Axes (a block of a larger
        figure) the name goes in the row labels and the figure's title is left alone.
        """
        plt = check_matplotlib("SaliencyOrbitDisplay")
        n, order = self.maps.shape[:2]
        own_figure = ax is None
        if own_figure:
            fig, ax = plt.subplots(n, order, figsize=(1.9 * order + 1.2, 1.9 * n + 1),
                                   squeeze=False, layout="constrained")
        ax = np.asarray(ax).reshape(n, order)
        self.figure_ = ax.flat[0].figure
        self.images_ = np.empty((n, order), dtype=object)
        labels = self.labels or [f"g{k}" for k in range(order)]
        # one colour scale for every map: differences between cells are differences in saliency
        vmax = float(np.max(self.maps)) or 1.0
        for i in range(n):
            for k in range(order):
                self.images_[i, k] = ax[i, k].imshow(self.maps[i, k], cmap=cmap, vmin=0,
                                                     vmax=vmax)
                ax[i, k].set_xticks([])
                ax[i, k].set_yticks([])
                if i == 0:
                    ax[i, k].set_title(labels[k], fontsize=9)
            row = f"{self.name}, image {i}" if self.name and not own_figure else f"image {i}"
            ax[i, 0].set_ylabel(row)
        self.colorbar_ = self.figure_.colorbar(self.images_[0, 0], ax=ax, shrink=0.8,
                                               label="saliency")
        title = (f"{self.name + ': ' if self.name else ''}saliency of image x turned by g, "
                 "turned back (g^-1 m(g x)); identical rows = invariant saliency")
        if self.si is not None:
            # SI of the images shown, not of a whole test set (it varies from image to image)
            title += f"\nSI of these {n} images = {self.si:.3f} (1 = invariant)"
        if own_figure:
            self.figure_.suptitle(title, fontsize=10)
        self.axes_ = ax
        return self


class InvarianceReportDisplay:
    """Table 1 of the paper: accuracy and LI / DI / SI / sigma_max for several models.

    Parameters
    ----------
    reports : dict of str to Bunch
        Model name -> :meth:`InvariantClassifier.invariance_report` result.
    metrics : sequence of str, default=("transformed_accuracy", "LI", "DI", "SI", "sigma_max")

    Attributes
    ----------
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure
    table_ : matplotlib Table

    Examples
    --------
    >>> from sklearn.utils import Bunch
    >>> from geolearn.plotting import InvarianceReportDisplay
    >>> r = Bunch(transformed_accuracy=0.95, LI=0.0, DI=0.0, SI=1.0, sigma_max=14.9)
    >>> disp = InvarianceReportDisplay.from_results({"WT": r})
    >>> disp.table_.get_celld()[(1, 0)].get_text().get_text()
    '0.950'
    """

    def __init__(self, reports, metrics=("transformed_accuracy", "LI", "DI", "SI", "sigma_max")):
        self.reports = reports
        self.metrics = metrics

    @classmethod
    def from_estimator(cls, estimators, X, y, *, ax=None, **saliency_params):
        """Compute ``invariance_report(X, y, **saliency_params)`` of each named estimator
        and plot the table."""
        return cls({name: est.invariance_report(X, y, **saliency_params)
                    for name, est in estimators.items()}).plot(ax=ax)

    @classmethod
    def from_results(cls, reports, *, ax=None, **kwargs):
        """Plot reports already computed."""
        return cls(reports, **kwargs).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the table on ``ax`` (a new figure when None)."""
        fig, ax = axes_or_new(ax, figsize=(1.5 * (len(self.metrics) + 1),
                                           0.3 * (len(self.reports) + 1) + 0.4))
        cells = [[f"{float(r[m]):.3f}" if abs(float(r[m])) < 1e3 else f"{float(r[m]):.3g}"
                  for m in self.metrics] for r in self.reports.values()]
        headers = ["acc (G)" if m == "transformed_accuracy" else m for m in self.metrics]
        ax.axis("off")
        # the table fills the axes: no white band between the title and the rows
        self.table_ = ax.table(cellText=cells, rowLabels=list(self.reports), colLabels=headers,
                               bbox=[0, 0, 1, 1])
        ax.set_title("LI (logits) and DI (output distribution): 0 = invariant; "
                     "SI (saliency): 1 = invariant", fontsize="small")
        self.ax_, self.figure_ = ax, fig
        return self
