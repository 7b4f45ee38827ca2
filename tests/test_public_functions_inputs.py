"""Public functions validate their arrays as the estimators do; no input is refused for its strides.

- Reversed (negatively strided) views, ``X[::-1]``, give the result of the same values
  copied: every registered estimator (``tests/registry``) and ``deform``. torch cannot view
  negative strides; ``to_tensor`` copies them once.
- Each public helper below, given arrays with NaN, infinities, values whose squares
  overflow float64 (``1e300``), no rows or reversed views, either raises a ``ValueError``
  or returns finite results (NaN and infinite inputs always raise): never a silent NaN
  or inf, never another exception type.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone, is_classifier, is_regressor

from geolearn.diffeo import DiffeoStability, MaxEntropyDiffeo, deform, log_average
from geolearn.disentanglement import knn_graph_statistic, smoothed_knn_statistic
from geolearn.polytopes import local_rows, nn_agreement
from geolearn.representations import (
    FiedlerPartition,
    LinearEmbeddingMap,
    RDMRegularizedClassifier,
    compute_rdm,
    embedding_mse,
    squareform_rdm,
)
from geolearn.riemannian import ShallowNetworkGeometry
from geolearn.subspaces import SVBF, SubspaceEmbedding, SVBFClassifier, SVBFNetClassifier
from tests.registry import all_registered
from tests.torch_estimators import TORCH_ESTIMATORS, data

RNG = np.random.default_rng(0)
N = 30
TABLE = RNG.random((N, 4))
LABELS = np.arange(N) % 2
IMAGES = RNG.random((N, 1, 8, 8))
SETS = np.stack([np.linalg.qr(RNG.normal(size=(6, 2)))[0] for _ in range(N)])
EMBEDDINGS = TABLE[:, :3] @ RNG.normal(size=(3, 2))


def _data(est):
    """``(X, y)`` that ``est`` fits: images, sets of subspaces, or a table."""
    if isinstance(est, (MaxEntropyDiffeo, DiffeoStability)):
        return IMAGES, (LABELS if isinstance(est, DiffeoStability) else None)
    if isinstance(est, (SVBF, SVBFClassifier, SVBFNetClassifier, SubspaceEmbedding)):
        return SETS, (LABELS if is_classifier(est) else None)
    if isinstance(est, FiedlerPartition) and est.metric == "precomputed":
        return compute_rdm(TABLE, "euclidean"), None
    if isinstance(est, LinearEmbeddingMap):
        return TABLE, EMBEDDINGS
    if isinstance(est, RDMRegularizedClassifier):  # its reference stimuli fix the width
        return TABLE[:, :np.shape(est.rdm_stimuli)[1]], LABELS
    if is_regressor(est):
        return TABLE, TABLE[:, 0] + 1.0
    return TABLE, LABELS  # classes, for those that need them; the others ignore y


METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples",
           "stability")
REGISTERED = all_registered()


def _outputs(est, X):
    out = {"labels_": est.labels_} if hasattr(est, "labels_") else {}
    for name in METHODS:
        if hasattr(est, name):
            result = getattr(est, name)(X)
            out[name] = result.R if name == "stability" else result
    return out


@pytest.mark.parametrize("est", REGISTERED, ids=[type(e).__name__ for e in REGISTERED])
def test_reversed_views_give_the_results_of_their_copies(est):
    """14 targets refused X[::-1]: "At least one stride in the given numpy array is negative"."""
    X, y = _data(est)
    square = isinstance(est, FiedlerPartition) and est.metric == "precomputed"
    X_rev, y_rev = X[::-1, ::-1] if square else X[::-1], None if y is None else y[::-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny fits: convergence is not the point
        view = clone(est).fit(X_rev, y_rev)
        copy = clone(est).fit(X_rev.copy(), None if y is None else y_rev.copy())
        got, expected = _outputs(view, X_rev), _outputs(copy, X_rev.copy())
    assert got.keys() == expected.keys()
    for name in got:
        np.testing.assert_allclose(np.asarray(got[name], float),
                                   np.asarray(expected[name], float), rtol=1e-7, atol=1e-10,
                                   err_msg=name)


def test_deform_reads_reversed_views():
    fields = RNG.normal(scale=0.5, size=(N, 2, 8, 8))
    for X, F in [(IMAGES[::-1], fields[::-1]), (IMAGES[:, :, ::-1], fields),
                 (IMAGES[..., ::-1], fields[..., ::-1])]:
        np.testing.assert_array_equal(deform(X, F), deform(X.copy(), F.copy()))


# ---------------------------------------------------------------- bad values, every helper

POISON = st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300])


@st.composite
def tables(draw, min_rows=0, max_rows=8, max_cols=4, cols=None):
    """Small float64 tables, maybe with one poisoned entry, maybe a reversed view."""
    n = draw(st.integers(min_rows, max_rows))
    d = cols or draw(st.integers(1, max_cols))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-10, 10)))
    if X.size and draw(st.booleans()):
        X.flat[draw(st.integers(0, X.size - 1))] = draw(POISON)
    return X[::-1] if draw(st.booleans()) else X


def _check(fn, *arrays_in):
    """``fn(*arrays_in)`` raises ValueError or is finite; NaN/inf inputs must raise."""
    poisoned = any(not np.isfinite(np.asarray(A, float)).all() for A in arrays_in)
    try:
        out = fn(*arrays_in)
    except ValueError:
        return None
    assert not poisoned, "NaN or infinite input accepted"
    for part in out if isinstance(out, tuple) else (out,):
        assert np.isfinite(np.asarray(part, dtype=float)).all(), "silent NaN or inf"
    return out


@settings(max_examples=30)
@given(tables(max_cols=16, cols=16))
def test_deform(X):
    images = X.reshape(len(X), 4, 4)
    fields = np.zeros((len(X), 2, 4, 4))
    out = _check(deform, images, fields)
    if out is not None:
        np.testing.assert_array_equal(out, images)  # a zero field keeps the images


def test_deform_refuses_nan_images():
    """deform with a NaN image returned NaN pixels."""
    X = IMAGES[:2, 0].copy()
    X[0, 3, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        deform(X, np.zeros((2, 2, 8, 8)))
    with pytest.raises(ValueError, match="NaN"):
        deform(torch.as_tensor(X), torch.zeros(2, 2, 8, 8, dtype=torch.float64))


@settings(max_examples=30)
@given(tables(max_cols=1))
def test_log_average(X):
    _check(log_average, np.abs(X).ravel())


def test_log_average_refuses_what_it_cannot_average():
    """log_average([]) and log_average([1, nan]) returned nan."""
    for values in ([], [1.0, np.nan]):
        with pytest.raises(ValueError):
            log_average(values)


@settings(max_examples=30)
@given(tables(), st.sampled_from(["correlation", "cosine", "euclidean",
                                  "sqeuclidean_per_feature", "zscore_correlation"]))
def test_compute_rdm(X, metric):
    _check(lambda A: compute_rdm(A, metric), X)


def test_compute_rdm_of_huge_values_is_computed_after_scaling():
    """compute_rdm(1e300 * X) returned NaN entries."""
    X = RNG.random((6, 4))
    np.testing.assert_allclose(compute_rdm(1e300 * X), compute_rdm(X), atol=1e-12)
    np.testing.assert_allclose(compute_rdm(1e300 * X, "euclidean") / 1e300,
                               compute_rdm(X, "euclidean"), rtol=1e-12)
    with pytest.raises(ValueError, match="overflow"):
        compute_rdm(1e300 * X, "sqeuclidean_per_feature")  # 1e600 is not a float64


@settings(max_examples=30)
@given(tables(min_rows=1, max_rows=1, cols=6))  # the condensed RDM of 4 stimuli
def test_squareform_rdm(X):
    r = np.abs(X.ravel())
    _check(squareform_rdm, r)


@settings(max_examples=30)
@given(tables(min_rows=2), tables(min_rows=2), st.sampled_from([0.1, 0.5]))
def test_smoothed_knn_statistic(X0, X1, lambda_):
    if X0.shape[1] == X1.shape[1]:
        _check(lambda A, B: smoothed_knn_statistic(A, B, lambda_), X0, X1)


def test_smoothed_knn_statistic_of_huge_values_is_refused():
    """smoothed_knn_statistic(1e300 * X, Y, 0.5) gave all-NaN."""
    with pytest.raises(ValueError, match="overflow"):
        smoothed_knn_statistic(1e300 * TABLE, TABLE, 0.5)


@settings(max_examples=30)
@given(tables(min_rows=2), tables(min_rows=2))
def test_knn_graph_statistic(X0, X1):
    if X0.shape[1] == X1.shape[1]:
        out = _check(knn_graph_statistic, X0, X1)
        if out is not None and np.abs(np.r_[X0, X1]).max() < 1e100:
            assert out == knn_graph_statistic(X0 * 1e300, X1 * 1e300)  # scale-invariant


def test_knn_graph_statistic_of_huge_values():
    """knn_graph_statistic(1e300 * X, Y) failed: "cannot reshape array of size 39 ..."."""
    X, Y = TABLE[:20], TABLE[20:] + 0.5
    assert knn_graph_statistic(1e300 * X, 1e300 * Y) == knn_graph_statistic(X, Y)


@settings(max_examples=30)
@given(tables(min_rows=1), st.booleans())
def test_embedding_mse(Y, huge):
    with np.errstate(over="ignore"):
        Y_pred = 1e300 * Y if huge else Y + 1.0
    _check(embedding_mse, Y, Y_pred)


def test_embedding_mse_of_huge_values():
    """embedding_mse(Y, 1e300 * Y) returned inf."""
    Y = RNG.random((5, 3))
    with pytest.raises(ValueError, match="overflows float64"):
        embedding_mse(Y, 1e300 * Y)
    assert embedding_mse(Y, 1e150 * Y) == pytest.approx(np.mean((1e150 * Y - Y) ** 2 / 1e300)
                                                        * 1e300)


@settings(max_examples=30)
@given(tables(min_rows=2))
def test_nn_agreement(F):
    _check(lambda A: nn_agreement(A, np.arange(len(A)) % 2, metric="euclidean"), F)


def test_nn_agreement_refuses_strings_and_nan():
    """nn_agreement accepted strings and all-NaN features (returning 0.45)."""
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="numbers"):
        nn_agreement(np.full((20, 3), "a"), y)
    with pytest.raises(ValueError, match="NaN"):
        nn_agreement(np.full((20, 3), np.nan), y, metric="euclidean")


NET = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))


@settings(max_examples=30)
@given(tables(min_rows=1, cols=3))
def test_local_rows(X):
    _check(lambda A: local_rows(NET, A), X)


SHALLOW = ShallowNetworkGeometry(torch.as_tensor(RNG.normal(size=(5, 3))),
                                 torch.zeros(5, dtype=torch.float64), "erf")


@settings(max_examples=30)
@given(tables(min_rows=1, cols=3))
def test_shallow_network_geometry(X):
    X = np.clip(X, -1e3, 1e3) if np.isfinite(X).all() else X
    out = _check(lambda A: SHALLOW.metric(A).numpy(), X)
    if out is not None:
        np.testing.assert_allclose(out, SHALLOW.metric(np.ascontiguousarray(X)).numpy())


def test_shallow_network_geometry_inputs():
    """Complex input was accepted, NaN failed in linalg.cholesky and DataFrames failed."""
    X = RNG.random((4, 3))
    np.testing.assert_array_equal(SHALLOW.ricci_scalar(pd.DataFrame(X)),
                                  SHALLOW.ricci_scalar(X))
    with pytest.raises(ValueError, match="Complex"):
        SHALLOW.metric(X + 1j)
    with pytest.raises(ValueError, match="NaN"):
        SHALLOW.ricci_scalar(np.where(X > 0.5, np.nan, X))


GENERATIVE_ROWS = [(est, kind) for est, kind in TORCH_ESTIMATORS
                   if type(est).__module__.startswith("geolearn.generative")
                   and data(kind)[0].ndim == 2]


@pytest.mark.parametrize("est, kind", GENERATIVE_ROWS,
                         ids=[type(e).__name__ for e, _ in GENERATIVE_ROWS])
def test_generative_estimators_refuse_a_column_of_vectors(est, kind):
    """(n, d, 1) input was silently read as d x 1 images and flattened."""
    X, y = data(kind)
    with pytest.raises(ValueError, match=r"X\.reshape\(len\(X\), -1\)|dim 3"):
        clone(est).fit(X[:, :, None], y)
