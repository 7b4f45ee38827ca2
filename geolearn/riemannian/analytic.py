"""Closed forms: the infinite-width (NNGP) metric and the conformal-RBF volume element.

Every function accepts a numpy array or a torch tensor of points ``(N, d)`` and
returns the same kind (float64). Logs are natural.

At infinite width a shallow network with ``w ~ N(0, σ_w² I)``, ``b ~ N(0, σ_b²)``
induces ``g = f(u) I + 2 f'(u) x xᵀ`` with ``u = |x|²`` and
``f(u) = σ_w² E_{z~N(0, σ_b² + σ_w² u)}[σ'(z)²]`` (paper App. E): every
quantity depends on ``|x|`` only.
"""

import math

import numpy as np
import torch
from sklearn.utils import Bunch

from .._utils import check_scalar_param
from .._utils.validation import check_squares_finite
from ..models._internal import locked_jvp as jvp  # forward AD is process-global in torch

__all__ = [
    "conformal_rbf_log_volume",
    "nngp_log_volume",
    "nngp_metric",
    "nngp_ricci_scalar",
    "projection_metric_quantities",
]

_N_QUADRATURE = 80


def _points(X):
    is_tensor = isinstance(X, torch.Tensor)
    T = torch.as_tensor(np.asarray(X) if not is_tensor else X, dtype=torch.float64)
    if T.ndim != 2 or len(T) == 0:
        raise ValueError(f"X must be a non-empty (N, d) array; got shape {tuple(T.shape)}.")
    if not torch.isfinite(T).all():
        raise ValueError("X contains NaN or infinity.")
    # the metrics hold |x|^2 and x x^T
    check_squares_finite(T.detach().cpu(), what="squared norms")
    return T, is_tensor


def _out(value, is_tensor):
    return value if is_tensor else value.numpy()


def _f_function(activation, sigma_w, sigma_b, degree):
    """``u -> f(u)`` as a differentiable torch function."""
    check_scalar_param(sigma_w, "sigma_w", low=0, closed="neither")
    check_scalar_param(sigma_b, "sigma_b", low=0)
    sw2, sb2 = float(sigma_w) ** 2, float(sigma_b) ** 2
    if activation == "erf":
        if degree is not None:
            raise ValueError("degree applies to activation='monomial' only.")
        return lambda u: (2 * sw2 / math.pi) * (1 + 2 * sb2 + 2 * sw2 * u) ** -0.5
    if activation == "monomial":
        k = int(check_scalar_param(degree, "degree", kind="integer", low=1))
        return lambda u: sw2 * k**2 * (sb2 + sw2 * u) ** (k - 1) / (2 * k - 1)
    if activation == "sigmoid":
        if degree is not None:
            raise ValueError("degree applies to activation='monomial' only.")
        nodes, weights = np.polynomial.hermite_e.hermegauss(_N_QUADRATURE)
        xi = torch.as_tensor(nodes)
        w = torch.as_tensor(weights) / math.sqrt(2 * math.pi)

        def f(u):
            s = torch.sigmoid(torch.sqrt(sb2 + sw2 * u)[..., None] * xi)
            return sw2 * ((s * (1 - s)) ** 2 * w).sum(-1)

        return f
    raise ValueError(f"activation must be 'erf', 'sigmoid' or 'monomial'; got {activation!r}.")


def _f_derivatives(f, u):
    one = torch.ones_like(u)
    df = lambda t: jvp(f, (t,), (one,))[1]  # noqa: E731
    f0, f1 = jvp(f, (u,), (one,))
    return f0, f1, jvp(df, (u,), (one,))[1]


def projection_metric_quantities(f, fprime, fsecond, X):
    """Closed-form geometry of ``g = f(u) I + 2 f'(u) x xᵀ``, ``u = |x|²`` (paper E.13–E.23).

    Parameters
    ----------
    f, fprime, fsecond : array-like of shape (N,)
        ``f(u)``, ``f'(u)`` and ``f''(u)`` at each point's ``u``.
    X : array-like of shape (N, d)

    Returns
    -------
    quantities : Bunch
        ``"metric"`` (N, d, d), ``"det"`` (N,) ``= f^{d−1}(f + 2uf')``,
        ``"inverse"`` (N, d, d), ``"eigvals"`` (N, 2): the radial eigenvalue
        ``f + 2uf'`` and the tangential one ``f`` (multiplicity ``d − 1``),
        ``"log_volume"`` (N,) and ``"ricci_scalar"`` (N,) by
        ``R = −(d−1) u [(6f'² + 4uf'f'')/(f(f+2uf')²) + (d−4)f'²/(f²(f+2uf'))]``.

    Examples
    --------
    The flat metric ``f = 1`` has ``R = 0``:

    >>> import numpy as np
    >>> from geolearn.riemannian.analytic import projection_metric_quantities
    >>> q = projection_metric_quantities(np.ones(1), np.zeros(1), np.zeros(1), np.ones((1, 3)))
    >>> abs(float(q["ricci_scalar"][0])), float(q["det"][0])
    (0.0, 1.0)
    """
    X, is_tensor = _points(X)
    f, f1, f2 = (torch.as_tensor(v, dtype=torch.float64).reshape(-1) for v in (f, fprime, fsecond))
    n, d = X.shape
    u = (X**2).sum(1)
    radial = f + 2 * u * f1
    eye = torch.eye(d, dtype=torch.float64)
    outer = X[:, :, None] * X[:, None, :]
    R = -(d - 1) * u * ((6 * f1**2 + 4 * u * f1 * f2) / (f * radial**2)
                        + (d - 4) * f1**2 / (f**2 * radial))
    out = {
        "metric": f[:, None, None] * eye + 2 * f1[:, None, None] * outer,
        "det": f ** (d - 1) * radial,
        "inverse": (eye - (2 * f1 / radial)[:, None, None] * outer) / f[:, None, None],
        "eigvals": torch.stack([radial, f], 1),
        "log_volume": 0.5 * ((d - 1) * torch.log(f) + torch.log(radial)),
        "ricci_scalar": R,
    }
    return Bunch(**{k: _out(v, is_tensor) for k, v in out.items()})


def _nngp(X, activation, sigma_w, sigma_b, degree):
    f = _f_function(activation, sigma_w, sigma_b, degree)
    T, is_tensor = _points(X)
    derivs = _f_derivatives(f, (T**2).sum(1))
    q = projection_metric_quantities(*derivs, T)
    return {k: _out(v, is_tensor) for k, v in q.items()}


def nngp_metric(X, activation="erf", sigma_w=1.0, sigma_b=1.0, degree=None):
    """Infinite-width metric ``g = f I + 2f' x xᵀ`` of a shallow network, shape (N, d, d).

    Parameters
    ----------
    X : array-like or tensor of shape (N, d)
    activation : {"erf", "sigmoid", "monomial"}, default="erf"
        ``erf(z/√2)`` (closed form), sigmoid (80-node Gauss–Hermite
        quadrature, derivatives by autodiff through it) or
        ``z^k/√((2k−1)!!)`` (``degree = k``).
    sigma_w, sigma_b : float, default=1.0
        Standard deviations of weights (no ``1/d`` factor) and biases.
    degree : int, optional
        Only for ``activation="monomial"``.

    Returns
    -------
    g : ndarray or tensor of shape (N, d, d)
        A tensor when ``X`` is one.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.riemannian.analytic import nngp_metric
    >>> nngp_metric(np.zeros((1, 2))).round(6)  # f(0) I = (2/π)(1+2σ_b²)^{-1/2} I
    array([[[0.367553, 0.      ],
            [0.      , 0.367553]]])
    """
    return _nngp(X, activation, sigma_w, sigma_b, degree)["metric"]


def nngp_log_volume(X, activation="erf", sigma_w=1.0, sigma_b=1.0, degree=None):
    """Log volume element ``½ log det g`` of the infinite-width metric, shape (N,).

    Parameters
    ----------
    X : array-like or tensor of shape (N, d)
    activation : {"erf", "sigmoid", "monomial"}, default="erf"
        As for :func:`nngp_metric`.
    sigma_w, sigma_b : float, default=1.0
        Standard deviations of weights (no ``1/d`` factor) and biases.
    degree : int, optional
        Only for ``activation="monomial"``.

    Returns
    -------
    log_volume : ndarray or tensor of shape (N,)
        A tensor when ``X`` is one.


    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.riemannian.analytic import nngp_log_volume
    >>> nngp_log_volume(np.array([[0.5, -0.3]])).round(6)
    array([-1.205189])
    """
    return _nngp(X, activation, sigma_w, sigma_b, degree)["log_volume"]


def nngp_ricci_scalar(X, activation="erf", sigma_w=1.0, sigma_b=1.0, degree=None):
    """Ricci scalar of the infinite-width metric, shape (N,).

    For erf it equals ``−(π/2)(d−1)(d+2)σ_w² u / ((1+2σ_b²)√D)``,
    ``D = 1 + 2σ_b² + 2σ_w² u``.

    Parameters
    ----------
    X : array-like or tensor of shape (N, d)
    activation : {"erf", "sigmoid", "monomial"}, default="erf"
        As for :func:`nngp_metric`.
    sigma_w, sigma_b : float, default=1.0
        Standard deviations of weights (no ``1/d`` factor) and biases.
    degree : int, optional
        Only for ``activation="monomial"``.

    Returns
    -------
    ricci_scalar : ndarray or tensor of shape (N,)
        A tensor when ``X`` is one.


    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.riemannian.analytic import nngp_ricci_scalar
    >>> nngp_ricci_scalar(np.array([[0.5, -0.3]])).round(6)
    array([-0.371205])
    """
    return _nngp(X, activation, sigma_w, sigma_b, degree)["ricci_scalar"]


def conformal_rbf_log_volume(X, centers, tau, sigma):
    """Log volume element of the conformally modified RBF kernel ``c(x)c(y)K(x, y)``.

    ``K = exp(−|x−y|²/(2σ²))``, ``c(x) = Σ_i exp(−|x − s_i|²/(2τ²))``; the metric
    ``(c²/σ²) I + ∇c∇cᵀ`` gives ``log V = d(log c − log σ) + ½ log(1 + σ²|∇ log c|²)``
    (paper H.8), computed in log space so that far points do not underflow.

    Parameters
    ----------
    X : array-like or tensor of shape (N, d)
    centers : array-like of shape (k, d)
    tau, sigma : float
        Bandwidth of the conformal factor and of the base kernel.

    Returns
    -------
    log_volume : ndarray or tensor of shape (N,)
        A tensor when ``X`` is one.

    Examples
    --------
    At a lone centre ``c = 1`` and ``∇c = 0``: ``log V = −d log σ``.

    >>> import numpy as np
    >>> from geolearn.riemannian.analytic import conformal_rbf_log_volume
    >>> conformal_rbf_log_volume(np.zeros((1, 2)), np.zeros((1, 2)), 0.5, 2.0).round(6)
    array([-1.386294])
    """
    T, is_tensor = _points(X)
    C = torch.as_tensor(np.asarray(centers) if not isinstance(centers, torch.Tensor) else centers,
                        dtype=torch.float64)
    if C.ndim != 2 or C.shape[1] != T.shape[1] or len(C) == 0:
        raise ValueError(f"centers must be a non-empty (k, {T.shape[1]}) array; "
                         f"got shape {tuple(C.shape)}.")
    for name, v in (("tau", tau), ("sigma", sigma)):
        check_scalar_param(v, name, low=0, closed="neither")
    diff = T[:, None, :] - C[None, :, :]
    logits = -(diff**2).sum(-1) / (2 * tau**2)
    log_c = torch.logsumexp(logits, 1)
    grad_log_c = -(torch.softmax(logits, 1)[:, :, None] * diff).sum(1) / tau**2
    d = T.shape[1]
    logv = d * (log_c - math.log(sigma)) + 0.5 * torch.log1p(sigma**2 * (grad_log_c**2).sum(1))
    return _out(logv, is_tensor)
