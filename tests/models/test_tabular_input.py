"""Images reach a model in the layout it takes, decided from the model, never from its errors."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from geolearn.models import fit_or_use
from geolearn.models._internal import respond, tabular_input

RNG = np.random.RandomState(0)
IMAGES = RNG.rand(20, 1, 3, 3)
Y = np.arange(20) % 2


class ImageClassifier(ClassifierMixin, BaseEstimator):
    """Takes ``(n, C, H, W)`` images only; its own errors mention "dim" (image_dim)."""

    def fit(self, X, y):
        self._check(X)
        self.classes_ = np.unique(y)
        return self

    def decision_function(self, X):
        self._check(X)
        return X.mean(axis=(1, 2, 3))

    def _check(self, X):
        if X.ndim != 4:
            raise ValueError(f"X must be images: image_dim=4 expected, got ndim={X.ndim}")


class RowsRefusingClassifier(ImageClassifier):
    """Raises an unrelated ``ValueError`` that mentions "dim" on images, accepts flat rows."""

    def _check(self, X):
        if X.ndim != 2:
            raise ValueError("the embedding dim of this model must be even")


class MyLogisticRegression(LogisticRegression):
    """A user's subclass: its fit is still scikit-learn's, which takes tables only."""


def _pool(X):
    return X.mean(axis=(2, 3))  # (n, C, H, W) -> (n, C): fails on flat rows


@pytest.mark.parametrize("model", [
    LogisticRegression(),
    MyLogisticRegression(),
    make_pipeline(StandardScaler(), LogisticRegression()),
    GridSearchCV(LogisticRegression(), {"C": [1.0]}, cv=2),
    FrozenEstimator(LogisticRegression()),
])
def test_scikit_learn_estimators_get_flat_rows(model):
    assert tabular_input(model, IMAGES).shape == (20, 9)


@pytest.mark.parametrize("model", [
    ImageClassifier(),
    make_pipeline(FunctionTransformer(_pool), LogisticRegression()),  # validates nothing
    make_pipeline(ImageClassifier()),
])
def test_other_models_get_images_as_they_are(model):
    assert tabular_input(model, IMAGES) is IMAGES


def test_flat_rows_and_lists_are_passed_unchanged():
    rows = IMAGES.reshape(20, -1)
    assert tabular_input(LogisticRegression(), rows) is rows
    listed = rows.tolist()
    assert tabular_input(LogisticRegression(), listed) is listed


def test_fit_or_use_fits_each_kind_in_its_layout():
    assert fit_or_use(LogisticRegression(), IMAGES, Y).n_features_in_ == 9
    pooled = fit_or_use(make_pipeline(FunctionTransformer(_pool), LogisticRegression()),
                        IMAGES, Y)
    assert pooled[-1].n_features_in_ == 1
    fit_or_use(ImageClassifier(), IMAGES, Y)  # would raise if it got flat rows


def test_a_models_own_error_mentioning_dim_propagates_unchanged():
    """Regression: any ValueError whose message held "dim" made geolearn call the model again
    with flat rows, hiding the model's own error (and fitting it on rows it had not asked for)."""
    with pytest.raises(ValueError, match="the embedding dim of this model must be even"):
        fit_or_use(RowsRefusingClassifier(), IMAGES, Y)
    fitted = RowsRefusingClassifier().fit(IMAGES.reshape(20, -1), Y)
    with pytest.raises(ValueError, match="the embedding dim of this model must be even"):
        respond(fitted, "decision_function", IMAGES)


def test_respond_reads_images_in_each_models_layout():
    clf = LogisticRegression().fit(IMAGES.reshape(20, -1), Y)
    np.testing.assert_array_equal(respond(clf, "decision_function", IMAGES),
                                  respond(clf, "decision_function", IMAGES.reshape(20, -1)))
    out = respond(ImageClassifier().fit(IMAGES, Y), "decision_function", IMAGES)
    np.testing.assert_allclose(out[:, 0], IMAGES.mean(axis=(1, 2, 3)))
