"""split_torch_tail: models whose output is a torch forward pass, after numpy preprocessing."""

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from skorch import NeuralNetClassifier

from geolearn.models import as_model
from geolearn.models._internal import split_torch_tail


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 6).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64)


def _module():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 2))


def test_torch_models_are_their_own_tail():
    net = _module()
    assert split_torch_tail(net) == (None, net)
    skorch_net = NeuralNetClassifier(_module)  # unfitted: still a torch model
    assert split_torch_tail(skorch_net) == (None, skorch_net)
    fn = torch.tanh
    assert split_torch_tail(fn) == (None, fn)


def test_pipeline_ending_in_a_net_splits_off_its_preprocessing(data):
    X, y = data
    net = NeuralNetClassifier(_module, criterion=torch.nn.CrossEntropyLoss, max_epochs=1,
                              train_split=None, verbose=0)
    pipe = make_pipeline(PCA(6), FunctionTransformer(np.tanh), FrozenEstimator(
        net.fit(X, y))).fit(X, y)
    pre, tail = split_torch_tail(pipe)
    assert tail is net and [name for name, _ in pre.steps] == ["pca", "functiontransformer"]
    # the preprocessing then the net's forward pass is the pipeline's model
    expected = as_model(net).forward(pre.transform(X))
    logits = net.forward(pipe[:-1].transform(X)).numpy()
    np.testing.assert_array_equal(expected, logits)
    assert split_torch_tail(make_pipeline(net)) == (None, net)


def test_estimators_seen_through_their_response_have_no_tail(data):
    X, y = data
    for model in (LogisticRegression(), MLPClassifier(), make_pipeline(StandardScaler(),
                  MLPClassifier()), FrozenEstimator(LogisticRegression().fit(X, y))):
        assert split_torch_tail(model) is None


class _TrainsAModule(LogisticRegression):
    """An estimator that keeps a torch module but is seen through decision_function."""

    def fit(self, X, y):
        super().fit(X, y)
        self.module_ = _module()
        return self


def test_an_estimator_that_keeps_a_module_is_not_a_torch_model(data):
    X, y = data
    est = _TrainsAModule().fit(X, y)
    assert split_torch_tail(est) is None
    assert split_torch_tail(FrozenEstimator(_module())) is not None
