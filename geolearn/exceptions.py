"""The warnings geolearn emits: one base class, so they can be filtered (or made errors) at once.

Every warning the package raises derives from :class:`GeolearnWarning`
(the family warnings, such as :class:`geolearn.diffeo.StabilityWarning`, too)::

    import warnings
    from geolearn.exceptions import GeolearnWarning

    warnings.simplefilter("error", GeolearnWarning)   # e.g. in a test suite

The package's own test configuration does exactly that.
"""

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning


class GeolearnWarning(UserWarning):
    """Base class of every warning geolearn emits."""


class DataRangeWarning(GeolearnWarning):
    """Input outside the range a model is defined on was clipped to it, or scored as it is.

    For example, held-out folds of min-max scaled data scored by a Bernoulli VAE
    (clipped), or test images outside the ``data_range`` of an
    ``InpaintingOODDetector`` (scored as they are: OOD images may lie outside).
    """


class ConvergenceWarning(GeolearnWarning, _SklearnConvergenceWarning):
    """An iterative solver stopped before meeting its tolerance; the result is approximate.

    A subclass of scikit-learn's ``ConvergenceWarning``, so filters on either catch it.
    """


class NumericalWarning(GeolearnWarning, RuntimeWarning):
    """An ill-conditioned, singular or over/underflowing case: the result is less reliable."""


class PartialResultWarning(GeolearnWarning):
    """A budget (a count, a time, a subset) cut the work short: the result is incomplete."""


__all__ = ["ConvergenceWarning", "DataRangeWarning", "GeolearnWarning", "NumericalWarning",
           "PartialResultWarning"]
