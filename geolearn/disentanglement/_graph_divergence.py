"""Smoothed 1-NN graph two-sample statistic and the graph divergence loss (DAE-OG, Eqs. 2-5).

Djolonga and Krause's smoothed k-NN test with ``k = 1``: pool the target sample ``X0``
(label 0) and the model sample ``X1`` (label 1); every point picks its nearest neighbour from
a Gibbs measure at temperature ``lambda``, whose edge marginals are the row softmax of
``-d / lambda`` with the diagonal excluded; ``T`` is the expected number of cross-sample
edges. Its mean and variance under the permutation null are closed-form functions of the
marginal matrix, and ``-t = -(T - E) / sqrt(Var + 1e-5)`` is the loss.

The numpy helpers (:func:`smoothed_knn_statistic`, :func:`knn_graph_statistic`,
:func:`knn_permutation_pvalue`) evaluate the same statistic in float64 and the hard 1-NN
(k-NN) test with a permutation p-value.
"""

import numbers

import numpy as np
import torch
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from torch import nn

from .._utils import (
    check_numeric_array,
    check_scalar_param,
    check_squares_finite,
    to_tensor,
)

#: added to squared distances under the square root (distance floor 1e-5; finite gradients
#: for duplicate points)
DISTANCE_FLOOR_SQ = 1e-10
#: added to the null variance under the square root of the t-statistic
VARIANCE_SMOOTHING = 1e-5
#: above this pooled size the null moments are computed in float64
FLOAT64_MOMENTS_ABOVE = 2000


# ----------------------------------------------------------------------------- validation
def _check_lambdas(lambda_, lambdas):
    if lambdas is None:
        values = [lambda_]
        name = "lambda_"
    else:
        if isinstance(lambdas, (str, bytes)) or not hasattr(lambdas, "__iter__"):
            raise ValueError(f"lambdas must be a sequence of numbers > 0 or None; got "
                             f"{lambdas!r}.")
        values = list(lambdas)
        name = "lambdas"
        if not values:
            raise ValueError("lambdas must hold at least one temperature; got an empty "
                             "sequence.")
    for v in values:
        if (not isinstance(v, numbers.Real) or isinstance(v, (bool, np.bool_))
                or not np.isfinite(v) or v <= 0):
            raise ValueError(f"{name} must be finite and > 0 (a temperature); got {v!r}.")
    return tuple(float(v) for v in values)


def _check_distance_scale(distance_scale):
    if distance_scale is not None and distance_scale != "median":
        raise ValueError(f"distance_scale must be None or 'median'; got {distance_scale!r}.")
    return distance_scale


def _check_k(k):
    k = check_scalar_param(k, "k", kind="integer", low=1)
    if k != 1:
        raise NotImplementedError(
            f"the smoothed statistic is implemented for k=1 only; got k={k} (k > 1 needs "
            "inference with cardinality potentials).")
    return k


def _check_sample_sizes(n0, n1, names):
    for n, name in zip((n0, n1), names):
        if n < 2:
            raise ValueError(f"{name} must hold at least 2 points; got {n}.")
    if n0 + n1 < 4:  # implied by the above; kept as the spec states both conditions
        raise ValueError(f"the pooled sample must hold at least 4 points; got {n0 + n1}.")


def _check_tensor_pair(x0, x1, names=("x_target", "x_model")):
    for x, name in zip((x0, x1), names):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (n, d); got "
                            f"{type(x).__name__}.")
        if x.dim() < 1:
            raise ValueError(f"{name} must have shape (n, d, ...); got a scalar.")
    x0 = x0.reshape(x0.shape[0], -1) if x0.dim() != 2 else x0
    x1 = x1.reshape(x1.shape[0], -1) if x1.dim() != 2 else x1
    _check_sample_sizes(x0.shape[0], x1.shape[0], names)
    if x0.shape[1] != x1.shape[1]:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of features "
                         f"(after flattening); got {x0.shape[1]} and {x1.shape[1]}.")
    for x, name in zip((x0, x1), names):
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} contains NaN or infinity.")
    if x0.dtype != x1.dtype:
        dtype = torch.promote_types(x0.dtype, x1.dtype)
        x0, x1 = x0.to(dtype), x1.to(dtype)
    if not x0.is_floating_point():
        x0, x1 = x0.float(), x1.float()
    return x0, x1


def _check_array_pair(X0, X1, names=("X0", "X1")):
    out = []
    for X, name in zip((X0, X1), names):
        # finiteness is checked below, after the shapes
        X = check_numeric_array(X, name, dtype=np.float64, ensure_2d=False, allow_nd=True,
                                ensure_min_samples=0, ensure_all_finite=False)
        if X.ndim < 2:
            raise ValueError(f"{name} must be an array of shape (n, d) (extra dimensions are "
                             f"flattened); got shape {X.shape}.")
        out.append(X.reshape(len(X), int(np.prod(X.shape[1:]))))
    X0, X1 = out
    _check_sample_sizes(len(X0), len(X1), names)
    if X0.shape[1] != X1.shape[1]:
        raise ValueError(f"{names[0]} and {names[1]} must have the same number of features "
                         f"(after flattening); got {X0.shape[1]} and {X1.shape[1]}.")
    for X, name in zip((X0, X1), names):
        if not np.all(np.isfinite(X)):
            raise ValueError(f"{name} contains NaN or infinity.")
    return X0, X1


# ----------------------------------------------------------------------------- core (torch)
def _pooled_distances(x0, x1):
    """``d_ij = sqrt(||x_i - x_j||^2 + 1e-10)`` on the pooled sample (n, n).

    Built from the three blocks ``(x0, x0)``, ``(x0, x1)``, ``(x1, x1)`` rather than from the
    concatenated sample: when only the model sample needs gradients (the usual case) the
    backward pass then costs half as much (no gradient through the target-target block).
    """
    d01 = torch.cdist(x0, x1)
    sq = torch.cat([torch.cat([torch.cdist(x0, x0), d01], dim=1),
                    torch.cat([d01.T, torch.cdist(x1, x1)], dim=1)], dim=0).pow(2)
    return torch.sqrt(sq + DISTANCE_FLOOR_SQ)


def _edge_marginals(d, lambdas, distance_scale=None):
    """Row-softmax edge marginals ``P`` (n, n), zero diagonal, averaged over ``lambdas``."""
    n = d.shape[0]
    if distance_scale == "median":
        iu = torch.triu_indices(n, n, offset=1, device=d.device)
        d = d / d.detach()[iu[0], iu[1]].median()
    diagonal = torch.eye(n, dtype=torch.bool, device=d.device)
    P = None
    for lam in lambdas:
        logits = (-d / lam).masked_fill(diagonal, float("-inf"))
        P_lam = torch.log_softmax(logits, dim=1).exp()   # log-softmax: no underflow at tiny lam
        P = P_lam if P is None else P + P_lam
    return P / len(lambdas) if len(lambdas) > 1 else P


def _null_moments(P, n0, n1):
    """Mean and variance of ``T`` under the permutation null, from the marginals ``P``.

    ``W = P + P^T``; ``m = sum_{i<j} W_ij``, ``S1 = sum_{i<j} W_ij^2``,
    ``Sd = sum_i (sum_j W_ij)^2``; ``E = p1 m``,
    ``Var = S1 (p1 - 2 p2 + p3) + Sd (p2 - p3) + m^2 (p3 - p1^2)``, clamped at 0.
    Computed in float64 when ``n > 2000`` (cancellation in Var); returned in ``P``'s dtype.
    """
    n = n0 + n1
    dtype = P.dtype
    if n > FLOAT64_MOMENTS_ABOVE and P.dtype != torch.float64:
        P = P.double()
    p1 = 2.0 * n0 * n1 / (n * (n - 1))
    p2 = n0 * n1 / (n * (n - 1))
    p3 = 4.0 * n0 * (n0 - 1) * n1 * (n1 - 1) / (n * (n - 1) * (n - 2) * (n - 3))
    W = P + P.T
    m = P.sum()                      # = sum_{i<j} W_ij (= n: rows of P sum to 1)
    S1 = 0.5 * W.pow(2).sum()        # W has a zero diagonal
    Sd = W.sum(dim=1).pow(2).sum()
    E = p1 * m
    Var = S1 * (p1 - 2 * p2 + p3) + Sd * (p2 - p3) + m.pow(2) * (p3 - p1 ** 2)
    return E.to(dtype), Var.clamp_min(0.0).to(dtype)


def _cross_sum(P, n0):
    """``T = sum_{i,j} 1[pi(i) != pi(j)] P_ij``."""
    return P[:n0, n0:].sum() + P[n0:, :n0].sum()


def _smoothed_statistic(x0, x1, lambdas, distance_scale=None):
    """``(T, E, Var, t)`` as tensors for checked 2-D tensors ``x0``, ``x1``."""
    n0, n1 = x0.shape[0], x1.shape[0]
    P = _edge_marginals(_pooled_distances(x0, x1), lambdas, distance_scale)
    T = _cross_sum(P, n0)
    E, Var = _null_moments(P, n0, n1)
    t = (T - E) / torch.sqrt(Var + VARIANCE_SMOOTHING)
    return T, E, Var, t


class GraphDivergenceLoss(nn.Module):
    r"""Graph divergence loss ``-t``: the negated smoothed 1-NN two-sample t-statistic.

    With ``X = [x_target; x_model]`` pooled (``n = n0 + n1`` points),
    ``d_ij = sqrt(||x_i - x_j||^2 + 1e-10)`` and edge marginals
    ``P_ij = exp(-d_ij / lambda) / sum_{l != i} exp(-d_il / lambda)`` (``P_ii = 0``), the
    smoothed statistic is ``T = sum_{i,j} 1[pi(i) != pi(j)] P_ij``, the expected number of
    cross-sample nearest-neighbour edges (large when the samples interleave). ``E`` and
    ``Var`` are its mean and variance under random relabelling (closed form, see
    :func:`smoothed_knn_statistic`), ``t = (T - E) / sqrt(Var + 1e-5)`` and the loss is
    ``-t``: minimising it pushes the model sample to interleave with the target sample.
    Gradients flow through ``T``, ``E`` and ``Var``.

    Parameters
    ----------
    lambda_ : float, default=0.1
        Temperature (> 0). Small values approach the hard 1-NN count; when ``lambda`` is
        much smaller than typical nearest-neighbour distances the gradients vanish and a
        generator can drift: use ``distance_scale="median"`` or a larger ``lambda_``.
    lambdas : sequence of float, optional
        Several temperatures; the marginal matrices are averaged (as torch-two-sample does
        with its inverse temperatures ``alphas``). Overrides ``lambda_`` when given.
    k : int, default=1
        Neighbours per point. Only ``k=1`` is implemented (``k > 1`` raises
        ``NotImplementedError``: it needs cardinality-potential inference).
    distance_scale : {None, "median"}, default=None
        ``"median"`` divides the distances by the (detached) median pooled distance, so that
        ``lambda_`` is relative to the data scale. Not in the paper.
    return_stat : bool, default=False
        If true, ``forward`` returns ``(loss, (T, E, Var))``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.disentanglement import GraphDivergenceLoss
    >>> g = torch.Generator().manual_seed(0)
    >>> target = torch.randn(64, 2, generator=g)
    >>> loss = GraphDivergenceLoss(lambda_=0.5)
    >>> far = loss(target, torch.randn(64, 2, generator=g) + 5.0)      # separated samples
    >>> near = loss(target, torch.randn(64, 2, generator=g))           # same distribution
    >>> bool(far > 5.0), bool(abs(near) < 3.0)
    (True, True)
    >>> x = (torch.randn(32, 1, 4, 4, generator=g) + 1.0).requires_grad_()   # images flatten
    >>> value, (T, E, Var) = GraphDivergenceLoss(return_stat=True)(torch.randn(32, 1, 4, 4), x)
    >>> value.backward(); bool(torch.isfinite(x.grad).all())
    True
    """

    def __init__(self, lambda_=0.1, lambdas=None, k=1, distance_scale=None, return_stat=False):
        super().__init__()
        self.lambdas_ = _check_lambdas(lambda_, lambdas)
        self.lambda_ = lambda_
        self.lambdas = None if lambdas is None else tuple(lambdas)
        self.k = _check_k(k)
        self.distance_scale = _check_distance_scale(distance_scale)
        self.return_stat = bool(return_stat)

    def extra_repr(self):
        temps = f"lambdas={self.lambdas}" if self.lambdas is not None else f"lambda_={self.lambda_}"
        return f"{temps}, k={self.k}, distance_scale={self.distance_scale!r}"

    def forward(self, x_target, x_model):
        """``-t`` for samples ``x_target`` (n0, ...) and ``x_model`` (n1, ...)."""
        x0, x1 = _check_tensor_pair(x_target, x_model)
        T, E, Var, t = _smoothed_statistic(x0, x1, self.lambdas_, self.distance_scale)
        if self.return_stat:
            return -t, (T, E, Var)
        return -t


# ----------------------------------------------------------------------------- numpy helpers
def smoothed_knn_statistic(X0, X1, lambda_):
    """Smoothed 1-NN statistic and its permutation-null moments, in float64.

    The same computation as :class:`GraphDivergenceLoss` (which returns ``-t``), on numpy
    arrays and without gradients.

    Parameters
    ----------
    X0 : array-like of shape (n0, d) or (n0, ...)
        First sample (label 0); extra dimensions are flattened.
    X1 : array-like of shape (n1, d) or (n1, ...)
        Second sample (label 1).
    lambda_ : float
        Temperature (> 0).

    Returns
    -------
    T : float
        Expected number of cross-sample nearest-neighbour edges,
        ``sum_{i,j} 1[pi(i) != pi(j)] P_ij``.
    E : float
        Its mean under random relabelling, ``p1 m`` with ``p1 = 2 n0 n1 / (n (n - 1))`` and
        ``m = sum_{i<j} W_ij`` (``W = P + P^T``).
    Var : float
        Its null variance ``S1 (p1 - 2 p2 + p3) + Sd (p2 - p3) + m^2 (p3 - p1^2)`` with
        ``S1 = sum_{i<j} W_ij^2``, ``Sd = sum_i deg_i^2``, ``p2 = n0 n1 / (n (n - 1))`` and
        ``p3 = 4 n0 (n0 - 1) n1 (n1 - 1) / (n (n - 1) (n - 2) (n - 3))``; clamped at 0.
    t : float
        ``(T - E) / sqrt(Var + 1e-5)``.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement import smoothed_knn_statistic
    >>> rng = np.random.RandomState(0)
    >>> X0, X1 = rng.standard_normal((30, 2)), rng.standard_normal((20, 2)) + 4.0
    >>> T, E, Var, t = smoothed_knn_statistic(X0, X1, lambda_=0.5)
    >>> round(E, 4)                       # 2 n0 n1 / (n - 1) for k = 1
    24.4898
    >>> bool(T < 1.0 and t < -10)        # separated samples: few cross edges
    True
    """
    X0, X1 = _check_array_pair(X0, X1)
    # the squared distances would overflow to NaN edge marginals
    check_squares_finite(X0, "X0")
    check_squares_finite(X1, "X1")
    lambdas = _check_lambdas(lambda_, None)
    with torch.no_grad():
        out = _smoothed_statistic(to_tensor(X0, dtype=None), to_tensor(X1, dtype=None), lambdas)
    return tuple(float(v) for v in out)


def _knn_table(X0, X1, k):
    X = np.concatenate([X0, X1])
    n = len(X)
    if k > n - 1:
        raise ValueError(f"k must be at most n0 + n1 - 1 = {n - 1}; got k={k}.")
    scale = np.abs(X).max()
    if scale > np.sqrt(np.finfo(np.float64).max / (4 * X.shape[1])):
        X = X / scale  # the squared distances would overflow; the neighbours do not change
    # kneighbors() without a query excludes each point from its own neighbours (duplicates
    # included)
    return NearestNeighbors(n_neighbors=k).fit(X).kneighbors(return_distance=False)


def knn_graph_statistic(X0, X1, k=1):
    """Hard k-NN graph statistic: the number of cross-sample edges of the k-NN graph.

    ``T = sum_i sum_{j in NN_k(i)} 1[pi(i) != pi(j)]`` on the pooled sample, each point's
    neighbours taken among the other points (Euclidean). Large under ``P = Q``.

    Parameters
    ----------
    X0 : array-like of shape (n0, d) or (n0, ...)
        First sample; extra dimensions are flattened.
    X1 : array-like of shape (n1, d) or (n1, ...)
        Second sample.
    k : int, default=1
        Neighbours per point.

    Returns
    -------
    T : int

    Examples
    --------
    >>> from geolearn.disentanglement import knn_graph_statistic
    >>> X0 = [[0.0], [1.0], [10.0]]
    >>> X1 = [[0.1], [10.2], [20.0]]
    >>> knn_graph_statistic(X0, X1)   # 0, 1 -> 0.1; 10 <-> 10.2; 0.1 -> 0; 20 -> 10.2 (same)
    5
    """
    X0, X1 = _check_array_pair(X0, X1)
    k = check_scalar_param(k, "k", kind="integer", low=1)
    nbrs = _knn_table(X0, X1, k)
    labels = np.r_[np.zeros(len(X0), dtype=bool), np.ones(len(X1), dtype=bool)]
    return int(np.count_nonzero(labels[nbrs] != labels[:, None]))


def knn_permutation_pvalue(X0, X1, k=1, n_permutations=1000, random_state=None):
    """Permutation p-value of the hard k-NN graph test.

    The k-NN table of the pooled sample is computed once; each permutation relabels the
    points (keeping ``n0`` and ``n1``) and counts cross edges again. Few cross edges are
    evidence against ``H0: P = Q``, so the p-value is
    ``(1 + #{T_perm <= T_obs}) / (1 + n_permutations)``.

    Parameters
    ----------
    X0 : array-like of shape (n0, d) or (n0, ...)
        First sample; extra dimensions are flattened.
    X1 : array-like of shape (n1, d) or (n1, ...)
        Second sample.
    k : int, default=1
        Neighbours per point.
    n_permutations : int, default=1000
        Random relabellings drawn.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    pvalue : float
        In ``(0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.disentanglement import knn_permutation_pvalue
    >>> rng = np.random.RandomState(0)
    >>> X0 = rng.standard_normal((50, 2))
    >>> knn_permutation_pvalue(X0, rng.standard_normal((50, 2)) + 3.0, random_state=0)
    0.000999000999000999
    >>> bool(knn_permutation_pvalue(X0, rng.standard_normal((50, 2)), random_state=0) > 0.05)
    True
    """
    X0, X1 = _check_array_pair(X0, X1)
    k = check_scalar_param(k, "k", kind="integer", low=1)
    n_permutations = check_scalar_param(n_permutations, "n_permutations", kind="integer", low=1)
    rng = check_random_state(random_state)
    nbrs = _knn_table(X0, X1, k)
    n0, n = len(X0), len(X0) + len(X1)
    labels = np.r_[np.zeros(n0, dtype=bool), np.ones(n - n0, dtype=bool)]
    observed = np.count_nonzero(labels[nbrs] != labels[:, None])
    chunk = max(1, int(4e6 // (n * (k + 1))))     # bounded memory: chunk * n * k booleans
    count = 0
    for start in range(0, n_permutations, chunk):
        b = min(chunk, n_permutations - start)
        perm = rng.random_sample((b, n)).argsort(axis=1)   # b uniform random permutations
        lab = labels[perm]                                  # (b, n) relabellings
        T = np.count_nonzero(lab[:, nbrs] != lab[:, :, None], axis=(1, 2))
        count += int(np.count_nonzero(T <= observed))
    return (1 + count) / (1 + n_permutations)
