"""ReLUPolytopes: fitted attributes, methods, bad inputs and scikit-learn integration."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler
from torch import nn

from geolearn.polytopes import ReLUPolytopes, describe, nn_agreement
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

from ._nets import gaussian_net, sequential


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(150, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def fitted(data):
    return ReLUPolytopes(gaussian_net((3, 8, 6, 2), seed=0), random_state=0).fit(data[0])


def test_fitted_attributes(fitted, data):
    X, _ = data
    est = fitted
    bits = est.transform(X).astype(bool)
    assert bits.shape == (150, 14) and est.n_hidden_units_ == 14
    np.testing.assert_array_equal(est.patterns_[est.labels_], bits)
    # regions in order of first appearance, counted
    first = [np.flatnonzero(est.labels_ == r)[0] for r in range(est.n_regions_)]
    assert first == sorted(first)
    assert len(np.unique(bits, axis=0)) == est.n_regions_ == len(est.region_counts_)
    assert est.region_counts_.sum() == 150
    np.testing.assert_array_equal(est.region_index(X), est.labels_)
    assert est.region_index(np.full((1, 3), 50.0))[0] == -1
    np.testing.assert_allclose(est.unit_activation_rate_, bits.mean(0))
    assert est.n_distinct_affine_maps_ <= est.n_regions_
    W, b = est.local_affine_map(X)
    np.testing.assert_allclose(W, est.affine_W_[est.labels_])
    assert est.get_feature_names_out()[[0, 8]].tolist() == ["h0_0", "h1_0"]
    np.testing.assert_array_equal(est.bounds_[0], np.full(3, X.min()))
    for attr in ("chebyshev_radius_", "n_active_", "bounded_", "active_bits_"):
        assert getattr(est, attr) is None


def test_margin_ball_stays_in_region(fitted, data):
    X, _ = data
    est = fitted
    rng = np.random.default_rng(1)
    u = rng.normal(size=(150, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    inner = X + 0.999 * est.margin_[:, None] * u
    np.testing.assert_array_equal(est.transform(inner), est.transform(X))
    # the margin is a lower bound on the Chebyshev radius of the region
    radius, _ = est.chebyshev(X[:20])
    assert np.all(est.margin_[:20] <= radius + 1e-9)
    np.testing.assert_allclose(est.margin(X), est.margin_)


def test_region_stats_match_methods(data):
    X, _ = data
    est = ReLUPolytopes(gaussian_net((3, 8, 6, 2), seed=0),
                        region_stats=("chebyshev", "facets", "boundedness")).fit(X[:30])
    radius, center = est.chebyshev(X[:30])
    np.testing.assert_allclose(est.chebyshev_radius_[est.labels_], radius)
    r0 = est.labels_[0]
    P = est.polytope(x=X[0])
    np.testing.assert_array_equal(est.active_bits_[r0], P.active_bits())
    assert est.n_active_[r0] + est.n_box_facets_[r0] == len(P.facets())
    assert est.bounded_[r0] == P.is_bounded()
    assert P.contains(center[:1]).all()


def test_lp_subset_warns(data):
    X, _ = data
    est = ReLUPolytopes(gaussian_net((3, 8, 6, 2), seed=0), region_stats=("chebyshev",),
                        max_lp_regions=3, random_state=0)
    with pytest.warns(UserWarning, match="max_lp_regions"):
        est.fit(X)
    assert len(est.lp_region_index_) == 3
    assert np.isfinite(est.chebyshev_radius_).sum() == 3


def test_hamming_methods(fitted, data):
    X, _ = data
    est = fitted
    H = est.hamming_distances(X[:10])
    B = est.transform(X[:10]).astype(int)
    np.testing.assert_array_equal(H, np.abs(B[:, None] - B[None]).sum(2))
    np.testing.assert_array_equal(est.hamming_distances(X[:10], X[10:20], paired=True),
                                  np.abs(B - est.transform(X[10:20])).sum(1))
    assert np.all(est.hamming_at_radius(X, 0.0) == 0)
    h1 = est.hamming_at_radius(X, 0.3, n_directions=4, random_state=3)
    assert h1.shape == (150, 4)
    np.testing.assert_array_equal(h1, est.hamming_at_radius(X, 0.3, n_directions=4,
                                                            random_state=3))
    # points within their margin never change region
    small = est.hamming_at_radius(X, 0.5 * est.margin_.min())
    assert np.all(small == 0)


def test_neighbours_differ_in_the_facet_bit(fitted, data):
    est = fitted
    s = est.patterns_[0]
    nbs = est.neighbours(s)
    assert sorted(u for u, _ in nbs) == est.polytope(pattern=s).active_bits().tolist()
    for unit, p in nbs:
        assert np.flatnonzero(p != s).tolist() == [unit]


def test_summary_table_and_describe(fitted, data):
    X, _ = data
    table = fitted.summary_table({"a": X[:20], "b": X[20:40]}, "margin")
    assert table["a"] == describe(fitted.margin(X[:20]))
    seg = fitted.summary_table({"p": (X[:5], X[5:10])}, "segment_regions")
    assert seg["p"]["mean"] == fitted.segment_region_counts(X[:5], X[5:10]).mean()
    ham = fitted.summary_table({"a": X[:20]}, "hamming_at_radius", radius=0.0)
    assert ham["a"]["max"] == 0
    act = fitted.summary_table({"a": X[:3]}, "n_active")
    assert act["a"]["n"] == 3
    d = describe([4.0])
    assert d["n"] == 1 and np.isnan(d["sd"]) and d["mean"] == 4.0
    assert describe([1, 2, 3, 10])["sd"] == pytest.approx(np.std([1, 2, 3, 10], ddof=1))
    with pytest.raises(ValueError, match="metric"):
        fitted.summary_table({"a": X}, "volume")


def test_nn_agreement_brute_force():
    rng = np.random.default_rng(0)
    F = rng.integers(0, 2, size=(40, 12))
    y = rng.integers(0, 3, size=40)
    D = np.abs(F[:, None] - F[None]).sum(2).astype(float)
    np.fill_diagonal(D, np.inf)
    assert nn_agreement(F, y) == np.mean(y[D.argmin(1)] == y)
    E = rng.normal(size=(40, 3))
    De = np.linalg.norm(E[:, None] - E[None], axis=2)
    np.fill_diagonal(De, np.inf)
    assert nn_agreement(E, y, metric="euclidean") == np.mean(y[De.argmin(1)] == y)


def test_edge_cases():
    net = gaussian_net((2, 4, 1), seed=0)
    one = ReLUPolytopes(net, bounds=None).fit(np.array([[0.3, 0.1]]))
    assert one.n_regions_ == 1
    lin = ReLUPolytopes(sequential([np.ones((2, 2))], [np.zeros(2)]), bounds=None).fit(np.eye(2))
    assert lin.transform(np.eye(2)).shape == (2, 0) and lin.n_regions_ == 1
    X = np.random.default_rng(0).uniform(-1, 1, size=(20, 2))
    with pytest.warns(UserWarning, match="outside bounds"):
        est = ReLUPolytopes(net, bounds=(-0.5, 0.5)).fit(X)
    outside = np.any(np.abs(X) > 0.5, axis=1)
    assert np.all(est.ambiguous_[outside]) and np.all(est.margin_[outside] < 0)
    # a point exactly on a hyperplane is off and flagged
    onplane = ReLUPolytopes(sequential([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]]),
                            bounds=None).fit(np.array([[0.0, 1.0], [1.0, 1.0]]))
    assert onplane.transform([[0.0, 1.0]])[0, 0] == 0 and onplane.ambiguous_.tolist() == [True,
                                                                                          False]
    # dead unit
    dead = sequential([[[1.0, 0.0], [0.0, 0.0]], [[1.0, 1.0]]], [[0.0, -1.0], [0.0]])
    assert ReLUPolytopes(dead, bounds=None).fit(X).unit_activation_rate_[1] == 0
    # float32 networks are analysed in float64
    f32 = ReLUPolytopes(gaussian_net((2, 4, 1), seed=0).float(), bounds=None).fit(X)
    assert f32.network_.weights[0].dtype == np.float64


def test_bad_inputs(data):
    X, y = data
    est = ReLUPolytopes(gaussian_net((3, 5, 1), seed=0))
    check_bad_inputs(est, X, cases=("nan", "inf", "ndim", "few_samples", "unfitted"),
                     min_samples=1)
    cases = [
        (dict(), X[:, :2], ValueError, "2 features.*expecting 3"),
        (dict(network=None), X, ValueError, "network=None"),
        (dict(network=nn.Sequential(nn.Linear(3, 2), nn.Tanh())), X, ValueError, "Tanh"),
        (dict(network=MLPClassifier((3,), activation="tanh", max_iter=5).fit(X, y)), X,
         ValueError, "activation='relu'"),
        (dict(bounds=(1, 0)), X, ValueError, "lo < hi"),
        (dict(bounds=(np.zeros(2), 1)), X, ValueError, r"shape \(3,\)"),
        (dict(bounds=(np.nan, 1)), X, ValueError, "finite"),
        (dict(bounds="range"), X, ValueError, "global_range"),
        (dict(), np.ones((5, 3)), ValueError, "degenerate"),
        (dict(region_stats=("volume",)), X, ValueError, "region_stats"),
        (dict(region_stats="chebyshev"), X, ValueError, "region_stats"),
        (dict(facet_method="qhull"), X, ValueError, "facet_method"),
        (dict(lp_solver="gurobi"), X, ValueError, "lp_solver"),
        (dict(tol=0), X, ValueError, "tol"),
    ]
    for params, Xb, exc, match in cases:
        with pytest.raises(exc, match=match):
            clone(est).set_params(**params).fit(Xb)
    with pytest.raises(NotFittedError, match="requires y"):
        ReLUPolytopes(MLPClassifier((3,))).fit(X)
    fitted = clone(est).fit(X)
    with pytest.raises(ValueError, match="3 features"):
        fitted.transform(X[:, :2])
    with pytest.raises(ValueError, match="exactly one"):
        fitted.polytope()


@given(arrays(np.float64, (6, 3), elements=st.floats(-1e3, 1e3)))
def test_bits_are_the_sign_of_the_preactivations(X):
    """Hypothesis: bits == (z > 0) layer by layer for any finite input."""
    net = gaussian_net((3, 4, 3, 1), seed=1)
    est = ReLUPolytopes(net, bounds=None).fit(X)
    u, expected = X, []
    for W, b in zip(est.network_.weights[:-1], est.network_.biases[:-1]):
        z = u @ W.T + b
        expected.append(z > 0)
        u = np.maximum(z, 0)
    np.testing.assert_array_equal(est.transform(X), np.hstack(expected).astype(np.uint8))


@given(st.integers(0, 5), st.integers(0, 2), st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_inputs_raise(i, j, value):
    X = np.random.default_rng(0).normal(size=(6, 3))
    X[i, j] = value
    est = ReLUPolytopes(gaussian_net((3, 4, 1), seed=1), bounds=None)
    with pytest.raises(ValueError, match="(?i)nan|inf"):
        est.fit(X)


def test_pipeline_gridsearch_pickle(data):
    X, y = data

    def scorer(est, X, y=None):
        return -est.hamming_at_radius(X, 0.1, random_state=0).mean()

    est = ReLUPolytopes(MLPClassifier((6,), max_iter=200, random_state=0), random_state=0)
    search = check_pipeline_gridsearch_pickle(
        est, X, y, param_grid={"network__hidden_layer_sizes": [(4,), (6,)]}, scoring=scorer)
    assert search.best_estimator_.n_hidden_units_ in (4, 6)
    torch_est = ReLUPolytopes(gaussian_net((3, 5, 1), seed=0)).fit(X)
    again = pickle.loads(pickle.dumps(torch_est))
    np.testing.assert_array_equal(again.transform(X), torch_est.transform(X))
    np.testing.assert_array_equal(clone(torch_est).fit(X).transform(X), torch_est.transform(X))


def test_table3_pipeline(data):
    """Spec 4.2: scaler -> bit strings of an MLP trained in fit -> 1-NN with Hamming distance."""
    X, y = data
    pipe = Pipeline([("scale", MinMaxScaler()),
                     ("bits", ReLUPolytopes(MLPClassifier((16, 16), max_iter=300,
                                                          random_state=0))),
                     ("knn", KNeighborsClassifier(1, metric="hamming"))])
    search = GridSearchCV(pipe, {"bits__network__hidden_layer_sizes": [(8,), (16, 16)]}, cv=2)
    search.fit(X, y)
    assert search.best_score_ > 0.6
