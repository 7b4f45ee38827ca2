"""Scorers that rank generators by how well their samples keep the data's topology."""

import functools

import numpy as np

from ._distances import diagram_wasserstein
from ._persistence import persistence_diagrams
from ._sampling import draw_samples

_DISTANCES = ("wasserstein", "bottleneck")


def _diagrams(X, homology_dimensions, random_state, ph_params):
    dgms = persistence_diagrams(X, maxdim=max(homology_dimensions), random_state=random_state,
                                **ph_params)
    return [dgms[k] for k in homology_dimensions]


def _diagram_distance_score(estimator, X=None, y=None, *, ref_diagrams, n_ref,
                            homology_dimensions, n_samples, distance, p, random_state,
                            ph_params):
    """``-sum_k distance(D_k(samples), D_k(reference))``: :func:`make_diagram_distance_scorer`."""
    if ref_diagrams is None:
        if X is None:
            raise ValueError("this scorer has no X_ref: call it with held-out data X.")
        ref_diagrams = _diagrams(np.asarray(X, dtype=np.float64), homology_dimensions,
                                 random_state, ph_params)
    n = n_samples or (n_ref if n_ref is not None else len(X))
    dgms = _diagrams(draw_samples(estimator, n, random_state), homology_dimensions,
                     random_state, ph_params)
    p = np.inf if distance == "bottleneck" else p
    return -float(sum(diagram_wasserstein(a, b, p=p) for a, b in zip(dgms, ref_diagrams)))


def _check_scorer_params(homology_dimensions, distance, p, n_samples, persistence_params):
    """Validate the scorer's parameters; returns the homology dimensions as a list of int."""
    unknown = set(persistence_params) - {"thresh", "coeff", "metric", "n_subsample",
                                         "subsample", "n_jobs", "backend"}
    if unknown:
        raise TypeError(f"unexpected keyword arguments {sorted(unknown)}.")
    if distance not in _DISTANCES:
        raise ValueError(f"distance must be one of {_DISTANCES}; got {distance!r}.")
    if p is None or np.isnan(p) or p < 1:
        raise ValueError(f"p must be a number >= 1; got {p!r}.")
    dims = [int(k) for k in np.atleast_1d(homology_dimensions)]
    if not dims or min(dims) < 0:
        raise ValueError(f"homology_dimensions must be integers >= 0; got {homology_dimensions!r}.")
    if n_samples is not None and (int(n_samples) != n_samples or n_samples < 2):
        raise ValueError(f"n_samples must be an integer >= 2 or None; got {n_samples!r}.")
    return dims


def make_diagram_distance_scorer(X_ref=None, *, homology_dimensions=(1,), distance="wasserstein",
                                 p=2, n_samples=None, random_state=0, **persistence_params):
    """A scorer ranking generators by the diagram distance of their samples to the data.

    The scorer draws ``n_samples`` points from the fitted estimator's ``sample`` method,
    computes their persistence diagrams and returns minus the sum over
    ``homology_dimensions`` of the Wasserstein (or bottleneck) distance to the diagrams of
    ``X_ref`` (greater is better, as scikit-learn expects). A generator that fills a hole
    of the data loses the loop's point of the diagram and scores lower.

    Parameters
    ----------
    X_ref : array-like of shape (n, n_features) or None, default=None
        Reference data, its diagrams computed once. None: the data the scorer is called
        with (e.g. GridSearchCV's held-out fold).
    homology_dimensions : tuple of int, default=(1,)
    distance : {"wasserstein", "bottleneck"}, default="wasserstein"
    p : float, default=2
        Order of the Wasserstein distance (internal norm L_inf).
    n_samples : int or None, default=None
        Samples drawn per call; None: as many as the reference has points.
    random_state : int or None, default=0
        Passed to ``sample`` and to the subsampling, so the score is reproducible.
    **persistence_params
        ``thresh``, ``coeff``, ``metric``, ``n_subsample``, ``subsample``, ``n_jobs``,
        ``backend`` of :func:`persistence_diagrams`.

    Returns
    -------
    scorer : callable ``scorer(estimator, X=None, y=None) -> float``
        It draws samples from the estimator itself, so it is a scikit-learn scorer
        callable rather than a ``make_scorer`` of predictions; it pickles.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.neighbors import KernelDensity
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.topology import make_diagram_distance_scorer
    >>> X = make_circle_points(80, noise=0.02, random_state=0)
    >>> scorer = make_diagram_distance_scorer(X)
    >>> search = GridSearchCV(KernelDensity(), {"bandwidth": [0.05, 0.8]}, scoring=scorer, cv=2)
    >>> search.fit(X).best_params_   # a wide kernel fills the circle's hole
    {'bandwidth': 0.05}
    """
    dims = _check_scorer_params(homology_dimensions, distance, p, n_samples, persistence_params)
    ref = None if X_ref is None else np.asarray(X_ref, dtype=np.float64)
    # the reference's diagrams are computed once, here
    ref_diagrams = None if ref is None else _diagrams(ref, dims, random_state,
                                                      persistence_params)
    return functools.partial(
        _diagram_distance_score, ref_diagrams=ref_diagrams,
        n_ref=None if ref is None else len(ref), homology_dimensions=dims, n_samples=n_samples,
        distance=distance, p=p, random_state=random_state, ph_params=persistence_params)
