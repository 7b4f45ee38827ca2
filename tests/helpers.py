"""Checks every family reuses: bad inputs, sklearn integration, pickling.

Family tests call these with their own estimators and valid data, so every
estimator is held to the same contract.
"""

import pickle
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

OUTPUT_METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")

# Each message must name what is wrong: the non-finite value, the expected number of
# dimensions (sklearn's "Expected 2D array" counts), the parameter, the minimum (checked
# with its number in check_bad_inputs)
_MESSAGES = {
    "nan": r"(?i)\bnan\b|finite|infinity",
    "inf": r"(?i)\binf\b|finite|infinity",
    "ndim": r"(?i)expected 2D|2-D|\(n(_samples)?, |\(m, n\)|dimension|ndim|reshape",
    "image_shape": r"image_shape",
    "few_samples": r"(?i)(at least|minimum|fewer than|n_samples ?=|got)\D{0,40}{n}\b",
}

ALL_CASES = ("nan", "inf", "ndim", "image_shape", "few_samples", "unfitted")


def _with_value(X, value):
    X = np.array(X, dtype=float, copy=True)
    X.flat[0] = value
    return X


def _bad_X(case, X, estimator):
    if case == "nan":
        return _with_value(X, np.nan)
    if case == "inf":
        return _with_value(X, np.inf)
    if case == "ndim":
        return np.asarray(X).ravel()
    raise ValueError(case)


def check_bad_inputs(estimator, X, y=None, *, cases=ALL_CASES, min_samples=2, fit_kwargs=None):
    """Assert that each bad input raises a clear error naming what is wrong.

    Parameters
    ----------
    estimator : unfitted estimator
    X, y : valid training data (``estimator.fit(X, y)`` must succeed)
    cases : iterable of str
        Any of ``"nan", "inf", "ndim", "image_shape", "few_samples", "unfitted"``.
        ``"image_shape"`` needs an ``image_shape`` parameter and flat ``X``;
        it is passed over for estimators without one.
    min_samples : int, default=2
        The least number of samples ``fit`` accepts; ``min_samples - 1`` must fail.
    """
    fit_kwargs = fit_kwargs or {}
    for case in cases:
        est = clone(estimator)
        if case in ("nan", "inf", "ndim"):
            with pytest.raises((ValueError, TypeError), match=_MESSAGES[case]):
                est.fit(_bad_X(case, X, est), y, **fit_kwargs)
            # the same input at prediction time
            if case != "ndim":
                fitted = clone(estimator).fit(X, y, **fit_kwargs)
                for method in OUTPUT_METHODS:
                    if hasattr(fitted, method):
                        with pytest.raises((ValueError, TypeError), match=_MESSAGES[case]):
                            getattr(fitted, method)(_bad_X(case, X, fitted))
        elif case == "image_shape":
            if "image_shape" not in est.get_params():
                continue
            flat = np.asarray(X).reshape(len(X), -1)
            est.set_params(image_shape=(flat.shape[1] + 1, 1))
            with pytest.raises(ValueError, match=_MESSAGES[case]):
                est.fit(flat, y, **fit_kwargs)
        elif case == "few_samples":
            n = max(min_samples - 1, 0)
            # the message states the minimum, or the count it got
            pattern = _MESSAGES[case].replace("{n}", f"({min_samples}|{n})")
            with pytest.raises(ValueError, match=pattern):
                est.fit(X[:n], None if y is None else y[:n], **fit_kwargs)
        elif case == "unfitted":
            methods = [m for m in OUTPUT_METHODS if hasattr(est, m)]
            assert methods, f"{type(est).__name__} has no output method to check"
            for method in methods:
                with pytest.raises(NotFittedError):
                    getattr(est, method)(X)
        else:
            raise ValueError(f"unknown case {case!r}")


def _outputs(est, X):
    return {m: getattr(est, m)(X) for m in OUTPUT_METHODS if hasattr(est, m)}


def check_pipeline_gridsearch_pickle(estimator, X, y=None, *, param_grid, scoring=None, cv=2,
                                     fit_kwargs=None):
    """Fit in a Pipeline and in GridSearchCV, and check clone and pickle keep outputs identical.

    Returns the fitted GridSearchCV for further assertions.
    """
    fit_kwargs = fit_kwargs or {}
    est = clone(estimator).fit(X, y, **fit_kwargs)
    ref = _outputs(est, X)
    assert ref, f"{type(est).__name__} has no output method"

    pipe = make_pipeline(FunctionTransformer(), clone(estimator)).fit(X, y)
    for method, expected in _outputs(pipe, X).items():
        np.testing.assert_allclose(expected, ref[method], rtol=1e-5, atol=1e-6,
                                   err_msg=f"pipeline {method} differs from the bare estimator")

    again = clone(estimator).fit(X, y, **fit_kwargs)
    for method, expected in _outputs(again, X).items():
        np.testing.assert_allclose(expected, ref[method], rtol=1e-5, atol=1e-6,
                                   err_msg=f"refit of a clone changes {method}")

    loaded = pickle.loads(pickle.dumps(est))
    for method, expected in _outputs(loaded, X).items():
        np.testing.assert_array_equal(expected, ref[method],
                                      err_msg=f"pickle round-trip changes {method}")

    search = GridSearchCV(clone(estimator), param_grid, scoring=scoring, cv=cv, error_score="raise")
    search.fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    return search


def assert_message(exc_info, *words):
    """Assert every word appears (case-insensitively) in a raised error's message."""
    msg = str(exc_info.value)
    for w in words:
        assert re.search(re.escape(w), msg, re.I), f"{w!r} not in error message {msg!r}"
