"""LinearEmbeddingMap and embedding_mse: solvers, weights, integration and bad inputs."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from geolearn.representations import LinearEmbeddingMap, embedding_mse
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


def paired(m=60, d_a=8, d_b=5, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d_a))
    M = rng.normal(size=(d_b, d_a))
    return X, X @ M.T + noise * rng.normal(size=(m, d_b)), M


def test_bad_inputs():
    X, Y, _ = paired()
    check_bad_inputs(LinearEmbeddingMap(), X, Y,
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"))


@pytest.mark.parametrize(
    "Y_bad, match",
    [
        (lambda Y: Y[:-1], "inconsistent numbers of samples"),
        (lambda Y: Y[:, 0], "2-D array"),
        (lambda Y: np.where(np.arange(Y.size).reshape(Y.shape) == 3, np.nan, Y), "NaN"),
        (lambda Y: None, "requires y"),
    ],
)
def test_target_errors(Y_bad, match):
    X, Y, _ = paired()
    with pytest.raises(ValueError, match=match):
        LinearEmbeddingMap().fit(X, Y_bad(Y))


@pytest.mark.parametrize("params, match", [({"alpha": -1.0}, "alpha"), ({"solver": "qr"}, "solver"),
                                           ({"batch_size": 0}, "batch_size")])
def test_parameter_errors(params, match):
    X, Y, _ = paired()
    with pytest.raises(ValueError, match=match):
        LinearEmbeddingMap(**params).fit(X, Y)


def test_transform_checks_the_source_dimension():
    X, Y, _ = paired()
    emap = LinearEmbeddingMap().fit(X, Y)
    with pytest.raises(ValueError, match="8 features"):
        emap.transform(X[:, :-1])
    with pytest.raises(ValueError, match="has 5"):
        emap.inverse_transform(Y[:, :-1])


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 2.0])
def test_matches_sklearn_linear_models(alpha, fit_intercept):
    X, Y, _ = paired()
    ref = (Ridge(alpha=alpha, fit_intercept=fit_intercept) if alpha
           else LinearRegression(fit_intercept=fit_intercept)).fit(X, Y)
    for solver in ("auto", "svd", "cholesky"):
        emap = LinearEmbeddingMap(alpha=alpha, fit_intercept=fit_intercept, solver=solver)
        emap.fit(X, Y)
        np.testing.assert_allclose(emap.coef_, ref.coef_, atol=1e-10)
        np.testing.assert_allclose(emap.intercept_, np.broadcast_to(ref.intercept_, (5,)),
                                   atol=1e-10)
        assert emap.score(X, Y) == pytest.approx(ref.score(X, Y), abs=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_sample_weight_equals_repeated_rows_and_matches_ridge(fit_intercept):
    X, Y, _ = paired()
    w = np.random.default_rng(1).integers(0, 4, len(X))
    weighted = LinearEmbeddingMap(alpha=0.7, fit_intercept=fit_intercept).fit(X, Y, w)
    repeated = LinearEmbeddingMap(alpha=0.7, fit_intercept=fit_intercept).fit(
        np.repeat(X, w, axis=0), np.repeat(Y, w, axis=0))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-10)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-10)
    ridge = Ridge(alpha=0.7, fit_intercept=fit_intercept).fit(X, Y, sample_weight=w)
    np.testing.assert_allclose(weighted.coef_, ridge.coef_, atol=1e-10)


def test_rank_and_warning_only_for_a_genuinely_underdetermined_map():
    """Dead units (all-zero columns) lower the rank harmlessly; collinear live columns do not."""
    X, Y, _ = paired()
    dead = np.c_[X, np.zeros((len(X), 3))]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        emap = LinearEmbeddingMap().fit(dead, Y)
    assert emap.rank_ == 8 and np.all(emap.coef_[:, 8:] == 0)
    collinear = np.c_[X, X[:, :1] + X[:, 1:2]]
    with pytest.warns(UserWarning, match="rank 8 < 9"):
        LinearEmbeddingMap().fit(collinear, Y)
    assert LinearEmbeddingMap(alpha=1.0).fit(X, Y).rank_ is None


def test_float32_embeddings_are_solved_in_float64():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(200, 6))
    X = np.c_[base, base[:, :1] + 1e-3 * rng.normal(size=(200, 1))].astype(np.float32)
    Y = X.astype(np.float64) @ rng.normal(size=(7, 3))
    emap = LinearEmbeddingMap().fit(X, Y)
    ref = LinearEmbeddingMap().fit(X.astype(np.float64), Y)
    # solved in float64; the float32 input's image is rounded to float32 at the end
    assert emap.coef_.dtype == np.float64 and emap.transform(X).dtype == np.float32
    np.testing.assert_array_equal(emap.coef_, ref.coef_)
    assert emap.train_mse_ < 1e-20


def test_batched_transform_equals_one_product():
    X, Y, _ = paired()
    one = LinearEmbeddingMap(fit_intercept=True).fit(X, Y)
    batched = LinearEmbeddingMap(fit_intercept=True, batch_size=7).fit(X, Y)
    np.testing.assert_allclose(batched.transform(X), one.transform(X), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(one.predict(X), one.transform(X))


def test_inverse_transform_recovers_sources_for_full_column_rank():
    X, _, M = paired(d_a=4, d_b=6)
    emap = LinearEmbeddingMap(fit_intercept=True).fit(X, X @ M.T + 3.0)
    np.testing.assert_allclose(emap.inverse_transform(emap.transform(X)), X, atol=1e-10)


def test_train_mse_and_fit_transform():
    X, Y, _ = paired()
    emap = LinearEmbeddingMap()
    Y_hat = emap.fit_transform(X, Y)
    np.testing.assert_allclose(Y_hat, emap.transform(X))
    assert emap.train_mse_ == pytest.approx(np.mean((Y_hat - Y) ** 2))
    assert emap.n_features_in_ == 8 and emap.n_targets_ == 5


def test_pipeline_gridsearch_pickle():
    X, Y, _ = paired()
    search = check_pipeline_gridsearch_pickle(LinearEmbeddingMap(), X, Y,
                                              param_grid={"alpha": [0.0, 10.0, 1000.0]})
    assert search.best_params_["alpha"] < 1000.0


def test_grouped_cross_validation_of_alpha():
    """Clean and adversarial rows of one image share a group, so no fold sees both."""
    X, Y, _ = paired(m=40)
    X2, Y2 = np.r_[X, X + 0.01], np.r_[Y, Y]
    groups = np.r_[np.arange(40), np.arange(40)]
    search = GridSearchCV(LinearEmbeddingMap(), {"alpha": [0.1, 1.0]},
                          scoring="neg_mean_squared_error", cv=GroupKFold(4))
    search.fit(X2, Y2, groups=groups)
    assert np.all(search.cv_results_["mean_test_score"] < 0)


def test_frozen_map_in_a_pipeline_is_not_refitted():
    X, Y, _ = paired()
    emap = LinearEmbeddingMap().fit(X, Y)
    coef = emap.coef_.copy()
    labels = (Y[:, 0] > 0).astype(int)
    pipe = make_pipeline(FrozenEstimator(emap), LinearSVC(random_state=0)).fit(X, labels)
    np.testing.assert_array_equal(emap.coef_, coef)
    np.testing.assert_array_equal(pipe.decision_function(X),
                                  pipe[-1].decision_function(emap.transform(X)))
    assert pickle.loads(pickle.dumps(pipe)).score(X, labels) == pipe.score(X, labels)


@settings(max_examples=20)
@given(m=st.integers(3, 30), d_a=st.integers(1, 6), d_b=st.integers(1, 4),
       seed=st.integers(0, 1000), fit_intercept=st.booleans())
def test_exact_maps_are_recovered_and_row_order_is_irrelevant(m, d_a, d_b, seed, fit_intercept):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d_a))
    M, b = rng.normal(size=(d_b, d_a)), rng.normal(size=d_b) * fit_intercept
    Y = X @ M.T + b
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        emap = LinearEmbeddingMap(fit_intercept=fit_intercept).fit(X, Y)
        perm = rng.permutation(m)
        shuffled = LinearEmbeddingMap(fit_intercept=fit_intercept).fit(X[perm], Y[perm])
    np.testing.assert_allclose(emap.transform(X), Y, atol=1e-8)
    np.testing.assert_allclose(shuffled.coef_, emap.coef_, atol=1e-8)
    if m - fit_intercept >= d_a:  # full column rank with probability 1
        np.testing.assert_allclose(emap.coef_, M, atol=1e-6)


@settings(max_examples=20)
@given(pos=st.integers(0, 59), col=st.integers(0, 7),
       value=st.sampled_from([np.nan, np.inf, -np.inf]), where=st.sampled_from(["X", "Y"]))
def test_non_finite_embeddings_raise(pos, col, value, where):
    X, Y, _ = paired()
    (X if where == "X" else Y)[pos, col % (8 if where == "X" else 5)] = value
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        LinearEmbeddingMap().fit(X, Y)


def test_embedding_mse_reductions_and_errors():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(10, 4)), rng.normal(size=(10, 4))
    from sklearn.metrics import mean_squared_error

    assert embedding_mse(A, B) == pytest.approx(mean_squared_error(A, B))
    assert embedding_mse(A, B, reduction="per_sample_sum") == pytest.approx(
        np.mean(np.sum((A - B) ** 2, axis=1)))
    with pytest.raises(ValueError, match="reduction"):
        embedding_mse(A, B, reduction="sum")
    with pytest.raises(ValueError, match="columns"):
        embedding_mse(A, B[:, :3])
    with pytest.raises(ValueError, match="inconsistent"):
        embedding_mse(A, B[:5])


@pytest.mark.parametrize("params", [{}, {"alpha": 1.0}, {"alpha": 1.0, "fit_intercept": True},
                                    {"alpha": 0.5, "solver": "svd"}])
@pytest.mark.parametrize("m", [60, 6])
@pytest.mark.filterwarnings("ignore:The source embeddings have rank")
def test_train_mse_from_the_solver_equals_the_explicit_residual(params, m):
    # gelsd's residual rows and the primal Gram identity replace a product with X; the
    # figure must be the explicit mean squared residual (m < d_A: the dual and
    # rank-deficient routes, which compute it explicitly)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, 8))
    Y = X @ rng.normal(size=(8, 5)) + 0.3 * rng.normal(size=(m, 5)) + 1.0
    emap = LinearEmbeddingMap(**params).fit(X, Y)
    explicit = np.mean((emap.transform(X) - Y) ** 2)
    assert emap.train_mse_ == pytest.approx(explicit, rel=1e-12, abs=1e-30)
