"""Peak memory of RiemannianFeatureGeometry.transform against its max_memory budget.

The reliability audit measured 7.4 GiB for 3x32x32 inputs under max_memory=1 GiB: every
point's Jacobian was held at once. Each case runs in a fresh process; glibc returns every
freed block of 64 KiB or more to the system (MALLOC_MMAP_THRESHOLD_), so the peak counts the
bytes torch and numpy hold, not the allocator's caches. The peer is the same call holding
every point's Jacobian (max_memory large enough for all of them), i.e. the old behaviour.

    PYTHONPATH=. python benchmarks/bench_memory.py
"""

import os
import subprocess
import sys

from benchmarks._runner import contended, header

_CASE = """
import sys, time, warnings
import numpy as np, torch
from benchmarks._runner import peak_memory, reset_peak_memory
from geolearn.riemannian import RiemannianFeatureGeometry
warnings.simplefilter("ignore")
torch.manual_seed(0)
kind, n, max_memory = sys.argv[1], int(sys.argv[2]), int(float(sys.argv[3]))
if kind == "mlp":  # 64 -> 256 features of a hidden layer
    net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(),
                              torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 10))
    X, layer = np.random.default_rng(0).random((n, 64)), 3
else:  # 3x16x16 images, a conv layer of 8 x 16 x 16 features
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Tanh(),
                              torch.nn.Flatten(), torch.nn.Linear(8 * 256, 10))
    X, layer = np.random.default_rng(0).random((n, 3, 16, 16)).astype(np.float32), 1
geo = RiemannianFeatureGeometry(net, layer=layer, max_memory=max_memory).fit(X[:2])
geo.transform(X[:2])

before, start = reset_peak_memory(), time.perf_counter()
geo.transform(X)
print(peak_memory() - before, time.perf_counter() - start)
"""

CASES = [("mlp", 300, 4e6, "MLP 64-256 hidden layer, 300 points, max_memory 3.8 MiB"),
         ("conv", 24, 64e6, "3x16x16 conv layer (2048 features), 24 points, max_memory 61 MiB")]


def peak(kind, n, max_memory):
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1",
               MALLOC_MMAP_THRESHOLD_="65536")
    out = subprocess.run([sys.executable, "-c", _CASE, kind, str(n), str(max_memory)],
                         capture_output=True, text=True, check=True, env=env)
    bytes_, seconds = out.stdout.split()
    return int(bytes_), float(seconds)


def main():
    if not os.path.exists("/proc/self/clear_refs"):
        sys.exit("Linux /proc only")
    for busy in (False, True):
        header("RiemannianFeatureGeometry.transform peak memory"
               + (" (contended: one competing process)" if busy else " (idle)"))
        with contended(busy):
            for kind, n, budget, what in CASES:
                ours, t_ours = peak(kind, n, budget)
                old, t_old = peak(kind, n, 1e12)  # every Jacobian at once, as before
                print(f"{what}: peak {ours / 2**20:.1f} MiB = {ours / budget:.2f}x max_memory "
                      f"({t_ours:.2f} s); all Jacobians at once {old / 2**20:.1f} MiB "
                      f"({t_old:.2f} s); memory ratio {old / ours:.1f}x", flush=True)


if __name__ == "__main__":
    main()
