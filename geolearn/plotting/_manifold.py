"""Displays of the manifold family: diffusion embeddings and Nyström projections."""

import numpy as np

from ._base import axes_or_new


class DiffusionEmbeddingDisplay:
    """Two diffusion coordinates of a fitted CIDM, coloured by an intrinsic parameter.

    Parameters
    ----------
    embedding : ndarray of shape (n, 2)
    color : ndarray of shape (n,) or None
    labels : tuple of str
        Axis labels.
    color_label : str or None
        Label of the colour bar (what ``color`` is).

    Attributes
    ----------
    ax_, figure_ : matplotlib objects set by :meth:`plot`.
    scatter_ : PathCollection
    colorbar_ : Colorbar or None

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import CIDM
    >>> from geolearn.plotting import DiffusionEmbeddingDisplay
    >>> X, t = make_circle_points(200, grid=True, noise=0.02, random_state=0,
    ...                           return_params=True)
    >>> cidm = CIDM(n_eigenpairs=5).fit(X)
    >>> disp = DiffusionEmbeddingDisplay.from_estimator(cidm, color=t, color_label="angle (rad)")
    >>> disp.scatter_.get_offsets().shape, disp.colorbar_.ax.get_ylabel()
    ((200, 2), 'angle (rad)')

    Evenly spaced points (``grid=True``) embed as a circle. 200 random angles leave
    gaps several times the mean spacing; the graph is then nearly cut there, and the
    first coordinates describe that cut (an arc and a detached cluster), as they should.
    """

    def __init__(self, embedding, color=None, labels=("cidm1", "cidm2"), color_label=None):
        self.embedding = embedding
        self.color = color
        self.labels = labels
        self.color_label = color_label

    @classmethod
    def from_estimator(cls, estimator, X=None, *, color=None, color_label=None,
                       components=(0, 1), ax=None):
        """Embed ``X`` (None: the training points) and plot two components.

        Parameters
        ----------
        estimator : fitted CIDM
        X : array-like of shape (n, n_features), default=None
        color : array-like of shape (n,), default=None
            An intrinsic parameter (e.g. the angle) to colour the points by.
        color_label : str, default=None
            What ``color`` is, for the colour bar.
        components : tuple of two int, default=(0, 1)
            Indices into ``transform``'s columns.
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : DiffusionEmbeddingDisplay
        """
        Z = estimator.embedding_ if X is None else estimator.transform(X)
        i, j = components
        names = estimator.get_feature_names_out()
        return cls(Z[:, [i, j]], color, (names[i], names[j]), color_label).plot(ax=ax)

    def plot(self, ax=None, *, cmap="twilight", **scatter_kw):
        """Draw the embedding.

        Returns
        -------
        self
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        kw = {"s": 8, **scatter_kw}
        if self.color is not None:
            kw.update(c=np.asarray(self.color), cmap=cmap)
        self.scatter_ = self.ax_.scatter(self.embedding[:, 0], self.embedding[:, 1], **kw)
        self.colorbar_ = (self.figure_.colorbar(self.scatter_, ax=self.ax_,
                                                label=self.color_label)
                          if self.color is not None else None)
        self.ax_.set_xlabel(self.labels[0])
        self.ax_.set_ylabel(self.labels[1])
        self.ax_.set_title("diffusion coordinates")
        self.ax_.set_aspect("equal", adjustable="datalim")
        return self


class NystromProjectionDisplay:
    """Points and their Nyström projections onto a learned manifold (first two coordinates).

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
    projected : ndarray of shape (n, n_features)
    reference : ndarray of shape (N, n_features) or None
        The training points, drawn faintly.

    Attributes
    ----------
    ax_, figure_ : matplotlib objects set by :meth:`plot`.
    original_, projected_ : PathCollection
    links_ : LineCollection
        Segments from each point to its projection.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import CIDM
    >>> from geolearn.plotting import NystromProjectionDisplay
    >>> X = make_circle_points(200, noise=0.05, random_state=0)
    >>> cidm = CIDM(n_eigenpairs=10).fit(X)
    >>> disp = NystromProjectionDisplay.from_estimator(cidm, 1.3 * X[:20])
    >>> len(disp.links_.get_segments())
    20
    """

    def __init__(self, X, projected, reference=None):
        self.X = X
        self.projected = projected
        self.reference = reference

    @classmethod
    def from_estimator(cls, estimator, X=None, *, n_iter=1, ax=None):
        """Project ``X`` (None: the training points) and plot both.

        Parameters
        ----------
        estimator : fitted CIDM
        X : array-like of shape (n, n_features), default=None
        n_iter : int, default=1
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : NystromProjectionDisplay
        """
        X = estimator.X_fit_ if X is None else np.asarray(X, dtype=float).reshape(len(X), -1)
        P = estimator.nystrom_project(X, n_iter=n_iter)
        return cls(X, P, estimator.X_fit_).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the points, their projections and the links between them.

        Returns
        -------
        self
        """
        from matplotlib.collections import LineCollection

        self.figure_, self.ax_ = axes_or_new(ax)
        if self.reference is not None:
            self.ax_.scatter(self.reference[:, 0], self.reference[:, 1], s=3, c="0.8",
                             label="training points")
        self.links_ = LineCollection(np.stack([self.X[:, :2], self.projected[:, :2]], 1),
                                     colors="0.5", linewidths=0.5)
        self.ax_.add_collection(self.links_)
        self.original_ = self.ax_.scatter(self.X[:, 0], self.X[:, 1], s=10, c="tab:red",
                                          label="original")
        self.projected_ = self.ax_.scatter(self.projected[:, 0], self.projected[:, 1], s=10,
                                           c="tab:blue", label="Nyström projection")
        self.ax_.set_aspect("equal", adjustable="datalim")
        self.ax_.set_title("Nyström projection onto the learned manifold")
        self.ax_.legend(loc="best", fontsize="small")
        return self
