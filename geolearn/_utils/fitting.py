"""Fitting transactions: a fit that fails leaves the estimator unfitted, never half fitted."""

import functools


def discard_fitted(estimator, keep=()):
    """Delete an estimator's fitted attributes (public names ending in ``_``).

    Called when a ``fit`` fails, so that the estimator is unfitted (``check_is_fitted``
    raises) rather than half fitted. ``keep`` names attributes that are not fitted state
    (skorch's constructor sets ``history_``, ``initialized_`` and ``virtual_params_``).
    """
    for name in [k for k in vars(estimator)
                 if k.endswith("_") and not k.startswith("_") and k not in keep]:
        delattr(estimator, name)


def fitted_on_success(fit):
    """Decorate ``fit`` so that any failure (an error, an interrupt) discards the fitted state.

    Without it a ``fit`` that stops midway leaves the attributes it had already set:
    the estimator passes ``check_is_fitted`` and then fails (or predicts) from a state
    that no completed fit produced.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            discard_fitted(self)
            raise

    return wrapper
