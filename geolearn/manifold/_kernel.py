"""Numerical building blocks of the CIDM: bandwidths, epsilon tuning, dimension, eigensolver."""

import warnings

import numpy as np
from scipy import linalg, sparse
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh, lobpcg
from scipy.special import logsumexp

from .._utils import resolve_device, to_numpy, to_tensor, warn_user
from ..exceptions import ConvergenceWarning

# grid of the Berry-Giannakis-Harlim epsilon search: m * 2^(j/4), j = -40..40
_BGH_EXPONENTS = np.arange(-40, 41) / 4.0
# relative step of the log-slope that estimates the intrinsic dimension
_DIM_STEP = 1e-4


def bandwidth_from_distances(dist, k_bandwidth, statistic):
    """rho from sorted neighbour distances (rank 1 in column 0 is dropped).

    Parameters
    ----------
    dist : ndarray of shape (m, >= k_bandwidth)
        Distances to the nearest training points, ascending.
    k_bandwidth : int
    statistic : {"mean", "kth"}
    """
    if statistic == "mean":
        return dist[:, 1:k_bandwidth].mean(axis=1)
    return dist[:, k_bandwidth - 1].copy()


def bandwidth_gradient(x, neighbors, k_bandwidth, statistic):
    """Gradient of rho at rows ``x`` given their sorted training neighbours.

    Parameters
    ----------
    x : ndarray of shape (m, n)
    neighbors : ndarray of shape (m, >= k_bandwidth, n)
        Coordinates of the nearest training points, ascending by distance.
    """
    if statistic == "mean":
        diff = x[:, None, :] - neighbors[:, 1:k_bandwidth]
    else:
        diff = x[:, None, :] - neighbors[:, k_bandwidth - 1:k_bandwidth]
    norm = np.linalg.norm(diff, axis=2, keepdims=True)
    unit = np.divide(diff, norm, out=np.zeros_like(diff), where=norm > 0)
    return unit.mean(axis=1)


def _log_kernel_sums(delta2, n_samples, eps):
    """ln S(e) = ln(N + sum exp(-delta2 / (2 e))) for each e in ``eps``, stably."""
    eps = np.atleast_1d(eps)
    a = -delta2.ravel()[None, :] / (2.0 * eps[:, None])
    a = np.concatenate([a, np.full((len(eps), 1), np.log(n_samples))], axis=1)
    return logsumexp(a, axis=1)


def bgh_epsilon(delta2, n_samples):
    """Berry-Giannakis-Harlim epsilon: the e of steepest d ln S / d ln e.

    ``delta2`` holds the squared dissimilarities of ranks 2..k_d (self-pairs
    excluded; they enter S as the constant N).
    """
    nonzero = delta2[delta2 > 0]
    scale = np.median(nonzero) if nonzero.size else 1.0
    eps = scale * 2.0 ** _BGH_EXPONENTS
    log_s = _log_kernel_sums(delta2, n_samples, eps)
    slope = (log_s[2:] - log_s[:-2]) / (np.log(eps[2:]) - np.log(eps[:-2]))
    return float(eps[1 + np.argmax(slope)])


def estimate_dimension(delta2, n_samples, eps):
    """Intrinsic dimension 2 d ln S / d ln e at the fitted ``eps`` (reference code)."""
    h = _DIM_STEP
    log_s = _log_kernel_sums(delta2, n_samples, np.array([eps * (1 + h), eps * (1 - h)]))
    return float(2.0 * (log_s[0] - log_s[1]) / (np.log1p(h) - np.log1p(-h)))


def top_eigenpairs(A, n_eigenpairs, solver, tol, random_state, device="cpu"):
    """The algebraically largest eigenpairs of the symmetric ``A``, descending.

    ``solver`` is "arpack" (Lanczos, ``which="LA"``), "lobpcg" or "dense". On
    ARPACK non-convergence the solve is retried once with LOBPCG. LOBPCG runs
    ``torch.lobpcg`` when ``device`` resolves to a CUDA device, else SciPy's.
    """
    n = A.shape[0]
    if solver == "dense":
        dense = A.toarray() if sparse.issparse(A) else A
        w, v = linalg.eigh(dense, subset_by_index=[n - n_eigenpairs, n - 1])
    elif solver == "arpack":
        try:
            w, v = _arpack_top(A, n_eigenpairs, tol, random_state)
        except ArpackNoConvergence:
            warn_user("ARPACK did not converge; retrying with LOBPCG.", ConvergenceWarning)
            return top_eigenpairs(A, n_eigenpairs, "lobpcg", tol, random_state)
    else:
        X0 = random_state.standard_normal((n, n_eigenpairs))
        tol = max(tol, 1e-8)
        if resolve_device(device).type == "cuda":
            w, v = torch_lobpcg(A, X0, tol, device)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # lobpcg's convergence chatter
                w, v = lobpcg(A, X0, largest=True, tol=tol, maxiter=2000)
        residual = np.linalg.norm(A @ v - v * w, axis=0)
        if not np.all(residual < 1e-5):
            raise RuntimeError(
                f"LOBPCG did not converge (largest residual {residual.max():.1e}); use "
                "eigen_solver='dense' for small problems or raise n_neighbors."
            )
    order = np.argsort(w)[::-1]
    return w[order], v[:, order]


def torch_lobpcg(A, X0, tol, device):
    """``torch.lobpcg`` (largest eigenpairs) of the symmetric ``A`` on ``device``, in float64.

    ``A`` is a dense array or a SciPy sparse matrix; the result comes back as
    NumPy arrays. The GPU path of ``eigen_solver="lobpcg"``.
    """
    import torch

    device = resolve_device(device)
    if sparse.issparse(A):
        A = A.tocoo()
        A.sum_duplicates()  # canonical (sorted, unique) entries: a coalesced tensor
        indices = to_tensor(np.vstack([A.row, A.col]), dtype=torch.int64)
        A_t = torch.sparse_coo_tensor(indices, to_tensor(A.data, dtype=torch.float64),
                                      size=A.shape, is_coalesced=True, check_invariants=False,
                                      device=device)
    else:
        A_t = to_tensor(A, device=device, dtype=torch.float64)
    X_t = to_tensor(X0, device=device, dtype=torch.float64)
    w, v = torch.lobpcg(A_t, X=X_t, largest=True, tol=tol, niter=2000)
    return to_numpy(w), to_numpy(v)


def _arpack_top(A, n_eigenpairs, tol, random_state):
    """Lanczos (``which="LA"``) for the top eigenpairs, completing repeated eigenvalues.

    Lanczos from one start vector sees one copy of an exactly repeated
    eigenvalue (grids, symmetric designs). So the found pairs are deflated and
    the top eigenpair of what is left is computed, one at a time, until it lies
    below the smallest kept eigenvalue. A single-pair solve costs a fraction of
    the first one, and on spectra without repeats one is all it takes.
    """
    n = A.shape[0]
    # one pair beyond those kept: ARPACK's last Ritz vector converges the slowest
    w, v = eigsh(A, k=min(n_eigenpairs + 1, n - 1), which="LA", tol=tol,
                 v0=random_state.uniform(-1, 1, n))
    order = np.argsort(w)[::-1][:n_eigenpairs]
    w, v = w[order], v[:, order]
    for _ in range(n_eigenpairs if n - n_eigenpairs > 2 else 0):
        shift = w - (w.min() - 1.0)  # found pairs move below everything kept

        def matvec(x, w_v=v, s=shift):
            x = x.ravel()
            return A @ x - w_v @ (s * (w_v.T @ x))

        op = LinearOperator(A.shape, matvec=matvec, dtype=np.float64)
        top, u = eigsh(op, k=1, which="LA", tol=tol, v0=random_state.uniform(-1, 1, n))
        if top[0] <= w[-1] + 1e-12:
            break
        w = np.concatenate([w[:-1], top])
        v = np.concatenate([v[:, :-1], u], axis=1)
        order = np.argsort(w)[::-1]
        w, v = w[order], v[:, order]
    return w, v


def softmax_rows(a):
    """Row-wise softmax, shifted by the row max so that no row underflows to 0/0."""
    p = np.exp(a - a.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p
