"""split_indices and cross_model_detection (Algorithm 1) on tiny networks."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
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
    res = cross_model_detection({"a": net, "b": net}, "a", X, y, epsilon=0.3, random_state=0)
    src = res.sources["b"]
    np.testing.assert_allclose(res.detector.maps_["b"].coef_, np.eye(8), atol=1e-8)
    assert src["auroc_mapped"] == pytest.approx(res.auroc_native, abs=1e-12)
    assert src["mse_all"] < 1e-20 and src["r2"] == pytest.approx(1.0)
    assert src["mapped_head_accuracy_adv"] == pytest.approx(res.accuracy_adv["a"], abs=0.15)


def test_result_fields_and_embeddings():
    nets = {"a": tanh_net(0), "b": tanh_net(1)}
    X, y = toy()
    res = cross_model_detection(nets, "a", X, y, epsilon=0.3, random_state=0)
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
    {"attack": "pgd", "attack_kwargs": {"n_steps": 3, "random_state": 0}},
    {"attack": "cw", "attack_kwargs": {"n_steps": 3}},
    {"map_rows": "adv", "eval_rows": "mapped_adv_vs_native_clean", "alpha": 1.0},
    {"representation": "fourier_phase"},
])
def test_options_run(kwargs):
    import warnings

    X, y = toy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # C&W failures after 3 steps
        res = cross_model_detection({"a": tanh_net(0), "b": tanh_net(1)}, "a", X, y,
                                    epsilon=0.3, random_state=0, **kwargs)
    src = res.sources["b"]
    assert 0 <= src["auroc_mapped"] <= 1 and np.isfinite(src["mse_adv"])
    fourier = kwargs.get("representation", "raw") != "raw"
    assert (src["mapped_head_accuracy_adv"] is None) == fourier


def test_callable_attack_and_errors():
    X, y = toy()
    nets = {"a": tanh_net(0), "b": tanh_net(1)}
    res = cross_model_detection(nets, "a", X, y, epsilon=0.0,
                                attack=lambda net, X, y, epsilon: (np.clip(X + 0.5, 0, 1), None))
    with torch.no_grad():
        shifted = nets["a"][:2](torch.as_tensor(np.clip(X + 0.5, 0, 1))).numpy()
    np.testing.assert_allclose(res.embeddings["a"][1], shifted, atol=1e-6)
    for kwargs, match in [({"attack": "deepfool"}, "attack"), ({"map_rows": "all"}, "map_rows"),
                          ({"eval_rows": "x"}, "eval_rows"), ({"representation": "fft"},
                                                              "representation")]:
        with pytest.raises(ValueError, match=match):
            cross_model_detection(nets, "a", X, y, epsilon=0.1, **kwargs)
    with pytest.raises(ValueError, match="target='c'"):
        cross_model_detection(nets, "c", X, y, epsilon=0.1)
    with pytest.raises(ValueError, match="at least one source"):
        cross_model_detection({"a": nets["a"]}, "a", X, y, epsilon=0.1)
    with pytest.raises(ValueError, match="epsilon"):
        cross_model_detection(nets, "a", X, y, epsilon=-0.1)


def test_each_network_goes_through_as_model_once(monkeypatch):
    """Regression (#14): one adapter per network, shared by geolearn's attack and the
    embeddings (the embedder and the attack used to convert every network again)."""
    from geolearn.models import ModelAdapter

    built = []
    init = ModelAdapter.__init__

    def spy(self, **kwargs):
        built.append(kwargs["estimator"])
        init(self, **kwargs)

    monkeypatch.setattr(ModelAdapter, "__init__", spy)
    nets = {"a": tanh_net(0), "b": tanh_net(1), "c": tanh_net(2)}
    X, y = toy()
    cross_model_detection(nets, "a", X, y, epsilon=0.3, attack="pgd",
                          attack_kwargs={"n_steps": 2, "random_state": 0}, random_state=0)
    assert len(built) == 3 and all(any(m is net for m in built) for net in nets.values())


def test_a_callable_attack_receives_the_network_and_its_output_is_checked():
    X, y = toy()
    nets = {"a": tanh_net(0), "b": tanh_net(1)}
    received = []

    def attack(net, X, y, epsilon):
        received.append(net)
        return np.clip(X + epsilon, 0, 1)

    cross_model_detection(nets, "a", X, y, epsilon=0.2, attack=attack, random_state=0)
    assert received[0] is nets["a"] and received[1] is nets["b"]
    with pytest.raises(ValueError, match="shape"):
        cross_model_detection(nets, "a", X, y, epsilon=0.0,
                              attack=lambda net, X, y, epsilon: X[:, :5])
    with pytest.raises(ValueError, match="NaN"):
        cross_model_detection(nets, "a", X, y, epsilon=0.0,
                              attack=lambda net, X, y, epsilon: np.full_like(X, np.nan))


def test_the_family_branches_on_no_model_type_and_imports_no_private_module():
    """Regression (#14): only geolearn.models tells model types apart (the detector used to
    test ``isinstance(..., Pipeline)``)."""
    import tests.test_architecture as arch

    ours = ("representations", "manifold")
    assert [f for f in arch._model_type_branches(arch.ROOT) if f.startswith(ours)] == []
    assert [f for f in arch._private_imports() if f[0].startswith(ours)] == []


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.integers(6, 30), min_size=2, max_size=4), seed=st.integers(0, 10**6),
       map_frac=st.floats(0.2, 0.6))
def test_split_indices_property(counts, seed, map_frac):
    """Any feasible split is a seeded partition with every class in every part."""
    y = np.repeat(np.arange(len(counts)), counts)
    split = (map_frac, (1 - map_frac) / 2, (1 - map_frac) / 2)
    try:
        parts = split_indices(y, split, random_state=seed)
    except ValueError as exc:
        assert "fewer than 2 rows of a class" in str(exc)
        return
    rows = np.concatenate([parts[k] for k in ("map", "svm", "val")])
    np.testing.assert_array_equal(np.sort(rows), np.arange(len(y)))
    for part in parts.values():
        assert np.all(np.diff(part) > 0)
        assert np.all(np.bincount(y[part], minlength=len(counts)) >= 2)
    again = split_indices(y, split, random_state=seed)
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
