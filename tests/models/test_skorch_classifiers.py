"""The classifiers trained through ``SkorchClassifierMixin`` validate, seed and fail alike.

Regressions of the reliability audit: ``ManifoldAdversarialClassifier``,
``RDMRegularizedClassifier`` and ``SVBFNetClassifier`` were skorch nets of their own, so they
raised torch's errors on float64 rows ("mat1 and mat2 must have the same dtype") and on
DataFrames ("forward() got an unexpected keyword argument 'f0'"), trained on string labels or a
single class, accepted ``max_epochs=-1``, stayed "fitted" after a failed fit, and two of them
drew their initial weights from torch's global generator.
"""

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from geolearn.adversarial import ManifoldAdversarialClassifier
from geolearn.representations import RDMRegularizedClassifier, categorical_rdm
from geolearn.subspaces import SVBFNetClassifier


def _mlp():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _table(n=40, seed=0):
    """Float64 unit rows of 4 features (one-vector sets for SVBFNetClassifier), 2 classes."""
    X = np.random.default_rng(seed).normal(size=(n, 4))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (np.abs(X[:, 0]) > 0.5).astype(int)


def _adversarial(**kw):
    return ManifoldAdversarialClassifier(_mlp(), adversary="ambient", adv_n_steps=2,
                                         max_epochs=3, **kw)


def _rdm(**kw):
    X, y = _table()
    return RDMRegularizedClassifier(_mlp(), rdm_layer="1", rdm_stimuli=X[:10],
                                    rdm_target=categorical_rdm(y[:10]), rdm_batch_size=5,
                                    max_epochs=3, **kw)


def _svbf_net(**kw):
    return SVBFNetClassifier(n_components=1, lr=0.05, max_epochs=3, **kw)


ESTIMATORS = {"ManifoldAdversarialClassifier": _adversarial,
              "RDMRegularizedClassifier": _rdm, "SVBFNetClassifier": _svbf_net}


@pytest.fixture(params=ESTIMATORS)
def make(request):
    return ESTIMATORS[request.param]


def test_float64_rows_are_converted_and_nan_is_refused(make):
    X, y = _table()
    clf = make().fit(X, y)
    assert clf.predict(X).shape == (len(X),)
    assert np.allclose(clf.predict_proba(X).sum(1), 1, atol=1e-6)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        make().fit(X_nan, y)
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(X_nan)


def test_dataframes_are_read_as_their_values(make):
    X, y = _table()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(4)])
    clf = make(random_state=0).fit(frame, y)
    np.testing.assert_array_equal(clf.predict(frame), make(random_state=0).fit(X, y).predict(X))
    assert list(clf.feature_names_in_) == list(frame.columns)


def test_string_labels_are_the_classes(make):
    X, y = _table()
    labels = np.array(["no", "yes"])[y]
    clf = make(random_state=0).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])
    assert set(clf.predict(X)) <= {"no", "yes"}
    proba = clf.predict_proba(X)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(1)])


def test_one_class_and_a_negative_max_epochs_are_refused(make):
    X, y = _table()
    with pytest.raises(ValueError, match="at least 2 classes"):
        make().fit(X, np.zeros(len(X), int))
    with pytest.raises(ValueError, match="max_epochs"):
        make().set_params(max_epochs=-1).fit(X, y)


class _FailAtEpoch2(Callback):
    def on_epoch_end(self, net, **kwargs):
        if len(net.history) == 2:
            raise RuntimeError("disk full")


def test_a_fit_that_fails_midway_leaves_the_estimator_unfitted(make):
    X, y = _table()
    clf = make(callbacks=[_FailAtEpoch2()])
    with pytest.raises(RuntimeError, match="disk full"):
        clf.fit(X, y)
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    with pytest.raises(NotFittedError):
        clf.predict(X)


def test_refits_are_deterministic_whatever_torch_s_global_seed(make):
    X, y = _table()
    torch.manual_seed(1)
    a = make(random_state=0).fit(X, y).predict_proba(X)
    torch.manual_seed(2)
    clf = make(random_state=0)
    b = clf.fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(clf.fit(X, y).predict_proba(X), a)  # a refit starts afresh
    assert clf.history_ is clf.net_.history and len(clf.history_) == 3


def test_skorch_settings_and_warm_start_still_work(make):
    X, y = _table()
    clf = make(random_state=0, optimizer__weight_decay=0.1, warm_start=True)
    assert clf.get_params()["optimizer__weight_decay"] == 0.1
    clf.fit(X, y)
    assert clf.net_.optimizer_.param_groups[0]["weight_decay"] == 0.1
    clf.fit(X, y)
    assert len(clf.history_) == 6


def test_a_warm_fit_continues_with_the_settings_set_since(make):
    """A warm fit trains ``max_epochs`` more epochs at this fit's ``lr`` and ``batch_size``.

    Regression: skorch's ``partial_fit`` read the net's own settings, so the second fit
    trained 3 more epochs, at the first ``lr``, in one batch.
    """
    X, y = _table()
    clf = make(random_state=0, warm_start=True).fit(X, y)
    clf.set_params(max_epochs=5, lr=0.5, batch_size=7).fit(X, y)
    assert len(clf.history_) == 3 + 5
    assert clf.net_.optimizer_.param_groups[0]["lr"] == 0.5
    assert len(clf.history_[-1, "batches"]) == 6  # ceil(40 / 7)
