"""Time a geolearn function against its peer in the same process.

Each benchmark script calls :func:`compare` once per figure; the line it prints
(``name, ours, peer, ratio``) is what goes into ``benchmarks/RESULTS.md``.
"""

import statistics
import time


def timeit(fn, *, repeat=5, warmup=1):
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compare(name, ours, peer, *, repeat=5, warmup=1):
    """Time ``ours()`` and ``peer()`` and print ``name, ours_s, peer_s, peer/ours, load``.

    The calls alternate (ours, peer, ours, peer, ...) and each side's median is taken, so
    that a change in the machine's load during the run falls on both sides alike. The
    1-minute load average at the end is printed beside the figure. A ratio above 1 means
    geolearn is faster. Returns ``(ours_s, peer_s, ratio)``.
    """
    import os

    for _ in range(warmup):
        ours()
        peer()
    times = ([], [])
    for _ in range(repeat):
        for fn, side in zip((ours, peer), times):
            t0 = time.perf_counter()
            fn()
            side.append(time.perf_counter() - t0)
    t_ours, t_peer = map(statistics.median, times)
    ratio = t_peer / t_ours
    print(f"{name}, ours={t_ours:.4g}s, peer={t_peer:.4g}s, speed-up={ratio:.2f}x, "
          f"load={os.getloadavg()[0]:.2f}", flush=True)
    return t_ours, t_peer, ratio


def _proc_status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


def reset_peak_memory():
    """Restart this process's peak resident memory (Linux's ``VmHWM``) from its current size.

    Returns the current resident size in bytes, so that ``peak_memory() - before`` is
    what the block run in between added at its peak.
    """
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _proc_status("VmRSS:")


def peak_memory():
    """Peak resident memory of this process (``VmHWM``) in bytes since the last reset."""
    return _proc_status("VmHWM:")


def header(title):
    """Print a benchmark's title with the machine it runs on."""
    import os
    import platform

    import torch

    print(f"# {title}\n# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}, threads {torch.get_num_threads()}", flush=True)


def run_main(main, *args, **kwargs):
    """Run a benchmark's ``main``, beside one competing process when ``--contended`` is given.

    The flag is taken off ``sys.argv`` first, so the script's own parser never sees it.
    Comparing the idle and the contended run of one script shows whether a speed-up holds
    on a shared machine (ours and the peer share the same competing process).
    """
    import sys

    busy = "--contended" in sys.argv
    if busy:
        sys.argv.remove("--contended")
        print("# contended: one competing CPU-bound process runs beside this benchmark",
              flush=True)
    with contended(busy):
        return main(*args, **kwargs)


class contended:
    """Run a block beside competing CPU-bound processes (busy loops), as on a shared machine.

    ``with contended(enabled):`` does nothing when ``enabled`` is false, so a benchmark runs the
    same code idle and contended; ``n_processes`` busy loops run beside the block (default 1).
    """

    def __init__(self, enabled=True, *, n_processes=1):
        self.enabled = enabled
        self.n_processes = n_processes
        self.procs = []

    def __enter__(self):
        if self.enabled:
            import subprocess
            import sys

            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                          for _ in range(self.n_processes)]
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        self.procs = []
