"""Displays of the polytopes family: the 2-D partition of a ReLU network and path counts."""

import numpy as np

from ._base import axes_or_new, check_matplotlib

_COLOR_BY = ("pattern", "norm", "sign")


class PolytopePartitionDisplay:
    """The linear regions of a ReLU network on a 2-D box, one polygon per region.

    Build it with :meth:`from_estimator` or :meth:`from_results`; :meth:`plot` draws.

    Parameters
    ----------
    polygons : list of ndarray of shape (k, 2)
    values : ndarray of shape (n_regions,)
        Colour value of each region.
    color_by : {'pattern', 'norm', 'sign'}

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
    collection_ : matplotlib PolyCollection

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import torch
    >>> from geolearn.polytopes import ReLUPolytopes
    >>> from geolearn.plotting import PolytopePartitionDisplay
    >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
    <torch._C.Generator object at ...>
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    >>> est = ReLUPolytopes(net, bounds=(-1, 1)).fit(torch.zeros(1, 2).numpy())
    >>> disp = PolytopePartitionDisplay.from_estimator(est, color_by="norm")
    >>> len(disp.collection_.get_paths()) == len(disp.polygons)
    True
    """

    def __init__(self, polygons, values, color_by="pattern"):
        self.polygons = polygons
        self.values = values
        self.color_by = color_by

    @classmethod
    def from_results(cls, enumeration, color_by="pattern", ax=None, **plot_kw):
        """Display the regions of a 2-D box (a ``ReLUPolytopes.enumerate_regions`` result).

        Parameters
        ----------
        enumeration : Bunch
            With polygons (2-D inputs and a box).
        color_by : {'pattern', 'norm', 'sign'}, default='pattern'
            A distinct colour per region, the norm of the affine map's weights
            ``||W||``, or the sign of the (first) output at the region's
            vertex mean (the decision regions).
        """
        if enumeration.polygons is None:
            raise ValueError("the enumeration has no polygons: enumerate a 2-D network in a box.")
        if color_by not in _COLOR_BY:
            raise ValueError(f"color_by must be one of {_COLOR_BY}; got {color_by!r}.")
        if color_by == "pattern":
            values = np.random.default_rng(0).permutation(enumeration.n_regions)
        elif color_by == "norm":
            values = np.linalg.norm(enumeration.W.reshape(enumeration.n_regions, -1), axis=1)
        else:
            centres = np.array([V.mean(axis=0) for V in enumeration.polygons])
            out = np.einsum("rom,rm->ro", enumeration.W, centres) + enumeration.b
            values = np.sign(out[:, 0]) if out.shape[1] == 1 else out.argmax(axis=1)
        return cls(enumeration.polygons, values, color_by).plot(ax=ax, **plot_kw)

    @classmethod
    def from_estimator(cls, estimator, bounds="fitted", color_by="pattern", ax=None, **plot_kw):
        """Enumerate the regions of a fitted 2-D :class:`~geolearn.polytopes.ReLUPolytopes`
        in its box (or ``bounds``) and display them."""
        enumeration = estimator.enumerate_regions(bounds=bounds)
        return cls.from_results(enumeration, color_by=color_by, ax=ax, **plot_kw)

    def plot(self, ax=None, *, cmap=None, edgecolor="k", linewidth=0.3, colorbar=None):
        """Draw the polygons; returns self."""
        check_matplotlib("PolytopePartitionDisplay")
        from matplotlib.collections import PolyCollection

        fig, ax = axes_or_new(ax)
        cmap = cmap or {"pattern": "tab20", "norm": "viridis", "sign": "coolwarm"}[self.color_by]
        coll = PolyCollection(self.polygons, array=np.asarray(self.values, float), cmap=cmap,
                              edgecolors=edgecolor, linewidths=linewidth)
        ax.add_collection(coll)
        ax.autoscale_view()
        ax.set_aspect("equal")
        ax.set_xlabel("$x_1$")
        ax.set_ylabel("$x_2$")
        what = {"pattern": "one colour per region", "norm": "colour: norm of the local map",
                "sign": "colour: sign of the output"}[self.color_by]
        # two short lines: side-by-side panels and a colour bar leave no room for one long one
        ax.set_title(f"{len(self.polygons)} linear regions\n({what})")
        if colorbar if colorbar is not None else self.color_by == "norm":
            fig.colorbar(coll, ax=ax, label="$\\|W\\|$")
        self.ax_, self.figure_, self.collection_ = ax, fig, coll
        return self


class SegmentRegionsDisplay:
    """Regions crossed along segments against the Hamming distance of their ends
    (paper 1, Table 5 / Fig. 4): points on or above the diagonal ``regions - 1 = H``.

    Parameters
    ----------
    hamming : ndarray of shape (n_pairs,)
    n_regions : ndarray of shape (n_pairs,)

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, torch
    >>> from geolearn.polytopes import ReLUPolytopes
    >>> from geolearn.plotting import SegmentRegionsDisplay
    >>> net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    >>> X = np.random.default_rng(0).normal(size=(20, 3))
    >>> est = ReLUPolytopes(net, bounds=None).fit(X)
    >>> disp = SegmentRegionsDisplay.from_estimator(est, X[:10], X[10:])
    >>> bool(np.all(disp.n_regions - 1 >= disp.hamming))
    True
    """

    def __init__(self, hamming, n_regions):
        self.hamming = np.asarray(hamming)
        self.n_regions = np.asarray(n_regions)

    @classmethod
    def from_results(cls, segments, ax=None, **plot_kw):
        """Display a list of :meth:`~geolearn.polytopes.ReLUPolytopes.segment_regions` results."""
        return cls([s.hamming for s in segments], [s.n_regions for s in segments]).plot(
            ax=ax, **plot_kw)

    @classmethod
    def from_estimator(cls, estimator, XA, XB, method="exact", ax=None, **plot_kw):
        """Segments ``XA[i] -> XB[i]`` through a fitted :class:`~geolearn.polytopes.ReLUPolytopes`."""
        segments = [estimator.segment_regions(a, b, method=method)
                    for a, b in zip(np.asarray(XA), np.asarray(XB))]
        return cls.from_results(segments, ax=ax, **plot_kw)

    def plot(self, ax=None, **scatter_kw):
        """Scatter regions crossed against Hamming distance; returns self."""
        check_matplotlib("SegmentRegionsDisplay")
        fig, ax = axes_or_new(ax)
        ax.scatter(self.hamming, self.n_regions, **{"s": 12, "alpha": 0.7, **scatter_kw})
        top = max(int(self.hamming.max(initial=0)), int(self.n_regions.max(initial=1)) - 1)
        ax.plot([0, top], [1, top + 1], "k--", lw=1, label="regions = H + 1")
        ax.set_xlabel("Hamming distance of the end points")
        ax.set_ylabel("regions crossed")
        ax.legend()
        self.ax_, self.figure_ = ax, fig
        return self
