"""StabilityWarnings name the user's line, come once per search, and say how to fix them.

A search over a scorer whose deformations are mostly not diffeomorphisms (8x8 digits at the
default delta = 1 px) scores NaN rather than ranking models by noise.
"""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier

from geolearn.datasets import load_digits_images
from geolearn.diffeo import DiffeoStability, StabilityWarning, make_stability_scorer

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _recorded(call):
    """Every warning ``call()`` emits (none filtered out), and its result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return [w for w in caught if issubclass(w.category, StabilityWarning)], result


def test_search_on_8x8_images_warns_once_at_the_users_line_and_scores_nan():
    X, y = load_digits(return_X_y=True)
    search = GridSearchCV(MLPClassifier((8,), max_iter=20, random_state=0),
                          {"alpha": [1e-4, 1e-2]}, cv=3,
                          scoring=make_stability_scorer(image_shape=(8, 8)))
    caught, _ = _recorded(lambda: search.fit(X[:450], y[:450]))
    # 6 folds measured, one warning of each kind: the temperature, and the NaN with its reason
    assert len(caught) == 2, [str(w.message) for w in caught]
    assert {w.filename for w in caught} == {__file__}
    temperature, nan = (str(w.message) for w in caught)
    assert "lies outside the range" in temperature and "upsample=2" in temperature
    assert "returns NaN" in nan and "upsample=2" in nan
    # nothing to rank: every candidate is NaN, as for sklearn's failed fits
    assert np.isnan(search.cv_results_["mean_test_score"]).all()


def test_valid_deformations_score_and_a_new_scorer_warns_again():
    X, y = load_digits_images(upsample=2, return_X_y=True)
    X = X[:300].reshape(300, -1)
    clf = LogisticRegression(max_iter=50).fit(X, y[:300])
    scorer = make_stability_scorer(image_shape=(16, 16))
    caught, score = _recorded(lambda: scorer(clf, X[:150]))
    assert caught == [] and np.isfinite(score)
    # the scorer pickles (joblib's process workers) and keeps scoring the same
    assert pickle.loads(pickle.dumps(scorer))(clf, X[:150]) == score
    # once per scorer: a scorer for another search shows its warnings again
    small = make_stability_scorer(image_shape=(16, 16), delta=4.0)
    for _ in range(2):
        caught, score = _recorded(lambda: small(clf, X[:150]))
        assert np.isnan(score)
    assert caught == []   # the second call: already shown
    caught, _ = _recorded(lambda: make_stability_scorer(image_shape=(16, 16), delta=4.0)(
        clf, X[:150]))
    assert {w.filename for w in caught} == {__file__} and len(caught) == 2


def test_estimator_warning_names_the_callers_line():
    X, y = load_digits(return_X_y=True)
    est = DiffeoStability(LogisticRegression(max_iter=50), image_shape=(8, 8), random_state=0)
    caught, _ = _recorded(lambda: est.fit(X[:200], y[:200]).stability(X[:150]))
    assert [w.filename for w in caught] == [__file__] * 2
    assert "upsample" in str(caught[0].message)
    assert "not diffeomorphisms" in str(caught[1].message)
