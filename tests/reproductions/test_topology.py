"""Reproductions of "Implications of data topology for deep generative models" (Jin et al.,
Frontiers in Computer Science 6:1260604, 2024): the topology of the data sets and the
analytic checks of its metrics.

Acceptance experiments 1-3 of the spec (the topology family's spec,
section 6), tolerances as written there; measured figures are printed. Experiment 4
(VAE and DDPM fill the hole of a circle) needs the neural generators and is not here.
"""

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from geolearn.datasets import (
    make_circle_points,
    make_klein_bottle_points,
    make_torus_ellipse_images,
    make_torus_points,
)
from geolearn.topology import (
    betti_numbers,
    density_coverage,
    diagram_bottleneck,
    diagram_wasserstein,
    empirical_wasserstein2,
    persistence_diagrams,
)

pytest.importorskip("gph")   # the torus and Klein bottle clouds need the giotto-ph backend


def _persistence(dgm):
    return dgm[:, 1] - dgm[:, 0]


def _by_persistence(dgm):
    return dgm[np.argsort(_persistence(dgm))[::-1]]


# --------------------------------------------------------------------- experiment 1
@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_torus_images_two_loops_and_a_void(seed):
    """Fig. 9A: the torus-ellipse images have two loops, at about (2.5, 8) and (2.5, 13),
    and one void at about (6, 8) (1,500 images, Rips threshold 9)."""
    X = make_torus_ellipse_images(1500, random_state=seed)
    h0, h1, h2 = persistence_diagrams(X, maxdim=2, thresh=9.0, n_jobs=2)
    h1, h2 = _by_persistence(h1), _by_persistence(h2)
    print(f"seed {seed}: H1 {np.round(h1[:3], 3).tolist()}, H2 {np.round(h2[:2], 3).tolist()}")
    p1, p2 = _persistence(h1), _persistence(h2)
    assert (p1 > 4.0).sum() == 2
    assert np.isinf(h1[0, 1])                       # the loop dying at ~13 > thresh
    assert 7.5 <= h1[1, 1] <= 8.3                   # the loop dying at ~8
    assert p1[2] < 3.5
    assert (p2 > 1.0).sum() == 1
    assert 5.5 <= h2[0, 0] <= 6.6 and 7.8 <= h2[0, 1] <= 8.4


@pytest.mark.slow
def test_torus_images_loop_deaths_without_threshold():
    """Fig. 9A without a threshold (600 images): the loops die at about 13 and 8 (the
    spec measured 13.2 +- 0.6 and 7.9 +- 0.4)."""
    X = make_torus_ellipse_images(600, random_state=1)
    h1 = _by_persistence(persistence_diagrams(X, maxdim=1, n_jobs=2)[1])
    print(f"n = 600: two longest H1 bars {np.round(h1[:2], 3).tolist()}")
    deaths = sorted(h1[:2, 1])
    assert abs(deaths[1] - 13.2) <= 0.6 and abs(deaths[0] - 7.9) <= 0.4


# --------------------------------------------------------------------- experiment 2
def test_circle_diagram_is_analytic():
    """Section 2.2.4 / Fig. 1: a sampled circle has one loop, born when neighbours connect
    (the chord 2 sin(pi/n)) and dying when the inscribed triangle fills (about sqrt(3))."""
    t = 2 * np.pi * np.arange(100) / 100
    X = np.c_[np.cos(t), np.sin(t)]
    h0, h1 = persistence_diagrams(X, maxdim=1)
    print(f"circle H1 {h1.tolist()}")
    assert h1.shape == (1, 2)
    assert h1[0, 0] == pytest.approx(2 * np.sin(np.pi / 100), rel=1e-6)
    assert h1[0, 1] == pytest.approx(np.sqrt(3), rel=0.02)
    mst = np.sort(minimum_spanning_tree(squareform(pdist(X))).data)
    np.testing.assert_array_equal(h0[:-1, 1], mst)
    assert np.isinf(h0[-1, 1]) and len(h0) == 100


def test_exact_backend_matches_giotto_ph():
    """The built-in exact reduction is the oracle of the giotto-ph backend the paper used
    (through giotto-tda): 40 random points in R^3, dimensions 0-2, within 1e-5."""
    import gph

    X = np.random.RandomState(0).uniform(size=(40, 3))
    exact = persistence_diagrams(X, maxdim=2, backend="exact")
    raw = gph.ripser_parallel(X, maxdim=2)["dgms"]
    for k, (a, b) in enumerate(zip(exact, raw)):
        b = b[b[:, 1] > b[:, 0]].astype(np.float64)
        a, b = (d[np.lexsort((d[:, 1], d[:, 0]))] for d in (a, b))
        assert a.shape == b.shape, k
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_torus_points_betti_numbers():
    """Betti numbers of a torus (1, 2, 1): the topology the torus images should show."""
    X = make_torus_points(400, R=2.0, r=1.0, embedding="r3", random_state=0)
    dgms = persistence_diagrams(X, maxdim=2, n_jobs=2)
    p1, p2 = (np.sort(_persistence(d))[::-1] for d in dgms[1:])
    print(f"torus H1 persistences {np.round(p1[:3], 3)}, H2 {np.round(p2[:2], 3)}")
    # H0's largest finite bar is ~0.78 here; tau_0 = 0 would count all 400 components
    np.testing.assert_array_equal(betti_numbers(dgms, (0.9, 0.9, 0.25)), [1, 2, 1])


@pytest.mark.slow
def test_klein_bottle_void_depends_on_the_field():
    """Coefficient-field check: the Klein bottle's H2 class exists over Z/2, not over Z/3."""
    X = make_klein_bottle_points(400, random_state=0)
    top = {}
    for coeff in (2, 3):
        h2 = persistence_diagrams(X, maxdim=2, coeff=coeff, n_jobs=2)[2]
        top[coeff] = _persistence(h2).max()
    print(f"Klein bottle largest H2 persistence: Z/2 {top[2]:.3f}, Z/3 {top[3]:.3f}")
    assert top[2] > 0.3 and top[3] < 0.2


# --------------------------------------------------------------------- experiment 3
def test_metric_identities():
    """Eq. 6 and the diagram distance: analytic values."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 5))
    c = rng.normal(size=5)
    assert empirical_wasserstein2(X, X + c) == pytest.approx(np.linalg.norm(c), rel=1e-12)
    perm = rng.permutation(300)
    Y = rng.normal(size=(300, 5))
    assert empirical_wasserstein2(X[perm], Y) == pytest.approx(empirical_wasserstein2(X, Y),
                                                               rel=1e-12)
    dgm = persistence_diagrams(make_circle_points(60, noise=0.1, random_state=0))[1]
    assert diagram_wasserstein(dgm, dgm) == 0.0 and diagram_bottleneck(dgm, dgm) == 0.0
    assert diagram_wasserstein([[0, 2]], np.empty((0, 2)), p=2) == 1.0
    assert diagram_wasserstein([[0, 2]], [[0, 3]], p=1) == 1.0
    assert density_coverage(X, X)[1] == 1.0
