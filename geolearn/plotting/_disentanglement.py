"""Displays of disentangling autoencoders: traversals per attribute, block orthogonality."""

import numpy as np

from ._base import axes_or_new, axes_row
from ._generative import colour_mosaic


class AttributeTraversalDisplay:
    """Decodings of one image as each coordinate of each attribute's code sweeps a range.

    One panel per attribute; in a panel, one row per coordinate of the attribute's code
    and one column per value.

    Parameters
    ----------
    traversals : list of ndarray of shape (n_coordinates, n_values, C, H, W)
        One per attribute, in [0, 1].
    values : ndarray of shape (n_values,)
    attribute_names : list of str, default=None
        Panel titles (default: ``attribute 0``, ``attribute 1``, ...).

    Attributes
    ----------
    axes_ : ndarray of matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.disentanglement import DisentangledAttributeAutoencoder
    >>> from geolearn.plotting import AttributeTraversalDisplay
    >>> X = np.random.default_rng(0).random((32, 3 * 8 * 8))
    >>> dae = DisentangledAttributeAutoencoder(image_shape=(3, 8, 8), n_latent=4,
    ...                                        attribute_dims=(1, 2), max_epochs=1,
    ...                                        batch_size=16, random_state=0).fit(X)
    >>> disp = AttributeTraversalDisplay.from_estimator(dae, X[0], values=[-1, 0, 1])
    >>> [t.shape for t in disp.traversals]
    [(1, 3, 3, 8, 8), (2, 3, 3, 8, 8)]
    """

    def __init__(self, traversals, values, attribute_names=None):
        self.traversals = traversals
        self.values = values
        self.attribute_names = attribute_names

    @classmethod
    def from_estimator(cls, estimator, x, values=None, attributes=None, attribute_names=None,
                       axes=None):
        """Traverse the attributes of a fitted ``DisentangledAttributeAutoencoder``.

        Parameters
        ----------
        estimator : fitted DisentangledAttributeAutoencoder with an ``image_shape_``
        x : array-like of shape (n_features,) or one image (C, H, W)
        values : sequence of float, default=None
            Defaults to 7 points from -2 to 2 around zero (the prior's scale).
        attributes : sequence of int, default=None
            Which attributes (all by default).
        attribute_names : list of str, default=None
            One title per traversed attribute.
        axes : array of matplotlib Axes, default=None

        Returns
        -------
        display : AttributeTraversalDisplay
        """
        if estimator.image_shape_ is None:
            raise ValueError("AttributeTraversalDisplay needs an estimator fitted on images.")
        values = np.linspace(-2, 2, 7) if values is None else np.asarray(values, dtype=float)
        attributes = range(len(estimator.attribute_dims)) if attributes is None else attributes
        shape = estimator.image_shape_
        traversals = [estimator.traverse(x, a, values).reshape(-1, len(values), *shape)
                      for a in attributes]
        return cls(traversals, values, attribute_names).plot(axes=axes)

    def plot(self, axes=None):
        """Draw one mosaic per attribute.

        Parameters
        ----------
        axes : array of matplotlib Axes, default=None

        Returns
        -------
        self
        """
        self.figure_, self.axes_ = axes_row(axes, len(self.traversals),
                                            "AttributeTraversalDisplay", (3.2, 3))
        names = self.attribute_names or [f"attribute {i}" for i in range(len(self.traversals))]
        for i, (ax, images) in enumerate(zip(self.axes_, self.traversals)):
            rows, cols, _, H, W = images.shape
            ax.imshow(np.clip(colour_mosaic(images), 0, 1))
            ax.set_xticks([j * (W + 1) + W / 2 - 0.5 for j in range(cols)],
                          [f"{v:.2g}" for v in self.values])
            ax.set_yticks([r * (H + 1) + H / 2 - 0.5 for r in range(rows)],
                          [f"a{i}[{r}]" for r in range(rows)])
            ax.set(title=names[i], xlabel="code value")
        return self


class BlockOrthogonalityDisplay:
    """The mean absolute cosine between latent blocks, as an annotated matrix.

    Parameters
    ----------
    cosines : ndarray of shape (n_blocks, n_blocks)
        From ``DisentangledAttributeAutoencoder.block_cosines``.
    name : str, default=None
        Title.

    Attributes
    ----------
    ax_, figure_, image_ : matplotlib objects set by :meth:`plot`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.plotting import BlockOrthogonalityDisplay
    >>> disp = BlockOrthogonalityDisplay(np.array([[1.0, 0.2], [0.2, 1.0]])).plot()
    >>> disp.image_.get_array().shape
    (2, 2)
    """

    def __init__(self, cosines, name=None):
        self.cosines = cosines
        self.name = name

    @classmethod
    def from_estimator(cls, estimator, X, name=None, ax=None):
        """Compute ``estimator.block_cosines(X)`` and draw it.

        Parameters
        ----------
        estimator : fitted DisentangledAttributeAutoencoder
        X : array-like of shape (n_samples, n_features), or images
        name : str, default=None
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : BlockOrthogonalityDisplay
        """
        return cls(estimator.block_cosines(X), name).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the matrix with its values.

        Parameters
        ----------
        ax : matplotlib Axes, default=None

        Returns
        -------
        self
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        C = np.asarray(self.cosines, dtype=float)
        self.image_ = self.ax_.imshow(C, vmin=0, vmax=1, cmap="viridis")
        for (i, j), v in np.ndenumerate(C):
            self.ax_.text(j, i, f"{v:.2f}", ha="center", va="center",
                          color="black" if v > 0.5 else "white", fontsize="small")
        ticks = range(len(C))
        self.ax_.set_xticks(ticks, [str(i) for i in ticks])
        self.ax_.set_yticks(ticks, [str(i) for i in ticks])
        self.ax_.set(xlabel="latent block", ylabel="latent block")
        self.ax_.set_title(self.name or "mean |cos| between latent blocks")
        self.figure_.colorbar(self.image_, ax=self.ax_, label="mean |cos|")
        return self
