"""Run every family's demo section on bundled data and print a short report."""

import argparse
import importlib
import pkgutil
import time
from pathlib import Path

import geolearn.demo as demo
from geolearn.demo._plots import headless_pyplot


def sections():
    """The demo modules, in name order."""
    return [importlib.import_module(f"geolearn.demo.{m.name}")
            for m in sorted(pkgutil.iter_modules(demo.__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m geolearn.demo", description=__doc__)
    parser.add_argument("--out", default="geolearn-demo", help="folder for plots")
    parser.add_argument("--only", nargs="*", help="run only these sections (module names)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    plots = headless_pyplot(out) is not None
    if plots:
        out.mkdir(parents=True, exist_ok=True)
    import geolearn

    print(f"geolearn {geolearn.__version__} demo"
          + (f"; plots in {out}/" if plots else "; install geolearn[plot] for plots"))
    mods = sections()
    if args.only:
        mods = [m for m in mods if m.__name__.rsplit(".", 1)[1] in args.only]
    total = time.perf_counter()
    for i, mod in enumerate(mods, 1):
        print(f"\n[{i}/{len(mods)}] {mod.TITLE}", flush=True)
        t0 = time.perf_counter()
        mod.run(out if plots else None)
        print(f"  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"\ndone in {time.perf_counter() - total:.1f} s")


if __name__ == "__main__":
    main()
