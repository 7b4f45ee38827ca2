"""Displays of the diffusion-inpainting OOD detector: what it inpaints, and how its scores split."""

import numpy as np

from ._base import axes_or_new, check_matplotlib


def _as_images(X, image_shape):
    """``X`` (flat, (n, H, W) or (n, C, H, W)) as float ``(n, C, H, W)``."""
    X = np.asarray(X, dtype=float)
    return X.reshape(len(X), *image_shape)


def _picture(image, low, high):
    """One ``(C, H, W)`` image as an ``(H, W)`` grey or ``(H, W, 3)`` colour array in [0, 1]."""
    image = np.clip((image - low) / (high - low), 0, 1) if high > low else np.zeros_like(image)
    return image.transpose(1, 2, 0) if len(image) == 3 else image.mean(axis=0)


class InpaintingDisplay:
    """Original, masked and inpainted images side by side, one row per image.

    The triptych of the diffusion-inpainting OOD detector (Liu et al., "Unsupervised
    out-of-distribution detection with diffusion inpainting"): the masked column paints
    the pixels to inpaint in ``mask_color``; an in-distribution image comes back close
    to itself, an out-of-distribution one is pulled toward the training images. All
    tiles share one grey scale (``vmin``, ``vmax``).

    Parameters
    ----------
    originals : ndarray of shape (n_images, C, H, W)
    inpainted : ndarray of shape (n_images, C, H, W)
    mask : ndarray of shape (C, H, W)
        1 where a pixel is kept, 0 where it is inpainted.
    row_labels : sequence of str
        One label per row (e.g. ``"ID 0"``, ``"OOD 1"``).
    distances : ndarray of shape (n_images,), default=None
        Written above each inpainted tile (e.g. the detector's distance for this mask).
    vmin, vmax : float, default=None
        Grey scale; default the range of ``originals`` and ``inpainted``.

    Attributes
    ----------
    axes_ : ndarray of shape (n_images, 3) of matplotlib Axes
    figure_ : matplotlib Figure
    images_ : ndarray of shape (n_images, 3) of AxesImage

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.plotting import InpaintingDisplay
    >>> X = np.random.default_rng(0).random((2, 1, 4, 4))
    >>> mask = np.ones((1, 4, 4)); mask[:, :2] = 0
    >>> disp = InpaintingDisplay(X, X[::-1], mask, ["ID 0", "OOD 0"]).plot()
    >>> disp.axes_.shape
    (2, 3)
    """

    def __init__(self, originals, inpainted, mask, row_labels, distances=None, vmin=None,
                 vmax=None):
        self.originals = originals
        self.inpainted = inpainted
        self.mask = mask
        self.row_labels = row_labels
        self.distances = distances
        self.vmin = vmin
        self.vmax = vmax

    @classmethod
    def from_estimator(cls, detector, X, X_out=None, *, n_images=3, attempt=0, axes=None):
        """Inpaint the first images of ``X`` (and of ``X_out``) with a fitted detector.

        Uses ``detector.masks(attempt)`` and ``detector.reconstruct(images, attempt)``.
        With ``distance='mse'`` each row also shows ``d``, the mean squared change on the
        detector's [0, 1] data scale: the term of this attempt in the median that
        ``ood_score`` takes.

        Parameters
        ----------
        detector : fitted InpaintingOODDetector
        X : array-like of images or flat rows
            In-distribution images (rows labelled "ID").
        X_out : array-like, default=None
            Out-of-distribution images (rows labelled "OOD"), drawn below.
        n_images : int, default=3
            Rows taken from each of ``X`` and ``X_out``.
        attempt : int, default=0
            Index of the mask (the checkerboard alternates with it).
        axes : ndarray of matplotlib Axes of shape (n_rows, 3), default=None

        Returns
        -------
        display : InpaintingDisplay
        """
        shape = detector.image_shape_
        sets = [("ID", X)] + ([] if X_out is None else [("OOD", X_out)])
        originals, inpainted, labels = [], [], []
        for name, data in sets:
            data = np.asarray(data)[:n_images]
            originals.append(_as_images(data, shape))
            inpainted.append(_as_images(detector.reconstruct(data, attempt=attempt), shape))
            labels += [f"{name} {i}" for i in range(len(data))]
        originals, inpainted = np.concatenate(originals), np.concatenate(inpainted)
        # the detector's distance: mean squared error on its [0, 1] data scale
        low, high = detector.data_min_, detector.data_min_ + detector.data_scale_
        distances = None
        if isinstance(detector.distance, str) and detector.distance == "mse":
            scaled = (originals - inpainted) / detector.data_scale_
            distances = (scaled ** 2).reshape(len(scaled), -1).mean(axis=1)
        mask = np.broadcast_to(np.asarray(detector.masks(attempt), dtype=float), shape)
        return cls(originals, inpainted, mask, labels, distances, low, high).plot(axes=axes)

    def plot(self, axes=None, mask_color="tab:red"):
        """Draw the three columns.

        Parameters
        ----------
        axes : ndarray of matplotlib Axes of shape (n_images, 3), default=None
        mask_color : matplotlib colour, default='tab:red'
            Colour of the inpainted pixels in the middle column.

        Returns
        -------
        self : InpaintingDisplay
        """
        from matplotlib.colors import to_rgb

        originals = np.asarray(self.originals, dtype=float)
        inpainted = np.asarray(self.inpainted, dtype=float)
        n = len(originals)
        low = min(originals.min(), inpainted.min()) if self.vmin is None else self.vmin
        high = max(originals.max(), inpainted.max()) if self.vmax is None else self.vmax
        if axes is None:
            plt = check_matplotlib("InpaintingDisplay")
            _, axes = plt.subplots(n, 3, figsize=(4.5, 1.5 * n), squeeze=False)
        axes = np.asarray(axes, dtype=object).reshape(n, 3)
        self.axes_, self.figure_ = axes, axes[0, 0].figure
        hidden = np.asarray(self.mask).min(axis=0) < 0.5  # pixels inpainted in any channel
        self.images_ = np.empty((n, 3), dtype=object)
        for i in range(n):
            orig, rec = _picture(originals[i], low, high), _picture(inpainted[i], low, high)
            masked = np.repeat(orig[..., None], 3, axis=-1) if orig.ndim == 2 else orig.copy()
            masked[hidden] = to_rgb(mask_color)
            for j, tile in enumerate((orig, masked, rec)):
                ax = axes[i, j]
                self.images_[i, j] = ax.imshow(tile, cmap="gray", vmin=0, vmax=1)
                ax.set_xticks([])
                ax.set_yticks([])
            axes[i, 0].set_ylabel(self.row_labels[i], rotation=0, ha="right", va="center")
            if self.distances is not None:
                axes[i, 2].text(1.08, 0.5, f"d = {self.distances[i]:.3g}", va="center",
                                transform=axes[i, 2].transAxes, fontsize="small")
        for j, title in enumerate(("original", "masked", "inpainted")):
            axes[0, j].set_title(title, fontsize="small")
        return self


class OODScoreDisplay:
    """Histograms of OOD scores of in- and out-of-distribution data, AUROC in the legend.

    The AUROC is ``roc_auc_score`` with the out-of-distribution rows as positives and the
    scores as given (higher = more out of distribution, as ``ood_score``).

    Parameters
    ----------
    scores_in, scores_out : ndarray of shape (n_in,), (n_out,)
        Scores of in- and out-of-distribution data.
    threshold : float, default=None
        A score drawn as a vertical line (e.g. the detector's decision threshold).
    labels : (str, str), default=('in-distribution', 'out-of-distribution')

    Attributes
    ----------
    auroc_ : float
    ax_, figure_ : matplotlib Axes and Figure
    bars_in_, bars_out_ : lists of matplotlib patches
    bins_ : ndarray
        The common bin edges.
    threshold_line_ : Line2D or None

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.plotting import OODScoreDisplay
    >>> disp = OODScoreDisplay.from_results([0.1, 0.2, 0.3], [0.25, 0.4, 0.5])
    >>> round(disp.auroc_, 3)
    0.889
    """

    def __init__(self, scores_in, scores_out, threshold=None,
                 labels=("in-distribution", "out-of-distribution")):
        self.scores_in = scores_in
        self.scores_out = scores_out
        self.threshold = threshold
        self.labels = labels

    @classmethod
    def from_estimator(cls, detector, X_in, X_out, *, labels=("in-distribution",
                       "out-of-distribution"), bins=30, log_scale=False, ax=None):
        """Score ``X_in`` and ``X_out`` with ``detector.ood_score`` and draw the histograms.

        The detector's threshold (an image is an outlier when its score exceeds
        ``-offset_``) is drawn as a vertical line.

        Parameters
        ----------
        detector : fitted InpaintingOODDetector, or any estimator with ``ood_score``
        X_in, X_out : array-like
            In- and out-of-distribution data.
        labels : (str, str), default=('in-distribution', 'out-of-distribution')
        bins : int, default=30
        log_scale : bool, default=False
            Logarithmic score axis (scores must be positive).
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : OODScoreDisplay
        """
        offset = getattr(detector, "offset_", None)
        threshold = None if offset is None else -float(offset)
        return cls(detector.ood_score(X_in), detector.ood_score(X_out), threshold,
                   labels).plot(ax=ax, bins=bins, log_scale=log_scale)

    @classmethod
    def from_results(cls, scores_in, scores_out, *, threshold=None,
                     labels=("in-distribution", "out-of-distribution"), bins=30,
                     log_scale=False, ax=None):
        """Draw the histograms of given scores.

        Parameters
        ----------
        scores_in, scores_out : array-like of shape (n_in,), (n_out,)
        threshold : float, default=None
        labels : (str, str), default=('in-distribution', 'out-of-distribution')
        bins : int, default=30
        log_scale : bool, default=False
        ax : matplotlib Axes, default=None

        Returns
        -------
        display : OODScoreDisplay
        """
        return cls(scores_in, scores_out, threshold, labels).plot(ax=ax, bins=bins,
                                                                  log_scale=log_scale)

    def plot(self, ax=None, bins=30, log_scale=False):
        """Draw both histograms on common bins (densities), and the threshold.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        bins : int, default=30
        log_scale : bool, default=False
            Logarithmically spaced bins on a logarithmic axis.

        Returns
        -------
        self : OODScoreDisplay
        """
        from sklearn.metrics import roc_auc_score

        s_in = np.asarray(self.scores_in, dtype=float).ravel()
        s_out = np.asarray(self.scores_out, dtype=float).ravel()
        if not (len(s_in) and len(s_out)) or not np.isfinite(np.r_[s_in, s_out]).all():
            raise ValueError("scores_in and scores_out must be non-empty and finite.")
        both = np.r_[s_in, s_out]
        self.auroc_ = float(roc_auc_score(np.r_[np.zeros(len(s_in)), np.ones(len(s_out))], both))
        if log_scale:
            if both.min() <= 0:
                raise ValueError("log_scale needs positive scores; got a minimum of "
                                 f"{both.min():g}.")
            self.bins_ = np.geomspace(both.min(), both.max(), bins + 1)
        else:
            self.bins_ = np.histogram_bin_edges(both, bins=bins)
        self.figure_, self.ax_ = axes_or_new(ax)
        kw = dict(bins=self.bins_, density=True, alpha=0.5)
        self.bars_in_ = self.ax_.hist(s_in, color="C0", label=f"{self.labels[0]} (n={len(s_in)})",
                                      **kw)[2]
        self.bars_out_ = self.ax_.hist(s_out, color="C3",
                                       label=f"{self.labels[1]} (n={len(s_out)})", **kw)[2]
        self.threshold_line_ = None
        if self.threshold is not None:
            self.threshold_line_ = self.ax_.axvline(self.threshold, color="k", linestyle="--",
                                                    label="threshold")
        if log_scale:
            self.ax_.set_xscale("log")
        self.ax_.set_xlabel("OOD score (higher: more out of distribution)")
        self.ax_.set_ylabel("density")
        self.ax_.legend(title=f"AUROC {self.auroc_:.3f}", fontsize="small")
        return self
