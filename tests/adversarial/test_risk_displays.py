"""RiskCurveDisplay and AdversarialExamplesDisplay: what is drawn is what was computed."""

import types

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from geolearn.plotting import RiskCurveDisplay


def _result(eps, std, adv, nor, in2, nnr, estimated=True):
    """A hand-made decomposition result (the fields the display reads)."""
    rhs_without = std + nor + in2
    return types.SimpleNamespace(
        epsilon=eps, norm="l2", std_risk=std, adv_risk=adv, normal_risk=nor,
        in_manifold_risk=in2, nnr=nnr if estimated else 0.0,
        rhs=rhs_without + (nnr if estimated else 0.0), rhs_without_nnr=rhs_without,
        flags=[] if estimated else ["nnr not estimated"])


@pytest.fixture
def results():
    # given out of order; the last budget breaks the bound (adv 0.5 > rhs 0.41)
    return [_result(0.2, 0.01, 0.13, 0.0, 0.25, 0.02), _result(0.1, 0.01, 0.07, 0.0, 0.13, 0.01),
            _result(0.3, 0.01, 0.5, 0.1, 0.3, 0.0)]


def test_risk_curve_from_results_draws_every_term_in_budget_order(results):
    fig, ax = plt.subplots()
    disp = RiskCurveDisplay.from_results(results, ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    assert list(disp.lines_) == ["std_risk", "adv_risk", "normal_risk", "in_manifold_risk",
                                 "nnr", "rhs"]
    ordered = sorted(results, key=lambda r: r.epsilon)
    for key, line in disp.lines_.items():
        np.testing.assert_allclose(line.get_xdata(), [0.1, 0.2, 0.3])
        np.testing.assert_allclose(line.get_ydata(), [getattr(r, key) for r in ordered])
    assert disp.results_ == ordered
    # the one budget where the estimated LHS exceeds the RHS is crossed out
    np.testing.assert_allclose(disp.violations_.get_offsets(), [[0.3, 0.5]])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "in-manifold $R_{in}(2\\epsilon)$" in labels and "bound RHS" in labels
    assert "LHS > RHS" in labels and ax.get_xlabel() == "budget $\\epsilon$ (L2)"
    plt.close(fig)


def test_risk_curve_without_nnr_draws_the_lower_rhs(results):
    results = [_result(r.epsilon, r.std_risk, r.adv_risk, r.normal_risk, r.in_manifold_risk,
                       r.nnr, estimated=False) for r in results[:2]]
    disp = RiskCurveDisplay.from_results(results, in_manifold_factor=1.0)
    assert "nnr" not in disp.lines_ and disp.violations_ is None
    np.testing.assert_allclose(disp.lines_["rhs"].get_ydata(), [0.14, 0.26])
    assert disp.lines_["rhs"].get_label() == "bound RHS without NNR"
    assert disp.lines_["in_manifold_risk"].get_label() == "in-manifold $R_{in}(1\\epsilon)$"
    plt.close(disp.figure_)


def test_risk_curve_sums_the_terms_without_the_lhs():
    disp = RiskCurveDisplay([0.1, 0.2], std_risk=[0.01, 0.01], adv_risk=[0.3, 0.05],
                            normal_risk=[0.1, 0.0], in_manifold_risk=[0.1, 0.02],
                            nnr=[0.05, 0.0], norm="linf").plot()
    np.testing.assert_allclose(disp.lines_["rhs"].get_ydata(), [0.26, 0.03])
    np.testing.assert_allclose(disp.violations_.get_offsets(), [[0.1, 0.3], [0.2, 0.05]])
    assert disp.ax_.get_xlabel() == "budget $\\epsilon$ (L-infinity)"
    plt.close(disp.figure_)


def test_risk_curve_bad_inputs():
    with pytest.raises(ValueError, match="one risk per epsilon"):
        RiskCurveDisplay([0.1, 0.2], [0.0], [0.1, 0.2], [0.0, 0.0], [0.1, 0.2]).plot()
    with pytest.raises(ValueError, match="epsilons must be a non-empty"):
        RiskCurveDisplay([], [], [], [], []).plot()
    with pytest.raises(ValueError, match="at least one RiskDecompositionResult"):
        RiskCurveDisplay.from_results([])
    plt.close("all")
