"""Scorers that rank generators by how well their samples keep the data's topology."""

import numpy as np

from ._distances import diagram_wasserstein
from ._persistence import persistence_diagrams
from ._sampling import draw_samples

_DISTANCES = ("wasserstein", "bottleneck")


class DiagramDistanceScorer:
    """Greater-is-better scorer ``-sum_k distance(D_k(samples), D_k(reference))``.

    Made by :func:`make_diagram_distance_scorer`; called as ``scorer(estimator, X, y)``
    by :class:`~sklearn.model_selection.GridSearchCV` and :func:`cross_val_score`.
    """

    def __init__(self, reference, homology_dimensions, n_samples, distance, p, ph_params,
                 random_state):
        self.reference = reference
        self.homology_dimensions = homology_dimensions
        self.n_samples = n_samples
        self.distance = distance
        self.p = p
        self.ph_params = ph_params
        self.random_state = random_state
        self._ref_diagrams = (None if reference is None else self._diagrams(reference))

    def _diagrams(self, X):
        dgms = persistence_diagrams(X, maxdim=max(self.homology_dimensions),
                                    random_state=self.random_state, **self.ph_params)
        return [dgms[k] for k in self.homology_dimensions]

    def __call__(self, estimator, X=None, y=None):
        ref = self._ref_diagrams
        if ref is None:
            if X is None:
                raise ValueError("this scorer has no X_ref: call it with held-out data X.")
            ref = self._diagrams(np.asarray(X, dtype=np.float64))
        n = self.n_samples or (len(self.reference) if self.reference is not None else len(X))
        dgms = self._diagrams(draw_samples(estimator, n, self.random_state))
        p = np.inf if self.distance == "bottleneck" else self.p
        return -float(sum(diagram_wasserstein(a, b, p=p) for a, b in zip(dgms, ref)))

    def __repr__(self):
        return (f"make_diagram_distance_scorer(distance={self.distance!r}, p={self.p!r}, "
                f"homology_dimensions={tuple(self.homology_dimensions)})")


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
    return DiagramDistanceScorer(ref, dims, n_samples, distance, p, persistence_params,
                                 random_state)
