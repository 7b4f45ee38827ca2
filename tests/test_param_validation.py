"""Estimator parameters are validated one way: ``_parameter_constraints`` checked in ``fit``.

Every public estimator declares a constraint for each ``__init__`` parameter, and ``fit``
refuses a value that satisfies none with scikit-learn's ``InvalidParameterError`` naming
the parameter (scikit-learn's own ``check_param_validation``, which its estimator checks
leave to its own test suite, plus a hypothesis search over values of wrong types).
"""

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError, make_constraint
from sklearn.utils.estimator_checks import check_param_validation

from tests.registry import all_registered
from tests.test_estimator_checks import public_estimator_classes

ESTIMATORS = [est for est in all_registered() if hasattr(est, "_parameter_constraints")]

#: Public estimators whose parameters are not validated through ``_parameter_constraints``.
NOT_CONSTRAINED = {
    # skorch nets (skorch's fit, no _fit_context): the estimators that build them validate
    "ObjectiveNet", "MLDGNet",
    # manifold objects without fit: nothing would check them
    "AffineManifold", "LatentManifold", "SphereManifold",
}


def _init_params(cls):
    """The named ``__init__`` parameters (not ``**net_params``)."""
    return {name for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}


def _id(est):
    return type(est).__name__


@pytest.mark.parametrize("cls", sorted((c for c in public_estimator_classes()
                                         if c.__name__ not in NOT_CONSTRAINED),
                                        key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_constraints_cover_every_init_parameter(cls):
    constraints = getattr(cls, "_parameter_constraints", None)
    assert constraints is not None, f"{cls.__name__} defines no _parameter_constraints"
    assert set(constraints) == _init_params(cls)


def test_the_exemptions_are_exactly_the_unconstrained_public_estimators():
    """An exemption goes once its class declares constraints."""
    public = public_estimator_classes()
    assert NOT_CONSTRAINED <= {c.__name__ for c in public}
    assert {c.__name__ for c in public if "_parameter_constraints" not in vars(c)
            and not any("_parameter_constraints" in vars(b) for b in c.__mro__[1:]
                        if b.__module__.startswith("geolearn"))} <= NOT_CONSTRAINED


@pytest.mark.filterwarnings("ignore::geolearn.exceptions.GeolearnWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_id)
def test_check_param_validation(estimator):
    check_param_validation(type(estimator).__name__, estimator)


def _validated(estimator):
    """``(estimator, parameter)`` for every parameter that has constraints."""
    return [(estimator, name) for name, c in estimator._parameter_constraints.items()
            if c != "no_validation"]


#: Values of types no constraint in geolearn admits (no number, string, array, callable).
WRONG_TYPES = st.one_of(
    st.complex_numbers(min_magnitude=1, allow_nan=False, allow_infinity=False),
    st.binary(min_size=1, max_size=4),
    st.builds(object),
    st.just(Ellipsis),
)

X = np.random.default_rng(0).random((20, 4))
Y = np.arange(20) % 2


@pytest.mark.parametrize(
    "estimator, name", [case for est in ESTIMATORS for case in _validated(est)],
    ids=lambda v: v if isinstance(v, str) else _id(v))
@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=WRONG_TYPES)
def test_fit_names_a_parameter_of_the_wrong_type(estimator, name, value):
    constraints = [make_constraint(c) for c in estimator._parameter_constraints[name]]
    assert not any(c.is_satisfied_by(value) for c in constraints)
    est = clone(estimator).set_params(**{name: value})
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of "
                                                     rf"{type(est).__name__} must be"):
        est.fit(X, Y)
