"""Reproductions of "Manifold-driven decomposition for adversarial robustness" (Frontiers in
Computer Science, 2024; "A manifold view of adversarial risk", AISTATS 2022).

AE1: Theorem 1 on a linear classifier over a flat manifold, against the closed forms of every
indicator (and the Definition 4 radius: A at 2 eps breaks the bound). AE2: Theorem 2's
pessimistic construction, exactly by grid search, and why PGD cannot see it.
"""

import numpy as np
import pytest
import torch

from geolearn.adversarial import make_pessimistic_example, risk_decomposition
from geolearn.manifold import AffineManifold

CASES = {1: ((1.0, 0.5), 0.3), 2: ((0.3, 0.0), 0.954)}
#: closed-form means of a reference sample (its sampling noise: +-0.01)
REFERENCE = {(1, 0.3): dict(adv=0.105, nor=0.027, in2=0.219, nnr=0.032),
             (2, 0.1): dict(adv=0.113, nor=0.106, in2=0.069, nnr=0.065),
             (2, 0.3): dict(adv=0.316, nor=0.298, in2=0.193, nnr=0.199)}


def _closed_forms(m, a, c, eps, a_factor=1.0):
    """Section 2's per-sample indicators of a linear score on the whole affine manifold."""
    out = dict(adv=m < eps * np.hypot(a, c), nor=m <= eps * c, in2=m <= 2 * eps * a,
               A=m > a_factor * eps * c, C=m > 2 * eps * a)
    out["nnr"] = out["A"] & out["C"] & (m <= 2 * eps * a + eps * c)
    return out


def _thresholds(a, c, eps):
    return [eps * np.hypot(a, c), eps * c, 2 * eps * a, 2 * eps * a + eps * c, 2 * eps * c]


@pytest.fixture(scope="module")
def flat():
    """D = 5, d = 2: 4,000 points x = T u, u uniform on [-pi, pi]^2, a random orthonormal T."""
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    U = rng.uniform(-np.pi, np.pi, (4000, 2))
    return Q, (U @ Q[:, :2].T).astype(np.float32)


def _case(flat, case):
    Q, X = flat
    w_T, c = CASES[case]
    w = Q[:, :2] @ np.asarray(w_T) + c * Q[:, 2]
    lin = torch.nn.Linear(5, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(w[None], dtype=torch.float32))
        lin.bias.fill_(0.2)
    s = X.astype(np.float64) @ w + 0.2
    return lin, AffineManifold(Q[:, :2]), X, (s > 0).astype(int), np.abs(s), np.hypot(*w_T), c


@pytest.mark.slow
@pytest.mark.parametrize("case, eps", [(1, 0.1), (1, 0.3), (2, 0.1), (2, 0.3)])
def test_ae1_theorem1_linear_flat_manifold_matches_closed_forms(flat, case, eps):
    """Theorem 1 (pointwise) and Section 2's closed forms: every indicator, every sample."""
    model, manifold, X, y, m, a, c = _case(flat, case)
    r = risk_decomposition(model, X, y, manifold=manifold, epsilon=eps, attack="pgd",
                           nnr="probe", random_state=0)
    closed = _closed_forms(m, a, c, eps)
    near = np.any([np.abs(m - t) <= 1e-4 * t for t in _thresholds(a, c, eps)], axis=0)
    for name, expected in closed.items():
        agree = r.indicators[name] == expected
        assert agree.mean() >= 0.995, name
        assert near[~agree].all(), f"{name}: disagreements away from every threshold"
        assert abs(r.indicators[name].mean() - expected.mean()) <= 0.005, name
    assert r.pointwise_violations == 0 and r.bound_holds and r.std_risk == 0
    # the population means of these closed forms (2e6 draws) are the paper-spec references
    u = np.random.default_rng(1).uniform(-np.pi, np.pi, (2_000_000, 2))
    population = _closed_forms(np.abs(u @ np.asarray(CASES[case][0]) + 0.2), a, c, eps)
    for name, ref in REFERENCE.get((case, eps), {}).items():
        assert abs(population[name].mean() - ref) <= 0.01, name


@pytest.mark.slow
@pytest.mark.parametrize("case, eps", [(1, 0.3), (2, 0.1), (2, 0.3)])
def test_ae1_definition4_radius_2eps_breaks_the_bound(flat, case, eps):
    """With A at radius 2 eps (the printed Definition 4) the pointwise bound fails in case 2.

    Violations are exactly the samples with max(eps c, 2 eps a) < m < min(2 eps c, eps ||w||):
    about 0.3% (eps 0.1) and 1.4% (eps 0.3) in case 2, none in case 1.
    """
    model, manifold, X, y, m, a, c = _case(flat, case)
    r = risk_decomposition(model, X, y, manifold=manifold, epsilon=eps, attack="pgd",
                           nnr="probe", nnr_a_radius_factor=2.0, random_state=0)
    lo, hi = max(eps * c, 2 * eps * a), min(2 * eps * c, eps * np.hypot(a, c))
    band = (m > lo) & (m < hi)
    covered = r.indicators["std"] | r.indicators["nor"] | r.indicators["in2"] | r.indicators[
        "nnr"]
    violating = r.indicators["adv"] & ~covered
    assert r.pointwise_violations == violating.sum()
    if case == 1:
        assert r.pointwise_violations == 0 and not band.any()
    else:
        assert r.pointwise_violations > 0
        assert abs(violating.mean() - band.mean()) <= 0.002
        assert (violating == band).mean() >= 0.998


@pytest.fixture(scope="module")
def pessimistic():
    return make_pessimistic_example(n=10, epsilon=0.2)


@pytest.mark.slow
def test_ae2_theorem2_pessimistic_example_by_grid(pessimistic):
    """Theorem 2: R_std = R_in(2 eps) = 0, R_nor = 1/n, yet R_adv = 1; the NNR closes the gap."""
    model, manifold, X, y, exact = pessimistic
    r = risk_decomposition(model, X, y, manifold=manifold, epsilon=0.2, attack="grid",
                           grid_step=0.0025)
    assert r.std_risk == exact["std"] == 0 and r.in_manifold_risk == exact["in_2eps"] == 0
    assert abs(r.normal_risk - exact["normal"]) <= 0.003
    assert r.adv_risk >= 0.995 and r.nnr >= 0.895 and r.rhs >= 0.995
    assert r.rhs_without_nnr < 0.11  # the bound without NNR fails by 0.9
    assert r.pointwise_violations == 0


@pytest.mark.slow
def test_ae2_pgd_misses_what_the_grid_finds(pessimistic):
    """The score is flat in x on the A intervals: PGD's adv estimate stays far below the grid's."""
    model, manifold, X, y, _ = pessimistic
    pgd = risk_decomposition(model, X, y, manifold=manifold, epsilon=0.2, attack="pgd",
                             nnr="sample", random_state=0)
    assert pgd.adv_risk <= 0.2  # about the normal risk at most, far below the grid's 1.0
