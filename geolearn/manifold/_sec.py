"""Spectral exterior calculus (SEC): tangent vector fields from CIDM eigenfunctions."""

import math
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._utils import warn_user
from ..exceptions import GeolearnWarning, NumericalWarning
from ._cidm import CIDM
from ._tangent import orthonormal_basis


def _pair_sums(c, w):
    """T[i, k, j, l] = sum_s w_s c[i, k, s] c[j, l, s], by one matmul."""
    n1, _, n0 = c.shape
    A = c.reshape(n1 * n1, n0)
    return ((A * w) @ A.T).reshape(n1, n1, n1, n1)


def sec_matrices(c, xi):
    """Riemannian Gram matrix G and Dirichlet energy E of the frame phi_i d phi_j.

    Parameters
    ----------
    c : ndarray of shape (n1, n1, n0)
        Structure constants ``c_ijs = <phi_i phi_j phi_s>_pi``.
    xi : ndarray of shape (n0,)
        Laplacian eigenvalues, ``xi_0 = 0``.

    Returns
    -------
    G_full : ndarray of shape (n1, n1, n1, n1)
        ``<phi_i d phi_j, phi_k d phi_l>`` for all index pairs.
    E : ndarray of shape (n1, n1, n1, n1)
    """
    n1 = c.shape[0]
    x = xi[:n1]
    ones = np.ones_like(xi)
    # T_w[i, k, j, l] = sum_s w_s c_iks c_jls; the three pairings of the formulas:
    # P[i,j,k,l] = sum c_iks c_jls, Q[i,j,k,l] = sum c_ils c_jks, R[i,j,k,l] = sum c_ijs c_kls
    def pairings(w):
        T = _pair_sums(c, w)
        return T.transpose(0, 2, 1, 3), T.transpose(0, 2, 3, 1), T

    P0, _, _ = pairings(ones)
    P1, Q1, R1 = pairings(xi)
    P2, Q2, R2 = pairings(xi**2)
    xi_i = x[:, None, None, None]
    xi_j = x[None, :, None, None]
    xi_k = x[None, None, :, None]
    xi_l = x[None, None, None, :]
    G = 0.5 * ((xi_j + xi_l) * P0 - P1)
    E = 0.25 * ((xi_i + xi_j + xi_k + xi_l) * (Q1 - P1)
                + (xi_j + xi_l - xi_i - xi_k) * R1
                + P2 + R2 - Q2)
    return G, E


def solve_sec(G, E, tol):
    """Modes of ``E a = mu G a`` on the numerically nonsingular part of the frame.

    Returns ``mu`` and the G-orthonormal coefficient vectors as columns.
    """
    w, U = linalg.eigh(E + G)
    U = U[:, w > tol * w.max()]
    s, W = linalg.eigh(U.T @ G @ U)
    keep = s > tol * s.max()
    T = W[:, keep] / np.sqrt(s[keep])
    mu, y = linalg.eigh(T.T @ (U.T @ E @ U) @ T)
    return mu, U @ T @ y


class SECVectorFields(BaseEstimator):
    """Tangent vector fields of a learned manifold by spectral exterior calculus.

    Expands 1-forms in the frame ``phi_i d phi_j`` of CIDM eigenfunctions,
    builds its Riemannian Gram matrix and Dirichlet (Hodge) energy from the
    structure constants ``<phi_i phi_j phi_s>``, and solves the generalised
    eigenproblem. The smoothest modes give global vector fields; evaluated
    with the Nyström extension they span the tangent space anywhere near the
    data.

    Parameters
    ----------
    cidm : CIDM, default=None
        Unfitted CIDM to clone; None gives ``CIDM(n_eigenpairs=80)``.
    n_frame : int, default=16
        ``n1``: eigenfunctions in the frame (``M = n1 (n1 - 1)`` elements).
    n_products : int, default=None
        ``n0``: eigenfunctions that expand products; None gives all with
        ``lambda > 0``. Must be at least ``2 n1`` (``2^d n1`` advised).
    tol : float, default=1e-3
        Relative eigenvalue cut-off of the two regularising stages.
    order : {"abs", "signed"}, default="abs"
        Sort modes by ``|mu|`` (robust to the spurious negative modes of a
        truncated expansion) or by ``mu``.

    Attributes
    ----------
    cidm_ : CIDM
        Fitted.
    structure_constants_ : ndarray of shape (n1, n1, n0)
    gram_ : ndarray of shape (M, M)
    energy_ : ndarray of shape (M, M)
    energies_ : ndarray of shape (n_modes,)
        Energies ``mu`` in the units of ``cidm_.laplacian_eigenvalues_``.
    frame_coefficients_ : ndarray of shape (M, n_modes)
    operator_matrices_ : ndarray of shape (n_modes, n1, n1)
        ``A_lm = <phi_l, v(phi_m)>``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.datasets import make_circle_points
    >>> from geolearn.manifold import CIDM, SECVectorFields
    >>> X = make_circle_points(400, grid=True)
    >>> sec = SECVectorFields(CIDM(n_eigenpairs=40), n_frame=8).fit(X)
    >>> xi1 = sec.cidm_.laplacian_eigenvalues_[1]
    >>> np.round(sec.energies_[:5] / xi1, 2)
    array([0., 1., 1., 4., 4.])
    >>> B = sec.tangent_basis([[0.0, 1.0]])
    >>> np.round(np.abs(B[0, :, 0]), 3)
    array([1., 0.])
    """

    _parameter_constraints = {
        "cidm": [HasMethods(["fit", "transform"]), None],
        "n_frame": [Interval(Integral, 2, None, closed="left")],
        "n_products": [Interval(Integral, 2, None, closed="left"), None],
        "tol": [Interval(Real, 0, 1, closed="neither")],
        "order": [StrOptions({"abs", "signed"})],
    }

    def __init__(self, cidm=None, n_frame=16, n_products=None, tol=1e-3, order="abs"):
        self.cidm = cidm
        self.n_frame = n_frame
        self.n_products = n_products
        self.tol = tol
        self.order = order

    @classmethod
    def from_cidm(cls, cidm, **params):
        """A fitted SECVectorFields on an already fitted CIDM, without refitting it.

        Parameters
        ----------
        cidm : CIDM
            Fitted.
        **params
            Other constructor parameters.

        Returns
        -------
        sec : SECVectorFields
            Fitted.
        """
        check_is_fitted(cidm)
        sec = cls(cidm=cidm, **params)
        sec._validate_params()
        sec._fit_fields(cidm)
        return sec

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None):
        """Fit the CIDM on ``X`` and compute the SEC modes.

        Parameters
        ----------
        X : array-like of shape (N, n)
        y : ignored

        Returns
        -------
        self : SECVectorFields
        """
        cidm = CIDM(n_eigenpairs=80) if self.cidm is None else clone(self.cidm)
        self._fit_fields(cidm.fit(X))
        return self

    def _fit_fields(self, cidm):
        lam, xi_all = cidm.eigenvalues_, cidm.laplacian_eigenvalues_
        available = int(np.sum(lam > 0))
        n1 = self.n_frame
        n0 = available if self.n_products is None else self.n_products
        if n0 > available:
            raise ValueError(f"n_products={n0} exceeds the {available} CIDM eigenpairs with "
                             "lambda > 0; raise the CIDM's n_eigenpairs.")
        if n1 > n0 // 2:
            raise ValueError(
                f"SEC needs n_products >= 2 * n_frame (products of eigenfunctions need twice the "
                f"frequencies); got n_frame={n1} and {n0} products. Raise the CIDM's "
                "n_eigenpairs or lower n_frame.")
        advised = math.floor(2**cidm.dimension_ * n1)
        if n0 < advised:
            warn_user(f"n_products={n0} is below 2^d n_frame = {advised} for the estimated "
                      f"dimension {cidm.dimension_:.2f}; expect spurious modes.", GeolearnWarning)
        phi, pi, xi = cidm.eigenvectors_[:, :n0], cidm.stationary_, xi_all[:n0]
        pairs = (phi[:, :n1, None] * phi[:, None, :n1]).reshape(len(phi), n1 * n1)
        c = (pairs.T @ (pi[:, None] * phi)).reshape(n1, n1, n0)
        G_full, E_full = sec_matrices(c, xi)
        M = n1 * (n1 - 1)
        G = G_full[:, 1:, :, 1:].reshape(M, M)
        E = E_full[:, 1:, :, 1:].reshape(M, M)
        G, E = (G + G.T) / 2, (E + E.T) / 2
        mu, a = solve_sec(G, E, self.tol)
        order = np.argsort(np.abs(mu) if self.order == "abs" else mu, kind="stable")
        mu, a = mu[order], a[:, order]
        head = mu[:10]
        if head.min() < -0.1 * np.abs(head).max():
            warn_user(f"spurious SEC modes with negative energy (min {head.min():.3g}): raise "
            "n_products or the CIDM's k_bandwidth (about 16 on randomly sampled data).", NumericalWarning)
        self.cidm_ = cidm
        self.n_features_in_ = cidm.n_features_in_
        self.structure_constants_ = c
        self.gram_, self.energy_ = G, E
        self.energies_ = mu
        self.frame_coefficients_ = a
        self.operator_matrices_ = np.einsum("pm,plk->mlk", a, G_full[:, 1:].reshape(M, n1, n1))

    def vector_fields(self, X, n_fields):
        """Ambient values of the ``n_fields`` smoothest vector fields at ``X``.

        Parameters
        ----------
        X : array-like of shape (m, n)
        n_fields : int

        Returns
        -------
        V : ndarray of shape (m, n_fields, n)
        """
        check_is_fitted(self)
        n_modes = len(self.energies_)
        if not isinstance(n_fields, Integral) or not 1 <= n_fields <= n_modes:
            raise ValueError(f"n_fields must be an integer in [1, {n_modes}]; got {n_fields!r}.")
        cidm, n1 = self.cidm_, self.n_frame
        Phi, _ = cidm._nystrom(cidm._check_query(X), n1)
        A = self.operator_matrices_[:n_fields]
        return np.einsum("bl,flm,mn->bfn", Phi, A, cidm.coefficients_[:n1])

    def tangent_basis(self, X, dim=None, n_fields=None):
        """Orthonormal tangent bases spanned by the smoothest vector fields.

        Parameters
        ----------
        X : array-like of shape (m, n)
        dim : int, default=None
            Tangent dimension; None uses the CIDM's ``intrinsic_dim_``.
        n_fields : int, default=None
            Fields stacked before the SVD; None gives ``dim`` (the paper).
            Use ``2 * dim`` where global fields vanish (e.g. on the sphere).

        Returns
        -------
        B : ndarray of shape (m, n, dim)
            Columns past the numerical rank are zero.
        """
        return self._tangent_basis(X, dim, n_fields)[0]

    def _tangent_basis(self, X, dim=None, n_fields=None):
        check_is_fitted(self)
        d = self.cidm_._resolve_dim(dim)
        p = d if n_fields is None else n_fields
        V = self.vector_fields(X, p)
        return orthonormal_basis(V.transpose(0, 2, 1), d)
