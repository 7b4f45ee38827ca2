"""Invariance family: training overhead of DA / IR / WT and the cost of the metrics.

Peers, in the same run:
- plain skorch ``NeuralNetClassifier`` training of the same MLP (no augmentation,
  no regulariser): the issue's goal is that IR costs at most ``|G| + 1`` forward
  passes per batch and nothing more;
- Captum's ``IntegratedGradients.attribute`` (midpoint rule, the same 50 steps)
  for the integrated gradients behind SI.

Setting: spec E1 on sklearn digits (800 training images 12x12, 9 classes, MLP
5 x 128, batch 128). Run::

    OMP_NUM_THREADS=2 python -m benchmarks.bench_invariance [--epochs 150]
"""

import argparse
import time

import numpy as np
import torch
from skorch import NeuralNetClassifier
from sklearn.model_selection import train_test_split

from benchmarks._runner import compare, header, run_main
from geolearn.datasets import make_transforming_mnist
from geolearn.invariance import InvariantClassifier, integrated_gradients
from geolearn.invariance._nets import build_mlp


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    header("invariance: InvariantClassifier training and metrics (spec E1 setting)")
    X, y = make_transforming_mnist(group="rot4", transform=False, return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    common = dict(group="rot4", hidden_layer_sizes=(128,) * 5, batch_size=128,
                  max_epochs=args.epochs, device="cpu", random_state=0)
    kw = dict(repeat=args.repeat, warmup=0)

    def plain():
        torch.manual_seed(0)
        module = build_mlp((1, 12, 12), 9, (128,) * 5, "relu")
        NeuralNetClassifier(module, lr=8e-4, optimizer=torch.optim.Adam, batch_size=128,
                            max_epochs=args.epochs, train_split=None,
                            iterator_train__shuffle=True, verbose=0).fit(Xtr, ytr)

    plain()  # warm-up: first optimizer import, thread pools
    fitted = {}
    for name, params in (("DA", dict()), ("IR nu=1", dict(nu=1.0)),
                         ("WT", dict(weight_tying=True))):
        def ours(params=params, name=name):
            fitted[name] = InvariantClassifier(**common, **params).fit(Xtr, ytr)

        compare(f"fit {name} ({args.epochs} epochs) vs plain skorch MLP", ours, plain, **kw)

    clf = fitted["DA"]
    t = np.searchsorted(clf.classes_, yte)
    Xt = torch.from_numpy(np.ascontiguousarray(Xte))

    def captum_ig():
        from captum.attr import IntegratedGradients

        module = clf.module_.eval()
        return IntegratedGradients(module).attribute(
            Xt, baselines=0.0, target=torch.from_numpy(t), n_steps=50,
            method="riemann_middle", internal_batch_size=1024).detach().numpy()

    def ours_ig():
        return integrated_gradients(clf, Xte, t, steps=50, batch_size=1024)

    compare(f"integrated gradients, {len(Xte)} images x 50 steps vs Captum", ours_ig, captum_ig,
            repeat=3)
    diff = np.abs(ours_ig() - captum_ig()).max() / np.abs(captum_ig()).max()
    print(f"# max relative difference to Captum (same midpoint rule): {diff:.1e}")
    t0 = time.perf_counter()
    report = clf.invariance_report(Xte, yte)
    print(f"# invariance_report on {len(Xte)} test images: {time.perf_counter() - t0:.2f}s "
          f"(SI {report.SI:.3f}, LI {report.LI:.2f})", flush=True)


if __name__ == "__main__":
    run_main(main)
