"""Every demo section alone, then beside one and two busy processes (issue 41, end to end).

Each section runs as ``python -m geolearn.demo --only SECTION --no-plots`` does (quick mode,
with the demo's own thread settings), in a fresh process per run so that no state (warm
pools, caches, the section's imports) carries over: a fork of a server that has imported
torch, NumPy, SciPy, scikit-learn and skorch and run nothing. A run beside ``k`` competing
processes starts ``k`` busy loops (``benchmarks._runner.contended``) before the child and
stops them after. Its *fair share* on ``n`` cores is ``1 + k / n`` times the idle time (1.5x and 2x on
two cores: the section's two cores shared with ``k`` more busy threads); the goal is at most
1.2 times that (1.8x and 2.4x on two cores).

    PYTHONPATH=. python -m benchmarks.bench_contention [--only SECTION ...] [--repeat N]

A full run over every section with ``--repeat 1`` takes about 5 times the quick demo's idle
time (about 45 s: the sum of the ``CPU s`` column), some 4 minutes on two idle cores. Run it
on an otherwise idle machine: other work skews the idle times and the ratios alike.
"""

import argparse
import multiprocessing
import os
import statistics
from concurrent.futures import ProcessPoolExecutor

from benchmarks._runner import contended, header

#: Competing busy processes of each condition.
COMPETING = (0, 1, 2)

#: The goal: within this factor of the fair-share time.
GOAL = 1.2

#: Each run forks a fresh process from a server that has imported these (and nothing of the
#: demo), so that the imports stay out of the clock and out of the run's total time.
PRELOAD = ["numpy", "scipy", "sklearn", "skorch", "torch"]


def _run_section(name):
    """In the fresh process: wall and CPU seconds of the quick demo section ``name``."""
    import contextlib
    import io
    import time

    from geolearn.demo.__main__ import main

    with contextlib.redirect_stdout(io.StringIO()):
        t0, cpu0 = time.perf_counter(), time.process_time()
        main(["--only", name, "--no-plots"])
        return time.perf_counter() - t0, time.process_time() - cpu0


def time_section(name, n_competing, context):
    """Wall and CPU seconds of a quick run of demo section ``name`` beside ``n_competing`` loops.
    """
    with (contended(n_competing > 0, n_processes=n_competing),
          ProcessPoolExecutor(1, mp_context=context) as pool):
        return pool.submit(_run_section, name).result()


def fair_share(n_competing, n_cores):
    """The fair-share slowdown beside ``n_competing`` busy processes on ``n_cores`` cores."""
    return 1 + n_competing / n_cores


def main(argv=None):
    from geolearn.demo.__main__ import _name, sections

    names = [_name(m) for m in sections()]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=names, metavar="SECTION",
                        help=f"sections to time (default: all of {', '.join(names)})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per section and condition; the median is reported")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1; got {args.repeat}.")
    n_cores = os.cpu_count()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    header("Demo sections alone and beside 1 and 2 busy processes (quick mode)")
    print(f"# OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"load before={os.getloadavg()[0]:.2f}; fair share beside k processes = 1 + k/"
          f"{n_cores}; goal: within {GOAL}x of it", flush=True)
    print(f"{'section':16s} {'idle s':>7s} {'CPU s':>6s} {'+1 s':>7s} {'x idle':>6s} "
          f"{'x fair':>6s} {'+2 s':>7s} {'x idle':>6s} {'x fair':>6s}  within {GOAL}x",
          flush=True)
    totals = dict.fromkeys(COMPETING, 0.0)
    for name in args.only or names:
        # the conditions alternate run by run, so that drift in the load falls on all three
        times, cpu = {k: [] for k in COMPETING}, []
        for _ in range(args.repeat):
            for k in COMPETING:
                wall, seconds = time_section(name, k, context)
                times[k].append(wall)
                if k == 0:
                    cpu.append(seconds)
        med = {k: statistics.median(v) for k, v in times.items()}
        cells, ok = [], []
        for k in COMPETING[1:]:
            ratio = med[k] / med[0]
            fair = ratio / fair_share(k, n_cores)
            cells.append(f"{med[k]:7.2f} {ratio:5.2f}x {fair:5.2f}x")
            ok.append("yes" if fair <= GOAL else "NO")
        for k in COMPETING:
            totals[k] += med[k]
        # CPU time near the idle wall time: the section runs on one core
        print(f"{name:16s} {med[0]:7.2f} {statistics.median(cpu):6.2f} {' '.join(cells)}  "
              f"{'/'.join(ok)}", flush=True)
    cells = [f"{totals[k]:7.2f} {totals[k] / totals[0]:5.2f}x "
             f"{totals[k] / totals[0] / fair_share(k, n_cores):5.2f}x" for k in COMPETING[1:]]
    print(f"{'total':16s} {totals[0]:7.2f} {'':6s} {' '.join(cells)}", flush=True)
    print(f"# load after={os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
