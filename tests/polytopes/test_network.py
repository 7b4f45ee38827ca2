"""as_relu_network: canonical form of every accepted network, clear errors otherwise."""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.neural_network import MLPClassifier, MLPRegressor
from torch import nn

from geolearn.polytopes import as_relu_network
from geolearn.polytopes._maps import forward_bits

from ._nets import gaussian_net


def _logits(module, X):
    with torch.no_grad():
        return module(torch.as_tensor(X)).numpy()


def test_sequential_round_trip():
    net = gaussian_net((3, 5, 4, 2), seed=0)
    relu = as_relu_network(net)
    X = np.random.default_rng(1).normal(size=(50, 3))
    assert relu.layer_sizes == (3, 5, 4, 2) and relu.n_hidden_units == 9
    np.testing.assert_allclose(forward_bits(relu, X)[2], _logits(net, X), atol=1e-12)


def test_folding_linear_batchnorm_dropout_and_softmax():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(6).double()
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2)
        bn.weight.normal_()
        bn.bias.normal_()
    net = nn.Sequential(nn.Sequential(nn.Linear(3, 6), bn), nn.ReLU(), nn.Dropout(0.5),
                        nn.Linear(6, 4, bias=False), nn.Identity(), nn.Linear(4, 5), nn.ReLU(),
                        nn.Linear(5, 2), nn.Softmax(dim=1)).double().eval()
    relu = as_relu_network(net)
    assert relu.layer_sizes == (3, 6, 5, 2)
    assert relu.output_activation == "softmax"
    X = np.random.default_rng(1).normal(size=(40, 3))
    logits = _logits(net[:-1], X)
    np.testing.assert_allclose(forward_bits(relu, X)[2], logits, atol=1e-10)


def test_final_relu_is_a_hidden_layer():
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    relu = as_relu_network(net)
    assert relu.layer_sizes == (2, 3, 3)
    np.testing.assert_array_equal(relu.weights[-1], np.eye(3))


@pytest.mark.parametrize("Est", [MLPClassifier, MLPRegressor])
def test_sklearn_mlp(Est):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] > 0).astype(int)
    mlp = Est(hidden_layer_sizes=(7, 5), max_iter=50, random_state=0).fit(X, y)
    relu = as_relu_network(mlp)
    assert relu.layer_sizes == (4, 7, 5, 1)
    logits = forward_bits(relu, X)[2][:, 0]
    if Est is MLPClassifier:
        # binary classifier: one logit, classes_[1] iff logit > 0
        np.testing.assert_array_equal(mlp.classes_[(logits > 0).astype(int)], mlp.predict(X))
        np.testing.assert_array_equal(relu.classes, mlp.classes_)
    else:
        np.testing.assert_allclose(logits, mlp.predict(X), atol=1e-10)


def test_skorch_net():
    from skorch import NeuralNetClassifier

    X = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    module = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2), nn.Softmax(dim=-1))
    net = NeuralNetClassifier(module, max_epochs=2, verbose=0).fit(X, y)
    relu = as_relu_network(net)
    assert relu.layer_sizes == (3, 8, 2)
    np.testing.assert_array_equal(relu.classes, [0, 1])
    np.testing.assert_array_equal(forward_bits(relu, X.astype(float))[2].argmax(1), net.predict(X))


@pytest.mark.parametrize("bad, match", [
    (None, "network=None"),
    (nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)), "Tanh"),
    (nn.Sequential(nn.Conv1d(1, 2, 3)), "LocalLinearMap"),
    (nn.Sequential(nn.Linear(2, 3), nn.LeakyReLU(), nn.Linear(3, 1)), "LeakyReLU"),
])
def test_unsupported_networks(bad, match):
    with pytest.raises(ValueError, match=match):
        as_relu_network(bad)


def test_non_relu_mlp_and_unfitted_mlp():
    X = np.random.default_rng(0).normal(size=(30, 2))
    mlp = MLPClassifier((4,), activation="tanh", max_iter=20).fit(X, X[:, 0] > 0)
    with pytest.raises(ValueError, match="activation='relu'"):
        as_relu_network(mlp)
    with pytest.raises(NotFittedError):
        as_relu_network(MLPClassifier((4,)))


def test_a_scaler_pipeline_is_folded_into_the_first_layer():
    """Defect: ReLUPolytopes refused Pipeline(StandardScaler, MLP) though the scaler is affine."""
    import warnings

    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    from geolearn.polytopes import ReLUPolytopes, as_relu_network

    rng = np.random.RandomState(0)
    X = rng.randn(300, 2) * [3.0, 0.5] + [1.0, -2.0]
    y = (X[:, 0] - 1) * (X[:, 1] + 2) > 0
    for scaler in (StandardScaler(), MinMaxScaler()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipe = make_pipeline(scaler, MLPClassifier((8, 8), max_iter=300, random_state=0))
            pipe.fit(X, y)
        net = as_relu_network(pipe)
        assert net.layer_sizes == (2, 8, 8, 1)
        # the folded net on raw inputs gives the pipeline's logits
        h = X
        for W, b in zip(net.weights[:-1], net.biases[:-1]):
            h = np.maximum(h @ W.T + b, 0)
        logit = h @ net.weights[-1].T + net.biases[-1]
        np.testing.assert_allclose(1 / (1 + np.exp(-logit[:, 0])), pipe.predict_proba(X)[:, 1],
                                   rtol=1e-9, atol=1e-12)
        est = ReLUPolytopes(pipe, bounds=(X.min(0), X.max(0))).fit(X)
        assert est.n_regions_ >= 2
