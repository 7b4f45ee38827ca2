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
    tracker = GeometryTracker({"contrast": boundary_contrast}, grid, every=150)
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
