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
    OMP_NUM_THREADS=1 python -m benchmarks.bench_invariance --issue-rows {ir,wt} [--contended]

``--issue-rows`` times issue 41's row only: IR (``nu=1``) or WT training against the plain
torch loop of the same module, optimiser, batches and loss (:func:`plain_fit`), without skorch.
"""

import argparse
import time

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from skorch import NeuralNetClassifier

from benchmarks._runner import compare, header, run_main
from geolearn.datasets import make_transforming_mnist
from geolearn.invariance import InvariantClassifier, integrated_gradients
from geolearn.invariance._nets import build_invariant_module, build_mlp, invariance_error


def plain_fit(clf, X, y, n_epochs, seed=0):
    """``clf``'s training as the loop users write by hand: same module, Adam, batches, loss.

    ``clf`` is a fitted ``InvariantClassifier`` (its group, normalisation and settings);
    each batch is augmented by a random group element per row and, with ``nu > 0``, pushed
    through the network with its ``|G'|`` transforms in one concatenated batch, as ours.
    """
    torch.manual_seed(seed)
    group = clf.group_
    mlp = {"image_shape": clf.image_shape_, "hidden_layer_sizes": clf.hidden_layer_sizes,
           "activation": clf.activation, "group": group, "weight_tying": clf.weight_tying,
           "group_pool": clf.group_pool}
    module = build_invariant_module(module=None, n_classes=len(clf.classes_), mean=clf.mean_,
                                    std=clf.std_, mlp=mlp)
    opt = torch.optim.Adam(module.parameters(), lr=clf.lr)
    X = torch.as_tensor(X, dtype=torch.float32)
    y = torch.as_tensor(np.searchsorted(clf.classes_, y))
    others = group.non_identity
    module.train()
    for _ in range(n_epochs):
        for idx in torch.randperm(len(X)).split(clf.batch_size):
            x, t = group.apply_random(X[idx])[0], y[idx]
            if clf.nu:
                n = len(x)
                logits = module(torch.cat([x] + [group[k](x) for k in others]))
                penalty = invariance_error(logits[:n], logits[n:].view(len(others), n, -1),
                                           clf.invariance_loss).mean()
                loss = torch.nn.functional.cross_entropy(logits[:n], t) + clf.nu * penalty
            else:
                loss = torch.nn.functional.cross_entropy(module(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return module


def issue_rows(row, Xtr, ytr, epochs, repeat):
    """Issue 41's row: IR (``nu=1``) or WT training against :func:`plain_fit`, one thread."""
    params = {"ir": {"nu": 1.0}, "wt": {"weight_tying": True}}[row]
    clf = InvariantClassifier(group="rot4", hidden_layer_sizes=(128,) * 5, batch_size=128,
                              max_epochs=epochs, device="cpu", random_state=0, **params)
    compare(f"InvariantClassifier {row.upper()} fit ({epochs} epochs, {len(Xtr)} images 12x12, "
            "MLP 5 x 128, batch 128) vs plain torch loop", lambda: clf.fit(Xtr, ytr),
            lambda: plain_fit(clf, Xtr, ytr, epochs), repeat=repeat, warmup=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--issue-rows", choices=("ir", "wt"))
    args = parser.parse_args()
    header("invariance: InvariantClassifier training and metrics (spec E1 setting)")
    X, y = make_transforming_mnist(group="rot4", transform=False, return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    if args.issue_rows:
        issue_rows(args.issue_rows, Xtr, ytr, epochs=20, repeat=5)
        return
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
