"""LocalLinearMap and LocalLinearClustering (paper 2)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from torch import nn

from geolearn.polytopes import LocalLinearClustering, LocalLinearMap, local_rows
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

from ._nets import Wrapped, gaussian_net


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    a = MLPClassifier((16,), max_iter=2000, random_state=0).fit(X, y)
    b = MLPClassifier((12, 12), max_iter=2000, random_state=1).fit(X, y)
    return X, y, a, b


def test_autograd_rows_equal_exact_rows():
    net = gaussian_net((4, 7, 5, 3), seed=0)
    X = np.random.default_rng(0).normal(size=(25, 4))
    W, b = local_rows(net, X)
    Wa, ba = local_rows(Wrapped(net), X)
    np.testing.assert_allclose(Wa, W, atol=1e-12)
    np.testing.assert_allclose(ba, b, atol=1e-12)


def test_conv_net_rows_reproduce_outputs():
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(48, 4), nn.Softmax(dim=1))
    X = np.random.default_rng(0).normal(size=(10, 100))
    W, b = local_rows(conv, X, image_shape=(1, 10, 10))
    with torch.no_grad():
        logits = conv[:-1].double()(torch.as_tensor(X).reshape(10, 1, 10, 10)).numpy()
    np.testing.assert_allclose(np.einsum("nom,nm->no", W, X) + b, logits, atol=1e-10)


def test_tanh_layers_warn():
    net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 2))
    with pytest.warns(UserWarning, match="Tanh"):
        local_rows(net, np.zeros((2, 2)))


def test_map_to_itself_is_identity(iris):
    """Spec 2.10: mapping a network to itself gives M_j = I (full column rank)."""
    X, y, a, _ = iris
    llm = LocalLinearMap(source=a, target=a).fit(X)
    assert llm.maps_.shape == (3, 5, 5)
    np.testing.assert_allclose(llm.maps_, np.broadcast_to(np.eye(5), (3, 5, 5)), atol=1e-8)
    np.testing.assert_array_equal(llm.predict(X), a.predict(X))
    np.testing.assert_allclose(llm.decision_function(X), np.log(a.predict_proba(X))
                               - np.log(a.predict_proba(X))[:, :1] + llm.decision_function(X)[:, :1],
                               atol=1e-8)
    np.testing.assert_allclose(llm.r2_fit_, 1.0)


def test_cross_map_least_squares(iris):
    X, y, a, b = iris
    llm = LocalLinearMap(source=a, target=b).fit(X)
    C1 = np.concatenate(local_rows(a, X)[0:1] + (local_rows(a, X)[1][..., None],), axis=2)
    C2 = np.concatenate((local_rows(b, X)[0], local_rows(b, X)[1][..., None]), axis=2)
    for j in range(3):
        M = np.linalg.lstsq(C1[:, j], C2[:, j], rcond=None)[0]
        np.testing.assert_allclose(C1[:, j] @ llm.maps_[j], C1[:, j] @ M, atol=1e-8)
    assert llm.score(X, y) > 0.8
    assert llm.transform(X).shape == (150, 15)
    np.testing.assert_allclose(llm.coefficient_r2(X), llm.r2_fit_)
    # weights-only ablation and ridge
    assert LocalLinearMap(source=a, target=b, include_bias=False).fit(X).maps_.shape == (3, 4, 4)
    ridge = LocalLinearMap(source=a, target=b, alpha=2.0).fit(X)
    M0 = np.linalg.solve(C1[:, 0].T @ C1[:, 0] + 2 * np.eye(5), C1[:, 0].T @ C2[:, 0])
    np.testing.assert_allclose(ridge.maps_[0], M0, atol=1e-8)
    with pytest.warns(UserWarning, match="max_memory"):
        batched = LocalLinearMap(source=a, target=b, max_memory=1000, batch_size=40).fit(X)
    np.testing.assert_allclose(batched.maps_, llm.maps_, atol=1e-6)
    # the R^2 of all the samples, not a mean of the batches'
    np.testing.assert_allclose(batched.r2_fit_, llm.r2_fit_, rtol=1e-6)


def test_map_peak_memory_stays_within_max_memory():
    """Regression: beyond max_memory the local rows were summed in batches of batch_size
    (1,024 samples: 22 MB at the peak here for max_memory=2 MB)."""
    import tracemalloc

    torch.manual_seed(0)

    def net():
        return nn.Sequential(nn.Linear(50, 64), nn.ReLU(), nn.Linear(64, 10))

    X = np.random.default_rng(0).random((2000, 50))
    llm = LocalLinearMap(net(), net(), max_memory=2_000_000)
    llm.fit(X[:60])  # the networks' first calls, outside the measure
    tracemalloc.start()
    try:
        with pytest.warns(UserWarning, match="max_memory"):
            llm.fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.5 * 2_000_000, f"peak {peak / 1e6:.1f} MB for max_memory 2 MB"


def test_map_bad_inputs(iris):
    X, y, a, _ = iris
    other = MLPClassifier((5,), max_iter=50).fit(X[:, :3], y)
    with pytest.raises(ValueError, match="same inputs and outputs"):
        LocalLinearMap(source=a, target=other).fit(X)
    with pytest.raises(ValueError, match="same inputs and outputs"):
        LocalLinearMap(source=a, target=gaussian_net((4, 3, 2), seed=0)).fit(X)
    with pytest.raises(ValueError, match="source=None"):
        LocalLinearMap(target=a).fit(X)
    with pytest.raises(ValueError, match="alpha"):
        LocalLinearMap(source=a, target=a, alpha=-1).fit(X)
    with pytest.warns(UserWarning, match="underdetermined"):
        LocalLinearMap(source=a, target=a).fit(X[:3])
    check_bad_inputs(LocalLinearMap(source=a, target=a), X, y,
                     cases=("nan", "inf", "ndim", "unfitted"))


def test_clustering_limits(iris):
    """k >= distinct rows reproduces the network; k = 1 is one linear model."""
    X, y, a, _ = iris
    full = LocalLinearClustering(a, n_clusters=150, random_state=0).fit(X)
    assert np.all(full.n_distinct_maps_ <= 150)
    np.testing.assert_array_equal(full.predict(X), a.predict(X))
    one = LocalLinearClustering(a, n_clusters=1, random_state=0).fit(X)
    rows = np.concatenate([local_rows(a, X)[0], local_rows(a, X)[1][..., None]], axis=2)
    np.testing.assert_allclose(one.cluster_centers_[:, 0], rows.mean(axis=0), atol=1e-10)
    mb = LocalLinearClustering(a, n_clusters=5, algorithm="minibatch", random_state=0).fit(X)
    assert mb.cluster_centers_.shape == (3, 5, 5)
    assert mb.score(X, y) > 0.6


def test_clustering_bad_inputs(iris):
    X, y, a, _ = iris
    for k in (0, -1, 2.5):
        with pytest.raises(ValueError, match="n_clusters"):
            LocalLinearClustering(a, n_clusters=k).fit(X)
    with pytest.raises(ValueError, match="exceeds the number of samples"):
        LocalLinearClustering(a, n_clusters=200).fit(X)
    with pytest.raises(ValueError, match="algorithm"):
        LocalLinearClustering(a, algorithm="dbscan").fit(X)
    check_bad_inputs(LocalLinearClustering(a, n_clusters=3), X, y,
                     cases=("nan", "inf", "ndim", "unfitted"))


def test_clustering_sklearn_integration(iris):
    X, y, a, _ = iris
    est = LocalLinearClustering(MLPClassifier((8,), max_iter=500, random_state=0), n_clusters=3,
                                random_state=0)
    check_pipeline_gridsearch_pickle(est, X, y, param_grid={"n_clusters": [1, 3]})
    search = GridSearchCV(LocalLinearClustering(FrozenEstimator(a), random_state=0),
                          {"n_clusters": [1, 10]}, cv=3).fit(X, y)
    assert search.best_params_["n_clusters"] in (1, 10)
    llm = LocalLinearMap(source=MLPClassifier((8,), max_iter=500, random_state=0),
                         target=MLPClassifier((6,), max_iter=500, random_state=1))
    check_pipeline_gridsearch_pickle(llm, X, y, param_grid={"alpha": [0.0, 1.0]})
