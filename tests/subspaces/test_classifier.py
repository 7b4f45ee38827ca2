"""SVBFClassifier (nearest variety) and CentroidSoftmaxClassifier (centroid head)."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from geolearn.subspaces import (
    SVBF,
    CentroidSoftmaxClassifier,
    SubspaceEmbedding,
    SVBFClassifier,
    principal_angles,
)
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

from ._data import orth


def planted_classes(n=12, per_class=10, l=3, n_classes=3, seed=0):
    """Sets of class j contain a random unit vector of a class line ``e_j``."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for j in range(n_classes):
        for _ in range(per_class):
            X.append(orth(np.column_stack([np.eye(n)[j], rng.standard_normal((n, l - 1))])))
            y.append(j)
    return np.stack(X), np.array(y)


def test_nearest_variety_follows_the_smallest_first_angle():
    X, y = planted_classes()
    clf = SVBFClassifier(n_components=1, n_init=1, random_state=0).fit(X, y)
    assert clf.bases_.shape == (3, 12, 1) and len(clf.estimators_) == 3
    Xt, yt = planted_classes(seed=1)
    first = np.stack([principal_angles(Xt, K)[:, 0] for K in clf.bases_], axis=1)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[np.argmin(first, axis=1)])
    assert clf.score(Xt, yt) == 1.0
    for metric in ("geodesic", "cos2", "cos"):
        same = clf.set_params(metric=metric).predict(Xt)
        np.testing.assert_array_equal(same, clf.classes_[np.argmin(first, axis=1)])
    proba = clf.predict_proba(Xt)
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), np.argmax(clf.decision_function(Xt),
                                                                     axis=1))


def test_binary_decision_function_and_string_labels():
    X, y = planted_classes(n_classes=2)
    labels = np.array(["cat", "dog"])[y]
    clf = SVBFClassifier(n_components=1, n_init=1, metric="cos2", temperature=0.1).fit(X, labels)
    dec = clf.decision_function(X)
    assert dec.shape == (len(X),)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(dec > 0).astype(int)])
    # cos2: predict_proba is the softmax of the per-class fit over the temperature
    fits = np.stack([est.score_samples(X) for est in clf.estimators_], axis=1)
    want = np.exp(fits / 0.1) / np.exp(fits / 0.1).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(clf.predict_proba(X), want, atol=1e-12)


def test_classifier_bad_inputs():
    X, y = planted_classes(n_classes=2, per_class=5)
    check_bad_inputs(SVBFClassifier(n_components=1, n_init=1), X, y, min_samples=2)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SVBFClassifier(n_components=1).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="requires y"):
        SVBFClassifier(n_components=1).fit(X, None)
    with pytest.raises(ValueError, match="zero on every set"):
        SVBFClassifier(n_components=1).fit(X, y, sample_weight=(y == 0).astype(float))
    clf = SVBFClassifier(n_components=1, n_init=1).fit(X, y)
    with pytest.raises(ValueError, match="expecting 12 features"):
        clf.predict(X[:, :10])


def test_classifier_shares_svbfs_parameters():
    """SVBF declares the parameters SVBFClassifier shares: same defaults (but the working
    dimension, 4 for the classifier), same constraints, and a class variety gets each one
    as set on the classifier."""
    import inspect

    own = inspect.signature(SVBFClassifier).parameters
    shared = [p for p in inspect.signature(SVBF).parameters.values() if p.name in own]
    assert len(shared) == 20
    for p in shared:
        if p.name != "n_components":
            assert own[p.name].default == p.default, p.name
        assert (SVBFClassifier._parameter_constraints[p.name]
                == SVBF._parameter_constraints[p.name]), p.name
    X, y = planted_classes(n_classes=2, per_class=6)
    clf = SVBFClassifier(n_components=1, n_init=2, tol=1e-6, shift=1e-5).fit(X, y)
    assert clf.get_params()["tol"] == 1e-6
    for est in clf.estimators_:
        assert (est.n_init, est.tol, est.shift, est.input_type) == (2, 1e-6, 1e-5, "basis")


def test_classifier_pipeline_gridsearch_pickle():
    rng = np.random.default_rng(0)
    X, y = planted_classes(n_classes=2, per_class=8)
    raw = X @ rng.standard_normal((3, 3))                  # raw sets with the same spans
    pipe = make_pipeline(SubspaceEmbedding(n_dims=3), SVBFClassifier(n_components=1, n_init=1))
    search = GridSearchCV(pipe, {"svbfclassifier__n_components": [1, 2],
                                 "subspaceembedding__n_dims": [2, 3]}, cv=2).fit(raw, y)
    assert search.best_score_ == 1.0
    check_pipeline_gridsearch_pickle(SVBFClassifier(n_components=1, n_init=1, random_state=0),
                                     X, y, param_grid={"n_components": [1, 2]})


def test_algorithm_three_pipeline():
    X, y = planted_classes(n_classes=2, per_class=15)
    pipe = make_pipeline(SVBF(n_components=2, random_state=0),
                         CentroidSoftmaxClassifier(max_epochs=200, random_state=0)).fit(X, y)
    assert pipe.score(X, y) == 1.0


def test_centroid_head_is_sign_invariant_and_learns_directions():
    rng = np.random.default_rng(0)
    angle = rng.uniform(-0.3, 0.3, 60) + np.repeat([0.0, np.pi / 2], 30)
    B = np.column_stack([np.cos(angle), np.sin(angle)]) * rng.choice([-1, 1], (60, 1))
    y = np.repeat([0, 1], 30)
    clf = CentroidSoftmaxClassifier(random_state=0).fit(B, y)
    np.testing.assert_allclose(np.linalg.norm(clf.centroids_, axis=1), 1)
    np.testing.assert_allclose(clf.predict_proba(B), clf.predict_proba(-B))
    assert clf.score(B, y) == 1.0
    assert np.abs(clf.centroids_ @ [1.0, 0.0]).argmax() == 0
    assert clf.history_ is clf.net_.history and len(clf.history_) == clf.n_iter_
    check_bad_inputs(CentroidSoftmaxClassifier(max_epochs=20), B, y, min_samples=2)
