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
    results_ : list of RiskDecompositionResult or None
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
        results : sequence of RiskDecompositionResult
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
            raise ValueError("results must hold at least one RiskDecompositionResult.")
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
