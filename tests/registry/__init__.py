"""The estimator-check registry: one module per family, each defining ``ESTIMATORS``.

A family adds ``tests/registry/<family>.py`` with ``ESTIMATORS = [instance, ...]``:
small, fast instances that ``parametrize_with_checks`` runs. Nothing else to edit.
"""

import importlib
import pkgutil


def all_registered():
    """Every registered estimator instance, in module order."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        out.extend(importlib.import_module(f"{__name__}.{info.name}").ESTIMATORS)
    return out
