"""Manifold meta-learning: the MLDG step against plain skorch training, and the metrics.

Spec targets (manifold-meta-learning, section 7, 2-core CPU): 1,000 MLDG iterations of the
16 x 16 x 3 MLP in < 90 s; the conv model on 64 x 64 x 3 in batches of 64 in < 0.5 s per
iteration; ``persistence_wasserstein`` on 1,313 points of dimension 12,288 (H0 + H1) in
< 20 s; ``knn_spectral_distance`` at n = 1,313 in < 3 s.

Peers, in the same run: the same autoencoder trained by a plain skorch ``NeuralNet`` (BCE
summed, Adam, batches of 64: what a user writes without episodes), for the cost of an
MLDG iteration and of geolearn's route for the plain baseline; ripser's diagrams with
GUDHI's Hera Wasserstein distance for ``persistence_wasserstein``; a dense
``kneighbors_graph`` + ``numpy.linalg.eigvalsh`` (netcomp's lambda distance) for the
spectral distance. Run::

    PYTHONPATH=. python benchmarks/bench_meta_learning.py [--contended] [--quick]

(``--contended``: beside one competing CPU-bound process; ``--quick``: a tenth of the MLP
iterations, 2 conv iterations on 150 images, the metrics on 300 images of 32 x 32: the same
paths in seconds, for ``bench_contention --benches``). The peers run on one torch thread, as
geolearn's MLP does.
"""

import sys
import time

import numpy as np
import torch

from benchmarks._runner import compare, contended, header, timeit
from geolearn._utils import torch_threads
from geolearn.datasets import make_rotating_shape_images
from geolearn.meta_learning import MetaManifoldAutoencoder
from geolearn.meta_learning._modules import Autoencoder
from geolearn.meta_learning.metrics import knn_spectral_distance, persistence_wasserstein

N_ITER = 300


def plain_skorch(X, n_steps, image_shape=None, conv_channels=None):
    """The same autoencoder trained by skorch's own loop for about ``n_steps`` Adam steps."""
    from skorch import NeuralNet

    steps_per_epoch = -(-len(X) // 64)
    net = NeuralNet(Autoencoder, module__n_features=X.shape[1], module__n_latent=10,
                    module__image_shape=image_shape, module__conv_channels=conv_channels,
                    criterion=torch.nn.BCEWithLogitsLoss, criterion__reduction="sum",
                    optimizer=torch.optim.Adam, lr=1e-3, batch_size=64,
                    max_epochs=max(1, n_steps // steps_per_epoch), train_split=None,
                    iterator_train__shuffle=True, verbose=0)
    torch.manual_seed(0)
    net.fit(X, X)
    return net.max_epochs * steps_per_epoch


def per_step(fn):
    """Median seconds per training step of ``fn() -> steps run``."""
    box = {}

    def run():
        box["steps"] = fn()

    return timeit(run, repeat=3, warmup=1) / box["steps"]


def training(busy, n_iter=N_ITER):
    X = make_rotating_shape_images(1313, image_size=16, random_state=0).reshape(1313, -1)
    X = X.astype(np.float32)

    def ours(strategy, first_order=False):
        return lambda: MetaManifoldAutoencoder(
            architecture="mlp", episodic_strategy=strategy, first_order=first_order,
            max_epochs=n_iter, random_state=0, device="cpu").fit(X).n_iter_

    with contended(busy):
        with torch_threads(1):
            peer = per_step(lambda: plain_skorch(X, n_iter))
        for name, fn in (("plain baseline (episodic_strategy=None)", ours(None)),
                         ("Meta-C, second order", ours("neighborhood")),
                         ("Meta-C, first order", ours("neighborhood", True)),
                         ("Meta-A, second order", ours("nearest"))):
            t = per_step(fn)
            print(f"MLP 768-256-128-10, batch 64: {name}: {1e3 * t:.2f} ms/iteration, plain "
                  f"skorch {1e3 * peer:.2f} ms/step, speed-up={peer / t:.2f}x", flush=True)
            if name.startswith("Meta-C, second"):
                print(f"  1,000 iterations: {1e3 * t:.1f} s (spec target < 90 s: "
                      f"{'met' if 1e3 * t < 90 else 'NOT met'})", flush=True)


def conv(busy, n_images=300, n_iter=10):
    X = make_rotating_shape_images(n_images, image_size=64, random_state=0).astype(np.float32)
    flat = X.reshape(len(X), -1)
    with contended(busy):
        t = per_step(lambda: MetaManifoldAutoencoder(max_epochs=n_iter, random_state=0,
                                                     device="cpu").fit(X).n_iter_)
        peer = per_step(lambda: plain_skorch(flat, n_iter, (3, 64, 64), (32, 32, 64, 64)))
    print(f"conv 64x64x3, batch 64: Meta-C {t:.3f} s/iteration, plain skorch {peer:.3f} s/step, "
          f"speed-up={peer / t:.2f}x (spec target < 0.5 s: {'met' if t < 0.5 else 'NOT met'})",
          flush=True)


def peer_persistence(X, Y):
    import warnings

    import gudhi.hera
    from ripser import ripser

    warnings.filterwarnings("ignore", message="The input point cloud has more columns")
    total = 0.0
    for k, (a, b) in enumerate(zip(ripser(X, maxdim=1)["dgms"], ripser(Y, maxdim=1)["dgms"])):
        if k == 0:  # leave the essential class out, as persistence_wasserstein does
            a, b = a[np.isfinite(a[:, 1])], b[np.isfinite(b[:, 1])]
        total += gudhi.hera.wasserstein_distance(a, b, order=2, internal_p=np.inf)
    return total


def peer_spectral(X, Y, k=5):
    from sklearn.neighbors import kneighbors_graph

    def spectrum(Z):
        A = kneighbors_graph(Z, k).toarray()
        return np.linalg.eigvalsh(np.maximum(A, A.T))[::-1]

    return float(np.linalg.norm(spectrum(X) - spectrum(Y)))


def metrics(busy, n_points=1313, image_size=64):
    X = make_rotating_shape_images(n_points, image_size=image_size,
                                   random_state=0).reshape(n_points, -1)
    Y = np.clip(X + np.random.default_rng(0).normal(0, 0.02, X.shape), 0, 1)
    ours = persistence_wasserstein(X, Y)["total"]
    # ripser measures distances in float32: agreement to 1e-3, not to rounding
    assert np.isclose(ours, peer_persistence(X, Y), rtol=1e-3), "the peers disagree"
    assert np.isclose(knn_spectral_distance(X, Y), peer_spectral(X, Y), rtol=1e-9)
    with contended(busy):
        t, _, _ = compare(f"persistence_wasserstein, {n_points:,} points in R^{X.shape[1]} "
                          "(H0 + H1) vs ripser + Hera",
                          lambda: persistence_wasserstein(X, Y, n_jobs=2),
                          lambda: peer_persistence(X, Y), repeat=3)
        print(f"  spec target < 20 s: {'met' if t < 20 else 'NOT met'}", flush=True)
        t, _, _ = compare(f"knn_spectral_distance, n = {n_points:,}, k = 5 vs kneighbors_graph "
                          "+ eigvalsh", lambda: knn_spectral_distance(X, Y),
                          lambda: peer_spectral(X, Y), repeat=3)
        print(f"  spec target < 3 s: {'met' if t < 3 else 'NOT met'}", flush=True)


def main(busy=False, quick=False):
    header("manifold meta-learning" + (" (contended: one competing process)" if busy
                                        else " (idle)"))
    t0 = time.perf_counter()
    if quick:  # the spec targets below are then not the spec's sizes
        training(busy, N_ITER // 10)
        conv(busy, n_images=150, n_iter=2)
        metrics(busy, n_points=300, image_size=32)
    else:
        training(busy)
        conv(busy)
        metrics(busy)
    print(f"# {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main(busy="--contended" in sys.argv, quick="--quick" in sys.argv)
