"""Persistent homology and the topology-study metrics against the libraries users call.

Peers, all in this process and run: giotto-ph's ``ripser_parallel`` called directly
(the ``tda`` extra; geolearn wraps it, so the goal is a ratio >= 0.95, no overhead),
ripser.py and GUDHI (if installed: ``pip install ripser gudhi``), SciPy's
``minimum_spanning_tree`` for H0 and SciPy's assignment on a hand-built cost matrix
for W2 (what the paper did). Data: torus-ellipse images (R^1024) as in the spec's
section 7 targets. Ratios are peer time / ours: above 1 means geolearn is faster.

Run::

    OMP_NUM_THREADS=2 python -m benchmarks.bench_topology
    OMP_NUM_THREADS=2 python -m benchmarks.bench_topology --quick   # smaller sizes
    OMP_NUM_THREADS=1 python -m benchmarks.bench_topology --issue-rows [--contended]  # issue 41
"""

import argparse
import os
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist
from sklearn.metrics import pairwise_distances

from benchmarks._runner import compare, run_main, timeit
from geolearn.datasets import make_torus_ellipse_images
from geolearn.topology import (
    diagram_bottleneck,
    diagram_wasserstein,
    empirical_wasserstein2,
    persistence_diagrams,
)

THREADS = 2


def _optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def header(threads=THREADS):
    import platform

    load = os.getloadavg()
    print(f"# geolearn.topology benchmarks\n# {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{threads} threads for ours and giotto-ph", flush=True)


def compare_alternating(name, ours, peer, *, repeat=3):
    """Like ``compare``, but runs ours and the peer in turns so load changes hit both.

    Prints wall-clock medians and, as a load-independent check of overhead, the medians
    of this process's CPU time (all threads).
    """
    wall, cpu = {"ours": [], "peer": []}, {"ours": [], "peer": []}
    for _ in range(repeat):
        for key, fn in (("ours", ours), ("peer", peer)):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[key].append(time.perf_counter() - w0)
            cpu[key].append(time.process_time() - c0)
    a, b = (float(np.median(wall[k])) for k in ("ours", "peer"))
    ca, cb = (float(np.median(cpu[k])) for k in ("ours", "peer"))
    print(f"{name}, ours={a:.4g}s, peer={b:.4g}s, speed-up={b / a:.2f}x; CPU time "
          f"ours={ca:.4g}s, peer={cb:.4g}s, ratio={cb / ca:.2f} (alternating, median of "
          f"{repeat}), load={os.getloadavg()[0]:.2f}", flush=True)
    return a, b, b / a


def timed(label, fn, target=None, repeat=3):
    t = timeit(fn, repeat=repeat, warmup=0)
    note = f" (target < {target:g}s: {'met' if t < target else 'NOT met'})" if target else ""
    print(f"{label}, {t:.4g}s{note}", flush=True)
    return t


def bench_persistence(sizes):
    from gph import ripser_parallel

    ripser = _optional("ripser")
    n0, n1, n2 = sizes["h0"], sizes["h1"], sizes["h2"]

    X0 = make_torus_ellipse_images(n0, random_state=0).astype(np.float64)
    timed(f"H0 of {n0} points in R^1024 (ours)",
          lambda: persistence_diagrams(X0, maxdim=0), target=5)
    compare_alternating(f"H0 of {n0} points in R^1024 vs giotto-ph ripser_parallel(maxdim=0)",
                        lambda: persistence_diagrams(X0, maxdim=0),
                        lambda: ripser_parallel(X0, maxdim=0, n_threads=THREADS), repeat=3)
    compare(f"H0 of {n0} points in R^1024 vs scipy csgraph MST on the dense distances",
            lambda: persistence_diagrams(X0, maxdim=0),
            lambda: minimum_spanning_tree(pairwise_distances(X0)), repeat=1, warmup=0)

    X1 = make_torus_ellipse_images(n1, random_state=0).astype(np.float64)
    timed(f"H0+H1 of {n1} points in R^1024 (ours)",
          lambda: persistence_diagrams(X1, maxdim=1, n_jobs=THREADS), target=10, repeat=1)
    compare_alternating(
        f"H0+H1 of {n1} points in R^1024 vs giotto-ph ripser_parallel (goal >= 0.95)",
        lambda: persistence_diagrams(X1, maxdim=1, n_jobs=THREADS),
        lambda: ripser_parallel(X1, maxdim=1, n_threads=THREADS), repeat=5)
    if ripser is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compare(f"H0+H1 of {n1} points in R^1024 vs ripser.py (one thread)",
                    lambda: persistence_diagrams(X1, maxdim=1, n_jobs=THREADS),
                    lambda: ripser.ripser(X1, maxdim=1), repeat=1, warmup=0)
    else:
        print("ripser.py: not installed, skipped")

    X2 = make_torus_ellipse_images(n2, random_state=1).astype(np.float64)
    compare_alternating(
        f"H0-H2 of {n2} torus images, thresh 9 vs giotto-ph ripser_parallel (goal >= 0.95)",
        lambda: persistence_diagrams(X2, maxdim=2, thresh=9.0, n_jobs=THREADS),
        lambda: ripser_parallel(X2, maxdim=2, thresh=9.0, n_threads=THREADS), repeat=3)

    rng = np.random.RandomState(0)
    small = rng.uniform(size=(200, 3))
    compare_alternating("H0+H1 of 200 points in R^3 vs giotto-ph ripser_parallel (fixed costs)",
                        lambda: persistence_diagrams(small, maxdim=1, n_jobs=THREADS),
                        lambda: ripser_parallel(small, maxdim=1, n_threads=THREADS),
                        repeat=31)
    for n, maxdim in ((40, 2), (100, 1)):
        Xs = rng.uniform(size=(n, 3))
        compare(f"exact backend, {n} points in R^3, maxdim {maxdim} vs giotto-ph",
                lambda: persistence_diagrams(Xs, maxdim=maxdim, backend="exact"),
                lambda: ripser_parallel(Xs, maxdim=maxdim, n_threads=THREADS), repeat=3)


def bench_issue_rows(repeat):
    """Issue 41's rows: thresholded H2 on 800 points (and the fixed costs of H1 on 200),
    one thread on each side, against giotto-ph and ripser.py called on the points."""
    from gph import ripser_parallel

    from geolearn.datasets import make_torus_points

    ripser = _optional("ripser")
    X = make_torus_points(800, embedding="r3", random_state=0)
    for thresh in (1.0, 0.6):
        ours = lambda t=thresh: persistence_diagrams(X, maxdim=2, thresh=t, n_jobs=1)
        name = f"H0-H2 of 800 torus points in R^3, thresh {thresh}"
        compare_alternating(f"{name} vs giotto-ph ripser_parallel", ours,
                            lambda t=thresh: ripser_parallel(X, maxdim=2, thresh=t, n_threads=1),
                            repeat=repeat)
        if ripser is not None:
            compare_alternating(f"{name} vs ripser.py", ours,
                                lambda t=thresh: ripser.ripser(X, maxdim=2, thresh=t),
                                repeat=repeat)
    small = np.random.RandomState(0).uniform(size=(200, 3))
    compare_alternating("H0+H1 of 200 points in R^3 vs giotto-ph ripser_parallel (fixed costs)",
                        lambda: persistence_diagrams(small, maxdim=1, n_jobs=1),
                        lambda: ripser_parallel(small, maxdim=1, n_threads=1), repeat=3 * repeat)


def _random_diagram(m, rng):
    b = rng.uniform(0, 5, m)
    return np.c_[b, b + rng.exponential(1.0, m)]


def bench_distances(m):
    rng = np.random.RandomState(0)
    A, B = _random_diagram(m, rng), _random_diagram(m, rng)
    timed(f"diagram_wasserstein p=2, {m} points per diagram (ours)",
          lambda: diagram_wasserstein(A, B), target=5)
    persim = _optional("persim")
    if persim is not None:
        w_ours, w_peer = diagram_wasserstein(A, B, p=1), persim.wasserstein(A, B)
        print(f"# W1 ours {w_ours:.6f}, persim {w_peer:.6f}")
        compare(f"diagram_wasserstein p=1, {m} points vs persim.wasserstein",
                lambda: diagram_wasserstein(A, B, p=1), lambda: persim.wasserstein(A, B),
                repeat=3)
        compare(f"diagram_bottleneck, {m} points vs persim.bottleneck",
                lambda: diagram_bottleneck(A, B), lambda: persim.bottleneck(A, B), repeat=3)
    else:
        print("persim: not installed, skipped")
    gudhi = _optional("gudhi")
    if gudhi is not None:
        from gudhi.hera import wasserstein_distance

        w_ours = diagram_wasserstein(A, B, p=1)
        w_hera = wasserstein_distance(A, B, order=1, internal_p=np.inf, delta=1e-4)
        print(f"# W1 ours {w_ours:.6f}, hera (relative error <= 1e-4) {w_hera:.6f}; "
              f"bottleneck ours {diagram_bottleneck(A, B):.6f}, "
              f"gudhi {gudhi.bottleneck_distance(A, B, 0.0):.6f}")
        compare(f"diagram_wasserstein p=1, {m} points vs gudhi.hera (delta 1e-4)",
                lambda: diagram_wasserstein(A, B, p=1),
                lambda: wasserstein_distance(A, B, order=1, internal_p=np.inf, delta=1e-4),
                repeat=3)
        compare(f"diagram_bottleneck, {m} points vs gudhi.bottleneck_distance (exact)",
                lambda: diagram_bottleneck(A, B), lambda: gudhi.bottleneck_distance(A, B, 0.0),
                repeat=3)
    else:
        print("gudhi: not installed, skipped")


def bench_distance_backends(sizes):
    """diagram_wasserstein's two backends: the exact assignment against GUDHI's hera."""
    if _optional("gudhi") is None:
        print("gudhi: not installed, backends not compared")
        return
    warnings.filterwarnings("ignore", "diagram_wasserstein on")  # the exact one's cost
    rng = np.random.RandomState(0)
    for m in sizes:
        A, B = _random_diagram(m, rng), _random_diagram(m, rng)
        exact = diagram_wasserstein(A, B, backend="exact")
        hera = diagram_wasserstein(A, B, backend="gudhi")
        print(f"# W2 of {m} points a diagram: exact {exact:.9f}, gudhi {hera:.9f} (relative "
              f"difference {abs(hera - exact) / exact:.1e})")
        compare(f"diagram_wasserstein p=2, {m} points a diagram, backend='exact' vs 'gudhi'",
                lambda A=A, B=B: diagram_wasserstein(A, B, backend="exact"),
                lambda A=A, B=B: diagram_wasserstein(A, B, backend="gudhi"), repeat=1, warmup=0)


def _w2_by_hand(X, Y):
    C = cdist(X, Y, "sqeuclidean")
    r, c = linear_sum_assignment(C)
    return np.sqrt(C[r, c].mean())


def bench_w2(n):
    X = make_torus_ellipse_images(n, random_state=0).astype(np.float64)
    Y = make_torus_ellipse_images(n, random_state=1).astype(np.float64)
    timed(f"empirical_wasserstein2 n={n} in R^1024 (ours)",
          lambda: empirical_wasserstein2(X, Y), target=15, repeat=1)
    compare(f"empirical_wasserstein2 n={n} vs cdist + linear_sum_assignment",
            lambda: empirical_wasserstein2(X, Y), lambda: _w2_by_hand(X, Y), repeat=1,
            warmup=0)
    print(f"# W2 ours {empirical_wasserstein2(X, Y):.6f}, by hand {_w2_by_hand(X, Y):.6f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--issue-rows", action="store_true",
                        help="only issue 41's rows (one thread each side; about 20 s)")
    parser.add_argument("--repeat", type=int, default=11, help="alternating calls of --issue-rows")
    parser.add_argument("--only", nargs="*",
                        choices=["persistence", "distances", "backends", "w2", "data"])
    args = parser.parse_args(argv)
    sizes = (dict(h0=1000, h1=300, h2=300, m=300, backends=(300, 1000), w2=500) if args.quick
             else dict(h0=5000, h1=1000, h2=1500, m=1000, backends=(1000, 2000, 4000),
                       w2=3000))
    start = time.perf_counter()
    header(1 if args.issue_rows else THREADS)
    if args.issue_rows:
        bench_issue_rows(args.repeat)
        print(f"# done ({time.perf_counter() - start:.0f}s)")
        return
    parts = args.only or ["data", "persistence", "distances", "backends", "w2"]
    if "data" in parts:
        timed("make_torus_ellipse_images(10000)",
              lambda: make_torus_ellipse_images(10000, random_state=0), target=2)
    if "persistence" in parts:
        bench_persistence(sizes)
    if "distances" in parts:
        bench_distances(sizes["m"])
    if "backends" in parts:
        bench_distance_backends(sizes["backends"])
    if "w2" in parts:
        bench_w2(sizes["w2"])
    print(f"# done ({time.perf_counter() - start:.0f}s)")


if __name__ == "__main__":
    run_main(main)
