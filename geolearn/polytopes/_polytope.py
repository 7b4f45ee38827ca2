"""One linear region of a ReLU network as a polyhedron with its affine map."""

from dataclasses import dataclass

import numpy as np

from .._utils import check_choice
from ._lp import (
    chebyshev_lp,
    check_solver,
    clip_polygon,
    facets_clarkson,
    facets_lp,
    is_bounded,
    stack_rows,
)


@dataclass(frozen=True, eq=False)
class Polytope:
    """The region ``P(s) = {x : A x <= c}`` of bit string ``s``, optionally cut by a box.

    On the region the network is ``G(x) = W x + b``. Row ``k`` of ``A`` is the
    inequality of hidden unit ``k`` (paper 1, eq. 5). LPs run in float64 on
    rows normalised to unit length, so ``tol`` is a distance.

    Attributes
    ----------
    pattern : ndarray of shape (h,), bool
    A : ndarray of shape (h, m)
    c : ndarray of shape (h,)
    W : ndarray of shape (o, m)
    b : ndarray of shape (o,)
    lo, hi : ndarray of shape (m,) or None
        The box ``lo <= x <= hi`` (None: all of R^m). Box rows are never bits.
    tol : float, default=1e-7
    facet_method : {'clarkson', 'lp'}, default='clarkson'
    lp_solver : {'auto', 'highs', 'highspy', 'cvxpy'}, default='auto'

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.polytopes import Polytope
    >>> A = np.vstack([np.eye(2), -np.eye(2)]); c = np.ones(4)     # the square [-1, 1]^2
    >>> P = Polytope(np.zeros(4, bool), A, c, np.zeros((1, 2)), np.zeros(1), None, None)
    >>> center, radius = P.chebyshev()
    >>> float(radius), P.facets().tolist(), P.is_bounded()
    (1.0, [0, 1, 2, 3], True)
    """

    pattern: np.ndarray
    A: np.ndarray
    c: np.ndarray
    W: np.ndarray
    b: np.ndarray
    lo: object = None
    hi: object = None
    tol: float = 1e-7
    facet_method: str = "clarkson"
    lp_solver: str = "auto"

    @property
    def n_units(self):
        return self.A.shape[0]

    def _rows(self):
        return stack_rows(self.A, self.c, self.lo, self.hi)

    def contains(self, X):
        """Whether each row of ``X`` lies in the closed region (and box), up to ``tol``.

        Returns
        -------
        inside : ndarray of shape (n,), bool
        """
        X = np.atleast_2d(np.asarray(X, float))
        An, cn, _, empty = self._rows()
        if empty:
            return np.zeros(len(X), bool)
        return np.all(X @ An.T <= cn + self.tol, axis=1)

    def chebyshev(self):
        """Centre and radius of the largest ball inside the region (and box).

        Returns
        -------
        center : ndarray of shape (m,)
        radius : float
            ``inf`` for a region holding arbitrarily large balls; ``<= 0`` for an
            empty or flat region.
        """
        An, cn, _, empty = self._rows()
        if empty:
            return np.full(self.A.shape[1], np.nan), -np.inf
        return chebyshev_lp(An, cn, solver=check_solver(self.lp_solver))

    def facets(self):
        """Owners of the non-redundant inequalities (paper 1, LP 6).

        Returns
        -------
        facets : ndarray of int
            Sorted; values ``< h`` are hidden units ("active bits"), values
            ``h + j`` are box rows ``x_j <= hi_j`` and ``h + m + j`` box rows
            ``x_j >= lo_j``. Empty for a region with empty interior.
        """
        solver = check_solver(self.lp_solver)
        check_choice(self.facet_method, "facet_method", ("clarkson", "lp"))
        An, cn, owner, empty = self._rows()
        if empty or len(cn) == 0:
            return np.zeros(0, int)
        center, radius = chebyshev_lp(An, cn, r_max=1.0, solver=solver)
        if radius <= self.tol:
            return np.zeros(0, int)
        if self.facet_method == "lp":
            rows = facets_lp(An, cn, tol=self.tol, solver=solver)
        else:
            rows = facets_clarkson(An, cn, center, tol=self.tol, solver=solver,
                                   box=None if self.lo is None else (self.lo, self.hi))
        return np.sort(owner[rows])

    def active_bits(self):
        """Hidden units whose inequality is a facet (the paper's "active bits")."""
        f = self.facets()
        return f[f < self.n_units]

    def reduced(self):
        """``(A', c')``: the facet rows of ``A`` (box rows stay in ``lo``/``hi``)."""
        bits = self.active_bits()
        return self.A[bits], self.c[bits]

    def is_bounded(self):
        """Whether the region itself (ignoring the box) is bounded (one feasibility LP)."""
        An, _, _, _ = stack_rows(self.A, self.c)
        return is_bounded(An, solver=check_solver(self.lp_solver))

    def polygon(self):
        """Ordered vertices of the region cut by the box (2-D inputs with a box only).

        Returns
        -------
        vertices : ndarray of shape (k, 2)
            Counter-clockwise; empty when the region misses the box.
        """
        if self.A.shape[1] != 2 or self.lo is None:
            raise ValueError("polygon() needs 2-D inputs and a box (bounds); got "
                             f"m={self.A.shape[1]}, bounds={'None' if self.lo is None else 'box'}.")
        (x0, y0), (x1, y1) = self.lo, self.hi
        V = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], float)
        for a, c in zip(self.A, self.c):
            V = clip_polygon(V, a, c)
        return V
