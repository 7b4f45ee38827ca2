"""Displays for :mod:`geolearn.diffeo`: deformations over a (T, c) grid, R_f / D_f / G_f curves."""

import numpy as np

from ._base import axes_or_new, check_matplotlib


class DeformationGridDisplay:
    """An image deformed at every ``(T, c)`` of a grid, the useful region framed in green.

    A cell is useful when ``T_min <= T <= T_max`` (:func:`geolearn.diffeo.temperature_range`):
    displacements of at least half a pixel that are typically still diffeomorphisms
    (Petrini et al., Fig. 2).

    Parameters
    ----------
    images : ndarray of shape (n_c, n_T, n, n)
    temperatures : ndarray of shape (n_T,)
    cutoffs : ndarray of shape (n_c,)
    valid : ndarray of bool, shape (n_c, n_T)

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes, shape (n_c, n_T)
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.datasets import load_digits_images
    >>> from geolearn.diffeo import deformation_grid
    >>> from geolearn.plotting import DeformationGridDisplay
    >>> X, _ = load_digits_images(upsample=2, return_X_y=True)
    >>> grid = deformation_grid(X[0], cutoffs=(1, 3), random_state=0)
    >>> disp = DeformationGridDisplay.from_results(grid)
    >>> disp.axes_.shape
    (2, 5)
    """

    def __init__(self, images, temperatures, cutoffs, valid):
        self.images = images
        self.temperatures = temperatures
        self.cutoffs = cutoffs
        self.valid = valid

    @classmethod
    def from_results(cls, grid, *, axes=None, cmap="gray"):
        """Draw a grid of deformations computed by :func:`geolearn.diffeo.deformation_grid`.

        Parameters
        ----------
        grid : Bunch
            With ``images``, ``temperatures``, ``cutoffs`` and ``valid``.
        axes : ndarray of Axes of shape (n_c, n_T), default=None
        cmap : str, default="gray"

        Returns
        -------
        display : DeformationGridDisplay
        """
        return cls(grid.images, grid.temperatures, grid.cutoffs, grid.valid).plot(
            axes=axes, cmap=cmap)

    def plot(self, axes=None, *, cmap="gray"):
        """Draw the grid (rows: ``c``; columns: ``T``).

        Parameters
        ----------
        axes : ndarray of Axes of shape (n_c, n_T), optional
        cmap : str, default="gray"

        Returns
        -------
        self : DeformationGridDisplay
        """
        plt = check_matplotlib("DeformationGridDisplay")
        n_c, n_T = self.valid.shape
        if axes is None:
            fig, axes = plt.subplots(n_c, n_T, figsize=(2.2 * n_T, 2.2 * n_c + 0.8),
                                     squeeze=False, layout="constrained")
        else:
            axes = np.asarray(axes).reshape(n_c, n_T)
            fig = axes.flat[0].figure
        for a in range(n_c):
            for b in range(n_T):
                ax = axes[a, b]
                ax.imshow(self.images[a, b], cmap=cmap)
                ax.set_xticks([])
                ax.set_yticks([])
                for spine in ax.spines.values():
                    spine.set_edgecolor("tab:green" if self.valid[a, b] else "0.8")
                    spine.set_linewidth(3 if self.valid[a, b] else 1)
                if a == n_c - 1:
                    ax.set_xlabel(f"T = {self.temperatures[b]:.1e}")
                if b == 0:
                    ax.set_ylabel(f"cut-off c = {self.cutoffs[a]}")
        fig.suptitle("An image deformed at temperature T (columns, the displacement's size) and "
                     "cut-off c (rows, its highest\nspatial frequency); green frame: "
                     "T_min <= T <= T_max, visible yet typically still a diffeomorphism")
        self.axes_, self.figure_ = axes, fig
        return self


class StabilityCurveDisplay:
    """``R_f``, ``D_f`` and ``G_f`` against a control variable (training-set size, depth).

    Parameters
    ----------
    x : ndarray of shape (n_points,)
    values : dict of str to ndarray of shape (n_points,)
        Log-averaged ``R``, ``D``, ``G`` (any subset).
    errors : dict of str to ndarray, optional
        Standard deviations of ``log10`` of each quantity (the paper's error bars).
    xlabel : str

    Attributes
    ----------
    lines_ : dict of str to matplotlib artists
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.plotting import StabilityCurveDisplay
    >>> disp = StabilityCurveDisplay([100, 1000], {"R": [1.0, 0.1]}, xlabel="P").plot()
    >>> sorted(disp.lines_)
    ['R']
    """

    def __init__(self, x, values, errors=None, xlabel=""):
        self.x = x
        self.values = values
        self.errors = errors
        self.xlabel = xlabel

    @classmethod
    def from_results(cls, x, results, *, quantities=("R", "D", "G"), xlabel=""):
        """Collect quantities from :func:`geolearn.diffeo.relative_stability` results.

        Parameters
        ----------
        x : array-like of shape (n_points,)
        results : sequence of Bunch
            One result per point; ``n_repeats > 1`` gives error bars.
        quantities : sequence of {"R", "D", "G"}, default=("R", "D", "G")
        xlabel : str, default=""

        Returns
        -------
        display : StabilityCurveDisplay
        """
        values = {q: np.array([r[q] for r in results]) for q in quantities}
        errors = {q: np.array([np.std(np.log10(r[f"{q}_repeats"])) for r in results])
                  for q in quantities}
        return cls(np.asarray(x), values, errors, xlabel)

    def plot(self, ax=None):
        """Draw the curves on log-log axes.

        Returns
        -------
        self : StabilityCurveDisplay
        """
        fig, ax = axes_or_new(ax)
        self.lines_ = {}
        for q, v in self.values.items():
            v = np.asarray(v, dtype=float)
            if self.errors is not None and q in self.errors:
                e = np.asarray(self.errors[q])
                self.lines_[q] = ax.errorbar(self.x, v, yerr=[v - v / 10**e, v * 10**e - v],
                                             marker="o", capsize=3, label=f"{q}_f")
            else:
                self.lines_[q] = ax.plot(self.x, v, marker="o", label=f"{q}_f")[0]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(self.xlabel)
        ax.legend()
        self.ax_, self.figure_ = ax, fig
        return self
