"""RiemannianFeatureGeometry: map resolution, quantities, slices, bad inputs, sklearn use."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC
from torch import nn

from geolearn.datasets import make_sinusoid_boundary
from geolearn.riemannian import PullbackMetric, RiemannianFeatureGeometry, ShallowNet
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


@pytest.fixture(scope="module")
def data():
    return make_sinusoid_boundary(60, random_state=0)


def _seq(seed=0, d=2):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 12), nn.Tanh(), nn.Linear(12, 8), nn.Sigmoid(),
                         nn.Linear(8, 2))


class _Wrapped(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = _seq()

    def hidden(self, x):
        return self.body[:2](x)

    def forward(self, x):
        return self.body(x)


def test_layer_forms_give_the_same_jacobian(data):
    X, _ = data
    net = _seq()
    truncated = net[:2].double()
    ref = PullbackMetric(truncated).jacobian(torch.as_tensor(X))
    wrapped = _Wrapped()
    for fm, layer in [(net, 1), (net, "1"), (wrapped, "body.1"), (wrapped, "hidden"),
                      (net, lambda module, x: module[:2](x))]:
        geo = RiemannianFeatureGeometry(fm, layer=layer).fit(X)
        np.testing.assert_allclose(geo.feature_jacobian(X), ref, rtol=1e-12)
        assert geo.n_features_map_ == 12 and geo.scale_ == 1 / 12
    with pytest.raises(ValueError, match=r"submodules: \['0', '1', '2', '3', '4'\]"):
        RiemannianFeatureGeometry(net, layer="nope").fit(X)
    with pytest.raises(ValueError, match="layer must be"):
        RiemannianFeatureGeometry(net, layer=1.5).fit(X)


def test_module_is_cast_on_a_copy_and_left_untouched(data):
    X, _ = data
    net = _seq()
    net.train()
    geo = RiemannianFeatureGeometry(net, layer=1).fit(X)
    geo.transform(X[:5])
    assert net.training and next(net.parameters()).dtype == torch.float32
    assert all(p.requires_grad for p in net.parameters())
    assert geo.dtype_ == torch.float64 and geo.device_.type == "cpu"


def test_one_adapter_per_fit_and_no_copy_to_freeze(data, monkeypatch):
    """Regression: fit + transform called ``as_model`` three times and deep-copied the module."""
    import geolearn.riemannian._estimator as est_module

    X, _ = data
    calls = []
    real = est_module.as_model
    monkeypatch.setattr(est_module, "as_model", lambda *a, **k: calls.append(a) or real(*a, **k))
    net = _seq().double()
    geo = RiemannianFeatureGeometry(net, layer="1", quantities=("log_volume", "ricci_scalar"))
    before = geo.fit(X).transform(X[:5])
    geo.along_path(X[0], X[1], n_steps=3)
    assert len(calls) == 1
    mlp = MLPClassifier((5,), activation="tanh", max_iter=30, random_state=0)
    with pytest.warns(Warning):
        mlp.fit(X, data[1])
    RiemannianFeatureGeometry(mlp).fit(X).transform(X[:5])
    assert len(calls) == 2
    # a float64 module is used as it is (frozen while probed), not a snapshot copy of it
    with torch.no_grad():
        net[0].weight.mul_(2.0)
    assert not np.allclose(geo.transform(X[:5]), before)


def test_dropout_is_off_while_probed_and_the_mode_restored(data):
    X, _ = data
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 12), nn.Dropout(0.5), nn.Tanh()).double().train()
    geo = RiemannianFeatureGeometry(net).fit(X)
    a, b = geo.transform(X[:8]), geo.transform(X[:8])
    np.testing.assert_array_equal(a, b)
    ref = RiemannianFeatureGeometry(nn.Sequential(net[0], net[2])).fit(X).transform(X[:8])
    np.testing.assert_allclose(a, ref, rtol=1e-12)
    assert net.training and net[1].training


@settings(max_examples=20, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.just(2)),
              elements=st.floats(-3, 3)))
def test_feature_jacobian_is_the_adapters_jacobian(X):
    """The pullback metric differentiates the adapter's feature function of the layer."""
    from geolearn.models import as_model

    net = _seq().double()
    geo = RiemannianFeatureGeometry(net, layer="2", scale="none").fit(np.zeros((2, 2)))
    J = as_model(net).jacobian(X, layer="2", mode="fwd")
    np.testing.assert_allclose(geo.feature_jacobian(X), J, rtol=1e-12, atol=1e-14)
    g = geo.metric_tensor(X)
    np.testing.assert_allclose(g, np.einsum("nki,nkj->nij", J, J), rtol=1e-10, atol=1e-12)


def test_quantities_and_feature_names(data):
    X, _ = data
    geo = RiemannianFeatureGeometry(
        _seq(), layer=3, quantities=("log_volume", "rank", "ricci_scalar", "log_metric_eigvals"))
    Xt = geo.fit(X).transform(X)
    assert Xt.shape == (60, 5) and Xt.dtype == np.float64
    assert list(geo.get_feature_names_out()) == [
        "log_volume", "rank", "ricci_scalar", "log_metric_eigval_0", "log_metric_eigval_1"]
    np.testing.assert_allclose(Xt[:, 0], 0.5 * Xt[:, 3:].sum(1), rtol=1e-10)
    np.testing.assert_array_equal(Xt[:, 1], 2)
    np.testing.assert_allclose(Xt[:, 2], geo.ricci_scalar(X))
    np.testing.assert_allclose(np.exp(Xt[:, 0]), geo.volume_element(X))
    np.testing.assert_allclose(Xt[:, 0], 0.5 * np.linalg.slogdet(geo.metric_tensor(X))[1],
                               rtol=1e-10)
    np.testing.assert_allclose(np.log(geo.metric_eigenvalues(X)), Xt[:, 3:], rtol=1e-10)


def test_skorch_net_is_fitted_when_needed(data):
    from skorch import NeuralNetClassifier

    X, y = data
    net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=10,
                              module__n_classes=2, criterion=nn.CrossEntropyLoss, max_epochs=2,
                              train_split=None, verbose=0)
    geo = RiemannianFeatureGeometry(net, layer="features").fit(X, y)
    assert geo.estimator_.initialized_ and not getattr(net, "initialized_", False)
    with pytest.raises(ValueError, match="unfitted NeuralNetClassifier: fit needs y"):
        RiemannianFeatureGeometry(net, layer="features").fit(X)
    # a prefit net is used as it is, never refitted (geolearn.models.fit_or_use)
    prefit = RiemannianFeatureGeometry(geo.estimator_, layer="features").fit(X, y)
    assert not hasattr(prefit, "estimator_")
    np.testing.assert_array_equal(prefit.transform(X[:5]), geo.transform(X[:5]))
    sl = geo.along_path(X[0], X[1], n_steps=5)
    assert sl.t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(sl.points[[0, -1]], X[:2])
    assert sl.predictions.shape == (5,) and np.all((sl.entropy >= 0) & (sl.entropy <= 1))


def test_unfitted_and_frozen_sklearn_mlps_follow_the_fitting_policy(data):
    """Unfitted estimators are fitted by ``fit``; FrozenEstimator survives ``clone`` unfitted."""
    from sklearn.base import clone
    from sklearn.frozen import FrozenEstimator

    X, y = data
    mlp = MLPClassifier((7,), activation="tanh", max_iter=40, random_state=0)
    with pytest.warns(Warning):
        geo = RiemannianFeatureGeometry(mlp, layer="act_0").fit(X, y)
    assert hasattr(geo.estimator_, "coefs_") and not hasattr(mlp, "coefs_")
    frozen = RiemannianFeatureGeometry(FrozenEstimator(geo.estimator_), layer="act_0")
    np.testing.assert_array_equal(clone(frozen).fit(X).transform(X[:5]), geo.transform(X[:5]))
    with pytest.raises(TypeError, match="black-box"):
        RiemannianFeatureGeometry(SVC().fit(X, y)).fit(X)


def test_sklearn_mlp_feature_map(data):
    X, y = data
    mlp = MLPClassifier((9,), activation="tanh", max_iter=50, random_state=0).fit(X, y)
    geo = RiemannianFeatureGeometry(mlp, layer="act_0", scale="none").fit(X)
    J = np.einsum("nk,dk->nkd", 1 - np.tanh(X @ mlp.coefs_[0] + mlp.intercepts_[0]) ** 2,
                  mlp.coefs_[0])
    np.testing.assert_allclose(geo.feature_jacobian(X), J, rtol=1e-10, atol=1e-14)


def test_images_flat_and_nd_agree():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(12, 20), nn.Sigmoid())
    X = np.random.default_rng(0).uniform(size=(4, 1, 3, 4))
    a = RiemannianFeatureGeometry(net).fit(X)
    b = RiemannianFeatureGeometry(net, image_shape=(1, 3, 4)).fit(X.reshape(4, -1))
    np.testing.assert_allclose(a.transform(X), b.transform(X.reshape(4, -1)))
    assert a.image_shape_ == b.image_shape_ == (1, 3, 4) and a.n_features_in_ == 12
    with pytest.raises(ValueError, match=r"X has 11 features, expected 12 = prod\(image_shape="):
        RiemannianFeatureGeometry(net, image_shape=(1, 3, 4)).fit(X.reshape(4, -1)[:, :11])
    with pytest.raises(ValueError, match="expecting 12 features"):
        b.transform(X.reshape(4, -1)[:, :11])


def test_slices(data):
    X, _ = data
    geo = RiemannianFeatureGeometry(_seq(), layer=1).fit(X)
    grid = geo.on_grid(bounds=(-1, 1), resolution=7)
    assert grid.points.shape == (49, 2) and grid.shape == (7, 7)
    np.testing.assert_allclose(grid.points[:7, 0], -1)  # first coordinate slowest
    np.testing.assert_allclose(grid["log_volume"], geo.transform(grid.points)[:, 0])
    plane = geo.on_plane(X[0], X[1], X[2], resolution=6)
    assert len(plane.points) == 28
    np.testing.assert_allclose(plane.barycentric.sum(1), 1)
    corners = [np.argmax(plane.barycentric[:, i]) for i in range(3)]
    np.testing.assert_allclose(plane.points[corners], X[:3])
    affine = geo.on_plane(X[0], X[1], X[2], resolution=5, hull="affine", extent=2.0)
    np.testing.assert_allclose(affine.barycentric @ X[:3], affine.points)
    assert affine.coords.min() == -2.0
    assert affine.predictions is not None
    with pytest.raises(ValueError, match="x_b contains NaN"):
        geo.along_path(X[0], [0.0, np.inf])
    with pytest.raises(ValueError, match="bounds"):
        geo.on_grid(bounds=(0.0, np.nan))
    with pytest.raises(ValueError, match="hull"):
        geo.on_plane(X[0], X[1], X[2], hull="concave")
    with pytest.raises(ValueError, match="on_grid needs a 2-D"):
        RiemannianFeatureGeometry(nn.Tanh()).fit(np.zeros((2, 3))).on_grid()


def test_parameter_errors(data):
    X, _ = data
    cases = [
        (dict(), "exactly one of feature_map and kernel; got neither"),
        (dict(feature_map=nn.Tanh(), kernel="rbf"), "got both"),
        (dict(feature_map=nn.Tanh(), scale=0.0), "'scale' parameter"),
        (dict(feature_map=nn.Tanh(), scale=-2), "'scale' parameter"),
        (dict(feature_map=nn.Tanh(), rtol=1.5), r"'rtol' parameter .* range \[0.0, 1.0\)"),
        (dict(feature_map=nn.Tanh(), rank=0), r"'rank' parameter .* range \[1, inf\)"),
        (dict(feature_map=nn.Tanh(), quantities=("volume",)), "quantities must be"),
        (dict(feature_map=nn.Tanh(), dtype="float16"), "'dtype' parameter"),
        (dict(kernel="laplacian"), "twice differentiable"),
        (dict(kernel="sigmoidal"), "'kernel' parameter .* Got 'sigmoidal'"),
        (dict(feature_map=lambda x: x, layer=1), "layer applies"),
        (dict(feature_map=nn.Tanh(), layer="0"), "layer applies"),
    ]
    for params, match in cases:
        with pytest.raises(ValueError, match=match):
            RiemannianFeatureGeometry(**params).fit(X)
    geo = RiemannianFeatureGeometry(nn.Tanh(), rank=3).fit(X)
    with pytest.raises(ValueError, match=r"rank must be <= min\(m, d\) = 2"):
        geo.transform(X)


def test_batch_coupled_map_is_refused(data):
    X, _ = data
    with pytest.raises(ValueError, match="couples the samples"):
        RiemannianFeatureGeometry(lambda Z: Z - Z.mean(0)).fit(X)


def test_curvature_guards(data):
    X, _ = data
    relu = nn.Sequential(nn.Linear(2, 10), nn.ReLU())
    with pytest.warns(UserWarning, match="non-smooth"):
        geo = RiemannianFeatureGeometry(relu).fit(X)
    assert np.isfinite(geo.transform(X)).all()
    with pytest.raises(ValueError, match="allow_nonsmooth"):
        geo.ricci_scalar(X)
    with pytest.warns(UserWarning, match="m=1 < d=2"):
        narrow = RiemannianFeatureGeometry(nn.Linear(2, 1)).fit(X)
    with pytest.raises(ValueError, match="m >= d"):
        narrow.ricci_scalar(X)
    high = RiemannianFeatureGeometry(nn.Tanh(), max_curvature_dim=3).fit(np.ones((2, 4)))
    with pytest.raises(ValueError, match="max_curvature_dim=3"):
        high.ricci_scalar(np.ones((2, 4)))
    net = _seq()
    r64 = RiemannianFeatureGeometry(net, layer=1).fit(X).ricci_scalar(X[:5])
    with pytest.warns(UserWarning, match="upcasting"):
        r32 = RiemannianFeatureGeometry(net, layer=1, dtype="float32").fit(X).ricci_scalar(X[:5])
    np.testing.assert_allclose(r32, r64, rtol=1e-5)


def test_rank_varying_across_points_warns():
    geo = RiemannianFeatureGeometry(lambda Z: Z**3, scale="none").fit(np.ones((1, 2)))
    with pytest.warns(UserWarning, match="rank of the metric varies"):
        geo.transform(np.array([[1.0, 1.0], [0.0, 1.0]]))


def test_kernel_geometry():
    X = np.random.default_rng(0).uniform(-1, 1, (6, 3))
    geo = RiemannianFeatureGeometry(kernel="rbf", kernel_params={"gamma": 0.5},
                                    quantities=("log_volume", "ricci_scalar")).fit(X)
    np.testing.assert_allclose(geo.transform(X), np.tile([0.0, 0.0], (6, 1)), atol=1e-12)
    with pytest.raises(ValueError, match="implicit"):
        geo.feature_jacobian(X)


def test_bad_inputs(data):
    X, y = data
    check_bad_inputs(RiemannianFeatureGeometry(nn.Tanh()), X, y,
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"), min_samples=1)
    check_bad_inputs(RiemannianFeatureGeometry(kernel="poly"), X, y,
                     cases=("nan", "inf", "unfitted"))


@settings(max_examples=15)
@given(arrays(np.float64, st.tuples(st.integers(1, 5), st.just(3)),
              elements=st.floats(-1e3, 1e3)),
       st.integers(0, 14), st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_entries_are_refused_anywhere(X, position, value):
    geo = RiemannianFeatureGeometry(nn.Tanh()).fit(np.zeros((2, 3)))
    X = X.copy()
    X.flat[position % X.size] = value
    with pytest.raises(ValueError, match="NaN|infinity"):
        geo.transform(X)


def test_pipeline_gridsearch_pickle(data):
    X, y = data
    check_pipeline_gridsearch_pickle(
        RiemannianFeatureGeometry(_seq(), layer=3, quantities=("log_volume", "rank")), X, y,
        param_grid={"layer": [1, 3], "scale": ["width", "none"]},
        scoring=lambda est, X, y: float(est.transform(X)[:, 0].mean()))
    pipe = Pipeline([("geo", RiemannianFeatureGeometry(_seq(), layer=1)),
                     ("clf", LogisticRegression())])
    search = GridSearchCV(pipe, {"geo__scale": ["width", 2.0]}, cv=2).fit(X, y)
    assert search.best_estimator_.named_steps["geo"].n_features_map_ == 12
