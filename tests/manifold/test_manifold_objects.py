"""Manifold objects: closed-form projections and tangents, local PCA, decoder Jacobians."""

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from geolearn.exceptions import GeolearnWarning
from geolearn.manifold import AffineManifold, LatentManifold, LocalPCAManifold, SphereManifold


def _orthonormal(T):
    d = T.shape[2]
    return np.abs(np.einsum("nij,nik->njk", T, T) - np.eye(d)).max()


@given(st.integers(2, 5), st.floats(0.1, 10), st.integers(0, 2**31 - 1))
@settings(max_examples=20)
def test_sphere_projection_and_tangent_closed_form(D, radius, seed):
    """pi(x) = c + r (x - c)/||x - c||; the tangent space is the orthogonal complement of x - c."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=D)
    S = SphereManifold(radius, c, ambient_dim=D)
    X = c + rng.normal(size=(7, D)) * 3
    P = S.project(X)
    V = X - c
    np.testing.assert_allclose(P, c + radius * V / np.linalg.norm(V, axis=1, keepdims=True))
    np.testing.assert_allclose(np.linalg.norm(P - c, axis=1), radius)
    T = S.tangent_basis(X)
    assert T.shape == (7, D, D - 1) and _orthonormal(T) < 1e-10
    np.testing.assert_allclose(np.einsum("nij,ni->nj", T, V), 0, atol=1e-10)


def test_sphere_chart_round_trip_and_sampling():
    for D in (2, 3):
        S = SphereManifold(2.0, ambient_dim=D)
        X = S.sample(50, random_state=0)
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 2.0)
        np.testing.assert_allclose(S.from_chart(S.chart(X)), X, atol=1e-12)
        assert len(S.chart_bounds) == D - 1
    np.testing.assert_allclose(SphereManifold().chart([[0.0, -1.0]]), [[1.5 * np.pi]])
    with pytest.raises(ValueError, match="ambient_dim 2 or 3"):
        SphereManifold(ambient_dim=4).chart(np.ones((1, 4)))


def test_affine_projection_clamps_to_bounds_and_warns_for_non_orthonormal_basis():
    A = AffineManifold([[1.0], [0.0]], bounds=[(0, 1)])
    np.testing.assert_allclose(A.project([[2.0, 0.5], [0.3, -4.0], [-1.0, 0.0]]),
                               [[1.0, 0.0], [0.3, 0.0], [0.0, 0.0]])
    assert A.reach == np.inf and A.intrinsic_dim == 1 and A.ambient_dim == 2
    with pytest.warns(GeolearnWarning, match="not orthonormal"):
        B = AffineManifold([[2.0, 1.0], [0.0, 1.0], [0.0, 0.0]], offset=[0, 0, 1.0])
        T = B.tangent_basis(np.zeros((3, 3)))
    # the span is the plane x3 = 1: orthonormal basis of it, projection drops x3
    assert _orthonormal(T) < 1e-12
    np.testing.assert_allclose(B.project([[1.0, 2.0, 5.0]]), [[1.0, 2.0, 1.0]])


@given(st.integers(0, 2**31 - 1))
@settings(max_examples=15)
def test_affine_projection_is_orthogonal(seed):
    """x - pi(x) is orthogonal to the subspace, and pi is idempotent."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(5, 2)))[0]
    A = AffineManifold(Q, offset=rng.normal(size=5))
    X = rng.normal(size=(6, 5))
    P = A.project(X)
    np.testing.assert_allclose((X - P) @ Q, 0, atol=1e-10)
    np.testing.assert_allclose(A.project(P), P, atol=1e-12)


def test_local_pca_matches_brute_force():
    """Tangent = top right singular vectors of the centred k nearest points (by brute force)."""
    rng = np.random.default_rng(0)
    X_ref = rng.normal(size=(60, 3)) * [3.0, 1.0, 0.05]
    M = LocalPCAManifold(2, n_neighbors=12).fit(X_ref)
    Q = rng.normal(size=(4, 3))
    T, P = M.tangent_basis(Q), M.project(Q)
    for q, t, p in zip(Q, T, P):
        nb = X_ref[np.argsort(np.linalg.norm(X_ref - q, axis=1))[:12]]
        m = nb.mean(0)
        V = np.linalg.svd(nb - m)[2][:2].T
        np.testing.assert_allclose(t @ t.T, V @ V.T, atol=1e-10)
        np.testing.assert_allclose(p, m + V @ V.T @ (q - m), atol=1e-10)


def test_local_pca_validation():
    with pytest.raises(NotFittedError):
        LocalPCAManifold(1).project(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="n_neighbors"):
        LocalPCAManifold(2, n_neighbors=2).fit(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="at least n_neighbors=20"):
        LocalPCAManifold(1).fit(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="2 features but the manifold.s ambient_dim is 3"):
        LocalPCAManifold(1, n_neighbors=3).fit(np.random.rand(5, 3)).project(np.zeros((1, 2)))


def _autoencoder():
    torch.manual_seed(0)
    enc = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    dec = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 4))
    return enc, dec


def test_latent_tangent_spans_the_finite_difference_decoder_jacobian():
    enc, dec = _autoencoder()
    M = LatentManifold(enc, dec)
    assert (M.ambient_dim, M.intrinsic_dim) == (4, 2)
    X = np.random.default_rng(0).normal(size=(5, 4))
    T = M.tangent_basis(X)
    assert _orthonormal(T) < 1e-5
    with torch.no_grad():
        Z = enc(torch.as_tensor(X, dtype=torch.float64).float()).double()
        h = 1e-3
        dec64 = dec.double()
        J = torch.stack([(dec64(Z + h * e) - dec64(Z - h * e)) / (2 * h)
                         for e in torch.eye(2, dtype=torch.float64)], -1).numpy()
        dec.float()
    # the decoder Jacobian's columns lie in span(T): P_T J = J
    PJ = np.einsum("nij,nkj,nkl->nil", T, T, J)
    np.testing.assert_allclose(PJ, J, atol=1e-4)
    np.testing.assert_allclose(M.decoder_jacobian(X), J, atol=1e-4)
    with torch.no_grad():
        np.testing.assert_allclose(M.project(X), dec(enc(torch.as_tensor(X).float())).numpy(),
                                   atol=1e-6)


def test_latent_manifold_restores_module_state_and_reads_fitted_nets():
    enc, dec = _autoencoder()
    enc.train()
    LatentManifold(enc, dec).tangent_basis(np.zeros((2, 4)))
    assert enc.training and all(p.requires_grad for p in enc.parameters())

    class AE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = enc, dec

    class Net:  # a fitted net exposing module_
        module_ = AE()

        def fit(self):
            pass

    np.testing.assert_allclose(LatentManifold(Net()).project(np.ones((1, 4))),
                               LatentManifold(enc, dec).project(np.ones((1, 4))))
    with pytest.raises(TypeError, match="encoder"):
        LatentManifold(enc).project(np.ones((1, 4)))


@pytest.mark.parametrize("make", [
    lambda: SphereManifold(2.0, ambient_dim=3),
    lambda: AffineManifold(np.eye(3)[:, :2], bounds=[(-1, 1), (0, 2)]),
    lambda: LocalPCAManifold(1, n_neighbors=3).fit(np.random.default_rng(0).normal(size=(9, 3))),
    lambda: LatentManifold(torch.nn.Linear(3, 1), torch.nn.Linear(1, 3)),
])
def test_clone_and_pickle_keep_the_manifold(make):
    M = make()
    X = np.random.default_rng(1).normal(size=(4, 3))
    for other in (pickle.loads(pickle.dumps(M)), clone(M).fit(M.X_ref_)
                  if hasattr(M, "X_ref_") else clone(M)):
        np.testing.assert_allclose(other.project(X), M.project(X))
        np.testing.assert_allclose(np.abs(other.tangent_basis(X)), np.abs(M.tangent_basis(X)))


@pytest.mark.parametrize("bad, match", [
    (dict(radius=-1.0), "radius"), (dict(ambient_dim=1), "ambient_dim"),
    (dict(center=[0.0]), "center"),
])
def test_sphere_rejects_bad_parameters(bad, match):
    with pytest.raises(ValueError, match=match):
        SphereManifold(**bad).project(np.zeros((1, 2)))


@pytest.mark.parametrize("kw, match", [
    (dict(basis=[[1.0], [0.0], [0.0]], bounds=[(1, 0)]), "bounds"),
    (dict(basis=[[1.0, 2.0], [1.0, 2.0]]), "independent"),
    (dict(basis=[[1.0], [0.0]], offset=[np.nan, 0.0]), "offset"),
])
def test_affine_rejects_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        AffineManifold(**kw).project(np.zeros((1, 2 if len(kw["basis"]) == 2 else 3)))


def test_points_must_match_the_ambient_dimension_and_be_finite():
    with pytest.raises(ValueError, match="ambient_dim"):
        SphereManifold().project(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="NaN|infinity"):
        SphereManifold().project(np.array([[np.nan, 0.0]]))
