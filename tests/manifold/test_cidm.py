"""Unit tests of CIDM: spectra, Nyström extension and projection, gradients, validation."""

import math
import pickle
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from geolearn.datasets import make_circle_points, make_torus_points
from geolearn.manifold import CIDM, fixed_bandwidth_diffusion_map
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

CIRCLE_RATIOS = np.array([1, 1, 4, 4, 9, 9])


@pytest.fixture(scope="module")
def noisy_circle():
    return make_circle_points(300, noise=0.05, random_state=0)


@pytest.fixture(scope="module")
def fitted(noisy_circle):
    return CIDM(n_eigenpairs=10, random_state=0).fit(noisy_circle)


def _ratios(cidm, n):
    xi = cidm.laplacian_eigenvalues_
    return xi[1:n + 1] / xi[1]


@pytest.mark.parametrize("n_neighbors", [None, 30])
def test_circle_spectrum_and_embedding(n_neighbors):
    X, t = make_circle_points(300, grid=True, return_params=True)
    cidm = CIDM(n_eigenpairs=7, n_neighbors=n_neighbors, random_state=0).fit(X)
    assert cidm.kernel_mode_ == ("dense" if n_neighbors is None else "knn")
    np.testing.assert_allclose(_ratios(cidm, 6), CIRCLE_RATIOS, rtol=1e-3)
    assert abs(cidm.dimension_ - 1) < 0.05 and cidm.intrinsic_dim_ == 1
    # phi_1, phi_2 span cos t, sin t
    Z = cidm.eigenvectors_[:, 1:3]
    target = np.c_[np.cos(t), np.sin(t)]
    coef, *_ = np.linalg.lstsq(Z, target, rcond=None)
    assert np.abs(Z @ coef - target).max() < 1e-3


def test_eigenvectors_normalisation(fitted):
    phi, pi = fitted.eigenvectors_, fitted.stationary_
    np.testing.assert_allclose(phi.T @ (pi[:, None] * phi), np.eye(10), atol=1e-9)
    assert np.all(phi[:, 0] == 1)
    assert np.all(np.diff(fitted.eigenvalues_) <= 0) and fitted.eigenvalues_[0] == pytest.approx(1)
    # signs: largest-magnitude entry of each eigenvector is positive
    assert np.all(phi[np.argmax(np.abs(phi), axis=0), np.arange(10)] > 0)
    np.testing.assert_allclose(fitted.coefficients_,
                               (phi * pi[:, None]).T @ fitted.X_fit_, atol=1e-12)


def test_dense_nystrom_reproduces_training_values(fitted):
    Phi, _ = fitted._nystrom(fitted.X_fit_, 10)
    assert np.abs(Phi - fitted.eigenvectors_).max() <= 1e-10
    np.testing.assert_allclose(fitted.transform(fitted.X_fit_),
                               fitted.eigenvectors_[:, 1:], atol=1e-10)


def test_fit_transform_matches_transform_dense(noisy_circle):
    cidm = CIDM(n_eigenpairs=6, diffusion_time=2.0, random_state=0)
    Z = cidm.fit_transform(noisy_circle)
    np.testing.assert_allclose(Z, cidm.transform(noisy_circle), atol=1e-10)
    np.testing.assert_allclose(Z, cidm.eigenvectors_[:, 1:] * cidm.eigenvalues_[1:] ** 2)
    np.testing.assert_array_equal(cidm.embedding_, Z)  # as sklearn's manifold learners
    assert not hasattr(CIDM(), "embedding_")


def test_knn_nystrom_close_to_training_values():
    X = make_torus_points(900, R=1, r=1, random_state=0)
    cidm = CIDM(n_eigenpairs=8, n_neighbors=47, random_state=0).fit(X)
    Phi, _ = cidm._nystrom(cidm.X_fit_, 8)
    err = np.abs(Phi - cidm.eigenvectors_).max() / np.abs(cidm.eigenvectors_).max()
    assert 0 < err <= 1e-2  # one-sided Nyström row vs symmetrised training row


def test_extend_reproduces_with_all_eigenpairs():
    X = make_circle_points(60, noise=0.05, random_state=1)
    cidm = CIDM(n_eigenpairs=60, eigen_solver="dense").fit(X)
    F = np.random.default_rng(0).standard_normal((60, 2))
    np.testing.assert_allclose(cidm.extend(F, X), F, atol=1e-8)
    np.testing.assert_allclose(cidm.extend(F[:, 0], X), F[:, 0], atol=1e-8)


def test_inverse_transform_is_projection(fitted, noisy_circle):
    Q = 1.2 * noisy_circle[:7]
    cidm = CIDM(n_eigenpairs=10, n_components=5, diffusion_time=1.0, random_state=0)
    cidm.fit(noisy_circle)
    np.testing.assert_allclose(cidm.inverse_transform(cidm.transform(Q)),
                               cidm.nystrom_project(Q), atol=1e-12)
    np.testing.assert_allclose(cidm.nystrom_project(Q, n_iter=2),
                               cidm.project(cidm.project(Q)), atol=1e-12)
    assert cidm.score(Q) == pytest.approx(-np.mean(np.sum((Q - cidm.project(Q)) ** 2, 1)))
    with pytest.raises(ValueError, match="columns"):
        cidm.inverse_transform(np.zeros((2, 3)))


def _central_differences(f, X, h=1e-6):
    cols = [(f(X + h * e) - f(X - h * e)) / (2 * h) for e in np.eye(X.shape[1])]
    return np.stack(cols, axis=-1)


@pytest.mark.parametrize("params", [
    {}, {"bandwidth_statistic": "kth"}, {"n_neighbors": 40}, {"bandwidth": "fixed"},
])
def test_gradient_matches_finite_differences_and_autograd(noisy_circle, params):
    cidm = CIDM(n_eigenpairs=8, random_state=0, **params).fit(noisy_circle)
    Q = 1.3 * noisy_circle[:8] + 0.01
    J = cidm.gradient(Q)
    fd = _central_differences(cidm.transform, Q)
    assert np.abs(J - fd).max() <= 1e-6 * np.abs(fd).max()
    Jp = cidm.projection_jacobian(Q)
    fdp = _central_differences(cidm.nystrom_project, Q)
    assert np.abs(Jp - fdp).max() <= 1e-6 * np.abs(fdp).max()
    module = cidm.to_torch("embedding", dtype=torch.float64, device="cpu")
    Jt = torch.autograd.functional.jacobian(module, torch.tensor(Q), vectorize=True).numpy()
    np.testing.assert_allclose(np.einsum("aiaj->aij", Jt), J, atol=1e-8)
    proj = cidm.to_torch(dtype=torch.float64, device="cpu")
    np.testing.assert_allclose(proj(torch.tensor(Q)).numpy(), cidm.project(Q), atol=1e-10)
    assert not any(p.requires_grad for p in proj.parameters())


def test_far_points_stay_finite(fitted):
    far = 1e6 * np.random.default_rng(0).standard_normal((5, 2))
    assert np.all(np.isfinite(fitted.transform(far)))
    assert np.all(np.isfinite(fitted.nystrom_project(far)))
    assert np.all(np.isfinite(fitted.gradient(far)))
    out = fitted.to_torch(device="cpu")(torch.tensor(far, dtype=torch.float32))
    assert torch.isfinite(out).all()


@settings(max_examples=10)
@given(seed=st.integers(0, 2**16), scale=st.floats(0.1, 10.0),
       shift=st.floats(-5.0, 5.0))
def test_similarity_invariance(noisy_circle, seed, scale, shift):
    """Phi is invariant and the projection equivariant under x -> s Q x + c."""
    Q = ortho_group.rvs(2, random_state=seed)
    c = np.array([shift, -shift / 2])
    X = noisy_circle[:120]
    query = 1.1 * X[:10]
    ref = CIDM(n_eigenpairs=6, eigen_solver="dense").fit(X)
    moved = CIDM(n_eigenpairs=6, eigen_solver="dense").fit(scale * X @ Q.T + c)
    np.testing.assert_allclose(moved.eigenvalues_, ref.eigenvalues_, atol=1e-10)
    q = scale * query @ Q.T + c
    np.testing.assert_allclose(np.abs(moved.transform(q)), np.abs(ref.transform(query)),
                               atol=1e-8)
    np.testing.assert_allclose(moved.nystrom_project(q),
                               scale * ref.nystrom_project(query) @ Q.T + c,
                               atol=1e-8 * max(1.0, scale))
    perm = np.random.default_rng(seed).permutation(len(X))
    permuted = CIDM(n_eigenpairs=6, eigen_solver="dense").fit(X[perm])
    np.testing.assert_allclose(permuted.nystrom_project(query), ref.nystrom_project(query),
                               atol=1e-8)


def test_auto_sizes_and_modes():
    X = make_circle_points(100, noise=0.01, random_state=0)
    cidm = CIDM(n_eigenpairs=5).fit(X)
    assert cidm.k_bandwidth_ == math.ceil(math.log(100))
    assert cidm.kernel_mode_ == "dense" and cidm.n_neighbors_ is None
    assert cidm.n_components_ == 4 and cidm.transform(X).shape == (100, 4)
    assert list(cidm.get_feature_names_out()) == ["cidm1", "cidm2", "cidm3", "cidm4"]
    assert cidm.sampling_density_.shape == (100,) and np.all(cidm.sampling_density_ > 0)
    dm = fixed_bandwidth_diffusion_map(n_eigenpairs=5).fit(X)
    assert dm.epsilon == "bgh" and dm.alpha == 1.0 and np.all(dm.rho_ == 1)


def test_images_are_flattened():
    X = make_circle_points(80, noise=0.01, random_state=0) @ np.ones((2, 4)) / 2
    X = X + 0.01 * np.random.default_rng(0).standard_normal(X.shape)
    imgs = X.reshape(80, 1, 2, 2)
    cidm = CIDM(n_eigenpairs=4, random_state=0).fit(imgs)
    assert cidm.image_shape_ == (1, 2, 2) and cidm.n_features_in_ == 4
    np.testing.assert_allclose(cidm.transform(imgs), cidm.transform(X))
    assert cidm.nystrom_project(imgs).shape == (80, 4)
    with pytest.raises(ValueError, match="images of shape"):
        cidm.transform(X.reshape(80, 1, 4, 1))


def test_manifold_view(fitted):
    M = fitted.as_manifold()
    assert M.ambient_dim == 2 and M.intrinsic_dim == 1 and M.reach is None
    x = np.array([[0.0, 1.0]])
    np.testing.assert_allclose(M.project(x), fitted.project(x))
    B = M.tangent_basis(x)
    assert B.shape == (1, 2, 1) and abs(B[0, 0, 0]) > 0.99  # tangent of the circle at (0, 1)
    B = fitted.set_params(tangent="local_pca").tangent_basis(x)
    assert abs(B[0, 0, 0]) > 0.99
    fitted.set_params(tangent="jacobian")


def test_sklearn_integration(noisy_circle):
    X = noisy_circle[:120]
    check_pipeline_gridsearch_pickle(CIDM(n_eigenpairs=5, random_state=0), X,
                                     param_grid={"k_bandwidth": [3, 6]})
    y = (X[:, 0] > 0).astype(int)
    pipe = make_pipeline(StandardScaler(), CIDM(n_eigenpairs=6, random_state=0),
                         LogisticRegression())
    search = GridSearchCV(pipe, {"cidm__n_components": [2, 4], "cidm__epsilon": ["auto", 1.0]},
                          cv=3).fit(X, y)
    assert search.best_score_ > 0.9
    est = CIDM(n_eigenpairs=5, random_state=0).fit(X)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.gradient(X[:3]), est.gradient(X[:3]))


# --------------------------------------------------------------------------- bad inputs
def test_bad_inputs_helper(noisy_circle):
    check_bad_inputs(CIDM(n_eigenpairs=5), noisy_circle[:50],
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"), min_samples=6)


@pytest.mark.parametrize("params, match", [
    ({"n_eigenpairs": 1}, "n_eigenpairs"),
    ({"n_eigenpairs": 5, "n_components": 5}, "n_components"),
    ({"k_bandwidth": 1}, "k_bandwidth"),
    ({"k_bandwidth": 8, "n_neighbors": 5}, "n_neighbors"),
    ({"n_neighbors": 500}, "n_neighbors"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": "median"}, "epsilon"),
    ({"alpha": 1.5}, "alpha"),
    ({"diffusion_time": -1.0}, "diffusion_time"),
    ({"eigen_solver": "svd"}, "eigen_solver"),
    ({"n_eigenpairs": 60}, "at least 61"),
])
def test_bad_parameters(noisy_circle, params, match):
    with pytest.raises(ValueError, match=match):
        CIDM(**params).fit(noisy_circle[:50])


def test_duplicates_raise():
    X = np.repeat(make_circle_points(30, grid=True), 3, axis=0)
    with pytest.raises(ValueError, match="90 training points .*remove duplicates"):
        CIDM(n_eigenpairs=4, k_bandwidth=3).fit(X)


def test_dense_too_large_raises():
    X = np.linspace(0, 1, 20001)[:, None]
    with pytest.raises(ValueError, match="n_neighbors=int"):
        CIDM(n_neighbors=None).fit(X)


def test_complex_and_feature_mismatch(fitted, noisy_circle):
    with pytest.raises(ValueError, match="[Cc]omplex"):
        CIDM().fit(noisy_circle.astype(complex))
    with pytest.raises(ValueError, match="features"):
        fitted.transform(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n_iter"):
        fitted.nystrom_project(noisy_circle[:2], n_iter=0)
    with pytest.raises(ValueError, match="F must"):
        fitted.extend(np.zeros(5), noisy_circle[:2])
    with pytest.raises(NotFittedError):
        CIDM().nystrom_project(noisy_circle)


@settings(max_examples=15)
@given(value=st.sampled_from([np.nan, np.inf, -np.inf]), row=st.integers(0, 49),
       col=st.integers(0, 1))
def test_non_finite_rejected_anywhere(noisy_circle, value, row, col):
    X = noisy_circle[:50].copy()
    X[row, col] = value
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        CIDM(n_eigenpairs=5).fit(X)


def test_disconnected_graph_warns():
    X = np.r_[make_circle_points(40, grid=True), make_circle_points(40, grid=True) + 100]
    with pytest.warns(UserWarning, match="2 components"):
        CIDM(n_eigenpairs=4).fit(X)


def test_int_and_float32_input_computed_in_float64(noisy_circle):
    cidm = CIDM(n_eigenpairs=4, random_state=0).fit(noisy_circle.astype(np.float32))
    assert cidm.X_fit_.dtype == np.float64 and cidm.transform(noisy_circle).dtype == np.float64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CIDM(n_eigenpairs=4).fit(np.round(10 * noisy_circle).astype(int) + np.arange(300)[:, None])
