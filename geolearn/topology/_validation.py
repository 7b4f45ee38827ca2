"""Parameter validation shared by the topology functions.

The diagram validators, used by the plotting too, are in :mod:`geolearn._utils.validation`.
"""

import numbers

import numpy as np

from .._utils import check_scalar_param

BACKENDS = ("auto", "giotto-ph", "exact")
SUBSAMPLES = ("uniform", "maxmin")


def is_prime(p):
    return p >= 2 and all(p % d for d in range(2, int(p**0.5) + 1))


def check_persistence_params(maxdim, thresh, coeff, n_subsample, subsample, backend):
    """Validate the scalar parameters of :func:`persistence_diagrams`."""
    maxdim = int(check_scalar_param(maxdim, "maxdim", kind="integer", low=0))
    if (not isinstance(thresh, numbers.Real) or isinstance(thresh, bool) or np.isnan(thresh)
            or thresh < 0):
        raise ValueError(f"thresh must be a number >= 0 (np.inf for no threshold); "
                         f"got {thresh!r}.")
    if not isinstance(coeff, numbers.Integral) or isinstance(coeff, bool) or not is_prime(coeff):
        raise ValueError(f"coeff must be a prime number (the field Z/coeff); got {coeff!r}.")
    if n_subsample is not None:
        check_scalar_param(n_subsample, "n_subsample", kind="integer", low=2)
    if subsample not in SUBSAMPLES:
        raise ValueError(f"subsample must be one of {SUBSAMPLES}; got {subsample!r}.")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    return maxdim, float(thresh), int(coeff)
