"""Representations benchmark: linear maps, attacks and Algorithm 1 against their peers.

Peers in the same run (spec section 7): scikit-learn ``Ridge`` / ``LinearRegression``
for the map (what the paper's lineage used), ``Ridge.predict`` for the transform,
torchattacks 3.5 ``FGSM`` / ``PGD`` for the attacks (``pip install torchattacks``), and
for end-to-end detection a hand-written pipeline of those peers (torchattacks FGSM,
forward hook, ``LinearRegression``, ``StandardScaler`` + ``LinearSVC``).

    python benchmarks/bench_representations.py            # spec sizes
    python benchmarks/bench_representations.py --quick    # small sizes, a smoke run
    OMP_NUM_THREADS=1 python benchmarks/bench_representations.py --issue-rows --repeat 5
    OMP_NUM_THREADS=1 python benchmarks/bench_representations.py --fgsm-rows [--contended]
"""

import argparse
import time
import warnings

import numpy as np
import torch
from sklearn.linear_model import LinearRegression, Ridge
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from benchmarks._runner import compare, header, run_main
from geolearn.adversarial import fgsm, pgd
from geolearn.demo.representations import (
    digits_cnn,
    digits_experiment_data,
    digits_ffnn,
    train_digits_net,
)
from geolearn.representations import LinearEmbeddingMap, cross_model_detection


def bench_maps(m, d, n_transform, repeat):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, d))
    Y = X @ rng.normal(size=(d, d)) / np.sqrt(d) + 0.1 * rng.normal(size=(m, d))
    compare(f"map fit alpha=1 (m={m}, d_A=d_B={d})",
            lambda: LinearEmbeddingMap(alpha=1.0).fit(X, Y),
            lambda: Ridge(alpha=1.0, fit_intercept=False).fit(X, Y), repeat=repeat, warmup=0)
    compare(f"map fit alpha=0, SVD (m={m}, d_A=d_B={d})",
            lambda: LinearEmbeddingMap().fit(X, Y),
            lambda: LinearRegression(fit_intercept=False).fit(X, Y), repeat=repeat, warmup=0)
    emap = LinearEmbeddingMap(alpha=1.0).fit(X, Y)
    ridge = Ridge(alpha=1.0, fit_intercept=False).fit(X, Y)
    del X, Y
    X_big = rng.normal(size=(n_transform, d))
    compare(f"transform ({n_transform} x {d})", lambda: emap.transform(X_big),
            lambda: ridge.predict(X_big), repeat=repeat)


def digits_images(n):
    """``n`` digits images in [0, 1] (the 1,797 digits tiled, with small noise past the first)."""
    X_train, X_test, y_train, y_test = digits_experiment_data(0)
    X, y = np.r_[X_train, X_test], np.r_[y_train, y_test]
    idx = np.arange(n) % len(X)
    noise = np.random.default_rng(0).uniform(-0.02, 0.02, size=(n, *X.shape[1:]))
    noise[: len(X)] = 0
    return np.clip(X[idx] + noise, 0, 1).astype(np.float32), y[idx], (X_train, y_train)


def plain_fgsm(module, X, y, epsilon, batch_size):
    """FGSM as torchattacks writes it (mean cross-entropy, ``x + eps sign(g)`` clamped to
    [0, 1]), as a plain torch loop: the peer where torchattacks is not installed."""
    out = []
    for s in range(0, len(X), batch_size):
        x = X[s:s + batch_size].clone().requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(module(x), y[s:s + batch_size])
        grad, = torch.autograd.grad(loss, x)
        out.append((x + epsilon * grad.sign()).clamp(0, 1).detach())
    return torch.cat(out)


def bench_attacks(n, repeat):
    try:
        import torchattacks
    except ImportError:
        torchattacks = None
    X, y, (X_train, y_train) = digits_images(n)
    cnn = train_digits_net(digits_cnn, X_train, y_train, seed=0, max_epochs=5).module_.eval()
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def peer(attack):
        return [attack(Xt[s:s + 256], yt[s:s + 256]) for s in range(0, n, 256)]

    if torchattacks is None:
        print("# torchattacks is not installed: FGSM against the same loop in plain torch",
              flush=True)
        diff = np.abs(fgsm(cnn, X, y, 0.2) - plain_fgsm(cnn, Xt, yt, 0.2, n).numpy()).max()
        print(f"  FGSM: max |ours - plain torch| = {diff:.1e}", flush=True)
        for batch in (256, n):
            compare(f"FGSM eps=0.2, digits CNN ({n} images, default batch_size=256) vs plain "
                    f"torch in batches of {batch}", lambda: fgsm(cnn, X, y, 0.2),
                    lambda b=batch: plain_fgsm(cnn, Xt, yt, 0.2, b), repeat=repeat)
        return
    compare(f"FGSM eps=0.2, digits CNN ({n} images, batches of 256)",
            lambda: fgsm(cnn, X, y, 0.2), lambda: peer(torchattacks.FGSM(cnn, eps=0.2)),
            repeat=repeat)
    compare(f"PGD eps=0.2, 10 steps, digits CNN ({n} images)",
            lambda: pgd(cnn, X, y, 0.2, step_size=0.05, random_state=0),
            lambda: peer(torchattacks.PGD(cnn, eps=0.2, alpha=0.05, steps=10)),
            repeat=repeat)


def bench_fgsm(n, repeat):
    """Issue 41's FGSM rows: the default ``batch_size=256`` against torchattacks and a plain
    loop, PGD against torchattacks, then the larger batches a memory-derived default would
    take, against 256."""
    import torchattacks

    X, y, (X_train, y_train) = digits_images(n)
    cnn = train_digits_net(digits_cnn, X_train, y_train, seed=0, max_epochs=5).module_.eval()
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)

    def peer(batch):
        attack = torchattacks.FGSM(cnn, eps=0.2)
        return torch.cat([attack(Xt[s:s + batch], yt[s:s + batch]) for s in range(0, n, batch)])

    diff = np.abs(fgsm(cnn, X, y, 0.2) - peer(256).numpy()).max()
    print(f"  FGSM: max |ours - torchattacks| = {diff:.1e}", flush=True)
    for _ in range(5):  # the process's first attacks run slower (allocator, caches): warm both
        fgsm(cnn, X, y, 0.2), peer(256)
    for batch in (256, n):
        compare(f"FGSM eps=0.2, digits CNN ({n} images, default batch_size=256) vs torchattacks "
                f"in batches of {batch}", lambda: fgsm(cnn, X, y, 0.2),
                lambda b=batch: peer(b), repeat=repeat)
    compare("same vs plain torch in batches of 256", lambda: fgsm(cnn, X, y, 0.2),
            lambda: plain_fgsm(cnn, Xt, yt, 0.2, 256), repeat=repeat)
    pgd_peer = torchattacks.PGD(cnn, eps=0.2, alpha=0.05, steps=10)
    compare(f"PGD eps=0.2, 10 steps, digits CNN ({n} images) vs torchattacks in batches of 256",
            lambda: pgd(cnn, X, y, 0.2, step_size=0.05, random_state=0),
            lambda: [pgd_peer(Xt[s:s + 256], yt[s:s + 256]) for s in range(0, n, 256)],
            repeat=repeat)
    for batch in (512, 1024, n):  # peer column: the default 256; > 1x: the larger batch wins
        compare(f"FGSM batch_size={batch} vs the default 256",
                lambda b=batch: fgsm(cnn, X, y, 0.2, batch_size=b),
                lambda: fgsm(cnn, X, y, 0.2), repeat=repeat)


def peer_detection(nets, target, source, X, y, parts):
    """Algorithm 1 written with the peers by hand: torchattacks, hooks, sklearn."""
    import torchattacks

    def embed(module, X):
        store = []
        head = [m for m in module.modules() if isinstance(m, torch.nn.Linear)][-1]
        handle = head.register_forward_pre_hook(lambda mod, inp: store.append(inp[0]))
        with torch.no_grad():
            module(torch.as_tensor(X))
        handle.remove()
        return store[0].numpy().astype(np.float64)

    emb = {}
    for name in (target, source):
        module = nets[name].module_.eval()
        X_adv = torchattacks.FGSM(module, eps=0.2)(torch.as_tensor(X), torch.as_tensor(y))
        emb[name] = embed(module, X), embed(module, X_adv.numpy())
    mp, svm, val = parts["map"], parts["svm"], parts["val"]
    both = lambda name, rows: np.r_[emb[name][0][rows], emb[name][1][rows]]  # noqa: E731
    labels = lambda rows: np.r_[np.zeros(len(rows)), np.ones(len(rows))]  # noqa: E731
    det = make_pipeline(StandardScaler(), LinearSVC(class_weight="balanced", max_iter=10000,
                                                    random_state=0))
    det.fit(both(target, svm), labels(svm))
    lin = LinearRegression(fit_intercept=False).fit(both(source, mp), both(target, mp))
    return roc_auc_score(labels(val), det.decision_function(lin.predict(both(source, val))))


def bench_protocol(repeat):
    t0 = time.perf_counter()
    X_train, X_test, y_train, y_test = digits_experiment_data(0)
    nets = {"CNN": train_digits_net(digits_cnn, X_train, y_train, seed=0),
            "FFNN": train_digits_net(digits_ffnn, X_train, y_train, seed=0)}
    t_train = time.perf_counter() - t0
    res = cross_model_detection(nets, "CNN", X_test, y_test, epsilon=0.2, random_state=0)
    print(f"experiment 1, one seed: training both nets {t_train:.1f}s; AUROC native "
          f"{res.auroc_native:.3f}, FFNN mapped {res.sources['FFNN']['auroc_mapped']:.3f}",
          flush=True)
    compare("Algorithm 1 after training (attacks, embeddings, splits, SVM, map, scores)",
            lambda: cross_model_detection(nets, "CNN", X_test, y_test, epsilon=0.2,
                                          random_state=0),
            lambda: peer_detection(nets, "CNN", "FFNN", X_test, y_test, res.splits),
            repeat=repeat)

    # screening throughput once fitted: map + scaler + SVM, versus the folded dot product
    det = res.detector
    E = np.tile(res.embeddings["FFNN"][1], (100_000 // len(X_test) + 1, 1))[:100_000]
    w, b = det.source_linear_detector("FFNN")
    t_ours, t_folded, _ = compare(
        "screen 100,000 source embeddings: folded w_A (ours) vs map+scaler+SVM",
        lambda: E @ w + b, lambda: det.decision_function(E, source="FFNN"), repeat=repeat)
    print(f"screening throughput: {100_000 / t_ours:,.0f} embeddings/s folded, "
          f"{100_000 / t_folded:,.0f} embeddings/s through the map", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--issue-rows", action="store_true",
                        help="only issue 41's rows (map fits, FGSM)")
    parser.add_argument("--fgsm-rows", action="store_true",
                        help="only issue 41's FGSM rows, against torchattacks (median of 5)")
    args = parser.parse_args(argv)
    header("geolearn.representations / geolearn.adversarial vs sklearn and torchattacks")
    warnings.simplefilter("ignore", UserWarning)
    if args.fgsm_rows:
        bench_fgsm(2_000, max(args.repeat, 5))
        return
    if args.issue_rows:  # issue 41's sizes: the map on 5,000 x 512, FGSM on 2,000 digits
        bench_maps(5_000, 512, 20_000, args.repeat)
        bench_attacks(2_000, args.repeat)
        return
    if args.quick:
        bench_maps(2_000, 256, 10_000, args.repeat)
        bench_attacks(1_000, args.repeat)
    else:
        bench_maps(20_000, 2_048, 100_000, args.repeat)
        bench_attacks(10_000, args.repeat)
    bench_protocol(args.repeat)


if __name__ == "__main__":
    run_main(main)
