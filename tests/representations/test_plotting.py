"""CanonicalSpaceDisplay and DetectionScoreDisplay."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch import nn

from geolearn.plotting import CanonicalSpaceDisplay, DetectionScoreDisplay
from geolearn.representations import cross_model_detection


@pytest.fixture(scope="module")
def result():
    nets = {}
    for i, name in enumerate(("a", "b")):
        torch.manual_seed(i)
        nets[name] = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    rng = np.random.default_rng(0)
    X = rng.random((90, 6)).astype(np.float32)
    return cross_model_detection(nets, "a", X, np.arange(90) % 3, epsilon=0.3, random_state=0)


def test_canonical_space_display(result):
    fig, ax = plt.subplots()
    disp = CanonicalSpaceDisplay.from_results(result, ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    n_val = len(result.splits["val"])
    assert {k: len(v) for k, v in disp.groups.items()} == {
        "canonical clean": n_val, "canonical adversarial": n_val,
        "b mapped clean": n_val, "b mapped adversarial": n_val}
    assert len(ax.collections) == 4
    plt.close(fig)


def test_detection_score_display(result):
    disp = DetectionScoreDisplay.from_results(result)
    heights = [bar.get_height() for bar in disp.bars_]
    assert heights == [result.auroc_native, result.sources["b"]["auroc_mapped"]]
    assert disp.bars_[0].get_hatch() == "//" and not disp.bars_[1].get_hatch()
    plt.close(disp.figure_)
