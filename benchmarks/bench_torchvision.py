"""ResNet-18 at 3x32x32 on the CPU: probing measurements against the model's own passes.

For a measurement that probes a model, the floor is the model's own forward (and backward)
passes over the same images: each figure is the ratio of geolearn's time to those bare passes,
timed here in the same process with the same batch size (goal: at most 1.2x).

- ``R_f`` of 500 probes (``relative_stability``; one deformation and one noise draw per probe):
  3 x 500 forward passes (the probes, deformed, noised). Also against the authors' per-image
  diffeomorphism recipe (``benchmarks/bench_diffeo.py``'s peer) on the same net and ``T``.
- ``NetworkRDM`` over the eight ``BasicBlock`` outputs of 1,000 stimuli: one forward pass
  reaching the last block (the RDMs themselves are timed apart).
- ``integrated_gradients`` of 200 images x 50 steps: 10,000 forward and backward passes.
- PGD-10 of 1,000 images: 10 x 1,000 forward and backward passes.

The network is torchvision's ``resnet18(weights=None, num_classes=10)`` with batch-norm
statistics of a few random batches (so every probe runs it in eval mode, as a trained net).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_torchvision.py [--contended]
[--quick]`` (needs torchvision; ``--quick``: a tenth of the images, one timed call per side, for
``bench_contention --benches``, and without torchvision a message instead of an error;
``--geolearn-only``: the quick run's four geolearn calls alone, one figure, for timing them
beside busy processes with ``bench_contention --bench benchmarks/bench_torchvision.py --args
"--geolearn-only"``). One torch thread for geolearn and the bare passes alike: the diffeomorphism
probes run on one thread anyway, and on the shared 2-core machine two threads collapse under
other load, which would compare thread counts rather than overheads.
"""

import sys
import time
import warnings

import torch

try:
    import torchvision
except ImportError:
    if "--quick" not in sys.argv and "--geolearn-only" not in sys.argv:
        raise
    torchvision = None  # the quick run says so and stops

from benchmarks._runner import compare, header, run_main, timeit
from benchmarks.bench_diffeo import peer_relative_stability
from geolearn.adversarial import pgd
from geolearn.diffeo import DiffeoStability, StabilityWarning
from geolearn.invariance import integrated_gradients
from geolearn.models import as_model
from geolearn.representations import NetworkRDM, compute_rdm

BLOCKS = [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]


def resnet18():
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None, num_classes=10).train()
    with torch.no_grad():
        for _ in range(3):
            net(torch.rand(64, 3, 32, 32))
    return net.eval()


def forward_passes(net, X, batch_size):
    with torch.no_grad():
        for i in range(0, len(X), batch_size):
            net(X[i:i + batch_size])


def forward_backward_passes(net, X, y, batch_size, repeats=1):
    for p in net.parameters():
        p.requires_grad_(False)
    try:
        for _ in range(repeats):
            for i in range(0, len(X), batch_size):
                x = X[i:i + batch_size].clone().requires_grad_(True)
                loss = torch.nn.functional.cross_entropy(net(x), y[i:i + batch_size],
                                                         reduction="sum")
                torch.autograd.grad(loss, x)
    finally:
        for p in net.parameters():
            p.requires_grad_(True)


def versus_floor(name, ours, floor, *, repeat=1):
    """Time ``ours()`` and its bare passes ``floor()``; print and return ``ours / floor``."""
    t_ours = timeit(ours, repeat=repeat, warmup=0)
    t_floor = timeit(floor, repeat=repeat, warmup=0)
    print(f"{name}, ours={t_ours:.4g}s, bare passes={t_floor:.4g}s, "
          f"ratio={t_ours / t_floor:.2f}x", flush=True)
    return t_ours / t_floor


def main(quick=False):
    if torchvision is None:
        print("# bench_torchvision: skipped, torchvision is not installed", flush=True)
        return
    header("geolearn on torchvision's ResNet-18 at 3x32x32 against the model's own passes")
    net = resnet18()
    n, repeat = (100, 1) if quick else (1000, 3)
    rng = torch.Generator().manual_seed(0)
    X = torch.rand(n, 3, 32, 32, generator=rng)
    y = torch.randint(0, 10, (n,), generator=rng)
    Xn, yn = X.numpy(), y.numpy()
    # first calls pay torch's one-time set-up; not part of any figure
    integrated_gradients(net, Xn[:2], yn[:2], steps=2)
    pgd(net, Xn[:2], yn[:2], 8 / 255, n_steps=1, random_state=0)

    n_probes, n_ig = n // 2, n // 5
    probes = Xn[:n_probes]
    est = DiffeoStability(net, random_state=0).fit(probes)

    def ours_R():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StabilityWarning)
            est.stability(probes)

    versus_floor(f"R_f, {n_probes} probes", ours_R,
                 lambda: forward_passes(net, torch.cat([X[:n_probes]] * 3), est.batch_size),
                 repeat=repeat)
    compare(f"R_f, {n_probes} probes, against the authors' recipe (speed-up > 1: geolearn "
            "faster)", ours_R,
            lambda: peer_relative_stability(net, X[:n_probes], est.T_, est.c), repeat=repeat)

    rdm = NetworkRDM(net, layers=BLOCKS)
    versus_floor(f"NetworkRDM, 8 blocks, {n:,} stimuli", lambda: rdm.fit(Xn),
                 lambda: forward_passes(net, X, rdm.batch_size))
    m = as_model(net)
    features = {b: m.features(Xn, layer=b).reshape(n, -1) for b in BLOCKS}
    t = time.perf_counter()
    for F in features.values():
        compute_rdm(F, "correlation")
    print(f"  of which the 8 correlation RDMs alone: {time.perf_counter() - t:.4g}s", flush=True)

    versus_floor(f"integrated_gradients, {n_ig} images x 50 steps",
                 lambda: integrated_gradients(net, Xn[:n_ig], yn[:n_ig], steps=50),
                 lambda: forward_backward_passes(
                     net, torch.repeat_interleave(X[:n_ig], 50, dim=0),
                     torch.repeat_interleave(y[:n_ig], 50), 256))
    versus_floor(f"PGD-10, {n:,} images",
                 lambda: pgd(net, Xn, yn, 8 / 255, n_steps=10, random_state=0),
                 lambda: forward_backward_passes(net, X, y, 256, repeats=10))


def geolearn_only():
    """The quick run's four geolearn calls, without their bare-pass floors (which run on
    torch's default threads whatever geolearn does), timed together."""
    if torchvision is None:
        print("# bench_torchvision: skipped, torchvision is not installed", flush=True)
        return
    net, n = resnet18(), 100
    rng = torch.Generator().manual_seed(0)
    X = torch.rand(n, 3, 32, 32, generator=rng).numpy()
    y = torch.randint(0, 10, (n,), generator=rng).numpy()
    integrated_gradients(net, X[:2], y[:2], steps=2)  # torch's one-time set-up
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        DiffeoStability(net, random_state=0).fit(X[:50]).stability(X[:50])
    NetworkRDM(net, layers=BLOCKS).fit(X)
    integrated_gradients(net, X[:20], y[:20], steps=50)
    pgd(net, X, y, 8 / 255, n_steps=10, random_state=0)
    print(f"geolearn's R_f, NetworkRDM, integrated_gradients and PGD-10 on ResNet-18: "
          f"{time.perf_counter() - t:.3g}s", flush=True)


if __name__ == "__main__":
    if "--geolearn-only" in sys.argv:
        geolearn_only()
    else:
        run_main(main, quick="--quick" in sys.argv)
