"""GeometrySliceDisplay: paths, planes and grids."""

import matplotlib
import numpy as np
import pytest
import torch

from geolearn.plotting import GeometrySliceDisplay
from geolearn.riemannian import RiemannianFeatureGeometry, ShallowNet

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def geo():
    torch.manual_seed(0)
    return RiemannianFeatureGeometry(ShallowNet(2, 20, 3), layer="features").fit(np.zeros((1, 2)))


def test_grid_plane_and_path(geo):
    import matplotlib.pyplot as plt

    grid = GeometrySliceDisplay.from_estimator(geo, resolution=12)
    assert grid.contour_ is not None and grid.line_ is None and grid.colorbar_ is not None
    assert len(grid.boundary_) == 1  # three classes: one contour set of class changes
    x = np.array([[-1.0, -1.0], [1.0, 1.0], [1.0, -1.0]])
    path = GeometrySliceDisplay.from_estimator(geo, x[0], x[1], n_steps=50)
    changes = np.count_nonzero(np.diff(path.slice.predictions))
    assert len(path.boundary_) == changes
    np.testing.assert_allclose(path.line_.get_ydata(), path.slice["log_volume"])
    _, ax = plt.subplots()
    plane = GeometrySliceDisplay.from_estimator(geo, *x, quantity="log_metric_eigval_1", ax=ax)
    assert plane.ax_ is ax and plane.figure_ is ax.figure
    plt.close("all")


def test_unknown_quantity(geo):
    sl = geo.on_grid(resolution=4)
    with pytest.raises(ValueError, match="ricci_scalar"):
        GeometrySliceDisplay.from_results(sl, quantity="ricci_scalar")
    with pytest.raises(ValueError, match="0 \\(grid\\), 2 \\(path\\) or 3"):
        GeometrySliceDisplay.from_estimator(geo, np.zeros(2))
