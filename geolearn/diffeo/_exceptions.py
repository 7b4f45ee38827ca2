"""Warnings raised by :mod:`geolearn.diffeo`."""

from ..exceptions import GeolearnWarning


class StabilityWarning(GeolearnWarning):
    """A stability measurement is unreliable or degenerate.

    Raised when the temperature lies outside ``[T_min, T_max]``, when most
    sampled fields are not diffeomorphisms, when a denominator vanishes (the
    ratio is returned as ``nan``), or when fewer than 100 probes are used.

    Examples
    --------
    Make it an error where an unreliable ratio must not pass silently:

    >>> import warnings
    >>> from geolearn.diffeo import StabilityWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", StabilityWarning)
    ...     try:
    ...         warnings.warn("T outside [T_min, T_max]", StabilityWarning)
    ...     except StabilityWarning as w:
    ...         print(w)
    T outside [T_min, T_max]
    """
