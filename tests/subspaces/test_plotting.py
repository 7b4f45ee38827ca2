"""Displays of the subspaces family draw what the estimator computed."""

import matplotlib
import numpy as np

from geolearn.subspaces import SVBF

from ._data import common_line_sets

matplotlib.use("Agg")


def test_convergence_and_angle_displays():
    import matplotlib.pyplot as plt

    from geolearn.plotting import PrincipalAnglesDisplay, SVBFConvergenceDisplay

    X, _ = common_line_sets(n=10, r=8, l=3)
    svbf = SVBF(2, 2, init="random", n_init=2, random_state=0).fit(X)
    disp = SVBFConvergenceDisplay.from_estimator(svbf)
    np.testing.assert_array_equal(disp.line_.get_ydata(), svbf.objective_curve_)
    assert len(disp.ax_.lines) == 1 + 2  # the curve and one line per restart
    fig, ax = plt.subplots()
    angles = PrincipalAnglesDisplay.from_estimator(svbf, X, labels=np.arange(8) % 2, ax=ax)
    assert angles.ax_ is ax and len(angles.lines_) == 8
    np.testing.assert_allclose(angles.lines_[0].get_ydata(), np.degrees(svbf.angles_[0]),
                               atol=1e-9)
    plt.close("all")
