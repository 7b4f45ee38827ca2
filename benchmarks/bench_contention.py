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

``--bench SCRIPT ...`` times benchmark scripts of ``benchmarks/`` the same way instead of
the demo's sections: each script runs once per condition as ``python -m benchmarks.NAME
ARGS`` in a fresh interpreter (its imports included), and its wall time is the figure, so
that every benchmark can be measured beside other work; ``--args`` is passed to each::

    PYTHONPATH=. python -m benchmarks.bench_contention --bench bench_rdm.py --args "--issue-rows"

``--benches [SCRIPT ...]`` times the quick configuration of each script of
:data:`QUICK_BENCHES` (all when none is named) the same way: the same code paths as the
script's full run at sizes that take seconds; a script whose peer library is not installed is
listed as skipped. All ten take about 150 s idle, some 9 minutes for the three conditions::

    PYTHONPATH=. python -m benchmarks.bench_contention --benches

A full run over every section with ``--repeat 1`` takes about 5 times the quick demo's idle
time (about 45 s: the sum of the ``CPU s`` column), some 4 minutes on two idle cores. Run it
on an otherwise idle machine: other work skews the idle times and the ratios alike.
"""

import argparse
import importlib.util
import multiprocessing
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks._runner import contended, header

#: Competing busy processes of each condition.
COMPETING = (0, 1, 2)

#: The goal: within this factor of the fair-share time.
GOAL = 1.2

#: The quick configuration of each benchmark script for ``--benches``: its arguments, and the
#: module it needs beyond geolearn's dependencies (the run is skipped without it).
QUICK_BENCHES = {
    "bench_diffeo.py": ("--quick", None),
    "bench_disentangle_losses.py": ("--quick", None),
    "bench_manifold.py": ("--quick", None),
    "bench_manifold_risk.py": ("--quick", "torchattacks"),
    "bench_meta_learning.py": ("--quick", "gudhi"),
    "bench_models.py": ("", None),  # the full run takes seconds
    "bench_ood.py": ("--quick", None),
    "bench_polytopes.py": ("--quick", None),
    "bench_scaling.py": ("--quick --idle", "dask_ml"),  # the script's own contended run off
    "bench_torchvision.py": ("--quick", "torchvision"),
}

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


def time_script(script, args, n_competing):
    """Wall and CPU seconds of one run of benchmark ``script`` (``args`` passed to it) in a
    fresh interpreter beside ``n_competing`` loops; its output is discarded."""
    module = f"benchmarks.{Path(script).stem}"
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    with contended(n_competing > 0, n_processes=n_competing):
        # the busy loops are reaped after this, so the children's CPU time is the script's
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", module, *args], cwd=root, env=env, check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)


def fair_share(n_competing, n_cores):
    """The fair-share slowdown beside ``n_competing`` busy processes on ``n_cores`` cores."""
    return 1 + n_competing / n_cores


def main(argv=None):
    from geolearn.demo.__main__ import _name, sections

    names = [_name(m) for m in sections()]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=names, metavar="SECTION",
                        help=f"sections to time (default: all of {', '.join(names)})")
    parser.add_argument("--bench", nargs="+", metavar="SCRIPT",
                        help="time these benchmark scripts of benchmarks/ (e.g. bench_rdm.py) "
                             "instead of the demo's sections")
    parser.add_argument("--args", default="", metavar="ARGS",
                        help='arguments for each --bench script, as one string ("--quick")')
    parser.add_argument("--benches", nargs="*", choices=list(QUICK_BENCHES), metavar="SCRIPT",
                        help="time the quick configuration of these benchmark scripts (default: "
                             f"all of {', '.join(QUICK_BENCHES)})")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per section and condition; the median is reported")
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--args" in argv[:-1]:  # argparse would read a value such as "--quick" as an option
        at = argv.index("--args")
        argv[at:at + 2] = [f"--args={argv[at + 1]}"]
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1; got {args.repeat}.")
    if args.bench and args.only:
        parser.error("--bench and --only cannot be combined: --only names demo sections.")
    if args.benches is not None and (args.bench or args.only):
        parser.error("--benches times its own scripts: it cannot be combined with --bench or "
                     "--only.")
    if args.args and not args.bench:
        parser.error("--args is passed to --bench scripts: give --bench.")
    n_cores = os.cpu_count()
    skipped = {}
    if args.benches is not None:
        rows = {}
        for script in args.benches or QUICK_BENCHES:
            script_args, needs = QUICK_BENCHES[script]
            label = f"{script} {script_args}".strip()
            if needs is not None and importlib.util.find_spec(needs) is None:
                skipped[label] = f"skipped: {needs} is not installed"
                continue
            split = shlex.split(script_args)
            rows[label] = lambda k, script=script, split=split: time_script(script, split, k)
        header("Benchmark scripts' quick configurations alone and beside 1 and 2 busy "
               "processes")
    elif args.bench:
        here = Path(__file__).resolve().parent
        missing = [b for b in args.bench if not (here / f"{Path(b).stem}.py").is_file()]
        if missing:
            parser.error(f"--bench: no such script in benchmarks/: {', '.join(missing)}")
        script_args = shlex.split(args.args)
        rows = {b: lambda k, b=b: time_script(b, script_args, k) for b in args.bench}
        header(f"Benchmark scripts alone and beside 1 and 2 busy processes (args: "
               f"{args.args or 'none'})")
    else:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        rows = {name: lambda k, name=name: time_section(name, k, context)
                for name in args.only or names}
        header("Demo sections alone and beside 1 and 2 busy processes (quick mode)")
    print(f"# OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
          f"load before={os.getloadavg()[0]:.2f}; fair share beside k processes = 1 + k/"
          f"{n_cores}; goal: within {GOAL}x of it", flush=True)
    width = max(16, *map(len, rows), *map(len, skipped))
    label = "section" if args.benches is None and not args.bench else "script"
    print(f"{label:{width}s} {'idle s':>7s} {'CPU s':>6s} {'+1 s':>7s} {'x idle':>6s} "
          f"{'x fair':>6s} {'+2 s':>7s} {'x idle':>6s} {'x fair':>6s}  within {GOAL}x",
          flush=True)
    totals = dict.fromkeys(COMPETING, 0.0)
    for name, run in rows.items():
        # the conditions alternate run by run, so that drift in the load falls on all three
        times, cpu = {k: [] for k in COMPETING}, []
        try:
            for _ in range(args.repeat):
                for k in COMPETING:
                    wall, seconds = run(k)
                    times[k].append(wall)
                    if k == 0:
                        cpu.append(seconds)
        except subprocess.CalledProcessError as exc:  # the other scripts' rows still come
            print(f"{name:{width}s} failed (exit status {exc.returncode})", flush=True)
            continue
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
        print(f"{name:{width}s} {med[0]:7.2f} {statistics.median(cpu):6.2f} {' '.join(cells)}  "
              f"{'/'.join(ok)}", flush=True)
    for name, why in skipped.items():
        print(f"{name:{width}s} {why}", flush=True)
    if not any(totals.values()):
        return
    cells = [f"{totals[k]:7.2f} {totals[k] / totals[0]:5.2f}x "
             f"{totals[k] / totals[0] / fair_share(k, n_cores):5.2f}x" for k in COMPETING[1:]]
    print(f"{'total':{width}s} {totals[0]:7.2f} {'':6s} {' '.join(cells)}", flush=True)
    print(f"# load after={os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
