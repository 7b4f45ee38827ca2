"""RDMTransformer and WeightedRDMModel: closed forms, sklearn integration, bad inputs."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize, nnls
from scipy.spatial.distance import cdist
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from geolearn.representations import (
    RDMTransformer,
    WeightedRDMModel,
    category_rdms,
    compare_rdms,
    compute_rdm,
    condense_rdm,
    stack_condensed,
)
from geolearn.representations._rdm import METRICS
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


@pytest.fixture
def X():
    return np.random.default_rng(0).normal(size=(40, 8)) + 1.0


# ---- RDMTransformer ----

@pytest.mark.parametrize("metric", METRICS)
def test_fit_transform_is_the_rdm(X, metric):
    D = RDMTransformer(metric).fit_transform(X)
    np.testing.assert_allclose(D, compute_rdm(X, metric), atol=1e-12)


@pytest.mark.parametrize("metric, scipy_metric", [
    ("correlation", "correlation"), ("cosine", "cosine"), ("euclidean", "euclidean"),
    ("sqeuclidean_per_feature", "sqeuclidean")])
def test_transform_of_new_rows_matches_cdist(X, metric, scipy_metric):
    ref, new = X[:10], X[10:]
    D = RDMTransformer(metric).fit(ref).transform(new)
    expected = cdist(new, ref, scipy_metric)
    if metric == "sqeuclidean_per_feature":
        expected /= X.shape[1]
    np.testing.assert_allclose(D, expected, atol=1e-12)


def test_zscore_uses_the_reference_statistics(X):
    ref, new = X[:10], X[10:] * 3.0
    est = RDMTransformer("zscore_correlation").fit(ref)
    np.testing.assert_allclose(est.mean_, ref.mean(0))
    np.testing.assert_allclose(est.scale_, ref.std(0) + 1e-7)
    zn, zr = ((A - ref.mean(0)) / (ref.std(0) + 1e-7) for A in (new, ref))
    np.testing.assert_allclose(est.transform(new), cdist(zn, zr, "correlation"), atol=1e-12)


@pytest.mark.parametrize("metric", METRICS)
def test_rows_are_independent_of_the_batch(X, metric):
    est = RDMTransformer(metric).fit(X[:12])
    D = est.transform(X)
    for i in (0, 17, 39):
        np.testing.assert_allclose(est.transform(X[i:i + 1])[0], D[i], atol=1e-15)


def test_feature_names(X):
    est = RDMTransformer().fit(X[:3])
    assert est.get_feature_names_out().tolist() == ["dissim_ref0", "dissim_ref1", "dissim_ref2"]
    with pytest.raises(NotFittedError):
        RDMTransformer().get_feature_names_out()


def test_constant_rows_refused_at_fit_and_transform(X):
    bad = X.copy()
    bad[4] = 2.0
    with pytest.raises(ValueError, match=r"constant row\(s\) \(indices \[4\]\)"):
        RDMTransformer().fit(bad)
    with pytest.raises(ValueError, match=r"constant row\(s\) \(indices \[4\]\)"):
        RDMTransformer().fit(X).transform(bad)
    # euclidean is defined everywhere
    RDMTransformer("euclidean").fit(bad).transform(bad)


def test_one_feature_refused_for_correlation():
    with pytest.raises(ValueError, match=r"1 feature\(s\)"):
        RDMTransformer().fit(np.arange(5.0)[:, None])


@pytest.mark.parametrize("metric, min_samples", [("correlation", 1),
                                                 ("zscore_correlation", 2)])
def test_transformer_bad_inputs(X, metric, min_samples):
    check_bad_inputs(RDMTransformer(metric), X, cases=("nan", "inf", "ndim", "few_samples",
                                                       "unfitted"), min_samples=min_samples)


def test_unknown_metric_refused_in_fit(X):
    est = RDMTransformer("manhattan")  # stored unchanged
    with pytest.raises(ValueError, match="metric"):
        est.fit(X)


def test_transformer_in_pipeline_gridsearch_pickle(X):
    y = (X[:, 0] > 1.0).astype(int)
    pipe = make_pipeline(RDMTransformer(), LogisticRegression(max_iter=2000))
    search = check_pipeline_gridsearch_pickle(
        pipe, X, y, param_grid={"rdmtransformer__metric": ["correlation", "euclidean"]})
    assert search.best_score_ > 0.6


# ---- WeightedRDMModel ----

def _design(labels=(0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2)):
    rdms, _ = category_rdms(np.array(labels))
    return stack_condensed(rdms)


def test_recovers_noise_free_weights():
    C = _design()
    theta = np.array([2.0, 1.0, 2.0])
    est = WeightedRDMModel().fit(C, C @ theta)
    np.testing.assert_allclose(est.coef_, theta / 3.0, atol=1e-12)
    assert est.score(C, C @ theta) == pytest.approx(1.0)
    raw = WeightedRDMModel(normalize=False).fit(C, C @ theta)
    np.testing.assert_allclose(raw.coef_, theta, atol=1e-12)


def test_tighter_category_gets_the_larger_weight():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 10)
    # category 0 tightly clustered, category 2 loosely
    centres = rng.normal(size=(3, 20)) * 3
    spread = np.array([0.3, 1.0, 3.0])[labels, None]
    V = centres[labels] + spread * rng.normal(size=(30, 20))
    rdms, _ = category_rdms(labels)
    coef = WeightedRDMModel().fit(stack_condensed(rdms), compute_rdm(V, condensed=True)).coef_
    assert coef[0] > coef[1] > coef[2]


@pytest.mark.parametrize("criterion", ["cosine", "pearson"])
def test_weights_maximise_the_criterion(criterion):
    rng = np.random.default_rng(1)
    C = _design()
    y = C @ np.array([1.0, 0.5, 2.0]) + 0.3 * rng.random(len(C))
    est = WeightedRDMModel(criterion=criterion).fit(C, y)
    assert np.linalg.norm(est.coef_) == pytest.approx(1.0)
    method = "cosine" if criterion == "cosine" else "pearson"
    ours = compare_rdms(C @ est.coef_, y, method)
    assert est.score(C, y) == pytest.approx(ours, abs=1e-12)
    # no other direction does better (BFGS from random starts, rsatoolbox's fitter)
    best = max(-minimize(lambda t: -compare_rdms(np.abs(C @ t) + 1e-9, y, method),
                         rng.random(3), method="BFGS").fun for _ in range(4))
    assert ours >= best - 1e-7


def test_pearson_ignores_offsets_of_y():
    C = _design()
    y = C @ np.array([1.0, 0.5, 2.0]) + np.random.default_rng(0).random(len(C))
    a = WeightedRDMModel(criterion="pearson").fit(C, y).coef_
    b = WeightedRDMModel(criterion="pearson").fit(C, 3.0 + y).coef_
    np.testing.assert_allclose(a, b, atol=1e-10)


def test_nonnegative_is_nnls():
    rng = np.random.default_rng(2)
    C = _design()
    y = C @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.random(len(C))
    est = WeightedRDMModel(nonnegative=True, normalize=False).fit(C, y)
    np.testing.assert_allclose(est.coef_, nnls(C, y)[0], atol=1e-12)
    assert np.all(est.coef_ >= 0)
    assert np.any(WeightedRDMModel().fit(C, y).coef_ < 0)


def test_score_is_not_r2_and_refuses_weights():
    C = _design()
    y = 5.0 + C @ np.array([1.0, 0.5, 2.0])
    est = WeightedRDMModel(criterion="pearson").fit(C, y)
    assert est.score(C, y) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="sample_weight"):
        est.score(C, y, sample_weight=np.ones(len(y)))
    with pytest.raises(ValueError, match="constant"):
        est.score(C, np.ones(len(y)))


def test_weighted_model_bad_inputs():
    C = _design()
    y = C @ np.array([1.0, 0.5, 2.0])
    check_bad_inputs(WeightedRDMModel(), C, y, cases=("nan", "inf", "ndim", "unfitted"))


def test_weighted_model_pipeline_gridsearch_pickle():
    # continuous component RDMs: every fold of pairs has varying predictions
    rng = np.random.default_rng(0)
    C = np.column_stack([compute_rdm(rng.normal(size=(12, 4)), condensed=True)
                         for _ in range(3)])
    y = C @ np.array([1.0, 0.5, 2.0]) + 0.2 * rng.random(len(C))
    check_pipeline_gridsearch_pickle(WeightedRDMModel(), C, y,
                                     param_grid={"criterion": ["cosine", "pearson"]})


@given(st.lists(st.floats(0.1, 5), min_size=3, max_size=3), st.floats(0.1, 10))
def test_weights_are_scale_free(theta, scale):
    """The criterion ignores the scale of the data RDM: so do the normalised weights."""
    C = _design()
    y = C @ np.array(theta)
    a = WeightedRDMModel().fit(C, y).coef_
    b = WeightedRDMModel().fit(C, scale * y).coef_
    np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(a, np.array(theta) / np.linalg.norm(theta), atol=1e-9)


def test_condensed_data_rdm_round_trip():
    C = _design()
    rdms, _ = category_rdms(np.array((0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2)))
    np.testing.assert_array_equal(C[:, 2], condense_rdm(rdms[2]))
