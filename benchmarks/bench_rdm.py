"""RDM benchmark: RDMs, their comparison, the stimulus bootstrap and Fiedler accuracy.

Peers in the same run (what users run today): rsatoolbox 0.3 ``calc_rdm`` (correlation),
``compare`` (spearman), and its pattern bootstrap ``eval_bootstrap_pattern`` with a fixed
model (the same resampling: stimuli drawn with replacement, duplicate-stimulus pairs
dropped, noise ceiling off); networkx ``fiedler_vector`` (default ``tracemin_pcg``) on the
graph of the clipped adjacency ``max(1 - R, 0)``, plus the same sign-split accuracy.
Each block runs idle, then beside one competing CPU-bound process.

    OMP_NUM_THREADS=2 PYTHONPATH=. python benchmarks/bench_rdm.py            # spec sizes
    OMP_NUM_THREADS=2 PYTHONPATH=. python benchmarks/bench_rdm.py --quick    # smoke run
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_rdm.py --issue-rows --repeat 5
"""

import argparse
import contextlib
import io
import warnings

import numpy as np

from benchmarks._runner import compare, contended, header
from geolearn.representations import (
    bootstrap_compare_rdms,
    compare_rdms,
    compute_rdm,
    fiedler_accuracy,
    fiedler_pairwise,
)


def clustered(m, n, n_classes, rng, spread=3.0):
    """Responses of ``m`` stimuli in ``n_classes`` clusters (class-structured RDMs)."""
    labels = np.arange(m) % n_classes
    centres = rng.normal(size=(n_classes, n))
    return centres[labels] + spread * rng.normal(size=(m, n)), labels


def bench_rdm(m, n, repeat):
    from rsatoolbox.data import Dataset
    from rsatoolbox.rdm import calc_rdm

    V = np.random.default_rng(0).normal(size=(m, n))
    ours = compute_rdm(V, condensed=True)
    theirs = calc_rdm(Dataset(V), method="correlation").get_vectors()[0]
    print(f"  max |ours - rsatoolbox| = {np.abs(ours - theirs).max():.1e}", flush=True)
    t, _, _ = compare(f"compute_rdm correlation ({m} x {n} float64) vs calc_rdm",
                      lambda: compute_rdm(V), lambda: calc_rdm(Dataset(V), method="correlation"),
                      repeat=repeat, warmup=0)
    return t


def bench_compare(m, repeat):
    from rsatoolbox.rdm import RDMs
    from rsatoolbox.rdm import compare as rsa_compare

    rng = np.random.default_rng(1)
    V, _ = clustered(m, 256, 10, rng)
    a = compute_rdm(V, condensed=True)
    b = compute_rdm(V + 2.0 * rng.normal(size=V.shape), condensed=True)
    ra, rb = RDMs(a[None]), RDMs(b[None])
    diff = abs(compare_rdms(a, b, "spearman") - rsa_compare(ra, rb, "spearman")[0, 0])
    print(f"  |ours - rsatoolbox| = {diff:.1e}", flush=True)
    t, _, _ = compare(f"compare_rdms spearman (m={m}, {a.size:,} pairs) vs compare",
                      lambda: compare_rdms(a, b, "spearman"),
                      lambda: rsa_compare(ra, rb, "spearman"), repeat=repeat)
    return t


def bench_issue_rows(m_sq, n_sq, m_tau, m_pearson, repeat):
    """Issue 41's rows: squared-Euclidean RDMs, Kendall tau-a and Pearson comparisons."""
    from rsatoolbox.data import Dataset
    from rsatoolbox.rdm import RDMs, calc_rdm
    from rsatoolbox.rdm import compare as rsa_compare

    V = np.random.default_rng(4).normal(size=(m_sq, n_sq))
    diff = np.abs(compute_rdm(V, "sqeuclidean_per_feature", condensed=True)
                  - calc_rdm(Dataset(V), method="euclidean").get_vectors()[0]).max()
    print(f"  sqeuclidean: max |ours - rsatoolbox| = {diff:.1e}", flush=True)
    compare(f"compute_rdm sqeuclidean_per_feature ({m_sq} x {n_sq}) vs calc_rdm euclidean",
            lambda: compute_rdm(V, "sqeuclidean_per_feature"),
            lambda: calc_rdm(Dataset(V), method="euclidean"), repeat=repeat)
    for m, ours_m, theirs_m in ((m_tau, "kendall_tau_a", "tau-a"),
                                (m_pearson, "pearson", "corr")):
        rng = np.random.default_rng(5)
        W, _ = clustered(m, 256, 10, rng)
        a = compute_rdm(W, condensed=True)
        b = compute_rdm(W + 2.0 * rng.normal(size=W.shape), condensed=True)
        ra, rb = RDMs(a[None]), RDMs(b[None])
        diff = abs(compare_rdms(a, b, ours_m) - rsa_compare(ra, rb, theirs_m)[0, 0])
        print(f"  {ours_m}: |ours - rsatoolbox| = {diff:.1e}", flush=True)
        compare(f"compare_rdms {ours_m} (m={m}, {a.size:,} pairs) vs compare {theirs_m}",
                lambda a=a, b=b, m_=ours_m: compare_rdms(a, b, m_),
                lambda ra=ra, rb=rb, m_=theirs_m: rsa_compare(ra, rb, m_), repeat=repeat)


def bench_bootstrap(m, n_boot, repeat):
    from rsatoolbox.inference import eval_bootstrap_pattern
    from rsatoolbox.model import ModelFixed
    from rsatoolbox.rdm import RDMs

    rng = np.random.default_rng(2)
    V, _ = clustered(m, 64, 5, rng)
    a = compute_rdm(V, condensed=True)
    b = compute_rdm(V + 2.0 * rng.normal(size=V.shape), condensed=True)
    data, model = RDMs(a[None]), ModelFixed("model", RDMs(b[None]))

    def peer(method):
        np.random.seed(0)  # rsatoolbox draws from numpy's global RNG
        with contextlib.redirect_stderr(io.StringIO()):  # its tqdm progress bar
            return eval_bootstrap_pattern(model, data, method=method, N=n_boot,
                                          boot_noise_ceil=False).evaluations.ravel()

    out = {}
    for ours_m, theirs_m in (("spearman", "spearman"), ("pearson", "corr")):
        dist = bootstrap_compare_rdms(a, b, ours_m, n_boot=n_boot, random_state=0).distribution
        print(f"  {ours_m}: max |ours - rsatoolbox| over the {n_boot} resamples = "
              f"{np.nanmax(np.abs(dist - peer(theirs_m))):.1e} (same draws)", flush=True)
        out[ours_m], _, _ = compare(
            f"bootstrap_compare_rdms {ours_m}, {n_boot} resamples (m={m}) vs "
            "eval_bootstrap_pattern",
            lambda m_=ours_m: bootstrap_compare_rdms(a, b, m_, n_boot=n_boot, random_state=0),
            lambda m_=theirs_m: peer(m_), repeat=repeat, warmup=0)
    return out


def bench_fiedler(m, repeat):
    import networkx as nx

    rng = np.random.default_rng(3)
    V, labels = clustered(m, 128, 2, rng, spread=4.0)
    R = compute_rdm(V)

    def peer():
        A = np.maximum(1.0 - R, 0.0)
        np.fill_diagonal(A, 0.0)
        e2 = nx.fiedler_vector(nx.from_numpy_array(A), seed=0)
        side = e2 >= 0
        hits = np.sum(side == (labels == 1))
        return max(hits, m - hits) / m

    ours = fiedler_accuracy(R, labels)
    print(f"  accuracy: ours {ours:.4f}, networkx {peer():.4f}", flush=True)
    t, _, _ = compare(f"fiedler_accuracy (m={m}) vs networkx fiedler_vector + sign split",
                      lambda: fiedler_accuracy(R, labels), peer, repeat=repeat)
    return t


def bench_bca(per_digit, n_boot):
    """The BCa part of the spec's acceptance experiment 3 (digits pixels and pure noise, 5
    pairs, stratified bootstrap + jackknife): no peer publishes a stratified BCa Fiedler
    interval, so this figure is absolute."""
    import time

    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    noise = np.random.default_rng(0).normal(size=X.shape)
    sub = np.concatenate([np.flatnonzero(y == d)[:per_digit] for d in range(10)])
    pairs = [(0, 1), (3, 8), (1, 7), (4, 9), (5, 6)]
    start = time.perf_counter()
    for V in (X, noise):
        fiedler_pairwise(compute_rdm(V[sub]), y[sub], pairs=pairs, n_boot=n_boot,
                         random_state=0)
    seconds = time.perf_counter() - start
    print(f"fiedler_pairwise BCa, 2 x 5 pairs of {per_digit} + {per_digit} digits, "
          f"n_boot={n_boot}: {seconds:.2f} s", flush=True)
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--issue-rows", action="store_true",
                        help="only issue 41's rows (sqeuclidean RDM, tau-a, Pearson)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # rsatoolbox's deprecation and tqdm noise
    sizes = ((300, 512, 300, 60, 200, 200) if args.quick
             else (2_000, 4_096, 2_000, 200, 1_000, 1_000))
    m_rdm, n_rdm, m_cmp, m_boot, n_boot, m_fied = sizes
    if args.issue_rows:
        for busy in (False, True):
            header("issue 41 rows" + (" (contended)" if busy else " (idle)"))
            with contended(busy):
                bench_issue_rows(1_000, 1_024, 500, m_cmp, args.repeat)
        return
    for busy in (False, True):
        header("geolearn.representations RDMs vs rsatoolbox and networkx"
               + (" (contended: one competing process)" if busy else " (idle)"))
        with contended(busy):
            t_rdm = bench_rdm(m_rdm, n_rdm, args.repeat)
            t_cmp = bench_compare(m_cmp, args.repeat)
            bench_bootstrap(m_boot, n_boot, max(1, args.repeat - 1))
            t_fied = bench_fiedler(m_fied, args.repeat)
            t_bca = bench_bca(20 if args.quick else 60, 100 if args.quick else 300)
        for what, t, target in (("compute_rdm 2,000 x 4,096", t_rdm, 1.5),
                                ("compare_rdms spearman m = 2,000", t_cmp, 2.0),
                                ("fiedler_accuracy m = 1,000", t_fied, 0.5),
                                ("BCa part of acceptance experiment 3", t_bca, 60.0)):
            print(f"spec target {what} < {target} s: {'met' if t < target else 'NOT met'} "
                  f"({t:.3f} s)", flush=True)


if __name__ == "__main__":
    main()
