"""Scaling out: in memory against blockwise on a ``distributed.LocalCluster(2)``, same run.

Two workloads, each run in memory and blockwise, each in a fresh process that reports its
wall time and peak resident memory (``VmHWM`` after resetting it, as in
``benchmarks/bench_memory.py``):

- CIDM transform of ``--points`` query points (64-D, on a 2-D manifold) with a CIDM fitted
  on 1,000 points. In memory: the whole query array, ``transform`` with ``n_jobs=2``
  threads. Blockwise: a dask array generated chunk by chunk on the workers, transformed by
  dask-ml's ``ParallelPostFit`` and reduced to the column sums (the in-memory run reduces
  its output the same way; the sums are compared).
- DiffeoStability on ``--probes`` probe images (16x16 digits, shifted by a pixel and
  noised, generated chunk by chunk) of a logistic regression. In memory:
  ``stability(X)``. Blockwise: ``partial_stats`` per chunk on the workers, then
  ``stability_from_stats`` (the two R_f must be equal: the script checks it).

The cluster has 2 single-threaded workers in the benchmark's process (``processes=False``),
so that one process's peak memory covers the whole blockwise run. The time ratio
blockwise / in memory is the cost of the cluster; the memory ratio is what it saves.
Each workload runs idle, then beside one competing CPU-bound process.

    PYTHONPATH=. python benchmarks/bench_scaling.py                     # 10^6 points, 10^5 probes
    PYTHONPATH=. python benchmarks/bench_scaling.py --points 200000 --probes 10000
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_scaling.py --tasks stability
    PYTHONPATH=. python benchmarks/bench_scaling.py --quick --idle  # for bench_contention

``--quick``: 20,000 points and 2,560 probes in four chunks each (sizes only: the same runs).
"""

import argparse
import os
import subprocess
import sys

from benchmarks._runner import contended, header

_CASE = """
import sys, time, warnings
import numpy as np
from benchmarks._runner import peak_memory, reset_peak_memory
warnings.simplefilter("ignore")
task, mode, n, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

A = np.random.default_rng(0).normal(size=(2, 64)) * 3
B = np.random.default_rng(1).uniform(0, 2 * np.pi, 64)


def points(size, seed):   # a 2-D manifold in 64-D
    return np.sin(np.random.default_rng(seed).random((size, 2)) @ A + B)


def probes(size, seed):   # digits shifted by up to a pixel, plus noise
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, 1797, size)
    shift = rng.integers(-1, 2, (size, 2))
    out = np.empty((size, 16, 16))
    for s in range(size):
        out[s] = np.roll(DIGITS[idx[s]], tuple(shift[s]), axis=(0, 1))
    return (out + 0.05 * rng.standard_normal(out.shape)).reshape(size, 256)


def blocks(make, n, chunk, width):
    import dask
    import dask.array as da

    sizes = [min(chunk, n - s) for s in range(0, n, chunk)]
    return da.concatenate([da.from_delayed(dask.delayed(make)(m, 1000 + i), (m, width), float)
                           for i, m in enumerate(sizes)])


def in_memory(make, n, chunk):
    return np.concatenate([make(min(chunk, n - s), 1000 + i)
                           for i, s in enumerate(range(0, n, chunk))])


if task == "cidm":
    from geolearn.manifold import CIDM
    model = CIDM(n_eigenpairs=10, random_state=0, n_jobs=2 if mode == "memory" else None)
    model.fit(points(1000, 0))
else:
    from sklearn.linear_model import LogisticRegression
    from geolearn.datasets import load_digits_images
    from geolearn.diffeo import DiffeoStability
    X, y = load_digits_images(upsample=2, return_X_y=True)
    DIGITS = X.reshape(-1, 16, 16)
    model = DiffeoStability(LogisticRegression(max_iter=200), image_shape=(16, 16),
                            random_state=0).fit(X.reshape(len(X), -1), y)

if mode == "cluster":
    import dask
    from dask_ml.wrappers import ParallelPostFit
    from distributed import Client, LocalCluster
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=None)
    client = Client(cluster)


before, start = reset_peak_memory(), time.perf_counter()
if task == "cidm" and mode == "memory":
    value = model.transform(in_memory(points, n, chunk)).sum(axis=0)
elif task == "cidm":
    value = ParallelPostFit(model).transform(blocks(points, n, chunk, 64)).sum(axis=0).compute()
elif mode == "memory":
    value = np.array([model.stability(in_memory(probes, n, chunk)).R])
else:
    Xd = blocks(probes, n, chunk, 256)
    stats = [dask.delayed(model.partial_stats)(b, row_offset=s)
             for b, s in zip(Xd.to_delayed().ravel(), range(0, n, chunk))]
    value = np.array([dask.delayed(model.stability_from_stats)(stats).compute().R])
seconds = time.perf_counter() - start
print(peak_memory() - before, seconds, *value.tolist())
"""


def run(task, mode, n, chunk):
    env = dict(os.environ, PYTHONPATH=os.getcwd(), MALLOC_MMAP_THRESHOLD_="65536")
    out = subprocess.run([sys.executable, "-c", _CASE, task, mode, str(n), str(chunk)],
                         capture_output=True, text=True, check=True, env=env)
    peak, seconds, *value = out.stdout.split()
    return int(peak), float(seconds), [float(v) for v in value]


def compare_modes(what, task, n, chunk):
    mem_peak, mem_s, mem_value = run(task, "memory", n, chunk)
    dask_peak, dask_s, dask_value = run(task, "cluster", n, chunk)
    if task == "stability":
        same = f"R equal: {mem_value == dask_value} ({mem_value[0]:.6g})"
    else:
        diff = max(abs(a - b) / max(abs(a), 1e-300) for a, b in zip(mem_value, dask_value))
        same = f"column sums agree to {diff:.1e} (relative)"
    print(f"{what}: in memory {mem_s:.3g} s, peak {mem_peak / 2**20:.0f} MiB; "
          f"LocalCluster(2) blockwise {dask_s:.3g} s, peak {dask_peak / 2**20:.0f} MiB; "
          f"time ratio blockwise/in-memory {dask_s / mem_s:.2f}x, memory ratio "
          f"in-memory/blockwise {mem_peak / max(dask_peak, 1):.1f}x; {same}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10**6, help="CIDM query points")
    parser.add_argument("--probes", type=int, default=10**5, help="DiffeoStability probes")
    parser.add_argument("--chunk-points", type=int, default=50_000)
    parser.add_argument("--chunk-probes", type=int, default=2_560)
    parser.add_argument("--tasks", nargs="+", choices=("cidm", "stability"),
                        default=("cidm", "stability"), help="workloads to run")
    parser.add_argument("--contended", action="store_true",
                        help="only the run beside a competing process")
    parser.add_argument("--idle", action="store_true", help="only the idle run")
    parser.add_argument("--quick", action="store_true",
                        help="20,000 points and 2,560 probes, four chunks each")
    args = parser.parse_args()
    if args.quick:
        args.points, args.chunk_points, args.probes, args.chunk_probes = 20_000, 5_000, 2560, 640
    if not os.path.exists("/proc/self/clear_refs"):
        sys.exit("Linux /proc only")
    modes = [False] if args.idle else [True] if args.contended else [False, True]
    for busy in modes:
        header("Scaling out: in memory vs LocalCluster(2) blockwise"
               + (" (contended: one competing process)" if busy else " (idle)"))
        with contended(busy):
            if "cidm" in args.tasks:
                compare_modes(f"CIDM transform of {args.points} points (64-D, chunks of "
                              f"{args.chunk_points})", "cidm", args.points, args.chunk_points)
            if "stability" in args.tasks:
                compare_modes(f"DiffeoStability on {args.probes} probes (16x16, chunks of "
                              f"{args.chunk_probes})", "stability", args.probes,
                              args.chunk_probes)


if __name__ == "__main__":
    main()
