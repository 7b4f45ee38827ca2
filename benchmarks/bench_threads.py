"""Hot paths against their peers, without and then beside one competing CPU-bound process.

Each figure is measured twice in one run: first with no process of ours competing, then
beside one busy loop (``benchmarks._runner.contended``), so the two ratios are comparable.
Peers as in ``bench_diffeo`` and ``bench_riemannian`` (the authors' per-image deformation
loop, the paper's batch-summed autograd Jacobian), run with torch's default threads as
their users run them. geolearn's hot paths pick one torch thread themselves.

    OMP_NUM_THREADS=2 PYTHONPATH=. python -m benchmarks.bench_threads
    OMP_NUM_THREADS=2 PYTHONPATH=. python -m benchmarks.bench_threads --inference

``--inference`` times the inference of small gradient-trained estimators and SVBF's
distances (one torch thread, issue 41) against the same steps on the caller's two threads
(before).
"""

import argparse
import warnings

import torch

from benchmarks._runner import compare, contended, header
from benchmarks.bench_diffeo import lenet, peer_deform, peer_relative_stability
from benchmarks.bench_riemannian import _grid, _sigmoid_layer, peer_log_volume_batch_summed
from geolearn.diffeo import StabilityWarning, deform, relative_stability, sample_displacement_fields
from geolearn.riemannian import RiemannianFeatureGeometry


def figures(n_deform, repeat):
    torch.manual_seed(0)
    n, T, c = 32, 0.005, 3
    X = torch.rand(n_deform, 1, n, n)
    compare(f"{n_deform} deformations 32x32 bilinear vs per-image loop",
            lambda: deform(X, sample_displacement_fields(n, T, c, size=n_deform, random_state=0)),
            lambda: [peer_deform(x, T, c, "linear") for x in X], repeat=repeat)

    P = torch.rand(500, 1, 28, 28)
    net = lenet()

    def ours_R():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StabilityWarning)
            relative_stability(net, P, T=T, c=c, average="median_per_unit", random_state=0)

    compare("R_f, 500 probes 28x28, LeNet", ours_R,
            lambda: peer_relative_stability(net, P, T, c), repeat=repeat)

    layer = _sigmoid_layer(2, 250)
    G = _grid(10_000)
    geo = RiemannianFeatureGeometry(layer).fit(G)
    compare("log volume, 10,000 points, 2->250 sigmoid, vs batch-summed jacobian",
            lambda: geo.transform(G), lambda: peer_log_volume_batch_summed(layer, G),
            repeat=repeat)


def inference_figures(repeat):
    """Inference on one torch thread (ours) against the caller's threads (before issue 41)."""
    import numpy as np

    from geolearn.datasets import load_digits_images
    from geolearn.generative import GridVAE
    from geolearn.invariance import InvariantClassifier

    X, y = load_digits_images(return_X_y=True)
    X = X.reshape(len(X), -1).astype(np.float32)
    vae = GridVAE(max_epochs=1, device="cpu", random_state=0).fit(X)
    clf = InvariantClassifier(hidden_layer_sizes=(64,), image_shape=(8, 8), max_epochs=1,
                              device="cpu", random_state=0).fit(X, y)

    def vae_calls(vae):
        vae.transform(X)
        vae.score_samples(X)

    # ``__wrapped__`` is the method without the thread rule: as it ran before, on the
    # caller's threads
    compare(f"GridVAE transform + score_samples, {len(X)} rows of 64, vs caller's threads",
            lambda: vae_calls(vae),
            lambda: (GridVAE.transform.__wrapped__(vae, X),
                     GridVAE.score_samples.__wrapped__(vae, X)), repeat=repeat)
    from geolearn.subspaces import SVBF
    from geolearn.subspaces._grassmann import distance_from_angles

    rng = np.random.default_rng(0)
    sets = np.linalg.qr(rng.standard_normal((2000, 50, 4)))[0]  # 2,000 bases of R^50
    svbf = SVBF(2, random_state=0).fit(sets[:200])

    def svbf_before():  # distance's steps without the thread rule
        bases, dims = svbf._bases(sets, reset=False)
        thetas, _ = svbf._angles(bases, dims)
        return svbf._per_step(thetas, lambda t: distance_from_angles(t, "chordal", 2))

    compare("SVBF distance, 2,000 sets of 4 vectors in R^50, vs caller's threads",
            lambda: svbf.distance(sets), svbf_before, repeat=repeat)
    X10 = np.tile(X, (10, 1))
    compare(f"InvariantClassifier predict_proba, {len(X10)} rows, vs caller's threads",
            lambda: clf.predict_proba(X10),
            lambda: InvariantClassifier.predict_proba.__wrapped__(clf, X10), repeat=repeat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-deform", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--inference", action="store_true",
                        help="only the inference of small estimators against the caller's "
                             "threads")
    args = parser.parse_args(argv)
    for busy in (False, True):
        header(("inference" if args.inference else "hot paths vs peers")
               + (" (contended: one competing process)" if busy
                  else " (no competing process of ours)"))
        with contended(busy):
            if args.inference:
                inference_figures(args.repeat)
            else:
                figures(args.n_deform, args.repeat)


if __name__ == "__main__":
    main()
