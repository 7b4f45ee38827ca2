"""Every public scorer factory makes a picklable, greater-is-better scikit-learn scorer.

The scorers are ``make_*_scorer`` factories: scikit-learn's ``make_scorer`` where the score
is a function of ``(y_true, y_pred)``, else a picklable ``scorer(estimator, X, y)`` callable.
Pickling matters: ``GridSearchCV(n_jobs=...)`` sends the scorer to its workers.
"""

import pickle

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA
from sklearn.ensemble import IsolationForest
from sklearn.metrics._scorer import _Scorer
from sklearn.neighbors import KernelDensity

from geolearn.adversarial import make_risk_scorer
from geolearn.datasets import make_circle_classification, make_circle_points
from geolearn.diffeo import make_stability_scorer
from geolearn.disentanglement.metrics import make_disentanglement_scorer
from geolearn.invariance import make_invariance_scorer
from geolearn.manifold import SphereManifold
from geolearn.meta_learning.metrics import make_manifold_scorer
from geolearn.ood.metrics import make_ood_auroc_scorer
from geolearn.representations import categorical_rdm, make_rdm_scorer
from geolearn.topology import make_diagram_distance_scorer


class _PCAAutoencoder(PCA):
    def reconstruct(self, X):
        return self.inverse_transform(self.transform(X))


def _linear():
    net = torch.nn.Sequential(torch.nn.Linear(2, 2))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        net[0].bias.zero_()
    return net


def _cases():
    rng = np.random.default_rng(0)
    X_ood = np.r_[rng.normal(size=(40, 2)), rng.normal(5, 1, size=(10, 2))]
    y_ood = np.r_[np.ones(40), -np.ones(10)]
    factors = rng.integers(0, 3, size=(90, 2))
    X_fac = np.c_[factors, rng.normal(0, 0.01, (90, 1))].astype(float)
    circle = make_circle_points(60, noise=0.02, random_state=0)
    X_risk, y_risk = make_circle_classification(40, random_state=0)
    stimuli = np.array([[1, 0, 0], [1, 0, 0.1], [0, 1, 0], [0, 1, 0.1]], dtype=np.float32)
    images = rng.random((6, 16)).astype(np.float32)
    digits = rng.random((100, 256)).astype(np.float32)
    return {
        "ood": (make_ood_auroc_scorer(), IsolationForest(random_state=0).fit(X_ood[:40]),
                X_ood, y_ood),
        "disentanglement": (make_disentanglement_scorer("mig"),
                            PCA(n_components=2).fit(X_fac), X_fac, factors),
        "manifold": (make_manifold_scorer("spectral", n_neighbors=3),
                     _PCAAutoencoder(2).fit(circle), circle, None),
        "diagram": (make_diagram_distance_scorer(circle),
                    KernelDensity(bandwidth=0.05).fit(circle), circle, None),
        "risk": (make_risk_scorer("normal", manifold=SphereManifold(), epsilon=0.1, n_steps=3),
                 _linear(), X_risk, y_risk),
        "rdm": (make_rdm_scorer(stimuli, categorical_rdm([0, 0, 1, 1]), layer="0",
                                method="pearson"),
                torch.nn.Sequential(torch.nn.Identity()), None, None),
        "invariance": (make_invariance_scorer("LI", group="rot4", image_shape=(1, 4, 4)),
                       torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2)),
                       images, None),
        "stability": (make_stability_scorer(image_shape=(16, 16)),
                      torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 2)),
                      digits, None),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_scorer_pickles_and_scores_the_same(name):
    scorer, estimator, X, y = _cases()[name]
    again = pickle.loads(pickle.dumps(scorer))
    value = scorer(estimator, X, y)
    assert isinstance(value, float) and np.isfinite(value)
    assert again(estimator, X, y) == value


def test_prediction_scorers_are_scikit_learn_scorers():
    for scorer in (make_ood_auroc_scorer(), make_disentanglement_scorer("jemmig")):
        assert isinstance(scorer, _Scorer) and scorer._sign == 1
