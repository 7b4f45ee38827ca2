"""The pessimistic construction of Theorem 2: the bound without NNR is false.

"Manifold-driven decomposition for adversarial robustness", Theorem 2: on the
segment ``M = [0, 1] x {0}`` the score ``f_n`` has no standard, no in-manifold
and only ``1/n`` normal risk, yet every sample has an adversarial point.
"""

import math
from numbers import Integral

import numpy as np
import torch
from sklearn.utils import Bunch
from torch import nn

from .._utils import check_scalar_param
from ..manifold import AffineManifold


class PessimisticScore(nn.Module):
    """Theorem 2's ``f_n`` as logits ``(0, kappa (g(x) - |t|))`` of points ``(x, t)``.

    ``g = 1`` on the intervals ``A_i``, ``eps / 2`` on the ``B_i`` (``n`` of
    length ``1 / n^2``), linear ramps of width ``ramp`` inside the ``A``'s;
    ``kappa = 100 / eps``.

    Parameters
    ----------
    n : int
    epsilon : float
    ramp : float

    Examples
    --------
    >>> import torch
    >>> from geolearn.adversarial._pessimistic import PessimisticScore
    >>> f = PessimisticScore(10, 0.2, 1e-4)
    >>> f(torch.tensor([[0.0, 0.5], [0.0, 0.0]])).argmax(1).tolist()
    [1, 1]
    """

    def __init__(self, n, epsilon, ramp):
        super().__init__()
        l1, l2 = (n - 1) / (n * (n + 1)), 1 / n ** 2
        starts = torch.arange(1, n + 1, dtype=torch.float64) * l1 + torch.arange(
            n, dtype=torch.float64) * l2
        self.register_buffer("b_lo", starts.float())
        self.register_buffer("b_hi", (starts + l2).float())
        self.epsilon, self.ramp, self.kappa = float(epsilon), float(ramp), 100.0 / epsilon

    def g(self, x):
        """The boundary height ``g(x)`` (1 on the A intervals and outside [0, 1])."""
        dist = torch.maximum(self.b_lo - x[:, None], x[:, None] - self.b_hi).clamp_min(0).amin(1)
        return self.epsilon / 2 + (1 - self.epsilon / 2) * (dist / self.ramp).clamp(max=1)

    def forward(self, X):
        z = self.kappa * (self.g(X[:, 0]) - X[:, 1].abs())
        return torch.stack([torch.zeros_like(z), z], dim=1)


def make_pessimistic_example(n=10, epsilon=0.2, ramp=1e-4, n_samples=2000):
    """Theorem 2's construction: a score with zero standard and in-manifold risk, ``R_adv = 1``.

    ``M = [0, 1] x {0}`` partitioned into ``A_0 B_1 A_1 ... B_n A_n`` with
    ``|A_i| = (n - 1) / (n (n + 1))`` and ``|B_i| = 1 / n^2``; the score is
    class 1 iff ``|t| < g(x)``, with ``g = 1`` on the A's and ``eps / 2`` on
    the B's (smoothed by ramps of width ``ramp``). Then ``R_std = 0``,
    ``R_in(2 eps) = 0``, ``R_nor(eps) = 1 / n``, ``R_adv(eps) = 1`` and
    ``NNR = 1 - 1 / n``, valid when ``eps < 1/2`` and ``n > 1 / (sqrt(3) eps)``.

    Parameters
    ----------
    n : int, default=10
    epsilon : float, default=0.2
    ramp : float, default=1e-4
        Width of the linear ramps (``0 < ramp < |A_i| / 2``).
    n_samples : int, default=2000
        Evaluation points: the midpoints of ``n_samples`` equal cells of [0, 1].

    Returns
    -------
    model : torch.nn.Module
        Logits ``(n, 2)`` of points ``(x, t)``.
    manifold : AffineManifold
        The segment.
    X : ndarray of shape (n_samples, 2), float32
    y : ndarray of shape (n_samples,), int64
        All 1.
    exact : Bunch
        ``std, in_2eps, normal, adv, nnr``: the theorem's values.

    Examples
    --------
    >>> from geolearn.adversarial import make_pessimistic_example
    >>> model, manifold, X, y, exact = make_pessimistic_example()
    >>> exact["normal"], exact["adv"], X.shape
    (0.1, 1.0, (2000, 2))
    """
    if not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be an integer >= 1; got {n!r}.")
    check_scalar_param(epsilon, "epsilon", low=0, closed="neither")
    if not epsilon < 0.5:
        raise ValueError(f"epsilon must be < 1/2 for Theorem 2; got {epsilon!r}.")
    if not n > 1 / (math.sqrt(3) * epsilon):
        raise ValueError(f"n must exceed 1 / (sqrt(3) epsilon) = {1 / (math.sqrt(3) * epsilon):.3g}"
                         f" for R_adv = 1 (Theorem 2); got n={n}.")
    l1 = (n - 1) / (n * (n + 1))
    check_scalar_param(ramp, "ramp", low=0, closed="neither")
    if not ramp < l1 / 2:
        raise ValueError(f"ramp must be < |A_i| / 2 = {l1 / 2:.3g}; got {ramp!r}.")
    if not isinstance(n_samples, Integral) or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1; got {n_samples!r}.")
    x = (np.arange(n_samples) + 0.5) / n_samples
    X = np.column_stack([x, np.zeros(n_samples)]).astype(np.float32)
    manifold = AffineManifold([[1.0], [0.0]], bounds=[(0.0, 1.0)])
    exact = Bunch(std=0.0, in_2eps=0.0, normal=1 / n, adv=1.0, nnr=1 - 1 / n)
    return (PessimisticScore(n, epsilon, ramp), manifold, X, np.ones(n_samples, np.int64),
            exact)
