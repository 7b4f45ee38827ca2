"""Distribution metrics of the topology study: W2, FID, density/coverage, bond lengths.

Jin et al. (2024), "Implications of data topology for deep generative models",
Section 2.2 and 3.4: the empirical L2-Wasserstein distance (Eqs. 5-6) with its
10-repeat protocol, the Frechet distance of feature Gaussians, density and coverage
(Naeem et al. 2020) and the cyclooctane bond-length error.
"""

import numbers

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import pairwise_distances_chunked
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from .._utils import check_squares_finite, warn_user
from ..datasets import CC_BOND, bond_lengths
from ..exceptions import NumericalWarning
from ._sampling import draw_samples

__all__ = [
    "bond_length_error",
    "density_coverage",
    "empirical_wasserstein2",
    "frechet_distance",
    "wasserstein2_protocol",
]


def _pair(X, Y, xname, yname, min_samples=1):
    X = check_array(X, dtype=np.float64, input_name=xname, ensure_min_samples=min_samples)
    Y = check_array(Y, dtype=np.float64, input_name=yname, ensure_min_samples=1)
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"{xname} and {yname} must have the same number of features; got "
                         f"{X.shape[1]} and {Y.shape[1]}.")
    # every metric here takes squared distances or covariances
    return check_squares_finite(X, xname), check_squares_finite(Y, yname)


def empirical_wasserstein2(X, Y):
    """Empirical L2-Wasserstein distance between two samples of equal size (paper Eq. 6).

    ``W2 = min_pi ((1/n) sum_i ||X_i - Y_pi(i)||^2)^(1/2)`` over permutations, solved
    exactly by the Jonker-Volgenant assignment (``scipy.optimize.linear_sum_assignment``)
    on the squared-distance matrix; the value is re-measured on the optimal pairs.

    Parameters
    ----------
    X, Y : array-like of shape (n, n_features)
        Same n (subsample the larger one) and same features.

    Returns
    -------
    w2 : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology.metrics import empirical_wasserstein2
    >>> X = np.random.RandomState(0).normal(size=(50, 3))
    >>> round(empirical_wasserstein2(X, X[::-1] + [3.0, 0.0, 4.0]), 12)   # a shift by c: ||c||
    5.0
    """
    X, Y = _pair(X, Y, "X", "Y")
    if len(X) != len(Y):
        raise ValueError(f"X and Y must have the same number of samples (Eq. 6 matches them "
                         f"one to one); got {len(X)} and {len(Y)}: subsample the larger one.")
    C = euclidean_distances(X, Y, squared=True)
    rows, cols = linear_sum_assignment(C)
    return float(np.sqrt(((X[rows] - Y[cols]) ** 2).sum(axis=1).mean()))


def frechet_distance(F1, F2):
    """Frechet distance between Gaussians fitted to two feature sets (FID on given features).

    ``||mu_1 - mu_2||^2 + tr(S_1 + S_2 - 2 (S_1 S_2)^(1/2))`` with covariances normalised
    by ``n - 1``. The trace of the matrix square root is computed as
    ``sum sqrt(eig(S_1^(1/2) S_2 S_1^(1/2)))``, a symmetric positive semi-definite
    eigenproblem (no complex ``sqrtm`` output). With fewer samples than features the
    covariances are singular: a warning is raised and ``1e-6 I`` added to both.

    Parameters
    ----------
    F1, F2 : array-like of shape (n1, d) and (n2, d)
        Features (any embedding: flattened pixels, a network's layer, ...).

    Returns
    -------
    distance : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology.metrics import frechet_distance
    >>> rng = np.random.RandomState(0)
    >>> F = rng.normal(size=(2000, 2))
    >>> round(frechet_distance(F, F + [1.0, 0.0]), 6)   # a mean shift only: ||delta mu||^2
    1.0
    """
    F1, F2 = _pair(F1, F2, "F1", "F2", min_samples=2)
    if len(F2) < 2:
        raise ValueError("F2 needs at least 2 samples for a covariance.")
    d = F1.shape[1]
    S1, S2 = np.atleast_2d(np.cov(F1, rowvar=False)), np.atleast_2d(np.cov(F2, rowvar=False))
    if min(len(F1), len(F2)) < d:
        warn_user(f"fewer samples ({min(len(F1), len(F2))}) than feature dimensions ({d}): "
                  "the covariances are singular; adding 1e-6 I.", NumericalWarning)
        S1, S2 = S1 + 1e-6 * np.eye(d), S2 + 1e-6 * np.eye(d)
    w1, V1 = np.linalg.eigh(S1)
    root1 = (V1 * np.sqrt(np.clip(w1, 0, None))) @ V1.T
    lam = np.linalg.eigvalsh(root1 @ S2 @ root1)
    scale = max(abs(lam).max(initial=0.0), np.finfo(float).tiny)
    if lam.min(initial=0.0) < -1e-3 * scale:
        warn_user("S1^(1/2) S2 S1^(1/2) has a clearly negative eigenvalue "
                  f"({lam.min():.3g}); using its positive part.", NumericalWarning)
    tr_sqrt = np.sqrt(np.clip(lam, 0, None)).sum()
    mu = F1.mean(axis=0) - F2.mean(axis=0)
    return float(mu @ mu + np.trace(S1) + np.trace(S2) - 2 * tr_sqrt)


def density_coverage(real, fake, k=5):
    """Density and coverage of fake samples against real ones (Naeem et al. 2020).

    ``NND_k(r_i)`` is the distance from ``r_i`` to its k-th nearest other real point and
    ``B_i`` the open ball of that radius around ``r_i``;
    ``density = (1 / (k M)) sum_j sum_i 1[f_j in B_i]`` (can exceed 1) and
    ``coverage = (1 / N) sum_i 1[some f_j in B_i]`` (in [0, 1]); membership is strict.

    Parameters
    ----------
    real : array-like of shape (N, d), N >= k + 1
    fake : array-like of shape (M, d)
    k : int, default=5

    Returns
    -------
    density, coverage : float

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.topology.metrics import density_coverage
    >>> R = np.random.RandomState(0).normal(size=(500, 2))
    >>> density, coverage = density_coverage(R, R)
    >>> coverage
    1.0
    """
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1; got {k!r}.")
    real, fake = _pair(real, fake, "real", "fake")
    if len(real) < k + 1:
        raise ValueError(f"real has {len(real)} samples; density/coverage with k={k} needs at "
                         f"least k + 1 = {k + 1}.")
    nn = NearestNeighbors(n_neighbors=k + 1).fit(real)
    radii = nn.kneighbors(real)[0][:, k]
    inside, nearest = 0, np.full(len(real), np.inf)
    for block in pairwise_distances_chunked(fake, real):
        inside += int((block < radii).sum())
        np.minimum(nearest, block.min(axis=0), out=nearest)
    return float(inside / (k * len(fake))), float((nearest < radii).mean())


def bond_length_error(X, bond=CC_BOND):
    """Mean absolute deviation of the 8 ring bond lengths of conformations from ``bond``.

    The paper's error of generated cyclooctane (Section 3.4: VAE 0.165, CAE 0.155,
    DDPM 0.04 Angstrom), averaged over samples and the bonds ``|c_{i+1} - c_i|``
    (indices mod 8).

    Parameters
    ----------
    X : array-like of shape (n, 24)
        Flattened carbon positions ``(x1, y1, z1, ..., x8, y8, z8)`` in Angstrom.
    bond : float, default=1.52

    Returns
    -------
    error : float

    Examples
    --------
    >>> from geolearn.datasets import make_cyclooctane
    >>> from geolearn.topology.metrics import bond_length_error
    >>> X = make_cyclooctane(20, random_state=0)
    >>> bond_length_error(X) < 1e-8, round(bond_length_error(1.1 * X), 3)
    (True, 0.152)
    """
    return float(np.abs(bond_lengths(X) - bond).mean())


def wasserstein2_protocol(sampler, X_ref, n=3000, n_repeats=10, random_state=None,
                          return_values=False):
    """The paper's W2 protocol: mean and s.d. of ``n_repeats`` W2 values with fresh samples.

    Each repeat draws ``n`` samples from ``sampler`` and ``n`` reference points (rows of
    ``X_ref`` without replacement, or fresh draws when ``X_ref`` is a sampler) and
    computes :func:`empirical_wasserstein2` (paper Table 1: n = 3,000, 10 runs). Two
    data samplers give the "ground truth" noise floor; Welch t-tests between rows:
    ``scipy.stats.ttest_ind(a, b, equal_var=False)`` on ``return_values=True`` output.

    Parameters
    ----------
    sampler : estimator with ``sample(n, random_state)`` or callable ``f(n, random_state)``
    X_ref : array-like of shape (N, n_features) with N >= n, or a sampler
    n : int, default=3000
    n_repeats : int, default=10
    random_state : int, RandomState instance or None
    return_values : bool, default=False
        Also return the ``n_repeats`` values.

    Returns
    -------
    mean, std : float
        Mean and sample standard deviation (ddof = 1; 0 for one repeat).
    values : ndarray of shape (n_repeats,), only when ``return_values``

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.topology.metrics import wasserstein2_protocol
    >>> circle = lambda n, rs: make_circle_points(n, random_state=rs)
    >>> mean, std = wasserstein2_protocol(circle, circle, n=200, n_repeats=3, random_state=0)
    >>> bool(0.1 < mean < 0.4), bool(std < mean)   # the noise floor of two 200-point samples
    (True, True)
    """
    for name, v, lo in (("n", n, 1), ("n_repeats", n_repeats, 1)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}; got {v!r}.")
    rng = check_random_state(random_state)
    if not (hasattr(X_ref, "sample") or callable(X_ref)):
        X_ref = check_array(X_ref, dtype=np.float64, input_name="X_ref")
        if len(X_ref) < n:
            raise ValueError(f"X_ref has {len(X_ref)} samples; the protocol draws n={n} "
                             "without replacement: lower n or pass a sampler.")
    values = np.empty(n_repeats)
    for r in range(n_repeats):
        s_fake, s_ref = rng.randint(np.iinfo(np.int32).max, size=2)
        fake = draw_samples(sampler, n, int(s_fake))
        if isinstance(X_ref, np.ndarray):
            ref = X_ref[np.random.RandomState(s_ref).choice(len(X_ref), n, replace=False)]
        else:
            ref = draw_samples(X_ref, n, int(s_ref))
        values[r] = empirical_wasserstein2(ref, fake.reshape(n, -1))
    std = float(values.std(ddof=1)) if n_repeats > 1 else 0.0
    out = (float(values.mean()), std)
    return (*out, values) if return_values else out
