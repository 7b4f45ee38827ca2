"""Grassmannian tools: principal angles, distances to Schubert varieties, the flag mean.

The kernels work on padded torch tensors ``X`` of shape ``(r, n, L)`` (orthonormal
columns, zero padding) and a basis ``K`` of shape ``(n, k)``; the public functions
validate numpy input and call them in float64.
"""

import math

import numpy as np
import torch
from sklearn.utils.extmath import randomized_svd

from .._utils import to_tensor
from ._validation import check_bases

METRICS = ("chordal", "geodesic", "cos2", "cos")

# Dense SVD of the stacked bases while it costs at most this many flops (under a second);
# beyond, a randomized range finder (a dense SVD of 4096 x 5000 takes minutes on 2 cores).
_DENSE_SVD_FLOPS = 1e9


def top_svd(Y, c):
    """Top-``c`` singular triplets of a batch ``Y`` (r, L, k): ``A (r,L,c), s (r,c), B (r,k,c)``.

    Singular values are cosines of principal angles, clipped to [0, 1].
    """
    A, s, Bh = torch.linalg.svd(Y, full_matrices=False)
    return A[..., :c], s[..., :c].clamp(0.0, 1.0), Bh[..., :c, :].mT


def angles_kernel(X, dims, K, m=None):
    """Ascending principal angles (r, m) between padded bases ``X`` and ``R(K)``.

    Small angles come from the singular values of the residual ``(I - K K^T) X``
    (their sines, ascending), since ``arccos`` of a cosine near 1 loses every digit
    below ~1e-8 rad. The residuals of individual principal vectors would not do: for
    nearly equal subspaces of dimension > 1 the cosines cluster at 1 and the principal
    vectors inside the cluster are ill-determined. Angles past a set's own size are
    pi/2. Also returns the top right singular vectors ``B (r, k, m)``.
    """
    m = min(X.shape[2], K.shape[1]) if m is None else m
    _, cos, B = top_svd(X.mT @ K, m)
    R = X - K @ (K.T @ X)
    # Ascending singular values of R: first the zeros of the padded columns (l - d_i of
    # them; dropping them is right even where a true angle is 0 too), then the sines.
    sin_all = torch.linalg.svdvals(R).flip(-1)
    start = X.shape[2] - torch.as_tensor(dims, device=X.device)
    index = (start[:, None] + torch.arange(m, device=X.device)[None, :]).clamp(max=X.shape[2] - 1)
    sin = sin_all.gather(1, index).clamp(0.0, 1.0)
    theta = torch.where(cos.square() >= 0.5, torch.asin(sin), torch.acos(cos))
    theta = torch.cummax(theta, dim=1).values  # rounding can swap near-equal tiny angles
    beyond = torch.arange(m, device=X.device)[None, :] >= torch.as_tensor(dims, device=X.device)[:, None]
    return theta.masked_fill(beyond, math.pi / 2), B


def distance_from_angles(theta, metric="chordal", p=2):
    """Distance to a Schubert variety from the ``c`` smallest angles (last axis)."""
    if metric == "chordal":
        return torch.linalg.vector_norm(torch.sin(theta), ord=p, dim=-1)
    if metric == "geodesic":
        return torch.linalg.vector_norm(theta, ord=p, dim=-1)
    if metric == "cos2":
        return 1.0 - torch.cos(theta).square().mean(dim=-1)
    return 1.0 - torch.cos(theta).mean(dim=-1)


def check_metric(metric, p):
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}; got {metric!r}.")
    if not (isinstance(p, (int, float)) and not isinstance(p, bool) and (p >= 1)):
        raise ValueError(f"p must be a number >= 1 (or inf); got {p!r}.")


def _check_basis(K, n, name="K"):
    K = np.asarray(K, dtype=np.float64)
    if K.ndim == 1:
        K = K[:, None]
    if K.ndim != 2 or K.shape[0] != n or K.shape[1] < 1:
        raise ValueError(f"{name} must be an (n, k) array with n = {n} rows (the sets' "
                         f"number of features); got shape {K.shape}.")
    if not np.all(np.isfinite(K)):
        raise ValueError(f"{name} contains NaN or infinity.")
    if K.shape[1] > n:
        raise ValueError(f"{name} has more columns ({K.shape[1]}) than rows ({n}).")
    U, s, Vh = np.linalg.svd(K, full_matrices=False)
    if s[-1] <= s[0] * K.shape[0] * np.finfo(float).eps:
        raise ValueError(f"{name} is rank-deficient: its columns do not span a "
                         f"{K.shape[1]}-dimensional subspace.")
    return U @ Vh if np.abs(s - 1).max() > 1e-12 else K


def _validated(X, K):
    bases, dims = check_bases(X)
    K = _check_basis(K, bases.shape[1])
    return to_tensor(bases, dtype=None), dims, to_tensor(K, dtype=None)


def principal_angles(X, K):
    """Principal angles between each set's span and the span of ``K``.

    Parameters
    ----------
    X : array-like of shape (r, n, l) or list of (n, l_i) arrays
        Sets (columns span each subspace); orthonormalised when they are not
        orthonormal. 2-D ``(r, n)`` input means one vector per set.
    K : array-like of shape (n, k)
        Spans the subspace ``W`` (orthonormalised if needed).

    Returns
    -------
    angles : ndarray of shape (r, min(L, k))
        Ascending angles in ``[0, pi/2]``; ``L`` is the largest set size and
        angles past a smaller set's own ``min(l_i, k)`` are reported as pi/2.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import principal_angles
    >>> X = np.eye(3)[None, :, :2]                    # span(e1, e2)
    >>> K = np.array([[0.0], [1.0], [1.0]])           # the line through e2 + e3
    >>> np.degrees(principal_angles(X, K)).round(6)
    array([[45.]])
    """
    X, dims, K = _validated(X, K)
    return angles_kernel(X, dims, K)[0].numpy()


def schubert_distance(X, K, intersection_dim=1, metric="chordal", p=2):
    """Distance of each set to the Schubert variety ``{V : dim(V ∩ R(K)) >= c}``.

    With ``Theta_c`` the ``c = intersection_dim`` smallest principal angles:
    ``"chordal"`` is ``||sin Theta_c||_p``, ``"geodesic"`` is ``||Theta_c||_p``,
    ``"cos2"`` is ``1 - mean cos^2 Theta_c`` and ``"cos"`` is ``1 - mean cos Theta_c``
    (the last two ignore ``p``). Every one is 0 exactly on the variety.

    Parameters
    ----------
    X : array-like of shape (r, n, l) or list of (n, l_i) arrays
    K : array-like of shape (n, k)
    intersection_dim : int, default=1
        ``c``, at most ``min(k, min_i l_i)``.
    metric : {"chordal", "geodesic", "cos2", "cos"}, default="chordal"
    p : float, default=2
        Norm over the ``c`` angles.

    Returns
    -------
    distances : ndarray of shape (r,)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import schubert_distance
    >>> X = np.eye(4)[None, :, :2]                    # span(e1, e2) meets span(e2, e3)
    >>> K = np.eye(4)[:, 1:3]
    >>> schubert_distance(X, K, intersection_dim=1).round(12)
    array([0.])
    >>> schubert_distance(X, K, intersection_dim=2).round(12)
    array([1.])
    """
    check_metric(metric, p)
    X, dims, K = _validated(X, K)
    c = intersection_dim
    if not isinstance(c, (int, np.integer)) or isinstance(c, bool) or not (
            1 <= c <= min(K.shape[1], int(dims.min()))):
        raise ValueError(
            f"intersection_dim must be an integer in [1, min(k, min_i l_i)] = "
            f"[1, {min(K.shape[1], int(dims.min()))}]; got {intersection_dim!r}."
        )
    theta = angles_kernel(X, dims, K, m=c)[0]
    return distance_from_angles(theta, metric, p).numpy()


def stacked_flag_mean(X, weights, k, random_state=None):
    """Top-``k`` left singular vectors of ``[sqrt(w_1) X_1 | ... | sqrt(w_r) X_r]`` (numpy).

    Dense SVD while cheap, else a randomized range finder with 10 power iterations.
    """
    r, n, L = X.shape
    M = (X * np.sqrt(weights)[:, None, None]).transpose(1, 0, 2).reshape(n, r * L)
    if M.shape[1] < k or n * M.shape[1] * min(n, M.shape[1]) <= _DENSE_SVD_FLOPS:
        # fewer stacked vectors than k: complete the basis with orthogonal directions
        return np.linalg.svd(M, full_matrices=M.shape[1] < k)[0][:, :k]
    return randomized_svd(M, k, n_iter=10, random_state=random_state)[0]


def flag_mean(X, n_components):
    """The flag mean: the ``k``-dimensional subspace that best fits a collection of subspaces.

    ``K`` maximises ``sum_i ||X_i^T K||_F^2`` over orthonormal ``K``, i.e. it holds
    the top ``k`` left singular vectors of the stacked bases ``[X_1 | ... | X_r]``
    (Marrinan et al.). It is :class:`SVBF` with ``intersection_dim = min(l, k)``.
    A dense SVD is used while it costs under ~1e9 flops, else a randomized range
    finder with 10 power iterations (accurate unless singular values ``k`` and
    ``k + 1`` nearly tie).

    Parameters
    ----------
    X : array-like of shape (r, n, l) or list of (n, l_i) arrays
        Sets (orthonormalised when they are not orthonormal).
    n_components : int
        ``k``, at most ``n``.

    Returns
    -------
    K : ndarray of shape (n, k)
        Orthonormal columns, in order of decreasing singular value.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import flag_mean
    >>> X = np.eye(3)[None, :, :2].repeat(4, axis=0)   # four copies of span(e1, e2)
    >>> K = flag_mean(X, 2)
    >>> np.allclose(K @ K.T, np.diag([1.0, 1.0, 0.0]))
    True
    """
    bases, dims = check_bases(X)
    n = bases.shape[1]
    if not isinstance(n_components, (int, np.integer)) or not 1 <= n_components <= n:
        raise ValueError(f"n_components must be an integer in [1, n] = [1, {n}]; "
                         f"got {n_components!r}.")
    return stacked_flag_mean(bases, np.ones(len(bases)), int(n_components))
