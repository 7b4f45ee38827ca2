"""CanonicalAdversarialDetector: sources, folding, integration and bad inputs."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from geolearn.representations import CanonicalAdversarialDetector, LinearEmbeddingMap
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


def canonical(n=80, d=6, shift=1.5, seed=0):
    """Clean rows around 0 and adversarial rows shifted along the first axis."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(2 * n, d))
    Z[n:, 0] += shift
    return Z, np.r_[np.zeros(n, int), np.ones(n, int)]


def source_of(Z, d_s=9, seed=1):
    """A source network's embeddings: an injective linear image of the canonical ones + noise."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(Z.shape[1], d_s))
    return Z @ A + 0.01 * rng.normal(size=(len(Z), d_s))


def test_bad_inputs():
    Z, t = canonical()
    check_bad_inputs(CanonicalAdversarialDetector(random_state=0), Z, t,
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"))


@pytest.mark.parametrize("labels, match", [(np.zeros(160, int), "exactly two classes"),
                                           (np.arange(160) % 3, "Only binary")])
def test_label_errors(labels, match):
    Z, _ = canonical()
    with pytest.raises(ValueError, match=match):
        CanonicalAdversarialDetector().fit(Z, labels)


def test_source_errors():
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(random_state=0)
    with pytest.raises(NotFittedError):
        det.decision_function(X_s, source="a")
    det.fit(Z, t)
    with pytest.raises(ValueError, match=r"source='a' has no map.*Known sources: \[\]"):
        det.decision_function(X_s, source="a")
    with pytest.raises(ValueError, match="X_canonical has 5 columns .* has 6"):
        det.fit_source("a", X_s, Z[:, :5])
    det.fit_source("a", X_s, Z)
    with pytest.raises(ValueError, match="source 'a' was mapped from 9-dimensional"):
        det.decision_function(X_s[:, :8], source="a")
    with pytest.raises(ValueError, match=r"source='b' has no map.*\['a'\]"):
        det.predict(X_s, source="b")
    X_nan = X_s.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        det.decision_function(X_nan, source="a")


def test_sources_before_fit_and_refit():
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(random_state=0).fit_source("a", X_s, Z)
    with pytest.raises(ValueError, match="X_canonical has 5 columns"):
        det.fit_source("b", X_s, Z[:, :5])
    det.fit(Z, t)
    assert list(det.maps_) == ["a"]
    det.fit(Z[::-1], t[::-1])  # same canonical dimension: the map is kept
    assert list(det.maps_) == ["a"]
    with pytest.warns(UserWarning, match=r"dropping the maps of sources \['a'\]"):
        det.fit(Z[:, :4], t)
    assert det.maps_ == {}


def test_mapped_scores_are_the_canonical_scores_of_the_mapped_rows():
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(random_state=0).fit(Z, t).fit_source("a", X_s, Z)
    mapped = det.maps_["a"].transform(X_s)
    np.testing.assert_array_equal(det.decision_function(X_s, source="a"),
                                  det.decision_function(mapped))
    np.testing.assert_array_equal(det.predict(X_s, source="a"), det.predict(mapped))
    # an injective source map keeps the detection as good as in the canonical space
    assert det.score(X_s, t, source="a") == pytest.approx(det.score(Z, t), abs=0.01)
    assert det.score(Z, t) == pytest.approx(roc_auc_score(t, det.decision_function(Z)))


def test_any_two_labels_and_the_adversarial_class():
    Z, t = canonical()
    names = np.array(["clean", "fgsm"])[t]
    det = CanonicalAdversarialDetector(random_state=0).fit(Z, names)
    assert list(det.classes_) == ["clean", "fgsm"]
    ref = CanonicalAdversarialDetector(random_state=0).fit(Z, t)
    np.testing.assert_allclose(det.decision_function(Z), ref.decision_function(Z))
    assert set(det.predict(Z)) <= {"clean", "fgsm"}
    assert det.score(Z, names) == pytest.approx(ref.score(Z, t))


def test_custom_detector_and_mapper():
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(detector=LogisticRegression(), mapper=Ridge(alpha=1e-6),
                                       C=123.0).fit(Z, t).fit_source("a", X_s, Z)
    assert isinstance(det.detector_, LogisticRegression) and det.detector_.C == 1.0
    assert isinstance(det.maps_["a"], Ridge)
    proba = det.predict_proba(X_s, source="a")
    assert proba.shape == (len(Z), 2) and np.allclose(proba.sum(1), 1)
    w, b = det.source_linear_detector("a")
    np.testing.assert_allclose(X_s @ w + b, det.decision_function(X_s, source="a"), atol=1e-9)
    assert not hasattr(CanonicalAdversarialDetector(), "predict_proba")
    assert not hasattr(CanonicalAdversarialDetector().fit(Z, t), "predict_proba")


@pytest.mark.parametrize("standardize", [True, False])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_folded_source_detector(standardize, fit_intercept):
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(standardize=standardize, mapper=LinearEmbeddingMap(
        fit_intercept=fit_intercept), random_state=0).fit(Z, t).fit_source("a", X_s, Z)
    w, b = det.source_linear_detector("a")
    np.testing.assert_allclose(X_s @ w + b, det.decision_function(X_s, source="a"),
                               rtol=1e-9, atol=1e-9)


def test_folding_needs_a_linear_detector():
    Z, t = canonical()
    det = CanonicalAdversarialDetector(detector=SVC()).fit(Z, t).fit_source("a", Z, Z)
    with pytest.raises(TypeError, match="linear detector"):
        det.source_linear_detector("a")
    from sklearn.preprocessing import MinMaxScaler
    from sklearn.svm import LinearSVC

    det = CanonicalAdversarialDetector(detector=make_pipeline(MinMaxScaler(), LinearSVC()))
    det.fit(Z, t).fit_source("a", Z, Z)
    with pytest.raises(TypeError, match="StandardScaler"):
        det.source_linear_detector("a")
    with pytest.raises(ValueError, match="No map for source 'b'"):
        det.source_linear_detector("b")


def test_scaler_statistics_come_from_canonical_rows_only():
    Z, t = canonical()
    X_s = source_of(Z) * 100.0
    det = CanonicalAdversarialDetector(random_state=0).fit(Z, t)
    scaler = det.detector_[0]
    mean = scaler.mean_.copy()
    det.fit_source("a", X_s, Z).decision_function(X_s, source="a")
    np.testing.assert_array_equal(det.detector_[0].mean_, mean)
    np.testing.assert_allclose(mean, StandardScaler().fit(Z).mean_)


def test_convergence_warning_is_passed_through():
    from sklearn.exceptions import ConvergenceWarning

    Z, t = canonical(shift=0.1)
    with pytest.warns(ConvergenceWarning):
        CanonicalAdversarialDetector(standardize=False, max_iter=1, C=100.0).fit(Z * 50, t)


def test_pipeline_gridsearch_pickle():
    Z, t = canonical()
    search = check_pipeline_gridsearch_pickle(CanonicalAdversarialDetector(random_state=0), Z, t,
                                              param_grid={"C": [0.01, 1.0]}, scoring="roc_auc")
    assert search.best_score_ > 0.8


def test_clone_and_pickle_keep_source_outputs():
    Z, t = canonical()
    X_s = source_of(Z)
    det = CanonicalAdversarialDetector(random_state=0).fit(Z, t).fit_source("a", X_s, Z)
    loaded = pickle.loads(pickle.dumps(det))
    np.testing.assert_array_equal(loaded.decision_function(X_s, source="a"),
                                  det.decision_function(X_s, source="a"))
    assert not hasattr(clone(det), "maps_")


@settings(max_examples=15)
@given(seed=st.integers(0, 1000), d_s=st.integers(6, 12), scale=st.floats(0.1, 10))
def test_folding_identity_holds_for_random_sources(seed, d_s, scale):
    Z, t = canonical(seed=seed)
    X_s = scale * source_of(Z, d_s=d_s, seed=seed + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = CanonicalAdversarialDetector(random_state=0).fit(Z, t).fit_source("s", X_s, Z)
    w, b = det.source_linear_detector("s")
    ref = det.decision_function(X_s, source="s")
    np.testing.assert_allclose(X_s @ w + b, ref, atol=1e-9 * max(1.0, np.abs(ref).max()))
