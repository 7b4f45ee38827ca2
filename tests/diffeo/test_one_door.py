"""How diffeo reaches models: through geolearn.models only (as_model, the response resolver,
fit_or_use, resolve_device). Each test names the defect it guards against."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.validation import check_is_fitted
from torch import nn

import geolearn.models._adapter as adapter_module
from geolearn.datasets import load_digits_images
from geolearn.diffeo import (
    DiffeoStability,
    StabilityWarning,
    relative_stability,
    sample_displacement_fields,
    subspace_relative_stability,
)
from tests.test_architecture import ROOT, _model_type_branches, _private_imports

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning",
                                        "ignore::geolearn.diffeo.StabilityWarning")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits_images(upsample=2, return_X_y=True)
    return X[:300].reshape(300, -1), y[:300]


@pytest.fixture(scope="module")
def mlp(digits):
    X, y = digits
    return MLPClassifier((8,), max_iter=30, random_state=0).fit(X, y)


@pytest.fixture
def conversions(monkeypatch):
    """Every MLP -> torch conversion done by as_model, recorded."""
    calls = []
    real = adapter_module.mlp_to_torch

    def spy(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(adapter_module, "mlp_to_torch", spy)
    return calls


def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                         nn.Flatten(), nn.Linear(16, 10))


KW = dict(image_shape=(16, 16), random_state=0)


def test_an_mlp_reaches_the_probe_through_as_model_once(digits, mlp, conversions):
    """Defect 1: diffeo read an MLP through its own model switch and never called as_model."""
    X, y = digits
    est = DiffeoStability(mlp, **KW).fit(X[:150], y[:150])
    first = est.score(X[150:])
    assert est.score(X[150:]) == first
    assert conversions == [mlp]  # one conversion for fit and both measurements
    # the output stays the estimator's own response, clr(predict_proba)
    assert est.response_ == "clr_proba"
    centred = nn.Sequential(_logits(mlp), _Centre())
    assert relative_stability(centred, X[150:], **KW).R == pytest.approx(10**-first, rel=1e-9)


def test_layers_of_an_mlp_convert_it_once_and_agree_with_its_output(digits, mlp, conversions):
    """Defect 2: with layers the MLP was converted twice (at fit and at every measurement)."""
    X, _ = digits
    kw = dict(KW, response="predict_proba")
    res = relative_stability(mlp, X[150:], layers=["act_0", "out_activation"], **kw)
    assert conversions == [mlp]
    # the output comes from scikit-learn, unchanged by probing layers ...
    assert relative_stability(mlp, X[150:], **kw).R == res.R
    # ... and the converted module's last layer is that same output
    assert res.layers["out_activation"].R == pytest.approx(res.R, rel=1e-12)


def test_converting_a_model_leaves_the_global_torch_rng_alone(digits, mlp):
    X, _ = digits
    torch.manual_seed(0)
    relative_stability(mlp, X[150:], layers=["linear_0"], **KW)
    after = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(3))


def test_a_fitted_model_is_used_as_is_and_frozen_survives_clone(digits, mlp):
    """Defect 3: diffeo had its own ``prefit`` policy; now ``fit_or_use`` decides."""
    X, y = digits
    est = DiffeoStability(mlp, **KW)
    assert "prefit" not in est.get_params()
    assert est.fit(X[:150], y[:150]).estimator_ is mlp  # was a refitted clone by default
    unfitted = MLPClassifier((4,), max_iter=5, random_state=0)
    fitted = DiffeoStability(unfitted, **KW).fit(X, y).estimator_
    assert fitted is not unfitted and check_is_fitted(fitted) is None
    with pytest.raises(NotFittedError, match="fit it first|Fit it first"):
        relative_stability(clone(unfitted), X[150:], **KW)
    frozen = FrozenEstimator(mlp)
    search = GridSearchCV(DiffeoStability(frozen, **KW), {"c": [2, 3]}, cv=2).fit(X[:200], y[:200])
    assert search.best_estimator_.estimator_ is frozen
    np.testing.assert_array_equal(search.best_estimator_.predict_proba(X), mlp.predict_proba(X))


def test_tags_follow_the_estimator_and_torch_modules_are_prefit(digits):
    assert DiffeoStability(LogisticRegression()).__sklearn_tags__().estimator_type == "classifier"
    assert DiffeoStability(_cnn()).__sklearn_tags__().estimator_type is None
    net = _cnn()
    X, _ = digits
    assert DiffeoStability(net, **KW).fit(X[:150]).estimator_ is net


def test_frozen_skorch_net_and_pipeline_ending_in_it_are_probed_through_forward(digits):
    """Defect 4: a Pipeline (or FrozenEstimator) ending in a net was told apart by diffeo's
    own isinstance switch, which missed a frozen net and read its predict_proba instead."""
    from skorch import NeuralNetClassifier

    X, y = digits
    images = X.reshape(-1, 1, 16, 16)
    net = NeuralNetClassifier(_cnn(), max_epochs=1, lr=0.01, train_split=None,
                              verbose=0).fit(images, y)
    ref = relative_stability(net, images[:120], random_state=0)
    frozen = relative_stability(FrozenEstimator(net), images[:120], random_state=0)
    assert frozen.response == "module" and frozen.R == ref.R
    # numpy preprocessing that as_model cannot convert, then the net's forward pass
    pipe = make_pipeline(FunctionTransformer(lambda A: A.reshape(-1, 1, 16, 16)).fit(X),
                         FrozenEstimator(net))
    res = relative_stability(pipe, X[:120], image_shape=(16, 16), random_state=0)
    assert res.response == "module" and res.R == pytest.approx(ref.R, rel=1e-12)


def test_diffeo_does_not_branch_on_model_types():
    """Defects 3-4: isinstance on torch/skorch/sklearn model types lives in geolearn.models."""
    assert [f for f in _model_type_branches(ROOT) if f.startswith("diffeo/")] == []
    assert [f for f, _ in _private_imports() if f.startswith("diffeo/")] == []


def test_device_is_resolved_at_fit_by_resolve_device(digits):
    """Defect 5: a bad device passed fit for scikit-learn models and failed later, or reached
    torch.device unchecked (sample_displacement_fields)."""
    X, y = digits
    with pytest.raises(ValueError, match="device must be 'auto'"):
        DiffeoStability(LogisticRegression(max_iter=50), device="gpu0", **KW).fit(X, y)
    with pytest.raises(ValueError, match="device must be 'auto'"):
        sample_displacement_fields(8, 0.01, 2, device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            DiffeoStability(LogisticRegression(max_iter=50), device="cuda", **KW).fit(X, y)
    lr = LogisticRegression(max_iter=50).fit(X, y)
    on_cpu = relative_stability(lr, X[:120], device="cpu", **KW)
    assert on_cpu.R == relative_stability(lr, X[:120], **KW).R


class _Centre(nn.Module):
    def forward(self, z):
        return z - z.mean(dim=1, keepdim=True)


def _logits(mlp):
    from geolearn.models import mlp_to_torch

    net = mlp_to_torch(mlp, dtype=torch.float64)
    return nn.Sequential(*(m for name, m in net.named_children() if name != "out_activation"))


@settings(max_examples=15, deadline=None)
@given(arrays(np.float64, (40, 4), elements=st.floats(-3, 3)),
       st.sampled_from(["median", "mean", "median_per_unit"]))
def test_subspace_stability_of_a_linear_score_is_the_same_through_torch_and_sklearn(X, average):
    """The torch forward pass and the scikit-learn decision_function of one linear score give
    the same ratios: both routes reach the model through the same door."""
    w = np.random.RandomState(0).randn(1, 4)
    lin = nn.Linear(4, 1, bias=False, dtype=torch.float64)
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(w))
    lr = LogisticRegression()
    lr.coef_, lr.intercept_, lr.classes_, lr.n_features_in_ = w, np.zeros(1), np.arange(2), 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        a = subspace_relative_stability(lin, X, [0], average=average, random_state=0)
        b = subspace_relative_stability(lr, X, [0], average=average, random_state=0)
    assert a.response == "module" and b.response == "decision_function"
    for q in ("R", "D", "G"):
        assert a[q] == pytest.approx(b[q], rel=1e-9, abs=1e-300, nan_ok=True)
