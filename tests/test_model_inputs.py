"""Inputs a model cannot take get clear errors at every function and estimator taking a model.

The reliability audit found feature-count mismatches, object arrays, scipy sparse matrices and
DataFrames reaching torch as raw errors ("mat1 and mat2 shapes cannot be multiplied", "can't
convert np.ndarray of type numpy.object_", "sparse array length is ambiguous"). Every entry
point below now says what ``X`` has and what the model expects, names the cure for sparse
input, and reads a DataFrame as its numeric values (recording its column names when an
estimator is fitted on it).
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from geolearn.adversarial import carlini_wagner_l2, fgsm, patch_attack, pgd
from geolearn.diffeo import DiffeoStability, relative_stability
from geolearn.invariance import (
    integrated_gradients,
    jacobian_sigma_max,
    logit_invariance,
    saliency_map,
)
from geolearn.models import as_model
from geolearn.polytopes import ReLUPolytopes
from geolearn.representations import TorchEmbedder
from geolearn.riemannian import PullbackMetric, RiemannianFeatureGeometry
from tests.helpers import assert_message

# the probes' own notes on tiny data (few probe images, small images, unconverged attacks)
pytestmark = [pytest.mark.filterwarnings("ignore::geolearn.diffeo.StabilityWarning"),
              pytest.mark.filterwarnings("ignore:carlini_wagner_l2:UserWarning")]

torch.manual_seed(0)
MLP = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 5))
RELU = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
CNN = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Tanh(), nn.Flatten(), nn.Linear(128, 3))
RNG = np.random.default_rng(0)
X_TAB = RNG.random((6, 4)).astype(np.float32)
X_IMG = RNG.random((6, 1, 8, 8)).astype(np.float32)
Y = np.arange(6) % 3
MASK = np.array([True, False, True, False])

# (name, X the model takes, call(X) -> result); one row per model-taking entry point
TABULAR = [
    ("as_model.features", lambda X: as_model(MLP).features(X, layer="1")),
    ("as_model.forward", lambda X: as_model(MLP).forward(X)),
    ("as_model.jacobian", lambda X: as_model(MLP).jacobian(X)),
    ("as_model.input_gradient", lambda X: as_model(MLP).input_gradient(X, targets=Y)),
    ("jacobian_sigma_max", lambda X: jacobian_sigma_max(MLP, X, reduction="none")),
    ("fgsm", lambda X: fgsm(MLP, X, Y, 0.1)),
    ("pgd", lambda X: pgd(MLP, X, Y, 0.1, n_steps=2, random_start=False)),
    ("carlini_wagner_l2", lambda X: carlini_wagner_l2(MLP, X, Y, n_steps=2)[0]),
    ("patch_attack", lambda X: patch_attack(MLP, X, Y, MASK, n_steps=2, random_state=0)),
    ("PullbackMetric", lambda X: PullbackMetric(MLP).metric(X)),
    ("RiemannianFeatureGeometry",
     lambda X: RiemannianFeatureGeometry(feature_map=MLP, quantities="log_volume")
     .fit(X).transform(X)),
    ("ReLUPolytopes", lambda X: ReLUPolytopes(network=RELU, bounds=(0, 1)).fit(X).transform(X)),
    ("TorchEmbedder", lambda X: TorchEmbedder(MLP, layer="1").fit(X).transform(X)),
]
IMAGES = [
    ("as_model.features[conv]", lambda X: as_model(CNN).features(X)),
    ("integrated_gradients", lambda X: integrated_gradients(CNN, X, 0, steps=2)),
    ("saliency_map", lambda X: saliency_map(CNN, X, 0, steps=2)),
    ("logit_invariance", lambda X: logit_invariance(CNN, X, "rot4", reduction="none")),
    ("relative_stability",
     lambda X: relative_stability(CNN, X, random_state=0)["R"]),
    ("DiffeoStability", lambda X: DiffeoStability(CNN, random_state=0).fit(X)
     .stability(X)["R"]),
]
ENTRY_POINTS = [(n, X_TAB, f) for n, f in TABULAR] + [(n, X_IMG, f) for n, f in IMAGES]
IDS = [n for n, _, _ in ENTRY_POINTS]


def _one_more_feature(X):
    if X.ndim == 2:
        return np.concatenate([X, X[:, :1]], 1)
    return np.concatenate([X, X], 1)  # two channels for a one-channel conv net


@pytest.mark.parametrize("name, X, call", ENTRY_POINTS, ids=IDS)
def test_wrong_number_of_features(name, X, call):
    with pytest.raises(ValueError) as exc:
        call(_one_more_feature(X))
    if X.ndim == 2:
        assert_message(exc, "X has 5 features", "expecting 4")
    else:
        assert_message(exc, "2 channels", "expecting 1 input channel")


@pytest.mark.parametrize("name, X, call", ENTRY_POINTS, ids=IDS)
def test_object_arrays(name, X, call):
    numbers = X.astype(object)  # numbers in an object array are numbers
    np.testing.assert_allclose(np.asarray(call(numbers), dtype=float),
                               np.asarray(call(X), dtype=float), rtol=1e-6, atol=1e-7)
    bad = X.astype(object)
    bad.flat[3] = "a"
    with pytest.raises(ValueError) as exc:
        call(bad)
    assert_message(exc, "'a'")


@pytest.mark.parametrize("name, X, call", ENTRY_POINTS, ids=IDS)
def test_sparse_input_names_the_cure(name, X, call):
    with pytest.raises(TypeError) as exc:
        call(sp.csr_matrix(X.reshape(len(X), -1)))
    assert_message(exc, "sparse", ".toarray()")


@pytest.mark.parametrize("name, X, call", [e for e in ENTRY_POINTS if e[1].ndim == 2],
                         ids=[n for n, X, _ in ENTRY_POINTS if X.ndim == 2])
def test_dataframes_are_their_values(name, X, call):
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])])
    np.testing.assert_allclose(np.asarray(call(df), dtype=float),
                               np.asarray(call(X), dtype=float), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make", [
    lambda: RiemannianFeatureGeometry(feature_map=MLP, quantities="log_volume"),
    lambda: ReLUPolytopes(network=RELU, bounds=(0, 1)),
    lambda: TorchEmbedder(MLP, layer="1"),
], ids=["RiemannianFeatureGeometry", "ReLUPolytopes", "TorchEmbedder"])
def test_estimators_record_dataframe_columns(make):
    columns = ["a", "b", "c", "d"]
    est = make().fit(pd.DataFrame(X_TAB, columns=columns))
    assert list(est.feature_names_in_) == columns
    with pytest.raises(ValueError, match="feature names"):
        est.transform(pd.DataFrame(X_TAB, columns=["a", "b", "c", "e"]))


def test_images_as_dataframe_of_flat_rows():
    """Image functions read a DataFrame of flat rows folded by image_shape."""
    flat = nn.Sequential(nn.Flatten(), nn.Linear(64, 3))
    X = X_IMG.reshape(6, -1)
    got = integrated_gradients(flat, pd.DataFrame(X), 0, steps=2, image_shape=(1, 8, 8))
    np.testing.assert_allclose(got, integrated_gradients(flat, X, 0, steps=2, image_shape=(8, 8)))


@given(n_in=st.integers(1, 6), n_x=st.integers(1, 6), n=st.integers(1, 5),
       flatten=st.booleans())
def test_linear_input_mismatch_property(n_in, n_x, n, flatten):
    """The feature count is checked against the first Linear layer, through activations,
    dropout and a Flatten; a match gives the model's outputs."""
    layers = [nn.Dropout(), nn.ReLU(), nn.Linear(n_in, 2)]
    model = as_model(nn.Sequential(nn.Flatten(), *layers) if flatten else nn.Sequential(*layers))
    X = np.ones((n, n_x), dtype=np.float32)
    if n_x == n_in:
        assert model.forward(X).shape == (n, 2)
        return
    with pytest.raises(ValueError) as exc:
        model.forward(X)
    assert_message(exc, f"X has {n_x} features", f"expecting {n_in} features",
                   "in_features of its first layer")


@given(c_in=st.integers(1, 3), c_x=st.integers(1, 3), side=st.integers(3, 6))
def test_conv_input_mismatch_property(c_in, c_x, side):
    model = as_model(nn.Sequential(nn.Conv2d(c_in, 1, 3), nn.Flatten()))
    X = np.ones((2, c_x, side, side), dtype=np.float32)
    if c_x == c_in:
        assert model.forward(X).shape == (2, (side - 2) ** 2)
    else:
        with pytest.raises(ValueError) as exc:
            model.forward(X)
        assert_message(exc, f"{c_x} channels", f"expecting {c_in} input channel",
                       f"({c_in}, H, W)")
    with pytest.raises(ValueError) as exc:  # flat rows are not images
        model.forward(X.reshape(2, -1))
    assert_message(exc, f"samples of shape ({c_x * side * side},)", "H, W")


def test_custom_modules_and_black_boxes_are_left_to_the_model():
    """No check where the first layer is not certain (a custom forward), and a scikit-learn
    black box sees its own n_features_in_ check and may take sparse input."""
    from sklearn.neighbors import KNeighborsClassifier

    class Reversed(nn.Module):  # registers its layers in the opposite order of use
        def __init__(self):
            super().__init__()
            self.head, self.body = nn.Linear(8, 2), nn.Linear(3, 8)

        def forward(self, x):
            return self.head(self.body(x))

    assert as_model(Reversed()).forward(np.ones((2, 3), np.float32)).shape == (2, 2)
    glu = as_model(nn.Sequential(nn.GLU(), nn.Linear(2, 3)))  # GLU halves the features
    assert glu.forward(np.ones((2, 4), np.float32)).shape == (2, 3)
    clf = KNeighborsClassifier().fit(X_TAB, Y)
    box = as_model(clf)
    np.testing.assert_allclose(box.forward(sp.csr_matrix(X_TAB)), box.forward(X_TAB), rtol=1e-6)
    with pytest.raises(ValueError, match="X has 5 features, but KNeighborsClassifier is expecting 4"):
        box.forward(_one_more_feature(X_TAB))
