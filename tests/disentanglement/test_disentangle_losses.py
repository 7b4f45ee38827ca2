"""Orthogonality and graph divergence losses (DAE-OG): analytic checks, Monte Carlo null
moments, brute force, invariances, bad inputs and gradients."""

import itertools

import numpy as np
import pytest
import torch

from geolearn._utils import torch_threads
from geolearn.disentanglement import (
    GraphDivergenceLoss,
    OrthogonalityLoss,
    knn_graph_statistic,
    knn_permutation_pvalue,
    smoothed_knn_statistic,
)
from geolearn.disentanglement._graph_divergence import _edge_marginals, _pooled_distances
from tests.helpers import assert_message

NORMS = ("fro", "fro_squared", "spectral")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny tensors: one thread avoids the collapse of two threads beside other work."""
    with torch_threads(1):
        yield


def orthogonal_blocks(batch, k, m, seed=0):
    """Codes whose k blocks of size m are orthonormal vectors times random positive scales."""
    rng = np.random.RandomState(seed)
    rows = []
    for _ in range(batch):
        Q, _ = np.linalg.qr(rng.standard_normal((m, m)))
        scales = rng.uniform(0.1, 10.0, size=k)
        rows.append((Q[:, :k].T * scales[:, None]).ravel())
    return np.array(rows)


def cosines(z, k):
    """(B, k, k) cosines between the k blocks of each row, in numpy."""
    blocks = z.reshape(len(z), k, -1)
    unit = blocks / np.linalg.norm(blocks, axis=2, keepdims=True)
    return np.einsum("bim,bjm->bij", unit, unit)


def two_samples(n0=30, n1=20, d=2, shift=0.5, seed=0):
    rng = np.random.RandomState(seed)
    return rng.standard_normal((n0, d)), rng.standard_normal((n1, d)) + shift


def marginals(X0, X1, lambda_):
    """The float64 edge-marginal matrix P of the pooled sample."""
    x0, x1 = torch.from_numpy(X0), torch.from_numpy(X1)
    return _edge_marginals(_pooled_distances(x0, x1), (lambda_,)).numpy()


def naive_statistic(X0, X1, lambda_):
    """Eq. 3 with double loops, and E, Var by enumerating every relabelling (tiny n only)."""
    X = np.concatenate([X0, X1])
    n, n0 = len(X), len(X0)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            d[i, j] = np.sqrt(np.sum((X[i] - X[j]) ** 2) + 1e-10)
    P = np.zeros((n, n))
    for i in range(n):
        denom = sum(np.exp(-d[i, l] / lambda_) for l in range(n) if l != i)
        for j in range(n):
            if j != i:
                P[i, j] = np.exp(-d[i, j] / lambda_) / denom

    def T_of(labels):
        return sum(P[i, j] for i in range(n) for j in range(n) if labels[i] != labels[j])

    T = T_of([0] * n0 + [1] * (n - n0))
    values = []
    for ones in itertools.combinations(range(n), n - n0):
        labels = np.zeros(n, dtype=int)
        labels[list(ones)] = 1
        values.append(T_of(labels))
    return T, np.mean(values), np.var(values)


# ---------------------------------------------------------------- the hard test and p-values
def test_hard_statistic_matches_brute_force_and_pvalues():
    rng = np.random.RandomState(8)
    X0, X1 = rng.standard_normal((15, 3)), rng.standard_normal((12, 3)) + 0.8
    X = np.concatenate([X0, X1])
    labels = np.r_[np.zeros(15), np.ones(12)]
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    for k in (1, 3):
        nn = np.argsort(D, axis=1)[:, :k]
        assert knn_graph_statistic(X0, X1, k=k) == int(np.sum(labels[nn] != labels[:, None]))
    # separated samples: the smallest possible p-value; same distribution: not rejected
    far = knn_permutation_pvalue(X0, X1 + 10, n_permutations=200, random_state=0)
    assert far == pytest.approx(1 / 201)
    p = [knn_permutation_pvalue(rng.standard_normal((20, 2)), rng.standard_normal((20, 2)),
                                n_permutations=200, random_state=i) for i in range(30)]
    assert 0.3 < np.mean(p) < 0.7                        # uniform under H0
    a = knn_permutation_pvalue(X0, X1, k=2, n_permutations=300, random_state=3)
    assert a == knn_permutation_pvalue(X0, X1, k=2, n_permutations=300, random_state=3)


def test_pvalue_agrees_with_a_loop_over_permutations():
    rng = np.random.RandomState(9)
    X0, X1 = rng.standard_normal((10, 2)), rng.standard_normal((9, 2)) + 0.7
    p = knn_permutation_pvalue(X0, X1, n_permutations=2000, random_state=0)
    # the same test written as a loop: refit the statistic on each relabelled split
    X, obs, count = np.concatenate([X0, X1]), knn_graph_statistic(X0, X1), 0
    loop_rng = np.random.RandomState(1)
    for _ in range(2000):
        idx = loop_rng.permutation(19)
        count += knn_graph_statistic(X[idx[:10]], X[idx[10:]]) <= obs
    assert p == pytest.approx((1 + count) / 2001, abs=0.03)


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("lambda_", [1e-3, 0.1, 1.0])
def test_gradients_are_finite_for_duplicate_points(lambda_):
    x0 = torch.tensor([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    x1 = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [5.0, 5.0]], requires_grad=True)
    loss = GraphDivergenceLoss(lambda_=lambda_)(x0, x1)
    assert torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(x1.grad).all()
    # and with 64-D points (the matrix-product path of cdist)
    g = torch.Generator().manual_seed(0)
    base = torch.randn(40, 64, generator=g)
    x1 = torch.cat([base[:20], base[:20]]).clone().requires_grad_()
    loss = GraphDivergenceLoss(lambda_=lambda_, distance_scale="median")(base, x1)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(x1.grad).all()


def test_gradient_moves_the_model_sample_towards_the_target():
    g = torch.Generator().manual_seed(1)
    target = torch.randn(64, 2, generator=g)
    model = (torch.randn(64, 2, generator=g) + 1.5).requires_grad_()
    loss = GraphDivergenceLoss(lambda_=1.0)
    opt = torch.optim.SGD([model], lr=0.05)
    before = loss(target, model).item()
    for _ in range(30):
        opt.zero_grad()
        loss(target, model).backward()
        opt.step()
    assert loss(target, model).item() < before - 1.0


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("kwargs, words", [
    ({}, ["exactly one", "n_blocks", "block_size"]),
    ({"n_blocks": 2, "block_size": 3}, ["exactly one"]),
    ({"n_blocks": 0}, ["n_blocks", ">= 1"]),
    ({"block_size": 0}, ["block_size", ">= 1"]),
    ({"block_size": 2.5}, ["block_size"]),
    ({"n_blocks": 2, "norm": "nuclear"}, ["norm", "fro"]),
    ({"n_blocks": 2, "reduction": "max"}, ["reduction", "mean"]),
    ({"n_blocks": 2, "eps": 0.0}, ["eps"]),
])
def test_orthogonality_bad_parameters(kwargs, words):
    with pytest.raises(ValueError) as exc:
        OrthogonalityLoss(**kwargs)
    assert_message(exc, *words)


@pytest.mark.parametrize("z, kwargs, words", [
    (torch.ones(6), {"n_blocks": 2}, ["z", "2-D", "(6,)"]),
    (torch.ones(2, 3, 2), {"n_blocks": 2}, ["z", "2-D", "(2, 3, 2)"]),
    (torch.ones(4, 7), {"n_blocks": 2}, ["n_out=7", "n_blocks=2"]),
    (torch.ones(4, 7), {"block_size": 3}, ["n_out=7", "block_size=3"]),
    (torch.tensor([[1.0, float("nan"), 0.0, 1.0]]), {"n_blocks": 2}, ["z", "NaN"]),
    (torch.ones(0, 4), {"n_blocks": 2}, ["z", "at least one"]),
])
def test_orthogonality_bad_inputs(z, kwargs, words):
    with pytest.raises(ValueError) as exc:
        OrthogonalityLoss(**kwargs)(z)
    assert_message(exc, *words)


def test_graph_loss_bad_parameters():
    for kwargs, words in [({"lambda_": 0.0}, ["lambda_", "> 0"]),
                          ({"lambda_": -1.0}, ["lambda_"]),
                          ({"lambdas": (0.1, 0.0)}, ["lambdas", "> 0"]),
                          ({"lambdas": ()}, ["lambdas"]),
                          ({"distance_scale": "mean"}, ["distance_scale", "median"]),
                          ({"k": 0}, ["k"])]:
        with pytest.raises(ValueError) as exc:
            GraphDivergenceLoss(**kwargs)
        assert_message(exc, *words)
    with pytest.raises(NotImplementedError, match="k=1"):
        GraphDivergenceLoss(k=2)
    with pytest.raises(ValueError) as exc:
        smoothed_knn_statistic(np.zeros((3, 2)), np.ones((3, 2)), lambda_=0)
    assert_message(exc, "lambda_")


@pytest.mark.parametrize("a, b, words", [
    (np.zeros((1, 2)), np.ones((3, 2)), ["x_target", "at least 2"]),
    (np.zeros((3, 2)), np.ones((1, 2)), ["x_model", "at least 2"]),
    (np.zeros((3, 2)), np.ones((3, 3)), ["same number of features", "2", "3"]),
    (np.full((3, 2), np.nan), np.ones((3, 2)), ["x_target", "NaN"]),
    (np.zeros((3, 2)), np.full((3, 2), np.inf), ["x_model", "infinity"]),
])
def test_graph_loss_bad_inputs(a, b, words):
    with pytest.raises(ValueError) as exc:
        GraphDivergenceLoss()(torch.tensor(a), torch.tensor(b))
    assert_message(exc, *words)
    numpy_words = [w.replace("x_target", "X0").replace("x_model", "X1") for w in words]
    for helper in (lambda: smoothed_knn_statistic(a, b, 0.5),
                   lambda: knn_graph_statistic(a, b),
                   lambda: knn_permutation_pvalue(a, b, n_permutations=10)):
        with pytest.raises(ValueError) as exc:
            helper()
        assert_message(exc, *numpy_words)


def test_numpy_helpers_bad_parameters():
    X0, X1 = np.zeros((3, 2)), np.ones((3, 2))
    for call, word in [(lambda: knn_graph_statistic(X0, X1, k=0), "k"),
                       (lambda: knn_graph_statistic(X0, X1, k=6), "k must be at most"),
                       (lambda: knn_permutation_pvalue(X0, X1, n_permutations=0),
                        "n_permutations"),
                       (lambda: smoothed_knn_statistic(np.zeros(3), X1, 0.5), "X0")]:
        with pytest.raises(ValueError) as exc:
            call()
        assert_message(exc, word)
    with pytest.raises(TypeError, match="x_target"):
        GraphDivergenceLoss()(np.zeros((3, 2)), torch.ones(3, 2))
