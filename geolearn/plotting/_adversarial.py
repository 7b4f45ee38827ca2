"""Displays of the manifold decomposition of adversarial risk: risk curves and 2-D examples.

From "Manifold-driven decomposition for adversarial robustness": the risks of
:func:`geolearn.adversarial.risk_decomposition` against the budget (the paper's Tables 1-3
as curves), and normal versus in-manifold adversarial examples on a curve in the plane
(its Fig. 3 data).
"""

import numpy as np

from ._base import axes_or_new

# key -> (legend label, style); "{f}" is the in-manifold budget factor
_CURVES = {
    "std_risk": ("standard $R_{std}$", {"color": "0.4", "marker": "s"}),
    "adv_risk": ("adversarial $R_{adv}(\\epsilon)$ (LHS)", {"color": "C3", "marker": "o",
                                                          "linewidth": 2.5}),
    "normal_risk": ("normal $R_{nor}(\\epsilon)$", {"color": "C0", "marker": "v"}),
    "in_manifold_risk": ("in-manifold $R_{in}({f}\\epsilon)$", {"color": "C2", "marker": "^"}),
    "nnr": ("nearby-normal NNR$(\\epsilon)$", {"color": "C4", "marker": "d"}),
    "rhs": ("bound RHS", {"color": "black", "linestyle": "--", "linewidth": 2.0}),
}


def _column(values, name, n):
    v = np.asarray(values, dtype=float)
    if v.shape != (n,):
        raise ValueError(f"{name} must hold one risk per epsilon, shape ({n},); got shape "
                         f"{v.shape}.")
    return v


class RiskCurveDisplay:
    """Risks against the budget ``epsilon``: the paper's decomposition as curves.

    One curve per term of the bound of "Manifold-driven decomposition for adversarial
    robustness" (Theorem 1),
    ``R_adv(eps) <= R_std + R_nor(eps) + R_in(2 eps) + NNR(eps)``: the adversarial risk
    (left-hand side), the standard, normal, in-manifold and nearby-normal risks, and their
    sum (right-hand side, dashed). Budgets where the estimated left-hand side exceeds the
    estimated right-hand side are marked with a red cross. Without an NNR estimate the
    NNR curve is left out and the dashed curve is labelled "RHS without NNR" (the paper's
    Table 3, a lower estimate of the bound).

    Parameters
    ----------
    epsilons : array-like of shape (n_eps,)
    std_risk, adv_risk, normal_risk, in_manifold_risk : array-like of shape (n_eps,)
        ``in_manifold_risk`` at budget ``in_manifold_factor * eps``.
    nnr : array-like of shape (n_eps,) or None, default=None
        None: not estimated.
    rhs : array-like of shape (n_eps,) or None, default=None
        The bound's right-hand side; None: the sum of the terms given.
    in_manifold_factor : float, default=2.0
        The budget factor of ``in_manifold_risk`` (the legend says ``R_in(2 eps)``).
    norm : {"l2", "linf"}, default="l2"
        The ambient attack's norm (axis label).

    Attributes
    ----------
    lines_ : dict of str to Line2D
        Keys among ``"std_risk"``, ``"adv_risk"``, ``"normal_risk"``,
        ``"in_manifold_risk"``, ``"nnr"``, ``"rhs"``.
    violations_ : PathCollection or None
        The budgets where ``adv_risk > rhs``; None where the bound holds everywhere.
    results_ : list of Bunch or None
        Set by :meth:`from_results` and :meth:`from_estimator`.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from geolearn.plotting import RiskCurveDisplay
    >>> disp = RiskCurveDisplay([0.1, 0.2], std_risk=[0.0, 0.0], adv_risk=[0.07, 0.13],
    ...                         normal_risk=[0.0, 0.0], in_manifold_risk=[0.13, 0.26],
    ...                         nnr=[0.0, 0.01]).plot()
    >>> disp.lines_["rhs"].get_ydata().tolist(), disp.violations_ is None
    ([0.13, 0.27], True)
    """

    def __init__(self, epsilons, std_risk, adv_risk, normal_risk, in_manifold_risk, nnr=None,
                 rhs=None, *, in_manifold_factor=2.0, norm="l2"):
        self.epsilons = epsilons
        self.std_risk = std_risk
        self.adv_risk = adv_risk
        self.normal_risk = normal_risk
        self.in_manifold_risk = in_manifold_risk
        self.nnr = nnr
        self.rhs = rhs
        self.in_manifold_factor = in_manifold_factor
        self.norm = norm
        self.results_ = None

    @classmethod
    def from_results(cls, results, *, ax=None, in_manifold_factor=2.0):
        """Draw the curves of :func:`~geolearn.adversarial.risk_decomposition` results.

        Parameters
        ----------
        results : sequence of Bunch
            :func:`~geolearn.adversarial.risk_decomposition` results.
            One per budget (e.g. from :func:`~geolearn.adversarial.risk_curve`), drawn in
            increasing ``epsilon``. NNR is drawn only if every result estimated it.
        ax : matplotlib Axes, optional
        in_manifold_factor : float, default=2.0
            The ``in_manifold_factor`` the results were computed with (legend only).

        Returns
        -------
        display : RiskCurveDisplay
        """
        results = sorted(results, key=lambda r: r.epsilon)
        if not results:
            raise ValueError("results must hold at least one risk_decomposition result.")
        estimated = not any("nnr not estimated" in r.flags for r in results)

        def col(name):
            return [getattr(r, name) for r in results]

        disp = cls(col("epsilon"), col("std_risk"), col("adv_risk"), col("normal_risk"),
                   col("in_manifold_risk"), col("nnr") if estimated else None,
                   col("rhs") if estimated else col("rhs_without_nnr"),
                   in_manifold_factor=in_manifold_factor, norm=results[0].norm)
        disp.results_ = results
        return disp.plot(ax=ax)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, manifold, epsilons, ax=None, **kwargs):
        """Decompose the risk of a classifier at every budget, then draw the curves.

        Parameters
        ----------
        estimator : differentiable classifier
            Anything :func:`~geolearn.adversarial.risk_decomposition` accepts.
        X : array-like of shape (n_samples, n_features) or (n, C, H, W)
        y : array-like of shape (n_samples,)
        manifold : manifold object
            E.g. :class:`~geolearn.manifold.SphereManifold`.
        epsilons : array-like of float
        ax : matplotlib Axes, optional
        **kwargs
            Passed to :func:`~geolearn.adversarial.risk_curve` (``attack``, ``nnr``,
            ``n_steps``, ``in_manifold_factor``, ``random_state``, ...).

        Returns
        -------
        display : RiskCurveDisplay
        """
        from ..adversarial import risk_curve

        results = risk_curve(estimator, X, y, manifold=manifold, epsilons=epsilons, **kwargs)
        return cls.from_results(results, ax=ax,
                                in_manifold_factor=kwargs.get("in_manifold_factor", 2.0))

    def plot(self, ax=None):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self : RiskCurveDisplay
        """
        eps = np.asarray(self.epsilons, dtype=float)
        if eps.ndim != 1 or len(eps) == 0:
            raise ValueError(f"epsilons must be a non-empty 1-D sequence; got shape {eps.shape}.")
        n = len(eps)
        values = {k: _column(getattr(self, k), k, n)
                  for k in ("std_risk", "adv_risk", "normal_risk", "in_manifold_risk")}
        if self.nnr is not None:
            values["nnr"] = _column(self.nnr, "nnr", n)
        terms = [v for k, v in values.items() if k != "adv_risk"]
        values["rhs"] = sum(terms) if self.rhs is None else _column(self.rhs, "rhs", n)
        self.figure_, self.ax_ = axes_or_new(ax)
        f = f"{self.in_manifold_factor:g}"
        self.lines_ = {}
        for key, v in values.items():
            label, style = _CURVES[key]
            if key == "rhs" and self.nnr is None:
                label = "bound RHS without NNR"
            self.lines_[key] = self.ax_.plot(eps, v, label=label.replace("{f}", f), **style)[0]
        bad = values["adv_risk"] > values["rhs"]
        self.violations_ = (self.ax_.scatter(eps[bad], values["adv_risk"][bad], marker="x", s=80,
                                             color="red", zorder=5, label="LHS > RHS")
                            if bad.any() else None)
        norm = {"l2": "L2", "linf": "L-infinity"}.get(self.norm, str(self.norm))
        self.ax_.set_xlabel(f"budget $\\epsilon$ ({norm})")
        self.ax_.set_ylabel("risk")
        self.ax_.set_ylim(bottom=0.0)
        self.ax_.legend(fontsize="small")
        return self


# example kind -> (its indicator in the result, legend label, arrow colour)
_KINDS = {"ambient": ("ambient", "ambient", "C3"), "normal": ("nor", "normal", "C0"),
          "in_eps": ("in_eps", "in-manifold", "C2"),
          "in2": ("in2", "in-manifold (2 eps)", "C1")}


def _predictions(estimator, X):
    """Predicted classes of the rows of ``X`` (``predict``, or the argmax of the logits)."""
    X = X.astype(np.float32)  # what torch-backed estimators take
    if hasattr(estimator, "predict"):
        return np.asarray(estimator.predict(X))
    from ..models import as_model

    out = np.asarray(as_model(estimator).forward(X))
    out = out.reshape(len(X), -1)
    # binary scores (N,) or (N, 1) are the logits (0, z), as in the decomposition
    return (out[:, 0] > 0).astype(int) if out.shape[1] == 1 else out.argmax(axis=1)


class AdversarialExamplesDisplay:
    """Points of a 2-D data set and arrows to their normal and in-manifold adversarial examples.

    The picture behind "Manifold-driven decomposition for adversarial robustness" (its
    Fig. 3 data, a circle in the plane): for each point the decomposition found adversarial
    in a direction, an arrow from the point to its adversarial example. Normal examples
    leave the manifold (radially on a circle); in-manifold ones move along it. With an
    estimator, its decision regions are shaded and the manifold drawn from its chart.

    Parameters
    ----------
    X : array-like of shape (n_samples, 2)
    y : array-like of shape (n_samples,)
    examples : dict of str to (ndarray of shape (n_samples, 2), ndarray of bool)
        Kind (``"normal"``, ``"in_eps"``, ``"in2"``, ``"ambient"``: the keys of the
        decomposition's ``examples``) to the adversarial examples and the rows where the
        attack moved a correctly classified point to a misclassified one (only those get
        an arrow).
    curve : ndarray of shape (m, 2) or None, default=None
        Points along the manifold, drawn as a line.
    regions : tuple (xx, yy, labels) of ndarrays of shape (g, g) or None, default=None
        A grid and the classifier's predicted class at each node.

    Attributes
    ----------
    scatter_ : PathCollection
        The data points, coloured by ``y``.
    quivers_ : dict of str to Quiver
        One per kind with at least one arrow.
    curve_ : Line2D or None
    regions_ : QuadContourSet or None
    result_ : Bunch or None
        Set by :meth:`from_results` and :meth:`from_estimator`.
    ax_, figure_ : matplotlib Axes and Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from geolearn.plotting import AdversarialExamplesDisplay
    >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, 0])
    >>> normal = (np.array([[1.5, 0.0], [0.0, 1.0]]), np.array([True, False]))
    >>> disp = AdversarialExamplesDisplay(X, y, {"normal": normal}).plot()
    >>> disp.quivers_["normal"].U.tolist(), disp.quivers_["normal"].V.tolist()
    ([0.5], [0.0])
    """

    def __init__(self, X, y, examples, curve=None, regions=None):
        self.X = X
        self.y = y
        self.examples = examples
        self.curve = curve
        self.regions = regions
        self.result_ = None

    @classmethod
    def from_results(cls, result, X, y, *, estimator=None, manifold=None,
                     kinds=("normal", "in_eps"), max_arrows=None, ax=None):
        """Draw the examples of a decomposition computed with ``return_examples=True``.

        Parameters
        ----------
        result : Bunch
            A :func:`~geolearn.adversarial.risk_decomposition` result.
            From :func:`~geolearn.adversarial.risk_decomposition` on ``X, y``.
        X : array-like of shape (n_samples, 2)
        y : array-like of shape (n_samples,)
        estimator : classifier, optional
            Shades its decision regions.
        manifold : manifold object with ``from_chart`` and ``chart_bounds``, optional
            Drawn as a line.
        kinds : sequence of {"normal", "in_eps", "in2", "ambient"}, \
default=("normal", "in_eps")
            Normal, in-manifold at ``eps`` and at ``in_manifold_factor * eps``, ambient.
        max_arrows : int or None, default=None
            At most this many arrows per kind (evenly spaced over the successful rows).
        ax : matplotlib Axes, optional

        Returns
        -------
        display : AdversarialExamplesDisplay
        """
        X = _check_plane(X)
        if result.examples is None:
            raise ValueError("result holds no examples: compute it with "
                             "risk_decomposition(..., return_examples=True).")
        examples = {}
        for kind in kinds:
            if kind not in _KINDS:
                raise ValueError(f"kinds must be among {sorted(_KINDS)}; got {kind!r}.")
            moved = result.indicators[_KINDS[kind][0]] & ~result.indicators["std"]
            examples[kind] = (np.asarray(result.examples[kind]), _thin(moved, max_arrows))
        disp = cls(X, np.asarray(y), examples, _curve(manifold),
                   _regions(estimator, X) if estimator is not None else None)
        disp.result_ = result
        return disp.plot(ax=ax)

    @classmethod
    def from_estimator(cls, estimator, X, y, *, manifold, epsilon, kinds=("normal", "in_eps"),
                       max_arrows=None, ax=None, **kwargs):
        """Decompose the risk of a classifier on 2-D data and draw its adversarial examples.

        Parameters
        ----------
        estimator : differentiable classifier
        X : array-like of shape (n_samples, 2)
        y : array-like of shape (n_samples,)
        manifold : manifold object
            E.g. :class:`~geolearn.manifold.SphereManifold` for the circle.
        epsilon : float
        kinds, max_arrows, ax
            As in :meth:`from_results`.
        **kwargs
            Passed to :func:`~geolearn.adversarial.risk_decomposition`.

        Returns
        -------
        display : AdversarialExamplesDisplay
        """
        from ..adversarial import risk_decomposition

        X = _check_plane(X)
        result = risk_decomposition(estimator, X, y, manifold=manifold, epsilon=epsilon,
                                    return_examples=True, **kwargs)
        return cls.from_results(result, X, y, estimator=estimator, manifold=manifold, kinds=kinds,
                                max_arrows=max_arrows, ax=ax)

    def plot(self, ax=None):
        """Draw the regions, the manifold, the points and the arrows.

        Parameters
        ----------
        ax : matplotlib Axes, optional

        Returns
        -------
        self : AdversarialExamplesDisplay
        """
        X, y = _check_plane(self.X), np.asarray(self.y)
        self.figure_, self.ax_ = axes_or_new(ax)
        self.regions_ = None
        if self.regions is not None:
            xx, yy, labels = self.regions
            classes = np.unique(labels)
            self.regions_ = self.ax_.contourf(xx, yy, np.searchsorted(classes, labels),
                                              levels=np.arange(len(classes) + 1) - 0.5,
                                              cmap="coolwarm", alpha=0.15)
        self.curve_ = (None if self.curve is None else
                       self.ax_.plot(*np.asarray(self.curve).T, color="0.5", linewidth=1,
                                     label="manifold")[0])
        self.scatter_ = self.ax_.scatter(X[:, 0], X[:, 1], c=y, cmap="coolwarm", s=8,
                                         edgecolors="none", zorder=2)
        self.quivers_ = {}
        for kind, (X_adv, success) in self.examples.items():
            success = np.asarray(success, dtype=bool)
            if not success.any():
                continue
            start, move = X[success], np.asarray(X_adv, dtype=float)[success] - X[success]
            _, label, color = _KINDS.get(kind, (None, kind, "k"))
            self.quivers_[kind] = self.ax_.quiver(
                start[:, 0], start[:, 1], move[:, 0], move[:, 1], angles="xy",
                scale_units="xy", scale=1, color=color, width=0.005, zorder=3,
                label=f"{label} ({success.sum()})")
        self.ax_.set_aspect("equal")
        self.ax_.legend(fontsize="small", loc="upper right")
        return self


def _check_plane(X):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X must be 2-D data of shape (n_samples, 2) to be drawn in the plane; "
                         f"got shape {X.shape}.")
    return X


def _thin(success, max_arrows):
    """``success`` with at most ``max_arrows`` True entries, evenly spaced among them."""
    success = np.asarray(success, dtype=bool)
    rows = np.flatnonzero(success)
    if max_arrows is None or len(rows) <= max_arrows:
        return success
    keep = np.zeros_like(success)
    keep[rows[np.linspace(0, len(rows) - 1, max_arrows).round().astype(int)]] = True
    return keep


def _curve(manifold, n=400):
    """Points along a 1-D manifold with a chart (a curve in the plane), else None."""
    if manifold is None or not getattr(manifold, "has_chart", False) \
            or manifold.intrinsic_dim != 1:
        return None
    (lo, hi), = manifold.chart_bounds
    return np.asarray(manifold.from_chart(np.linspace(lo, hi, n)[:, None]))


def _regions(estimator, X, n=200):
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.15 * (hi - lo).max()
    xx, yy = np.meshgrid(np.linspace(lo[0] - pad, hi[0] + pad, n),
                         np.linspace(lo[1] - pad, hi[1] + pad, n))
    labels = _predictions(estimator, np.c_[xx.ravel(), yy.ravel()]).reshape(xx.shape)
    return xx, yy, labels
