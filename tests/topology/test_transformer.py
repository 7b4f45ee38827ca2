"""PersistenceTransformer in pipelines, and the diagram-distance scorer."""

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.linear_model import LogisticRegression
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KernelDensity
from sklearn.pipeline import make_pipeline

from geolearn.datasets import make_circle_points
from geolearn.topology import (
    PersistenceTransformer,
    betti_curve,
    make_diagram_distance_scorer,
    persistence_diagrams,
)
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


def _clouds(n_clouds=12, n_points=25, seed=0):
    """Noisy circles (label 1) and Gaussian blobs (label 0), each a cloud of points in R^2."""
    rng = np.random.RandomState(seed)
    X = np.empty((n_clouds, n_points, 2))
    y = np.arange(n_clouds) % 2
    for i in range(n_clouds):
        X[i] = (make_circle_points(n_points, noise=0.05, random_state=rng) if y[i]
                else 0.6 * rng.normal(size=(n_points, 2)))
    return X, y


def test_betti_curves_on_the_fitted_grid():
    X, _ = _clouds()
    pt = PersistenceTransformer(n_bins=5).fit(X)
    Z = pt.transform(X)
    assert Z.shape == (12, 10) and pt.radii_.shape == (2, 5) and pt.n_features_out_ == 10
    for i in (0, 1):
        dgms = persistence_diagrams(X[i], maxdim=1)
        for k in (0, 1):
            np.testing.assert_array_equal(Z[i, 5 * k:5 * k + 5], betti_curve(dgms[k],
                                                                              pt.radii_[k]))
    assert not hasattr(pt, "n_features_in_")           # 3-D input: no flat width
    np.testing.assert_array_equal(pt.fit_transform(X), Z)
    names = pt.get_feature_names_out()
    assert names[0] == "betti0_0" and names[-1] == "betti1_4"


def test_list_of_clouds_of_any_size_and_flat_rows():
    X, _ = _clouds(4)
    ragged = [X[0], X[1][:10], X[2][:20], X[3]]
    pt = PersistenceTransformer(n_bins=4, features="persistence").fit(ragged)
    Z = pt.transform(ragged)
    assert Z.shape == (4, 8) and (Z >= 0).all()
    flat = PersistenceTransformer(n_bins=4, point_dim=2).fit(X.reshape(4, -1))
    np.testing.assert_array_equal(flat.transform(X.reshape(4, -1)),
                                  PersistenceTransformer(n_bins=4).fit(X).transform(X))
    assert flat.n_features_in_ == 50
    with pytest.raises(ValueError, match="point_dim"):
        PersistenceTransformer(point_dim=3).fit(X.reshape(4, -1))


def test_parallel_and_subsampled_features_are_reproducible():
    X, _ = _clouds(6, 60)
    pt = PersistenceTransformer(n_bins=6, n_subsample=30, random_state=0)
    Z = pt.fit_transform(X)
    np.testing.assert_array_equal(pt.transform(X), Z)
    with parallel_config(backend="threading"):   # the joblib path, without process start-up
        np.testing.assert_array_equal(pt.set_params(n_jobs=2).transform(X), Z)


def test_bad_inputs():
    X, y = _clouds()
    flat = X.reshape(len(X), -1)
    check_bad_inputs(PersistenceTransformer(n_bins=3, point_dim=2), flat, y,
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"), min_samples=1)
    pt = PersistenceTransformer(n_bins=3)
    with pytest.raises(ValueError, match="at least 2 points"):
        pt.fit(X[:, :1])
    for kwargs, word in [(dict(homology_dimensions=(1, 1)), "homology_dimensions"),
                         (dict(homology_dimensions=()), "homology_dimensions"),
                         (dict(coeff=6), "coeff"), (dict(features="landscape"), "features"),
                         (dict(n_bins=0), "n_bins")]:
        with pytest.raises(ValueError, match=word):
            PersistenceTransformer(**kwargs).fit(X)
    bad = X.copy()
    bad[3, 2, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pt.fit(bad)


def test_pipeline_gridsearch_clone_pickle():
    X, y = _clouds(16)
    pipe = make_pipeline(PersistenceTransformer(homology_dimensions=(1,), n_bins=4),
                         LogisticRegression())
    search = check_pipeline_gridsearch_pickle(
        pipe, X, y, param_grid={"persistencetransformer__n_bins": [4, 8]})
    assert search.best_score_ >= 0.9        # the loop tells circles from blobs


def test_diagram_distance_scorer_ranks_generators():
    X = make_circle_points(150, noise=0.03, random_state=0)
    scorer = make_diagram_distance_scorer(X, n_samples=150)
    sharp, blurred = (KernelDensity(bandwidth=b).fit(X) for b in (0.03, 0.6))
    assert scorer(sharp) > scorer(blurred)
    assert scorer(sharp) == scorer(sharp) <= 0             # reproducible, greater is better
    # GaussianMixture.sample returns (X, y) and takes no random_state
    gm = GaussianMixture(8, random_state=0).fit(X)
    assert np.isfinite(scorer(gm))
    # no reference: compare with the data the scorer is given (a held-out fold)
    search = GridSearchCV(KernelDensity(), {"bandwidth": [0.03, 0.6]}, cv=2,
                          scoring=make_diagram_distance_scorer(distance="bottleneck"))
    assert search.fit(X).best_params_ == {"bandwidth": 0.03}
    callable_sampler = lambda n, rs: make_circle_points(n, random_state=rs)  # noqa: E731
    assert scorer(callable_sampler) > scorer(blurred)
    assert "wasserstein" in repr(scorer)


def test_scorer_bad_arguments():
    X = make_circle_points(20, random_state=0)
    with pytest.raises(ValueError, match="distance"):
        make_diagram_distance_scorer(X, distance="sliced")
    with pytest.raises(ValueError, match="p must"):
        make_diagram_distance_scorer(X, p=0.5)
    with pytest.raises(ValueError, match="homology_dimensions"):
        make_diagram_distance_scorer(X, homology_dimensions=(-1,))
    with pytest.raises(TypeError, match="maxdim"):
        make_diagram_distance_scorer(X, maxdim=2)
    with pytest.raises(ValueError, match="X_ref"):
        make_diagram_distance_scorer()(KernelDensity().fit(X))
    with pytest.raises(ValueError, match="returned"):
        make_diagram_distance_scorer(X)(lambda n, rs: X[:3])
