"""Metadata routing through every geolearn estimator that fits a user's model, and the scorers.

scikit-learn's pattern (``sklearn/tests/test_metaestimators_metadata_routing.py``): with
``enable_metadata_routing=True`` a meta-estimator's ``fit`` passes ``sample_weight`` to the
model it fits only where that model requested it (``set_fit_request``), raises
``UnsetMetadataPassedError`` where the model takes it but said nothing, and without routing
keeps its old behaviour. A consumer that records what its ``fit`` received shows the weights
arrive.
"""

import numpy as np
import pytest
import sklearn
import torch
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.utils.metadata_routing import get_routing_for_object

from geolearn.diffeo import DiffeoStability, make_stability_scorer
from geolearn.generative import ELBOPurifier, VAEClassifier
from geolearn.manifold import OnManifoldPGD
from geolearn.polytopes import LocalLinearClustering, LocalLinearMap, ReLUPolytopes
from geolearn.riemannian import RiemannianFeatureGeometry

RECEIVED = []  # the sample_weight of every fit of a recording model, in order


class _Records:
    """Records the ``sample_weight`` its ``fit`` received in ``RECEIVED``."""

    def fit(self, X, y=None, sample_weight=None):
        RECEIVED.append(sample_weight)
        return super().fit(X, y, sample_weight=sample_weight)


class RecordingLogisticRegression(_Records, LogisticRegression):
    pass


class RecordingMLPClassifier(_Records, MLPClassifier):
    pass


class RecordingVAEClassifier(_Records, VAEClassifier):
    pass


def _mlp(width=6, random_state=0, activation="relu"):
    return RecordingMLPClassifier(hidden_layer_sizes=(width,), activation=activation, max_iter=50,
                                  random_state=random_state)


def _cases():
    """``name -> (meta-estimator factory from models, model parameter names, X, y)``."""
    rng = np.random.RandomState(0)
    X, y = rng.rand(40, 4), np.repeat([0, 1], 20)
    images = rng.rand(40, 64)
    return {
        "DiffeoStability": (lambda m: DiffeoStability(m["estimator"], image_shape=(8, 8), T=0.005,
                                                      random_state=0),
                            {"estimator": RecordingLogisticRegression}, images, y),
        "OnManifoldPGD": (lambda m: OnManifoldPGD(m["estimator"], tangent="jacobian",
                                                  intrinsic_dim=1, n_steps=2,
                                                  cidm_params={"n_eigenpairs": 5,
                                                               "n_components": 3}),
                          {"estimator": _mlp}, X, y),
        # two features: the binary MLP's two outputs give a regular metric
        "RiemannianFeatureGeometry": (lambda m: RiemannianFeatureGeometry(m["feature_map"]),
                                      {"feature_map": lambda: _mlp(activation="tanh")}, X[:, :2], y),
        "ReLUPolytopes": (lambda m: ReLUPolytopes(m["network"]), {"network": _mlp}, X, y),
        "LocalLinearClustering": (lambda m: LocalLinearClustering(m["network"], n_clusters=2,
                                                                  random_state=0),
                                  {"network": _mlp}, X, y),
        "LocalLinearMap": (lambda m: LocalLinearMap(m["source"], m["target"]),
                           {"source": _mlp, "target": lambda: _mlp(4, 1)}, X, y),
        "ELBOPurifier": (lambda m: ELBOPurifier(m["estimator"], n_steps=2),
                         {"estimator": lambda: RecordingVAEClassifier(
                             n_latent=2, hidden_layer_sizes=(8,), max_epochs=1, batch_size=20,
                             random_state=0, device="cpu")},
                         X, y),
    }


CASES = list(_cases())


@pytest.fixture(autouse=True)
def _clear_received():
    RECEIVED.clear()


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("case", CASES)
def test_requested_weights_reach_every_fitted_model(case, routing):
    make, models, X, y = _cases()[case]
    w = np.linspace(0.5, 2.0, len(X))
    meta = make({name: model().set_fit_request(sample_weight=True)
                 for name, model in models.items()})
    meta.fit(X, y, sample_weight=w)
    assert len(RECEIVED) == len(models)
    for received in RECEIVED:
        np.testing.assert_array_equal(received, w)
    routing_info = meta.get_metadata_routing()
    assert sorted(routing_info.consumes("fit", ["sample_weight", "groups"])) == ["sample_weight"]


@pytest.mark.parametrize("case", CASES)
def test_unrequested_weights_raise(case, routing):
    make, models, X, y = _cases()[case]
    meta = make({name: model() for name, model in models.items()})
    with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
        meta.fit(X, y, sample_weight=np.ones(len(X)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("case", CASES)
def test_weights_declined_by_the_model_stay_out(case, routing):
    make, models, X, y = _cases()[case]
    meta = make({name: model().set_fit_request(sample_weight=False)
                 for name, model in models.items()})
    with pytest.raises(TypeError, match="sample_weight"):  # consumed by no one
        meta.fit(X, y, sample_weight=np.ones(len(X)))
    meta.fit(X, y)
    assert RECEIVED == [None] * len(models)


@pytest.mark.parametrize("case", [case for case in CASES if case != "DiffeoStability"])
def test_without_routing_metadata_are_refused(case):
    make, models, X, y = _cases()[case]
    meta = make({name: model() for name, model in models.items()})
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        meta.fit(X, y, sample_weight=np.ones(len(X)))


def test_diffeo_stability_without_routing_forwards_fit_params_as_before():
    make, _, X, y = _cases()["DiffeoStability"]
    w = np.linspace(0.5, 2.0, len(X))
    make({"estimator": RecordingLogisticRegression()}).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(RECEIVED[0], w)


def test_torch_modules_request_nothing(routing):
    meta = DiffeoStability(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 2)),
                           image_shape=(8, 8), T=0.005)
    assert meta.get_metadata_routing().consumes("fit", ["sample_weight"]) == set()
    with pytest.raises(TypeError, match="sample_weight"):
        meta.fit(np.random.RandomState(0).rand(10, 64), sample_weight=np.ones(10))


def test_search_with_a_geolearn_scorer_routes_fit_weights(routing):
    """The model-reading scorers request no metadata; the search routes the fit's weights."""
    rng = np.random.RandomState(0)
    X, y = rng.rand(200, 64), np.tile([0, 1], 100)
    scorer = make_stability_scorer(image_shape=(8, 8), T=0.005)
    assert get_routing_for_object(scorer).consumes("score", ["sample_weight"]) == set()
    model = RecordingLogisticRegression().set_fit_request(sample_weight=True)
    search = GridSearchCV(model, {"C": [0.1, 1.0]}, scoring=scorer, cv=2)
    w = np.linspace(0.5, 2.0, len(X))
    search.fit(X, y, sample_weight=w)
    # each fold's fit gets its rows' weights, and the refit all of them
    np.testing.assert_array_equal(RECEIVED[-1], w)
    assert sorted(len(received) for received in RECEIVED) == [100, 100, 100, 100, 200]
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
        GridSearchCV(RecordingLogisticRegression(), {"C": [1.0]}, scoring=scorer,
                     cv=2).fit(X, y, sample_weight=w)
