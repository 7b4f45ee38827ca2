"""CIDM eigensolvers, neighbour backends, threads and progress output."""

import pickle
import sys

import numpy as np
import pytest
import torch
from sklearn.neighbors import NearestNeighbors

from geolearn.datasets import make_circle_points, make_torus_points
from geolearn.manifold import CIDM
from geolearn.manifold._kernel import top_eigenpairs, torch_lobpcg
from geolearn.manifold._neighbors import (
    _QUERY_BLOCK,
    ApproximateNeighbors,
    ExactNeighbors,
)


@pytest.fixture(scope="module")
def torus():
    return make_torus_points(1500, R=1.0, r=1.0, random_state=0)


@pytest.fixture(scope="module")
def torus_knn(torus):
    return CIDM(n_eigenpairs=12, n_neighbors=40, random_state=0).fit(torus)


@pytest.mark.parametrize("solver", ["arpack", "lobpcg"])
def test_iterative_solvers_find_repeated_eigenvalues(solver):
    """On a grid circle every nontrivial eigenvalue is exactly double; Lanczos from one
    start vector sees one copy of each, so the deflation pass must find the others."""
    X = make_circle_points(600, grid=True)
    dense = CIDM(n_eigenpairs=9, n_neighbors=30, eigen_solver="dense").fit(X)
    other = CIDM(n_eigenpairs=9, n_neighbors=30, eigen_solver=solver, random_state=0).fit(X)
    np.testing.assert_allclose(other.eigenvalues_, dense.eigenvalues_, atol=1e-8)
    ratios = other.laplacian_eigenvalues_[1:] / other.laplacian_eigenvalues_[1]
    np.testing.assert_allclose(ratios, [1, 1, 4, 4, 9, 9, 16, 16], rtol=2e-3)
    # same eigenspaces: the projections agree even though the bases may rotate
    np.testing.assert_allclose(other.nystrom_project(1.1 * X[:50]),
                               dense.nystrom_project(1.1 * X[:50]), atol=1e-6)


def test_arpack_on_distinct_spectrum_matches_dense(torus):
    dense = CIDM(n_eigenpairs=12, n_neighbors=40, eigen_solver="dense").fit(torus)
    arpack = CIDM(n_eigenpairs=12, n_neighbors=40, eigen_solver="arpack",
                  random_state=0).fit(torus)
    np.testing.assert_allclose(arpack.eigenvalues_, dense.eigenvalues_, atol=1e-10)


@pytest.mark.parametrize("as_sparse", [True, False])
def test_torch_lobpcg_matches_the_fitted_spectrum(torus, as_sparse):
    """The GPU path of eigen_solver="lobpcg", run here on the CPU."""
    from scipy import sparse

    cidm = CIDM(n_eigenpairs=5, n_neighbors=40, eigen_solver="dense").fit(torus[:600])
    s = sparse.diags(1 / np.sqrt(cidm.degree_))
    A = (s @ _kernel_of(cidm) @ s).tocsr()
    A = A if as_sparse else A.toarray()
    X0 = np.random.RandomState(0).standard_normal((600, 5))
    w, v = torch_lobpcg(A, X0, 1e-8, "cpu")
    order = np.argsort(w)[::-1]
    np.testing.assert_allclose(w[order], cidm.eigenvalues_, atol=1e-7)
    np.testing.assert_allclose(A @ v, v * w, atol=1e-5)


def _kernel_of(cidm):
    """The symmetrised kNN kernel of a fitted kNN-mode CIDM, rebuilt from its parts."""
    from scipy import sparse

    N, k = cidm.n_samples_fit_, cidm.n_neighbors_
    dist, idx = NearestNeighbors().fit(cidm.X_fit_).kneighbors(cidm.X_fit_, n_neighbors=k)
    delta2 = dist**2 / (cidm.rho_[:, None] * cidm.rho_[idx])
    W = sparse.csr_matrix((np.exp(-delta2 / (2 * cidm.epsilon_)).ravel(), idx.ravel(),
                           np.arange(0, N * k + 1, k)), shape=(N, N))
    K = (W + W.T) / 2
    np.testing.assert_allclose(np.asarray(K.sum(1)).ravel(), cidm.degree_, rtol=1e-12)
    return K


def test_lobpcg_runs_torch_on_a_cuda_device_and_scipy_on_the_cpu(monkeypatch):
    """Routing of eigen_solver="lobpcg": torch.lobpcg only where device resolves to CUDA.
    The torch path is replaced by a spy and CUDA is made to look available, so the test runs
    without a GPU."""
    import geolearn.manifold._kernel as kernel

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    calls = []

    def spy(A, X0, tol, device):
        calls.append(str(device))
        w, v = np.linalg.eigh(A)
        return w[-X0.shape[1]:], v[:, -X0.shape[1]:]

    monkeypatch.setattr(kernel, "torch_lobpcg", spy)
    A = np.diag(np.linspace(0, 1, 40))
    top = [1, 1 - 1 / 39, 1 - 2 / 39]
    w, _ = top_eigenpairs(A, 3, "lobpcg", 1e-10, np.random.RandomState(0), device="cpu")
    np.testing.assert_allclose(w, top, atol=1e-8)
    assert calls == []
    w, _ = top_eigenpairs(A, 3, "lobpcg", 1e-10, np.random.RandomState(0), device="cuda")
    np.testing.assert_allclose(w, top, atol=1e-12)
    assert calls == ["cuda"]


# ---------------------------------------------------------------- threads
@pytest.mark.parametrize("n_neighbors", [None, 40])
def test_n_jobs_gives_identical_results(torus, n_neighbors):
    """Chunks of the Nyström extension run in threads: results must not depend on it."""
    X_new = 1.05 * make_torus_points(300, R=1.0, r=1.0, random_state=1)
    one = CIDM(n_eigenpairs=8, n_neighbors=n_neighbors, batch_size=64, random_state=0)
    two = CIDM(n_eigenpairs=8, n_neighbors=n_neighbors, batch_size=64, random_state=0,
               n_jobs=2)
    one.fit(torus)
    two.fit(torus)
    np.testing.assert_array_equal(two.eigenvalues_, one.eigenvalues_)
    np.testing.assert_allclose(two.transform(X_new), one.transform(X_new), rtol=0, atol=1e-12)
    np.testing.assert_allclose(two.nystrom_project(X_new, n_iter=2),
                               one.nystrom_project(X_new, n_iter=2), atol=1e-12)
    np.testing.assert_allclose(two.gradient(X_new[:100]), one.gradient(X_new[:100]),
                               atol=1e-10)


@pytest.mark.parametrize("dim", [3, 20])  # scipy's KD-tree; scikit-learn in row blocks
def test_parallel_kneighbors_matches_sequential(dim):
    X = np.random.RandomState(0).standard_normal((2 * _QUERY_BLOCK + 17, dim))
    d1, i1 = NearestNeighbors().fit(X).kneighbors(X, n_neighbors=7)
    d2, i2 = ExactNeighbors().fit(X).kneighbors(X, 7, n_jobs=2)
    np.testing.assert_array_equal(i2, i1)
    np.testing.assert_allclose(d2, d1, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- approximate neighbours
def test_ann_backend_matches_exact_in_low_dimension(torus, torus_knn):
    pytest.importorskip("hnswlib")
    ann = CIDM(n_eigenpairs=12, n_neighbors=40, random_state=0, nn_backend="ann").fit(torus)
    assert isinstance(ann.nn_, ApproximateNeighbors)
    # recall 1 on 1500 points in R^4: the same kernel, hence the same spectrum
    np.testing.assert_allclose(ann.eigenvalues_, torus_knn.eigenvalues_, atol=1e-10)
    X_new = make_torus_points(200, R=1.0, r=1.0, random_state=2)
    np.testing.assert_allclose(ann.nystrom_project(X_new), torus_knn.nystrom_project(X_new),
                               atol=1e-8)
    restored = pickle.loads(pickle.dumps(ann))
    np.testing.assert_array_equal(restored.transform(X_new), ann.transform(X_new))


def test_ann_neighbours_are_exact_distances_with_high_recall():
    """On 64-D digits the graph search may miss a few neighbours, but the distances it
    returns are exact and sorted, so they can only be at least the true ones rank by rank."""
    pytest.importorskip("hnswlib")
    from sklearn.datasets import load_digits

    X = load_digits().data.astype(np.float64)
    X += np.random.RandomState(0).uniform(0, 1e-3, X.shape)  # break exact duplicates
    ann = ApproximateNeighbors(n_jobs=2, random_state=0).fit(X)
    d_a, i_a = ann.kneighbors(X[:300], 20)
    d_e, i_e = NearestNeighbors().fit(X).kneighbors(X[:300], n_neighbors=20)
    np.testing.assert_allclose(d_a, np.linalg.norm(X[:300, None] - X[i_a], axis=2), rtol=1e-12)
    assert np.all(np.diff(d_a, axis=1) >= 0)
    assert np.all(d_a >= d_e - 1e-5)  # sklearn's brute force has ~1e-6 round-off
    assert np.all(i_a[:, 0] == np.arange(300))  # each point finds itself first
    recall = np.mean([len(set(a) & set(e)) / 20 for a, e in zip(i_a, i_e)])
    assert recall >= 0.95


def test_ann_without_hnswlib_raises_clear_error(torus, monkeypatch):
    monkeypatch.setitem(sys.modules, "hnswlib", None)
    with pytest.raises(ImportError, match=r"geolearn\[ann\]"):
        CIDM(n_eigenpairs=5, n_neighbors=40, nn_backend="ann").fit(torus)


# ---------------------------------------------------------------- progress
def test_verbose_reports_stages(torus, capsys):
    CIDM(n_eigenpairs=5, n_neighbors=40, verbose=1).fit(torus)
    out = capsys.readouterr().out
    for stage in ("nearest neighbours", "epsilon", "knn kernel", "eigenpairs"):
        assert stage in out
    CIDM(n_eigenpairs=5, n_neighbors=40).fit(torus)
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_lobpcg_on_cuda_without_cuda_is_a_clear_error_before_any_work(device, monkeypatch):
    """Regression (#14): CIDM(eigen_solver="lobpcg", device="cuda") on a CPU-only torch raised
    a raw AssertionError from torch after the whole kernel was built; now a ValueError that
    names the parameter, raised before the neighbour search."""
    import geolearn.manifold._cidm as cidm_module

    def too_late(*args, **kwargs):
        raise AssertionError("the device must be checked before the neighbour search")

    monkeypatch.setattr(cidm_module, "make_neighbors", too_late)
    cidm = CIDM(n_eigenpairs=5, n_neighbors=20, eigen_solver="lobpcg", device=device)
    with pytest.raises(ValueError, match="device=.*CUDA is not available"):
        cidm.fit(make_torus_points(200, random_state=0))


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_the_device_matters_only_where_it_is_used():
    """Other solvers never touch the device at fit; to_torch resolves it with the same error."""
    torus = make_torus_points(200, random_state=0)
    cidm = CIDM(n_eigenpairs=5, n_neighbors=20, eigen_solver="arpack", device="cuda",
                random_state=0).fit(torus)
    with pytest.raises(ValueError, match="CUDA is not available"):
        cidm.to_torch()
    n = torus.shape[1]
    assert cidm.to_torch(device="cpu")(torch.zeros(1, n)).shape == (1, n)
    with pytest.raises(ValueError, match="device must be"):
        CIDM(n_eigenpairs=5, eigen_solver="lobpcg", device="gpu please").fit(torus)
