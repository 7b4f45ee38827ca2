"""The conformally invariant diffusion map (CIDM) with Nyström extension and projection."""

import math
import time
from numbers import Integral, Real

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._utils import (
    busy_blas_threads,
    check_memory,
    check_squares_finite,
    fitted_on_success,
    resolve_device,
    resolve_n_jobs,
    thread_map,
    warn_user,
)
from ..exceptions import ConvergenceWarning, NumericalWarning
from ._kernel import (
    bandwidth_from_distances,
    bandwidth_gradient,
    bgh_epsilon,
    estimate_dimension,
    softmax_rows,
    top_eigenpairs,
)
from ._neighbors import make_neighbors
from ._tangent import local_pca_tangent_basis, orthonormal_basis

_MAX_DENSE = 20000
# up to this N, eigen_solver="auto" uses LAPACK: a few seconds at most, and exact on the
# repeated (grids) and clustered (uneven density) spectra where Lanczos struggles
_AUTO_LAPACK = 2000
_AUTO_DENSE = 4000
# bytes of float64 scratch per chunk of Nyström queries or kernel rows
_CHUNK_BYTES = 64 * 2**20


def _sq_distances(A, B, B_sq):
    """Squared Euclidean distances by BLAS, ||a||^2 + ||b||^2 - 2 a.b, clipped at 0."""
    d2 = A @ B.T
    d2 *= -2
    d2 += np.einsum("ij,ij->i", A, A)[:, None]
    d2 += B_sq[None, :]
    return np.maximum(d2, 0, out=d2)


def _ranked(sq_dist, n, A, B):
    """Distances and indices of the ``n`` nearest rows of ``B`` to each row of ``A``, ascending.

    Candidates come from the BLAS distances ``sq_dist``; their distances are then
    recomputed as ``||a - b||``, which resolves (near-)duplicates that the
    expanded form blurs at about 1e-8 ||a||.
    """
    n = min(n, sq_dist.shape[1])
    part = np.argpartition(sq_dist, n - 1, axis=1)[:, :n]
    dist = np.linalg.norm(A[:, None, :] - B[part], axis=2)
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(dist, order, axis=1), np.take_along_axis(part, order, axis=1)


class CIDM(TransformerMixin, BaseEstimator):
    """Conformally invariant diffusion map with Nyström extension and projection.

    Learns a data manifold from samples with the variable-bandwidth kernel
    ``exp(-||x - y||^2 / (2 eps rho(x) rho(y)))``, where ``rho`` is the mean
    distance to the nearest neighbours, and solves the symmetric eigenproblem
    of its Markov normalisation. The eigenvectors approximate Laplace-Beltrami
    eigenfunctions of a conformal metric whose volume is the sampling density,
    so the spectrum is insensitive to very uneven sampling. ``transform``
    evaluates the eigenfunctions at new points (Nyström extension),
    :meth:`nystrom_project` maps points near the manifold onto it, and
    :meth:`gradient` / :meth:`to_torch` make both differentiable.

    Parameters
    ----------
    n_eigenpairs : int, default=20
        Number L of eigenpairs, the trivial one included.
    n_components : int, default=None
        Nontrivial coordinates returned by ``transform`` and used by the
        projection; None gives ``n_eigenpairs - 1``.
    n_neighbors : "auto", int or None, default="auto"
        Kernel support. None: dense kernel. int: kNN kernel with this many
        neighbours (self included), symmetrised as ``(W + W^T) / 2``. "auto":
        dense when N <= 4000, else ``ceil(ln(N)^2)`` neighbours.
    k_bandwidth : int, default=None
        Neighbours (self included) behind ``rho``; None gives
        ``max(2, ceil(ln N))``. About 16 is more stable on randomly sampled data.
    bandwidth : {"cidm", "fixed"}, default="cidm"
        "fixed" sets ``rho = 1`` and applies the diffusion-maps normalisation
        ``alpha``: the standard diffusion map, for comparisons.
    bandwidth_statistic : {"mean", "kth"}, default="mean"
        ``rho`` as the mean distance over ranks 2..k_bandwidth, or the distance
        at rank k_bandwidth.
    epsilon : "auto", "bgh" or float, default="auto"
        Kernel scale in ``exp(-delta^2 / (2 epsilon))``. "auto": the mean
        squared dissimilarity of ranks 2..k_bandwidth; "bgh": the
        Berry-Giannakis-Harlim rule.
    alpha : float in [0, 1], default=1.0
        Diffusion-maps normalisation, used only when ``bandwidth="fixed"``.
    diffusion_time : float >= 0, default=0.0
        ``transform`` returns ``phi_l * lambda_l ** diffusion_time``.
    eigen_solver : {"auto", "arpack", "lobpcg", "dense"}, default="auto"
        "auto" is "dense" (LAPACK) when N <= 2000 or ``n_eigenpairs > N / 3``,
        else "arpack" (Lanczos, ``which="LA"``, with a deflation pass that
        completes repeated eigenvalues).
    tol : float, default=1e-10
        ARPACK tolerance.
    batch_size : int, default=1024
        Query rows per chunk of the Nyström extension (memory bound).
    tangent : {"jacobian", "local_pca"}, default="jacobian"
        Method behind :meth:`tangent_basis`.
    intrinsic_dim : int, default=None
        Manifold dimension used by the tangent tools; None rounds ``dimension_``.
    random_state : int, RandomState instance or None, default=None
        Seeds the eigensolver's start vector (and the approximate index).
    n_jobs : int, default=None
        Threads of the nearest-neighbour queries and of the Nyström
        extension (``transform``, projection, gradients); None means 1, -1
        all cores.
    device : str, default="auto"
        Device of :meth:`to_torch` modules, and of ``eigen_solver="lobpcg"``,
        which runs ``torch.lobpcg`` when this resolves to a CUDA device.
    nn_backend : {"exact", "ann"}, default="exact"
        Nearest-neighbour search. "exact": scipy's KD-tree up to 16 dimensions,
        scikit-learn's ``NearestNeighbors`` above (ball tree or BLAS brute force
        for images); on data near a low-dimensional manifold, out-of-sample
        queries start from the neighbour lists of the training points (same
        neighbours, about twice as fast on a 2-D manifold). "ann": an
        HNSW graph from the optional ``hnswlib`` package (``pip install
        geolearn[ann]``), faster for large N in high dimension; distances
        are still exact, only the candidate neighbours are approximate.
    verbose : int, default=0
        Print the time of each fitting stage and show a progress bar over
        the chunks of large Nyström extensions.

    Attributes
    ----------
    X_fit_ : ndarray of shape (N, n)
        Training data (float64, flattened images).
    image_shape_ : tuple or None
        Shape of one image when X was ``(N, C, H, W)``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined only when X has string feature names.
    n_samples_fit_ : int
    kernel_mode_ : {"dense", "knn"}
    n_neighbors_ : int or None
    k_bandwidth_ : int
    rho_ : ndarray of shape (N,)
        Bandwidth at the training points (ones for ``bandwidth="fixed"``).
    epsilon_ : float
    dimension_ : float
        Estimated intrinsic dimension.
    intrinsic_dim_ : int
    degree_ : ndarray of shape (N,)
    stationary_ : ndarray of shape (N,)
        Stationary distribution ``pi`` of the Markov chain.
    eigenvalues_ : ndarray of shape (L,)
        Markov eigenvalues ``lambda_l``, descending, ``lambda_0 = 1``.
    laplacian_eigenvalues_ : ndarray of shape (L,)
        ``xi_l = -ln(lambda_l) / epsilon_`` (inf where ``lambda_l <= 0``).
    eigenvectors_ : ndarray of shape (N, L)
        Eigenfunctions at the training points, ``pi``-orthonormal, column 0 = 1.
    embedding_ : ndarray of shape (N, n_components)
        Diffusion coordinates of the training points (what :meth:`fit_transform`
        returns), as in scikit-learn's manifold learners.
    coefficients_ : ndarray of shape (L, n)
        ``X_hat``: the data coordinates expanded in the eigenfunctions.
    sampling_density_ : ndarray of shape (N,)
    nn_ : object
        Neighbour index fitted on ``X_fit_``: exact (scipy's KD-tree up to 16
        dimensions, scikit-learn's ``NearestNeighbors`` above) or approximate (HNSW).
        The exact index keeps each training point's ``ceil(1.5 k)`` nearest
        neighbours (int32, 80 MB at N = 100,000 and k = 133) when they answer
        at least 30% of held-out queries.

    See Also
    --------
    SECVectorFields : tangent vector fields from the CIDM eigenfunctions.
    fixed_bandwidth_diffusion_map : the standard diffusion map baseline.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import CIDM
    >>> X = make_circle_points(200, grid=True)
    >>> cidm = CIDM(n_eigenpairs=5).fit(X)
    >>> ratios = cidm.laplacian_eigenvalues_[1:] / cidm.laplacian_eigenvalues_[1]
    >>> np.round(ratios, 2)
    array([1., 1., 4., 4.])
    >>> P = cidm.nystrom_project(1.1 * X[:3])
    >>> bool(np.allclose(np.linalg.norm(P, axis=1), 1, atol=0.05))
    True
    """

    _parameter_constraints = {
        "n_eigenpairs": [Interval(Integral, 2, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "n_neighbors": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "k_bandwidth": [Interval(Integral, 2, None, closed="left"), None],
        "bandwidth": [StrOptions({"cidm", "fixed"})],
        "bandwidth_statistic": [StrOptions({"mean", "kth"})],
        "epsilon": [StrOptions({"auto", "bgh"}), Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, 1, closed="both")],
        "diffusion_time": [Interval(Real, 0, None, closed="left")],
        "eigen_solver": [StrOptions({"auto", "arpack", "lobpcg", "dense"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "tangent": [StrOptions({"jacobian", "local_pca"})],
        "intrinsic_dim": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "device": "no_validation",
        "nn_backend": [StrOptions({"exact", "ann"})],
        "verbose": ["verbose"],
    }

    def __init__(self, n_eigenpairs=20, n_components=None, n_neighbors="auto", k_bandwidth=None,
                 bandwidth="cidm", bandwidth_statistic="mean", epsilon="auto", alpha=1.0,
                 diffusion_time=0.0, eigen_solver="auto", tol=1e-10, batch_size=1024,
                 tangent="jacobian", intrinsic_dim=None, random_state=None, n_jobs=None,
                 device="auto", nn_backend="exact", verbose=0):
        self.n_eigenpairs = n_eigenpairs
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.k_bandwidth = k_bandwidth
        self.bandwidth = bandwidth
        self.bandwidth_statistic = bandwidth_statistic
        self.epsilon = epsilon
        self.alpha = alpha
        self.diffusion_time = diffusion_time
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.batch_size = batch_size
        self.tangent = tangent
        self.intrinsic_dim = intrinsic_dim
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device
        self.nn_backend = nn_backend
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _validate_X(self, X, reset):
        image_shape = None
        if getattr(X, "ndim", None) == 4:
            image_shape = tuple(X.shape[1:])
            X = np.asarray(X).reshape(len(X), -1)
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        check_squares_finite(X)  # the kernel of overflowing distances would be 0/0
        if reset:
            self.image_shape_ = image_shape
        return X

    def _resolve_sizes(self, N):
        k_b = self.k_bandwidth if self.k_bandwidth is not None else max(2, math.ceil(math.log(N)))
        L = self.n_eigenpairs
        # only the dense solver can return all N eigenpairs (ARPACK needs L < N)
        n_pairs = L if self.eigen_solver == "dense" else L + 1
        need = max(n_pairs, k_b + 1, 4)
        if N < need:
            what = "n_eigenpairs" if self.eigen_solver == "dense" else "n_eigenpairs + 1"
            raise ValueError(
                f"X has {N} samples; CIDM needs at least {need} ({what} = {n_pairs}, "
                f"k_bandwidth + 1 = {k_b + 1}, and 4)."
            )
        K = L - 1 if self.n_components is None else self.n_components
        if K > L - 1:
            raise ValueError(
                f"n_components={self.n_components} must be <= n_eigenpairs - 1 = {L - 1}."
            )
        if self.n_neighbors is None or (self.n_neighbors == "auto" and N <= _AUTO_DENSE):
            k = None
        elif self.n_neighbors == "auto":
            k = math.ceil(math.log(N) ** 2)
        else:
            k = self.n_neighbors
            if not k_b <= k <= N:
                raise ValueError(
                    f"n_neighbors={k} must be between k_bandwidth={k_b} and the number of "
                    f"samples {N}."
                )
        if k is None and N > _MAX_DENSE:
            raise ValueError(
                f"a dense kernel on {N} samples would need about {8 * N * N / 2**30:.0f} GiB; "
                "pass n_neighbors=int (e.g. ceil(ln(N)^2)) for a sparse kNN kernel."
            )
        k_d = min(N, max(2, math.ceil(math.log(N) ** 2)))
        return k_b, k, k_d, K

    # ------------------------------------------------------------------ fit
    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the manifold: kernel, eigenfunctions and the coefficients of the data.

        Parameters
        ----------
        X : array-like of shape (N, n) or (N, C, H, W)
        y : ignored

        Returns
        -------
        self : CIDM
        """
        X = self._validate_X(X, reset=True)
        N = X.shape[0]
        k_b, k, k_d, K = self._resolve_sizes(N)
        # the eigensolver's device is checked before any work (a clear error without CUDA)
        device = resolve_device(self.device) if self.eigen_solver == "lobpcg" else "cpu"
        self.k_bandwidth_, self.n_neighbors_, self.n_components_ = k_b, k, K
        self.kernel_mode_ = "dense" if k is None else "knn"
        if k is None:  # distances, kernel, its normalisation and the eigensolver's copy
            check_memory(4 * N * N * 8, f"a dense CIDM kernel of N = {N} points",
                         "use a kNN kernel (n_neighbors='auto' or an int)")
        self.X_fit_ = np.array(X, dtype=np.float64, copy=True)
        self.n_samples_fit_ = N

        t0 = time.perf_counter()
        sq_dist, dist, idx = self._fit_neighbors(max(k_b, k_d, k or 0), t0)
        delta2 = self._fit_bandwidths(dist, idx, k_d, t0)
        kernel = self._kernel_matrix(sq_dist, idx, delta2)
        degree = np.asarray(kernel.sum(axis=1)).ravel()
        self.degree_ = degree
        self.stationary_ = degree / degree.sum()
        self._log(f"{self.kernel_mode_} kernel", t0)
        self._fit_eigenproblem(kernel, degree, device)
        self._log(f"{self.n_eigenpairs} eigenpairs", t0)
        self.coefficients_ = (self.eigenvectors_ * self.stationary_[:, None]).T @ self.X_fit_
        d, eps = self.dimension_, self.epsilon_
        self.sampling_density_ = degree / (N * self.rho_**d * (2 * np.pi * eps) ** (d / 2))
        return self

    def _fit_neighbors(self, n_ranked, t0):
        """The neighbour index, and the ``n_ranked`` nearest training points of each one.

        Returns the dense squared distances (None in kNN mode), and the ranked
        distances and indices, shape (N, n_ranked).
        """
        self.nn_ = make_neighbors(self.nn_backend, self.n_jobs, self.random_state)
        if self.n_neighbors_ is None:
            self.nn_.fit(self.X_fit_)
            # dense mode: ranks and kernel from one distance matrix, as in the Nyström path
            self._sq_norms = np.einsum("ij,ij->i", self.X_fit_, self.X_fit_)
            sq_dist = _sq_distances(self.X_fit_, self.X_fit_, self._sq_norms)
            np.fill_diagonal(sq_dist, 0.0)
            dist, idx = _ranked(sq_dist, n_ranked, self.X_fit_, self.X_fit_)
        else:
            sq_dist = None
            # the Nyström rows will ask for max(k_b, k) neighbours of each new point
            dist, idx = self.nn_.fit_kneighbors(
                self.X_fit_, n_ranked, max(self.k_bandwidth_, self.n_neighbors_), self.n_jobs)
        seeds = getattr(self.nn_, "seeds_", None)
        kept = "" if seeds is None else f" (seed lists of {seeds.shape[1]} kept)"
        self._log(f"{n_ranked} nearest neighbours of {self.n_samples_fit_} points{kept}", t0)
        return sq_dist, dist, idx

    def _fit_bandwidths(self, dist, idx, k_d, t0):
        """``rho_``, ``epsilon_`` and the dimension; returns the scaled ``delta^2`` (N, ranks)."""
        N, k_b = self.n_samples_fit_, self.k_bandwidth_
        rho = bandwidth_from_distances(dist, k_b, self.bandwidth_statistic)
        if self.bandwidth == "cidm":
            bad = rho < 1e-12 * max(np.median(rho), np.finfo(float).tiny)
            if bad.any():
                raise ValueError(
                    f"{int(bad.sum())} training points have a zero bandwidth rho (duplicates or "
                    "near-duplicates among their nearest neighbours): remove duplicates or raise "
                    f"k_bandwidth (now {k_b})."
                )
            self.rho_ = rho
        else:
            self.rho_ = np.ones(N)
        delta2 = dist**2 / (self.rho_[:, None] * self.rho_[idx])
        if self.epsilon == "auto":
            eps = float(delta2[:, 1:k_b].mean())
        elif self.epsilon == "bgh":
            eps = bgh_epsilon(delta2[:, 1:k_d], N)
        else:
            eps = float(self.epsilon)
        if not eps > 0:
            raise ValueError("epsilon='auto' gave 0: the neighbourhoods are degenerate.")
        self.epsilon_ = eps
        self.dimension_ = estimate_dimension(delta2[:, 1:k_d], N, eps)
        self.intrinsic_dim_ = (self.intrinsic_dim if self.intrinsic_dim is not None
                               else max(1, round(self.dimension_)))
        self._log(f"bandwidths, epsilon = {eps:.4g}, dimension = {self.dimension_:.3g}", t0)
        return delta2

    def _log(self, stage, t0):
        if self.verbose:
            print(f"[CIDM] {stage}: {time.perf_counter() - t0:.2f} s elapsed", flush=True)

    def _kernel_matrix(self, sq_dist, idx, delta2):
        """The kernel matrix (dense array or symmetric CSR), fixed-bandwidth normalised."""
        N, eps, k = self.n_samples_fit_, self.epsilon_, self.n_neighbors_
        if k is None:
            K = sq_dist  # overwritten in place: the N x N distances are not needed after this
            K /= self.rho_[:, None] * self.rho_[None, :] * (-2 * eps)
            np.exp(K, out=K)
            np.fill_diagonal(K, 1.0)
            K += K.T
            K /= 2
        else:
            W = sparse.csr_matrix(
                (np.exp(-delta2[:, :k] / (2 * eps)).ravel(), idx[:, :k].ravel(),
                 np.arange(0, N * k + 1, k)),
                shape=(N, N),
            )
            K = ((W + W.T) / 2).tocsr()
        if self.bandwidth == "fixed":
            self._q_alpha = np.asarray(K.sum(axis=1)).ravel() ** self.alpha
            scale = 1.0 / self._q_alpha
            K = (K * scale[:, None] * scale[None, :] if k is None
                 else sparse.diags(scale) @ K @ sparse.diags(scale))
        else:
            self._q_alpha = None
        return K

    def _fit_eigenproblem(self, kernel, degree, device="cpu"):
        N, L = self.n_samples_fit_, self.n_eigenpairs
        s = 1.0 / np.sqrt(degree)
        if sparse.issparse(kernel):
            sym = sparse.diags(s) @ kernel @ sparse.diags(s)
            sym = ((sym + sym.T) / 2).tocsr()
        else:
            sym = kernel * s[:, None] * s[None, :]
            sym = (sym + sym.T) / 2
        solver = self.eigen_solver
        if solver == "auto":
            solver = "dense" if L > N / 3 or N <= _AUTO_LAPACK else "arpack"
        if solver == "arpack" and L >= N:
            raise ValueError(f"eigen_solver='arpack' needs n_eigenpairs < N = {N}; use 'dense'.")
        # the dense solve's threads collapse beside another busy process, and help idle
        # (docs/user_guide/threads.md)
        with busy_blas_threads():
            lam, v = top_eigenpairs(sym, L, solver, self.tol,
                                    check_random_state(self.random_state), device=device)
        if abs(lam[0] - 1) > 1e-8:
            warn_user(f"the top Markov eigenvalue is {lam[0]:.10f}, not 1: the eigensolver "
                      "may not have converged.", ConvergenceWarning)
        if lam[1] > 1 - 1e-10:
            # weights below 1e-8 barely couple the components at a gap of 1e-10
            n_comp = connected_components(sparse.csr_matrix(kernel > 1e-8), directed=False)[0]
            warn_user(f"the kernel graph is numerically disconnected ({n_comp} components at kernel "
            f"weights > 1e-8, lambda_1 = "
            f"{lam[1]:.12f}): the eigenfunctions are indicator-like. Raise epsilon, "
            "k_bandwidth or n_neighbors.", NumericalWarning)
        if np.any(np.abs(lam) < 1e-6):
            warn_user("some eigenvalues are below 1e-6 in magnitude; the Nyström extension "
                      "amplifies by 1/lambda. Lower n_eigenpairs.", NumericalWarning)
        phi = v * s[:, None]
        phi /= np.sqrt(self.stationary_ @ phi**2)
        phi[:, 0] = 1.0
        flip = phi[np.argmax(np.abs(phi), axis=0), np.arange(L)] < 0
        phi[:, flip] *= -1
        self.eigenvalues_ = lam
        self.eigenvectors_ = phi
        with np.errstate(divide="ignore", invalid="ignore"):
            xi = np.where(lam > 0, -np.log(np.where(lam > 0, lam, 1.0)) / self.epsilon_, np.inf)
        xi[0] = 0.0
        self.laplacian_eigenvalues_ = xi

    # ------------------------------------------------------------------ Nyström
    def _check_query(self, X):
        check_is_fitted(self)
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 4:
            if self.image_shape_ is not None and tuple(shape[1:]) != self.image_shape_:
                raise ValueError(f"X holds images of shape {tuple(shape[1:])} but the CIDM was "
                                 f"fitted on images of shape {self.image_shape_}.")
        return self._validate_X(X, reset=False)

    def _nystrom(self, X, n_eval, with_gradient=False):
        """Eigenfunctions 0..n_eval-1 at rows ``X`` (and their gradients), in chunks.

        Chunks run in ``n_jobs`` threads (NumPy, BLAS and the neighbour queries
        release the GIL). Returns ``Phi`` of shape (m, n_eval) and, when asked,
        ``dPhi`` of shape (m, n_eval, n).
        """
        m, n = X.shape
        support = self.n_samples_fit_ if self.n_neighbors_ is None else self.n_neighbors_
        per_row = 8 * support * (n_eval * (n if with_gradient else 1) + n + 4)
        step = max(1, min(self.batch_size, _CHUNK_BYTES // per_row))
        starts = range(0, m, step)
        n_jobs = resolve_n_jobs(self.n_jobs)
        # each row's nearest training point seeds its neighbour query, and rows grouped by
        # where it falls in the tree read the same few leaves and seed lists (about 1.5x
        # faster at 100k rows); each row's result depends on that row only, so the order
        # changes no value
        nearest = self.nn_.nearest(X, n_jobs) if self.n_neighbors_ is not None else None
        order = self.nn_.locality_order(nearest) if nearest is not None else None
        if order is not None:
            X = X[order]
            nearest = (nearest[0][order], nearest[1][order])
        # contiguous once: the sparse product would copy a column slice in every chunk
        phi = np.ascontiguousarray(self.eigenvectors_[:, :n_eval])
        # several chunks: the chunks are the parallelism (one thread each); a single chunk
        # spreads its neighbour query over the n_jobs threads instead
        inner = 1 if len(starts) > 1 else n_jobs
        parts = thread_map(
            lambda s: self._nystrom_chunk(
                X[s:s + step], phi, with_gradient, inner,
                None if nearest is None else (nearest[0][s:s + step], nearest[1][s:s + step])),
            starts, n_jobs, progress=lambda it: self._progress(it, len(starts)))
        Phi = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, n_eval))
        dPhi = np.concatenate([p[1] for p in parts]) if with_gradient and parts else None
        if order is not None:
            inverse = np.empty_like(order)
            inverse[order] = np.arange(len(order))
            Phi = Phi[inverse]
            dPhi = None if dPhi is None else dPhi[inverse]
        return Phi, dPhi

    def _progress(self, iterable, total):
        if self.verbose and total > 1:
            from tqdm.auto import tqdm

            return tqdm(iterable, total=total, desc="CIDM Nyström", unit="chunk")
        return iterable

    def _nystrom_chunk(self, x, phi, with_gradient, n_jobs, nearest):
        """Phi (b, n_eval) and optionally dPhi (b, n_eval, n) at the rows ``x``.

        ``phi``: the first n_eval eigenvectors; ``nearest``: the rows' nearest
        training points from ``nn_.nearest``, or None.
        """
        k, k_b = self.n_neighbors_, self.k_bandwidth_
        lam = self.eigenvalues_[:phi.shape[1]]
        if k is None:
            d2 = _sq_distances(x, self.X_fit_, self._sq_norms)
            dist, idx = _ranked(d2, k_b, x, self.X_fit_)
            cols = None
            rho_j = self.rho_[None, :]
        else:
            dist, idx = self.nn_.kneighbors(x, max(k_b, k), n_jobs, nearest)
            d2 = dist[:, :k] ** 2
            cols = idx[:, :k]
            rho_j = self.rho_[cols]
        if self.bandwidth == "cidm":
            rho = bandwidth_from_distances(dist, k_b, self.bandwidth_statistic)
        else:
            rho = np.ones(len(x))
        delta2 = d2 / (rho[:, None] * rho_j)
        a = -delta2 / (2 * self.epsilon_)
        if self._q_alpha is not None:
            a -= np.log(self._q_alpha if cols is None else self._q_alpha[cols])
        p = softmax_rows(a)
        if cols is None:
            Phi = (p @ phi) / lam
        else:
            # a sparse row per query: reads phi in place instead of gathering (b, k, l) copies
            rows = sparse.csr_matrix((p.ravel(), cols.ravel(), np.arange(0, cols.size + 1, k)),
                                     shape=(len(cols), self.n_samples_fit_))
            Phi = (rows @ phi) / lam
        dPhi = None
        if with_gradient:
            phi_s = phi if cols is None else phi[cols]  # (N, l) or (b, k, l)
            dPhi = self._nystrom_gradient(x, p, delta2, rho, rho_j, cols, idx, phi_s, lam)
        return Phi, dPhi

    def _nystrom_gradient(self, x, p, delta2, rho, rho_j, cols, idx, phi_s, lam):
        """grad phi_l = -1/(2 eps lambda_l) sum_j p_j phi_l(x_j) (grad delta_j^2 - g_bar)."""
        X_s = self.X_fit_ if cols is None else self.X_fit_[cols]  # (N, n) or (b, k, n)
        if self.bandwidth == "cidm":
            grad_rho = bandwidth_gradient(x, self.X_fit_[idx], self.k_bandwidth_,
                                          self.bandwidth_statistic)
        else:
            grad_rho = np.zeros_like(x)
        q = p / rho_j  # weights of the 2 (x - x_j) / (rho rho_j) term, before 1/rho
        if cols is None:
            w = p[:, :, None] * phi_s[None, :, :]  # (b, N, l)
            wq = q[:, :, None] * phi_s[None, :, :]
            lin = np.einsum("bjl,jn->bln", wq, X_s)
        else:
            w = p[:, :, None] * phi_s
            wq = q[:, :, None] * phi_s
            lin = np.einsum("bjl,bjn->bln", wq, X_s)
        lin = wq.sum(1)[:, :, None] * x[:, None, :] - lin
        # sum_j w_lj grad delta_j^2
        term = (2 / rho)[:, None, None] * lin - (
            np.einsum("bjl,bj->bl", w, delta2)[:, :, None] * (grad_rho / rho[:, None])[:, None, :]
        )
        if cols is None:
            g_lin = q.sum(1)[:, None] * x - q @ X_s
        else:
            g_lin = q.sum(1)[:, None] * x - np.einsum("bj,bjn->bn", q, X_s)
        g_bar = (2 / rho)[:, None] * g_lin - (p * delta2).sum(1)[:, None] * grad_rho / rho[:, None]
        term -= w.sum(1)[:, :, None] * g_bar[:, None, :]
        return -term / (2 * self.epsilon_ * lam[None, :, None])

    def _scale(self):
        return self.eigenvalues_[1:self.n_components_ + 1] ** self.diffusion_time

    @property
    def embedding_(self):
        """Diffusion coordinates of the training points, shape (N, n_components).

        As scikit-learn's manifold learners (``SpectralEmbedding.embedding_``):
        what :meth:`fit_transform` returns.
        """
        if not hasattr(self, "eigenvectors_"):
            raise AttributeError("embedding_ exists once CIDM is fitted.")
        return self.eigenvectors_[:, 1:self.n_components_ + 1] * self._scale()

    def transform(self, X):
        """Diffusion coordinates of ``X`` by the Nyström extension.

        Parameters
        ----------
        X : array-like of shape (m, n) or (m, C, H, W)

        Returns
        -------
        Z : ndarray of shape (m, n_components)
            ``phi_l(x) * lambda_l ** diffusion_time`` for l = 1..n_components.
        """
        X = self._check_query(X)
        Phi, _ = self._nystrom(X, self.n_components_ + 1)
        return Phi[:, 1:] * self._scale()

    def fit_transform(self, X, y=None):
        """Fit and return the eigenvectors at the training points (scaled).

        In dense mode this equals ``transform(X)``; in kNN mode the Nyström
        rows differ slightly from the symmetrised training rows.

        Returns
        -------
        Z : ndarray of shape (N, n_components)
        """
        return self.fit(X).embedding_

    def inverse_transform(self, Z):
        """Map diffusion coordinates back to data space with the coefficients ``X_hat``.

        Parameters
        ----------
        Z : array-like of shape (m, n_components)

        Returns
        -------
        X : ndarray of shape (m, n)
        """
        check_is_fitted(self)
        from sklearn.utils import check_array

        Z = check_array(Z, dtype=np.float64)
        if Z.shape[1] != self.n_components_:
            raise ValueError(f"Z has {Z.shape[1]} columns; expected n_components = "
                             f"{self.n_components_}.")
        C = self.coefficients_
        return C[0] + (Z / self._scale()) @ C[1:self.n_components_ + 1]

    def nystrom_project(self, X, n_iter=1):
        """Nyström projection ``x -> X_hat^T Phi(x)`` onto the learned manifold.

        Parameters
        ----------
        X : array-like of shape (m, n) or (m, C, H, W)
        n_iter : int, default=1
            Number of times the projection is applied.

        Returns
        -------
        P : ndarray of shape (m, n)
            Flat rows (reshape with ``image_shape_`` for images).
        """
        if not isinstance(n_iter, Integral) or n_iter < 1:
            raise ValueError(f"n_iter must be an integer >= 1; got {n_iter!r}.")
        return self._project(self._check_query(X), n_iter)

    def _project(self, X, n_iter=1):
        """Nyström projection of validated float64 rows."""
        C = self.coefficients_[:self.n_components_ + 1]
        for _ in range(n_iter):
            Phi, _ = self._nystrom(X, self.n_components_ + 1)
            X = Phi @ C
        return X

    def project(self, X):
        """One Nyström projection (:meth:`nystrom_project` with ``n_iter=1``)."""
        return self.nystrom_project(X, n_iter=1)

    def extend(self, F, X):
        """Nyström extension of values given at the training points to new points.

        ``F`` is expanded in the first ``n_components + 1`` eigenfunctions with
        the ``pi``-weighted inner product (a low-pass, denoised fit) and the
        expansion is evaluated at ``X``.

        Parameters
        ----------
        F : array-like of shape (N,) or (N, q)
        X : array-like of shape (m, n)

        Returns
        -------
        F_new : ndarray of shape (m,) or (m, q)

        Examples
        --------
        >>> import numpy as np
        >>> from geolearn.datasets import make_circle_points
        >>> from geolearn.manifold import CIDM
        >>> X, t = make_circle_points(300, grid=True, return_params=True)
        >>> cidm = CIDM(n_eigenpairs=9).fit(X)
        >>> f = cidm.extend(np.sin(2 * t), [[0.0, 1.2]])  # sin(2 * pi / 2) = 0
        >>> bool(abs(f[0]) < 1e-2)
        True
        """
        X = self._check_query(X)
        F = np.asarray(F, dtype=np.float64)
        if F.ndim not in (1, 2) or F.shape[0] != self.n_samples_fit_:
            raise ValueError(f"F must have shape (N,) or (N, q) with N = {self.n_samples_fit_} "
                             f"training points; got {F.shape}.")
        if not np.all(np.isfinite(F)):
            raise ValueError("F contains NaN or infinity.")
        n_eval = self.n_components_ + 1
        phi = self.eigenvectors_[:, :n_eval]
        coef = phi.T @ (self.stationary_[:, None] * F.reshape(len(F), -1))
        Phi, _ = self._nystrom(X, n_eval)
        out = Phi @ coef
        return out.ravel() if F.ndim == 1 else out

    def gradient(self, X):
        """Jacobian of :meth:`transform` at each row of ``X``.

        Returns
        -------
        J : ndarray of shape (m, n_components, n)
        """
        X = self._check_query(X)
        _, dPhi = self._nystrom(X, self.n_components_ + 1, with_gradient=True)
        return dPhi[:, 1:] * self._scale()[None, :, None]

    def projection_jacobian(self, X):
        """Jacobian of :meth:`project` at each row: ``X_hat^T grad Phi(x)``.

        Returns
        -------
        J : ndarray of shape (m, n, n)
        """
        X = self._check_query(X)
        _, dPhi = self._nystrom(X, self.n_components_ + 1, with_gradient=True)
        return np.einsum("la,lmb->mab", self.coefficients_[:self.n_components_ + 1],
                         dPhi.transpose(1, 0, 2))

    def tangent_basis(self, X, dim=None):
        """Orthonormal tangent bases at the rows of ``X``.

        With ``tangent="jacobian"``: the top left singular vectors of the
        projection Jacobian; with ``"local_pca"``: PCA of the 20 nearest
        training points.

        Parameters
        ----------
        X : array-like of shape (m, n)
        dim : int, default=None
            Tangent dimension; None uses ``intrinsic_dim_``.

        Returns
        -------
        B : ndarray of shape (m, n, dim)
        """
        basis, _ = self._tangent_basis(X, dim)
        return basis

    def _resolve_dim(self, dim):
        d = self.intrinsic_dim_ if dim is None else dim
        if not isinstance(d, Integral) or not 1 <= d <= self.n_features_in_:
            raise ValueError(f"dim must be an integer in [1, n_features = {self.n_features_in_}]"
                             f"; got {d!r}.")
        return int(d)

    def _tangent_basis(self, X, dim=None, method=None):
        """Tangent bases and their numerical ranks."""
        check_is_fitted(self)
        d = self._resolve_dim(dim)
        method = self.tangent if method is None else method
        if method == "local_pca":
            X = self._check_query(X)
            return local_pca_tangent_basis(self.X_fit_, X, d), np.full(len(X), d)
        return orthonormal_basis(self.projection_jacobian(X), d)

    def as_manifold(self):
        """A light :class:`CIDMManifold` view for code that expects a manifold object."""
        check_is_fitted(self)
        return CIDMManifold(self)

    def to_torch(self, output="projection", dtype=None, device=None):
        """A frozen, differentiable torch module computing the projection or the embedding.

        Parameters
        ----------
        output : {"projection", "embedding"}, default="projection"
        dtype : torch.dtype, default=torch.float32
        device : str or torch.device, default=None
            None uses the estimator's ``device``.

        Returns
        -------
        module : torch.nn.Module
            Maps a (m, n) tensor to (m, n) (projection) or (m, n_components).
        """
        import torch

        from ._torch import NystromModule

        check_is_fitted(self)
        if output not in ("projection", "embedding"):
            raise ValueError(f"output must be 'projection' or 'embedding'; got {output!r}.")
        dtype = torch.float32 if dtype is None else dtype
        device = resolve_device(self.device if device is None else device)
        return NystromModule(self, output).to(device=device, dtype=dtype)

    def score(self, X, y=None):
        """Negative mean squared distance to the Nyström projection (higher is better).

        Parameters
        ----------
        X : array-like of shape (m, n)
        y : ignored

        Returns
        -------
        score : float
        """
        X = self._check_query(X)
        return -float(np.mean(np.sum((X - self.nystrom_project(X)) ** 2, axis=1)))

    def get_feature_names_out(self, input_features=None):
        """Output names ``cidm1``, ..., ``cidmK``."""
        check_is_fitted(self)
        return np.asarray([f"cidm{i}" for i in range(1, self.n_components_ + 1)], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # float64 only: the kernel eigenproblem and the Nyström softmax need its range
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


class CIDMManifold:
    """A fitted :class:`CIDM` seen as a manifold: ``project`` and ``tangent_basis``.

    Parameters
    ----------
    cidm : CIDM
        Fitted.

    Attributes
    ----------
    ambient_dim : int
    intrinsic_dim : int
    reach : None
        Unknown for a learned manifold.

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import CIDM
    >>> M = CIDM(n_eigenpairs=5).fit(make_circle_points(200, grid=True)).as_manifold()
    >>> M.ambient_dim, M.intrinsic_dim, M.tangent_basis([[1.0, 0.0]]).shape
    (2, 1, (1, 2, 1))
    """

    reach = None

    def __init__(self, cidm):
        self.cidm = cidm

    @property
    def ambient_dim(self):
        return self.cidm.n_features_in_

    @property
    def intrinsic_dim(self):
        return self.cidm.intrinsic_dim_

    def project(self, X):
        """Nyström projection of ``X`` onto the manifold."""
        return self.cidm.project(X)

    def tangent_basis(self, X):
        """Orthonormal tangent bases, shape (m, ambient_dim, intrinsic_dim)."""
        return self.cidm.tangent_basis(X)


def fixed_bandwidth_diffusion_map(**kwargs):
    """The standard diffusion map: :class:`CIDM` with a fixed bandwidth.

    ``CIDM(bandwidth="fixed", epsilon="bgh", alpha=1.0, **kwargs)``, the
    Laplace-Beltrami-normalised baseline of the paper's Figure 1 and of the
    heterogeneous-density comparisons.

    Parameters
    ----------
    **kwargs
        Other :class:`CIDM` parameters (they may override epsilon and alpha).

    Returns
    -------
    cidm : CIDM
        Unfitted.

    Examples
    --------
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import fixed_bandwidth_diffusion_map
    >>> dm = fixed_bandwidth_diffusion_map(n_eigenpairs=5).fit(make_circle_points(300, grid=True))
    >>> dm.bandwidth, dm.kernel_mode_
    ('fixed', 'dense')
    """
    params = {"bandwidth": "fixed", "epsilon": "bgh", "alpha": 1.0, **kwargs}
    return CIDM(**params)
