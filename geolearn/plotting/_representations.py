"""Displays of the representations family: the canonical space and per-source detection."""

import numpy as np

from ._base import axes_or_new


class CanonicalSpaceDisplay:
    """Clean and adversarial embeddings in the canonical space, native and mapped, in 2-D.

    The horizontal axis is the detector's score (its decision function, > 0:
    adversarial), the vertical one the first principal component of the
    canonical rows; mapped rows of other networks are drawn in the same
    coordinates.

    Parameters
    ----------
    groups : dict of str to ndarray of shape (n, 2)
        Projected points per legend label.

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
    artists_ : dict of str to PathCollection

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.plotting import CanonicalSpaceDisplay
    >>> from geolearn.representations import CanonicalAdversarialDetector
    >>> rng = np.random.default_rng(0)
    >>> Z = np.r_[rng.normal(0, 1, (50, 4)), rng.normal(2, 1, (50, 4))]
    >>> t = np.repeat([0, 1], 50)
    >>> det = CanonicalAdversarialDetector(random_state=0).fit(Z, t)
    >>> disp = CanonicalSpaceDisplay.from_estimator(det, Z, t)
    >>> sorted(disp.artists_)
    ['canonical adversarial', 'canonical clean']
    """

    def __init__(self, groups):
        self.groups = groups

    @classmethod
    def from_estimator(cls, detector, X, y, *, sources=None, ax=None):
        """Project canonical rows ``(X, y)`` and each source's mapped rows.

        Parameters
        ----------
        detector : fitted CanonicalAdversarialDetector
        X : array-like of shape (n, d_t)
            Canonical embeddings.
        y : array-like of shape (n,)
            Labels among ``detector.classes_`` (``classes_[1]``: adversarial).
        sources : dict of str to (X_source, y_source), optional
            Rows of sources fitted with ``fit_source``, mapped before projection.
        ax : matplotlib Axes, optional

        Returns
        -------
        display : CanonicalSpaceDisplay
        """
        from sklearn.decomposition import PCA

        X = np.asarray(X, dtype=np.float64)
        pca = PCA(n_components=1).fit(X)
        points = {"canonical": (np.c_[detector.decision_function(X), pca.transform(X)], y)}
        for name, (X_s, y_s) in (sources or {}).items():
            mapped = detector.maps_[name].predict(np.asarray(X_s, dtype=np.float64))
            score = detector.decision_function(X_s, source=name)
            points[f"{name} mapped"] = np.c_[score, pca.transform(mapped)], y_s
        groups = {}
        for prefix, (pts, labels) in points.items():
            adv = np.asarray(labels) == detector.classes_[1]
            groups[f"{prefix} clean"] = pts[~adv]
            groups[f"{prefix} adversarial"] = pts[adv]
        return cls(groups).plot(ax=ax)

    @classmethod
    def from_results(cls, result, *, ax=None):
        """Draw the val rows of a :func:`~geolearn.representations.cross_model_detection` result.

        Parameters
        ----------
        result : Bunch returned by ``cross_model_detection``
        ax : matplotlib Axes, optional

        Returns
        -------
        display : CanonicalSpaceDisplay
        """
        val = result.splits["val"]
        labels = np.r_[np.zeros(len(val), int), np.ones(len(val), int)]
        stack = lambda name: np.vstack([e[val] for e in result.embeddings[name]])  # noqa: E731
        sources = {name: (stack(name), labels) for name in result.sources}
        return cls.from_estimator(result.detector, stack(result.target), labels,
                                  sources=sources, ax=ax)

    def plot(self, ax=None):
        """Draw the points.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self : CanonicalSpaceDisplay
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        self.artists_ = {}
        for i, (label, pts) in enumerate(self.groups.items()):
            adversarial = label.endswith("adversarial")
            self.artists_[label] = self.ax_.scatter(
                pts[:, 0], pts[:, 1], s=10, alpha=0.6, label=label,
                marker="x" if adversarial else "o", color=f"C{i}")
        self.ax_.axvline(0.0, color="grey", linestyle=":")
        self.ax_.set_xlabel("detector score (> 0: adversarial)")
        self.ax_.set_ylabel("PC 1 of the canonical embeddings")
        self.ax_.legend(fontsize="small")
        return self


class DetectionScoreDisplay:
    """Bar chart of the canonical detector's AUROC: native, and for each mapped source.

    Parameters
    ----------
    scores : dict of str to float
        AUROC per bar label.
    target : str
        Name of the canonical network (its bar is drawn first, hatched).

    Attributes
    ----------
    ax_, figure_ : matplotlib Axes and Figure
    bars_ : BarContainer

    Examples
    --------
    >>> from geolearn.plotting import DetectionScoreDisplay
    >>> disp = DetectionScoreDisplay({"CNN": 0.9, "FFNN": 0.85}, "CNN").plot()
    >>> len(disp.bars_)
    2
    """

    def __init__(self, scores, target):
        self.scores = scores
        self.target = target

    @classmethod
    def from_results(cls, result, *, ax=None):
        """Bars of a :func:`~geolearn.representations.cross_model_detection` result.

        Parameters
        ----------
        result : Bunch returned by ``cross_model_detection``
        ax : matplotlib Axes, optional

        Returns
        -------
        display : DetectionScoreDisplay
        """
        scores = {result.target: result.auroc_native}
        scores.update({name: s["auroc_mapped"] for name, s in result.sources.items()})
        return cls(scores, result.target).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the bars.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self : DetectionScoreDisplay
        """
        self.figure_, self.ax_ = axes_or_new(ax)
        names = list(self.scores)
        self.bars_ = self.ax_.bar(names, [self.scores[n] for n in names],
                                  color=["C0" if n == self.target else "C1" for n in names])
        for bar, name in zip(self.bars_, names):
            if name == self.target:
                bar.set_hatch("//")
        self.ax_.axhline(0.5, color="grey", linestyle=":", label="chance")
        self.ax_.set_ylim(0, 1)
        self.ax_.set_ylabel("detector AUROC")
        self.ax_.set_title(f"detector trained in {self.target}'s space "
                           "(hatched: native; others mapped)", fontsize="small")
        return self
