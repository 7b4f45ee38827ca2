"""Local maps, H-representations and the LPs on polytopes with known answers."""

import numpy as np
import pytest
import torch

from geolearn.polytopes import Polytope, ReLUPolytopes, as_relu_network
from geolearn.polytopes._lp import chebyshev_lp, facets_clarkson, facets_lp, stack_rows
from geolearn.polytopes._maps import forward_bits, hrep, local_maps

from ._nets import gaussian_net, sequential, simplex_net


def test_local_maps_are_the_jacobian_and_reproduce_the_output():
    net = gaussian_net((4, 6, 5, 3), seed=0)
    relu = as_relu_network(net)
    X = np.random.default_rng(1).normal(size=(30, 4))
    bits, _, logits = forward_bits(relu, X)
    W, b = local_maps(relu, bits)
    J = torch.func.vmap(torch.func.jacrev(net))(torch.as_tensor(X)).detach().numpy()
    np.testing.assert_allclose(W, J, atol=1e-12)
    np.testing.assert_allclose(np.einsum("nom,nm->no", W, X) + b, logits, atol=1e-12)


def test_hrep_contains_its_points_and_excludes_others():
    relu = as_relu_network(gaussian_net((3, 5, 5, 1), seed=2))
    X = np.random.default_rng(3).normal(size=(400, 3))
    bits = forward_bits(relu, X)[0]
    A, c = hrep(relu, bits[0])
    inside = np.all(X @ A.T <= c + 1e-12, axis=1)
    same = np.all(bits == bits[0], axis=1)
    np.testing.assert_array_equal(inside, same)


def test_simplex_chebyshev_facets_and_margin():
    """Spec A2: the region of 0.1 * 1 is {x >= 0, sum x <= 1} in R^5."""
    m = 5
    X = np.full((2, m), 0.1)
    X[1] = 0.05
    poly = ReLUPolytopes(simplex_net(m), bounds=None).fit(X)
    results = {}
    for method in ("clarkson", "lp"):
        P = poly.polytope(x=X[0])
        P = Polytope(P.pattern, P.A, P.c, P.W, P.b, facet_method=method)
        results[method] = P.facets()
    r_star = 1 / (5 + np.sqrt(5))
    center, radius = P.chebyshev()
    assert radius == pytest.approx(r_star, abs=1e-8)
    np.testing.assert_allclose(center, r_star * np.ones(m), atol=1e-7)
    np.testing.assert_array_equal(results["clarkson"], np.arange(10, 16))
    np.testing.assert_array_equal(results["lp"], results["clarkson"])
    A_red, c_red = P.reduced()
    reduced = Polytope(P.pattern[P.active_bits()], A_red, c_red, P.W, P.b)
    assert reduced.chebyshev()[1] == pytest.approx(radius, abs=1e-10)
    assert poly.margin(X[:1])[0] == pytest.approx(0.1, abs=1e-12)
    assert poly.margin(X[:1])[0] <= radius
    assert P.is_bounded()


def test_simplex_cvxpy_agrees():
    P = ReLUPolytopes(simplex_net(), bounds=None, lp_solver="cvxpy").fit(np.full((1, 5), 0.1))
    Q = P.polytope(x=np.full(5, 0.1))
    np.testing.assert_array_equal(Q.facets(), np.arange(10, 16))
    assert Q.chebyshev()[1] == pytest.approx(1 / (5 + np.sqrt(5)), abs=1e-6)


@pytest.mark.parametrize("m", [1, 3, 6])
def test_cube_region(m):
    eye = np.eye(m)
    net = sequential([np.vstack([eye, -eye]), np.ones((1, 2 * m))], [-np.ones(2 * m), [0.0]])
    poly = ReLUPolytopes(net, bounds=None).fit(np.zeros((1, m)))
    center, radius = poly.polytope(x=np.zeros(m)).chebyshev()
    assert radius == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(center, 0, atol=1e-9)


def test_unbounded_regions_have_infinite_radius():
    """rank(W_1) < m: every region holds lines, so every radius is +inf (spec 2.6)."""
    net = gaussian_net((6, 4, 3), seed=0)
    X = np.random.default_rng(0).normal(size=(30, 6))
    poly = ReLUPolytopes(net, bounds=None, region_stats=("chebyshev", "boundedness")).fit(X)
    assert np.all(np.isinf(poly.chebyshev_radius_))
    assert not np.any(poly.bounded_)
    boxed = ReLUPolytopes(net, region_stats=("chebyshev", "boundedness")).fit(X)
    assert np.all(np.isfinite(boxed.chebyshev_radius_)) and np.all(boxed.chebyshev_radius_ > 0)


@pytest.mark.parametrize("seed", range(6))
def test_clarkson_equals_per_row_lp(seed):
    relu = as_relu_network(gaussian_net((4, 8, 8, 1), seed=seed))
    x = np.random.default_rng(seed).uniform(-1, 1, size=(1, 4))
    A, c = hrep(relu, forward_bits(relu, x)[0][0])
    for box in ((None, None), (-np.ones(4), np.ones(4))):
        An, cn, _, _ = stack_rows(A, c, *box)
        center, radius = chebyshev_lp(An, cn, r_max=1.0)
        assert radius > 0
        np.testing.assert_array_equal(facets_clarkson(An, cn, center), facets_lp(An, cn))


def test_duplicate_and_zero_rows():
    # x <= 1 twice, -x <= 1, and a zero row 0 <= 1: one copy of each duplicate is a facet
    A = np.array([[1.0], [1.0], [-1.0], [0.0]])
    c = np.array([1.0, 1.0, 1.0, 1.0])
    P = Polytope(np.zeros(4, bool), A, c, np.zeros((1, 1)), np.zeros(1))
    np.testing.assert_array_equal(P.facets(), [0, 2])
    np.testing.assert_array_equal(Polytope(*P.__dict__.values())._rows()[2], [0, 1, 2])
    empty = Polytope(np.zeros(1, bool), np.zeros((1, 1)), -np.ones(1), np.zeros((1, 1)),
                     np.zeros(1))
    assert empty.chebyshev()[1] == -np.inf and len(empty.facets()) == 0


def test_polygon_contains_and_area():
    relu_net = gaussian_net((2, 6, 1), seed=4)
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, 2))
    poly = ReLUPolytopes(relu_net, bounds=(-1, 1)).fit(X)
    P = poly.polytope(x=X[0])
    V = P.polygon()
    assert P.contains(V).all() and P.contains(X[:1]).all()
    # the polygon's area matches the fraction of a fine grid inside the region
    g = (np.arange(400) + 0.5) / 400 * 2 - 1
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    from geolearn.polytopes._lp import polygon_area

    assert polygon_area(V) == pytest.approx(4 * P.contains(G).mean(), abs=0.02)


def test_lp_failures_name_the_region(monkeypatch):
    import geolearn.polytopes._lp as lp

    def failing(*args, what="LP", **kwargs):
        raise RuntimeError(f"{what}: HiGHS returned status 4 (numerical difficulties).")

    monkeypatch.setattr(lp, "solve_lp", failing)
    X = np.random.default_rng(0).uniform(-1, 1, size=(10, 2))
    with pytest.raises(RuntimeError, match="region 0: Chebyshev LP"):
        ReLUPolytopes(gaussian_net((2, 4, 1), seed=0), region_stats=("chebyshev",)).fit(X)


def test_highspy_retries_when_the_simplex_gives_up(monkeypatch):
    """HiGHS can stop with status "Unknown" on a badly scaled LP (seen once in an R^2
    traversal); the solve is retried without presolve, then by IPM, then by Clarabel
    (through cvxpy)."""
    highspy = pytest.importorskip("highspy")
    import geolearn.polytopes._lp as lp

    real = highspy.Highs()
    real.setOptionValue("output_flag", False)
    calls = []

    class StallsOnce:
        def __getattr__(self, name):
            return getattr(real, name)

        def getModelStatus(self):
            calls.append(1)
            return highspy.HighsModelStatus.kUnknown if len(calls) == 1 else real.getModelStatus()

    monkeypatch.setattr(lp._local, "highs", StallsOnce(), raising=False)
    # min x + y over x, y >= 0 and x + y >= 1
    status, x = lp.solve_lp(np.array([1.0, 1.0]), -np.ones((1, 2)), np.array([-1.0]),
                            bounds=[(0, None), (0, None)], solver="highspy")
    assert status == "optimal" and np.isclose(x.sum(), 1.0) and len(calls) == 2

    class AlwaysStalls(StallsOnce):
        def getModelStatus(self):
            return highspy.HighsModelStatus.kUnknown

    monkeypatch.setattr(lp._local, "highs", AlwaysStalls())
    status, x = lp.solve_lp(np.array([1.0, 1.0]), -np.ones((1, 2)), np.array([-1.0]),
                            bounds=[(0, None), (0, None)], solver="highspy")
    assert status == "optimal" and np.isclose(x.sum(), 1.0, atol=1e-6)
