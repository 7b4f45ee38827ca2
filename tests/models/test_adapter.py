import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification, make_regression
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, Normalizer, StandardScaler
from sklearn.svm import SVC
from torch import nn

from geolearn.models import GradientsUnavailableError, as_model, mlp_to_torch


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(120, 6, n_informative=4, n_classes=3, random_state=0)
    return X, y


def _net(dtype=torch.float32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype)


# --- converted scikit-learn MLPs ---------------------------------------------------------

@pytest.mark.parametrize("activation", ["relu", "tanh", "logistic", "identity"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_mlp_classifier_conversion_is_exact(activation, n_classes):
    X, y = make_classification(80, 5, n_informative=3, n_classes=n_classes, random_state=1)
    mlp = MLPClassifier((7, 4), activation=activation, max_iter=30, random_state=0).fit(X, y)
    expected = mlp.predict_proba(X)
    out64 = as_model(mlp, dtype=torch.float64).forward(X)
    np.testing.assert_allclose(out64, expected, atol=1e-12)
    out32 = as_model(mlp).forward(X.astype(np.float32))
    np.testing.assert_allclose(out32, expected, atol=1e-6)


@pytest.mark.parametrize("n_targets", [1, 2])
def test_mlp_regressor_conversion_is_exact(n_targets):
    X, y = make_regression(60, 4, n_targets=n_targets, random_state=0)
    mlp = MLPRegressor(hidden_layer_sizes=(6,), max_iter=50, random_state=0).fit(X, y)
    out = as_model(mlp, dtype=torch.float64).forward(X)
    np.testing.assert_allclose(out, mlp.predict(X).reshape(len(X), -1), rtol=1e-12, atol=1e-9)


def test_mlp_layers_are_named_and_logits_reachable(data):
    X, y = data
    mlp = MLPClassifier((5,), max_iter=30, random_state=0).fit(X, y)
    m = as_model(mlp, dtype=torch.float64)
    assert m.layer_names == ["linear_0", "act_0", "linear_1", "out_activation"]
    logits = m.features(X, layer="linear_1")
    np.testing.assert_allclose(np.exp(logits) / np.exp(logits).sum(1, keepdims=True),
                               mlp.predict_proba(X), atol=1e-12)
    hidden = m.features(X, layer="act_0")
    np.testing.assert_allclose(hidden, np.maximum(X @ mlp.coefs_[0] + mlp.intercepts_[0], 0),
                               atol=1e-12)


def test_mlp_to_torch_rejects_other_estimators(data):
    X, y = data
    with pytest.raises(TypeError, match="MLPClassifier or MLPRegressor"):
        mlp_to_torch(LogisticRegression().fit(X, y))


# --- pipelines ------------------------------------------------------------------------------

@pytest.mark.parametrize("scaler", [StandardScaler(), MinMaxScaler(), MaxAbsScaler()])
def test_scaler_mlp_pipeline_is_one_differentiable_module(data, scaler):
    X, y = data
    pipe = make_pipeline(scaler, MLPClassifier((5,), max_iter=30, random_state=0)).fit(X, y)
    m = as_model(pipe, dtype=torch.float64)
    assert m.kind == "pipeline" and m.differentiable
    np.testing.assert_allclose(m.forward(X), pipe.predict_proba(X), atol=1e-12)
    step = pipe.steps[0][0]
    np.testing.assert_allclose(m.features(X, layer=step), pipe[0].transform(X), atol=1e-12)
    assert "mlpclassifier.linear_0" in m.layer_names


def test_black_box_pipeline_features_are_step_outputs(data):
    X, y = data
    # a Normalizer (rows to unit norm) is not converted: the whole pipeline is a black box
    pipe = make_pipeline(Normalizer(), PCA(3), LogisticRegression()).fit(X, y)
    m = as_model(pipe)
    assert m.kind == "black-box" and not m.differentiable
    assert m.layer_names == ["normalizer", "pca", "logisticregression"]
    np.testing.assert_allclose(m.features(X, layer="pca"), pipe[:2].transform(X))
    # "auto" sees the most logit-like output: the decision function
    np.testing.assert_allclose(m.forward(X), pipe.decision_function(X))
    np.testing.assert_allclose(m.features(X, layer="logisticregression"),
                               pipe.decision_function(X))


def test_black_box_error_names_the_need_for_gradients(data):
    X, y = data
    m = as_model(SVC().fit(X, y))
    np.testing.assert_allclose(m.forward(X), SVC().fit(X, y).decision_function(X))
    with pytest.raises(GradientsUnavailableError, match="needs gradients.*black-box"):
        m.jacobian(X)
    with pytest.raises(TypeError):
        m.feature_fn()


def test_decision_function_black_box_is_2d(data):
    from sklearn.svm import LinearSVC

    X, y = data
    svc = LinearSVC().fit(X, y > 0)
    out = as_model(svc).forward(X)
    assert out.shape == (len(X), 1)
    np.testing.assert_allclose(out[:, 0], svc.decision_function(X))


def test_unfitted_sklearn_and_skorch_raise(data):
    from skorch import NeuralNetClassifier

    with pytest.raises(NotFittedError):
        as_model(MLPClassifier())
    with pytest.raises(NotFittedError):
        as_model(NeuralNetClassifier(_net()))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        as_model(object())


# --- skorch -----------------------------------------------------------------------------------

def test_skorch_net_gives_its_module(data):
    from skorch import NeuralNetClassifier

    X, y = data
    X = X.astype(np.float32)
    net = NeuralNetClassifier(_net(), criterion=nn.CrossEntropyLoss, max_epochs=2,
                             train_split=None, verbose=0).fit(X, y)
    m = as_model(net)
    assert m.kind == "skorch" and m.module is net.module_
    logits = m.forward(X)
    proba = torch.softmax(torch.as_tensor(logits), 1).numpy()
    np.testing.assert_allclose(proba, net.predict_proba(X), atol=1e-6)
    assert m.features(X, layer="1").shape == (len(X), 8)


# --- torch modules: features, Jacobians, modes, devices -------------------------------------

def test_features_match_manual_forward_and_batching_is_invisible(data):
    X, _ = data
    net = _net()
    m = as_model(net, batch_size=7)
    X32 = X.astype(np.float32)
    with torch.no_grad():
        hidden = torch.tanh(net[0](torch.as_tensor(X32))).numpy()
    np.testing.assert_allclose(m.features(X32, layer="1"), hidden, atol=1e-6)
    np.testing.assert_array_equal(m.features(X32, batch_size=7), m.features(X32, batch_size=None))
    with pytest.raises(ValueError, match="not a layer"):
        m.features(X32, layer="nope")


def test_early_layers_do_not_run_later_ones(data):
    X, _ = data
    net = _net()
    calls = []
    net[2].register_forward_hook(lambda *a: calls.append(1))
    as_model(net).features(X.astype(np.float32), layer="0")
    assert calls == []


@pytest.mark.parametrize("layer", [None, "1"])
@pytest.mark.parametrize("mode", ["rev", "fwd", "auto"])
def test_jacobian_matches_finite_differences(data, layer, mode):
    X = data[0][:5]
    m = as_model(_net(torch.float64), batch_size=2)
    J = m.jacobian(X, layer=layer, mode=mode)
    eps = 1e-6
    fd = np.stack([(m.features(X + eps * e, layer=layer) - m.features(X - eps * e, layer=layer))
                   / (2 * eps) for e in np.eye(X.shape[1])], axis=-1)
    assert J.shape == fd.shape
    np.testing.assert_allclose(J, fd, atol=1e-7)


def test_jacobian_of_image_model_has_image_shaped_input():
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    X = np.random.RandomState(0).rand(4, 1, 6, 6).astype(np.float32)
    J = as_model(net).jacobian(X)
    assert J.shape == (4, 3, 1, 6, 6)
    # the model is linear around X except at ReLU kinks: J x-directional derivative check
    v = np.random.RandomState(1).randn(*X.shape).astype(np.float32)
    eps = 1e-3
    m = as_model(net)
    fd = (m.forward(X + eps * v) - m.forward(X - eps * v)) / (2 * eps)
    np.testing.assert_allclose(np.einsum("nkchw,nchw->nk", J, v), fd, atol=1e-3)


@pytest.mark.parametrize("as_tensor", [False, True])
def test_jacobian_of_no_rows_has_no_rows(as_tensor):
    # as forward: an empty batch gives an empty result of the right shape, not an IndexError
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
    X = np.zeros((0, 1, 6, 6), np.float32)
    J = as_model(net).jacobian(torch.from_numpy(X) if as_tensor else X)
    assert tuple(J.shape) == (0, 3, 1, 6, 6)
    assert isinstance(J, torch.Tensor) == as_tensor


def test_train_eval_modes_are_restored():
    net = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.BatchNorm1d(8), nn.Linear(8, 2))
    net.train()
    net[2].eval()  # a mixed state a user may rely on (frozen batch norm)
    before = [mod.training for mod in net.modules()]
    X = np.random.RandomState(0).randn(10, 4).astype(np.float32)
    m = as_model(net)
    a = m.forward(X)
    b = m.forward(X)
    np.testing.assert_array_equal(a, b)  # eval mode inside: dropout off, deterministic
    m.jacobian(X)
    assert [mod.training for mod in net.modules()] == before


def test_a_users_module_is_never_moved():
    net = _net()
    with pytest.raises(ValueError, match="never moves|CUDA is not available"):
        as_model(net, device="cuda")
    m = as_model(net, device="cpu")
    assert m.device == torch.device("cpu")
    assert next(net.parameters()).device == torch.device("cpu")


def test_to_casts_a_copy_once_and_never_the_users_module():
    net = _net()
    m = as_model(net, batch_size=7)
    m64 = m.to(dtype=torch.float64)
    assert m64 is not m and m64.module is not net and m64.dtype == torch.float64
    assert next(net.parameters()).dtype == torch.float32  # the user's module is untouched
    assert (m64.kind, m64.estimator, m64.batch_size, m64.layer_names) == (
        m.kind, m.estimator, 7, m.layer_names)
    assert m.to(dtype=torch.float32) is m and m64.to("cpu", torch.float64) is m64
    X = np.random.RandomState(0).randn(5, 6)
    np.testing.assert_allclose(m64.features(X, "1"), m.features(X, "1"), atol=1e-5)
    with torch.no_grad():
        net[0].weight.add_(1.0)  # the copy does not follow later changes of the module
    assert not np.allclose(m64.forward(X), m.forward(X), atol=1e-3)


def test_to_leaves_black_boxes_and_parameterless_functions_as_they_are(data):
    X, y = data
    box = as_model(SVC().fit(X, y))
    assert box.to(dtype=torch.float64) is box
    fn = as_model(torch.tanh)
    assert fn.to(dtype=torch.float64) is fn


def test_inputs_follow_the_module_dtype():
    m = as_model(_net(torch.float64))
    out = m.forward(np.ones((2, 6), dtype=np.float32))
    assert out.dtype == np.float64


def test_estimators_wrapping_a_torch_module_or_skorch_net(data):
    from sklearn.base import BaseEstimator
    from skorch import NeuralNetClassifier

    X, y = data
    X = X.astype(np.float32)

    class WrapsNet(BaseEstimator):
        def fit(self, X, y):
            self.net_ = NeuralNetClassifier(_net(), criterion=nn.CrossEntropyLoss, max_epochs=1,
                                            train_split=None, verbose=0).fit(X, y)
            return self

    class HoldsModule(BaseEstimator):
        def fit(self, X, y):
            self.module_ = _net()
            return self

    wrapped = WrapsNet().fit(X, y)
    m = as_model(wrapped)
    assert m.module is wrapped.net_.module_ and m.differentiable
    held = HoldsModule().fit(X, y)
    assert as_model(held).module is held.module_
    with pytest.raises(NotFittedError):
        as_model(HoldsModule())


def test_flipped_arrays_are_accepted():
    X = np.random.RandomState(0).rand(3, 1, 4, 4).astype(np.float32)
    flipped = np.rot90(X, axes=(2, 3))
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
    np.testing.assert_allclose(as_model(net).forward(flipped),
                               as_model(net).forward(np.ascontiguousarray(flipped)))


def test_frozen_estimators_are_seen_through(data):
    """FrozenEstimator only blocks refits: the model, and a frozen pipeline step, stay
    differentiable with the same outputs."""
    from sklearn.frozen import FrozenEstimator

    X, y = data
    scaler = StandardScaler().fit(X)
    mlp = MLPClassifier(hidden_layer_sizes=(7,), max_iter=300, random_state=0)
    mlp.fit(scaler.transform(X), y)
    plain = as_model(make_pipeline(scaler, mlp))
    frozen = as_model(FrozenEstimator(make_pipeline(FrozenEstimator(scaler), mlp)))
    assert frozen.kind == "pipeline"
    np.testing.assert_allclose(frozen.jacobian(X[:5]), plain.jacobian(X[:5]), atol=1e-6)
    assert as_model(FrozenEstimator(mlp)).kind == "sklearn-mlp"


def test_black_box_response_is_chosen(data):
    X, y = data
    pipe = make_pipeline(Normalizer(), LogisticRegression()).fit(X, y)
    assert as_model(pipe).kind == "black-box"
    np.testing.assert_allclose(as_model(pipe, response="predict_proba").forward(X),
                               pipe.predict_proba(X))
    logp = np.log(pipe.predict_proba(X))
    np.testing.assert_allclose(as_model(pipe, response="clr_proba").forward(X),
                               logp - logp.mean(1, keepdims=True))
    m = as_model(pipe, response="decision_function")
    np.testing.assert_allclose(m.forward(X), pipe.decision_function(X))
    np.testing.assert_allclose(m.features(X, layer="logisticregression"),
                               pipe.decision_function(X))
    with pytest.raises(ValueError, match="only class labels"):
        as_model(pipe, response="predict")
    from sklearn.svm import LinearSVC

    with pytest.raises(ValueError, match="no predict_proba"):
        as_model(LinearSVC().fit(X, y), response="predict_proba")
    with pytest.raises(ValueError, match="response must be"):
        as_model(pipe, response="logits")
