"""Warnings raised by :mod:`geolearn.diffeo`."""


class StabilityWarning(UserWarning):
    """A stability measurement is unreliable or degenerate.

    Raised when the temperature lies outside ``[T_min, T_max]``, when most
    sampled fields are not diffeomorphisms, when a denominator vanishes (the
    ratio is returned as ``nan``), or when fewer than 100 probes are used.
    """
