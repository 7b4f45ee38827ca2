"""Orthogonality and graph divergence losses (DAE-OG): analytic checks, Monte Carlo null
moments, brute force, invariances, bad inputs and gradients."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geolearn._utils import torch_threads
from geolearn.generative.graph_divergence import (
    GraphDivergenceLoss,
    _edge_marginals,
    _null_moments,
    _pooled_distances,
    knn_graph_statistic,
    knn_permutation_pvalue,
    smoothed_knn_statistic,
)
from geolearn.generative.orthogonality import OrthogonalityLoss
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


# ---------------------------------------------------------------- experiment 1: orthogonality
@pytest.mark.parametrize("norm", NORMS)
def test_orthogonal_blocks_give_zero_and_finite_gradients(norm):
    z = torch.tensor(orthogonal_blocks(6, k=3, m=5), requires_grad=True)
    loss = OrthogonalityLoss(n_blocks=3, norm=norm)(z)
    # "fro" is sqrt(s + 1e-12): 1e-6 at exact orthogonality, within the spec's atol
    np.testing.assert_allclose(loss.item(), 0.0, atol=1e-6)
    loss.backward()
    assert torch.isfinite(z.grad).all()
    # and in float32, for the norms without the smoothing floor
    if norm != "fro":
        z32 = z.detach().float().requires_grad_()
        loss32 = OrthogonalityLoss(block_size=5, norm=norm)(z32)
        np.testing.assert_allclose(loss32.item(), 0.0, atol=1e-6)
        loss32.backward()
        assert torch.isfinite(z32.grad).all()


def test_random_codes_match_the_cosine_formula():
    rng = np.random.RandomState(1)
    z = rng.standard_normal((8, 12))
    C = cosines(z, 4)
    iu = np.triu_indices(4, 1)
    s = 2 * np.sum(C[:, iu[0], iu[1]] ** 2, axis=1)
    per_sample = OrthogonalityLoss(n_blocks=4, reduction="none")(torch.tensor(z)).numpy()
    np.testing.assert_allclose(per_sample, np.sqrt(s), rtol=1e-6)
    squared = OrthogonalityLoss(n_blocks=4, norm="fro_squared", reduction="none")
    np.testing.assert_allclose(squared(torch.tensor(z)).numpy(), s, rtol=1e-10)
    # reductions
    mean = OrthogonalityLoss(n_blocks=4)(torch.tensor(z)).item()
    total = OrthogonalityLoss(n_blocks=4, reduction="sum")(torch.tensor(z)).item()
    assert mean == pytest.approx(np.sqrt(s).mean(), rel=1e-6)
    assert total == pytest.approx(np.sqrt(s).sum(), rel=1e-6)


def test_block_rescaling_leaves_the_loss_unchanged():
    rng = np.random.RandomState(2)
    z = rng.standard_normal((5, 12))
    scales = np.repeat(rng.uniform(0.01, 100.0, size=(5, 3)), 4, axis=1)
    for norm in NORMS:
        loss = OrthogonalityLoss(n_blocks=3, norm=norm, reduction="none")
        np.testing.assert_allclose(loss(torch.tensor(z * scales)).numpy(),
                                   loss(torch.tensor(z)).numpy(), rtol=1e-6)


def test_spectral_is_the_largest_absolute_eigenvalue():
    z = np.random.RandomState(3).standard_normal((7, 15))
    G = cosines(z, 5)
    expected = np.abs(np.linalg.eigvalsh(G - np.eye(5))).max(axis=1)
    got = OrthogonalityLoss(n_blocks=5, norm="spectral", reduction="none")(torch.tensor(z))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_value_is_at_most_sqrt_k_k_minus_1(k):
    rng = np.random.RandomState(4)
    z = rng.standard_normal((50, 4 * k))
    values = OrthogonalityLoss(n_blocks=k, reduction="none")(torch.tensor(z)).numpy()
    assert np.all(values <= np.sqrt(k * (k - 1)))
    # all blocks parallel: the bound is reached (up to the 1e-12 smoothing)
    parallel = torch.tensor(np.tile(rng.standard_normal((1, 4)), (1, k)))
    top = OrthogonalityLoss(n_blocks=k)(parallel).item()
    assert top == pytest.approx(np.sqrt(k * (k - 1)), rel=1e-9)
    for norm in ("spectral",):
        assert OrthogonalityLoss(n_blocks=k, norm=norm)(parallel).item() <= np.sqrt(k * (k - 1))


def test_zero_norm_block_contributes_cosine_zero():
    z = torch.tensor([[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]], requires_grad=True)
    for norm in NORMS:
        loss = OrthogonalityLoss(n_blocks=3, norm=norm)(z)
        assert torch.isfinite(loss)
        # blocks 2 and 3 are orthogonal, block 1 is zero: no cosine is non-zero
        assert loss.item() == pytest.approx(0.0, abs=1e-6)
        (grad,) = torch.autograd.grad(loss, z)
        assert torch.isfinite(grad).all()


@settings(max_examples=30, deadline=None)
@given(z=arrays(np.float64, (3, 12), elements=st.floats(-10, 10)),
       scales=arrays(np.float64, (3, 3), elements=st.floats(0.05, 20)))
def test_property_block_rescaling_invariance(z, scales):
    assume(np.all(np.linalg.norm(z.reshape(3, 3, 4), axis=2) > 1e-3))
    loss = OrthogonalityLoss(block_size=4, norm="fro_squared", reduction="none")
    np.testing.assert_allclose(loss(torch.tensor(z * np.repeat(scales, 4, axis=1))).numpy(),
                               loss(torch.tensor(z)).numpy(), rtol=1e-7, atol=1e-12)


# ---------------------------------------------------------------- experiment 2: graph statistic
def test_closed_form_moments_match_monte_carlo():
    X0, X1 = two_samples()
    P = marginals(X0, X1, 0.5)
    T, E, Var, t = smoothed_knn_statistic(X0, X1, lambda_=0.5)
    n0, n = len(X0), len(X0) + len(X1)
    rng = np.random.RandomState(0)
    S = np.zeros((20000, n))
    perms = rng.random_sample((20000, n)).argsort(axis=1)
    np.put_along_axis(S, perms[:, : n - n0], 1.0, axis=1)          # label 1 of each relabelling
    # T(s) = sum_ij P_ij 1[s_i != s_j] = s.rowsum + s.colsum - 2 s^T P s
    T_mc = S @ P.sum(1) + S @ P.sum(0) - 2 * np.einsum("bi,ij,bj->b", S, P, S)
    assert abs(E - T_mc.mean()) < 0.01 * E
    assert abs(Var - T_mc.var()) < 0.05 * Var
    assert E == pytest.approx(2 * n0 * (n - n0) / (n - 1), rel=1e-12)   # m = n for k = 1
    assert T == pytest.approx(np.sum(P[:n0, n0:]) + np.sum(P[n0:, :n0]), rel=1e-12)
    assert t == pytest.approx((T - E) / np.sqrt(Var + 1e-5), rel=1e-12)


def test_statistic_is_invariant_to_swapping_samples_and_rigid_motions():
    X0, X1 = two_samples(seed=1)
    base = np.array(smoothed_knn_statistic(X0, X1, 0.5))
    np.testing.assert_allclose(smoothed_knn_statistic(X1, X0, 0.5), base, rtol=1e-10)
    angle = 0.7
    R = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    R = R @ np.diag([1.0, -1.0])                                       # a reflection too
    c = np.array([3.0, -2.0])
    np.testing.assert_allclose(smoothed_knn_statistic(X0 @ R + c, X1 @ R + c, 0.5), base,
                               rtol=1e-9)


def test_small_temperature_gives_the_hard_count():
    X0, X1 = two_samples(n0=25, n1=25, shift=0.3, seed=2)
    X0, X1 = 100 * X0, 100 * X1
    X = np.concatenate([X0, X1])
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1)) + np.diag(np.full(len(X), np.inf))
    two = np.sort(D, axis=1)[:, :2]
    assert np.min(two[:, 1] - two[:, 0]) > 0.05          # distinct nearest distances
    T = smoothed_knn_statistic(X0, X1, lambda_=1e-3)[0]
    hard = knn_graph_statistic(X0, X1)
    assert 0 < hard < len(X)
    assert T == pytest.approx(hard, abs=1e-6)


def test_same_gaussian_gives_centred_t():
    rng = np.random.RandomState(3)
    ts = [smoothed_knn_statistic(rng.standard_normal((100, 2)), rng.standard_normal((100, 2)),
                                 lambda_=0.5)[3] for _ in range(50)]
    assert -0.5 <= np.mean(ts) <= 0.5


@pytest.mark.parametrize("n0, n1", [(2, 2), (3, 4), (4, 3)])
def test_brute_force_statistic_and_exact_null_moments(n0, n1):
    rng = np.random.RandomState(n0 * 10 + n1)
    X0, X1 = rng.standard_normal((n0, 3)), rng.standard_normal((n1, 3)) + 0.5
    T, E, Var = naive_statistic(X0, X1, 0.7)
    ours = smoothed_knn_statistic(X0, X1, 0.7)
    np.testing.assert_allclose(ours[:3], [T, E, Var], rtol=1e-9, atol=1e-12)
    # the torch module in float32 returns -t and the same (T, E, Var)
    loss, stats = GraphDivergenceLoss(lambda_=0.7, return_stat=True)(
        torch.tensor(X0, dtype=torch.float32), torch.tensor(X1, dtype=torch.float32))
    np.testing.assert_allclose([s.item() for s in stats], [T, E, Var], rtol=1e-5, atol=1e-6)
    assert loss.item() == pytest.approx(-(T - E) / np.sqrt(Var + 1e-5), rel=1e-4, abs=1e-5)


@settings(max_examples=25, deadline=None)
@given(X0=arrays(np.float64, (6, 2), elements=st.floats(-5, 5)),
       X1=arrays(np.float64, (5, 2), elements=st.floats(-5, 5)),
       p0=st.permutations(range(6)), p1=st.permutations(range(5)))
def test_property_permuting_rows_within_samples(X0, X1, p0, p1):
    base = smoothed_knn_statistic(X0, X1, 0.5)
    moved = smoothed_knn_statistic(X0[list(p0)], X1[list(p1)], 0.5)
    np.testing.assert_allclose(moved[:3], base[:3], rtol=1e-9, atol=1e-12)


def test_lambdas_average_the_marginals():
    X0, X1 = two_samples(seed=4)
    x0, x1 = torch.from_numpy(X0), torch.from_numpy(X1)
    one = GraphDivergenceLoss(lambdas=(0.3,), return_stat=True)(x0, x1)
    same = GraphDivergenceLoss(lambda_=0.3, return_stat=True)(x0, x1)
    assert one[0].item() == same[0].item()
    T_a = smoothed_knn_statistic(X0, X1, 0.3)[0]
    T_b = smoothed_knn_statistic(X0, X1, 2.0)[0]
    _, (T, _, _) = GraphDivergenceLoss(lambdas=[0.3, 2.0], return_stat=True)(x0, x1)
    assert T.item() == pytest.approx((T_a + T_b) / 2, rel=1e-12)   # T is linear in P


def test_median_scale_makes_the_loss_scale_free():
    X0, X1 = two_samples(seed=5)
    loss = GraphDivergenceLoss(lambda_=0.2, distance_scale="median", return_stat=True)
    x0, x1 = torch.from_numpy(X0), torch.from_numpy(X1)
    base = loss(x0, x1)
    scaled = loss(37.0 * x0, 37.0 * x1)
    # equal up to the 1e-10 distance floor, which does not scale
    np.testing.assert_allclose([v.item() for v in scaled[1]], [v.item() for v in base[1]],
                               rtol=1e-8)
    assert scaled[0].item() == pytest.approx(base[0].item(), abs=1e-8)
    # without the scale the temperature is absolute and the value changes
    plain = GraphDivergenceLoss(lambda_=0.2)
    assert plain(37.0 * x0, 37.0 * x1).item() != pytest.approx(plain(x0, x1).item(), rel=1e-3)


def test_images_are_flattened():
    rng = np.random.RandomState(6)
    a, b = rng.uniform(size=(10, 3, 4, 4)), rng.uniform(size=(12, 3, 4, 4))
    loss = GraphDivergenceLoss(lambda_=0.5)
    flat = loss(torch.tensor(a.reshape(10, -1)), torch.tensor(b.reshape(12, -1)))
    assert loss(torch.tensor(a), torch.tensor(b)).item() == flat.item()
    assert smoothed_knn_statistic(a, b, 0.5) == smoothed_knn_statistic(
        a.reshape(10, -1), b.reshape(12, -1), 0.5)


def test_moments_switch_to_float64_for_large_n():
    rng = np.random.RandomState(7)
    n0, n1 = 1200, 900
    P = rng.uniform(size=(n0 + n1, n0 + n1))
    np.fill_diagonal(P, 0.0)
    P /= P.sum(1, keepdims=True)
    E64, Var64 = _null_moments(torch.from_numpy(P), n0, n1)
    E32, Var32 = _null_moments(torch.from_numpy(P).float(), n0, n1)
    assert E32.dtype == torch.float32 and Var32.dtype == torch.float32
    assert E32.item() == pytest.approx(E64.item(), rel=1e-6)
    assert Var32.item() == pytest.approx(Var64.item(), rel=1e-5)
    assert Var64.item() > 0


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
