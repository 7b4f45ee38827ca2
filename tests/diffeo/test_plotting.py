"""The diffeo Displays."""

import matplotlib
import numpy as np

from geolearn.datasets import load_digits_images
from geolearn.diffeo import deformation_grid, temperature_range

matplotlib.use("Agg")


def test_deformation_grid_marks_the_useful_region():
    import matplotlib.pyplot as plt

    from geolearn.plotting import DeformationGridDisplay

    X, _ = load_digits_images(upsample=2, return_X_y=True)
    temps = np.array([1e-4, 5e-3, 0.2])
    grid = deformation_grid(X[0], temperatures=temps, cutoffs=(2, 3), random_state=0)
    disp = DeformationGridDisplay.from_results(grid)
    for a, c in enumerate((2, 3)):
        T_min, T_max = temperature_range(16, c)
        np.testing.assert_array_equal(disp.valid[a], (temps >= T_min) & (temps <= T_max))
    # no deformation at the smallest temperature is larger than a fraction of a pixel
    assert np.abs(disp.images[:, 0] - X[0, 0]).max() < 0.2
    assert disp.axes_.shape == (2, 3)
    # rows and columns say what varies, the title what the grid shows, at a readable size
    assert [ax.get_ylabel() for ax in disp.axes_[:, 0]] == ["cut-off c = 2", "cut-off c = 3"]
    assert disp.axes_[-1, 0].get_xlabel() == "T = 1.0e-04"
    assert "temperature T (columns" in disp.figure_.get_suptitle()
    assert disp.figure_.get_figwidth() >= 2 * 3
    plt.close(disp.figure_)


def test_stability_curve_from_results():
    import matplotlib.pyplot as plt
    from sklearn.utils import Bunch

    from geolearn.plotting import StabilityCurveDisplay

    results = [Bunch(R=r, D=r, G=1.0, R_repeats=np.array([r, r]), D_repeats=np.array([r, r]),
                     G_repeats=np.array([1.0, 1.0])) for r in (1.0, 0.1)]
    disp = StabilityCurveDisplay.from_results([10, 100], results, xlabel="P").plot()
    np.testing.assert_allclose(disp.values["R"], [1.0, 0.1])
    np.testing.assert_allclose(disp.errors["R"], 0.0)
    assert disp.ax_.get_xscale() == "log" and disp.ax_.get_xlabel() == "P"
    plt.close(disp.figure_)
