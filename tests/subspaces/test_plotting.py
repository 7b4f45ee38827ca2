"""Displays of the subspaces family draw what the estimator computed."""

import matplotlib
import numpy as np

from geolearn.subspaces import SVBF, principal_angles

from ._data import common_line_sets

matplotlib.use("Agg")


def test_convergence_and_angle_displays():
    import matplotlib.pyplot as plt

    from geolearn.plotting import PrincipalAnglesDisplay, SVBFConvergenceDisplay

    X, _ = common_line_sets(n=10, r=8, l=3)
    svbf = SVBF(2, 2, init="random", n_init=2, random_state=0).fit(X)
    disp = SVBFConvergenceDisplay.from_estimator(svbf)
    np.testing.assert_array_equal(disp.line_.get_ydata(), svbf.objective_curve_)
    assert len(disp.ax_.lines) == 1  # the curve; the restarts are points after its end
    (restarts,) = disp.ax_.collections
    np.testing.assert_array_equal(restarts.get_offsets()[:, 1], svbf.init_objectives_)
    assert "2 restarts" in disp.ax_.get_legend().get_texts()[-1].get_text()
    fig, ax = plt.subplots()
    angles = PrincipalAnglesDisplay.from_estimator(svbf, X, labels=np.arange(8) % 2, ax=ax)
    # one marker-only artist per label: the angles of a set are not a series to join
    assert angles.ax_ is ax and len(angles.lines_) == 2
    assert all(line.get_linestyle() == "None" for line in angles.lines_)
    even = np.degrees(principal_angles(X, svbf.basis_))[::2]
    np.testing.assert_allclose(angles.lines_[0].get_ydata(), even.ravel(), atol=1e-9)
    np.testing.assert_allclose(np.round(angles.lines_[0].get_xdata()),
                               np.tile([1, 2], len(even)))
    plt.close("all")
