"""Which output of a scikit-learn estimator a method sees: the one response resolver."""

import warnings

import numpy as np
from sklearn.base import is_classifier

from ._fitting import tabular_input

#: Responses a black box can be seen through, in the order ``"auto"`` tries them.
AUTO_ORDER = ("decision_function", "clr_proba", "predict")
RESPONSES = ("auto", "decision_function", "predict_proba", "clr_proba", "predict")
PROBA_FLOOR = 1e-12


def _method(response):
    return "predict_proba" if response == "clr_proba" else response


def resolve_response(estimator, response="auto"):
    """The response through which ``estimator`` is seen, checked against what it offers.

    geolearn measures a model through its most logit-like output, the analogue
    of a torch module's forward pass. ``"auto"`` therefore tries, in order:

    1. ``decision_function`` (logits or margins);
    2. ``"clr_proba"``: the centred log-probabilities ``log p - mean_k log p_k``
       of ``predict_proba`` (``p`` clipped to ``[1e-12, 1]``), which equal a
       softmax model's logits up to the softmax-invariant constant;
    3. ``predict``, for regressors (a classifier's labels are piecewise
       constant, so they are refused).

    As in scikit-learn's ``_get_response_values``, one ordered list decides,
    and an explicit name is only checked.

    Parameters
    ----------
    estimator : fitted scikit-learn estimator
    response : {"auto", "decision_function", "predict_proba", "clr_proba", "predict"}

    Returns
    -------
    response : str
        One of ``"decision_function"``, ``"predict_proba"``, ``"clr_proba"``, ``"predict"``.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from geolearn.models import resolve_response
    >>> resolve_response(LogisticRegression())
    'decision_function'
    >>> resolve_response(RandomForestClassifier())
    'clr_proba'
    """
    if not isinstance(response, str) or response not in RESPONSES:
        raise ValueError(f"response must be one of {list(RESPONSES)}; got {response!r}.")
    name = type(estimator).__name__
    candidates = AUTO_ORDER if response == "auto" else (response,)
    for candidate in candidates:
        if not hasattr(estimator, _method(candidate)):
            continue
        if candidate == "predict" and is_classifier(estimator):
            raise ValueError(
                f"{name} offers only class labels (predict), which are piecewise constant: "
                "geolearn needs a continuous output. Use a classifier with decision_function "
                "or predict_proba.")
        return candidate
    if response == "auto":
        raise TypeError(f"{name} has none of decision_function, predict_proba, predict: "
                        "geolearn cannot see its output.")
    raise ValueError(f"response={response!r} but {name} has no {_method(response)} method.")


def respond(estimator, response, X):
    """``estimator``'s resolved ``response`` on ``X`` as a 2-D float64 array.

    Parameters
    ----------
    estimator : fitted estimator
    response : str
        A response returned by :func:`resolve_response`.
    X : array-like

    Returns
    -------
    out : ndarray of shape (n_samples, n_outputs)

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models import resolve_response
    >>> from geolearn.models._internal import respond
    >>> clf = LogisticRegression().fit([[0.0], [1.0], [2.0]], [0, 1, 1])
    >>> respond(clf, resolve_response(clf), [[0.5], [1.5]]).shape  # one binary logit
    (2, 1)
    """
    with warnings.catch_warnings():
        # arrays in the fitted column order: a model fitted on a DataFrame has nothing to fear
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        out = np.asarray(getattr(estimator, _method(response))(tabular_input(estimator, X)),
                         dtype=np.float64)
    out = out.reshape(len(out), -1)
    if response == "clr_proba":
        logp = np.log(np.clip(out, PROBA_FLOOR, 1.0))
        out = logp - logp.mean(axis=1, keepdims=True)
    return out
