"""split_indices and cross_model_detection (Algorithm 1) on tiny networks."""

import numpy as np
import pytest
import torch
from torch import nn

from geolearn.adversarial import fgsm
from geolearn.representations import cross_model_detection, split_indices


def tanh_net(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def toy(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 6)).astype(np.float32)
    return X, np.arange(n) % 3


def test_split_indices_are_disjoint_stratified_and_seeded():
    y = np.repeat([0, 1, 2], [40, 30, 20])
    parts = split_indices(y, random_state=0)
    all_idx = np.concatenate(list(parts.values()))
    assert np.array_equal(np.sort(all_idx), np.arange(len(y)))
    assert [len(parts[k]) for k in ("map", "svm", "val")] == [36, 27, 27]
    for rows in parts.values():
        np.testing.assert_allclose(np.bincount(y[rows]) / len(rows), [4 / 9, 3 / 9, 2 / 9],
                                   atol=0.05)
    again = split_indices(y, random_state=0)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)


@pytest.mark.parametrize("split", [(0.5, 0.5, 0.0), (0.4, 0.3, 0.2), (0.5, 0.5), "abc",
                                   (0.4, -0.1, 0.7)])
def test_split_fractions_errors(split):
    with pytest.raises(ValueError, match="split"):
        split_indices(np.arange(60) % 2, split)


def test_split_needs_two_rows_of_a_class_per_part():
    with pytest.raises(ValueError, match="at least 2 of each class"):
        split_indices(np.r_[np.zeros(30), np.ones(5)])
    with pytest.raises(ValueError, match="fewer than 2 rows of a class"):
        split_indices(np.r_[np.zeros(30), np.ones(7)], (0.8, 0.1, 0.1))


def test_a_network_mapped_onto_itself_detects_exactly_as_natively():
    """Identical embeddings give the identity map, so mapped and native AUROC coincide."""
    net = tanh_net(0)
    X, y = toy()
    res = cross_model_detection({"a": net, "b": net}, "a", X, y, eps=0.3, random_state=0)
    src = res.sources["b"]
    np.testing.assert_allclose(res.detector.maps_["b"].coef_, np.eye(8), atol=1e-8)
    assert src["auroc_mapped"] == pytest.approx(res.auroc_native, abs=1e-12)
    assert src["mse_all"] < 1e-20 and src["r2"] == pytest.approx(1.0)
    assert src["mapped_head_accuracy_adv"] == pytest.approx(res.accuracy_adv["a"], abs=0.15)


def test_result_fields_and_embeddings():
    nets = {"a": tanh_net(0), "b": tanh_net(1)}
    X, y = toy()
    res = cross_model_detection(nets, "a", X, y, eps=0.3, random_state=0)
    assert set(res.sources) == {"b"}
    assert set(res.sources["b"]) == {"auroc_native", "auroc_mapped", "mse_adv", "mse_all", "r2",
                                     "mapped_head_accuracy_adv", "mapped_head_accuracy_clean"}
    E_clean, E_adv = res.embeddings["b"]
    with torch.no_grad():
        np.testing.assert_allclose(E_clean, nets["b"][:2](torch.as_tensor(X)).numpy(), atol=1e-6)
        logits = nets["b"](torch.as_tensor(fgsm(nets["b"], X, y, 0.3))).numpy()
    assert res.accuracy_adv["b"] == pytest.approx(np.mean(logits.argmax(1) == y))
    assert res.sources["b"]["auroc_native"] == res.auroc_native


@pytest.mark.parametrize("kwargs", [
    {"attack": "pgd", "attack_kwargs": {"steps": 3, "random_state": 0}},
    {"attack": "cw", "attack_kwargs": {"steps": 3}},
    {"map_rows": "adv", "eval_rows": "mapped_adv_vs_native_clean", "alpha": 1.0},
    {"representation": "fourier_phase"},
])
def test_options_run(kwargs):
    import warnings

    X, y = toy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # C&W failures after 3 steps
        res = cross_model_detection({"a": tanh_net(0), "b": tanh_net(1)}, "a", X, y, eps=0.3,
                                    random_state=0, **kwargs)
    src = res.sources["b"]
    assert 0 <= src["auroc_mapped"] <= 1 and np.isfinite(src["mse_adv"])
    fourier = kwargs.get("representation", "raw") != "raw"
    assert (src["mapped_head_accuracy_adv"] is None) == fourier


def test_callable_attack_and_errors():
    X, y = toy()
    nets = {"a": tanh_net(0), "b": tanh_net(1)}
    res = cross_model_detection(nets, "a", X, y, eps=0.0,
                                attack=lambda net, X, y, eps: (np.clip(X + 0.5, 0, 1), None))
    with torch.no_grad():
        shifted = nets["a"][:2](torch.as_tensor(np.clip(X + 0.5, 0, 1))).numpy()
    np.testing.assert_allclose(res.embeddings["a"][1], shifted, atol=1e-6)
    for kwargs, match in [({"attack": "deepfool"}, "attack"), ({"map_rows": "all"}, "map_rows"),
                          ({"eval_rows": "x"}, "eval_rows"), ({"representation": "fft"},
                                                              "representation")]:
        with pytest.raises(ValueError, match=match):
            cross_model_detection(nets, "a", X, y, eps=0.1, **kwargs)
    with pytest.raises(ValueError, match="target='c'"):
        cross_model_detection(nets, "c", X, y, eps=0.1)
    with pytest.raises(ValueError, match="at least one source"):
        cross_model_detection({"a": nets["a"]}, "a", X, y, eps=0.1)
    with pytest.raises(ValueError, match="eps"):
        cross_model_detection(nets, "a", X, y, eps=-0.1)
