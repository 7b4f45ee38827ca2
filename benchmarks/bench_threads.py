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
(before). ``--blas`` times the BLAS audit's candidates on one BLAS thread
(``small_ops_threads(blas=True)``) against the caller's threads: the per-output least
squares of ``LocalLinearMap`` and CIDM's eigensolver (moved to one thread),
``OnManifoldPGD.generate`` and ``disentanglement_report`` (left on the caller's threads: one
thread gains nothing there)::

    OMP_NUM_THREADS=2 PYTHONPATH=. python -m benchmarks.bench_threads --blas     # ~60 s
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


def blas_figures(repeat):
    """The BLAS audit: one BLAS thread (ours where applied) against the caller's threads."""
    import functools
    import sys
    from contextlib import nullcontext
    from pathlib import Path

    import numpy as np

    from geolearn._utils import blas_threads, small_ops_threads
    from geolearn.disentanglement.metrics import disentanglement_report
    from geolearn.manifold import OnManifoldPGD
    from geolearn.polytopes import LocalLinearMap
    from geolearn.polytopes._local_linear import _rows

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.polytopes._nets import gaussian_net
    from tests.snapshots.snapshot_outputs import _cut_net, _rings

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 50))
    est = LocalLinearMap(gaussian_net([50, 64, 64, 10], 0), gaussian_net([50, 64, 64, 10], 1),
                         device="cpu").fit(X)
    C1, C2 = (_rows(*est._local(which, X), True) for which in ("source", "target"))

    def solve(threads):  # fit's changed step: one least-squares problem per output
        with threads:
            [est._solve(C1[:, j], C2[:, j]) for j in range(C1.shape[1])]
            [np.linalg.matrix_rank(C1[:, j]) for j in range(C1.shape[1])]

    compare("LocalLinearMap fit's 10 least squares, 2,000 rows x 51, one BLAS thread vs caller's",
            lambda: solve(small_ops_threads(blas=True)), lambda: solve(nullcontext()),
            repeat=repeat)

    Xr, yr, _ = _rings()
    attack = OnManifoldPGD(_cut_net(), cidm_params={"n_eigenpairs": 12}, random_state=0,
                           n_steps=25, tangent="jacobian", intrinsic_dim=1).fit(Xr, yr)
    ts = rng.uniform(-np.pi, np.pi, 200)
    starts, y0 = np.c_[np.cos(ts), np.sin(ts)], np.zeros(200, int)

    def generate(threads):
        with threads:
            attack.generate(starts, y=y0)

    from unittest import mock

    from geolearn.datasets import make_torus_points
    from geolearn.manifold import CIDM, _cidm

    for n, solver in ((2000, "dense"), (5000, "ARPACK")):
        torus = make_torus_points(n, R=1.0, r=1.0, random_state=0)
        cidm = CIDM(n_eigenpairs=20, n_neighbors=int(np.ceil(np.log(n) ** 2)), random_state=0)

        def fit_with(threads, fit=cidm.fit, torus=torus):  # the eigensolver's thread block
            with mock.patch.object(_cidm, "busy_blas_threads", threads):
                fit(torus)

        caller = functools.partial(fit_with, nullcontext)
        compare(f"CIDM fit, N = {n} torus points ({solver} eigensolver on one BLAS thread vs "
                "caller's)", functools.partial(fit_with, lambda: blas_threads(1)), caller,
                repeat=repeat)
        compare(f"CIDM fit, N = {n}, the rule (one thread only beside other work) vs caller's",
                lambda fit=cidm.fit, torus=torus: fit(torus), caller, repeat=repeat)

    compare("OnManifoldPGD generate (left alone), 200 starts, one BLAS thread vs caller's",
            lambda: generate(small_ops_threads(blas=True)), lambda: generate(nullcontext()),
            repeat=repeat)
    factors = rng.integers(0, 5, (5000, 5))
    codes = factors @ rng.standard_normal((5, 10)) + rng.standard_normal((5000, 10))

    def report(threads):
        with threads:
            disentanglement_report(factors, codes)

    compare("disentanglement_report (left alone), 5,000 codes, one BLAS thread vs caller's",
            lambda: report(small_ops_threads(blas=True)), lambda: report(nullcontext()),
            repeat=repeat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-deform", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--inference", action="store_true",
                        help="only the inference of small estimators against the caller's "
                             "threads")
    parser.add_argument("--blas", action="store_true",
                        help="only the BLAS audit (one BLAS thread against the caller's)")
    args = parser.parse_args(argv)
    for busy in (False, True):
        title = ("BLAS audit" if args.blas else "inference" if args.inference
                 else "hot paths vs peers")
        header(title + (" (contended: one competing process)" if busy
                        else " (no competing process of ours)"))
        with contended(busy):
            if args.blas:
                blas_figures(args.repeat)
            elif args.inference:
                inference_figures(args.repeat)
            else:
                figures(args.n_deform, args.repeat)


if __name__ == "__main__":
    main()
