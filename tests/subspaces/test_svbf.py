"""SVBF: identities, invariances, edge cases, input validation and sklearn integration."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from geolearn.subspaces import (
    SVBF,
    flag_mean,
    principal_angles,
    schubert_distance,
    working_dimension,
)
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

from ._data import common_line_sets, haar_sets, orth, projector, random_orthogonal


def _objective(X, K, c, kind="cos2"):
    """Brute force: F from scipy-independent SVDs, one set at a time."""
    vals = []
    for x in X:
        s = np.clip(np.linalg.svd(x.T @ K, compute_uv=False)[:c], 0, 1)
        vals.append(np.mean(s ** 2 if kind == "cos2" else s))
    return np.mean(vals)


@pytest.mark.parametrize("objective", ["cos2", "cos"])
def test_common_line_is_found_and_curve_is_monotone(objective):
    X, u = common_line_sets(n=12, r=10, l=3)
    svbf = SVBF(2, objective=objective, init="random", n_init=1, tol=1e-14,
                random_state=0).fit(X)
    assert svbf.objective_ >= 1 - 1e-10
    assert np.linalg.norm(svbf.basis_.T @ u) >= 1 - 1e-10
    assert np.all(np.diff(svbf.objective_curve_) >= -1e-13)
    assert svbf.converged_ and svbf.n_iter_ >= 1
    np.testing.assert_allclose(svbf.basis_.T @ svbf.basis_, np.eye(2), atol=1e-12)
    assert svbf.objective_ == pytest.approx(_objective(X, svbf.basis_, 1, objective), abs=1e-12)


def test_full_intersection_dim_is_the_flag_mean():
    X = haar_sets(10, 12, 3, seed=2)
    svbf = SVBF(2, 2, init="random", n_init=1, tol=1e-15, random_state=0).fit(X)
    np.testing.assert_allclose(projector(svbf.basis_), projector(flag_mean(X, 2)), atol=1e-5)


def test_one_vector_per_set_is_uncentred_pca_of_unit_vectors():
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((40, 6)) * np.array([3, 2, 1.5, 1, 0.5, 0.2])
    with pytest.warns(UserWarning, match="not orthonormal"):
        svbf = SVBF(3, init="random", n_init=1, tol=1e-15, random_state=0).fit(rows)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    pca = np.linalg.svd(unit.T, full_matrices=False)[0][:, :3]
    np.testing.assert_allclose(projector(svbf.basis_), projector(pca), atol=1e-5)


def test_single_set_and_full_dimension_fit_exactly():
    X = haar_sets(8, 1, 3)
    svbf = SVBF(4, n_init=1).fit(X)
    assert svbf.objective_ == pytest.approx(1, abs=1e-12)
    # k >= l: W contains the whole set
    np.testing.assert_allclose(principal_angles(X, svbf.basis_), 0, atol=1e-7)
    X = haar_sets(5, 6, 2, seed=3)
    assert SVBF(5, 2, n_init=1).fit(X).objective_ == pytest.approx(1, abs=1e-12)


def test_weights_equal_duplication():
    X = haar_sets(8, 6, 2, seed=4)
    w = np.array([1, 2, 1, 3, 1, 1])
    a = SVBF(2, n_init=3, tol=1e-14, random_state=0).fit(X, sample_weight=w)
    b = SVBF(2, n_init=3, tol=1e-14, random_state=0).fit(np.repeat(X, w, axis=0))
    assert a.objective_ == pytest.approx(b.objective_, abs=1e-12)
    np.testing.assert_allclose(projector(a.basis_), projector(b.basis_), atol=1e-6)
    with pytest.raises(ValueError, match="(?i)negative"):
        SVBF().fit(X, sample_weight=-w)
    with pytest.raises(ValueError, match="non-zero"):
        SVBF().fit(X, sample_weight=np.zeros(6))
    with pytest.raises(ValueError, match="sample_weight"):
        SVBF().fit(X, sample_weight=w[:3])


def test_invariant_to_basis_choice_and_equivariant_to_rotations():
    rng = np.random.default_rng(5)
    X = haar_sets(10, 15, 3, seed=5)
    O = random_orthogonal(10, rng)
    X2 = np.stack([O @ x @ random_orthogonal(3, rng) for x in X])
    a = SVBF(3, n_init=1).fit(X)
    b = SVBF(3, n_init=1).fit(X2)
    assert a.objective_ == pytest.approx(b.objective_, abs=1e-12)
    np.testing.assert_allclose(O @ projector(a.basis_) @ O.T, projector(b.basis_), atol=1e-8)
    np.testing.assert_allclose(a.angles_, b.angles_, atol=1e-8)


def test_float32_near_orthonormal_input_is_repaired_silently():
    X = haar_sets(10, 8, 3, seed=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = SVBF(2, n_init=1).fit(X.astype(np.float32))
        near = X + 1e-6 * np.random.default_rng(0).standard_normal(X.shape)
        SVBF(2, n_init=1, input_type="basis").fit(near)
    b = SVBF(2, n_init=1).fit(X)
    np.testing.assert_allclose(projector(a.basis_), projector(b.basis_), atol=1e-5)
    np.testing.assert_allclose(a.basis_.T @ a.basis_, np.eye(2), atol=1e-12)


def test_input_types():
    rng = np.random.default_rng(7)
    raw = rng.standard_normal((6, 8, 3))
    with pytest.raises(ValueError, match=r"set 0 of X is not orthonormal: max \|X_i\^T X_i - I\|"):
        SVBF(input_type="basis").fit(raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = SVBF(2, n_init=1, input_type="data").fit(raw)
    with pytest.warns(UserWarning, match="input_type='data'"):
        b = SVBF(2, n_init=1).fit(raw)
    c = SVBF(2, n_init=1).fit(np.stack([orth(x) for x in raw]))
    np.testing.assert_array_equal(a.basis_, b.basis_)
    np.testing.assert_allclose(projector(a.basis_), projector(c.basis_), atol=1e-8)
    d = SVBF(2, n_init=1, input_type="data", subspace_dim=2).fit(raw)
    assert d.subspace_dims_.tolist() == [2] * 6
    with pytest.raises(ValueError, match="numerical rank"):
        SVBF(input_type="data", subspace_dim=4).fit(rng.standard_normal((3, 8, 3)))


def test_transform_outputs():
    X, u = common_line_sets(n=10, r=8, l=3)
    Xr = X @ random_orthogonal(3, np.random.default_rng(0))
    svbf = SVBF(3, random_state=0).fit(X)
    K = svbf.basis_
    B = svbf.transform(Xr)
    assert B.shape == (8, 3)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1, atol=1e-12)
    # K b_i is the unit vector of W closest to V_i: here the common line, whatever basis
    np.testing.assert_allclose(np.abs(B @ K.T @ u), 1, atol=1e-8)
    np.testing.assert_allclose(B, svbf.coordinates_, atol=1e-8)
    np.testing.assert_allclose(svbf.inverse_transform(B), B @ K.T)
    svbf.set_params(transform_output="angles")
    np.testing.assert_allclose(svbf.transform(X), principal_angles(X, K)[:, :1], atol=1e-12)
    svbf.set_params(transform_output="cosines")
    np.testing.assert_allclose(svbf.transform(X), np.cos(principal_angles(X, K)[:, :1]))
    svbf.set_params(transform_output="change_of_basis")
    np.testing.assert_allclose(svbf.transform(X), np.einsum("nk,rnl->rkl", K, X).reshape(8, -1))
    with pytest.raises(ValueError, match="one size"):
        svbf.transform([X[0], X[1][:, :2]])
    two = SVBF(3, 2, n_init=1).fit(X)
    with pytest.raises(ValueError, match="coordinates"):
        two.transform(X)
    assert not hasattr(two, "coordinates_") and two.angles_.shape == (8, 2)


def test_scores_and_distances_match_the_functions():
    X = haar_sets(9, 20, 3, seed=8)
    svbf = SVBF(3, 2, objective="cos", n_init=2, random_state=0).fit(X)
    K = svbf.basis_
    theta = principal_angles(X, K)[:, :2]
    np.testing.assert_allclose(svbf.score_samples(X), np.cos(theta).mean(axis=1), atol=1e-12)
    assert svbf.score(X) == pytest.approx(svbf.objective_, abs=1e-12)
    assert 0 <= svbf.score(X) <= 1
    for metric in ("chordal", "geodesic", "cos2", "cos"):
        np.testing.assert_allclose(svbf.distance(X, metric=metric, p=3),
                                   schubert_distance(X, K, 2, metric=metric, p=3), atol=1e-12)


def test_flag_signature():
    X = haar_sets(10, 15, 3, seed=9)
    svbf = SVBF((1, 3), (1, 2), n_init=2, random_state=0).fit(X)
    K = svbf.basis_
    want = (_objective(X, K[:, :1], 1) + _objective(X, K[:, :3], 2)) / 2
    assert svbf.objective_ == pytest.approx(want, abs=1e-12)
    assert np.all(np.diff(svbf.objective_curve_) >= -1e-13)
    assert svbf.angles_.shape == (15, 3)
    np.testing.assert_allclose(svbf.angles_[:, 1:], principal_angles(X, K)[:, :2], atol=1e-12)
    # the flag objective at the optimum beats the step-1 fit of the plain 3-d solution
    plain = SVBF(3, 2, n_init=2, random_state=0).fit(X).basis_
    assert svbf.objective_ >= (_objective(X, plain[:, :1], 1) + _objective(X, plain, 2)) / 2 - 1e-9


@pytest.mark.parametrize("params, match", [
    ({"n_components": 0}, "n_components"),
    ({"n_components": 11}, "exceeds the number of features"),
    ({"n_components": (2, 2)}, "strictly increasing"),
    ({"n_components": (1, 2), "intersection_dim": (1,)}, "one entry per step"),
    ({"n_components": 2, "intersection_dim": 3}, "intersection_dim"),
    ({"n_components": 4, "intersection_dim": 4}, "smallest set size 3"),
    ({"objective": "sin"}, "objective"),
    ({"solver": "sgd"}, "solver"),
    ({"init": "pca"}, "init"),
    ({"init": np.eye(10)[:, :2], "n_components": 3}, r"init as an array must have shape"),
    ({"transform_output": "b"}, "transform_output"),
    ({"solver": "adam", "intersection_dim": 2, "n_components": 2}, "solver='adam'"),
    ({"solver": "adam", "n_components": (1, 2)}, "solver='adam'"),
    ({"input_type": "raw"}, "input_type"),
    ({"device": "tpu"}, "device"),
])
def test_bad_parameters_raise(params, match):
    X = haar_sets(10, 5, 3)
    with pytest.raises(ValueError, match=match):
        SVBF(**params).fit(X)


def test_bad_inputs_and_unfitted():
    X = haar_sets(8, 6, 2)
    check_bad_inputs(SVBF(2, n_init=1), X, min_samples=1)
    svbf = SVBF(2, n_init=1).fit(X)
    with pytest.raises(ValueError, match="expecting 8 features"):
        svbf.transform(haar_sets(7, 3, 2))
    with pytest.raises(ValueError, match="expecting 8 features"):
        svbf.score_samples(np.ones((3, 7)))


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 8), l=st.integers(1, 3),
       k=st.integers(1, 3), bad=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_random_sets_give_valid_fits_and_non_finite_values_raise(seed, n, l, k, bad):
    rng = np.random.default_rng(seed)
    X = np.stack([orth(rng.standard_normal((n, l))) for _ in range(5)])
    c = min(l, k)
    svbf = SVBF(k, c, n_init=1, random_state=0).fit(X)
    np.testing.assert_allclose(svbf.basis_.T @ svbf.basis_, np.eye(k), atol=1e-10)
    assert 0 <= svbf.objective_ <= 1 + 1e-12
    assert np.all((svbf.angles_ >= 0) & (svbf.angles_ <= np.pi / 2))
    assert svbf.objective_ == pytest.approx(_objective(X, svbf.basis_, c), abs=1e-10)
    Xbad = X.copy()
    Xbad[rng.integers(5), rng.integers(n), rng.integers(l)] = bad
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        SVBF(k, c).fit(Xbad)
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        svbf.score_samples(Xbad)


def test_restarts_reproducibility_and_parallelism():
    X = haar_sets(12, 20, 3, seed=10)
    a = SVBF(3, n_init=4, init="uniform", random_state=1).fit(X)
    b = SVBF(3, n_init=4, init="uniform", random_state=1, n_jobs=2).fit(X)
    np.testing.assert_array_equal(a.basis_, b.basis_)
    assert a.init_objectives_.shape == (4,)
    assert a.objective_ == pytest.approx(a.init_objectives_.max(), abs=1e-12)
    c = SVBF(3, n_init=4, init="uniform", random_state=1, batch_size=7).fit(X)
    np.testing.assert_allclose(projector(a.basis_), projector(c.basis_), atol=1e-6)
    d = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(d.transform(X), a.transform(X))


def test_max_iter_warns():
    X = haar_sets(12, 20, 3, seed=11)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        svbf = SVBF(2, init="random", n_init=1, max_iter=2, random_state=0).fit(X)
    assert not svbf.converged_ and svbf.n_iter_ == 2


def test_adam_solver_decreases_the_penalised_loss():
    X, u = common_line_sets(n=10, r=10, l=3)
    svbf = SVBF(1, solver="adam", init="uniform", n_init=1, max_iter=300,
                random_state=0).fit(X)
    # U[0, 1] start: ||K||^2 is about n / 3, far from 1; the penalty pulls it back
    losses = svbf.history_[-1, "batches", :, "train_loss"]
    assert losses[-1] < losses[0] / 2
    assert svbf.orthogonality_error_ < 2.0  # the start's is about n / 3 - 1 = 2.3
    np.testing.assert_allclose(svbf.basis_.T @ svbf.basis_, np.eye(1), atol=1e-12)
    assert svbf.n_iter_ == 300 and len(svbf.objective_curve_) == 300


def test_pipeline_gridsearch_pickle():
    X, _ = common_line_sets(n=8, r=12, l=2)
    check_pipeline_gridsearch_pickle(SVBF(2, n_init=2, random_state=0), X,
                                     param_grid={"n_components": [1, 2]})


def test_working_dimension():
    assert working_dimension([0.37, 0.73, 1.0, 1.0, 0.9995, 1.0], range(1, 7)) == 3
    assert working_dimension([0.5, 0.6, 0.7], [3, 1, 2]) == 2
    assert working_dimension([0.2, 0.2], [1, 2]) == 1
    with pytest.raises(ValueError, match="equal length"):
        working_dimension([0.1, 0.2], [1])
    for bad in (2, "0.1", True):
        with pytest.raises(ValueError, match="rel_tol"):
            working_dimension([0.1, 0.2], [1, 2], rel_tol=bad)


def test_raw_sets_warn_once_at_fit_not_at_every_call():
    """Defect: the documented make_subspace_sets quick-start warned on every call, not once."""
    import warnings

    from geolearn.exceptions import GeolearnWarning
    from geolearn.subspaces import make_subspace_sets

    rng = np.random.default_rng(0)
    sets, _ = make_subspace_sets(rng.standard_normal((60, 8)), np.repeat([0, 1], 30), 3,
                                 random_state=0)
    with pytest.warns(GeolearnWarning, match="not orthonormal"):
        svbf = SVBF(2, random_state=0).fit(sets)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        T, d, s = svbf.transform(sets), svbf.distance(sets), svbf.score(sets)
    # the silent calls still orthonormalise: raw sets give the results of their bases
    from geolearn.subspaces import SubspaceEmbedding

    bases = SubspaceEmbedding().fit_transform(sets)
    np.testing.assert_allclose(svbf.distance(bases), d, atol=1e-10)
    assert s == pytest.approx(svbf.score(bases)) and T.shape == (len(sets), 2)
