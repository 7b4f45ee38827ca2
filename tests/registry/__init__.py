"""The estimator-check registry: one module per family, each defining ``ESTIMATORS``.

A family adds ``tests/registry/<family>.py`` with ``ESTIMATORS = [instance, ...]``:
small, fast instances that ``parametrize_with_checks`` runs. Nothing else to edit.

A family may also define ``CHECK_PARAMS = {class: {check name: params}}``: the parameters
an instance of that class takes for one check (set on a clone), as scikit-learn's
``PER_ESTIMATOR_CHECK_PARAMS`` does for its own estimators whose parameters fix the width
of ``X`` (``SparseCoder``'s dictionary).
"""

import importlib
import pkgutil


def all_registered():
    """Every registered estimator instance, in module order."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        out.extend(importlib.import_module(f"{__name__}.{info.name}").ESTIMATORS)
    return out


def check_params(estimator, check_name):
    """The parameters ``estimator`` takes for the check ``check_name`` (``{}``: none)."""
    for info in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{info.name}")
        params = getattr(family, "CHECK_PARAMS", {}).get(type(estimator), {})
        if check_name in params:
            return params[check_name]
    return {}
