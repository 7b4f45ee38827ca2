"""Displays of the generative family: decoded latent grids and latent traversals."""

import numpy as np

from ._base import axes_or_new


def _mosaic(tiles, pad=1.0):
    """Arrange ``tiles`` of shape (rows, cols, H, W) into one image with ``pad`` pixels between."""
    rows, cols, H, W = tiles.shape
    out = np.full((rows * (H + 1) - 1, cols * (W + 1) - 1), np.nan)
    for i in range(rows):
        for j in range(cols):
            out[i * (H + 1):i * (H + 1) + H, j * (W + 1):j * (W + 1) + W] = tiles[i, j]
    return out


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
    >>> vae = GridVAE(hidden_sizes=(8,), max_epochs=1, image_shape=(4, 4), random_state=0).fit(X)
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
    >>> vae = GridVAE(n_latent=3, hidden_sizes=(8,), max_epochs=1, random_state=0).fit(images)
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
