"""Displays of the topology family: persistence diagrams and barcodes."""

import numpy as np

from ._base import axes_or_new

_KINDS = ("diagram", "barcode")


class PersistenceDiagramDisplay:
    """A persistence diagram (birth against death) or a barcode, one colour a dimension.

    Essential classes (death ``inf``) are drawn on a dashed line labelled "inf" above the
    largest finite value (diagram) or as bars reaching it (barcode).

    Parameters
    ----------
    diagrams : list of array-like of shape (m_k, 2)
        One diagram per homology dimension (:func:`~geolearn.topology.persistence_diagrams`).
    homology_dimensions : sequence of int, default=None
        The dimension of each diagram; None: 0, 1, 2, ...

    Attributes
    ----------
    artists_ : dict
        Homology dimension -> the PathCollection (diagram) or LineCollection (barcode).
    inf_value_ : float
        Where infinite deaths are drawn.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.plotting import PersistenceDiagramDisplay
    >>> from geolearn.topology import persistence_diagrams
    >>> dgms = persistence_diagrams(make_circle_points(50, noise=0.05, random_state=0))
    >>> disp = PersistenceDiagramDisplay.from_results(dgms)
    >>> sorted(disp.artists_), disp.artists_[0].get_offsets().shape
    ([0, 1], (50, 2))
    """

    def __init__(self, diagrams, homology_dimensions=None):
        # imported here: geolearn._utils imports torch, geolearn.plotting does not
        from geolearn._utils.validation import check_diagrams

        self.diagrams = check_diagrams(diagrams)
        dims = range(len(self.diagrams)) if homology_dimensions is None else homology_dimensions
        self.homology_dimensions = [int(k) for k in dims]
        if len(self.homology_dimensions) != len(self.diagrams):
            raise ValueError("homology_dimensions must give one dimension per diagram; got "
                             f"{len(self.homology_dimensions)} for {len(self.diagrams)}.")

    @classmethod
    def from_results(cls, diagrams, *, homology_dimensions=None, kind="diagram", ax=None):
        """Plot diagrams as a persistence diagram or a barcode.

        Parameters
        ----------
        diagrams : list of array-like of shape (m_k, 2)
            E.g. ``persistence_diagrams(X)`` of a point cloud ``X``.
        homology_dimensions : sequence of int, default=None
        kind : {"diagram", "barcode"}, default="diagram"
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : PersistenceDiagramDisplay
        """
        return cls(diagrams, homology_dimensions).plot(ax=ax, kind=kind)

    def _inf_value(self):
        finite = [d[np.isfinite(d)] for d in self.diagrams]
        top = max((f.max() for f in finite if f.size), default=1.0)
        return 1.1 * top if top > 0 else 1.0

    def plot(self, ax=None, *, kind="diagram"):
        """Draw the diagram or the barcode; returns self."""
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}; got {kind!r}.")
        self.figure_, self.ax_ = axes_or_new(ax)
        self.inf_value_ = self._inf_value()
        self.artists_ = {}
        if kind == "diagram":
            self._plot_diagram()
        else:
            self._plot_barcode()
        if self.artists_:
            self.ax_.legend(loc="lower right")
        return self

    def _plot_diagram(self):
        ax, top = self.ax_, self.inf_value_
        ax.plot([0, top], [0, top], color="0.5", lw=0.8, zorder=0)
        if any(np.isinf(d[:, 1]).any() for d in self.diagrams):
            ax.axhline(top, color="0.5", ls="--", lw=0.8, zorder=0)
            ax.text(0, top, " inf", va="bottom", ha="left", color="0.4")
        for k, d in zip(self.homology_dimensions, self.diagrams):
            deaths = np.where(np.isinf(d[:, 1]), top, d[:, 1])
            self.artists_[k] = ax.scatter(d[:, 0], deaths, s=14, label=f"H{k}")
        ax.set_xlabel("birth")
        ax.set_ylabel("death")
        ax.set_title("Persistence diagram")

    def _plot_barcode(self):
        from matplotlib.collections import LineCollection

        ax, row = self.ax_, 0
        for i, (k, d) in enumerate(zip(self.homology_dimensions, self.diagrams)):
            d = d[np.argsort(d[:, 0], kind="stable")]
            ends = np.where(np.isinf(d[:, 1]), self.inf_value_, d[:, 1])
            y = row + np.arange(len(d))
            segments = np.stack([np.c_[d[:, 0], y], np.c_[ends, y]], axis=1)
            self.artists_[k] = ax.add_collection(LineCollection(segments, color=f"C{i}",
                                                                label=f"H{k}"))
            row += len(d) + 2
        ax.set_xlim(0, self.inf_value_ * 1.02)
        ax.set_ylim(-1, max(row, 1))
        ax.set_yticks([])
        ax.set_xlabel("filtration value (infinite bars end at the right)")
        ax.set_title("Barcode")
