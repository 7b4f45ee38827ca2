"""Shallow networks: the paper's toy model and its closed-form geometry (paper §3, App. D)."""

import math

import torch
from torch import nn

from .._utils import check_choice, check_tensor
from ..models._internal import locked_jvp as jvp  # forward AD is process-global in torch
from ._curvature import _inverse
from ._metrics import check_scale, log_volume_from_singular_values, scale_value


class Erf(nn.Module):
    """``σ(z) = erf(z/√2)``, the erf convention of the paper and its code.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import Erf
    >>> Erf()(torch.tensor([0.0]))
    tensor([0.])
    """

    def forward(self, z):
        return torch.erf(z / math.sqrt(2.0))


ACTIVATIONS = {"sigmoid": nn.Sigmoid, "tanh": nn.Tanh, "erf": Erf, "gelu": nn.GELU}


def _check_activation(name):
    check_choice(name, "activation", sorted(ACTIVATIONS))


def _activation_name(module):
    for name, cls in ACTIVATIONS.items():
        if type(module) is cls:
            return name
    names = [c.__name__ for c in ACTIVATIONS.values()]
    raise ValueError(f"activation module must be one of {names}; got {type(module).__name__}.")


class ShallowNet(nn.Module):
    """One-hidden-layer classifier ``logits = (V σ(Wx + b) + c)/√width`` (the paper's toy net).

    Use it as the ``module`` of a skorch ``NeuralNetClassifier`` (feed float64
    arrays when ``dtype=torch.float64``). :meth:`features` is the paper's feature
    map up to the ``1/√width`` that ``scale="width"`` supplies.

    Parameters
    ----------
    n_features : int
    width : int
    n_classes : int
    activation : {"sigmoid", "tanh", "erf", "gelu"}, default="sigmoid"
    init : {"standard_normal", "default"}, default="standard_normal"
        ``"standard_normal"``: every weight and bias ``N(0, 1)`` (the paper's
        code); ``"default"``: PyTorch's initialisation.
    dtype : torch.dtype, default=torch.float64

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import ShallowNet
    >>> net = ShallowNet(2, width=16, n_classes=2)
    >>> net(torch.zeros(5, 2, dtype=torch.float64)).shape, net.features(torch.zeros(1, 2)).shape
    (torch.Size([5, 2]), torch.Size([1, 16]))
    """

    def __init__(self, n_features, width, n_classes, activation="sigmoid",
                 init="standard_normal", dtype=torch.float64):
        super().__init__()
        _check_activation(activation)
        check_choice(init, "init", ("standard_normal", "default"))
        self.width = width
        self.hidden = nn.Linear(n_features, width, dtype=dtype)
        self.activation = ACTIVATIONS[activation]()
        self.readout = nn.Linear(width, n_classes, dtype=dtype)
        if init == "standard_normal":
            for p in self.parameters():
                nn.init.normal_(p)

    def features(self, x):
        """Hidden-layer activations ``σ(Wx + b)``, shape (N, width)."""
        return self.activation(self.hidden(x.to(self.hidden.weight.dtype)))

    def forward(self, x):
        return self.readout(self.features(x)) / math.sqrt(self.width)


class ShallowNetworkGeometry:
    """Closed-form geometry of ``Φ(x) = σ(Wx + b)`` with fixed weights (paper App. D).

    ``J = diag(σ'(z)) W`` costs ``O(nd)`` per point; the Ricci scalar uses
    ``R = −s² Σ_{ij} c_i c_j (q_ii q_jj q_ij − q_ij³)``, ``c_j = σ'_jσ''_j``,
    ``q_ij = w_iᵀ g⁻¹ w_j`` (the Hessian-metric formula with coefficient −1/4).

    Parameters
    ----------
    weights : array-like of shape (n, d)
    biases : array-like of shape (n,)
    activation : {"sigmoid", "tanh", "erf", "gelu"}, default="sigmoid"
        Derivatives ``σ'``, ``σ''`` by forward-mode autodiff of the activation.
    scale : {"width", "none"} or float, default="width"
        ``g = s Σ_j σ'_j² w_j w_jᵀ`` with ``s = 1/n``, ``1`` or the value.

    Examples
    --------
    >>> import torch
    >>> from geolearn.riemannian import ShallowNetworkGeometry
    >>> W = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> geo = ShallowNetworkGeometry(W, torch.zeros(2, dtype=torch.float64), "erf")
    >>> abs(float(geo.ricci_scalar(torch.tensor([[0.3, 0.1]]))[0]))  # n = d: flat
    0.0
    """

    def __init__(self, weights, biases, activation="sigmoid", scale="width"):
        self.weights = torch.as_tensor(weights, dtype=torch.float64)
        self.biases = torch.as_tensor(biases, dtype=torch.float64)
        if self.weights.ndim != 2 or self.biases.shape != (self.weights.shape[0],):
            raise ValueError("weights must be (n, d) and biases (n,); got shapes "
                             f"{tuple(self.weights.shape)} and {tuple(self.biases.shape)}.")
        _check_activation(activation)
        self.activation = activation
        self.scale = check_scale(scale)
        self._sigma = ACTIVATIONS[activation]()

    @classmethod
    def from_module(cls, module, scale="width"):
        """From ``nn.Sequential(nn.Linear, activation)`` or a :class:`ShallowNet`.

        Examples
        --------
        >>> import torch
        >>> from geolearn.riemannian import ShallowNetworkGeometry
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 5), torch.nn.Tanh())
        >>> ShallowNetworkGeometry.from_module(net).weights.shape
        torch.Size([5, 2])
        """
        if isinstance(module, ShallowNet):
            linear, act = module.hidden, module.activation
        elif (isinstance(module, nn.Sequential) and len(module) == 2
              and isinstance(module[0], nn.Linear)):
            linear, act = module
        else:
            raise ValueError("module must be a ShallowNet or nn.Sequential(nn.Linear, activation); "
                             f"got {type(module).__name__}.")
        return cls(linear.weight.detach().cpu(), linear.bias.detach().cpu(),
                   _activation_name(act), scale)

    @property
    def scale_value(self):
        """The numeric ``s``."""
        return scale_value(self.scale, self.weights.shape[0])

    def _derivatives(self, X):
        X = check_tensor(X, dtype=torch.float64, min_samples=1)
        if X.ndim != 2 or X.shape[1] != self.weights.shape[1]:
            raise ValueError(f"X must have shape (N, {self.weights.shape[1]}); "
                             f"got {tuple(X.shape)}.")
        z = X @ self.weights.T + self.biases
        one = torch.ones_like(z)
        d1 = lambda t: jvp(self._sigma, (t,), (one,))[1]  # noqa: E731
        _, d2 = jvp(d1, (z,), (one,))
        return d1(z), d2

    def jacobian(self, X):
        """``J = diag(σ'(z)) W`` of the unscaled map, shape (N, n, d)."""
        d1, _ = self._derivatives(X)
        return d1[:, :, None] * self.weights

    def metric(self, X):
        """``g = s Σ_j σ'_j² w_j w_jᵀ``, shape (N, d, d)."""
        d1, _ = self._derivatives(X)
        return self.scale_value * torch.einsum("nj,ja,jb->nab", d1**2, self.weights, self.weights)

    def log_volume(self, X, rank=None, rtol=None, method="svd"):
        """Log volume element (natural log), shape (N,); see :meth:`PullbackMetric.log_volume`."""
        if check_choice(method, "method", ("svd", "cholesky")) == "cholesky":
            L = torch.linalg.cholesky(self.metric(X))
            return torch.log(torch.diagonal(L, dim1=1, dim2=2)).sum(1)
        J = self.jacobian(X)
        logv, r = log_volume_from_singular_values(
            torch.linalg.svdvals(J), rank, rtol, max(J.shape[1:]) * torch.finfo(J.dtype).eps)
        return logv + 0.5 * math.log(self.scale_value) * r.to(logv.dtype)

    def det_cauchy_binet(self, X):
        """``det g`` by the Cauchy–Binet sum over ``d``-subsets of units (d ≤ 4, n ≤ 30).

        A brute-force reference for tests: ``s^d Σ_S (Π_{j∈S} σ'_j²) det(W_S)²``.
        """
        import itertools

        n, d = self.weights.shape
        if d > 4 or n > 30:
            raise ValueError(f"det_cauchy_binet needs d <= 4 and n <= 30; got d={d}, n={n}.")
        d1, _ = self._derivatives(X)
        subsets = torch.tensor(list(itertools.combinations(range(n), d)))
        minors = torch.linalg.det(self.weights[subsets]) ** 2
        return self.scale_value**d * ((d1[:, subsets] ** 2).prod(-1) * minors).sum(1)

    def ricci_scalar(self, X):
        """Ricci scalar by the q-formula, ``O(n²d + nd² + d³)`` per point, shape (N,)."""
        d1, d2 = self._derivatives(X)
        s = self.scale_value
        g = s * torch.einsum("nj,ja,jb->nab", d1**2, self.weights, self.weights)
        q = torch.einsum("ia,nab,jb->nij", self.weights, _inverse(g), self.weights)
        c = d1 * d2
        qd = torch.diagonal(q, dim1=1, dim2=2)
        inner = qd[:, :, None] * qd[:, None, :] * q - q**3
        return -s**2 * torch.einsum("ni,nj,nij->n", c, c, inner)

    def ricci_scalar_2d_minors(self, X):
        """Ricci scalar for ``d = 2`` by the pairwise-minors formula (paper D.15), shape (N,)."""
        if self.weights.shape[1] != 2:
            raise ValueError("ricci_scalar_2d_minors needs d = 2 inputs.")
        d1, d2 = self._derivatives(X)
        W = self.weights
        m = W[:, None, 0] * W[None, :, 1] - W[:, None, 1] * W[None, :, 0]
        s = self.scale_value
        det = torch.linalg.det(self.metric(X))
        c = d1 * d2
        total = torch.einsum("ni,nj,nk,ij,ik,jk->n", c, c, d1**2, m**2, m, m)
        return -s**3 * total / det**2

