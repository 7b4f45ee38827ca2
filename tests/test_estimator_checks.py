"""Every public geolearn estimator through scikit-learn's estimator checks."""

import importlib
import inspect
import pathlib
import sys

import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.utils.estimator_checks import parametrize_with_checks

import geolearn
from tests.registry import all_registered, check_params

ESTIMATORS = all_registered()


def _building_blocks():
    """Public classes that are parts of estimators, not estimators a user fits on data.

    ``ObjectiveNet`` is the skorch net the torch estimators train with; it needs an
    objective function and is exercised through every estimator that uses it.
    ``MLDGNet`` is MetaManifoldAutoencoder's net: it trains on episodes that the
    estimator's sampler draws, and is exercised through that estimator.
    ``RiskDecomposition`` evaluates a prefit model on a manifold of fixed ambient
    dimension: the checks' tables change width and lie on no manifold. The manifold
    objects ``SphereManifold``, ``AffineManifold`` and ``LatentManifold`` describe a
    known manifold and have no ``fit``. Their clone, pickle, GridSearchCV (through
    ``make_risk_scorer``) and validation are tested in ``tests/adversarial/`` and
    ``tests/manifold/test_manifold_objects.py``.
    """
    from geolearn.adversarial import RiskDecomposition
    from geolearn.manifold import AffineManifold, LatentManifold, SphereManifold
    from geolearn.meta_learning import MLDGNet
    from geolearn.models import ObjectiveNet

    return {ObjectiveNet, MLDGNet, RiskDecomposition, AffineManifold, LatentManifold,
            SphereManifold}


def public_estimator_classes():
    """Every BaseEstimator subclass exported in a geolearn subpackage's ``__all__``."""
    found = set()
    for sub in geolearn.__all__:
        try:
            mod = importlib.import_module(f"geolearn.{sub}")
        except ModuleNotFoundError as exc:
            if exc.name == f"geolearn.{sub}":
                continue  # family not built yet
            raise
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
                found.add(obj)
    return found


def test_every_public_estimator_is_registered():
    registered = {type(est) for est in ESTIMATORS}
    missing = sorted(c.__name__
                     for c in public_estimator_classes() - registered - _building_blocks())
    assert not missing, f"add these to tests/registry/: {missing}"


TABLE = pathlib.Path(__file__).parents[1] / "docs" / "estimator_checks.md"

_TABLE_HEADER = """\
# scikit-learn's estimator checks: the expected failures

Every public estimator runs scikit-learn's estimator checks
(`tests/test_estimator_checks.py`, instances registered in `tests/registry/`). The
registered instances that declare a check they cannot pass (`_expected_failed_checks`) are
listed here with the reason, which is a limit of the method (image or set-shaped input, a
torch model that `joblib.hash` cannot compare), never a defect. Every other registered
instance passes every check; one whose parameters fix the width of `X` takes, for each
check, parameters of that check's width (`CHECK_PARAMS` in its registry module).

This page is generated from the estimators' declarations, and a test fails when it is out
of date: regenerate it with `python tests/test_estimator_checks.py`.
"""


def _expected_failures(estimator):
    """Checks an estimator declares it cannot pass, each with its reason."""
    return dict(getattr(estimator, "_expected_failed_checks", {}))


def expected_failures_table():
    """docs/estimator_checks.md: each registered instance's expected failures, by reason."""
    lines, seen = [_TABLE_HEADER], set()
    for est in sorted(ESTIMATORS, key=lambda e: (type(e).__name__, repr(e))):
        failures = _expected_failures(est)
        if not failures:
            continue
        name = type(est).__name__
        if name not in seen:  # one section per class, one table per registered instance
            lines += [f"## {name}", ""]
            seen.add(name)
        shown = ' '.join(est.__repr__(N_CHAR_MAX=200).split())
        lines += [f"`{shown}`", "", "| Checks | Reason |", "| --- | --- |"]
        by_reason = {}
        for check, reason in failures.items():
            by_reason.setdefault(reason, []).append(check)
        for reason, checks in by_reason.items():
            names = ", ".join(f"`{c}`" for c in sorted(checks))
            lines.append(f"| {names} | {' '.join(reason.split())} |")
        lines.append("")
    return "\n".join(lines)


def test_the_expected_failures_table_is_up_to_date():
    assert TABLE.read_text() == expected_failures_table(), (
        "docs/estimator_checks.md is out of date: python tests/test_estimator_checks.py")


if ESTIMATORS:

    # scikit-learn's check data is arbitrary tables: the estimators rightly advise on it
    # (raw sets to orthonormalise, few probes, singular metrics). These checks test the
    # API contract, so geolearn's advisory warnings are not errors here; each warning
    # is tested where it is raised.
    @pytest.mark.filterwarnings("ignore::geolearn.exceptions.GeolearnWarning")
    @parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failures)
    def test_sklearn_compatible(estimator, check):
        params = check_params(estimator, check.func.__name__)
        check(clone(estimator).set_params(**params) if params else estimator)


if __name__ == "__main__":
    sys.exit(TABLE.write_text(expected_failures_table()) and 0)
