"""Reproductions of "Orthogonality and graph divergence losses promote disentanglement in
generative models" (DAE-OG), the family spec's section 6 experiments at CPU scale:

1. the orthogonality loss of Eq. 1 against its closed form (zero on orthogonal blocks,
   sqrt(2 sum cos^2), invariant to positive block scales, at most sqrt(k (k - 1)));
2. the smoothed 1-NN statistic of Eqs. 2-4 (Djolonga and Krause, which the paper uses):
   closed-form permutation moments against a Monte Carlo, invariances, the hard-count limit,
   the null;
3. the graph loss alone trains an implicit generative model (slow);
4. DAE-OG against DAE-G and the plain autoencoder on 3D-Shapes-like scenes, seeds 1-3 (slow).
"""

import time

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from torch import nn

from geolearn._utils import torch_threads
from geolearn.disentanglement import (
    GraphDivergenceLoss,
    OrthogonalityLoss,
    knn_graph_statistic,
    smoothed_knn_statistic,
)
from geolearn.disentanglement._graph_divergence import _null_moments
from tests.disentanglement.test_disentangle_losses import (
    NORMS,
    cosines,
    marginals,
    naive_statistic,
    orthogonal_blocks,
    two_samples,
)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny tensors: one thread avoids the collapse of two threads beside other work."""
    with torch_threads(1):
        yield



def eight_gaussians(n, rng, radius=2.0, std=0.1):
    """The 2-D ring of 8 Gaussians (radius 2, s.d. 0.1), as a float32 array."""
    angles = 2 * np.pi * rng.randint(0, 8, size=n) / 8
    centres = radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return (centres + std * rng.standard_normal((n, 2))).astype(np.float32)


def energy_distance(X, Y):
    """``2 E|X - Y| - E|X - X'| - E|Y - Y'|`` (V-statistics over all pairs)."""
    X, Y = torch.as_tensor(X, dtype=torch.float64), torch.as_tensor(Y, dtype=torch.float64)
    return float(2 * torch.cdist(X, Y).mean() - torch.cdist(X, X).mean()
                 - torch.cdist(Y, Y).mean())


@pytest.mark.slow
def test_graph_loss_trains_an_implicit_generative_model():
    """Paper Section 3.4.3 / Eq. 5: minimising L_stat = -t (Djolonga and Krause's smoothed
    1-NN test, the mechanism the paper relies on for its implicit generative model) makes
    the model sample indistinguishable from the target.

    Setting (spec experiment 3): target = 8-Gaussian ring (radius 2, s.d. 0.1); generator
    MLP 2 -> 128 -> 128 -> 2 (ELU) on N(0, I_2) input; Adam lr 1e-3, batch 256 per side,
    1,500 steps, ``GraphDivergenceLoss(lambda_=1.0)``. Gates: energy distance to a fresh
    1,000-point target sample < 0.05 (spec reference run: 1.27 -> 0.017), and the fraction
    of cross-sample 1-NN pairs in the pooled 2,000 points > 0.2 (0.5 is perfect mixing;
    about 0 before training).
    """
    rng = np.random.RandomState(0)
    with torch_threads(1):
        torch.manual_seed(0)
        generator = nn.Sequential(nn.Linear(2, 128), nn.ELU(), nn.Linear(128, 128), nn.ELU(),
                                  nn.Linear(128, 2))
        loss_fn = GraphDivergenceLoss(lambda_=1.0)
        optimiser = torch.optim.Adam(generator.parameters(), lr=1e-3)

        def evaluate(seed):
            eval_rng = np.random.RandomState(seed)
            target = eight_gaussians(1000, eval_rng)
            with torch.no_grad():
                fake = generator(torch.as_tensor(eval_rng.standard_normal((1000, 2)),
                                                 dtype=torch.float32)).numpy()
            return (energy_distance(target, fake),
                    knn_graph_statistic(target, fake) / 2000)

        energy_before, cross_before = evaluate(1)
        start = time.perf_counter()
        for _ in range(1500):
            target = torch.from_numpy(eight_gaussians(256, rng))
            noise = torch.randn(256, 2)
            optimiser.zero_grad()
            loss = loss_fn(target, generator(noise))
            loss.backward()
            optimiser.step()
        seconds = time.perf_counter() - start
        energy_after, cross_after = evaluate(2)

    print(f"\nexperiment 3 (8-Gaussian ring, lambda=1.0, 1500 Adam steps, {seconds:.1f} s): "
          f"energy distance {energy_before:.3f} -> {energy_after:.4f} (gate < 0.05); "
          f"cross-sample 1-NN fraction {cross_before:.3f} -> {cross_after:.3f} (gate > 0.2); "
          f"final loss {loss.item():.3f}")
    assert energy_after < 0.05
    assert cross_after > 0.2
    assert energy_before > 0.5 and cross_before < 0.05      # the generator did have to learn


#: Seeds and scenes no other test uses; 16 x 16 scenes keep three seeds of three models
#: inside the family's time budget (about 45 s a seed on one idle core).
DAE_SEEDS = (1, 2, 3)
DAE_EPOCHS = 30
RUNS = {"DAE-OG": dict(alpha_orth=0.1, alpha_graph=0.1),
        "DAE-G": dict(alpha_orth=0.0, alpha_graph=0.1),
        "AE": dict(alpha_orth=0.0, alpha_graph=0.0)}


@pytest.fixture(scope="module")
def dae_runs():
    """DAE-OG, DAE-G (alpha_orth = 0) and the plain autoencoder with the defaults otherwise
    (the paper's L2 reconstruction, lambda, annealing, lr), on 1,500 16 x 16
    3D-Shapes-like scenes (five attributes), per seed."""
    from geolearn.datasets import make_shapes3d_like
    from geolearn.disentanglement import DisentangledAttributeAutoencoder
    from geolearn.disentanglement.metrics import disentanglement_report

    out = {name: [] for name in RUNS}
    for seed in DAE_SEEDS:
        X, factors = make_shapes3d_like(factor_sizes=(1, 5, 5, 4, 3, 5), image_size=16,
                                        random_state=20 + seed)
        for name, weights in RUNS.items():
            t0 = time.perf_counter()
            dae = DisentangledAttributeAutoencoder(
                image_shape=(3, 16, 16), n_latent=105, attribute_dims=(5, 5, 4, 3, 5),
                max_epochs=DAE_EPOCHS, random_state=seed, device="cpu", **weights).fit(X)
            C = dae.block_cosines(X)
            report = disentanglement_report(factors[:, 1:], dae.transform(X))
            run = {"cos": float(C[~np.eye(len(C), dtype=bool)].mean()),
                   "mse": float(np.mean((dae.reconstruct(X) - X) ** 2)), **report}
            out[name].append(run)
            print(f"seed {seed} {name}: mean |cos| {run['cos']:.3f}, MSE {run['mse']:.4f}, "
                  + ", ".join(f"{k} {report[k]:.3f}" for k in report)
                  + f" ({time.perf_counter() - t0:.0f} s)")
    return {name: {k: np.array([r[k] for r in runs]) for k in runs[0]}
            for name, runs in out.items()}


@pytest.mark.slow
def test_orthogonality_makes_the_blocks_orthogonal(dae_runs):
    """Paper Eq. 1 / Section 3.4.2 (the penalty's direct effect), spec experiment 4: mean
    |cos| between the blocks of e(X) < 0.05 with alpha_orth = 0.1, and larger with
    alpha_orth = 0 (DAE-G), in every seed."""
    assert np.all(dae_runs["DAE-OG"]["cos"] < 0.05)
    assert np.all(dae_runs["DAE-G"]["cos"] > 0.05)


@pytest.mark.slow
def test_orthogonality_does_not_cost_reconstruction(dae_runs):
    """Paper Table 2 (5 blocks: DAE-OG MSE 0.014 against DAE-G 0.016, PSNR 19.97 against
    19.48), gated as DAE-OG MSE <= 1.25 x DAE-G's in every seed (spec experiment 4)."""
    assert np.all(dae_runs["DAE-OG"]["mse"] <= 1.25 * dae_runs["DAE-G"]["mse"])


@pytest.mark.slow
def test_the_papers_loss_weights_keep_the_reconstruction(dae_runs):
    """Eq. 6 with the paper's weights (alpha = 0.1, Section 4.1.3): the regularisers shape
    the latent without undoing the autoencoder, DAE-OG MSE <= 1.25 x the plain
    autoencoder's in every seed (with a per-value MSE in place of Eq. 6's L2 norm the
    same weights raised it about fivefold)."""
    assert np.all(dae_runs["DAE-OG"]["mse"] <= 1.25 * dae_runs["AE"]["mse"])


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 1-3, 1,500 16 x 16 scenes, 720 steps, defaults), DAE-OG against DAE-G: "
    "MIG 0.007 +- 0.003 vs 0.007 +- 0.007, MIG-sup 0.56 +- 0.21 vs 0.70 +- 0.05, DCIMIG "
    "0.200 +- 0.028 vs 0.208 +- 0.021, JEMMIG 0.173 +- 0.028 vs 0.231 +- 0.016 (plain AE: "
    "0.014, 0.74, 0.217, 0.253); the paper's own Table 3 has DAE-OG lower in 6 of its 8 cells"))
def test_orthogonality_improves_the_disentanglement_scores(dae_runs):
    """Paper Table 3 ("DAE-OG consistently outperforms DAE-G across the various
    disentanglement metrics"): the mean over seeds of each of MIG, MIG-sup, DCIMIG and
    JEMMIG is higher for DAE-OG than for DAE-G."""
    og, g = dae_runs["DAE-OG"], dae_runs["DAE-G"]
    for run in (og, g):
        assert all(np.all((0 <= run[k]) & (run[k] <= 1))
                   for k in ("mig", "mig_sup", "dcimig", "jemmig"))
    assert all(og[k].mean() > g[k].mean() for k in ("mig", "mig_sup", "dcimig", "jemmig"))


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


def test_shifted_samples_give_a_large_negative_t():
    """Power: two Gaussians half a standard deviation apart (n0 = n1 = 100) have fewer
    cross-sample nearest-neighbour edges than the null expects, so t < -1.645 (a one-sided
    5% test) in every one of 20 repeats; a shift of one standard deviation moves t further."""
    rng = np.random.RandomState(4)

    def t(shift):
        return smoothed_knn_statistic(rng.standard_normal((100, 2)),
                                      rng.standard_normal((100, 2)) + shift, lambda_=0.5)[3]

    half = [t(0.5) for _ in range(20)]
    one = [t(1.0) for _ in range(20)]
    assert max(half) < -1.645
    assert np.mean(one) < np.mean(half)


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
