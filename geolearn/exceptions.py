"""The warnings geolearn emits: one base class, so they can be filtered (or made errors) at once.

Every warning the package raises derives from :class:`GeolearnWarning`
(the family warnings, such as :class:`geolearn.diffeo.StabilityWarning`, too)::

    import warnings
    from geolearn.exceptions import GeolearnWarning

    warnings.simplefilter("error", GeolearnWarning)   # e.g. in a test suite

The package's own test configuration does exactly that.
"""


class GeolearnWarning(UserWarning):
    """Base class of every warning geolearn emits."""


class DataRangeWarning(GeolearnWarning):
    """Input outside the range a model is defined on was clipped to it (e.g. held-out folds of
    min-max scaled data scored by a Bernoulli VAE)."""


class ConvergenceWarning(GeolearnWarning):
    """An iterative solver stopped before meeting its tolerance; the result is approximate."""


class NumericalWarning(GeolearnWarning):
    """A computation met an ill-conditioned or degenerate case; the result is less reliable."""


__all__ = ["ConvergenceWarning", "DataRangeWarning", "GeolearnWarning", "NumericalWarning"]
