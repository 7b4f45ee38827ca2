"""Display of the riemannian family: a geometric quantity on a path, plane or 2-D grid."""

import numpy as np

from ._base import axes_or_new


class GeometrySliceDisplay:
    """A quantity (default the log volume element) on a slice of input space.

    Paths are drawn as a curve over ``t`` with dashed lines where the predicted
    class changes; planes and grids as a filled contour map with the decision
    boundary drawn in white (paper Figs. 1–3).

    Parameters
    ----------
    slice : Bunch
        From ``RiemannianFeatureGeometry.along_path``, ``on_plane`` or ``on_grid``.
    quantity : str, default="log_volume"
        One of ``slice.quantities``.

    Attributes
    ----------
    ax_, figure_ : matplotlib objects set by :meth:`plot`.
    line_ : Line2D (paths) or None
    contour_ : QuadContourSet or TriContourSet (planes, grids) or None
    boundary_ : list of artists drawing the class changes
    colorbar_ : Colorbar or None

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import torch
    >>> from geolearn.riemannian import RiemannianFeatureGeometry, ShallowNet
    >>> from geolearn.plotting import GeometrySliceDisplay
    >>> _ = torch.manual_seed(0)
    >>> geo = RiemannianFeatureGeometry(ShallowNet(2, 20, 2), layer="features")
    >>> geo = geo.fit(torch.zeros(1, 2).numpy())
    >>> disp = GeometrySliceDisplay.from_estimator(geo, resolution=10)
    >>> disp.contour_ is not None
    True
    """

    def __init__(self, slice, quantity="log_volume"):
        self.slice = slice
        self.quantity = quantity

    @classmethod
    def from_estimator(cls, estimator, *points, quantity="log_volume", ax=None, **kwargs):
        """Evaluate a fitted RiemannianFeatureGeometry on a slice and plot it.

        Parameters
        ----------
        estimator : fitted RiemannianFeatureGeometry
        *points : array-like
            None: a 2-D grid (``on_grid``); two points: a path (``along_path``);
            three: a plane (``on_plane``).
        quantity : str, default="log_volume"
        ax : matplotlib Axes, default=None
        **kwargs
            Passed to the slice method (``n_steps``, ``resolution``, ``bounds``...).

        Returns
        -------
        display : GeometrySliceDisplay
        """
        quantities = ("log_volume",) if quantity == "log_volume" else (quantity,)
        if quantity.startswith("log_metric_eigval_"):
            quantities = ("log_metric_eigvals",)
        if len(points) == 0:
            sl = estimator.on_grid(quantities=quantities, **kwargs)
        elif len(points) == 2:
            sl = estimator.along_path(*points, quantities=quantities, **kwargs)
        elif len(points) == 3:
            sl = estimator.on_plane(*points, quantities=quantities, **kwargs)
        else:
            raise ValueError(f"pass 0 (grid), 2 (path) or 3 (plane) points; got {len(points)}.")
        return cls(sl, quantity).plot(ax=ax)

    @classmethod
    def from_results(cls, slice, quantity="log_volume", ax=None):
        """Plot a slice computed by ``along_path``, ``on_plane`` or ``on_grid``.

        Returns
        -------
        display : GeometrySliceDisplay
        """
        return cls(slice, quantity).plot(ax=ax)

    def plot(self, ax=None, cmap="viridis", boundary=True):
        """Draw the slice.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        cmap : str, default="viridis"
        boundary : bool, default=True
            Draw where the predicted class changes (when predictions exist).

        Returns
        -------
        self : GeometrySliceDisplay
        """
        if self.quantity not in self.slice.quantities:
            raise ValueError(f"quantity={self.quantity!r} is not in the slice; it has "
                             f"{sorted(self.slice.quantities)}.")
        fig, ax = axes_or_new(ax)
        values = self.slice[self.quantity]
        pred = self.slice.predictions if boundary else None
        self.line_ = self.contour_ = self.colorbar_ = None
        self.boundary_ = []
        label = self.quantity.replace("_", " ")
        if self.slice.kind == "path":
            (self.line_,) = ax.plot(self.slice.t, values)
            if pred is not None:
                for i in np.flatnonzero(np.diff(pred) != 0):
                    t = 0.5 * (self.slice.t[i] + self.slice.t[i + 1])
                    self.boundary_.append(ax.axvline(t, color="k", ls="--", lw=0.8))
            ax.set(xlabel="t", ylabel=label)
        else:
            c = self.slice.coords
            self.contour_ = ax.tricontourf(c[:, 0], c[:, 1], values, levels=20, cmap=cmap)
            if pred is not None and len(np.unique(pred)) > 1:
                levels = np.unique(pred)[:-1] + 0.5
                self.boundary_.append(ax.tricontour(c[:, 0], c[:, 1], pred.astype(float),
                                                    levels=levels, colors="w", linewidths=1.2))
            self.colorbar_ = fig.colorbar(self.contour_, ax=ax, label=label)
            # a grid spans the input plane; a plane slice has its own in-plane coordinates
            axes = ("$x_1$", "$x_2$") if self.slice.kind == "grid" else ("$u$", "$v$")
            ax.set(xlabel=axes[0], ylabel=axes[1], aspect="equal")
        self.ax_, self.figure_ = ax, fig
        return self
