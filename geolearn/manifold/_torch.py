"""The Nyström extension and projection as a differentiable torch module."""

import torch
from torch import nn

from .._utils import to_tensor


class NystromModule(nn.Module):
    """Frozen Nyström projection (or embedding) of a fitted CIDM; built by ``CIDM.to_torch``.

    Neighbour ranks are found with ``topk`` (piecewise constant, no gradient);
    distances are gathered so autograd reproduces the analytic gradient.
    """

    def __init__(self, cidm, output):
        super().__init__()
        K = cidm.n_components_
        self.output = output
        self.k_bandwidth = cidm.k_bandwidth_
        self.n_neighbors = cidm.n_neighbors_
        self.statistic = cidm.bandwidth_statistic
        self.variable = cidm.bandwidth == "cidm"
        self.epsilon = cidm.epsilon_
        for name, value in [("X_fit", cidm.X_fit_), ("rho", cidm.rho_),
                            ("phi", cidm.eigenvectors_[:, :K + 1]),
                            ("lam", cidm.eigenvalues_[:K + 1]),
                            ("coef", cidm.coefficients_[:K + 1]), ("scale", cidm._scale())]:
            self.register_buffer(name, to_tensor(value, dtype=torch.float64))
        log_q = (torch.log(to_tensor(cidm._q_alpha, dtype=torch.float64))
                 if cidm._q_alpha is not None
                 else torch.zeros(cidm.n_samples_fit_, dtype=torch.float64))
        self.register_buffer("log_q", log_q)
        self.requires_grad_(False)
        self.eval()

    def forward(self, x):
        x = x.reshape(len(x), -1)
        d2 = ((x * x).sum(1, keepdim=True) + (self.X_fit * self.X_fit).sum(1)[None]
              - 2 * x @ self.X_fit.T).clamp_min(0)
        k_b = self.k_bandwidth
        n_rank = max(k_b, self.n_neighbors or 0)
        with torch.no_grad():
            idx = torch.topk(d2, n_rank, dim=1, largest=False).indices
        if self.variable:
            ranked = torch.gather(d2, 1, idx[:, :k_b]).clamp_min(1e-300).sqrt()
            rho = ranked[:, 1:].mean(1) if self.statistic == "mean" else ranked[:, -1]
        else:
            rho = torch.ones(len(x), dtype=x.dtype, device=x.device)
        if self.n_neighbors is None:
            a = -d2 / (rho[:, None] * self.rho[None] * 2 * self.epsilon) - self.log_q[None]
            p = torch.softmax(a, dim=1)
            Phi = p @ self.phi
        else:
            cols = idx[:, :self.n_neighbors]
            a = (-torch.gather(d2, 1, cols) / (rho[:, None] * self.rho[cols] * 2 * self.epsilon)
                 - self.log_q[cols])
            p = torch.softmax(a, dim=1)
            Phi = torch.einsum("bk,bkl->bl", p, self.phi[cols])
        Phi = Phi / self.lam
        if self.output == "embedding":
            return Phi[:, 1:] * self.scale
        return Phi @ self.coef
