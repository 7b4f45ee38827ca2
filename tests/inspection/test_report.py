"""geometry_report on an MLP, a small CNN and a black box; its table, figure and HTML page."""

import copy
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from geolearn.inspection import (
    MEASURES,
    GeometryReport,
    MeasureUnavailableError,
    geometry_report,
    register_measure,
)
from geolearn.plotting import GeometryHistoryDisplay

matplotlib.use("Agg")


def _blobs(n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    return X, (X[:, 0] + X[:, 1] > 0).astype(int)


def _images(n=120, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(size=(n, 1, 8, 8)).astype(np.float32), rng.integers(0, 3, size=n)


#: deformations of half a pixel: within the diffeomorphic range of 8x8 images
SMALL_IMAGES = {"relative_stability": {"delta": 0.5}}


def _frame(report):
    return report.to_frame().set_index(["model", "measure", "layer"])


def test_relu_mlp_gets_every_measure_but_the_image_ones():
    X, y = _blobs()
    mlp = MLPClassifier(hidden_layer_sizes=(16,), max_iter=300, random_state=0).fit(X, y)
    frame = _frame(geometry_report({"mlp": mlp}, X, y,
                                   measure_params={"rdm_similarity": {"metric": "euclidean"}}))
    computed = frame[frame.reason.isna()].index.get_level_values("measure").tolist()
    assert computed == ["log_volume", "rdm_similarity", "region_density"]
    for measure in ("relative_stability", "logit_invariance"):
        assert frame.loc[("mlp", measure, "output"), "reason"].startswith("no images")
    low, high = frame.loc[("mlp", "log_volume", "output"), "interval"]
    assert low <= frame.loc[("mlp", "log_volume", "output"), "value"] <= high


def test_small_cnn_with_image_shape_and_layers():
    """Images reach the image measures; per-layer measures are computed per layer."""
    X, y = _images()
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.Tanh(), torch.nn.Flatten(),
                              torch.nn.Linear(144, 3))
    report = geometry_report(cnn, X, y, image_shape=(1, 8, 8),
                             layers=["2", None], measure_params=SMALL_IMAGES)
    frame = _frame(report)
    name = "Sequential"
    assert report.models == [name]
    assert frame.loc[(name, "region_density", "output"), "reason"].startswith("not a ReLU net")
    for layer in ("2", "output"):
        assert np.isfinite(frame.loc[(name, "log_volume", layer), "value"])
        assert np.isfinite(frame.loc[(name, "rdm_similarity", layer), "value"])
    assert 0 < frame.loc[(name, "relative_stability", "output"), "value"] < 10
    assert frame.loc[(name, "logit_invariance", "output"), "value"] > 0


def test_black_box_skips_the_gradient_measures_with_reasons():
    X, y = _images()
    flat = X.reshape(len(X), -1)
    forest = RandomForestClassifier(n_estimators=5, random_state=0).fit(flat, y)
    frame = _frame(geometry_report({"forest": forest}, flat, y, image_shape=(1, 8, 8),
                                   measure_params=SMALL_IMAGES))
    assert frame.loc[("forest", "log_volume", "output"), "reason"].startswith("no gradients")
    assert frame.loc[("forest", "region_density", "output"), "reason"].startswith(
        "not a ReLU net")
    # R_f, the invariance error and the RDM need only the black box's response
    for measure in ("relative_stability", "logit_invariance", "rdm_similarity"):
        assert pd.isna(frame.loc[("forest", measure, "output"), "reason"])
        assert np.isfinite(frame.loc[("forest", measure, "output"), "value"])


def test_several_models_side_by_side_and_the_html_page(tmp_path):
    X, y = _blobs()
    torch.manual_seed(0)
    nets = {f"width {w}": torch.nn.Sequential(torch.nn.Linear(4, w), torch.nn.ReLU(),
                                              torch.nn.Linear(w, 3)) for w in (4, 64)}
    before = {name: copy.deepcopy(net.state_dict()) for name, net in nets.items()}
    report = geometry_report(nets, X, y, measures=["region_density", "rdm_similarity"])
    wide = report.to_frame("wide")
    assert wide.columns.tolist() == ["width 4", "width 64"]
    assert wide.loc[("region_density", "output"), "width 4"] < \
        wide.loc[("region_density", "output"), "width 64"]  # more units, more regions
    for name, net in nets.items():
        assert net.training
        for k, v in net.state_dict().items():
            assert torch.equal(v, before[name][k])
    page = report.to_html(tmp_path / "report.html").read_text()
    assert re.search(r'<img [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{100,}"', page)
    assert page.count("<table") == 2 and "region_density" in page and "width 64" in page
    assert "http" not in page.replace("http-equiv", "")  # self-contained


def test_user_measures_and_registry_errors():
    X, y = _blobs(20)

    def first_output(model, X, y=None):
        with torch.no_grad():
            return float(model(torch.as_tensor(X))[0, 0])

    def needs_something(model, X, y=None):
        raise MeasureUnavailableError("no something: this model lacks it")

    net = torch.nn.Sequential(torch.nn.Linear(4, 2))
    register_measure("first_output", first_output)
    try:
        frame = geometry_report(net, X, measures=["first_output", needs_something]).to_frame()
    finally:
        del MEASURES["first_output"]
    assert frame.measure.tolist() == ["first_output", "needs_something"]
    with torch.no_grad():
        assert frame.value[0] == pytest.approx(float(net(torch.as_tensor(X[:1]))[0, 0]))
    assert frame.reason.isna().tolist() == [True, False]
    assert frame.reason[1] == "no something: this model lacks it"
    with pytest.raises(ValueError, match=r"unknown measure 'volume'; the registered measures "
                                         r"are \['log_volume', 'logit_invariance'"):
        geometry_report(net, X, measures="volume")
    with pytest.raises(TypeError, match="func must be callable"):
        register_measure("x", 3)
    with pytest.raises(ValueError, match="layout must be"):
        GeometryReport([]).to_frame("tall")


def test_history_display_draws_measures_at_their_epochs():
    history = [{"epoch": 1, "train_loss": 1.0, "valid_loss": 1.1, "valid_acc": 0.5, "dur": 0.1},
               {"epoch": 2, "train_loss": 0.5, "valid_loss": 0.7, "valid_acc": 0.6, "dur": 0.1,
                "region_density": 3.0, "log_volume": -1.0},
               {"epoch": 3, "train_loss": 0.4, "valid_loss": 0.6, "valid_acc": 0.7, "dur": 0.1},
               {"epoch": 4, "train_loss": 0.3, "valid_loss": 0.6, "valid_acc": 0.8, "dur": 0.1,
                "region_density": 5.0, "log_volume": -0.5}]
    disp = GeometryHistoryDisplay.from_results(history)
    assert disp.measures == ["region_density", "log_volume"]
    assert len(disp.axes_) == 3
    assert disp.lines_["train_loss"].get_xdata().tolist() == [1, 2, 3, 4]
    assert disp.lines_["region_density"].get_ydata().tolist() == [3.0, 5.0]
    assert disp.lines_["log_volume"].get_xdata().tolist() == [2, 4]
    with pytest.raises(ValueError, match="records no"):
        GeometryHistoryDisplay.from_results(history, measures=["curvature"])
    with pytest.raises(ValueError, match="no measure"):
        GeometryHistoryDisplay.from_results(history[:1])
    with pytest.raises(TypeError, match="no history_"):
        GeometryHistoryDisplay.from_estimator(object())
