"""Graph divergence loss and the k-NN permutation test against their reference algorithms.

Spec target (disentangling-ae.md, section 7): ``GraphDivergenceLoss`` forward + backward for
n0 = n1 = 256, d = 3,072 in under 30 ms on 2 cores. Peers:

- the smoothed 1-NN statistic as torch-two-sample's ``SmoothKNNStatistic`` computes it
  (Djolonga's reference code, re-implemented here in current torch, step for step:
  ``pdist`` by norm expansion with ``sqrt(1e-5 + |.|)``, masked select of the off-diagonal to
  ``(n, n - 1)``, softmax, masked scatter back to ``(n, n)``, and its mean/variance
  formulas), on the same tensors, gradients w.r.t. the model sample;
- ``scipy.stats.permutation_test`` of the hard 1-NN cross-edge count (the statistic refits
  the neighbour search on every relabelled split) against ``knn_permutation_pvalue``
  (one k-NN table, relabellings vectorised), same number of permutations. Run::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_disentangle_losses.py \\
        [--contended] [--quick]

(``--contended``: beside one competing CPU-bound process; ``--quick``: 200 permutations, the
epochs on 300 scenes, fewer repeats: the same paths in seconds, for ``bench_contention
--benches``).
"""

import sys

import numpy as np
import torch
from scipy.stats import permutation_test

from benchmarks._runner import compare, contended, header
from geolearn.disentanglement import (
    GraphDivergenceLoss,
    knn_graph_statistic,
    knn_permutation_pvalue,
)


def reference_pdist(sample_1, sample_2, eps=1e-5):
    """torch-two-sample ``util.pdist`` with ``norm=2``."""
    n_1, n_2 = sample_1.size(0), sample_2.size(0)
    norms_1 = torch.sum(sample_1 ** 2, dim=1, keepdim=True)
    norms_2 = torch.sum(sample_2 ** 2, dim=1, keepdim=True)
    norms = norms_1.expand(n_1, n_2) + norms_2.transpose(0, 1).expand(n_1, n_2)
    distances_squared = norms - 2 * sample_1.mm(sample_2.t())
    return torch.sqrt(eps + torch.abs(distances_squared))


def reference_smooth_knn(sample_1, sample_2, alphas):
    """torch-two-sample ``SmoothKNNStatistic(n_1, n_2, cuda=False, k=1)(...)``: ``-t``."""
    n_1, n_2 = sample_1.size(0), sample_2.size(0)
    n = n_1 + n_2
    indices = (1 - torch.eye(n)).bool()
    sample_12 = torch.cat((sample_1, sample_2), 0)
    diffs = reference_pdist(sample_12, sample_12)
    diffs = torch.masked_select(diffs, indices).view(n, n - 1)
    margs_ = None
    for alpha in alphas:
        margs_a = torch.softmax(-alpha * diffs, dim=1)
        margs_ = margs_a if margs_ is None else margs_ + margs_a
    margs_ = margs_ / len(alphas)
    margs = torch.zeros(n, n).masked_scatter(indices, margs_.view(-1))
    t_stat = margs[:n_1, n_1:].sum() + margs[n_1:, :n_1].sum()
    m = margs.sum()
    mean = 2 * m * n_1 * n_2 / (n * (n - 1))
    nbs_sum = ((margs.sum(0).view(-1) + margs.sum(1).view(-1)) ** 2).sum()
    flip_sum = (margs * margs.transpose(1, 0)).sum()
    chi_1 = n_1 * n_2 / (n * (n - 1))
    chi_2 = 4 * (n_1 - 1) * (n_2 - 1) / ((n - 2) * (n - 3))
    var = (chi_1 * (1 - chi_2) * nbs_sum + chi_1 * chi_2 * (margs ** 2).sum()
           + chi_1 * chi_2 * flip_sum + chi_1 * (chi_2 - 4 * chi_1) * m ** 2)
    std = torch.sqrt(1e-5 + var)
    return -(t_stat - mean) / std


def main(busy=False, quick=False):
    header("disentangling losses: graph divergence loss and k-NN permutation test"
           + (" (contended: one competing process)" if busy else " (idle)"))
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(256, 3072, generator=g)
    x1 = (torch.randn(256, 3072, generator=g) + 0.05).requires_grad_()
    loss = GraphDivergenceLoss(lambda_=0.1)

    def ours():
        x1.grad = None
        loss(x0, x1).backward()

    def peer():
        x1.grad = None
        reference_smooth_knn(x0, x1, [1 / 0.1]).backward()

    with torch.no_grad():
        a, b = loss(x0, x1).item(), reference_smooth_knn(x0, x1, [1 / 0.1]).item()
    print(f"values: ours -t = {a:.5f}, torch-two-sample algorithm -t = {b:.5f}", flush=True)

    rng = np.random.RandomState(0)
    X0, X1 = rng.standard_normal((200, 10)), rng.standard_normal((200, 10)) + 0.15

    X = np.concatenate([X0, X1])
    index0, index1 = np.arange(200), np.arange(200, 400)   # scipy permutes 1-D samples: rows
    n_permutations, repeat = (200, 1) if quick else (1000, 3)

    def scipy_test():
        stat = lambda a, b: knn_graph_statistic(X[a], X[b])   # refits the neighbours each call
        return permutation_test((index0, index1), stat, permutation_type="independent",
                                vectorized=False, n_resamples=n_permutations, alternative="less",
                                random_state=0).pvalue

    pvalue = knn_permutation_pvalue(X0, X1, n_permutations=n_permutations, random_state=0)
    print(f"p-values: ours {pvalue:.4f}, scipy {scipy_test():.4f} (hard 1-NN count, "
          f"{n_permutations} permutations)", flush=True)

    with contended(busy):
        ours_s, _, _ = compare(
            "GraphDivergenceLoss forward+backward n0 = n1 = 256, d = 3072, lambda = 0.1 vs "
            "torch-two-sample SmoothKNNStatistic algorithm", ours, peer, repeat=3 * repeat + 1,
            warmup=2)
        compare(f"knn_permutation_pvalue n0 = n1 = 200, d = 10, k = 1, {n_permutations} "
                "permutations vs scipy.stats.permutation_test (refit per permutation)",
                lambda: knn_permutation_pvalue(X0, X1, n_permutations=n_permutations,
                                               random_state=0),
                scipy_test, repeat=repeat, warmup=1)
    print(f"spec target: < 30 ms: {'met' if ours_s < 0.030 else 'NOT met'} "
          f"({1e3 * ours_s:.1f} ms)", flush=True)
    epochs(busy, n_scenes=300 if quick else None, repeat=repeat)


def epochs(busy, n_scenes=None, repeat=3):
    """One DAE-OG epoch on 1,500 scenes of 32 x 32 x 3 against the plain autoencoder's.

    ``n_scenes`` keeps that many of the 1,500 (all when None).
    """
    from geolearn.datasets import make_shapes3d_like
    from geolearn.disentanglement import DisentangledAttributeAutoencoder

    X, _ = make_shapes3d_like(factor_sizes=(1, 5, 5, 4, 3, 5), image_size=32, random_state=0)
    X = X[:n_scenes]

    def fit(alpha):
        return lambda: DisentangledAttributeAutoencoder(
            image_shape=(3, 32, 32), n_latent=105, attribute_dims=(5, 5, 4, 3, 5),
            alpha_orth=alpha, alpha_graph=alpha, graph_distance_scale="median", max_epochs=2,
            random_state=0, device="cpu").fit(X)

    with contended(busy):
        ours, _, _ = compare(f"DisentangledAttributeAutoencoder, 2 epochs on {len(X):,} images "
                             "of 32 x 32 x 3: DAE-OG vs the same network without its two losses",
                             fit(0.1), fit(0.0), repeat=repeat, warmup=1)
    print(f"spec target: one DAE-OG epoch < 2 s: {'met' if ours / 2 < 2 else 'NOT met'} "
          f"({ours / 2:.2f} s)", flush=True)


if __name__ == "__main__":
    main(busy="--contended" in sys.argv, quick="--quick" in sys.argv)
