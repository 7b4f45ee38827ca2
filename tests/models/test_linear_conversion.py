"""scikit-learn linear models and their pipelines, converted to torch exactly.

What is checked against scikit-learn: the outputs (``decision_function``,
``predict_proba``, centred log-probabilities, ``predict``) to 1e-10 in float64; the
input gradients against their closed forms (``w`` for scores, the softmax and sigmoid
derivatives for probabilities) and against central differences of scikit-learn's own
outputs; and the same for random pipelines of scalers, PCAs and linear models
(hypothesis).
"""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import (
    LinearRegression,
    LogisticRegression,
    Ridge,
    RidgeClassifier,
    SGDClassifier,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, Normalizer, StandardScaler
from sklearn.svm import SVC, LinearSVC

from geolearn.models import as_model, linear_to_torch
from geolearn.models._internal import respond

# SGD regularised enough that some probabilities are not saturated (see _resolved_rows)
CLASSIFIERS = {
    "logistic": lambda: LogisticRegression(max_iter=1000),
    "linear_svc": lambda: LinearSVC(max_iter=5000),
    "sgd_hinge": lambda: SGDClassifier(alpha=0.01, random_state=0),
    "sgd_log": lambda: SGDClassifier(loss="log_loss", alpha=0.01, random_state=0),
    "sgd_huber": lambda: SGDClassifier(loss="modified_huber", alpha=0.01, random_state=0),
    "ridge_classifier": lambda: RidgeClassifier(),
}
REGRESSORS = {"ridge": lambda: Ridge(), "linear_regression": lambda: LinearRegression()}
TRANSFORMS = {
    "standard": lambda d: StandardScaler(),
    "minmax": lambda d: MinMaxScaler(),
    "pca": lambda d: PCA(max(1, d - 1)),
    "pca_whiten": lambda d: PCA(max(1, d - 1), whiten=True),
}


def _classification(n_samples, n_features, n_classes, seed):
    """Well-conditioned data with unequal feature scales and every class present."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)) * rng.uniform(0.5, 3.0, n_features)
    X += rng.normal(size=n_features)
    y = np.argmax(X @ rng.normal(size=(n_features, n_classes))
                  + rng.normal(size=(n_samples, n_classes)), axis=1)
    y[:n_classes] = np.arange(n_classes)
    return X, y


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short fits of SGD and LinearSVC on noisy labels
        return model.fit(X, y)


def _responses(model):
    if not hasattr(model, "decision_function"):
        return ["predict"]
    return ["decision_function"] + (["predict_proba", "clr_proba"]
                                    if hasattr(model, "predict_proba") else [])


def _central_differences(model, response, X, h=None):
    """``(n, n_outputs, n_features)``: scikit-learn's own outputs differentiated numerically.

    The default step is 1e-4 over the steepest slope of the model's linear scores (measured by
    scikit-learn with a unit step, exact for an affine map): a step of the scores of 1e-4,
    where the curvature of the probabilities costs about 1e-8 of their gradient; extrapolated
    from that step and its half.
    """
    if h is None:
        scores = "decision_function" if hasattr(model, "decision_function") else "predict"
        h = 1e-4 / max(1.0, np.abs(_central_differences(model, scores, X[:1], h=1.0)).max())
    def quotient(h):
        cols = []
        for i in range(X.shape[1]):
            e = np.zeros(X.shape[1])
            e[i] = h
            cols.append((respond(model, response, X + e) - respond(model, response, X - e))
                        / (2 * h))
        return np.stack(cols, axis=-1)

    # Richardson's extrapolation of two steps: the h^2 term of the quotient's error cancels,
    # which near-saturated log-probabilities (a large third derivative) would otherwise show
    return (4 * quotient(h / 2) - quotient(h)) / 3


def _resolved_rows(model, response, X, floor=1e-3):
    """Rows whose outputs scikit-learn computes to more digits than a difference quotient needs.

    A binary probability ``1 - expit(z)`` of a large score keeps few digits (the difference
    of two numbers near 1), so the differences of its logarithm are noise; the gradients of
    such saturated rows are checked against their closed forms instead.
    """
    if response not in ("predict_proba", "clr_proba"):
        return np.ones(len(X), bool)
    P = respond(model, "predict_proba", X)
    clipped = (P == 0) | (P == 1)  # modified Huber's clipped scores: exact, and flat
    return np.all(clipped | ((P > floor) & (P < 1 - floor)), axis=1)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", CLASSIFIERS)
@pytest.mark.parametrize("transforms", [(), ("standard", "pca_whiten"), ("minmax", "pca")])
def test_classifiers_and_their_pipelines_are_exact(name, n_classes, transforms):
    X, y = _classification(80, 5, n_classes, seed=n_classes)
    model = _fit(make_pipeline(*[TRANSFORMS[t](5) for t in transforms], CLASSIFIERS[name]()),
                 X, y)
    model = model if transforms else model[-1]
    for response in _responses(model):
        m = as_model(model, response=response)
        assert m.kind == ("pipeline" if transforms else "sklearn-linear")
        assert m.response == response and m.dtype == torch.float64 and m.differentiable
        np.testing.assert_allclose(m.forward(X), respond(model, response, X), rtol=0, atol=1e-10)
        rows = X[_resolved_rows(model, response, X)][:20]
        assert len(rows) >= 5
        fd = _central_differences(model, response, rows)
        np.testing.assert_allclose(m.jacobian(rows), fd, rtol=1e-5,
                                   atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_auto_is_resolve_responses_choice():
    X, y = _classification(60, 4, 3, seed=0)
    lr = LogisticRegression().fit(X, y)
    assert as_model(lr).response == "decision_function"
    np.testing.assert_allclose(as_model(lr).forward(X), lr.decision_function(X), atol=1e-12)
    reg = Ridge().fit(X, X[:, 0])
    assert as_model(reg).response == "predict"
    with pytest.raises(ValueError, match="only class labels"):
        as_model(lr, response="predict")
    with pytest.raises(ValueError, match="LinearSVC has no predict_proba"):
        as_model(LinearSVC().fit(X, y), response="predict_proba")


@pytest.mark.parametrize("name", REGRESSORS)
@pytest.mark.parametrize("n_targets", [1, 3])
def test_regressors_and_their_pipelines_are_exact(name, n_targets):
    X, _ = _classification(50, 4, 2, seed=1)
    Y = X @ np.random.default_rng(0).normal(size=(4, n_targets)) + 1.5
    Y = Y[:, 0] if n_targets == 1 else Y
    for model in (REGRESSORS[name](), make_pipeline(StandardScaler(), PCA(3, whiten=True),
                                                    REGRESSORS[name]())):
        model.fit(X, Y)
        m = as_model(model)
        out = m.forward(X)
        assert out.shape == (len(X), n_targets)
        np.testing.assert_allclose(out, model.predict(X).reshape(len(X), -1), rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.jacobian(X[:10]), _central_differences(model, "predict",
                                                                            X[:10]), atol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_decision_function_gradient_is_the_coefficient(n_classes):
    X, y = _classification(60, 4, n_classes, seed=2)
    for name in ("logistic", "linear_svc", "sgd_hinge", "ridge_classifier"):
        clf = _fit(CLASSIFIERS[name](), X, y)
        m = as_model(clf)
        W = np.atleast_2d(clf.coef_)  # a binary RidgeClassifier's is 1-D
        np.testing.assert_allclose(m.jacobian(X), np.broadcast_to(W, (len(X), *W.shape)),
                                   rtol=0, atol=1e-14)
        k = len(W) - 1
        np.testing.assert_allclose(m.input_gradient(X, targets=np.full(len(X), k)),
                                   np.broadcast_to(W[k], X.shape), rtol=0, atol=1e-14)


def test_pipeline_gradient_is_the_composed_linear_map():
    X, y = _classification(60, 5, 3, seed=3)
    pipe = make_pipeline(StandardScaler(), PCA(3, whiten=True), LogisticRegression()).fit(X, y)
    scaler, pca, lr = pipe[0], pipe[1], pipe[2]
    A = (pca.components_ / np.sqrt(pca.explained_variance_)[:, None]) / scaler.scale_
    np.testing.assert_allclose(as_model(pipe).jacobian(X[:7]),
                               np.broadcast_to(lr.coef_ @ A, (7, 3, 5)), rtol=1e-12, atol=1e-12)


def test_probability_gradients_are_the_softmax_and_sigmoid_derivatives():
    X, y = _classification(60, 4, 3, seed=4)
    lr = LogisticRegression().fit(X, y)
    P, W = lr.predict_proba(X), lr.coef_
    # d p_k / dx = p_k (w_k - sum_j p_j w_j)
    expected = P[:, :, None] * (W[None] - (P @ W)[:, None, :])
    np.testing.assert_allclose(as_model(lr, response="predict_proba").jacobian(X), expected,
                               rtol=0, atol=1e-12)
    binary = LogisticRegression().fit(X, y == 0)
    p = binary.predict_proba(X)[:, 1]
    dp = (p * (1 - p))[:, None] * binary.coef_[0]  # d sigmoid(w.x + b) / dx
    np.testing.assert_allclose(as_model(binary, response="predict_proba").jacobian(X),
                               np.stack([-dp, dp], axis=1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("loss, intercept", [("log_loss", -1000.0), ("modified_huber", -1000.0)])
def test_one_vs_rest_probabilities_all_zero_are_uniform(loss, intercept):
    """Where every one-vs-rest probability is 0, scikit-learn returns 1 / n_classes."""
    X, y = _classification(60, 4, 3, seed=5)
    sgd = SGDClassifier(loss=loss, random_state=0).fit(X, y)
    sgd.intercept_[:] = intercept
    P = sgd.predict_proba(X)
    np.testing.assert_array_equal(P, 1 / 3)  # the case is reached
    np.testing.assert_allclose(as_model(sgd, response="predict_proba").forward(X), P, atol=0)


def test_sparse_coefficients_and_frozen_estimators_convert():
    X, y = _classification(60, 4, 3, seed=6)
    sgd = SGDClassifier(penalty="l1", random_state=0).fit(X, y).sparsify()
    np.testing.assert_allclose(as_model(sgd).forward(X), sgd.decision_function(X), atol=1e-10)
    frozen = as_model(make_pipeline(StandardScaler(), FrozenEstimator(sgd.densify())).fit(X, y))
    assert frozen.kind == "pipeline"


def test_linear_to_torch_layers_and_errors():
    X, y = _classification(40, 3, 3, seed=7)
    lr = LogisticRegression().fit(X, y)
    names = lambda net: [n for n, _ in net.named_children()]  # noqa: E731
    assert names(linear_to_torch(lr)) == ["linear"]
    assert names(linear_to_torch(lr, response="clr_proba")) == ["linear", "out_activation", "clr"]
    sgd = SGDClassifier(loss="log_loss", random_state=0).fit(X, y)
    assert names(linear_to_torch(sgd, response="predict_proba")) == ["linear", "out_activation",
                                                                     "proba"]
    assert linear_to_torch(lr).linear.weight.dtype == torch.float32
    assert as_model(lr, dtype=torch.float32).dtype == torch.float32
    with pytest.raises(TypeError, match="estimator must be one of LogisticRegression"):
        linear_to_torch(SVC().fit(X, y))
    with pytest.raises(NotFittedError):
        linear_to_torch(LogisticRegression())
    with pytest.raises(ValueError, match="SGDClassifier has no predict_proba"):
        linear_to_torch(SGDClassifier().fit(X, y), response="predict_proba")


def test_a_pipeline_with_a_step_that_does_not_convert_stays_a_black_box():
    X, y = _classification(40, 3, 2, seed=8)
    pipe = make_pipeline(Normalizer(), PCA(2), LogisticRegression()).fit(X, y)
    m = as_model(pipe)
    assert m.kind == "black-box" and m.response == "decision_function"
    np.testing.assert_allclose(m.forward(X)[:, 0], pipe.decision_function(X))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), n_samples=st.integers(15, 60), n_features=st.integers(2, 6),
       n_outputs=st.integers(1, 4), steps=st.lists(st.sampled_from(sorted(TRANSFORMS)),
                                                   max_size=3),
       name=st.sampled_from(sorted(CLASSIFIERS) + sorted(REGRESSORS)),
       response_index=st.integers(0, 2))
def test_random_pipelines_outputs_and_gradients_equal(seed, n_samples, n_features, n_outputs,
                                                      steps, name, response_index):
    """Any pipeline of scalers and PCAs (whitened or not) before any linear model: the torch
    module's outputs equal scikit-learn's, and its Jacobians their central differences.
    ``n_outputs`` is the number of targets of a regressor, of classes (at least 2) of a
    classifier."""
    X, y = _classification(n_samples, n_features, max(n_outputs, 2), seed)
    if name in REGRESSORS:
        y = X @ np.random.default_rng(seed).normal(size=(n_features, n_outputs)) + y[:, None]
    transforms, d = [], n_features
    for step in steps:
        transforms.append(TRANSFORMS[step](d))
        d = max(1, d - 1) if step.startswith("pca") else d
    model = _fit(make_pipeline(*transforms, {**CLASSIFIERS, **REGRESSORS}[name]()), X, y)
    responses = _responses(model)
    response = responses[response_index % len(responses)]
    m = as_model(model, response=response)
    assert m.differentiable
    expected = respond(model, response, X)
    scale = max(1.0, np.abs(expected).max())
    np.testing.assert_allclose(m.forward(X), expected, rtol=0, atol=1e-10 * scale)
    rows = X[_resolved_rows(model, response, X)][:10]
    if len(rows):
        fd = _central_differences(model, response, rows)
        np.testing.assert_allclose(m.jacobian(rows), fd, rtol=1e-5,
                                   atol=1e-6 * max(1.0, np.abs(fd).max()))


def test_converted_models_take_images_as_rows():
    """As a black box does (``tabular_input``): images of as many pixels as features."""
    X, y = _classification(30, 16, 2, seed=9)
    lr = LogisticRegression().fit(X, y)
    m = as_model(lr)
    images = X.reshape(30, 1, 4, 4)
    np.testing.assert_allclose(m.forward(images)[:, 0], lr.decision_function(X), atol=1e-12)
    np.testing.assert_allclose(m.input_gradient(images), np.broadcast_to(
        lr.coef_.reshape(1, 1, 4, 4), images.shape), atol=1e-14)
    with pytest.raises(ValueError, match="X has 9 features, but LogisticRegression is expecting 16"):
        m.forward(np.zeros((2, 1, 3, 3)))


def test_a_pca_before_a_relu_mlp_folds_into_the_local_affine_maps():
    """PCA converts to an ``nn.Linear``, so the polytope tools fold it like a scaler."""
    from sklearn.neural_network import MLPClassifier

    from geolearn.polytopes import ReLUPolytopes

    X, y = _classification(60, 5, 2, seed=10)
    pipe = make_pipeline(StandardScaler(), PCA(3, whiten=True),
                         MLPClassifier((6,), max_iter=50, random_state=0)).fit(X, y)
    W, b = ReLUPolytopes(pipe).fit(X).local_affine_map(X)
    J = as_model(pipe, dtype=torch.float64).jacobian(X, layer="mlpclassifier.linear_1")
    np.testing.assert_allclose(W, J, rtol=1e-10, atol=1e-10)
