"""Warnings attributed to the user's line rather than to geolearn's internals."""

import os
import sys
import warnings

import joblib
import sklearn
import skorch
import torch

# geolearn and the libraries between it and the user's call (a GridSearchCV runs a scorer
# through sklearn and joblib frames; skorch and torch run callbacks, hooks and forward passes)
_INTERNAL = tuple(os.path.dirname(os.path.abspath(path)) + os.sep for path in (
    os.path.dirname(__file__), sklearn.__file__, joblib.__file__, skorch.__file__, torch.__file__))


def warn_user(message, category=UserWarning):
    """``warnings.warn`` at the first caller outside geolearn, scikit-learn, joblib, skorch and torch.

    The warning then names the user's line (``search.fit(X, y)`` rather than a
    scorer deep inside a search), and Python's default filter shows it once per
    line and message. Where the whole stack is internal (a worker thread), the
    outermost frame is named. Python 3.12's ``warnings.warn(skip_file_prefixes=...)``
    names ``sys`` instead in that case, and Python 3.10 lacks it: this walk works alike
    everywhere.

    Parameters
    ----------
    message : str
    category : Warning subclass, default=UserWarning
    """
    frame, stacklevel = sys._getframe(1), 2   # stacklevel 2: the caller of warn_user
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(message, category, stacklevel=stacklevel)
