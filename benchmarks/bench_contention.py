"""Every demo section alone, then beside one and two busy processes (issue 41, end to end).

Each section runs as ``python -m geolearn.demo --only SECTION --no-plots`` does (quick mode,
with the demo's own thread settings), in a fresh subprocess per run so that no state (warm
pools, caches, imported modules) carries over; the child imports torch, NumPy, SciPy,
scikit-learn and skorch before its clock starts. A run beside ``k`` competing processes
starts ``k`` busy loops (``benchmarks._runner.contended``) before the child and stops them
after. Its *fair share* on ``n`` cores is ``1 + k / n`` times the idle time (1.5x and 2x on
two cores: the section's two cores shared with ``k`` more busy threads); the goal is at most
1.2 times that (1.8x and 2.4x on two cores).

    PYTHONPATH=. python -m benchmarks.bench_contention [--only SECTION ...] [--repeat N]

A full run over every section with ``--repeat 1`` takes about 5.5 times the quick demo's
idle time plus a few seconds of imports per child: under 8 minutes on two idle cores. Run it
on an otherwise idle machine: other work skews the idle times and the ratios alike.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks._runner import contended, header

#: Times one section in a fresh interpreter; prints its wall time in seconds, last.
CHILD = """
import contextlib, io, sys, time
import numpy, scipy, sklearn, skorch, torch  # shared by every section: outside the clock
from geolearn.demo.__main__ import main
with contextlib.redirect_stdout(io.StringIO()):
    t0 = time.perf_counter()
    main(["--only", sys.argv[1], "--no-plots"])
    seconds = time.perf_counter() - t0
print(seconds)
"""

#: The repository root, put first on the child's path (the checkout's geolearn, not another).
ROOT = str(Path(__file__).resolve().parents[1])

#: Competing busy processes of each condition.
COMPETING = (0, 1, 2)

#: The goal: within this factor of the fair-share time.
GOAL = 1.2


def time_section(name, n_competing):
    """Wall seconds of one quick run of demo section ``name`` beside ``n_competing`` loops."""
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    with contended(n_competing > 0, n_processes=n_competing):
        done = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": path})
    if done.returncode:
        raise RuntimeError(f"section {name} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


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
    header("Demo sections alone and beside 1 and 2 busy processes (quick mode)")
    print(f"# OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"load before={os.getloadavg()[0]:.2f}; fair share beside k processes = 1 + k/"
          f"{n_cores}; goal: within {GOAL}x of it", flush=True)
    print(f"{'section':16s} {'idle s':>7s} {'+1 s':>7s} {'x idle':>6s} {'x fair':>6s} "
          f"{'+2 s':>7s} {'x idle':>6s} {'x fair':>6s}  within {GOAL}x", flush=True)
    totals = dict.fromkeys(COMPETING, 0.0)
    for name in args.only or names:
        # the conditions alternate run by run, so that drift in the load falls on all three
        times = {k: [] for k in COMPETING}
        for _ in range(args.repeat):
            for k in COMPETING:
                times[k].append(time_section(name, k))
        med = {k: statistics.median(v) for k, v in times.items()}
        cells, ok = [], []
        for k in COMPETING[1:]:
            ratio = med[k] / med[0]
            fair = ratio / fair_share(k, n_cores)
            cells.append(f"{med[k]:7.2f} {ratio:5.2f}x {fair:5.2f}x")
            ok.append("yes" if fair <= GOAL else "NO")
        for k in COMPETING:
            totals[k] += med[k]
        print(f"{name:16s} {med[0]:7.2f} {' '.join(cells)}  {'/'.join(ok)}", flush=True)
    cells = [f"{totals[k]:7.2f} {totals[k] / totals[0]:5.2f}x "
             f"{totals[k] / totals[0] / fair_share(k, n_cores):5.2f}x" for k in COMPETING[1:]]
    print(f"{'total':16s} {totals[0]:7.2f} {' '.join(cells)}", flush=True)
    print(f"# load after={os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
