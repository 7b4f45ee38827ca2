"""Drawing samples from a fitted generator or a sampling function."""

import inspect

import numpy as np


def draw_samples(generator, n_samples, random_state=None):
    """``n_samples`` rows from a fitted generator or a callable.

    ``generator`` is an estimator with ``sample(n_samples[, random_state])`` (geolearn
    generators, :class:`~sklearn.neighbors.KernelDensity`; a returned ``(X, y)`` tuple,
    as from :class:`~sklearn.mixture.GaussianMixture`, gives ``X``), or a callable
    ``f(n_samples, random_state)``.
    """
    if hasattr(generator, "sample"):
        try:
            params = inspect.signature(generator.sample).parameters.values()
        except (TypeError, ValueError):
            params = ()
        takes_rs = any(q.name == "random_state" or q.kind is q.VAR_KEYWORD for q in params)
        out = (generator.sample(n_samples, random_state=random_state) if takes_rs
               else generator.sample(n_samples))
    elif callable(generator):
        out = generator(n_samples, random_state)
    else:
        raise TypeError("the generator must have a sample(n_samples, random_state) method or be "
                        f"a callable f(n_samples, random_state); got {type(generator).__name__}.")
    if isinstance(out, tuple):
        out = out[0]
    out = np.asarray(out, dtype=np.float64)
    if out.ndim == 0 or len(out) != n_samples:
        raise ValueError(f"the generator returned {out.shape} for n_samples={n_samples}.")
    return out.reshape(n_samples, -1)
