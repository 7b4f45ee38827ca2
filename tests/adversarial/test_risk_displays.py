"""RiskCurveDisplay and AdversarialExamplesDisplay: what is drawn is what was computed."""

import matplotlib
import numpy as np
import pytest
import torch
from sklearn.utils import Bunch

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from geolearn.adversarial import risk_curve
from geolearn.manifold import SphereManifold
from geolearn.plotting import AdversarialExamplesDisplay, RiskCurveDisplay


def _result(eps, std, adv, nor, in2, nnr, estimated=True):
    """A hand-made decomposition result."""
    nnr = nnr if estimated else 0.0
    rhs_without = std + nor + in2
    return Bunch(
        epsilon=eps, norm="l2", std_risk=std, adv_risk=adv, normal_risk=nor,
        normal_only_risk=nor, in_manifold_risk=in2, in_manifold_risk_eps=in2 / 2, nnr=nnr,
        rhs=rhs_without + nnr, rhs_without_nnr=rhs_without, rhs_pointwise=rhs_without,
        bound_holds=adv <= rhs_without + nnr, pointwise_violations=0,
        flags=[] if estimated else ["nnr not estimated"])


class _Halfplane(torch.nn.Module):
    """Logits (0, x1): the Bayes classifier of the single-boundary circle (y = 1[x1 > 0])."""

    def forward(self, x):
        return torch.stack([torch.zeros_like(x[:, 0]), x[:, 0]], dim=1)


@pytest.fixture
def circle():
    theta = np.linspace(0, 2 * np.pi, 200, endpoint=False) + 0.01
    X = np.c_[np.cos(theta), np.sin(theta)].astype(np.float32)
    return X, (X[:, 0] > 0).astype(int)


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
    with pytest.raises(ValueError, match="at least one risk_decomposition result"):
        RiskCurveDisplay.from_results([])
    plt.close("all")


def test_risk_curve_from_estimator_draws_risk_curve(circle):
    X, y = circle
    eps = [0.2, 0.1]
    disp = RiskCurveDisplay.from_estimator(_Halfplane(), X, y, manifold=SphereManifold(),
                                           epsilons=eps, nnr="sample", random_state=0)
    ref = risk_curve(_Halfplane(), X, y, manifold=SphereManifold(), epsilons=eps, nnr="sample",
                     random_state=0)
    for key in ("adv_risk", "in_manifold_risk", "normal_risk", "nnr", "rhs"):
        np.testing.assert_allclose(disp.lines_[key].get_ydata(),
                                   [getattr(r, key) for r in ref[::-1]])
    # the Bayes classifier: R_adv = (2/pi) arcsin eps up to the sample's resolution
    np.testing.assert_allclose(disp.lines_["adv_risk"].get_ydata(),
                               2 / np.pi * np.arcsin([0.1, 0.2]), atol=0.01)
    plt.close(disp.figure_)


def test_examples_display_draws_arrows_of_the_successful_rows():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    normal = (X * 1.2, np.array([True, False, True]))
    in_eps = (X, np.zeros(3, bool))
    curve = np.c_[np.cos(np.linspace(0, 6.3, 50)), np.sin(np.linspace(0, 6.3, 50))]
    disp = AdversarialExamplesDisplay(X, [1, 0, 0], {"normal": normal, "in_eps": in_eps},
                                      curve=curve).plot()
    q = disp.quivers_["normal"]
    np.testing.assert_allclose(q.X, [1.0, -1.0])
    np.testing.assert_allclose(np.c_[q.U, q.V], [[0.2, 0.0], [-0.2, 0.0]])
    assert "in_eps" not in disp.quivers_ and disp.regions_ is None
    np.testing.assert_allclose(disp.curve_.get_xydata(), curve)
    np.testing.assert_allclose(disp.scatter_.get_offsets(), X)
    assert [t.get_text() for t in disp.ax_.get_legend().get_texts()] == ["manifold",
                                                                         "normal (2)"]
    plt.close(disp.figure_)
    with pytest.raises(ValueError, match=r"shape \(n_samples, 2\)"):
        AdversarialExamplesDisplay(np.zeros((3, 3)), [0, 1, 0], {}).plot()


def test_examples_display_from_estimator_on_the_circle(circle):
    X, y = circle
    disp = AdversarialExamplesDisplay.from_estimator(
        _Halfplane(), X, y, manifold=SphereManifold(), epsilon=0.2, kinds=("normal", "in_eps",
                                                                          "in2"),
        nnr="sample", random_state=0)
    res = disp.result_
    # radial moves keep the sign of x1: the Bayes classifier has no normal adversarial point
    assert res.normal_risk == 0.0 and "normal" not in disp.quivers_
    for kind, rho in (("in_eps", 0.2), ("in2", 0.4)):
        q = disp.quivers_[kind]
        start, end = np.c_[q.X, q.Y], np.c_[q.X + q.U, q.Y + q.V]
        moved = res.indicators[kind] & ~res.indicators["std"]
        np.testing.assert_allclose(start, X[moved], atol=1e-6)
        # each arrow stays on the circle, within its budget, and crosses the boundary x1 = 0
        np.testing.assert_allclose(np.linalg.norm(end, axis=1), 1.0, atol=1e-5)
        assert np.all(np.linalg.norm(end - start, axis=1) <= rho * (1 + 1e-5))
        assert np.all(np.sign(end[:, 0]) != np.sign(start[:, 0]))
        # the moved points are those within chord rho of the boundary: |x1| <= rho
        # sqrt(1 - rho^2 / 4) (up to the grid's resolution near the threshold)
        c = rho * np.sqrt(1 - rho**2 / 4)
        clear = np.abs(np.abs(X[:, 0]) - c) > 0.02
        np.testing.assert_array_equal(moved[clear], (np.abs(X[:, 0]) <= c)[clear])
    xx, _, labels = disp.regions
    np.testing.assert_array_equal(labels, (xx > 0).astype(int))
    np.testing.assert_allclose(np.linalg.norm(disp.curve_.get_xydata(), axis=1), 1.0)
    plt.close(disp.figure_)


def test_examples_display_thins_arrows_and_checks_kinds(circle):
    X, y = circle
    res = _result(0.2, 0.0, 0.1, 0.0, 0.2, 0.0)
    moved = np.zeros(len(X), bool)
    moved[:50] = True
    res.indicators = {"std": np.zeros(len(X), bool), "nor": moved, "in_eps": moved}
    res.examples = {"normal": X * 1.1, "in_eps": X}
    disp = AdversarialExamplesDisplay.from_results(res, X, y, max_arrows=5)
    np.testing.assert_allclose(disp.quivers_["normal"].X, X[[0, 12, 24, 37, 49], 0])
    plt.close(disp.figure_)
    with pytest.raises(ValueError, match="kinds must be among"):
        AdversarialExamplesDisplay.from_results(res, X, y, kinds=("tangent",))
    res.examples = None
    with pytest.raises(ValueError, match="return_examples=True"):
        AdversarialExamplesDisplay.from_results(res, X, y)
