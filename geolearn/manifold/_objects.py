"""Manifold objects: projection and tangent bases of known, estimated and learned manifolds.

Each object describes a ``d``-dimensional manifold ``M`` in ``R^D`` through one
duck-typed interface, which :func:`geolearn.adversarial.risk_decomposition`
reads: ``ambient_dim``, ``intrinsic_dim``, ``reach`` (``inf`` for flat
manifolds, ``None`` when unknown), ``project(X) -> (n, D)``,
``tangent_basis(X) -> (n, D, d)`` with orthonormal columns, and where a global
chart exists ``has_chart``, ``chart(X) -> (n, d)``, ``from_chart(U) -> (n, D)``
and ``chart_bounds``. Arrays come back as float64 numpy arrays.
"""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._utils import check_numeric_array, resolve_device, to_numpy, warn_user
from ..exceptions import GeolearnWarning
from ..models import as_model
from ._tangent import local_pca, orthonormal_basis


def _check_points(X, dim, name="X"):
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype == np.float64:
        # the fast path of attack loops, which call the manifold thousands of times
        if not np.isfinite(X).all():
            raise ValueError(f"{name} contains NaN or infinity.")
    else:
        X = check_numeric_array(X, name, dtype=np.float64, ensure_min_samples=0)
    if dim is not None and X.shape[1] != dim:
        raise ValueError(f"{name} has {X.shape[1]} features but the manifold's ambient_dim is "
                         f"{dim}.")
    return X


class SphereManifold(BaseEstimator):
    """The sphere ``{x : ||x - center|| = radius}`` in ``R^D`` (the paper's circle for D = 2).

    Parameters
    ----------
    radius : float, default=1.0
    center : array-like of shape (D,), optional
        Default: the origin.
    ambient_dim : int, default=2
        ``D >= 2``; the sphere has dimension ``D - 1``.

    Attributes
    ----------
    intrinsic_dim : int
        ``ambient_dim - 1``.
    reach : float
        The radius (the tubular-neighbourhood radius of Theorem 1).
    has_chart : bool
        True for D = 2 (the angle) and D = 3 (polar and azimuthal angles).
    chart_bounds : list of (float, float)

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.manifold import SphereManifold
    >>> S = SphereManifold()
    >>> S.project([[2.0, 0.0]]), S.tangent_basis([[0.0, 3.0]])[0, :, 0].round(6) ** 2
    (array([[1., 0.]]), array([1., 0.]))
    """

    def __init__(self, radius=1.0, center=None, ambient_dim=2):
        self.radius = radius
        self.center = center
        self.ambient_dim = ambient_dim

    def _params(self):
        D = self.ambient_dim
        if not isinstance(D, Integral) or D < 2:
            raise ValueError(f"ambient_dim must be an integer >= 2; got {D!r}.")
        if not isinstance(self.radius, Real) or not (0 < self.radius < np.inf):
            raise ValueError(f"radius must be a positive finite number; got {self.radius!r}.")
        c = np.zeros(D) if self.center is None else np.asarray(self.center, dtype=np.float64)
        if c.shape != (D,) or not np.isfinite(c).all():
            raise ValueError(f"center must be a finite vector of length ambient_dim={D}; "
                             f"got {self.center!r}.")
        return float(self.radius), c

    @property
    def intrinsic_dim(self):
        return self.ambient_dim - 1

    @property
    def reach(self):
        return float(self.radius)

    @property
    def has_chart(self):
        return self.ambient_dim in (2, 3)

    @property
    def chart_bounds(self):
        return [(0.0, 2 * np.pi)] if self.ambient_dim == 2 else [(0.0, np.pi), (0.0, 2 * np.pi)]

    def _unit(self, X):
        r, c = self._params()
        V = _check_points(X, self.ambient_dim) - c
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        V[norms[:, 0] == 0] = np.eye(self.ambient_dim)[0]  # the centre: any point is nearest
        return V / np.linalg.norm(V, axis=1, keepdims=True), r, c

    def project(self, X):
        """Nearest points of the sphere, ``center + radius (x - c) / ||x - c||``."""
        U, r, c = self._unit(X)
        return c + r * U

    def tangent_basis(self, X):
        """Orthonormal tangent bases ``(n, D, D - 1)`` at the projections of ``X``."""
        U, _, _ = self._unit(X)
        D = self.ambient_dim
        if D == 2:  # the rotated normal, sign-consistent along the circle
            return np.stack([-U[:, 1], U[:, 0]], axis=1)[:, :, None]
        return orthonormal_basis(np.eye(D) - U[:, :, None] * U[:, None, :], D - 1)[0]

    def chart(self, X):
        """Angles of ``X``: ``theta`` in ``[0, 2 pi)`` (D = 2), ``(phi, theta)`` (D = 3)."""
        self._require_chart()
        U, _, _ = self._unit(X)
        theta = np.mod(np.arctan2(U[:, 1], U[:, 0]), 2 * np.pi)
        if self.ambient_dim == 2:
            return theta[:, None]
        return np.stack([np.arccos(np.clip(U[:, 2], -1, 1)), theta], axis=1)

    def from_chart(self, U):
        """Points of the sphere at chart coordinates ``U`` (see :meth:`chart`)."""
        self._require_chart()
        r, c = self._params()
        U = check_numeric_array(U, "U", dtype=np.float64, ensure_min_samples=0)
        if self.ambient_dim == 2:
            return c + r * np.stack([np.cos(U[:, 0]), np.sin(U[:, 0])], axis=1)
        phi, theta = U[:, 0], U[:, 1]
        return c + r * np.stack([np.sin(phi) * np.cos(theta), np.sin(phi) * np.sin(theta),
                                 np.cos(phi)], axis=1)

    def _require_chart(self):
        if not self.has_chart:
            raise ValueError(f"SphereManifold has a chart only for ambient_dim 2 or 3; got "
                             f"{self.ambient_dim}.")

    def sample(self, n_samples, random_state=None):
        """``n_samples`` points drawn uniformly on the sphere, ``(n_samples, D)``."""
        r, c = self._params()
        G = check_random_state(random_state).normal(size=(n_samples, self.ambient_dim))
        return c + r * G / np.linalg.norm(G, axis=1, keepdims=True)


class AffineManifold(BaseEstimator):
    """The affine subspace ``offset + span(basis)``, optionally a box of its chart.

    Parameters
    ----------
    basis : array-like of shape (D, d)
        Spanning columns; orthonormalised (QR, signs kept) with a
        :class:`~geolearn.exceptions.GeolearnWarning` when they were not
        orthonormal.
    offset : array-like of shape (D,), optional
        Default: the origin.
    bounds : list of d (lo, hi), optional
        A box of chart coordinates ``u = basis^T (x - offset)``; projection
        clamps to it. Default: the whole subspace.

    Attributes
    ----------
    ambient_dim, intrinsic_dim : int
    reach : float
        ``inf``.
    has_chart : bool
        True: ``chart(x) = basis^T (x - offset)`` is an isometry.
    chart_bounds : list of (float, float)
        ``bounds``, or ``(-inf, inf)`` per chart coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.manifold import AffineManifold
    >>> plane = AffineManifold(np.eye(3)[:, :2])  # the paper's plane x3 = 0
    >>> plane.project([[1.0, 2.0, 3.0]])
    array([[1., 2., 0.]])
    >>> AffineManifold([[1.0], [0.0]], bounds=[(0, 1)]).project([[2.0, 0.5]])
    array([[1., 0.]])
    """

    def __init__(self, basis, offset=None, bounds=None):
        self.basis = basis
        self.offset = offset
        self.bounds = bounds

    def _frame(self):
        """``(orthonormal basis, offset, lo, hi)``; built once per parameter values."""
        key = (id(self.basis), id(self.offset), id(self.bounds))
        cached = self.__dict__.get("_frame_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        B = check_numeric_array(self.basis, "basis", dtype=np.float64)
        D, d = B.shape
        if d > D:
            raise ValueError(f"basis must be (D, d) with d <= D; got shape {B.shape}.")
        Q, R = np.linalg.qr(B)
        if np.any(np.abs(np.diag(R)) < 1e-10 * max(1.0, np.abs(R).max())):
            raise ValueError("basis must have linearly independent columns.")
        Q = Q * np.sign(np.diag(R))
        if np.abs(Q - B).max() > 1e-6:
            warn_user("AffineManifold: basis was not orthonormal; its columns were "
                      "orthonormalised (QR).", GeolearnWarning)
        o = np.zeros(D) if self.offset is None else np.asarray(self.offset, dtype=np.float64)
        if o.shape != (D,) or not np.isfinite(o).all():
            raise ValueError(f"offset must be a finite vector of length {D}; got "
                             f"{self.offset!r}.")
        lo, hi = np.full(d, -np.inf), np.full(d, np.inf)
        if self.bounds is not None:
            b = np.asarray(self.bounds, dtype=np.float64)
            if b.shape != (d, 2) or np.isnan(b).any() or np.any(b[:, 0] >= b[:, 1]):
                raise ValueError(f"bounds must be a list of {d} pairs (lo, hi) with lo < hi; "
                                 f"got {self.bounds!r}.")
            lo, hi = b[:, 0], b[:, 1]
        frame = (Q, o, lo, hi)
        self.__dict__["_frame_cache"] = (key, frame)
        return frame

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_frame_cache", None)
        return state

    @property
    def ambient_dim(self):
        return self._frame()[0].shape[0]

    @property
    def intrinsic_dim(self):
        return self._frame()[0].shape[1]

    @property
    def reach(self):
        return np.inf

    has_chart = True

    @property
    def chart_bounds(self):
        _, _, lo, hi = self._frame()
        return [(float(a), float(b)) for a, b in zip(lo, hi)]

    def chart(self, X):
        """Chart coordinates ``basis^T (x - offset)`` of ``X`` (not clamped), ``(n, d)``."""
        Q, o, _, _ = self._frame()
        return (_check_points(X, Q.shape[0]) - o) @ Q

    def from_chart(self, U):
        """Points ``offset + basis u`` for chart coordinates ``U`` ``(n, d)``."""
        Q, o, _, _ = self._frame()
        return o + _check_points(U, Q.shape[1], "U") @ Q.T

    def project(self, X):
        """Nearest points of the (boxed) subspace: chart coordinates clamped to ``bounds``."""
        _, _, lo, hi = self._frame()
        return self.from_chart(np.clip(self.chart(X), lo, hi))

    def tangent_basis(self, X):
        """The orthonormal basis, repeated: ``(n, D, d)``."""
        Q = self._frame()[0]
        n = len(_check_points(X, Q.shape[0]))
        return np.broadcast_to(Q, (n, *Q.shape)).copy()

    def sample(self, n_samples, random_state=None):
        """Points uniform on the chart box (needs finite ``bounds``), ``(n_samples, D)``."""
        _, _, lo, hi = self._frame()
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ValueError("sample needs finite bounds for every chart coordinate.")
        rng = check_random_state(random_state)
        return self.from_chart(rng.uniform(lo, hi, size=(n_samples, len(lo))))


class LocalPCAManifold(BaseEstimator):
    """A manifold estimated from samples by local PCA (first-order projection).

    At ``x`` the ``n_neighbors`` nearest reference points, centred at their
    mean ``m(x)``, give the tangent basis ``T(x)`` (top ``n_components``
    principal directions) and the projection ``m(x) + T T^T (x - m(x))``.

    Parameters
    ----------
    n_components : int
        The intrinsic dimension ``d``.
    n_neighbors : int, default=20
        Reference points per neighbourhood (``> n_components``).

    Attributes
    ----------
    X_ref_ : ndarray of shape (N, D)
    n_features_in_ : int
    ambient_dim, intrinsic_dim : int
    reach : None
        Unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.manifold import LocalPCAManifold
    >>> t = np.linspace(0, 1, 50)
    >>> M = LocalPCAManifold(1, n_neighbors=5).fit(np.c_[t, 2 * t])
    >>> np.abs(M.tangent_basis([[0.5, 1.0]])[0, :, 0]).round(4)
    array([0.4472, 0.8944])
    """

    _parameter_constraints = {  # noqa: RUF012
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_neighbors": [Interval(Integral, 2, None, closed="left")],
    }

    def __init__(self, n_components, n_neighbors=20):
        self.n_components = n_components
        self.n_neighbors = n_neighbors

    has_chart = False
    reach = None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Store the reference points and their neighbour index.

        Parameters
        ----------
        X : array-like of shape (N, D)
        y : ignored

        Returns
        -------
        self : LocalPCAManifold
        """
        X = check_array(X, dtype=np.float64)
        d, k = self.n_components, self.n_neighbors
        if d > X.shape[1]:
            raise ValueError(f"n_components must be an integer in [1, {X.shape[1]}]; got {d!r}.")
        if k <= d:
            raise ValueError(f"n_neighbors must be an integer > n_components={d}; got {k!r}.")
        if len(X) < k:
            raise ValueError(f"LocalPCAManifold needs at least n_neighbors={k} reference "
                             f"points; got n_samples = {len(X)}.")
        self.X_ref_ = X
        self.n_features_in_ = X.shape[1]
        self.nn_ = NearestNeighbors(n_neighbors=k).fit(X)
        return self

    @property
    def ambient_dim(self):
        check_is_fitted(self)
        return self.n_features_in_

    @property
    def intrinsic_dim(self):
        return self.n_components

    def _local(self, X):
        check_is_fitted(self)
        X = _check_points(X, self.n_features_in_)
        if len(X) == 0:
            return np.empty((0, X.shape[1], self.n_components)), np.empty((0, X.shape[1])), X
        T, means = local_pca(self.X_ref_, self.nn_, X, self.n_components)
        return T, means, X

    def tangent_basis(self, X):
        """Top principal directions of each neighbourhood, ``(n, D, d)``."""
        return self._local(X)[0]

    def project(self, X):
        """First-order projection onto the local tangent planes, ``(n, D)``."""
        T, m, X = self._local(X)
        return m + np.einsum("nij,nj->ni", T, np.einsum("nij,ni->nj", T, X - m))


class LatentManifold(BaseEstimator):
    """The manifold decoded by an autoencoder: ``M = dec(R^k)``, tangents from ``J_dec``.

    ``project(x) = dec(enc(x))``; the tangent basis at ``x`` is the QR of the
    decoder Jacobian at ``enc(x)`` (forward mode, batched), i.e. the tangent
    plane of the decoded point. Data need not lie on ``M``: in-manifold
    perturbations of ``x`` use the offset convention ``x + dec(z + u) - dec(z)``.

    Parameters
    ----------
    encoder : torch.nn.Module, or a fitted net whose ``module_`` has ``encoder`` and ``decoder``
        Maps ``(n, D)`` rows (or images of ``image_shape``) to latent codes;
        a tuple output is read as its first element (a VAE's mean).
    decoder : torch.nn.Module, optional
        Maps codes to ``(n, D)`` rows or images; taken from the fitted net
        when ``encoder`` is one.
    n_latent : int, optional
        The code size ``d``; default: read from the encoder's output.
    image_shape : tuple of int, optional
        ``(C, H, W)`` when the encoder takes images; everything else is flat.
    device : str, default="auto"
        Checked against the modules' device (they are never moved).

    Attributes
    ----------
    ambient_dim, intrinsic_dim : int
    reach : None
        Unknown.

    Examples
    --------
    >>> import torch
    >>> from geolearn.manifold import LatentManifold
    >>> enc, dec = torch.nn.Linear(3, 1), torch.nn.Linear(1, 3)
    >>> M = LatentManifold(enc, dec, n_latent=1)
    >>> M.tangent_basis(torch.zeros(2, 3).numpy()).shape, M.ambient_dim
    ((2, 3, 1), 3)
    """

    def __init__(self, encoder, decoder=None, n_latent=None, image_shape=None, device="auto"):
        self.encoder = encoder
        self.decoder = decoder
        self.n_latent = n_latent
        self.image_shape = image_shape
        self.device = device

    has_chart = False
    reach = None

    def _models(self):
        device = None if self.device == "auto" else resolve_device(self.device)
        if self.decoder is None:
            module = as_model(self.encoder, device=device).module
            enc, dec = getattr(module, "encoder", None), getattr(module, "decoder", None)
            if enc is None or dec is None:
                raise TypeError("decoder=None needs a fitted net whose module_ has .encoder and "
                                ".decoder submodules; pass encoder and decoder modules.")
            return as_model(enc, device=device), as_model(dec, device=device)
        return as_model(self.encoder, device=device), as_model(self.decoder, device=device)

    def frozen(self):
        """A context with the encoder and decoder in eval mode, without parameter gradients."""
        from contextlib import ExitStack

        stack = ExitStack()
        for m in self._models():
            stack.enter_context(m.frozen())
        return stack

    def encode_tensor(self, x):
        """Differentiable codes of flat rows ``x`` (a tensor), ``(n, d)``."""
        enc, _ = self._models()
        if self.image_shape is not None:
            x = x.reshape(len(x), *self.image_shape)
        out = enc.module(enc.to_tensor(x))
        return (out[0] if isinstance(out, tuple) else out).reshape(len(x), -1)

    def decode_tensor(self, z):
        """Differentiable flat decodings of codes ``z`` (a tensor), ``(n, D)``."""
        _, dec = self._models()
        return dec.module(dec.to_tensor(z)).reshape(len(z), -1)

    @property
    def intrinsic_dim(self):
        if self.n_latent is not None:
            return int(self.n_latent)
        return self._dims()[1]

    @property
    def ambient_dim(self):
        if self.image_shape is not None:
            return int(np.prod(self.image_shape))
        return self._dims()[0]

    def _dims(self):
        """``(D, d)`` from one decoded zero code (``d`` from ``n_latent`` or the decoder)."""
        enc, dec = self._models()
        d = self.n_latent
        if d is None:
            first = next((m for m in dec.module.modules() if hasattr(m, "in_features")), None)
            if first is None:
                raise ValueError("n_latent is needed: the decoder's input size is unknown.")
            d = first.in_features
        with dec.frozen(), torch.no_grad():
            D = self.decode_tensor(torch.zeros(1, int(d))).shape[1]
        return int(D), int(d)

    def project(self, X):
        """``dec(enc(x))``, flat ``(n, D)``."""
        X = _check_points(X, None)
        with self.frozen(), torch.no_grad():
            out = self.decode_tensor(self.encode_tensor(torch.as_tensor(X)))
        return to_numpy(out).astype(np.float64)

    def tangent_basis(self, X):
        """QR of the decoder Jacobian at ``enc(x)``: orthonormal ``(n, D, d)``."""
        J = self.decoder_jacobian(X)
        Q, R = np.linalg.qr(J)
        return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]

    def decoder_jacobian(self, X):
        """The decoder Jacobian ``J_dec(enc(x))``, flat ``(n, D, d)`` float64."""
        X = _check_points(X, None)
        with self.frozen(), torch.no_grad():
            Z = self.encode_tensor(torch.as_tensor(X))
        J = as_model(self.decode_tensor).jacobian(Z, mode="fwd")
        return to_numpy(J).reshape(len(X), -1, Z.shape[1]).astype(np.float64)

