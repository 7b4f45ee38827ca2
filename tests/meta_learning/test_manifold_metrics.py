"""Manifold-reconstruction metrics (MRML): analytic values, brute force, invariances, scorer."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist, squareform
from sklearn.base import BaseEstimator
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from geolearn.meta_learning.metrics import (
    _knn_adjacency,
    knn_spectral_distance,
    make_manifold_scorer,
    persistence_wasserstein,
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
    ({"homology_dimensions": (-1,)}, "homology_dimensions"),
    ({"homology_dimensions": (0, 0)}, "homology_dimensions"),
    ({"homology_dimensions": ()}, "homology_dimensions"),
    ({"homology_dimensions": "H1"}, "homology_dimensions"),
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
