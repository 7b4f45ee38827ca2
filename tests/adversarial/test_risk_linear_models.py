"""The manifold decomposition of a scikit-learn linear model's adversarial risk, with gradients.

Regression: ``risk_decomposition`` on a ``LogisticRegression`` with ``attack="auto"`` raised
"needs gradients ... black-box estimator", although a linear model's gradient is exact (it is
now converted to torch by ``geolearn.models.as_model``).
"""

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from geolearn.adversarial import risk_decomposition
from geolearn.datasets import make_circle_classification
from geolearn.manifold import SphereManifold


def _arc_minimum(s_of_angle, theta, rho, n_grid=4001):
    """Minimum of a score over the points of the unit circle within chord distance ``rho``."""
    half = 2 * np.arcsin(min(rho / 2, 1.0))
    angles = theta[:, None] + np.linspace(-half, half, n_grid)[None]
    return s_of_angle(angles).min(axis=1)


def test_logistic_regression_risk_decomposition_matches_brute_force():
    """Unit circle, a fitted logistic regression: every indicator from closed forms and a dense
    enumeration of the arcs, on the samples no grid step or attack tolerance can flip."""
    eps = 0.1
    X, y = make_circle_classification(150, random_state=0)
    lr = LogisticRegression().fit(X, y)
    r = risk_decomposition(lr, X, y, manifold=SphereManifold(), epsilon=eps, attack="auto",
                           random_state=0)

    w, b = lr.coef_[0].astype(np.float64), float(lr.intercept_[0])
    x = X.astype(np.float64)
    sign = 2 * y - 1
    s = sign * (x @ w + b)                                   # > 0: correct
    theta = np.arctan2(x[:, 1], x[:, 0])
    on_arc = (lambda a: sign[:, None] * (np.cos(a) * w[0] + np.sin(a) * w[1] + b))
    radial = np.abs(x @ w) / np.linalg.norm(x, axis=1)      # |w . n|, n the unit normal
    margins = {
        "std": s,
        "ambient": s - eps * np.linalg.norm(w),              # the eps-ball reaches the line
        "nor": s - eps * radial,                             # the normal segment does
        "in_eps": _arc_minimum(on_arc, theta, eps),
        "in2": _arc_minimum(on_arc, theta, 2 * eps),
    }
    expected = {name: m <= 0 for name, m in margins.items()}
    expected["nor"] |= expected["std"]
    expected["adv"] = expected["std"] | expected["ambient"] | expected["nor"] | expected["in_eps"]

    # the chart grid steps by eps / 20: a score within two steps of 0 may go either way
    decisive = np.all([np.abs(m) > 2 * eps / 20 * np.linalg.norm(w) for m in margins.values()],
                      axis=0)
    assert decisive.mean() >= 0.8 and expected["in2"][decisive].any() \
        and not expected["in2"][decisive].all()
    for name, want in expected.items():
        np.testing.assert_array_equal(r.indicators[name][decisive], want[decisive], err_msg=name)
    assert r.bound_holds and r.pointwise_violations == 0


def test_logistic_regression_is_seen_as_its_torch_equivalent():
    """The converted model gives what the same affine map as a torch module gives."""
    X, y = make_circle_classification(30, random_state=1)
    lr = LogisticRegression().fit(X, y)
    net = torch.nn.Linear(2, 1, dtype=torch.float64)
    with torch.no_grad():
        net.weight.copy_(torch.as_tensor(lr.coef_))
        net.bias.copy_(torch.as_tensor(lr.intercept_))
    kw = dict(manifold=SphereManifold(), epsilon=0.15, random_state=0)
    got, want = risk_decomposition(lr, X, y, **kw), risk_decomposition(net, X, y, **kw)
    for name in want.indicators:
        np.testing.assert_array_equal(got.indicators[name], want.indicators[name], err_msg=name)
    assert got.rhs == want.rhs and got.adv_risk == want.adv_risk
