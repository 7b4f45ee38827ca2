"""The metric a kernel induces on input space (Burges), and built-in torch kernels.

A kernel here is a torch-differentiable function ``(x, y) -> scalar`` of two
single points. The built-ins are small classes so that they pickle.
"""

import math

import torch
from torch.func import jacrev, vmap

from .._utils import check_scalar_param
from ..models._internal import locked_jacfwd as jacfwd  # forward AD is process-global in torch
from . import _curvature
from ._metrics import _MetricEngine


def _positive(value, name):
    return float(check_scalar_param(value, name, low=0, closed="neither"))


class _Kernel:
    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    __hash__ = None


class _RBF(_Kernel):
    def __init__(self, gamma):
        self.gamma = _positive(gamma, "gamma")

    def __call__(self, x, y):
        return torch.exp(-self.gamma * ((x - y) ** 2).sum())


class _MahalanobisRBF(_Kernel):
    def __init__(self, M, gamma):
        self.M = torch.as_tensor(M, dtype=torch.float64)
        self.gamma = _positive(gamma, "gamma")
        if self.M.ndim != 2 or self.M.shape[0] != self.M.shape[1]:
            raise ValueError(f"M must be a square (d, d) matrix; got shape {tuple(self.M.shape)}.")

    def __call__(self, x, y):
        diff = x - y
        return torch.exp(-self.gamma * diff @ self.M.to(diff) @ diff)


class _Polynomial(_Kernel):
    def __init__(self, gamma, coef0, degree):
        self.gamma = _positive(gamma, "gamma")
        self.coef0 = float(coef0)
        self.degree = int(check_scalar_param(degree, "degree", kind="integer", low=1))

    def __call__(self, x, y):
        return (self.gamma * (x @ y) + self.coef0) ** self.degree


class _Linear(_Kernel):
    def __call__(self, x, y):
        return x @ y


class _ErfNNGP(_Kernel):
    def __init__(self, sigma_w, sigma_b):
        self.sigma_w = _positive(sigma_w, "sigma_w")
        self.sigma_b = float(sigma_b)

    def __call__(self, x, y):
        sw2, sb2 = self.sigma_w**2, self.sigma_b**2
        num = sb2 + sw2 * (x @ y)
        den = torch.sqrt((1 + sb2 + sw2 * (x @ x)) * (1 + sb2 + sw2 * (y @ y)))
        return (2 / math.pi) * torch.asin(num / den)


def rbf_kernel(gamma=1.0):
    """``K(x, y) = exp(−γ|x − y|²)``; induces the flat metric ``g = 2γ I``.

    Parameters
    ----------
    gamma : float, default=1.0
        Positive inverse squared length scale γ.

    Returns
    -------
    kernel : callable
        ``(x, y) -> scalar`` on torch tensors of shape ``(d,)``, for
        :class:`KernelMetric` and :class:`ConformalKernelSVC`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import KernelMetric, rbf_kernel
    >>> KernelMetric(rbf_kernel(0.7)).metric(torch.zeros(1, 2)).numpy().round(6) + 0.0
    array([[[1.4, 0. ],
            [0. , 1.4]]])
    """
    return _RBF(gamma)


def mahalanobis_rbf_kernel(M, gamma=1.0):
    """``K(x, y) = exp(−γ (x−y)ᵀ M (x−y))``; induces ``g = 2γ M`` (flat).

    Parameters
    ----------
    M : array-like or torch.Tensor of shape (d, d)
        Symmetric positive-definite matrix.
    gamma : float, default=1.0
        Positive scale γ.

    Returns
    -------
    kernel : callable
        ``(x, y) -> scalar`` on torch tensors of shape ``(d,)``, for
        :class:`KernelMetric` and :class:`ConformalKernelSVC`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import KernelMetric, mahalanobis_rbf_kernel
    >>> M = torch.tensor([[2.0, 0.5], [0.5, 1.0]])
    >>> KernelMetric(mahalanobis_rbf_kernel(M, 0.5)).metric(torch.ones(1, 2))[0]
    tensor([[2.0000, 0.5000],
            [0.5000, 1.0000]], dtype=torch.float64)
    """
    return _MahalanobisRBF(M, gamma)


def polynomial_kernel(gamma=1.0, coef0=1.0, degree=3):
    """``K(x, y) = (γ x·y + c₀)^p`` (scikit-learn's form).

    Parameters
    ----------
    gamma : float, default=1.0
        Scale γ of the inner product.
    coef0 : float, default=1.0
        Offset c₀.
    degree : int, default=3
        Degree p.

    Returns
    -------
    kernel : callable
        ``(x, y) -> scalar`` on torch tensors of shape ``(d,)``, for
        :class:`KernelMetric` and :class:`ConformalKernelSVC`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import KernelMetric, polynomial_kernel
    >>> KernelMetric(polynomial_kernel(1.0, 1.0, 1)).metric(torch.ones(1, 2))[0]
    tensor([[1., 0.],
            [0., 1.]], dtype=torch.float64)
    """
    return _Polynomial(gamma, coef0, degree)


def linear_kernel():
    """``K(x, y) = x·y``; induces the Euclidean metric.

    Returns
    -------
    kernel : callable
        ``(x, y) -> scalar`` on torch tensors of shape ``(d,)``, for
        :class:`KernelMetric` and :class:`ConformalKernelSVC`.

    Examples
    --------
    >>> from geolearn.riemannian import linear_kernel
    >>> linear_kernel()
    _Linear()
    """
    return _Linear()


def erf_nngp_kernel(sigma_w=1.0, sigma_b=1.0):
    """The infinite-width kernel of a shallow ``erf(z/√2)`` network, weights ``N(0, σ_w²)``.

    ``K(x,y) = (2/π) arcsin((σ_b²+σ_w² x·y) / √((1+σ_b²+σ_w²|x|²)(1+σ_b²+σ_w²|y|²)))``.

    Parameters
    ----------
    sigma_w : float, default=1.0
        Standard deviation σ_w of the input weights.
    sigma_b : float, default=1.0
        Standard deviation σ_b of the biases.

    Returns
    -------
    kernel : callable
        ``(x, y) -> scalar`` on torch tensors of shape ``(d,)``, for
        :class:`KernelMetric` and :class:`ConformalKernelSVC`.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import KernelMetric, erf_nngp_kernel
    >>> km = KernelMetric(erf_nngp_kernel(1.0, 1.0))
    >>> float(km.ricci_scalar(torch.zeros(1, 2))[0])  # R = 0 at the origin
    0.0
    """
    return _ErfNNGP(sigma_w, sigma_b)


def laplacian_kernel(*args, **kwargs):
    """Refused: ``exp(−γ|x − y|)`` is not C² on the diagonal, so it induces no metric.

    Named so that ``kernel="laplacian"`` fails with the reason instead of "unknown kernel".

    Parameters
    ----------
    *args, **kwargs
        Ignored.

    Raises
    ------
    ValueError
        Always.

    Examples
    --------
    >>> from geolearn.riemannian import laplacian_kernel
    >>> laplacian_kernel(1.0)
    Traceback (most recent call last):
    ...
    ValueError: the Laplacian kernel exp(-gamma|x - y|) is not twice differentiable ...
    """
    raise ValueError(
        "the Laplacian kernel exp(-gamma|x - y|) is not twice differentiable on the diagonal "
        "x = y, so it induces no Riemannian metric; use an RBF or Mahalanobis-RBF kernel.")


KERNELS = {
    "rbf": rbf_kernel,
    "mahalanobis_rbf": mahalanobis_rbf_kernel,
    "poly": polynomial_kernel,
    "polynomial": polynomial_kernel,
    "linear": linear_kernel,
    "erf_nngp": erf_nngp_kernel,
    "laplacian": laplacian_kernel,
}


def make_kernel(kernel, kernel_params=None):
    """A kernel callable from a built-in name and parameters, or a callable as is."""
    if callable(kernel):
        if kernel_params:
            raise ValueError("kernel_params applies to built-in kernel names only.")
        return kernel
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be a callable (x, y) -> scalar or one of "
                         f"{sorted(KERNELS)}; got {kernel!r}.")
    return KERNELS[kernel](**(kernel_params or {}))


class KernelMetric(_MetricEngine):
    """The metric ``g_{μν}(x) = ∂x_μ ∂y_ν K(x, y)|_{y=x}`` a kernel induces (Burges).

    Parameters
    ----------
    kernel : callable
        Torch-differentiable ``(x, y) -> scalar`` for single points ``(d,)``,
        twice differentiable near the diagonal.
    dtype : torch.dtype, default=torch.float64
    device : str or torch.device, default="auto"
        Where points are evaluated (``"auto"``: CUDA when available, else the CPU).
    batch_size : int, default=256

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import KernelMetric, erf_nngp_kernel
    >>> km = KernelMetric(erf_nngp_kernel(sigma_w=1.0, sigma_b=1.0))
    >>> X = torch.tensor([[0.5, -0.3]], dtype=torch.float64)
    >>> round(float(km.ricci_scalar(X)[0]), 6), round(float(km.log_volume(X)[0]), 6)
    (-0.371205, -1.205189)
    """

    _default_curvature = "kernel_gauss"

    def __init__(self, kernel, *, dtype=torch.float64, device="auto", batch_size=256):
        super().__init__(dtype=dtype, device=device, batch_size=batch_size)
        self.kernel = kernel

    def _metric_single(self, x):
        return jacfwd(jacrev(self.kernel, argnums=1), argnums=0)(x, x)

    def _check_finite(self, values, what):
        try:
            return super()._check_finite(values, what)
        except ValueError as exc:
            raise ValueError(f"{exc} A kernel must be twice differentiable on the diagonal "
                             "x = y (Laplacian/exponential kernels are not).") from None

    def check_smooth(self, x, step=1e-3, rtol=1e-2):
        """Raise ``ValueError`` unless autodiff and finite differences agree on ``g(x)``.

        Autodiff cannot see a kink on the diagonal (``|x − y|`` has a zero
        subgradient at 0), but the mixed difference quotient of a non-C² kernel
        diverges as ``1/h`` there.

        Parameters
        ----------
        x : tensor of shape (d,)
        step, rtol : float
        """
        x = self._as_points(torch.as_tensor(x).reshape(1, -1))[0]
        g = self.metric(x[None])[0]
        h = step * max(1.0, float(x.abs().max()))
        E = h * torch.eye(len(x), dtype=x.dtype, device=x.device)
        K = self.kernel
        def mixed(a, b):
            return (K(x + a, x + b) - K(x + a, x - b) - K(x - a, x + b)
                    + K(x - a, x - b)) / (4 * h * h)

        with torch.no_grad():
            fd = torch.stack([torch.stack([mixed(a, b) for b in E]) for a in E])
        if not torch.allclose(g, fd, rtol=rtol, atol=rtol * float(fd.abs().max().clamp_min(1e-12))):
            raise ValueError(
                "the kernel is not twice differentiable on the diagonal x = y (autodiff and "
                "finite differences disagree on its metric), so it induces no Riemannian "
                "metric; Laplacian/exponential kernels are not C².")

    def _ricci(self, X, method):
        if method != "kernel_gauss":
            return super()._ricci(X, method)
        K = self.kernel
        grad_y = jacrev(K, argnums=1)
        gyx = jacfwd(grad_y, argnums=0)
        gyxx = jacfwd(gyx, argnums=0)                                         # [λ, μ, ν]
        gyyxx = jacfwd(jacfwd(jacfwd(grad_y, argnums=1), argnums=0), argnums=0)  # [α, β, μ, ν]

        def parts(x):
            return gyx(x, x), gyxx(x, x), gyyxx(x, x).permute(2, 3, 0, 1)

        g, gamma_first, Q = vmap(parts)(X)
        return _curvature.kernel_gauss_ricci(0.5 * (g + g.transpose(1, 2)), gamma_first, Q)
