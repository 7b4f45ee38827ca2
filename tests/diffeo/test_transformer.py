"""MaxEntropyDiffeo, DiffeoAugment and diffeo_augment."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from geolearn.datasets import load_digits_images
from geolearn.diffeo import (
    DiffeoAugment,
    MaxEntropyDiffeo,
    StabilityWarning,
    diffeo_augment,
    max_xi,
    temperature_range,
)
from geolearn.diffeo._transformer import _draw_fields
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits_images(upsample=2, return_X_y=True)
    return X[:200], y[:200]


def test_fit_transform_deforms_and_transform_does_not(digits):
    X, _ = digits
    aug = MaxEntropyDiffeo(T=0.005, random_state=0)
    Xt = aug.fit_transform(X)
    assert Xt.shape == X.shape and Xt.dtype == X.dtype
    assert not np.allclose(Xt, X)
    same = aug.transform(X)
    assert np.array_equal(same, X) and same is not X
    assert aug.image_shape_ == (1, 16, 16) and aug.n_features_in_ == 256
    assert aug.T_range_ == pytest.approx(temperature_range(16, 3))


def test_always_mode_is_reproducible_and_preserves_layout(digits):
    X, _ = digits
    Xf = X.reshape(len(X), -1).astype(np.float64)
    aug = MaxEntropyDiffeo((16, 16), T=0.005, apply_on="always", random_state=0)
    out = aug.fit_transform(Xf)
    assert out.shape == Xf.shape and out.dtype == np.float64
    np.testing.assert_array_equal(aug.fit(Xf).transform(Xf), out)
    # image layout gives the same deformation as flat rows
    np.testing.assert_allclose(aug.fit_transform(X).reshape(len(X), -1), out, atol=1e-6)
    names = aug.fit(Xf).get_feature_names_out()
    assert len(names) == 256


def test_p_controls_the_fraction_deformed(digits):
    X, _ = digits
    assert np.array_equal(MaxEntropyDiffeo(T=0.005, p=0.0).fit_transform(X), X)
    out = MaxEntropyDiffeo(T=0.005, p=0.5, random_state=0).fit_transform(X)
    changed = np.any(out != X, axis=(1, 2, 3)).mean()
    assert 0.35 < changed < 0.65


def _rngs(n, stream=0):
    return [np.random.default_rng([stream, i]) for i in range(n)]


def test_temperature_and_cutoff_ranges():
    fields = _draw_fields(_rngs(400), 16, T=(1e-4, 1e-2), c=(1, 4), delta=1.0,
                          delta_formula="exact", reject_non_diffeo=False, device="cpu")
    rms = fields.square().sum(1).mean((1, 2)).sqrt().numpy()
    # log-uniform T over two decades: displacements span about one decade
    assert rms.max() / rms.min() > 5
    auto = _draw_fields(_rngs(200), 16, T="auto", c=3, delta=1.0, delta_formula="exact",
                        reject_non_diffeo=False, device="cpu")
    assert torch.all(auto[..., 0, :] == 0)


def test_reject_non_diffeo_gives_diffeomorphisms():
    T_max = temperature_range(16, 3)[1]
    kw = dict(T=T_max, c=3, delta=1.0, delta_formula="exact", device="cpu")
    plain = _draw_fields(_rngs(300), 16, reject_non_diffeo=False, **kw)
    assert (max_xi(plain) >= 1).mean() > 0.2
    kept = _draw_fields(_rngs(300, 1), 16, reject_non_diffeo=True, **kw)
    assert (max_xi(kept) < 1).all()
    with pytest.warns(StabilityWarning, match="redraws"):
        _draw_fields(_rngs(50, 2), 16, reject_non_diffeo=True, **dict(kw, T=50 * T_max))


def test_pipeline_augmentation(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    pipe = make_pipeline(MaxEntropyDiffeo((16, 16), T=0.005, random_state=0),
                         LogisticRegression(max_iter=100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(Xf, y)
    # predictions are made on clean images
    np.testing.assert_array_equal(pipe.predict(Xf), pipe[-1].predict(Xf))


def test_sklearn_integration_and_pickle(digits):
    X, _ = digits
    Xf = X.reshape(len(X), -1)
    aug = MaxEntropyDiffeo((16, 16), T=0.005, apply_on="always", random_state=0)
    check_pipeline_gridsearch_pickle(aug, Xf, param_grid={"c": [2, 3]},
                                     scoring=lambda est, X, y=None: 0.0)
    fitted = clone(aug).fit(Xf)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fitted)).transform(Xf),
                                  fitted.transform(Xf))


def test_bad_inputs(digits):
    X, _ = digits
    Xf = X.reshape(len(X), -1)
    check_bad_inputs(MaxEntropyDiffeo((16, 16), T=0.005, apply_on="always"), Xf, min_samples=1)


@pytest.mark.parametrize("params, match", [
    (dict(c=(3, 2)), "c"),
    (dict(c=15), "n - 2"),
    (dict(T=(0.0, 0.1)), "T range"),
    (dict(T=(0.2, 0.1)), "T range"),
    (dict(T="hot"), "T"),
    (dict(T=-1.0), "T"),
    (dict(p=1.5), "p"),
    (dict(apply_on="predict"), "apply_on"),
    (dict(interp="nearest"), "interp"),
    (dict(c=1, delta_formula="asymptotic"), "c=1"),
])
def test_bad_parameters(digits, params, match):
    X, _ = digits
    with pytest.raises(ValueError, match=match):
        MaxEntropyDiffeo(**params).fit(X)


def test_non_square_images():
    with pytest.raises(ValueError, match="square"):
        MaxEntropyDiffeo().fit(np.zeros((3, 1, 8, 6)))
    with pytest.raises(ValueError, match="fitted on"):
        MaxEntropyDiffeo(T=0.01).fit(np.zeros((3, 1, 8, 8))).transform(np.zeros((3, 1, 9, 9)))


@given(value=st.sampled_from([np.nan, np.inf, -np.inf]), index=st.integers(0, 255))
def test_non_finite_pixels_are_refused(value, index):
    X = np.zeros((4, 256))
    X[1, index] = value
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        MaxEntropyDiffeo((16, 16)).fit(X)


def test_diffeo_augment(digits):
    X, y = digits
    X_aug, y_aug = diffeo_augment(X[:30], y[:30], n_copies=2, T=0.005, random_state=0)
    assert X_aug.shape == (90, 1, 16, 16) and y_aug.shape == (90,)
    np.testing.assert_array_equal(X_aug[:30], X[:30])
    np.testing.assert_array_equal(y_aug[30:60], y[:30])
    assert not np.allclose(X_aug[30:60], X_aug[60:90])  # independent copies
    X_only, none = diffeo_augment(X[:30], include_original=False, T=0.005, random_state=0)
    assert X_only.shape == (30, 1, 16, 16) and none is None
    with pytest.raises(ValueError, match="n_copies"):
        diffeo_augment(X[:30], y[:30], n_copies=0)


def test_diffeo_augment_module_train_vs_eval(digits):
    X, _ = digits
    x = torch.as_tensor(X[:16])
    layer = DiffeoAugment(T=0.005, random_state=0)
    out = layer(x)
    assert out.shape == x.shape and not torch.equal(out, x)
    assert not torch.equal(layer(x), out)  # fresh fields at every call
    assert torch.equal(layer.eval()(x), x)
    flat = DiffeoAugment((16, 16), T=0.005, random_state=0)(x.reshape(16, -1))
    torch.testing.assert_close(flat, out.reshape(16, -1))
    with pytest.raises(ValueError, match="image_shape"):
        DiffeoAugment(T=0.005).train()(x.reshape(16, -1))
    with pytest.raises(ValueError, match="c"):
        DiffeoAugment(c=0)


def test_diffeo_augment_in_skorch_training(digits):
    from skorch import NeuralNetClassifier

    X, y = digits
    torch.manual_seed(0)
    module = torch.nn.Sequential(DiffeoAugment(T=0.005, random_state=0), torch.nn.Flatten(),
                                 torch.nn.Linear(256, 10))
    net = NeuralNetClassifier(module, max_epochs=2, lr=0.05, train_split=None, verbose=0)
    net.fit(X, y)
    # prediction runs in eval mode: deterministic
    np.testing.assert_array_equal(net.predict_proba(X), net.predict_proba(X))
