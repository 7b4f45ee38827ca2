import matplotlib
import numpy as np
import pytest
import torch
from sklearn.utils import Bunch

from geolearn.plotting import InvarianceReportDisplay, SaliencyOrbitDisplay

matplotlib.use("Agg")


def test_saliency_orbit_display_shows_realigned_maps():
    W = torch.randn(36, 2)

    def invariant(x):
        return torch.stack([torch.rot90(x, k, dims=(-2, -1)).flatten(1) @ W
                            for k in range(4)]).amax(0)

    X = np.random.default_rng(0).random((3, 1, 6, 6), dtype=np.float32)
    disp = SaliencyOrbitDisplay.from_estimator(invariant, X, [0, 1, 0], group="rot4", steps=6)
    assert disp.axes_.shape == (3, 4) and disp.si == pytest.approx(1, abs=1e-6)
    # an invariant model: every column of a row shows the same realigned map
    for i in range(3):
        for k in range(4):
            np.testing.assert_allclose(disp.images_[i, k].get_array(), disp.maps[i, 0],
                                       atol=1e-5)
    # the grid says what it shows: group elements over the columns, images down the rows,
    # the model's name, and one colour scale shared by every map
    assert [ax.get_title() for ax in disp.axes_[0]] == [f"g = rot90(k={k})" for k in range(4)]
    assert [ax.get_ylabel() for ax in disp.axes_[:, 0]] == ["image 0", "image 1", "image 2"]
    assert disp.figure_._suptitle.get_text().startswith("function: ")
    assert disp.colorbar_.mappable.get_clim() == (0, pytest.approx(disp.maps.max()))
    # a block of a larger figure: the name goes in the row labels, the title is the caller's
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(6, 4)
    SaliencyOrbitDisplay(disp.maps, si=disp.si, name="DA").plot(ax=axes[:3])
    assert axes[1, 0].get_ylabel() == "DA, image 1" and fig.get_suptitle() == ""
    assert {im.get_clim() for im in disp.images_.flat} == {disp.colorbar_.mappable.get_clim()}
    plt.close("all")


def test_report_display_table():
    reports = {"WT": Bunch(transformed_accuracy=0.957, LI=0.0, DI=0.0, SI=1.0, sigma_max=14.9),
               "DA": Bunch(transformed_accuracy=0.94, LI=23.8, DI=0.19, SI=0.66, sigma_max=15.0)}
    disp = InvarianceReportDisplay.from_results(reports)
    cells = disp.table_.get_celld()
    assert cells[(0, 1)].get_text().get_text() == "LI"
    assert cells[(2, 1)].get_text().get_text() == "23.800"
    assert disp.ax_.figure is disp.figure_
    import matplotlib.pyplot as plt

    plt.close("all")
