"""Manifold learning: CIDM, Nyström extension and projection, tangent spaces, on-manifold PGD.

:class:`CIDM` learns a data manifold with the conformally invariant diffusion
map; its Nyström extension gives ``transform`` for new points and the
Nyström projection onto the manifold. :class:`SECVectorFields` turns the CIDM
eigenfunctions into tangent vector fields (spectral exterior calculus).
:class:`OnManifoldPGD` builds on both (a one-way dependency inside this
family): it attacks a classifier along the tangent space of each class
manifold and projects back onto it.

:class:`SphereManifold`, :class:`AffineManifold`, :class:`LocalPCAManifold` and
:class:`LatentManifold` describe known, estimated and autoencoder manifolds through
one interface (projection, tangent bases, charts), which the manifold decomposition
of adversarial risk in :mod:`geolearn.adversarial` reads.

Reference: Mahler, Berry et al., "On-manifold projected gradient descent",
Frontiers in Computer Science (2024).
"""

from ._cidm import CIDM, CIDMManifold, fixed_bandwidth_diffusion_map
from ._objects import AffineManifold, LatentManifold, LocalPCAManifold, SphereManifold
from ._pgd import OnManifoldPGD
from ._sec import SECVectorFields
from ._tangent import local_pca_tangent_basis

__all__ = [
    "AffineManifold",
    "CIDM",
    "CIDMManifold",
    "LatentManifold",
    "LocalPCAManifold",
    "OnManifoldPGD",
    "SECVectorFields",
    "SphereManifold",
    "fixed_bandwidth_diffusion_map",
    "local_pca_tangent_basis",
]
