"""SVBF: the Schubert variety of best fit to a collection of subspaces."""

import math
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from .._utils import (
    fitted_on_success,
    progress_bar,
    resolve_device,
    small_ops_threads,
    thread_map,
    to_tensor,
    warn_user,
)
from ..exceptions import ConvergenceWarning
from ._adam import adam_solve
from ._grassmann import angles_kernel, check_metric, distance_from_angles, stacked_flag_mean
from ._solvers import mm_solve, objective_and_gradient, polar
from ._validation import _SetsMixin

_DEFAULT_MAX_ITER = {"mm": 1000, "adam": 40000}

SVBF_PARAMETERS = {
    "n_components": [Interval(Integral, 1, None, closed="left"), tuple, list],
    "intersection_dim": [Interval(Integral, 1, None, closed="left"), tuple, list],
    "objective": [StrOptions({"cos2", "cos"})],
    "solver": [StrOptions({"mm", "adam"})],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "tol": [Interval(Real, 0, None, closed="left"), None],
    "n_init": [Interval(Integral, 1, None, closed="left")],
    "init": [StrOptions({"flag_mean", "uniform", "random"}), np.ndarray],
    "shift": [Interval(Real, 0, None, closed="left")],
    "orth_penalty": [Interval(Real, 0, None, closed="left")],
    "lr": [Interval(Real, 0, None, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    "input_type": [StrOptions({"auto", "basis", "data"})],
    "subspace_dim": [Interval(Integral, 1, None, closed="left"), None],
    "set_shape": [tuple, list, None],
    "dtype": [StrOptions({"float64", "float32"})],
    "device": [str, torch.device],
    "n_jobs": [Integral, None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


def _flag_signature(n_components, intersection_dim, n, min_dim):
    """Validate ``(k_1 < ... < k_m)`` and ``(c_1, ..., c_m)``; return ``[(k_s, c_s)]``."""
    flag = isinstance(n_components, (tuple, list))
    ks = list(n_components) if flag else [n_components]
    if not ks or not all(isinstance(k, Integral) and k >= 1 for k in ks) or any(
            b <= a for a, b in zip(ks, ks[1:])):
        raise ValueError("n_components must be a positive integer or a strictly increasing "
                         f"tuple of positive integers (a flag); got {n_components!r}.")
    if ks[-1] > n:
        raise ValueError(f"n_components={n_components!r} exceeds the number of features "
                         f"n = {n}.")
    if isinstance(intersection_dim, (tuple, list)):
        cs = list(intersection_dim)
        if len(cs) != len(ks) or not flag:
            raise ValueError(
                f"intersection_dim={intersection_dim!r} must be an integer, or a tuple with one "
                f"entry per step of n_components={n_components!r}."
            )
    else:
        cs = [intersection_dim] * len(ks)
    for k, c in zip(ks, cs):
        if not isinstance(c, Integral) or not 1 <= c <= min(k, min_dim):
            raise ValueError(
                f"intersection_dim must satisfy 1 <= c <= min(n_components, min_i l_i); got "
                f"c={c!r} with n_components={k} and smallest set size {min_dim}."
            )
    return [(int(k), int(c)) for k, c in zip(ks, cs)]


def _sign_normalise(V, dim):
    """Flip vectors along ``dim`` so that each one's largest-magnitude entry is positive."""
    idx = V.abs().argmax(dim=dim, keepdim=True)
    sign = torch.sign(torch.gather(V, dim, idx))
    return V * torch.where(sign == 0, torch.ones_like(sign), sign)


def _canonicalise(XT, w, K, blocks):
    """Rotate ``K`` within each step of the flag to the eigenvectors of ``K^T P_w K``.

    The span (and every nested span) is unchanged; the basis becomes
    reproducible: columns by decreasing weighted energy, signs fixed.
    """
    K = K.clone()
    start = 0
    for k_s, _ in blocks:
        Kb = K[:, start:k_s]
        Y = XT @ Kb
        gram = torch.einsum("r,rlk,rlj->kj", w, Y, Y)
        _, V = torch.linalg.eigh(gram)
        K[:, start:k_s] = Kb @ V.flip(-1)
        start = k_s
    return _sign_normalise(K, 0)


class SVBF(_SetsMixin, TransformerMixin, BaseEstimator):
    """Schubert variety of best fit to a collection of subspaces.

    Given sets ``X_i`` (``n x l_i`` orthonormal bases of subspaces ``V_i``), find
    an orthonormal ``K`` (``n x k``) such that every ``V_i`` comes as close as
    possible to meeting ``W = span(K)`` in at least ``c`` dimensions, i.e. to
    the Schubert variety ``{V : dim(V ∩ W) >= c}``. It maximises

    ``F(K) = sum_i w_i (1/c) sum_{j<=c} cos^2 theta_ij``   (``objective="cos2"``, Eq. 1)

    or the same with ``cos theta_ij`` (``objective="cos"``, Eq. 2), where
    ``theta_ij`` are the principal angles between ``V_i`` and ``W`` and the
    weights ``w_i`` sum to one. ``F`` lies in ``[0, 1]`` and equals 1 exactly when
    every set meets ``W`` in ``c`` dimensions. With ``c = min(l, k)`` and
    ``"cos2"`` the solution is the flag mean; with one vector per set it is
    the uncentred PCA of the normalised vectors.

    Read more in the :doc:`User Guide </user_guide/subspaces>`.

    Parameters
    ----------
    n_components : int or tuple of int, default=1
        ``k``, the dimension of ``W``; a strictly increasing tuple
        ``(k_1, ..., k_m)`` fits a flag ``W_1 ⊂ ... ⊂ W_m`` (the objective is the
        mean over the steps).
    intersection_dim : int or tuple of int, default=1
        ``c``, at most ``min(k, min_i l_i)``; for a flag one entry per step (an
        integer applies to every step).
    objective : {"cos2", "cos"}, default="cos2"
    solver : {"mm", "adam"}, default="mm"
        ``"mm"``: monotone polar ascent (each step maximises the convex
        objective's linearisation over orthonormal ``K``; never decreases ``F``).
        ``"adam"``: the paper's penalised Adam iteration (``c = 1`` only; for
        reproducing the paper, it needs thousands of iterations).
    max_iter : int or None, default=None
        ``None`` means 1,000 for ``"mm"`` and 40,000 (the paper's count) for ``"adam"``.
    tol : float or None, default=1e-10
        ``"mm"`` stops when ``F`` rises by at most ``tol * max(1, |F|)`` (the
        subspace is then accurate to about ``sqrt(tol)``). ``"adam"`` stops
        early when the loss changes by at most ``tol`` (relative) over 1,000
        iterations; ``None`` runs all ``max_iter`` iterations.
    n_init : int, default=4
        Restarts; the first starts from ``init``, the others from ``"uniform"``.
        The run with the largest objective is kept (``F`` has local maxima).
    init : {"flag_mean", "uniform", "random"} or ndarray of shape (n, k), default="flag_mean"
        First start: the flag mean of the sets, an orthonormalised matrix with
        U[0, 1] entries (the paper's), a Gaussian one, or a given matrix. With
        ``solver="adam"``, ``"uniform"`` is the raw U[0, 1] matrix as in the paper.
    shift : float, default=1e-6
        ``K <- polar(G + shift * ||G||_2 * K)``: keeps the previous columns where
        the gradient ``G`` is rank-deficient.
    orth_penalty : float, default=1e4
        ``lambda_0`` of the paper's penalty ``||K^T K - I||_F^2`` (``"adam"``).
    lr : float, default=1e-3
        Adam step size (``"adam"``).
    batch_size : int or None, default=None
        Sets per batch: ``"mm"`` accumulates exactly over batches (memory),
        ``"adam"`` takes one mini-batch a step.
    input_type : {"auto", "basis", "data"}, default="auto"
        ``"basis"``: sets are orthonormal bases (checked); ``"data"``: sets are
        raw vectors, replaced by orthonormal bases of their spans; ``"auto"``:
        bases when all sets are orthonormal, else as ``"data"`` with a warning.
    subspace_dim : int or None, default=None
        Basis size when orthonormalising raw sets (``None``: numerical rank).
    set_shape : (int, int) or None, default=None
        Folds flat rows ``(r, n * l)`` into sets ``(r, n, l)``. Without it a 2-D
        ``X`` holds one vector per set (row).
    transform_output : {"coordinates", "angles", "cosines", "change_of_basis"}, \
            default="coordinates"
        What :meth:`transform` returns: the unit vector ``b_i`` (``k``) with ``K b_i``
        the direction of ``W`` closest to the set (``c = 1``); the ``c``
        smallest angles; their cosines; or ``K^T X_i`` flattened (the paper's
        Algorithm I; depends on the basis chosen for each set).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the iterations; the final pass is always float64.
    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        ``"auto"``: CUDA when available, else the CPU.
    n_jobs : int or None, default=None
        Restarts in parallel (threads).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        ``> 0`` shows a progress bar over the ``n_init`` runs.

    Attributes
    ----------
    basis_ : ndarray of shape (n, k)
        Orthonormal ``K``, columns by decreasing weighted energy
        ``sum_i w_i ||X_i^T k_j||^2`` (per step of a flag), signs fixed.
    components_ : ndarray of shape (k, n)
        ``basis_.T``.
    objective_ : float
        ``F(basis_)``.
    objective_curve_ : list of float
        ``F`` at each iterate of the kept run (``"adam"``: the data term at the
        current ``b_i``).
    init_objectives_ : ndarray of shape (n_init,)
        Final objective of every restart.
    history_ : skorch.history.History
        ``"adam"`` only: the training history of the kept run, one epoch of
        ``n_iter_`` steps; the penalised loss of each step is
        ``history_[-1, "batches", :, "train_loss"]``.
    n_iter_ : int
        Iterations of the kept run.
    converged_ : bool
        ``"adam"``: True only when the early stop on ``tol`` ended the run (no
        warning otherwise: the paper runs a fixed number of iterations).
    angles_ : ndarray of shape (r, c)
        The ``c`` smallest principal angles of each training set (a flag: the
        steps' angles side by side).
    coordinates_ : ndarray of shape (r, k)
        ``b_i`` of each training set (``c = 1`` and a single ``k`` only).
    subspace_dims_ : ndarray of shape (r,)
        Dimension of each training subspace.
    n_features_in_ : int
        Ambient dimension ``n``.
    orthogonality_error_ : float
        ``||K^T K - I||_F`` before the final projection (``"adam"``; 0.0 for ``"mm"``).

    See Also
    --------
    SVBFClassifier : One variety per class, nearest variety wins.
    flag_mean : The closed-form solution for ``c = min(l, k)``.

    References
    ----------
    K. Karimov, M. Kirby, C. Peterson, "An algorithm for computing Schubert
    varieties of best fit with applications", Front. Artif. Intell. 6 (2023).

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import SVBF
    >>> rng = np.random.default_rng(0)
    >>> u = np.eye(10)[:, :1]                     # every plane contains e1
    >>> X = np.stack([np.linalg.qr(np.hstack([u, rng.normal(size=(10, 1))]))[0]
    ...               for _ in range(20)])
    >>> svbf = SVBF(n_components=1, random_state=0).fit(X)
    >>> round(svbf.objective_, 8), np.abs(svbf.basis_[:, 0]).round(6)[:3]
    (1.0, array([1., 0., 0.]))
    """

    _parameter_constraints = {
        **SVBF_PARAMETERS,
        "transform_output": [StrOptions({"coordinates", "angles", "cosines", "change_of_basis"})],
    }

    def __init__(self, n_components=1, intersection_dim=1, *, objective="cos2", solver="mm",
                 max_iter=None, tol=1e-10, n_init=4, init="flag_mean", shift=1e-6,
                 orth_penalty=1e4, lr=1e-3, batch_size=None, input_type="auto",
                 subspace_dim=None, set_shape=None, transform_output="coordinates",
                 dtype="float64", device="auto", n_jobs=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.intersection_dim = intersection_dim
        self.objective = objective
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.shift = shift
        self.orth_penalty = orth_penalty
        self.lr = lr
        self.batch_size = batch_size
        self.input_type = input_type
        self.subspace_dim = subspace_dim
        self.set_shape = set_shape
        self.transform_output = transform_output
        self.dtype = dtype
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ----------------------------------------------------------------- fitting
    @fitted_on_success
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the variety to the sets ``X``.

        Parameters
        ----------
        X : array-like of shape (r, n, l), list of (n, l_i) arrays, (r, n) or image sets
            See the class docstring for the accepted forms.
        y : None
            Ignored.
        sample_weight : array-like of shape (r,), default=None
            Non-negative weights of the sets, not all zero (normalised to sum to 1).

        Returns
        -------
        self : SVBF
        """
        bases, dims = self._bases(X, reset=True)
        blocks, w = self._check_fit(bases, dims, sample_weight)
        XT64 = torch.from_numpy(bases.transpose(0, 2, 1).copy())
        w64 = torch.from_numpy(w)
        runs = self._restarts(bases, w, XT64, w64, blocks)
        finals = np.array([run["objective"] for run in runs])
        best = runs[int(np.argmax(finals))]
        if not best["converged"] and self.solver == "mm":
            warn_user(f"SVBF did not converge in max_iter={best['n_iter']} iterations (tol="
            f"{self.tol:g}); increase max_iter or tol.", ConvergenceWarning)
        self._set_basis(best, XT64, w64, blocks)
        self.init_objectives_ = finals
        self.subspace_dims_ = dims
        self._blocks = blocks
        thetas, B = self._angles(bases, dims)
        self.angles_ = thetas.numpy()
        if self._single_line():
            self.coordinates_ = self._coordinates(B)
        return self

    def _check_fit(self, bases, dims, sample_weight):
        """The flag's ``[(k_s, c_s)]`` and the normalised weights; checks the solver and init."""
        n = bases.shape[1]
        blocks = _flag_signature(self.n_components, self.intersection_dim, n, int(dims.min()))
        w = _check_sample_weight(sample_weight, bases, dtype=np.float64, ensure_non_negative=True)
        w = w / w.sum()
        if self.solver == "adam" and (len(blocks) > 1 or blocks[0][1] != 1):
            raise ValueError("solver='adam' (the paper's solver) supports only a single "
                             "n_components with intersection_dim=1; use solver='mm'.")
        k = blocks[-1][0]
        if isinstance(self.init, np.ndarray) and self.init.shape != (n, k):
            raise ValueError(f"init as an array must have shape (n, k) = {(n, k)}; "
                             f"got {self.init.shape}.")
        return blocks, w

    def _restarts(self, bases, w, XT64, w64, blocks):
        """The ``n_init`` runs (in threads), on ``device`` in ``dtype``."""
        device = resolve_device(self.device)
        dtype = getattr(torch, self.dtype)
        rng = check_random_state(self.random_state)
        seeds = rng.randint(np.iinfo(np.int32).max, size=self.n_init)
        XT = XT64.to(device=device, dtype=dtype)
        wt = w64.to(device=device, dtype=dtype)
        k = blocks[-1][0]
        # each run is a long chain of small ops: one torch thread each, runs in parallel
        return thread_map(
            lambda i: self._run(XT, wt, XT64, w64, blocks, self._start(i, bases, w, k, seeds),
                                seeds[i]),
            range(self.n_init), self.n_jobs,
            progress=lambda runs: progress_bar(runs, total=self.n_init, desc="SVBF runs",
                                               verbose=self.verbose))

    def _set_basis(self, best, XT64, w64, blocks):
        """The canonical basis of the best run, its objective and the run's record."""
        k = blocks[-1][0]
        K = _canonicalise(XT64, w64, polar(best["K"].to("cpu", torch.float64)), blocks)
        err = torch.linalg.matrix_norm(K.T @ K - torch.eye(k, dtype=K.dtype))
        assert err < 1e-10, f"basis lost orthonormality ({err:.2e})"
        self.basis_ = K.numpy()
        self.components_ = self.basis_.T
        self.objective_ = float(objective_and_gradient(XT64, w64, K, blocks, self.objective,
                                                       gradient=False)[0])
        self.objective_curve_ = best["curve"]
        self.n_iter_ = best["n_iter"]
        self.converged_ = best["converged"]
        self.orthogonality_error_ = best["orthogonality_error"]
        if "history" in best:
            self.history_ = best["history"]

    def _start(self, run, bases, w, k, seeds):
        init = self.init if run == 0 else "uniform"
        if isinstance(init, np.ndarray):
            return polar(torch.as_tensor(init, dtype=torch.float64)).numpy()
        if init == "flag_mean":
            return stacked_flag_mean(bases, w, k, random_state=int(seeds[0]))
        rng = np.random.RandomState(seeds[run])
        n = bases.shape[1]
        M = rng.uniform(size=(n, k)) if init == "uniform" else rng.standard_normal((n, k))
        if self.solver == "adam" and init == "uniform":
            return M  # the paper's raw U[0, 1] start; the penalty pulls it to St(k, n)
        return np.linalg.qr(M)[0]

    def _run(self, XT, w, XT64, w64, blocks, K0, seed):
        """One restart from ``K0``; the final objective is evaluated in float64."""
        K0 = torch.as_tensor(K0, dtype=XT.dtype, device=XT.device)
        if self.solver == "mm":
            max_iter = _DEFAULT_MAX_ITER["mm"] if self.max_iter is None else self.max_iter
            K, curve, n_iter, converged = mm_solve(
                XT, w, K0, blocks, self.objective, tol=0.0 if self.tol is None else self.tol,
                max_iter=max_iter, shift=self.shift, batch_size=self.batch_size)
            out = {"K": K, "curve": curve, "converged": converged, "n_iter": n_iter,
                   "orthogonality_error": 0.0}
        else:
            max_iter = _DEFAULT_MAX_ITER["adam"] if self.max_iter is None else self.max_iter
            rng = np.random.RandomState(seed + 1)  # not the stream that drew K0
            r, L, _ = XT.shape
            beta0 = torch.as_tensor(rng.uniform(size=(r, K0.shape[1])), dtype=XT.dtype,
                                    device=XT.device)
            alpha0 = torch.as_tensor(rng.uniform(size=(r, L)), dtype=XT.dtype, device=XT.device)
            K, history, curve, converged = adam_solve(
                XT, w, K0, beta0, alpha0, self.objective, orth_penalty=self.orth_penalty,
                learning_rate=self.lr, max_iter=max_iter, tol=self.tol,
                batch_size=self.batch_size, seed=seed)
            eye = torch.eye(K.shape[1], dtype=K.dtype, device=K.device)
            out = {"K": polar(K), "curve": curve, "history": history,
                   "converged": converged, "n_iter": len(curve),
                   "orthogonality_error": float(torch.linalg.matrix_norm(K.T @ K - eye))}
        K64 = polar(out["K"].to("cpu", torch.float64))
        out["objective"] = float(objective_and_gradient(XT64, w64, K64, blocks, self.objective,
                                                        gradient=False)[0])
        return out

    # --------------------------------------------------------------- inference
    def _single_line(self):
        return len(self._blocks) == 1 and self._blocks[0][1] == 1

    def _angles(self, bases, dims):
        """The ``c_s`` smallest angles to each step of the flag, side by side (float64)."""
        X = to_tensor(bases, dtype=None)
        K = torch.from_numpy(self.basis_)
        thetas, B = [], None
        for k_s, c_s in self._blocks:
            theta, B = angles_kernel(X, dims, K[:, :k_s], m=min(c_s, bases.shape[2]))
            if theta.shape[1] < c_s:  # new sets smaller than c: missing angles are pi/2
                theta = torch.nn.functional.pad(theta, (0, c_s - theta.shape[1]), value=math.pi / 2)
            thetas.append(theta)
        return torch.cat(thetas, dim=1), B

    def _coordinates(self, B):
        return _sign_normalise(B[:, :, 0], 1).numpy()

    def _new_angles(self, X):
        check_is_fitted(self)
        # a small SVD per set: one torch and one BLAS thread (docs/user_guide/threads.md)
        with small_ops_threads(blas=True):
            bases, dims = self._bases(X, reset=False)
            thetas, B = self._angles(bases, dims)
        return bases, dims, thetas, B

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # float64 only: principal angles come from SVDs and eigenproblems on the Grassmannian
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def transform(self, X):
        """Coordinates, angles, cosines or change of basis of new sets (``transform_output``).

        Parameters
        ----------
        X : set array (see :meth:`fit`)

        Returns
        -------
        Xt : ndarray of shape (r, k), (r, c) or (r, k * L)
        """
        check_is_fitted(self)
        out = self.transform_output
        if out == "coordinates" and not self._single_line():
            raise ValueError(
                "transform_output='coordinates' needs intersection_dim=1 and an integer "
                f"n_components (got {self.intersection_dim!r}, {self.n_components!r}); use "
                "'angles' or 'cosines'.")
        bases, dims, thetas, B = self._new_angles(X)
        if out == "coordinates":
            return self._coordinates(B)
        if out == "angles":
            return thetas.numpy()
        if out == "cosines":
            return torch.cos(thetas).numpy()
        if np.any(dims != dims[0]):
            raise ValueError("transform_output='change_of_basis' needs sets of one size; got "
                             f"sizes from {dims.min()} to {dims.max()}.")
        return np.einsum("nk,rnl->rkl", self.basis_, bases[:, :, : dims[0]]).reshape(len(bases), -1)

    def get_feature_names_out(self, input_features=None):
        """Names of the :meth:`transform` columns: ``svbf_b<i>``, ``svbf_theta<i>`` or
        ``svbf_cos<i>``.

        ``transform_output="change_of_basis"`` has no fixed width (``k`` times
        the size of the sets transformed), so it has no names.

        Parameters
        ----------
        input_features : None
            Ignored (the columns do not correspond to input features).

        Returns
        -------
        names : ndarray of str
        """
        check_is_fitted(self)
        out = self.transform_output
        if out == "change_of_basis":
            raise ValueError("transform_output='change_of_basis' has k * l columns for sets of "
                             "l vectors: no fixed feature names. Use 'coordinates', 'angles' or "
                             "'cosines' with set_output or get_feature_names_out.")
        if out == "coordinates":
            return np.asarray([f"svbf_b{i}" for i in range(self.basis_.shape[1])], dtype=object)
        n_angles = sum(c_s for _, c_s in self._blocks)
        kind = "theta" if out == "angles" else "cos"
        return np.asarray([f"svbf_{kind}{i + 1}" for i in range(n_angles)], dtype=object)

    def inverse_transform(self, X):
        """Directions ``K b_i`` in the ambient space from coordinates ``b_i``.

        Parameters
        ----------
        X : array-like of shape (r, k)

        Returns
        -------
        directions : ndarray of shape (r, n)
        """
        from sklearn.utils.validation import check_array

        check_is_fitted(self)
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.basis_.shape[1]:
            raise ValueError(f"X has {X.shape[1]} coordinates, but SVBF has "
                             f"{self.basis_.shape[1]} components.")
        return X @ self.components_

    def _per_step(self, thetas, fn):
        """``fn`` of the angles of each step of the flag, side by side: ``(r, m)``."""
        start, parts = 0, []
        for _, c_s in self._blocks:
            parts.append(fn(thetas[:, start:start + c_s]))
            start += c_s
        return torch.stack(parts, dim=1)

    def _per_set_fit(self, thetas):
        def fit(theta):
            cos = torch.cos(theta)
            return (cos.square() if self.objective == "cos2" else cos).mean(dim=1)

        return self._per_step(thetas, fit).mean(dim=1).numpy()

    def score_samples(self, X):
        """Per-set fit ``(1/c) sum_{j<=c} cos^2 theta_j`` (``cos`` for ``objective="cos"``).

        Parameters
        ----------
        X : set array

        Returns
        -------
        scores : ndarray of shape (r,), in [0, 1]
        """
        return self._per_set_fit(self._new_angles(X)[2])

    def score(self, X, y=None, sample_weight=None):
        """The normalised objective on ``X`` (weighted mean of :meth:`score_samples`).

        It increases with ``n_components``: choose ``k`` with
        :func:`working_dimension`, not by the largest score.

        Parameters
        ----------
        X : set array
        y : None
            Ignored.
        sample_weight : array-like of shape (r,), default=None

        Returns
        -------
        score : float
        """
        return float(np.average(self.score_samples(X), weights=sample_weight))

    def distance(self, X, metric="chordal", p=2):
        """Distance of each set to the fitted Schubert variety.

        Parameters
        ----------
        X : set array
        metric : {"chordal", "geodesic", "cos2", "cos"}, default="chordal"
            ``||sin Theta_c||_p``, ``||Theta_c||_p``, ``1 - mean cos^2 Theta_c`` or
            ``1 - mean cos Theta_c``. For a flag, the ``p``-norm of the steps'
            distances.
        p : float, default=2

        Returns
        -------
        distances : ndarray of shape (r,)
        """
        check_metric(metric, p)
        d = self._per_step(self._new_angles(X)[2],
                           lambda theta: distance_from_angles(theta, metric, p))
        return (d[:, 0] if d.shape[1] == 1 else torch.linalg.vector_norm(d, ord=p, dim=1)).numpy()


def working_dimension(scores, ks, rel_tol=0.01):
    """The smallest ``k`` whose held-out score is within ``rel_tol`` of the best.

    The paper picks the "working dimension" where the curve of the objective
    against ``k`` flattens (Fig. 4, Fig. 11): the smallest ``k`` with
    ``score(k) >= max(score) - rel_tol * (max(score) - min(score))``.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Held-out scores (e.g. :meth:`SVBF.score` on test sets) for each ``k``.
    ks : array-like of shape (m,)
        The dimensions tried.
    rel_tol : float, default=0.01

    Returns
    -------
    k : int

    Examples
    --------
    >>> from geolearn.subspaces import working_dimension
    >>> working_dimension([0.37, 0.73, 1.0, 1.0, 1.0], [1, 2, 3, 4, 5])
    3
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    ks = np.asarray(ks).ravel()
    if scores.size == 0 or scores.shape != ks.shape:
        raise ValueError(f"scores and ks must be non-empty and of equal length; got "
                         f"{scores.size} and {ks.size}.")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores contains NaN or infinity.")
    if not (isinstance(rel_tol, Real) and not isinstance(rel_tol, bool) and 0 <= rel_tol < 1):
        raise ValueError(f"rel_tol must be a number in [0, 1); got {rel_tol!r}.")
    order = np.argsort(ks, kind="stable")
    scores, ks = scores[order], ks[order]
    threshold = scores.max() - rel_tol * (scores.max() - scores.min())
    return int(ks[np.argmax(scores >= threshold)])
