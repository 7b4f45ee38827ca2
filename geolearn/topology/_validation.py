"""Parameter and diagram validation shared by the topology functions."""

import numbers

import numpy as np

BACKENDS = ("auto", "giotto-ph", "exact")
SUBSAMPLES = ("uniform", "maxmin")


def is_prime(p):
    return p >= 2 and all(p % d for d in range(2, int(p**0.5) + 1))


def check_int(value, name, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def check_persistence_params(maxdim, thresh, coeff, n_subsample, subsample, backend):
    """Validate the scalar parameters of :func:`persistence_diagrams`."""
    maxdim = check_int(maxdim, "maxdim", 0)
    if (not isinstance(thresh, numbers.Real) or isinstance(thresh, bool) or np.isnan(thresh)
            or thresh < 0):
        raise ValueError(f"thresh must be a number >= 0 (np.inf for no threshold); "
                         f"got {thresh!r}.")
    if not isinstance(coeff, numbers.Integral) or isinstance(coeff, bool) or not is_prime(coeff):
        raise ValueError(f"coeff must be a prime number (the field Z/coeff); got {coeff!r}.")
    if n_subsample is not None:
        check_int(n_subsample, "n_subsample", 2)
    if subsample not in SUBSAMPLES:
        raise ValueError(f"subsample must be one of {SUBSAMPLES}; got {subsample!r}.")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}.")
    return maxdim, float(thresh), int(coeff)


def check_diagram(diagram, name="diagram"):
    """Return a persistence diagram as a float64 ``(m, 2)`` array of (birth, death) rows.

    Deaths may be ``+inf`` (essential classes); births must be finite and ``<= death``.
    """
    D = np.asarray(diagram, dtype=np.float64)
    if D.size == 0:
        return np.empty((0, 2))
    if D.ndim != 2 or D.shape[1] != 2:
        raise ValueError(f"{name} must be an array of (birth, death) rows of shape (m, 2); "
                         f"got shape {D.shape}.")
    if np.isnan(D).any() or not np.isfinite(D[:, 0]).all() or np.isneginf(D[:, 1]).any():
        raise ValueError(f"{name} holds NaN, an infinite birth or a death of -inf; only deaths "
                         "may be infinite (+inf).")
    if (D[:, 0] > D[:, 1]).any():
        row = int(np.argmax(D[:, 0] > D[:, 1]))
        raise ValueError(f"{name} has a point with birth > death: row {row} = "
                         f"({D[row, 0]:g}, {D[row, 1]:g}).")
    return D


def check_diagrams(diagrams, name="diagrams"):
    """A list of diagrams (one per homology dimension); a single (m, 2) array is one diagram."""
    if isinstance(diagrams, np.ndarray) and diagrams.ndim == 2:
        diagrams = [diagrams]
    try:
        items = list(diagrams)
    except TypeError:
        raise ValueError(f"{name} must be a list of (m, 2) diagrams, one per homology "
                         f"dimension; got {type(diagrams).__name__}.") from None
    return [check_diagram(d, f"{name}[{k}]") for k, d in enumerate(items)]
