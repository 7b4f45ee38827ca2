"""The generative Displays: generated samples beside the data."""

import matplotlib
import numpy as np
import pytest

from geolearn.datasets import make_circle_points
from geolearn.generative import ChartAutoencoder, GridVAE
from geolearn.plotting import GeneratedSamplesDisplay

matplotlib.use("Agg")


def test_point_clouds_share_limits_and_project_on_principal_axes():
    import matplotlib.pyplot as plt

    X = make_circle_points(60, noise=0.05, random_state=0)
    cae = ChartAutoencoder(n_charts=2, hidden_layer_sizes=(8,), max_epochs=1, random_state=0).fit(X)
    disp = GeneratedSamplesDisplay.from_estimator(cae, X, n_samples=30, random_state=0)
    np.testing.assert_array_equal(disp.samples, cae.sample(30, random_state=0))
    assert disp.axes_[0].get_title() == "data"
    assert disp.axes_[1].get_title() == "ChartAutoencoder"
    assert disp.axes_[0].get_xlim() == disp.axes_[1].get_xlim()
    offsets = disp.axes_[0].collections[0].get_offsets()
    np.testing.assert_allclose(offsets, X)
    plt.close(disp.figure_)
    # 3-D data: the data's first two principal axes (a plane in R^3 is drawn exactly)
    rng = np.random.default_rng(0)
    plane = np.c_[rng.normal(size=(40, 2)) * [3.0, 1.0], np.zeros(40)] @ [[0, 1, 0], [0, 0, 1],
                                                                          [1, 0, 0]]
    disp = GeneratedSamplesDisplay(plane, plane[:5]).plot()
    P = disp.axes_[0].collections[0].get_offsets()
    np.testing.assert_allclose(np.linalg.norm(P, axis=1),
                               np.linalg.norm(plane - plane.mean(0), axis=1), atol=1e-9)
    assert disp.axes_[0].get_xlabel() == "PC 1"
    plt.close(disp.figure_)
    disp = GeneratedSamplesDisplay(plane[:, :1], plane[:5, :1]).plot()
    assert disp.axes_[1].collections[0].get_offsets().shape == (5, 2)
    plt.close(disp.figure_)


def test_images_are_drawn_as_grids():
    import matplotlib.pyplot as plt

    images = np.random.default_rng(0).random((20, 1, 4, 4))
    vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, random_state=0).fit(images)
    fig, axes = plt.subplots(1, 2)
    disp = GeneratedSamplesDisplay.from_estimator(vae, images, n_samples=9, axes=axes)
    assert disp.figure_ is fig and disp.samples.shape == (9, 16)  # GridVAE's (X, labels)
    grid = disp.axes_[1].images[0].get_array()
    assert grid.shape == (3 * 5 - 1, 3 * 5 - 1)  # 3 x 3 tiles of 4 x 4, 1-pixel gaps
    assert disp.axes_[0].images[0].get_array().shape == (4 * 5 - 1, 4 * 5 - 1)  # 16 tiles
    plt.close(fig)
    with pytest.raises(ValueError):
        GeneratedSamplesDisplay(images.reshape(20, -1), images[:2].reshape(2, -1),
                                image_shape=(3, 3)).plot()
