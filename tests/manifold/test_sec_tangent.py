"""Unit tests of SECVectorFields and the tangent-space tools."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from geolearn.datasets import make_circle_points, make_torus_points
from geolearn.manifold import CIDM, SECVectorFields, local_pca_tangent_basis
from geolearn.manifold._sec import sec_matrices
from geolearn.manifold._tangent import orthonormal_basis


@pytest.fixture(scope="module")
def circle():
    return make_circle_points(300, grid=True, return_params=True)


@pytest.fixture(scope="module")
def sec(circle):
    return SECVectorFields(CIDM(n_eigenpairs=30, random_state=0), n_frame=8).fit(circle[0])


def test_circle_one_form_spectrum(sec):
    """1-forms of the circle: d theta (energy 0), then cos/sin k theta d theta pairs, k^2."""
    xi1 = sec.cidm_.laplacian_eigenvalues_[1]
    np.testing.assert_allclose(sec.energies_[:7] / xi1, [0, 1, 1, 4, 4, 9, 9], atol=0.02)
    M = 8 * 7
    assert sec.gram_.shape == sec.energy_.shape == (M, M)
    assert sec.structure_constants_.shape == (8, 8, 30)
    # modes are G-orthonormal
    a = sec.frame_coefficients_
    np.testing.assert_allclose(a.T @ sec.gram_ @ a, np.eye(a.shape[1]), atol=1e-8)
    assert sec.operator_matrices_.shape == (a.shape[1], 8, 8)
    np.testing.assert_allclose(sec.operator_matrices_[:, :, 0], 0, atol=1e-12)


def test_structure_constants_and_gram_closed_forms(sec):
    c = sec.structure_constants_
    # c_{i0s} = <phi_i phi_s> = delta_is
    np.testing.assert_allclose(c[:, 0, :8], np.eye(8), atol=1e-10)
    # G_{0j,0l} = <d phi_j, d phi_l> = xi_j delta_jl
    G, _ = sec_matrices(c, sec.cidm_.laplacian_eigenvalues_[:30])
    xi = sec.cidm_.laplacian_eigenvalues_[:8]
    np.testing.assert_allclose(G[0, :, 0, :], np.diag(xi), atol=1e-8 * xi.max())


def test_principal_field_is_the_rotation(sec, circle):
    X, t = circle
    V = sec.vector_fields(X[::10], 1)[:, 0]
    T = np.c_[-np.sin(t[::10]), np.cos(t[::10])]
    cos = np.abs(np.sum(V * T, 1)) / np.linalg.norm(V, axis=1)
    assert cos.min() > 0.999
    B = sec.tangent_basis(X[::10])
    assert B.shape == (30, 2, 1)
    assert np.abs(np.sum(B[:, :, 0] * T, 1)).min() > 0.999


def test_from_cidm_matches_fit(sec, circle):
    again = SECVectorFields.from_cidm(sec.cidm_, n_frame=8)
    np.testing.assert_allclose(again.energies_, sec.energies_)
    assert again.cidm_ is sec.cidm_
    refit = clone(sec).fit(circle[0])
    np.testing.assert_allclose(refit.energies_, sec.energies_, atol=1e-8)


def test_sec_bad_inputs(circle):
    X = circle[0]
    cidm = CIDM(n_eigenpairs=10, random_state=0).fit(X)
    with pytest.raises(ValueError, match="n_products >= 2 \\* n_frame"):
        SECVectorFields.from_cidm(cidm, n_frame=6)
    with pytest.raises(ValueError, match="n_products=20 exceeds"):
        SECVectorFields.from_cidm(cidm, n_frame=3, n_products=20)
    with pytest.raises(ValueError, match="n_frame"):
        SECVectorFields(n_frame=1).fit(X)
    with pytest.raises(ValueError, match="order"):
        SECVectorFields(order="up").fit(X)
    torus = CIDM(n_eigenpairs=12, random_state=0).fit(make_torus_points(400, R=1, r=1,
                                                                        grid=True))
    with pytest.warns(UserWarning, match="2\\^d n_frame"):
        SECVectorFields.from_cidm(torus, n_frame=5, n_products=10)
    sec = SECVectorFields.from_cidm(cidm, n_frame=3)
    with pytest.raises(ValueError, match="n_fields"):
        sec.vector_fields(X[:2], 0)
    with pytest.raises(ValueError, match="dim"):
        sec.tangent_basis(X[:2], dim=3)
    with pytest.raises(NotFittedError):
        SECVectorFields().tangent_basis(X[:2])


def test_orthonormal_basis_rank():
    rng = np.random.default_rng(0)
    V = rng.standard_normal((4, 5, 3))
    V[0, :, 1] = 2 * V[0, :, 0]  # rank 2
    V[1] = 0  # rank 0
    B, rank = orthonormal_basis(V, 3)
    assert rank.tolist() == [2, 0, 3, 3]
    np.testing.assert_allclose(np.einsum("mni,mnj->mij", B[2:], B[2:]), np.broadcast_to(
        np.eye(3), (2, 3, 3)), atol=1e-12)
    assert np.all(B[1] == 0) and np.all(B[0, :, 2] == 0)
    # the span is kept
    P = B[3] @ B[3].T
    np.testing.assert_allclose(P @ V[3], V[3], atol=1e-12)


def test_local_pca_on_a_plane():
    rng = np.random.default_rng(0)
    plane = np.c_[rng.standard_normal((200, 2)), np.zeros(200)] @ np.linalg.qr(
        rng.standard_normal((3, 3)))[0].T
    B = local_pca_tangent_basis(plane, plane[:5], dim=2, n_neighbors=10)
    # B spans the plane: the normal is orthogonal to it
    normal = np.cross(plane[1] - plane[0], plane[2] - plane[0])
    assert np.abs(np.einsum("mnd,n->md", B, normal)).max() < 1e-10
    with pytest.raises(ValueError, match="n_neighbors"):
        local_pca_tangent_basis(plane, plane[:5], dim=2, n_neighbors=2)
    with pytest.raises(ValueError, match="dim"):
        local_pca_tangent_basis(plane, plane[:5], dim=4)
    with pytest.raises(ValueError, match="features"):
        local_pca_tangent_basis(plane, plane[:5, :2], dim=1)
