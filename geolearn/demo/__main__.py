"""Run every family's demo section on bundled data and print a short report.

The default is a quick run; ``--full`` trains longer, closer to the papers' settings.
Each section states its measured time before it starts and prints a line per step.
"""

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path

import geolearn.demo as demo
from geolearn.demo._plots import headless_pyplot


def sections():
    """The demo modules, in name order."""
    return [importlib.import_module(f"geolearn.demo.{m.name}")
            for m in sorted(pkgutil.iter_modules(demo.__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]


def _name(mod):
    return mod.__name__.rsplit(".", 1)[1]


def _duration(seconds):
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _parse(argv, mods):
    parser = argparse.ArgumentParser(prog="python -m geolearn.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="geolearn-demo", help="folder for plots")
    parser.add_argument("--no-plots", action="store_true", help="print the report only")
    parser.add_argument("--only", nargs="+", metavar="SECTION",
                        help="run only these sections (see --list)")
    parser.add_argument("--full", action="store_true",
                        help="train longer, closer to the papers (minutes per section)")
    parser.add_argument("--list", action="store_true",
                        help="list the sections with their expected times and exit")
    args = parser.parse_args(argv)
    if args.only:
        unknown = sorted(set(args.only) - {_name(m) for m in mods})
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(_name(m) for m in mods)} (see --list).")
    return args


def main(argv=None):
    """Run the demo; ``argv`` as on the command line (``None``: ``sys.argv[1:]``)."""
    from geolearn._utils import torch_threads

    mods = sections()
    args = _parse(argv, mods)
    if args.list:
        print(f"{'section':16s} {'quick':>6s} {'--full':>7s}  what it shows")
        for mod in mods:
            print(f"{_name(mod):16s} {_duration(mod.SECONDS[0]):>6s} "
                  f"{_duration(mod.SECONDS[1]):>7s}  {mod.TITLE}")
        return
    if args.only:
        mods = [m for m in mods if _name(m) in args.only]
    out = Path(args.out)
    plots = not args.no_plots and headless_pyplot(out) is not None
    if plots:
        out.mkdir(parents=True, exist_ok=True)
    import threadpoolctl

    import geolearn

    mode = int(args.full)
    expected = sum(m.SECONDS[mode] for m in mods)
    where = (f"; plots in {out}/" if plots else
             "" if args.no_plots else "; no plots (install geolearn[plot])")
    full_note = "" if args.full else (
        f"; --full takes about {_duration(sum(m.SECONDS[1] for m in mods))}")
    print(f"geolearn {geolearn.__version__} demo, {len(mods)} section(s), "
          f"{'full' if args.full else 'quick'} mode: about {_duration(expected)} on two idle "
          f"cores (measured; longer beside other busy processes){full_note}{where}")
    total, total_cpu = time.perf_counter(), time.process_time()
    # Small models and many small operations: one thread each for torch and BLAS is the
    # fastest setting here, and it does not collapse beside another busy process
    # (docs/user_guide/threads.md).
    with torch_threads(1), threadpoolctl.threadpool_limits(1):
        for i, mod in enumerate(mods, 1):
            print(f"\n[{i}/{len(mods)}] {_name(mod)}: {mod.TITLE} "
                  f"(about {_duration(mod.SECONDS[mode])})")
            t0, cpu0 = time.perf_counter(), time.process_time()
            mod.run(out if plots else None, full=args.full)
            # CPU time too: on a busy machine it, not the wall time, compares with the estimate
            print(f"  ({time.perf_counter() - t0:.1f} s, {time.process_time() - cpu0:.1f} s CPU)")
    print(f"\ndone in {time.perf_counter() - total:.1f} s "
          f"({time.process_time() - total_cpu:.1f} s CPU)")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each report line as soon as it is printed
    main()
