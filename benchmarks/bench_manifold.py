"""CIDM fit and out-of-sample transform against pyDiffMap and datafold, and peak memory.

Data: random points on the flat (Clifford) torus in R^4, 20 eigenpairs, the kNN
kernel with k = ceil(ln(N)^2) neighbours for geolearn and pyDiffMap. Peers:
``pydiffmap`` (``bench`` extra) as ``DiffusionMap.from_sklearn(alpha=1,
epsilon="bgh", k=k)``, run in this process; ``datafold`` 2.0 as
``PCManifold.optimize_parameters`` + ``GaussianKernel`` with cut-off +
``DiffusionMaps``, run by ``benchmarks/_datafold_peer.py`` in its own virtual
environment (it needs numpy < 2 and scikit-learn < 1.3) on the same arrays, in
the same run. Each figure is one timed run; ratios are peer time / ours, so above
1 means geolearn is faster.

Run::

    python -m venv /tmp/datafold-env && /tmp/datafold-env/bin/pip install datafold
    OMP_NUM_THREADS=2 python -m benchmarks.bench_manifold --n 5000 20000 100000 \\
        --n-new 100000 --datafold-python /tmp/datafold-env/bin/python
    python -m benchmarks.bench_manifold --peak-memory 100000 200000
    python -m benchmarks.bench_manifold --ambient-dim 256 --n 20000 --n-new 20000
    OMP_NUM_THREADS=1 python -m benchmarks.bench_manifold --transform-only --n 5000 20000 \\
        100000 --n-new 100000 --datafold-python /tmp/datafold-env/bin/python [--contended]
    OMP_NUM_THREADS=1 python -m benchmarks.bench_manifold --seeds --n 20000 --n-new 50000
    python -m benchmarks.bench_manifold --quick   # N = 2,000 and 5,000 queries: seconds

``--quick`` runs the peer comparison's paths at one small size, for ``bench_contention
--benches``.
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from unittest import mock

import numpy as np
from sklearn.datasets import make_swiss_roll

from benchmarks._runner import header, run_main
from geolearn.datasets import make_torus_points
from geolearn.manifold import CIDM
from geolearn.manifold import _neighbors as neighbors

N_EIGENPAIRS = 20


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _cidm(n, **params):
    k = math.ceil(math.log(n) ** 2)
    return CIDM(n_eigenpairs=N_EIGENPAIRS, n_neighbors=k, random_state=0, **params)


def _row(name, ours, peers):
    cells = [f"{name}: ours={ours:.3g}s"]
    for peer, t in peers.items():
        if isinstance(t, str):
            cells.append(f"{peer}: {t}")
        else:
            cells.append(f"{peer}={t:.3g}s ({t / ours:.2f}x)")
    print(", ".join(cells), flush=True)


def _pydiffmap(X, X_new):
    try:
        from pydiffmap.diffusion_map import DiffusionMap
    except ImportError:
        return {"fit": "skipped (pydiffmap is not installed)", "transform": "-"}

    k = math.ceil(math.log(len(X)) ** 2)
    dm = DiffusionMap.from_sklearn(alpha=1.0, epsilon="bgh", k=k, n_evecs=N_EIGENPAIRS - 1)
    return {"fit": _timed(lambda: dm.fit(X)), "transform": _timed(lambda: dm.transform(X_new))}


def _datafold(python, X, X_new, timeout, repeats=1):
    """datafold's times from its own interpreter (transform: best of ``repeats``), or why none."""
    if python is None:
        return {"fit": "skipped (no --datafold-python)", "transform": "skipped"}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.npz")
        np.savez(path, X=X, X_new=X_new)
        peer = os.path.join(os.path.dirname(__file__), "_datafold_peer.py")
        try:
            out = subprocess.run([python, peer, path, str(N_EIGENPAIRS), str(repeats)],
                                 capture_output=True, text=True, timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return {"fit": f"no result in {timeout} s", "transform": "-"}
        except subprocess.CalledProcessError as exc:
            return {"fit": f"failed: {exc.stderr.strip().splitlines()[-1]}", "transform": "-"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def transform_only(sizes, n_new, datafold_python, timeout):
    """One-thread transform against datafold's, same arrays, same run (no pyDiffMap, no ANN).

    Both sides: the best of three calls on a fitted model (single calls on a shared machine
    varied by up to 2x).
    """
    header("CIDM (geolearn.manifold) vs datafold: Nyström transform, one thread")
    X_new = make_torus_points(n_new, R=1.0, r=1.0, random_state=1)
    for n in sizes:
        X = make_torus_points(n, R=1.0, r=1.0, random_state=0)
        ours = _cidm(n).fit(X)
        transform = min(_timed(lambda: ours.transform(X_new)) for _ in range(3))
        df = _datafold(datafold_python, X, X_new, timeout, repeats=3)
        _row(f"transform {n_new} points N={n} k={ours.n_neighbors_}, n_jobs=None", transform,
             {"datafold": df["transform"]})


def compare_sizes(sizes, n_new, datafold_python, timeout, pydiffmap_max):
    header("CIDM (geolearn.manifold) vs pyDiffMap / datafold: fit and Nyström transform")
    X_new = make_torus_points(n_new, R=1.0, r=1.0, random_state=1)
    for n in sizes:
        X = make_torus_points(n, R=1.0, r=1.0, random_state=0)
        ours = _cidm(n)
        fit = _timed(lambda: ours.fit(X))
        transform = _timed(lambda: ours.transform(X_new))
        ours.set_params(n_jobs=2)
        transform_2 = _timed(lambda: ours.transform(X_new))
        ann = _cidm(n, nn_backend="ann", n_jobs=2)
        fit_ann = _timed(lambda: ann.fit(X))
        transform_ann = _timed(lambda: ann.transform(X_new))
        if n <= pydiffmap_max:
            pdm = _pydiffmap(X, X_new)
        else:
            pdm = {"fit": f"not run above N = {pydiffmap_max}", "transform": "-"}
        df = _datafold(datafold_python, X, X_new, timeout)
        k = ours.n_neighbors_
        _row(f"fit N={n} k={k}", fit, {"pydiffmap": pdm["fit"], "datafold": df["fit"]})
        _row(f"fit N={n}, ann + n_jobs=2", fit_ann, {"datafold": df["fit"]})
        for label, t in [("", transform), (", n_jobs=2", transform_2),
                         (", ann + n_jobs=2", transform_ann)]:
            _row(f"transform {n_new} points N={n}{label}", t,
                 {"pydiffmap": pdm["transform"], "datafold": df["transform"]})


def ann_versus_exact(sizes, n_new, ambient_dim):
    """Exact against approximate neighbours where the ANN index pays: high dimension."""
    header(f"CIDM, torus rotated into R^{ambient_dim} plus noise: exact vs approximate neighbours")
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.standard_normal((ambient_dim, 4)))[0]

    def embed(n, seed):
        X = make_torus_points(n, R=1.0, r=1.0, random_state=seed) @ Q.T
        return X + 0.01 * np.random.default_rng(seed).standard_normal(X.shape)

    X_new = embed(n_new, 1)
    for n in sizes:
        X = embed(n, 0)
        exact, ann = _cidm(n, n_jobs=2), _cidm(n, nn_backend="ann", n_jobs=2)
        fits = {"exact": _timed(lambda: exact.fit(X))}
        fit_ann = _timed(lambda: ann.fit(X))
        _row(f"fit N={n} in R^{ambient_dim}, ann + n_jobs=2", fit_ann, fits)
        t_exact = _timed(lambda: exact.transform(X_new))
        t_ann = _timed(lambda: ann.transform(X_new))
        _row(f"transform {n_new} points, ann + n_jobs=2", t_ann, {"exact": t_exact})
        gap = np.abs(ann.eigenvalues_ - exact.eigenvalues_).max()
        print(f"  max |eigenvalue difference| ann vs exact: {gap:.1e}", flush=True)


def peak_memory(sizes):
    """Peak resident memory of one fit per N, each in a fresh interpreter."""
    header("CIDM fit: peak resident memory (fresh process per N)")
    for n in sizes:
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_manifold", "--fit-only",
                              str(n)], capture_output=True, text=True, check=True)
        print(out.stdout.strip(), flush=True)


def fit_only(n):
    X = make_torus_points(n, R=1.0, r=1.0, random_state=0)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cidm = _cidm(n)
    t = _timed(lambda: cidm.fit(X))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"fit N={n} k={cidm.n_neighbors_}: {t:.3g}s, peak RSS {peak / 2**20:.2f} GiB "
          f"(interpreter and data before the fit: {base / 2**20:.2f} GiB)")


def _seed_datasets(n, n_new):
    rng = np.random.default_rng(0)
    for noise in (0.0, 0.3, 1.0):
        X = make_swiss_roll(n + n_new, noise=noise, random_state=0)[0]
        yield f"Swiss roll, noise {noise}", X[:n], X[n:]
    for sd in (0.02, 0.1):
        yield (f"torus in R^4, noise sd {sd}",
               make_torus_points(n, R=1.0, r=1.0, random_state=0) + sd * rng.normal(size=(n, 4)),
               make_torus_points(n_new, R=1.0, r=1.0, random_state=1)
               + sd * rng.normal(size=(n_new, 4)))
    for dim in (3, 2):
        X = rng.normal(size=(n + n_new, dim))
        yield f"Gaussian in R^{dim}", X[:n], X[n:]


def seeded_queries(n, n_new):
    """The exact neighbour query from seed lists against the KD-tree alone, by data set.

    Seeds are forced on (the held-out share below which ``fit`` drops them set to 0) so
    that both sides are timed on every data set; rows in leaf order for both, one thread.
    """
    header("CIDM neighbour query: seeded from the training lists vs the KD-tree, one thread")
    k = math.ceil(math.log(n) ** 2)
    for name, X, Q in _seed_datasets(n, n_new):
        with mock.patch.object(neighbors, "_SEED_MIN_SHARE", 0.0):
            nn = neighbors.ExactNeighbors()
            nn.fit_kneighbors(X, k, n_query=k)
        share = nn.seed_share_
        nearest = nn.nearest(Q)
        order = nn.locality_order(nearest)
        Q, nearest = Q[order], (nearest[0][order], nearest[1][order])
        tree = min(_timed(lambda: nn.kneighbors(Q, k, n_jobs=1)) for _ in range(3))
        seeded = min(_timed(lambda: nn.kneighbors(Q, k, n_jobs=1, nearest=nearest))
                     for _ in range(3))
        print(f"{name}: held-out share {share:.2f}, kept by fit "
              f"{share >= neighbors._SEED_MIN_SHARE}: tree={tree:.3g}s "
              f"seeded={seeded:.3g}s ({tree / seeded:.2f}x)", flush=True)


def main(args):
    if args.seeds:
        seeded_queries(args.n[0], args.n_new)
    elif args.fit_only:
        fit_only(args.fit_only)
    elif args.peak_memory:
        peak_memory(args.peak_memory)
    elif args.ambient_dim:
        ann_versus_exact(args.n, args.n_new, args.ambient_dim)
    elif args.transform_only:
        transform_only(args.n, args.n_new, args.datafold_python, args.timeout)
    else:
        compare_sizes(args.n, args.n_new, args.datafold_python, args.timeout,
                      args.pydiffmap_max)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--n-new", type=int, default=20000)
    parser.add_argument("--datafold-python", default=os.environ.get("DATAFOLD_PYTHON"),
                        help="interpreter of an environment with datafold installed")
    parser.add_argument("--timeout", type=int, default=1200,
                        help="seconds allowed to the datafold peer per N")
    parser.add_argument("--pydiffmap-max", type=int, default=100000,
                        help="largest N given to pydiffmap")
    parser.add_argument("--peak-memory", type=int, nargs="+", metavar="N")
    parser.add_argument("--ambient-dim", type=int,
                        help="compare exact and approximate neighbours on the torus rotated "
                             "into this dimension (instead of the peer comparison)")
    parser.add_argument("--fit-only", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--transform-only", action="store_true",
                        help="only the one-thread transform against datafold's")
    parser.add_argument("--seeds", action="store_true",
                        help="only the seeded neighbour query against the KD-tree, on "
                             "manifolds and blobs (N = the first --n)")
    parser.add_argument("--contended", action="store_true",
                        help="run beside one competing CPU-bound process")
    parser.add_argument("--quick", action="store_true",
                        help="the peer comparison at N = 2,000 with 5,000 queries")
    args = parser.parse_args()
    if args.quick:
        args.n, args.n_new = [2000], 5000
    run_main(main, args)

