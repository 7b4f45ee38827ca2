"""PolytopePartitionDisplay on a small figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import torch

from geolearn.plotting import PolytopePartitionDisplay
from geolearn.polytopes import ReLUPolytopes


def test_title_clears_the_colour_bar_at_4_by_4_inches():
    """Regression: the one-line title ran into the colour bar of a 4x4 in figure."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1))
    est = ReLUPolytopes(net, bounds=(-1, 1)).fit(torch.zeros(1, 2).numpy())
    fig, ax = plt.subplots(figsize=(4, 4))
    PolytopePartitionDisplay.from_estimator(est, color_by="norm", ax=ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title = ax.title.get_window_extent(renderer)
    colorbar = fig.axes[1].get_tightbbox(renderer)
    assert title.x1 < colorbar.x0
    plt.close(fig)
