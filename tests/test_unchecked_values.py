"""Values that used to be accepted silently, or to fail inside torch, now get clear errors.

Each case is one the reliability audit found (negative loss weights, NaN temperatures,
mismatched labels, non-finite displacement fields, class indices outside the model).
"""

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from geolearn.diffeo import deform, diffeo_augment
from geolearn.generative import GridVAE, VAEClassifier
from geolearn.invariance import integrated_gradients
from geolearn.subspaces import SVBFNetClassifier
from tests.helpers import assert_message

X6 = np.random.default_rng(0).random((40, 6)).astype(np.float32)


@pytest.mark.parametrize("make, fit_args, words", [
    (lambda: VAEClassifier(classification_weight=-1, max_epochs=1), (X6, np.arange(40) % 2),
     ("classification_weight", "[0.0, inf)")),
    (lambda: GridVAE(beta=-1, max_epochs=1), (X6,), ("beta", "[0.0, inf)")),
    (lambda: GridVAE(kl_warmup_epochs=-2, max_epochs=1), (X6,), ("kl_warmup_epochs",)),
])
def test_negative_loss_weights_are_refused(make, fit_args, words):
    with pytest.raises(ValueError) as exc:
        make().fit(*fit_args)
    assert_message(exc, *words)


@pytest.mark.parametrize("kwargs, words", [
    ({"alpha": -1}, ("alpha", "[0.0, inf)")), ({"beta": "bad"}, ("beta", "'bad'")),
    ({"gamma": np.inf}, ("gamma", "[0.0, inf)", "Got inf")), ({"T": np.nan}, ("T", "(0.0, inf)")),
    ({"T": 0.0}, ("T", "(0.0, inf)")),
])
def test_svbf_net_loss_parameters(kwargs, words):
    rng = np.random.default_rng(0)
    X = np.stack([np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(20)])
    with pytest.raises(ValueError) as exc:
        SVBFNetClassifier(max_epochs=1, **kwargs).fit(X, np.arange(20) % 2)
    assert_message(exc, *words)


def test_augmentation_labels_must_match_the_images():
    X = np.random.default_rng(0).random((20, 1, 8, 8))
    with pytest.raises(ValueError) as exc:
        diffeo_augment(X, np.arange(19), random_state=0)
    assert_message(exc, "20 images", "19 labels")
    X_aug, y_aug = diffeo_augment(X, np.arange(20), random_state=0)
    assert len(X_aug) == len(y_aug) == 40


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_displacements_are_refused(bad):
    X = np.random.default_rng(0).random((3, 1, 8, 8))
    fields = np.zeros((3, 2, 8, 8))
    fields[0, 0, 2, 2] = bad
    with pytest.raises(ValueError, match="fields contain NaN or infinity"):
        deform(X, fields)


@pytest.mark.parametrize("target, words", [
    (5, ("outside the model's 3 outputs", "[5]")), (-1, ("outside", "[-1]")),
    (np.array([0, 1]), ("one per sample", "(3,)")), (1.5, ("integer class indices",)),
])
def test_integrated_gradients_targets(target, words):
    X = np.random.default_rng(0).random((3, 1, 8, 8)).astype(np.float32)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 3))
    with pytest.raises(ValueError) as exc:
        integrated_gradients(net, X, target, steps=4)
    assert_message(exc, *words)
    assert integrated_gradients(net, X, np.array([0, 1, 2]), steps=4).shape == X.shape


@pytest.mark.parametrize("kwargs, words", [
    ({"degree": "bad"}, ("'degree' parameter",)),
    ({"coef0": np.nan}, ("'coef0' parameter", "(-inf, inf)", "Got nan")),
    ({"probability": "yes"}, ("'probability' parameter", "'bool'")),
    ({"C": 0.0}, ("'C' parameter", "(0.0, inf)")),
])
def test_conformal_svc_checks_what_svc_would(kwargs, words):
    from geolearn.riemannian import ConformalKernelSVC

    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError) as exc:
        ConformalKernelSVC(kernel="poly", n_refits=1, **kwargs).fit(X, np.arange(30) % 2)
    assert_message(exc, *words)


class _NaNNet(torch.nn.Module):
    """A model whose outputs are NaN (a broken model, or inputs far out of its range)."""

    def forward(self, x):
        return torch.nn.functional.linear(x.flatten(1), torch.ones(3, x[0].numel())) * np.nan


@pytest.mark.filterwarnings("ignore:only 12 probe images")
def test_a_model_returning_nan_is_reported_not_averaged():
    from geolearn.diffeo import relative_stability

    X = np.random.default_rng(0).random((12, 1, 16, 16))
    with pytest.raises(ValueError) as exc:
        relative_stability(_NaNNet(), X, random_state=0)
    assert_message(exc, "NaN or infinite for 12 of 12 images")
    with pytest.raises(ValueError) as exc:
        integrated_gradients(_NaNNet(), X.astype(np.float32), 0, steps=4)
    assert_message(exc, "NaN or infinite for 12 of 12 samples")


def test_riemannian_geometry_before_fit_and_bad_condition_bound():
    from sklearn.exceptions import NotFittedError

    from geolearn.riemannian import RiemannianFeatureGeometry

    net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh())
    X = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(NotFittedError):
        RiemannianFeatureGeometry(net).metric_tensor(X)
    with pytest.raises(ValueError) as exc:
        RiemannianFeatureGeometry(net, max_condition=-1).fit(X)
    assert_message(exc, "'max_condition' parameter", "[1.0, inf)")
    assert RiemannianFeatureGeometry(net).fit(X).metric_tensor(X).shape == (5, 2, 2)


def test_pullback_metric_of_a_float32_module_is_computed_in_float64():
    from geolearn.riemannian import PullbackMetric

    net = torch.nn.Linear(2, 4)  # float32, as torch builds it
    g = PullbackMetric(net).metric(np.random.default_rng(0).normal(size=(5, 2)))
    W = net.weight.detach().double()
    assert g.dtype == torch.float64 and net.weight.dtype == torch.float32  # never cast in place
    torch.testing.assert_close(g, (W.T @ W / 4).expand(5, 2, 2))


def test_requests_beyond_memory_are_refused_up_front(monkeypatch):
    """Before: sample_displacement_fields(512, size=10000) asked for 42 GB at once, and a
    dense CIDM of N = 20,000 died after 211 s; now both say the size and the way around."""
    import geolearn._utils.memory as memory
    from geolearn.diffeo import sample_displacement_fields
    from geolearn.manifold import CIDM

    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)  # a 1 GiB machine
    with pytest.raises(MemoryError) as exc:
        sample_displacement_fields(512, T=1e-3, c=3, size=10000)
    assert_message(exc, "39.1 GiB", "1.0 GiB are available", "size=")
    assert sample_displacement_fields(28, T=1e-3, c=3, size=4).shape == (4, 2, 28, 28)
    X = np.random.default_rng(0).normal(size=(6000, 2))
    with pytest.raises(MemoryError) as exc:
        CIDM(n_neighbors=None).fit(X)
    assert_message(exc, "dense CIDM kernel of N = 6000", "n_neighbors='auto'")
    from geolearn.riemannian import RiemannianFeatureGeometry

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 4))
    images = np.random.default_rng(0).random((40, 3, 32, 32))
    with pytest.warns(UserWarning, match="singular"):
        geometry = RiemannianFeatureGeometry(net).fit(images[:5])
    with pytest.raises(MemoryError) as exc:
        geometry.metric_tensor(images)  # 40 x 3072 x 3072 float64: 2.8 GiB
    assert_message(exc, "40 metric tensors of 3072 x 3072", "log_volume_element")
    est = CIDM(n_neighbors=None)
    with pytest.raises(MemoryError):
        est.fit(X)
    with pytest.raises(NotFittedError):  # the refused fit left nothing behind
        check_is_fitted(est)
