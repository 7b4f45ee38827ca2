"""Clustering / emergent-language metrics against brute force and known values."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import mutual_info_score

from geolearn.generative.metrics import (
    attribute_neighbor_kl,
    cluster_accuracy,
    cluster_purity,
    disentangled_accuracy,
    positional_disentanglement,
    topographic_similarity,
)

labels = st.lists(st.integers(0, 3), min_size=1, max_size=12)


@given(labels, st.data())
def test_cluster_accuracy_is_the_best_one_to_one_relabelling(y_true, data):
    y_pred = data.draw(st.lists(st.integers(0, 3), min_size=len(y_true), max_size=len(y_true)))
    y_true, y_pred = np.array(y_true), np.array(y_pred)
    best = max(np.mean(np.array(perm)[y_pred] == y_true)
               for perm in itertools.permutations(range(4)))
    assert cluster_accuracy(y_true, y_pred) == pytest.approx(best)
    assert cluster_accuracy(y_true, y_pred) <= cluster_purity(y_true, y_pred) + 1e-12


def test_accuracy_and_purity_values():
    y = [0, 0, 1, 1, 2, 2]
    assert cluster_accuracy(y, [7, 7, 3, 3, 5, 5]) == 1.0
    # one cluster for everything: purity = majority share, accuracy = one class matched
    assert cluster_purity(y, [0] * 6) == pytest.approx(1 / 3)
    assert cluster_accuracy(y, [0] * 6) == pytest.approx(1 / 3)
    # many singleton clusters: purity 1, accuracy counts only matched clusters
    assert cluster_purity(y, range(6)) == 1.0 and cluster_accuracy(y, range(6)) == 0.5


def test_disentanglement_metrics_on_swapped_and_entangled_messages():
    rng = np.random.default_rng(0)
    A = rng.integers(0, 6, size=(2000, 2))
    assert disentangled_accuracy(A, A[:, ::-1]) == 1.0
    # 1 up to the plug-in bias of the mutual information between independent attributes
    assert positional_disentanglement(A, A[:, ::-1]) == pytest.approx(1.0, abs=0.01)
    assert topographic_similarity(A, A[:, ::-1] + 10, random_state=0) == pytest.approx(1.0)
    # a message that mixes both attributes in each position
    mixed = np.stack([A[:, 0] * 6 + A[:, 1], A[:, 1] * 6 + A[:, 0]], 1)
    assert positional_disentanglement(A, mixed) < 0.05
    assert disentangled_accuracy(A, mixed) < 0.3
    # posdis by hand for one informative position and one constant one
    M = np.stack([A[:, 0] // 2, np.zeros(2000, int)], 1)
    mi = [mutual_info_score(A[:, j], M[:, 0]) for j in range(2)]
    H = -sum(p * np.log(p) for p in np.bincount(M[:, 0]) / 2000)
    assert positional_disentanglement(A, M) == pytest.approx((max(mi) - min(mi)) / H)
    with pytest.raises(ValueError, match="2 attributes"):
        positional_disentanglement(A[:, :1], M)
    with pytest.raises(ValueError, match="positions"):
        disentangled_accuracy(A, M[:, :1])


def test_topographic_similarity_subsamples():
    rng = np.random.default_rng(1)
    A = rng.integers(0, 3, size=(5000, 3))
    noisy = np.where(rng.random(A.shape) < 0.3, rng.integers(0, 3, A.shape), A)
    full = topographic_similarity(A[:2000], noisy[:2000], max_samples=2000)
    sub = topographic_similarity(A, noisy, max_samples=500, random_state=0)
    assert 0.3 < full < 0.95 and abs(sub - full) < 0.1


def test_attribute_neighbor_kl():
    rng = np.random.default_rng(0)
    informative = rng.integers(0, 2, 400)
    E = informative[:, None] * 5.0 + rng.normal(scale=0.1, size=(400, 2))
    noise = rng.integers(0, 2, 400)
    kl = attribute_neighbor_kl(E, np.stack([informative, noise], 1))
    assert kl[0] > 1.0 and kl[1] < 0.05
    p, q = noise.mean(), None  # the order is KL(Bern(p_j) || Bern(p_j|0)) of the paper
    nbr = np.array([np.argsort(((E - e) ** 2).sum(1))[1] for e in E])
    q = noise[noise[nbr] == 0].mean()
    expected = p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q))
    assert kl[1] == pytest.approx(expected)
    with pytest.raises(ValueError, match="binary"):
        attribute_neighbor_kl(E, np.full((400, 1), 2))
