"""Estimator-check instances of the manifold family."""

import torch

from geolearn.manifold import CIDM, LocalPCAManifold, OnManifoldPGD, SECVectorFields


class MeanLogits(torch.nn.Module):
    """Three logits affine in the mean feature, so any check dataset's width fits."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor([-1.0, 0.0, 1.0]))
        self.bias = torch.nn.Parameter(torch.tensor([0.5, 0.0, -0.5]))

    def forward(self, x):
        return x.flatten(1).mean(1, keepdim=True) * self.weight + self.bias

    def __repr__(self):
        return "MeanLogits()"


ESTIMATORS = [
    CIDM(n_eigenpairs=5, k_bandwidth=3),
    SECVectorFields(cidm=CIDM(n_eigenpairs=8, k_bandwidth=3), n_frame=3, n_products=8),
    OnManifoldPGD(MeanLogits(), cidm_params={"n_eigenpairs": 5, "n_components": 3},
                  tangent="jacobian", intrinsic_dim=1, n_steps=5),
    LocalPCAManifold(1, n_neighbors=2),
]
