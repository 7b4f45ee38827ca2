"""Reproduction of MRML's episodes and meta split (paper Sec. 4.2): EpisodicSampler and
NeighborhoodHoldout against brute-force neighbour searches.

Spec acceptance experiment 2 (the splitter's and sampler's guarantees as hypothesis
properties): disjoint batches of the right size, the brute-force nearest neighbours
that each strategy promises, reproducible draws.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import cross_validate

from geolearn.meta_learning import EpisodicSampler, NeighborhoodHoldout
from tests.helpers import assert_message


def _points(seed, n, d):
    # continuous draws: no tied distances, so "the nearest" is unique
    return np.random.default_rng(seed).normal(size=(n, d))


def _dist(X, i):
    return np.linalg.norm(X - X[i], axis=1)


episode = st.tuples(st.integers(0, 2**31 - 1), st.integers(1, 8), st.integers(1, 4),
                    st.integers(0, 20))


@settings(max_examples=40, deadline=None)
@given(episode, st.sampled_from(["nearest", "random", "neighborhood", "A", "B", "C"]))
def test_batches_are_disjoint_of_size_b_inside_s(params, strategy):
    seed, B, d, extra = params
    X = _points(seed, 2 * B + 1 + extra, d)
    sampler = EpisodicSampler(strategy, batch_size=B, random_state=seed).fit(X)
    for _ in range(3):
        train, test = sampler.sample()
        assert len(train) == len(set(train)) == B and len(test) == len(set(test)) == B
        assert not set(train) & set(test)
        assert min(train.min(), test.min()) >= 0 and max(train.max(), test.max()) < len(X)


@settings(max_examples=40, deadline=None)
@given(episode)
def test_neighborhood_is_the_brute_force_knn_of_its_anchor_outside_s_train(params):
    seed, B, d, extra = params
    X = _points(seed, 2 * B + 1 + extra, d)
    train, test = EpisodicSampler("C", batch_size=B, random_state=seed).fit(X).sample()
    rest = np.setdiff1d(np.arange(len(X)), train)
    matches = [set(rest[np.argsort(_dist(X, a)[rest])[:B]]) == set(test) for a in test]
    assert any(matches)


@settings(max_examples=40, deadline=None)
@given(episode)
def test_nearest_takes_each_partners_nearest_unused_neighbour(params):
    seed, B, d, extra = params
    X = _points(seed, 2 * B + 1 + extra, d)
    train, test = EpisodicSampler("A", batch_size=B, random_state=seed).fit(X).sample()
    rest = np.setdiff1d(np.arange(len(X)), train)
    for i, j in zip(train, test):
        closer = rest[_dist(X, i)[rest] < _dist(X, i)[j]]
        # anything nearer than the partner chosen was already taken by another train row
        assert set(closer) <= set(test) - {j}


def test_the_random_strategy_draws_from_the_rest_uniformly():
    X = _points(0, 41, 2)
    sampler = EpisodicSampler("random", batch_size=10, random_state=0).fit(X)
    counts = np.zeros(len(X))
    for _ in range(2000):
        counts[sampler.sample()[1]] += 1
    # P(row in S_test) = P(not in S_train) P(drawn | not) = (31/41) (10/31) = 10/41
    np.testing.assert_allclose(counts / 2000, 10 / 41, atol=0.04)


def test_episodes_replay_under_a_seed_and_train_draws_do_not_depend_on_the_strategy():
    X = _points(1, 60, 3)
    a, b = (EpisodicSampler("C", 8, random_state=3).fit(X) for _ in range(2))
    for _ in range(5):
        (ta, sa), (tb, sb) = a.sample(), b.sample()
        np.testing.assert_array_equal(ta, tb)
        np.testing.assert_array_equal(sa, sb)
    trains = [EpisodicSampler(s, 8, random_state=3).fit(X).sample()[0]
              for s in ("nearest", "random", "neighborhood")]
    for t in trains[1:]:
        np.testing.assert_array_equal(t, trains[0])


def test_sampler_refuses_too_few_rows_and_bad_strategies():
    X = _points(0, 16, 2)
    with pytest.raises(ValueError) as exc:
        EpisodicSampler(batch_size=8).fit(X)
    assert_message(exc, "2 * batch_size + 1 = 17", "got 16")
    EpisodicSampler(batch_size=7).fit(X)  # 15 + 1 rows suffice
    with pytest.raises(ValueError, match="strategy"):
        EpisodicSampler("D", batch_size=2).fit(X)


# -- NeighborhoodHoldout -------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(5, 60), st.integers(1, 4), st.integers(1, 3),
       st.data())
def test_holdout_is_anchor_plus_brute_force_neighbours_and_a_partition(seed, n, d, n_splits,
                                                                      data):
    X = _points(seed, n, d)
    m = data.draw(st.integers(1, n - 1))
    cv = NeighborhoodHoldout(n_holdout=m, n_splits=n_splits, random_state=seed)
    splits = list(cv.split(X))
    assert len(splits) == cv.get_n_splits() == n_splits
    for train, test in splits:
        assert len(test) == m
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
        nearest = [set(np.argsort(_dist(X, a))[:m]) for a in test]
        assert set(test) in nearest  # the anchor's m nearest (itself included)
    again = list(NeighborhoodHoldout(m, n_splits, random_state=seed).split(X))
    for (tr1, te1), (tr2, te2) in zip(splits, again):
        np.testing.assert_array_equal(te1, te2)


def test_holdout_stays_in_the_anchors_group():
    X = _points(0, 90, 2)
    groups = np.repeat([0, 1, 2], 30)
    for _, test in NeighborhoodHoldout(10, n_splits=6, random_state=0).split(X, groups=groups):
        g = groups[test[0]]
        assert np.all(groups[test] == g)
        members = np.flatnonzero(groups == g)
        # the test indices come sorted: one of them is the anchor
        assert set(test) in [set(members[np.argsort(_dist(X, a)[members])[:10]]) for a in test]


def test_holdout_refuses_a_holdout_as_large_as_the_data_or_a_group():
    X = _points(0, 20, 2)
    with pytest.raises(ValueError) as exc:
        next(NeighborhoodHoldout(20).split(X))
    assert_message(exc, "n_holdout=20", "n_samples (20)")
    with pytest.raises(ValueError) as exc:
        next(NeighborhoodHoldout(5).split(X, groups=np.repeat([0, 1], [15, 5])))
    assert_message(exc, "n_holdout=5", "smallest group")
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        next(NeighborhoodHoldout(5).split(X, groups=np.zeros(3)))
    with pytest.raises(ValueError, match="n_splits"):
        NeighborhoodHoldout(5, n_splits=0).get_n_splits()


def test_holdout_is_a_cv_for_cross_validate():
    from sklearn.decomposition import PCA

    X = _points(0, 60, 4)
    out = cross_validate(PCA(2), X, cv=NeighborhoodHoldout(15, n_splits=3, random_state=0))
    assert len(out["test_score"]) == 3 and np.all(np.isfinite(out["test_score"]))
