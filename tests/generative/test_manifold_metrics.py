"""Manifold-reconstruction metrics (MRML): analytic values, brute force, invariances, scorer."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform
from sklearn.base import BaseEstimator
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from geolearn.generative._manifold_metrics import (
    _knn_adjacency,
    _knn_spectrum,
    _reduced_diagrams,
)
from geolearn.generative.metrics import (
    knn_spectral_distance,
    make_manifold_scorer,
    persistence_wasserstein,
    relative_reduction,
)


def noisy_circle(n, dim=4, noise=0.05, seed=0):
    """A unit circle in the first two of ``dim`` coordinates, with isotropic noise."""
    rng = np.random.RandomState(seed)
    t = rng.uniform(0, 2 * np.pi, n)
    X = np.zeros((n, dim))
    X[:, 0], X[:, 1] = np.cos(t), np.sin(t)
    return X + noise * rng.standard_normal(X.shape)


def random_isometry(dim, seed):
    rng = np.random.RandomState(seed)
    Q, R = np.linalg.qr(rng.standard_normal((dim, dim)))
    return Q * np.sign(np.diag(R)), rng.standard_normal(dim)


def brute_force_spectral(X, Y, k, symmetrize):
    """MRML Eq. 3 written out: A[i, j] = 1 iff i is among the k nearest of j (not j itself)."""
    def spectrum(Z):
        D = squareform(pdist(Z))
        np.fill_diagonal(D, np.inf)
        A = np.zeros_like(D)
        for j in range(len(Z)):
            A[np.argsort(D[:, j])[:k], j] = 1.0
        if symmetrize:
            return np.sort(np.linalg.eigvalsh(np.maximum(A, A.T)))[::-1]
        return np.array(sorted(np.linalg.eigvals(A), key=lambda z: (-z.real, -z.imag)))
    return np.sqrt(np.sum(np.abs(spectrum(X) - spectrum(Y)) ** 2))


class PCAAutoencoder(BaseEstimator):
    """Stand-in for MetaManifoldAutoencoder: ``reconstruct`` returns flat rows."""

    def __init__(self, n_components=2):
        self.n_components = n_components

    def fit(self, X, y=None):
        self.pca_ = PCA(self.n_components).fit(np.asarray(X).reshape(len(X), -1))
        return self

    def reconstruct(self, X):
        X = np.asarray(X).reshape(len(X), -1)
        return self.pca_.inverse_transform(self.pca_.transform(X))


# ------------------------------------------------------------------ analytic checks
def test_identical_clouds_are_at_distance_zero():
    X = noisy_circle(40)
    assert persistence_wasserstein(X, X) == {"H0": 0.0, "H1": 0.0, "total": 0.0}
    assert knn_spectral_distance(X, X) == 0.0
    assert knn_spectral_distance(X, X, symmetrize=False) == 0.0
    Y = noisy_circle(40, seed=1)   # and the metrics do see a different cloud
    assert persistence_wasserstein(X, Y)["total"] > 0.1
    assert knn_spectral_distance(X, Y) > 0.1


def test_persistence_is_invariant_to_isometries():
    X, Y = noisy_circle(50, seed=0), noisy_circle(50, noise=0.15, seed=1)
    Q, c = random_isometry(4, seed=2)
    moved = persistence_wasserstein(X, X @ Q + c)
    assert all(v == pytest.approx(0, abs=1e-9) for v in moved.values())
    before, after = persistence_wasserstein(X, Y), persistence_wasserstein(X @ Q + c, Y @ Q + c)
    assert before["H1"] > 0.01
    for key in before:
        assert after[key] == pytest.approx(before[key], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("p", [1, 2, np.inf])
@pytest.mark.parametrize("s", [0.25, 3.0])
def test_persistence_scales_with_the_clouds(s, p):
    X, Y = noisy_circle(45, seed=3), noisy_circle(45, noise=0.2, seed=4)
    base, scaled = persistence_wasserstein(X, Y, p=p), persistence_wasserstein(s * X, s * Y, p=p)
    assert base["H0"] > 0 and base["H1"] > 0
    assert base["total"] == base["H0"] + base["H1"]   # a plain sum, as in the paper's tables
    for key in base:
        assert scaled[key] == pytest.approx(s * base[key], rel=1e-9)


@pytest.mark.parametrize("symmetrize", [True, False])
def test_knn_graph_is_invariant_to_similarities(symmetrize):
    rng = np.random.RandomState(5)
    X = rng.standard_normal((60, 6))
    Q, c = random_isometry(6, seed=6)
    assert knn_spectral_distance(X, 3 * X @ Q + c, symmetrize=symmetrize) == 0.0
    assert knn_spectral_distance(X, X + 0.3 * rng.standard_normal(X.shape),
                                 symmetrize=symmetrize) > 0.1


@pytest.mark.parametrize("p", [1, 2, 3, np.inf])
def test_a_bar_against_the_diagonal(p):
    """W_{p,inf}({(0, 2)}, {}) = 1: two points 2 apart against two coincident points."""
    d = persistence_wasserstein([[0.0], [2.0]], [[5.0], [5.0]], homology_dims=(0,), p=p)
    assert d == {"H0": 1.0, "total": 1.0}


def test_two_bars_and_the_ground_norm():
    """W_{1,inf}({(0, 2)}, {(0, 3)}) = 1; L_2 ground norm to the diagonal: sqrt(2)."""
    assert persistence_wasserstein([[0.0], [2.0]], [[0.0], [3.0]], homology_dims=0,
                                   p=1)["H0"] == 1.0
    d = persistence_wasserstein([[0.0], [2.0]], [[1.0], [1.0]], homology_dims=0, internal_p=2)
    assert d["H0"] == pytest.approx(np.sqrt(2))


def test_one_essential_h0_class_is_removed():
    X = np.array([[0.0], [2.0], [10.0]])
    h0 = _reduced_diagrams(X, (0,), np.inf, None)[0]
    np.testing.assert_array_equal(h0, [[0, 2], [0, 8]])
    # past thresh the cloud has two components forever: one of them is left
    h0 = _reduced_diagrams(X, (0,), 5.0, None)[0]
    np.testing.assert_array_equal(h0, [[0, 2], [0, np.inf]])
    assert persistence_wasserstein(X, X + 1, thresh=5.0)["H0"] == 0.0
    assert persistence_wasserstein(X, [[0.0], [2.0], [4.0]], thresh=5.0)["H0"] == np.inf


def test_h0_deaths_are_the_minimum_spanning_tree():
    X = np.random.RandomState(7).standard_normal((70, 3))
    mst = np.sort(minimum_spanning_tree(squareform(pdist(X))).data)
    h0 = _reduced_diagrams(X, (0, 1), np.inf, None)[0]
    np.testing.assert_array_equal(h0[:, 0], 0)
    np.testing.assert_allclose(np.sort(h0[:, 1]), mst, rtol=0, atol=1e-9)
    # through the public path: every bar against the diagonal costs half its length
    flat = np.zeros_like(X)
    assert persistence_wasserstein(X, flat, homology_dims=0, p=1)["H0"] == pytest.approx(
        mst.sum() / 2, rel=1e-12)
    assert persistence_wasserstein(X, flat, homology_dims=0, p=np.inf)["H0"] == pytest.approx(
        mst.max() / 2, rel=1e-12)


def test_h1_of_fewer_than_three_points_is_empty():
    circle = noisy_circle(30, noise=0.0)
    h1 = _reduced_diagrams(circle, (1,), np.inf, None)[1]
    assert len(h1) == 1
    # two points: no H1, and a lone point has only the (removed) essential class
    assert len(_reduced_diagrams(circle[:2], (0, 1), np.inf, None)[1]) == 0
    assert persistence_wasserstein(circle[:2], circle[:2] * 3)["H1"] == 0.0
    assert persistence_wasserstein([[0.0, 1.0]], [[5.0, 5.0]]) == {"H0": 0.0, "H1": 0.0,
                                                                   "total": 0.0}


def test_images_are_flattened():
    rng = np.random.RandomState(8)
    X = rng.uniform(size=(25, 3, 4, 4))
    Y = X + 0.05 * rng.standard_normal(X.shape)
    flat = lambda Z: Z.reshape(25, -1)
    assert persistence_wasserstein(X, Y) == persistence_wasserstein(flat(X), flat(Y))
    assert knn_spectral_distance(X, Y) == knn_spectral_distance(flat(X), flat(Y))


@pytest.mark.parametrize("symmetrize", [True, False])
def test_complete_graph_spectrum(symmetrize):
    n = 12
    rng = np.random.RandomState(9)
    X, Y = rng.standard_normal((n, 3)), rng.uniform(size=(n, 3))
    expected = np.r_[n - 1, -np.ones(n - 1)]
    np.testing.assert_allclose(_knn_spectrum(X, n - 1, symmetrize), expected, atol=1e-9)
    assert knn_spectral_distance(X, Y, n_neighbors=n - 1,
                                 symmetrize=symmetrize) == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("symmetrize", [True, False])
@pytest.mark.parametrize("k", [2, 3, 6])
def test_spectral_distance_matches_brute_force(k, symmetrize):
    rng = np.random.RandomState(10 + k)
    X = rng.standard_normal((25, 3))
    Y = X + 0.4 * rng.standard_normal(X.shape)
    expected = brute_force_spectral(X, Y, k, symmetrize)
    assert expected > 0.1
    assert knn_spectral_distance(X, Y, n_neighbors=k, symmetrize=symmetrize) == pytest.approx(
        expected, rel=1e-9, abs=1e-12)


def test_duplicates_are_neighbours_but_never_self():
    X = np.repeat(np.random.RandomState(11).standard_normal((6, 2)), 3, axis=0)
    A = _knn_adjacency(X, 4).toarray()
    assert np.all(np.diag(A) == 0)
    np.testing.assert_array_equal(A.sum(axis=0), 4)
    for j in range(len(X)):  # both copies of point j are among its neighbours
        copies = [i for i in range(len(X)) if i != j and np.all(X[i] == X[j])]
        assert A[copies, j].sum() == 2


def test_top_eigenvalues_by_eigsh():
    rng = np.random.RandomState(12)
    X = rng.standard_normal((80, 3))
    Y = X + 0.3 * rng.standard_normal(X.shape)
    top = lambda Z: _knn_spectrum(Z, 5, True)[:10]   # dense, descending
    expected = np.sqrt(np.sum((top(X) - top(Y)) ** 2))
    assert expected > 0.01
    assert knn_spectral_distance(X, Y, n_eigenvalues=10) == pytest.approx(expected, abs=1e-8)
    # past the dense limit, with n_eigenvalues
    Z = rng.uniform(size=(5001, 2))
    assert knn_spectral_distance(Z, 2 * Z, n_eigenvalues=3) == pytest.approx(0, abs=1e-8)


# --------------------------------------------------------------- relative reduction
@pytest.mark.parametrize("baseline, value, percent", [
    (16.48, 14.10, 14.44),   # W2 total, holdout: GRAE vs Meta C
    (66.01, 63.08, 4.44),    # W2 total, all samples: GRAE vs Meta B
    (8.90, 7.67, 13.82),     # spectral k=20, holdout: AE vs Meta B
    (6.76, 6.11, 9.62),      # W2 total, 15 objects: AE vs Meta A
])
def test_relative_reduction_reproduces_the_paper(baseline, value, percent):
    assert round(100 * relative_reduction(baseline, value), 2) == percent


def test_relative_reduction_bad_input():
    assert relative_reduction(2.0, 3.0) == -0.5
    with pytest.raises(ValueError, match="baseline must be nonzero"):
        relative_reduction(0.0, 1.0)
    with pytest.raises(ValueError, match="baseline must be a finite number"):
        relative_reduction(np.inf, 1.0)
    with pytest.raises(ValueError, match="value must be a finite number"):
        relative_reduction(1.0, np.nan)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("metric", [persistence_wasserstein, knn_spectral_distance])
def test_bad_clouds(metric):
    X = np.random.RandomState(13).standard_normal((10, 3))
    with pytest.raises(ValueError, match=r"same shape.*\(10, 3\) and \(10, 4\)"):
        metric(X, np.zeros((10, 4)))
    with pytest.raises(ValueError, match=r"same shape.*\(10, 3\) and \(9, 3\)"):
        metric(X, X[:9])
    with pytest.raises(ValueError, match=r"shape \(10,\)"):
        metric(X[:, 0], X[:, 0])
    with pytest.raises(ValueError, match="NaN"):
        metric(X, np.where(X > 1, np.nan, X))


def test_spectral_bad_parameters():
    X = np.random.RandomState(14).standard_normal((5, 2))
    with pytest.raises(ValueError, match="n=5 <= n_neighbors=5"):
        knn_spectral_distance(X, X, n_neighbors=5)
    big = np.zeros((5001, 1))   # refused before any neighbour search
    with pytest.raises(ValueError, match="n=5001.*n_eigenvalues=k"):
        knn_spectral_distance(big, big)
    with pytest.raises(ValueError, match="symmetrize=True"):
        knn_spectral_distance(X, X, n_neighbors=2, symmetrize=False, n_eigenvalues=2)
    with pytest.raises(ValueError, match="n_eigenvalues must be < n=5"):
        knn_spectral_distance(X, X, n_neighbors=2, n_eigenvalues=5)
    with pytest.raises(ValueError, match="n_neighbors must be an integer >= 1"):
        knn_spectral_distance(X, X, n_neighbors=0)
    with pytest.raises(TypeError, match="symmetrize must be True or False"):
        knn_spectral_distance(X, X, n_neighbors=2, symmetrize="yes")


@pytest.mark.parametrize("kwargs, message", [
    ({"homology_dims": (-1,)}, "homology_dims"), ({"homology_dims": (0, 0)}, "homology_dims"),
    ({"homology_dims": ()}, "homology_dims"), ({"homology_dims": "H1"}, "homology_dims"),
    ({"p": 0.5}, "p must be"), ({"internal_p": np.nan}, "internal_p"),
    ({"thresh": -1.0}, "thresh"),
])
def test_persistence_bad_parameters(kwargs, message):
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match=message):
        persistence_wasserstein(X, X, **kwargs)
    with pytest.raises(ValueError, match=message):   # and already when building a scorer
        make_manifold_scorer("persistence", **kwargs)


# ------------------------------------------------------------------------- scorer
def test_scorer_is_minus_the_metric_on_reconstructions():
    X = noisy_circle(60, seed=15)
    est = PCAAutoencoder(1).fit(X)
    R = est.reconstruct(X)
    persistence = make_manifold_scorer("persistence", p=1)
    spectral = make_manifold_scorer("spectral", n_neighbors=4, symmetrize=False)
    assert persistence(est, X) == -persistence_wasserstein(X, R, p=1)["total"] < 0
    assert spectral(est, X) == -knn_spectral_distance(X, R, n_neighbors=4,
                                                      symmetrize=False) < 0
    # the folds of cross_val_score, one by one
    folds = KFold(3).split(X)
    expected = [persistence(PCAAutoencoder(1).fit(X[tr]), X[te]) for tr, te in folds]
    np.testing.assert_allclose(cross_val_score(PCAAutoencoder(1), X, cv=3,
                                               scoring=persistence), expected, rtol=1e-12)
    clone = pickle.loads(pickle.dumps(spectral))
    assert clone(est, X) == spectral(est, X)
    assert "n_neighbors=4" in repr(spectral)


@pytest.mark.parametrize("metric", ["persistence", "spectral"])
def test_scorer_picks_the_model_that_keeps_the_circle(metric):
    """PCA to a line folds the circle; to its plane keeps it."""
    X = noisy_circle(90, dim=5, noise=0.03, seed=16)
    search = GridSearchCV(PCAAutoencoder(), {"n_components": [1, 2]},
                          scoring=make_manifold_scorer(metric), cv=3).fit(X)
    assert search.best_params_ == {"n_components": 2}
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] < scores[1] <= 0


def test_scorer_on_images():
    X = np.random.RandomState(17).uniform(size=(30, 3, 4, 4))
    est = PCAAutoencoder(5).fit(X)
    scorer = make_manifold_scorer("spectral")
    assert scorer(est, X) == -knn_spectral_distance(X.reshape(30, -1), est.reconstruct(X))


def test_scorer_bad_construction():
    with pytest.raises(ValueError, match="metric must be one of"):
        make_manifold_scorer("mse")
    with pytest.raises(TypeError, match=r"\['n_neighbours'\]"):
        make_manifold_scorer("spectral", n_neighbours=5)
    with pytest.raises(TypeError, match=r"\['p'\]"):
        make_manifold_scorer("spectral", p=2)
    with pytest.raises(TypeError, match=r"\['n_neighbors'\]"):
        make_manifold_scorer("persistence", n_neighbors=5)
    with pytest.raises(ValueError, match="n_neighbors"):
        make_manifold_scorer("spectral", n_neighbors=0)


# ---------------------------------------------------------------------- property
@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 24), dim=st.integers(1, 4), k=st.integers(1, 5),
       seed=st.integers(0, 2**31 - 1))
def test_reordering_both_clouds_changes_nothing(n, dim, k, seed):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, dim))
    Y = X + 0.3 * rng.standard_normal(X.shape)
    perm = rng.permutation(n)
    before, after = persistence_wasserstein(X, Y), persistence_wasserstein(X[perm], Y[perm])
    for key in before:
        assert after[key] == pytest.approx(before[key], rel=1e-9, abs=1e-12)
    assert knn_spectral_distance(X[perm], Y[perm], n_neighbors=k) == pytest.approx(
        knn_spectral_distance(X, Y, n_neighbors=k), rel=1e-9, abs=1e-9)
    # directed: the graph is reordered exactly; its (non-normal) spectrum only to rounding
    A, B = _knn_adjacency(X, k).toarray(), _knn_adjacency(X[perm], k).toarray()
    np.testing.assert_array_equal(B, A[np.ix_(perm, perm)])
    assert knn_spectral_distance(X[perm], Y[perm], n_neighbors=k,
                                 symmetrize=False) == pytest.approx(
        knn_spectral_distance(X, Y, n_neighbors=k, symmetrize=False), abs=5e-3)


def test_scorer_reconstructs_through_a_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.random.default_rng(0).normal(size=(40, 5))
    pipe = make_pipeline(StandardScaler(), PCA(2)).fit(X)
    rec = pipe.inverse_transform(pipe.transform(X))
    scorer = make_manifold_scorer("spectral", n_neighbors=3)
    assert scorer(pipe, X) == -knn_spectral_distance(X, rec, n_neighbors=3)
    assert scorer(make_pipeline(StandardScaler(), PCA(5)).fit(X), X) == pytest.approx(0, abs=1e-9)
