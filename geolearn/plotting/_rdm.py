"""Displays of representational dissimilarity matrices: heat maps, comparisons, Fiedler cuts."""

import numpy as np

from ._base import axes_or_new


def _square(R):
    """An RDM as a float square matrix (condensed vectors unfolded); NaN gaps are kept."""
    R = np.asarray(R, dtype=np.float64)
    if R.ndim == 1:
        from geolearn.representations import squareform_rdm

        R = squareform_rdm(R, allow_nan=True)
    if R.ndim != 2 or R.shape[0] != R.shape[1]:
        raise ValueError(f"rdm must be a square (m, m) RDM or its condensed vector; got shape "
                         f"{R.shape}.")
    return R


def _labels(labels, m, name="labels"):
    if labels is None:
        return None
    labels = np.asarray(labels)
    if labels.shape != (m,):
        raise ValueError(f"{name} must hold one label per stimulus, shape ({m},); got shape "
                         f"{labels.shape}.")
    return labels


class RDMDisplay:
    """Heat map of an RDM, stimuli grouped by category with the category boundaries drawn.

    The paper's Figs. 3, 5 and 6: RDMs ordered by supercategory, so that a representation
    that clusters the categories shows dark (similar) blocks on the diagonal.

    Parameters
    ----------
    rdm : ndarray of shape (m, m)
        The RDM in display order.
    labels : ndarray of shape (m,), optional
        Category of each stimulus in display order; consecutive runs are the blocks.

    Attributes
    ----------
    image_ : AxesImage
    boundaries_ : ndarray
        Positions (between stimuli, in ``k - 0.5`` units) of the category boundaries.
    colorbar_ : Colorbar or None
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.plotting import RDMDisplay
    >>> from geolearn.representations import categorical_rdm
    >>> disp = RDMDisplay.from_results(categorical_rdm([1, 0, 1, 0]), labels=[1, 0, 1, 0])
    >>> disp.image_.get_array().tolist(), disp.boundaries_.tolist()
    ([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]], [1.5])
    """

    def __init__(self, rdm, labels=None):
        self.rdm = rdm
        self.labels = labels

    @classmethod
    def from_results(cls, rdm, labels=None, *, sort=True, ax=None, cmap="viridis", colorbar=True):
        """Draw an RDM, stimuli sorted by label (stable) when ``labels`` are given.

        Parameters
        ----------
        rdm : array-like of shape (m, m) or (m(m-1)/2,)
        labels : array-like of shape (m,), optional
        sort : bool, default=True
            Reorder the stimuli by label; False keeps the given order.
        ax : matplotlib Axes, optional
        cmap : str, default="viridis"
        colorbar : bool, default=True

        Returns
        -------
        display : RDMDisplay
        """
        R = _square(rdm)
        labels = _labels(labels, len(R))
        if labels is not None and sort:
            order = np.argsort(labels, kind="stable")
            R, labels = R[np.ix_(order, order)], labels[order]
        return cls(R, labels).plot(ax=ax, cmap=cmap, colorbar=colorbar)

    @classmethod
    def from_estimator(cls, estimator, *, layer=None, labels=None, sort=True, ax=None,
                       cmap="viridis", colorbar=True):
        """Draw the RDM held by a fitted estimator.

        Parameters
        ----------
        estimator : fitted NetworkRDM or RDMTransformer
            NetworkRDM: the RDM of ``layer`` (default: its last layer); RDMTransformer:
            the RDM of its reference stimuli.
        layer : str, optional
        labels, sort, ax, cmap, colorbar
            As in :meth:`from_results`.

        Returns
        -------
        display : RDMDisplay
        """
        if hasattr(estimator, "rdms_"):
            names = list(estimator.rdms_)
            layer = names[-1] if layer is None else layer
            if layer not in estimator.rdms_:
                raise ValueError(f"layer must be one of {names}; got {layer!r}.")
            R = estimator.rdms_[layer]
        elif hasattr(estimator, "X_ref_"):
            R = estimator.transform(estimator.X_ref_)
        else:
            raise TypeError(f"estimator must be a fitted NetworkRDM or RDMTransformer; got "
                            f"{type(estimator).__name__} (fit it first, or use from_results).")
        return cls.from_results(R, labels, sort=sort, ax=ax, cmap=cmap, colorbar=colorbar)

    def plot(self, ax=None, cmap="viridis", colorbar=True):
        """Draw the heat map.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        cmap : str, default="viridis"
        colorbar : bool, default=True

        Returns
        -------
        self : RDMDisplay
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        R = np.asarray(self.rdm)
        self.image_ = self.ax_.imshow(R, cmap=cmap, interpolation="nearest")
        self.colorbar_ = (self.figure_.colorbar(self.image_, ax=self.ax_, label="dissimilarity")
                          if colorbar else None)
        self.boundaries_ = np.array([])
        if self.labels is not None:
            labels = np.asarray(self.labels)
            change = np.flatnonzero(labels[1:] != labels[:-1]) + 1
            self.boundaries_ = change - 0.5
            for b in self.boundaries_:
                self.ax_.axhline(b, color="white", linewidth=0.8)
                self.ax_.axvline(b, color="white", linewidth=0.8)
            starts = np.r_[0, change]
            centres = (starts + np.r_[change, len(labels)]) / 2 - 0.5
            names = [str(labels[s]) for s in starts]
            self.ax_.set_xticks(centres, names, rotation=90)
            self.ax_.set_yticks(centres, names)
        self.ax_.set_title("RDM")
        return self


class RDMComparisonDisplay:
    """Bar chart of RDM comparisons with bootstrap confidence intervals (paper Table 2).

    One bar per model: its similarity with the target RDM (e.g. the mean-subject fMRI
    RDM), with the interval of :func:`~geolearn.representations.bootstrap_compare_rdms`
    as error bar and the bootstrap p-value above it.

    Parameters
    ----------
    statistics, ci_low, ci_high, p_values : sequence of float
        One per model (``p_values`` may be None).
    names : sequence of str

    Attributes
    ----------
    bars_ : BarContainer
    errorbars_ : ErrorbarContainer
    texts_ : list of Text
        The p-value annotations.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.plotting import RDMComparisonDisplay
    >>> disp = RDMComparisonDisplay([0.165, 0.054], [0.15, 0.04], [0.18, 0.07],
    ...                             ["categorical", "AlexNet"], p_values=[1e-4, 1e-4]).plot()
    >>> [float(b.get_height()) for b in disp.bars_], [t.get_text() for t in disp.texts_]
    ([0.165, 0.054], ['p<0.001', 'p<0.001'])
    """

    def __init__(self, statistics, ci_low, ci_high, names, p_values=None):
        self.statistics = statistics
        self.ci_low = ci_low
        self.ci_high = ci_high
        self.names = names
        self.p_values = p_values

    @classmethod
    def from_results(cls, results, *, ax=None, ylabel="RDM correlation with the target"):
        """Bars of named results of :func:`~geolearn.representations.bootstrap_compare_rdms`.

        Parameters
        ----------
        results : dict of str to Bunch
            :func:`~geolearn.representations.bootstrap_compare_rdms` results, in display
            order.
        ax : matplotlib Axes, optional
        ylabel : str

        Returns
        -------
        display : RDMComparisonDisplay
        """
        if not results:
            raise ValueError("results must name at least one bootstrap_compare_rdms result.")
        rs = list(results.values())
        return cls([r.statistic for r in rs], [r.ci_low for r in rs], [r.ci_high for r in rs],
                   list(results), p_values=[r.p_value for r in rs]).plot(ax=ax, ylabel=ylabel)

    def plot(self, ax=None, ylabel="RDM correlation with the target"):
        """Draw the bars, error bars and p-values.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        ylabel : str

        Returns
        -------
        self : RDMComparisonDisplay
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        stat = np.asarray(self.statistics, dtype=float)
        low, high = np.asarray(self.ci_low, dtype=float), np.asarray(self.ci_high, dtype=float)
        x = np.arange(len(stat))
        self.bars_ = self.ax_.bar(x, stat, color="C0")
        self.errorbars_ = self.ax_.errorbar(x, stat, yerr=[stat - low, high - stat], fmt="none",
                                            ecolor="black", capsize=4)
        self.texts_ = []
        for i, p in enumerate(self.p_values if self.p_values is not None else []):
            text = "p<0.001" if p < 0.001 else f"p={p:.3f}"
            self.texts_.append(self.ax_.annotate(text, (x[i], max(high[i], stat[i])),
                                                 xytext=(0, 3), textcoords="offset points",
                                                 ha="center", fontsize="small"))
        self.ax_.set_xticks(x, [str(n) for n in self.names], rotation=30, ha="right")
        self.ax_.axhline(0.0, color="grey", linewidth=0.8)
        self.ax_.set_ylabel(ylabel)
        return self


class FiedlerDisplay:
    """The Fiedler vector sorted by value and coloured by class, with the cut at 0.

    Stimuli left of the sign change form one part, those right of it the other (paper
    Algorithm 1); a representation that separates two classes shows two colours on either
    side of the threshold.

    Parameters
    ----------
    fiedler_vector : ndarray of shape (m,)
    labels : ndarray of shape (m,), optional
        Class of each stimulus (colours); None colours by part.

    Attributes
    ----------
    order_ : ndarray of shape (m,)
        Stimuli sorted by their Fiedler-vector entry (stable).
    scatters_ : dict
        Class (or part) -> PathCollection of (rank, entry) points.
    threshold_ : Line2D
        The partition threshold, ``e2 = 0``.
    accuracy_ : float or None
        Agreement of the partition with two classes (None without two classes).
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.plotting import FiedlerDisplay
    >>> from geolearn.representations import categorical_rdm
    >>> y = np.array([0, 1, 0, 1, 1])
    >>> disp = FiedlerDisplay.from_results(0.2 + 0.6 * categorical_rdm(y) - 0.2 * np.eye(5), y)
    >>> disp.accuracy_, y[disp.order_].tolist()
    (1.0, [1, 1, 1, 0, 0])
    """

    def __init__(self, fiedler_vector, labels=None):
        self.fiedler_vector = fiedler_vector
        self.labels = labels

    @classmethod
    def from_estimator(cls, estimator, labels=None, *, ax=None):
        """Draw the Fiedler vector of a fitted :class:`~geolearn.representations.FiedlerPartition`.

        Parameters
        ----------
        estimator : fitted FiedlerPartition
        labels : array-like of shape (m,), optional
        ax : matplotlib Axes, optional

        Returns
        -------
        display : FiedlerDisplay
        """
        if not hasattr(estimator, "fiedler_vector_"):
            raise TypeError(f"estimator must be a fitted FiedlerPartition; got "
                            f"{type(estimator).__name__} without fiedler_vector_.")
        e2 = estimator.fiedler_vector_
        return cls(e2, _labels(labels, len(e2))).plot(ax=ax)

    @classmethod
    def from_results(cls, rdm, labels=None, *, negative_weights="clip", normalized=False, ax=None):
        """Fit a FiedlerPartition to an RDM and draw its Fiedler vector.

        Parameters
        ----------
        rdm : array-like of shape (m, m)
        labels : array-like of shape (m,), optional
        negative_weights, normalized
            As in :class:`~geolearn.representations.FiedlerPartition`.
        ax : matplotlib Axes, optional

        Returns
        -------
        display : FiedlerDisplay
        """
        from geolearn.representations import FiedlerPartition

        fp = FiedlerPartition(negative_weights=negative_weights, normalized=normalized)
        return cls.from_estimator(fp.fit(_square(rdm)), labels, ax=ax)

    def plot(self, ax=None):
        """Draw the sorted Fiedler vector.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self : FiedlerDisplay
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        e2 = np.asarray(self.fiedler_vector, dtype=float)
        self.order_ = np.argsort(e2, kind="stable")
        groups = (np.where(e2 < 0, "e2 < 0", "e2 >= 0") if self.labels is None
                  else np.asarray(self.labels))
        rank = np.empty(len(e2), dtype=int)
        rank[self.order_] = np.arange(len(e2))
        self.scatters_ = {}
        for i, g in enumerate(np.unique(groups)):
            sel = groups == g
            self.scatters_[g.item() if hasattr(g, "item") else g] = self.ax_.scatter(
                rank[sel], e2[sel], s=12, color=f"C{i}", label=str(g))
        self.threshold_ = self.ax_.axhline(0.0, color="grey", linestyle="--",
                                           label="partition threshold")
        self.accuracy_ = None
        classes = np.unique(groups)
        if self.labels is not None and len(classes) == 2:
            # parts e2 < 0 and e2 > 0 (Algorithm 1); the better assignment to the classes
            in_a = groups == classes[0]
            agree = np.sum((e2 < 0) & in_a) + np.sum((e2 > 0) & ~in_a)
            swap = np.sum((e2 > 0) & in_a) + np.sum((e2 < 0) & ~in_a)
            self.accuracy_ = float(max(agree, swap) / len(e2))
            self.ax_.set_title(f"Fiedler partition accuracy {self.accuracy_:.3f}")
        self.ax_.set_xlabel("stimuli sorted by Fiedler vector entry")
        self.ax_.set_ylabel("Fiedler vector entry")
        self.ax_.legend(fontsize="small")
        return self
