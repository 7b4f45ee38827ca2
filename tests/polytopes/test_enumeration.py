"""Region enumeration: closed forms, the XOR net, traversal against subdivision and a grid."""

import warnings
from math import comb
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from geolearn.exceptions import PartialResultWarning
from geolearn.polytopes import ReLUPolytopes, dual_distances
from geolearn.polytopes._maps import forward_bits
from geolearn.polytopes._stats import hamming

from ._nets import check_xor_regions, gaussian_net, xor_net


def _fit(net, m, bounds):
    X = np.random.default_rng(0).uniform(-1, 1, size=(20, m))
    return ReLUPolytopes(net, bounds=bounds, random_state=0).fit(X)


@pytest.mark.parametrize("m, k", [(2, 5), (3, 4)])
def test_hyperplane_arrangement_closed_form(m, k):
    """One hidden layer in general position: sum_{i<=m} C(k, i) regions, C(k-1, m) bounded."""
    enum = _fit(gaussian_net((m, k, 1), seed=0), m, None).enumerate_regions()
    assert enum.complete
    assert enum.n_regions == sum(comb(k, i) for i in range(m + 1))
    assert enum.bounded.sum() == comb(k - 1, m)
    assert np.all(np.isfinite(enum.chebyshev_radius[enum.bounded]))
    assert np.all(enum.chebyshev_radius > 0)


def test_xor_net_three_regions():
    """Paper 2, eq. 3: three unbounded regions with maps -2x-2y+1, 2x+2y+1, -1."""
    enum = _fit(xor_net(), 2, None).enumerate_regions()
    check_xor_regions(enum)


def _grid(n, lo=-1.0, hi=1.0, offset=7.31e-4):
    g = np.linspace(lo, hi, n) + offset
    g = g[(g > lo) & (g < hi)]
    return np.array(np.meshgrid(g, g)).reshape(2, -1).T


@pytest.mark.parametrize("sizes, seed, bias", [((2, 5, 5, 1), 0, True), ((2, 6, 6, 1), 1, True),
                                               ((2, 4, 4, 1), 2, False)])
def test_traversal_equals_subdivision_and_grid(sizes, seed, bias):
    est = _fit(gaussian_net(sizes, seed, bias=bias), 2, (-1, 1))
    sub = est.enumerate_regions(method="subdivision")
    trav = est.enumerate_regions(method="traversal")
    key = lambda e: {p.tobytes() for p in e.patterns}  # noqa: E731
    assert key(sub) == key(trav)
    assert sub.areas.sum() == pytest.approx(4.0, rel=1e-9)
    grid = est.transform(_grid(301)).astype(bool)
    assert {p.tobytes() for p in np.unique(grid, axis=0)} <= key(sub)
    # the affine map of each region reproduces the network at its Chebyshev centre
    for p, W, b in zip(sub.patterns[:10], sub.W, sub.b):
        center, radius = est.polytope(pattern=p).chebyshev()
        assert radius > 0
        np.testing.assert_allclose(W @ center + b, forward_bits(est.network_, center[None])[2][0],
                                   atol=1e-10)
    for e in (sub, trav):
        assert (e.adjacency != e.adjacency.T).nnz == 0
        assert connected_components(e.adjacency, directed=False)[0] == 1
        H = hamming(e.patterns)
        D = dual_distances(e)
        assert np.all(D >= H)
        if bias:
            rows, cols = e.adjacency.nonzero()
            assert np.all(H[rows, cols] == 1)


def test_max_regions_is_never_silent():
    est = _fit(gaussian_net((2, 6, 1), seed=0), 2, None)
    with pytest.warns(PartialResultWarning, match="max_regions"):
        enum = est.enumerate_regions(max_regions=5)
    assert not enum.complete and enum.n_regions == 5
    with pytest.raises(ValueError, match="subdivision"):
        est.enumerate_regions(method="subdivision")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert est.enumerate_regions().complete


def test_traversal_in_the_whole_plane_is_complete_on_a_wide_grid():
    """The traversal of a trained 3x10 net in the whole plane (no box) reaches regions whose
    LPs live far from the origin; every activation pattern met on a grid out to 1e3 must be
    among the enumerated regions."""
    from sklearn.neural_network import MLPRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(4000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = MLPRegressor(hidden_layer_sizes=(10, 10, 10), max_iter=300, random_state=0)
        net.fit(X, (X**2).sum(1) - 0.4)
    est = ReLUPolytopes(net, bounds=None, random_state=0).fit(np.zeros((1, 2)))
    result = est.enumerate_regions(start=np.array([0.1234, -0.2345]))
    assert result.complete
    g = np.concatenate([np.linspace(-1, 1, 201), np.geomspace(1, 1e3, 60)])
    g = np.unique(np.concatenate([-g, g]))
    grid = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    met = {p.tobytes() for p in est.transform(grid).astype(bool)}
    found = {p.tobytes() for p in result.patterns.astype(bool)}
    assert met <= found
    assert result.n_regions > len(met)  # the traversal also finds regions the grid misses


def test_facet_search_is_reproducible():
    """Regression: Clarkson's random rays were drawn from fresh OS entropy on every call, so
    the traversal of the same network found 458 or 460 regions (or stopped on an undecided
    LP) from one run to the next. The rays now come from a fixed seed."""
    from geolearn.polytopes._lp import facets_clarkson

    rng = np.random.default_rng(3)
    An = rng.standard_normal((40, 2))
    cn = np.abs(rng.standard_normal(40)) + 0.1
    a = facets_clarkson(An, cn, np.zeros(2), return_points=True)
    b = facets_clarkson(An, cn, np.zeros(2), return_points=True)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        np.testing.assert_array_equal(a[1][k], b[1][k])


def test_the_lp_solver_prints_nothing():
    """Defect: the HiGHS banner went to stdout on the first LP of a process (demo, region_stats)."""
    import subprocess
    import sys

    pytest.importorskip("highspy")
    code = ("import numpy as np\n"
            "from sklearn.neural_network import MLPClassifier\n"
            "from geolearn.polytopes import ReLUPolytopes\n"
            "X = np.random.RandomState(0).uniform(-1, 1, (200, 2))\n"
            "m = MLPClassifier((5,), max_iter=20, random_state=0).fit(X, X[:, 0] > 0)\n"
            "n = ReLUPolytopes(m, bounds=(-1, 1)).fit(X).enumerate_regions().n_regions\n"
            "print('regions', n)\n")
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True, cwd=str(Path(__file__).parents[2]))
    assert out.stdout.startswith("regions ") and "HiGHS" not in out.stdout + out.stderr


def test_verbose_shows_progress_bars_and_changes_nothing(capsys):
    """Defect: verbose=1 printed a joblib line only; long LP loops and enumerations showed no
    progress."""
    net = xor_net()
    X = np.random.default_rng(0).uniform(-1, 1, (200, 2))
    kw = dict(bounds=(-1, 1), region_stats=("chebyshev",))
    quiet = ReLUPolytopes(net, **kw).fit(X)
    capsys.readouterr()
    loud = ReLUPolytopes(net, verbose=1, **kw).fit(X)
    err = capsys.readouterr().err
    R = quiet.n_regions_
    assert "ReLUPolytopes region LPs: 100%" in err and f"{R}/{R}" in err
    np.testing.assert_array_equal(loud.chebyshev_radius_, quiet.chebyshev_radius_)
    for method in ("subdivision", "traversal"):
        enum = loud.enumerate_regions(method=method)
        assert f"enumerate_regions: {enum.n_regions}" in capsys.readouterr().err
        assert enum.n_regions == quiet.enumerate_regions(method=method).n_regions
