"""Tangent-space estimates: local PCA, and orthonormal bases from spanning sets."""

from numbers import Integral

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array

# singular values below this fraction of the largest do not count towards the rank
_RANK_TOL = 1e-3


def orthonormal_basis(vectors, dim):
    """Orthonormal bases of the spans of ``vectors`` (columns), at most ``dim`` wide.

    Parameters
    ----------
    vectors : ndarray of shape (m, n, p)
        ``p`` spanning vectors per sample, as columns.
    dim : int

    Returns
    -------
    basis : ndarray of shape (m, n, dim)
        Left singular vectors with ``s_i > 1e-3 s_1``; columns past the rank
        are zero, so ``basis @ basis^T`` is still the orthogonal projector.
    rank : ndarray of shape (m,)
    """
    U, s, _ = np.linalg.svd(vectors, full_matrices=False)
    U, s = U[:, :, :dim], s[:, :dim]
    keep = s > _RANK_TOL * s[:, :1]
    basis = U * keep[:, None, :]
    if basis.shape[2] < dim:  # fewer spanning vectors than dim
        basis = np.concatenate(
            [basis, np.zeros((*basis.shape[:2], dim - basis.shape[2]))], axis=2)
    return basis, keep.sum(axis=1)


def local_pca_tangent_basis(X_ref, X, dim, n_neighbors=20):
    """Tangent bases by PCA of the nearest reference points (the paper's baseline).

    Parameters
    ----------
    X_ref : array-like of shape (N, n)
        Points sampling the manifold.
    X : array-like of shape (m, n)
        Where to estimate the tangent spaces.
    dim : int
        Tangent dimension.
    n_neighbors : int, default=20
        Reference points per neighbourhood, centred at their mean.

    Returns
    -------
    B : ndarray of shape (m, n, dim)
        Top ``dim`` principal directions as orthonormal columns.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import local_pca_tangent_basis
    >>> X = make_circle_points(400, grid=True)
    >>> B = local_pca_tangent_basis(X, [[1.0, 0.0]], dim=1)
    >>> B.shape, bool(abs(B[0, 1, 0]) > 0.999)  # the tangent at (1, 0) is vertical
    ((1, 2, 1), True)
    """
    X_ref = check_array(X_ref, dtype=np.float64, ensure_min_samples=2, input_name="X_ref")
    X = check_array(X, dtype=np.float64, input_name="X")
    if X.shape[1] != X_ref.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but X_ref has {X_ref.shape[1]}.")
    if not isinstance(dim, Integral) or not 1 <= dim <= X.shape[1]:
        raise ValueError(f"dim must be an integer in [1, n_features = {X.shape[1]}]; got {dim!r}.")
    if not isinstance(n_neighbors, Integral) or not dim < n_neighbors <= len(X_ref):
        raise ValueError(f"n_neighbors must be an integer in ({dim}, {len(X_ref)}]; "
                         f"got {n_neighbors!r}.")
    index = NearestNeighbors(n_neighbors=n_neighbors).fit(X_ref)
    return local_pca(X_ref, index, X, dim)[0]


def local_pca(X_ref, index, X, dim):
    """Local PCA at each row of ``X`` over its neighbours in a fitted ``NearestNeighbors``.

    Returns ``(B, means)``: the top ``dim`` principal directions ``(m, n, dim)``
    as orthonormal columns and the neighbourhood means ``(m, n)``.
    """
    idx = index.kneighbors(X, return_distance=False)
    patches = X_ref[idx]
    means = patches.mean(axis=1)
    _, _, Vt = np.linalg.svd(patches - means[:, None], full_matrices=False)
    return Vt[:, :dim].transpose(0, 2, 1), means
