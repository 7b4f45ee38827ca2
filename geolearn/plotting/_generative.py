"""Displays of the generative family: latent grids and traversals, generated samples."""

import numpy as np

from ._base import axes_or_new, axes_row


def _mosaic(tiles, pad=1.0):
    """Arrange ``tiles`` of shape (rows, cols, H, W) into one image with ``pad`` pixels between."""
    rows, cols, H, W = tiles.shape
    out = np.full((rows * (H + 1) - 1, cols * (W + 1) - 1), np.nan)
    for i in range(rows):
        for j in range(cols):
            out[i * (H + 1):i * (H + 1) + H, j * (W + 1):j * (W + 1) + W] = tiles[i, j]
    return out


def colour_mosaic(images):
    """Images ``(rows, cols, C, H, W)`` as one ``(H', W', 3)`` picture (grey for C != 3)."""
    C = images.shape[2]
    channels = images if C == 3 else np.repeat(images.mean(axis=2, keepdims=True), 3, axis=2)
    planes = [_mosaic(channels[:, :, c]) for c in range(3)]
    return np.nan_to_num(np.stack(planes, axis=-1), nan=1.0)  # white gaps


def _check_images(estimator, display):
    """Raise before any decoding when the GridVAE cannot fold its outputs into images."""
    if estimator.image_shape_ is None:
        raise ValueError(f"{display} needs a GridVAE fitted on images or with image_shape.")


def _decoded_tiles(estimator, X, rows, cols):
    """Flat decodings ``X`` of a GridVAE as grey ``(rows, cols, H, W)`` tiles (channel mean)."""
    images = estimator.as_images(X)
    images = images.reshape(rows, cols, *images.shape[1:])
    return images.mean(axis=-3) if images.ndim >= 5 else images


class _MosaicDisplay:
    """A display of ``images`` (rows, cols, H, W) drawn as one mosaic with a tick per tile."""

    def _labels(self, rows, cols):
        """``(row tick labels, column tick labels, x label or None, y label or None)``."""
        raise NotImplementedError

    def plot(self, ax=None, cmap="gray"):
        """Draw the mosaic, one labelled tick per row and column of tiles.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        cmap : str, default='gray'

        Returns
        -------
        self
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        rows, cols, H, W = self.images.shape
        self.image_ = self.ax_.imshow(_mosaic(self.images), cmap=cmap, vmin=0, vmax=1)
        row_labels, col_labels, xlabel, ylabel = self._labels(rows, cols)
        self.ax_.set_yticks([i * (H + 1) + H / 2 - 0.5 for i in range(rows)], row_labels)
        self.ax_.set_xticks([j * (W + 1) + W / 2 - 0.5 for j in range(cols)], col_labels)
        if xlabel is not None:
            self.ax_.set_xlabel(xlabel)
        if ylabel is not None:
            self.ax_.set_ylabel(ylabel)
        return self


class LatentGridDisplay(_MosaicDisplay):
    """Decoded grid centres of a GridVAE, one tile per cell (Fig. 10A/B).

    Rows follow the grid values of latent dimension ``dims[0]``, columns those of
    ``dims[1]``; other dimensions stay at ``fixed_codes``.

    Parameters
    ----------
    images : ndarray of shape (n_rows, n_cols, H, W)
    row_values, col_values : ndarray
        Grid values along the rows and columns.
    dims : (int, int)

    Attributes
    ----------
    ax_, figure_, image_ : matplotlib objects set by :meth:`plot`.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import GridVAE
    >>> from geolearn.plotting import LatentGridDisplay
    >>> X = np.random.default_rng(0).random((50, 16))
    >>> vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, image_shape=(4, 4),
    ...               random_state=0).fit(X)
    >>> disp = LatentGridDisplay.from_estimator(vae)
    >>> disp.images.shape
    (6, 6, 4, 4)
    """

    def __init__(self, images, row_values, col_values, dims=(0, 1)):
        self.images = images
        self.row_values = row_values
        self.col_values = col_values
        self.dims = dims

    @classmethod
    def from_estimator(cls, estimator, dims=(0, 1), fixed_codes=None, ax=None):
        """Decode every cell of the grid spanned by ``dims`` and plot it.

        Parameters
        ----------
        estimator : fitted GridVAE with an ``image_shape_``
        dims : (int, int), default=(0, 1)
            Latent dimensions on the rows and columns (the same twice is not allowed;
            with ``n_latent == 1`` use ``(0, 0)`` for a single row).
        fixed_codes : array-like of shape (n_latent,), default=None
            Codes of the other dimensions (default 0).
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : LatentGridDisplay
        """
        _check_images(estimator, "LatentGridDisplay")
        d = estimator.n_latent
        r, c = dims
        base = np.zeros(d, dtype=np.int64) if fixed_codes is None else np.asarray(fixed_codes)
        rows = range(len(estimator.grid_[r]))
        cols = range(len(estimator.grid_[c])) if c != r else [None]
        codes = []
        for i in rows:
            for j in cols:
                code = base.copy()
                code[r] = i
                if j is not None:
                    code[c] = j
                codes.append(code)
        images = _decoded_tiles(estimator, estimator.decode_codes(np.array(codes)), len(rows),
                                len(cols))
        col_values = estimator.grid_[c] if c != r else np.array([np.nan])
        return cls(images, estimator.grid_[r], col_values, dims).plot(ax=ax)

    def _labels(self, rows, cols):
        # a single column (dims[0] == dims[1]) has no column values to show
        col_labels = [f"{v:g}" for v in self.col_values] if cols > 1 else [""]
        xlabel = f"z{self.dims[1]}" if cols > 1 else None
        return [f"{v:g}" for v in self.row_values], col_labels, xlabel, f"z{self.dims[0]}"


class LatentTraversalDisplay(_MosaicDisplay):
    """Decodings of one input as each latent dimension sweeps a range (Fig. 10C/D, 13).

    Parameters
    ----------
    images : ndarray of shape (n_latent, n_values, H, W)
    values : ndarray of shape (n_values,)

    Attributes
    ----------
    ax_, figure_, image_ : matplotlib objects set by :meth:`plot`.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.generative import GridVAE
    >>> from geolearn.plotting import LatentTraversalDisplay
    >>> images = np.random.default_rng(0).random((50, 1, 4, 4))
    >>> vae = GridVAE(n_latent=3, hidden_layer_sizes=(8,), max_epochs=1,
    ...               random_state=0).fit(images)
    >>> LatentTraversalDisplay.from_estimator(vae, images[0], values=[-1, 0, 1]).images.shape
    (3, 3, 4, 4)
    """

    def __init__(self, images, values):
        self.images = images
        self.values = values

    @classmethod
    def from_estimator(cls, estimator, x, values=None, ax=None):
        """Traverse every latent dimension of ``estimator`` from the code of ``x``.

        Parameters
        ----------
        estimator : fitted GridVAE with an ``image_shape_``
        x : array-like of shape (1, n_features) or one image
        values : sequence of float, default=None
            Defaults to 9 points spanning the first dimension's grid plus half a step.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : LatentTraversalDisplay
        """
        _check_images(estimator, "LatentTraversalDisplay")
        x = np.asarray(x)
        x = x.reshape(1, -1) if x.ndim in (1, 3) or (x.ndim == 2 and len(x) != 1) else x
        if values is None:
            g = estimator.grid_[0]
            half = (g[-1] - g[0]) / max(2 * (len(g) - 1), 1) or 0.5
            values = np.linspace(g[0] - half, g[-1] + half, 9)
        values = np.asarray(values, dtype=float)
        rows = [estimator.traverse(x[:1], m, values)[0] for m in range(estimator.n_latent)]
        images = _decoded_tiles(estimator, np.concatenate(rows), estimator.n_latent, len(values))
        return cls(images, values).plot(ax=ax)

    def _labels(self, rows, cols):
        col_labels = [f"{v:.2g}" for v in self.values]
        return [f"z{m}" for m in range(rows)], col_labels, "latent value", None


# -- topology generators ---------------------------------------------------------------------

def _grid_tiles(X, image_shape, n_images):
    """The first ``n_images`` rows as grey ``(rows, cols, H, W)`` tiles (NaN where none)."""
    images = np.asarray(X, dtype=float)[:n_images].reshape(-1, *image_shape)
    images = images.mean(axis=1)  # channel mean
    cols = int(np.ceil(np.sqrt(len(images))))
    rows = int(np.ceil(len(images) / cols))
    tiles = np.full((rows * cols, *images.shape[1:]), np.nan)
    tiles[:len(images)] = images
    return tiles.reshape(rows, cols, *images.shape[1:])


class GeneratedSamplesDisplay:
    """Generated samples beside the data they imitate (Jin et al. 2024, Figs. 3, 10).

    Two panels: point clouds as scatter plots (2-D data as is; other vectors on the
    data's first two principal axes, as the paper's Fig. 10; 1-D data against a zero
    line), or images as two grids.

    Parameters
    ----------
    data, samples : ndarray of shape (n, n_features)
    image_shape : tuple of int, default=None
        ``(C, H, W)`` (or ``(H, W)``): draw image grids instead of point clouds.
    name : str, default='samples'
        Title of the samples' panel.

    Attributes
    ----------
    axes_ : ndarray of 2 matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.generative import VAEGenerator
    >>> from geolearn.plotting import GeneratedSamplesDisplay
    >>> X = make_circle_points(100, noise=0.05, random_state=0)
    >>> vae = VAEGenerator(hidden_layer_sizes=(8,), max_epochs=1, random_state=0).fit(X)
    >>> disp = GeneratedSamplesDisplay.from_estimator(vae, X, random_state=0)
    >>> disp.samples.shape, len(disp.axes_)
    ((100, 2), 2)
    """

    def __init__(self, data, samples, image_shape=None, name="samples"):
        self.data = data
        self.samples = samples
        self.image_shape = image_shape
        self.name = name

    @classmethod
    def from_estimator(cls, estimator, X, n_samples=None, random_state=None, image_shape=None,
                       axes=None):
        """Draw ``n_samples`` from ``estimator.sample`` and plot them beside ``X``.

        Parameters
        ----------
        estimator : fitted generator with ``sample(n_samples, random_state=...)``
            A tuple returned by ``sample`` (samples, labels) gives its first element.
        X : array-like of shape (n, n_features) or image array
            The data.
        n_samples : int, default=None
            Defaults to ``len(X)``.
        random_state : int, RandomState instance or None, default=None
        image_shape : tuple of int, default=None
            Defaults to the estimator's ``image_shape_`` (None: point clouds).
        axes : sequence of 2 matplotlib Axes, default=None

        Returns
        -------
        display : GeneratedSamplesDisplay
        """
        X = np.asarray(X, dtype=float)
        X = X.reshape(len(X), -1)
        out = estimator.sample(len(X) if n_samples is None else n_samples,
                               random_state=random_state)
        samples = np.asarray(out[0] if isinstance(out, tuple) else out, dtype=float)
        if image_shape is None:
            image_shape = getattr(estimator, "image_shape_", None)
        return cls(X, samples, image_shape, type(estimator).__name__).plot(axes=axes)

    def _coordinates(self):
        """Both clouds in 2-D: as is, on the data's principal axes, or against zero."""
        data, samples = self.data, self.samples
        d = data.shape[1]
        if d == 1:
            return (np.c_[data, np.zeros(len(data))], np.c_[samples, np.zeros(len(samples))],
                    ("x", ""))
        if d == 2:
            return data, samples, ("x0", "x1")
        mean = data.mean(axis=0)
        axes = np.linalg.svd(data - mean, full_matrices=False)[2][:2]
        return (data - mean) @ axes.T, (samples - mean) @ axes.T, ("PC 1", "PC 2")

    def plot(self, axes=None, n_images=16, **scatter_kw):
        """Draw the data (left) and the samples (right).

        Parameters
        ----------
        axes : sequence of 2 matplotlib Axes, default=None
        n_images : int, default=16
            Images per grid (image data only).
        **scatter_kw
            Passed to ``Axes.scatter`` (point clouds only).

        Returns
        -------
        self
        """
        self.figure_, self.axes_ = axes_row(axes, 2, "GeneratedSamplesDisplay")
        panels = (("data", self.data), (self.name, self.samples))
        if self.image_shape is not None:
            shape = tuple(self.image_shape)
            shape = (1, *shape) if len(shape) == 2 else shape
            for ax, (title, X) in zip(self.axes_, panels):
                ax.imshow(_mosaic(_grid_tiles(X, shape, n_images)), cmap="gray", vmin=0,
                          vmax=1)
                ax.set(title=title, xticks=[], yticks=[])
            return self
        coords = self._coordinates()
        scatter_kw = {"s": 4, "alpha": 0.6, **scatter_kw}
        for ax, title, P in zip(self.axes_, (panels[0][0], panels[1][0]), coords[:2]):
            ax.scatter(P[:, 0], P[:, 1], **scatter_kw)
            ax.set(title=title, xlabel=coords[2][0], ylabel=coords[2][1])
        lims = np.concatenate(coords[:2])
        pad = np.maximum(0.05 * np.ptp(lims, axis=0), 0.5 * (np.ptp(lims, axis=0) == 0))
        lo, hi = lims.min(axis=0) - pad, lims.max(axis=0) + pad
        for ax in self.axes_:
            ax.set_xlim(lo[0], hi[0])
            ax.set_ylim(lo[1], hi[1])
            ax.set_aspect("equal", adjustable="box")
        return self
