"""Diffusion-inpainting OOD detection: AUROC and wall time against the detectors users run today.

The reduced-scale reproduction of "Leveraging diffusion models for unsupervised
out-of-distribution detection on image manifold" (LMD): an ``InpaintingOODDetector`` trained
on scikit-learn's 8x8 digits (MLP denoiser 3 x 256, 250 epochs, batch 128, lr 1e-3,
alternating 2 x 2-pixel checkerboard ``n_blocks=4``, 10 reconstructions, 100 respaced
steps, MSE), on three pairs: digits vs synthetic shapes, digits vs natural-image patches
(train 1,400 digits, test 150 + 150), and digits 0-4 vs 5-9 (train 750, test 150 + 150).

Peers, fitted on the same rows and scored on the same test images in the same run:
scikit-learn's ``IsolationForest``, ``LocalOutlierFactor(novelty=True)`` and ``OneClassSVM``
(defaults, pixels in [0, 1]; score = ``-score_samples``), and a plain autoencoder
(the paper's AE-MSE baseline): an MLP 64-64-16-64-64 (``MLPRegressor`` fitted to reproduce
its input), score = reconstruction MSE. Printed per pair: each AUROC and the ratio
ours / peer (above 1: ours is better), fit and score seconds. Then the spec's speed targets
(2-core CPU): fit of 400 epochs on 1,400 digits < 60 s; ``ood_score`` of 1,000 images with
10 reconstructions and 100 steps < 40 s.

    OMP_NUM_THREADS=2 PYTHONPATH=. python benchmarks/bench_ood.py [--contended] [--quick]

(``--contended``: beside one competing CPU-bound process; ``--quick``: 20 epochs and 30 + 30
test images, a smoke run whose AUROCs mean nothing.)
"""

import sys
import time
import warnings

import numpy as np
from sklearn.ensemble import IsolationForest
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import LocalOutlierFactor
from sklearn.neural_network import MLPRegressor
from sklearn.svm import OneClassSVM

from benchmarks._runner import contended, header
from geolearn.datasets import load_digits_images, load_natural_patches, make_shape_images
from geolearn.ood import InpaintingOODDetector


class AutoencoderDetector:
    """Reconstruction-error OOD detector: an MLP autoencoder fitted on the ID rows.

    ``ood_score`` is the mean squared reconstruction error per row (the paper's AE-MSE
    baseline, higher = more out of distribution).
    """

    def __init__(self, hidden_layer_sizes=(64, 16, 64), max_iter=500, random_state=0):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X):
        self.net_ = MLPRegressor(hidden_layer_sizes=self.hidden_layer_sizes, max_iter=self.max_iter,
                                 random_state=self.random_state).fit(X, X)
        return self

    def ood_score(self, X):
        return np.mean((self.net_.predict(X) - X) ** 2, axis=1)


class SklearnDetector:
    """A scikit-learn outlier detector with ``ood_score = -score_samples`` (higher = OOD)."""

    def __init__(self, estimator):
        self.estimator = estimator

    def fit(self, X):
        self.estimator.fit(X)
        return self

    def ood_score(self, X):
        return -self.estimator.score_samples(X)


def peers():
    return {
        "IsolationForest": SklearnDetector(IsolationForest(random_state=0)),
        "LocalOutlierFactor": SklearnDetector(LocalOutlierFactor(novelty=True)),
        "OneClassSVM": SklearnDetector(OneClassSVM()),
        "autoencoder (MSE)": AutoencoderDetector(),
    }


def ours(max_epochs):
    return InpaintingOODDetector(
        image_shape=(8, 8), data_range=(0, 1), n_blocks=4, n_reconstructions=10,
        n_inference_steps=100, distance="mse", hidden_layer_sizes=(256, 256, 256),
        max_epochs=max_epochs, batch_size=128, lr=1e-3, device="cpu", random_state=0)


def experiments(n_test):
    """``{experiment: (X_train, {pair name: (X_in, X_out)})}``, flat rows in [0, 1]."""
    X, y = load_digits_images(return_X_y=True)
    X = X.reshape(len(X), -1)
    perm = np.random.RandomState(0).permutation(len(X))
    train, test = perm[:1400], perm[1400:1400 + n_test]
    shapes = make_shape_images(n_test, random_state=1).data.reshape(n_test, -1)
    patches = load_natural_patches(n_test, random_state=2).data.reshape(n_test, -1)
    low = np.flatnonzero(y < 5)[np.random.RandomState(0).permutation(int(np.sum(y < 5)))]
    high = np.random.RandomState(1).choice(np.flatnonzero(y >= 5), n_test, replace=False)
    return {
        "digits (1,400)": (X[train], {"digits vs shapes": (X[test], shapes),
                                      "digits vs natural patches": (X[test], patches)}),
        "digits 0-4 (750)": (X[low[:750]], {"digits 0-4 vs 5-9": (X[low[750:750 + n_test]],
                                                                    X[high])}),
    }


def auroc(detector, X_in, X_out):
    """``(AUROC, seconds to score both sets)`` with the OOD rows as positives."""
    t0 = time.perf_counter()
    s = np.r_[detector.ood_score(X_in), detector.ood_score(X_out)]
    seconds = time.perf_counter() - t0
    return roc_auc_score(np.r_[np.zeros(len(X_in)), np.ones(len(X_out))], s), seconds


def timed_fit(detector, X):
    t0 = time.perf_counter()
    detector.fit(X)
    return time.perf_counter() - t0


def compare_pairs(max_epochs, n_test):
    met = True
    for experiment, (X_train, pairs) in experiments(n_test).items():
        detectors = {"InpaintingOODDetector": ours(max_epochs), **peers()}
        fit_s = {name: timed_fit(det, X_train) for name, det in detectors.items()}
        print(f"\n## train on {experiment}; fit seconds: "
              + ", ".join(f"{name} {s:.2f}" for name, s in fit_s.items()), flush=True)
        for pair, (X_in, X_out) in pairs.items():
            res = {name: auroc(det, X_in, X_out) for name, det in detectors.items()}
            a_ours, t_ours = res.pop("InpaintingOODDetector")
            print(f"{pair}: InpaintingOODDetector AUROC {a_ours:.3f} "
                  f"(score {len(X_in)} + {len(X_out)} images in {t_ours:.1f} s)", flush=True)
            for name, (a, t) in res.items():
                print(f"  vs {name}: AUROC {a:.3f}, ratio ours/peer {a_ours / a:.3f}x "
                      f"({'ours higher' if a_ours > a else 'PEER HIGHER OR EQUAL'}); "
                      f"score time {t:.3f} s, slowdown ours/peer {t_ours / t:.0f}x", flush=True)
                met &= a_ours > a
    print(f"\ngoal 'higher AUROC than every peer on every pair': {'met' if met else 'NOT met'}",
          flush=True)


def speed_targets(max_epochs, n_score):
    X, _ = load_digits_images(return_X_y=True)
    X = X.reshape(len(X), -1)[np.random.RandomState(0).permutation(len(X))]
    det = ours(max_epochs)
    # the fit includes scoring the held-out validation rows (10 %) for the threshold
    fit_s = timed_fit(det, X[:1400])
    X_score = np.resize(X, (n_score, X.shape[1]))
    t0 = time.perf_counter()
    det.ood_score(X_score)
    score_s = time.perf_counter() - t0
    for what, t, target in ((f"fit, {max_epochs} epochs on 1,400 digits", fit_s, 60.0),
                            (f"ood_score of {n_score:,} images, r = 10, S = 100", score_s, 40.0)):
        print(f"spec target {what} < {target:g} s: {'met' if t < target else 'NOT met'} "
              f"({t:.1f} s)", flush=True)


def main(busy=False, quick=False):
    warnings.filterwarnings("ignore", category=ConvergenceWarning)  # the autoencoder's max_iter
    header("InpaintingOODDetector vs IsolationForest, LocalOutlierFactor, OneClassSVM, "
           "autoencoder" + (" (contended: one competing process)" if busy else " (idle)"))
    with contended(busy):
        compare_pairs(max_epochs=20 if quick else 250, n_test=30 if quick else 150)
        speed_targets(max_epochs=20 if quick else 400, n_score=100 if quick else 1000)


if __name__ == "__main__":
    main(busy="--contended" in sys.argv, quick="--quick" in sys.argv)
