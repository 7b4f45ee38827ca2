"""Conv ReLU nets: the exactness checks of the MLP path, and the argmax of max-pool windows."""

import numpy as np
import pytest
import torch
from torch import nn

from geolearn.polytopes import ReLUPolytopes, as_relu_network


def _conv_net(seed=0, front=True):
    """1x6x6 images: overlapping padded max-pool, strided conv, average pool, two linears."""
    torch.manual_seed(seed)
    layers = [nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1),
              nn.Conv2d(3, 4, 2, stride=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
              nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 3)]
    return nn.Sequential(*([nn.Unflatten(1, (1, 6, 6))] if front else []), *layers)


def _small_net(seed=0):
    """1x4x4 images, few regions: for the dense 2-D checks."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Unflatten(1, (1, 4, 4)), nn.Conv2d(1, 2, 2), nn.ReLU(),
                         nn.MaxPool2d(2, stride=1), nn.Flatten(), nn.Linear(8, 2))


def _data(n, m, seed=0):
    return np.random.default_rng(seed).normal(size=(n, m))


@pytest.mark.parametrize("front", [True, False])
def test_local_affine_map_is_the_jacobian(front):
    net = _conv_net(front=front)
    X = _data(30, 36)
    poly = ReLUPolytopes(net, image_shape=None if front else (1, 6, 6)).fit(X)
    W, b = poly.local_affine_map(X)
    net64 = nn.Sequential(*(list(net) if front else [nn.Unflatten(1, (1, 6, 6)), *net])).double()
    Xt = torch.as_tensor(X)
    # rows are independent: the Jacobian of the summed outputs holds every row's
    J = torch.autograd.functional.jacobian(lambda x: net64(x).sum(0), Xt).permute(1, 0, 2).numpy()
    np.testing.assert_allclose(W, J, rtol=0, atol=1e-12)
    with torch.no_grad():
        np.testing.assert_allclose(np.einsum("nom,nm->no", W, X) + b, net64(Xt).numpy(),
                                   rtol=0, atol=1e-12)
    assert poly.n_hidden_units_ == 108 + 27 * 9 + 16 + 5  # ReLU bits and one-hot argmaxes
    assert poly.get_feature_names_out()[[0, 108]].tolist() == ["relu1_0", "maxpool2_0"]


def test_pattern_and_map_constant_inside_the_margin_ball():
    poly = ReLUPolytopes(_conv_net()).fit(X := _data(20, 36))
    rng = np.random.default_rng(1)
    g = rng.normal(size=(20, 8, 36))
    # points at 0.9 of the margin stay in the region, at 20x the margin leave it somewhere
    inside = X[:, None] + 0.9 * poly.margin_[:, None, None] * g / np.linalg.norm(g, axis=2,
                                                                               keepdims=True)
    bits = poly.transform(inside.reshape(-1, 36)).reshape(20, 8, -1)
    assert np.all(bits == poly.transform(X)[:, None])
    W, _ = poly.local_affine_map(inside.reshape(-1, 36))
    np.testing.assert_allclose(W.reshape(20, 8, 3, 36),
                               np.broadcast_to(poly.local_affine_map(X)[0][:, None],
                                               (20, 8, 3, 36)), atol=1e-12)
    outside = X[:, None] + 20 * poly.margin_[:, None, None] * g / np.linalg.norm(
        g, axis=2, keepdims=True)
    assert np.any(poly.transform(outside.reshape(-1, 36)).reshape(20, 8, -1)
                  != poly.transform(X)[:, None])


def test_segment_regions_match_dense_sampling():
    poly = ReLUPolytopes(_conv_net()).fit(X := _data(8, 36))
    counts = poly.segment_region_counts(X[:4], X[4:])
    ts = np.linspace(0, 1, 10001)
    rng = np.random.default_rng(0)
    for a, b, count in zip(X[:4], X[4:], counts):
        seg = poly.segment_regions(a, b)
        assert seg.n_regions == count > 5
        # every interval holds its one pattern: at random points of it, not only its midpoint
        edges = np.concatenate([[0], seg.t_breaks, [1]])
        t = edges[:-1, None] + np.diff(edges)[:, None] * rng.uniform(0.01, 0.99, size=(count, 4))
        inner = poly.transform(a + t.reshape(-1, 1) * (b - a)).reshape(count, 4, -1)
        assert np.all(inner == seg.patterns[:, None])
        bits = poly.transform(a + ts[:, None] * (b - a)).astype(bool)
        runs = 1 + np.count_nonzero(np.any(bits[1:] != bits[:-1], axis=1))
        assert runs <= count
        if np.diff(edges).min() > 2e-4:
            assert runs == count


def test_max_pool_argmax_is_part_of_the_pattern():
    """One 2x2 window, no ReLU: its argmax alone cuts the segment into three regions."""
    net = nn.Sequential(nn.Unflatten(1, (1, 2, 2)), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(1, 1))
    poly = ReLUPolytopes(net).fit(np.eye(4))
    # entries 4 - 4t, 0, 3, 4t: the argmax moves 0 -> 2 (t = 1/4) -> 3 (t = 3/4); entries 0
    # and 3 cross at t = 1/2 below the maximum, which is no boundary
    a, b = np.array([4.0, 0, 3, 0]), np.array([0.0, 0, 3, 4])
    seg = poly.segment_regions(a, b)
    np.testing.assert_allclose(seg.t_breaks, [0.25, 0.75])
    np.testing.assert_array_equal(seg.patterns, [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    W, _ = poly.local_affine_map(a + np.array([0.1, 0.5, 0.9])[:, None] * (b - a))
    w = net[3].weight.item()
    np.testing.assert_allclose(W[:, 0], w * np.eye(4)[[0, 2, 3]], atol=1e-15)
    plane = poly.plane_regions(np.zeros(4), [1.0, 0, 0, 0], [0, 1.0, 0, 0])
    # x_0 wins, x_1 wins, or (both negative) the zero entry x_2: three regions
    np.testing.assert_allclose(np.sort(plane.areas), [1.0, 1.5, 1.5])
    assert plane.patterns[:, 2].sum() == 1


def _inside(V, points, tol=1e-9):
    """Whether each point lies in the convex polygon with ordered vertices ``V`` (or on it)."""
    E = np.roll(V, -1, axis=0) - V
    cross = E[:, 0] * (points[:, None, 1] - V[:, 1]) - E[:, 1] * (points[:, None, 0] - V[:, 0])
    return np.all(cross >= -tol, axis=1) | np.all(cross <= tol, axis=1)


@pytest.mark.parametrize("seed", [0, 1])
def test_plane_regions_match_a_dense_grid(seed):
    poly = ReLUPolytopes(_small_net(seed)).fit(X := _data(3, 16, seed))
    x0, u, v = X[0], X[1] - X[0], X[2] - X[0]
    plane = poly.plane_regions(x0, u, v, bounds=(-1, 2))
    assert plane.n_regions > 100
    assert plane.areas.sum() == pytest.approx(9.0, rel=1e-12)
    g = -1 + 3 * (np.arange(200) + 0.5) / 200
    A, B = (w.ravel() for w in np.meshgrid(g, g))
    bits = poly.transform(x0 + A[:, None] * u + B[:, None] * v).astype(bool)
    index = {p.tobytes(): r for r, p in enumerate(plane.patterns)}
    where = np.array([index.get(p.tobytes(), -1) for p in bits])
    assert np.all(where >= 0), "a sampled pattern is missing from the exact regions"
    # each grid point lies in the polygon of its own pattern
    points = np.column_stack([A, B])
    for r in np.unique(where):
        assert np.all(_inside(plane.polygons[r], points[where == r]))
    # the regions no grid point fell in are small
    missed = np.setdiff1d(np.arange(plane.n_regions), where)
    assert plane.areas[missed].max(initial=0) < 25 * (3 / 200) ** 2


def test_mlp_plane_regions_equal_the_subdivision():
    torch.manual_seed(1)
    mlp = nn.Sequential(nn.Linear(2, 10), nn.ReLU(), nn.Linear(10, 10), nn.ReLU(),
                        nn.Linear(10, 1))
    poly = ReLUPolytopes(mlp, bounds=(-1, 1)).fit(np.zeros((1, 2)))
    enum, plane = poly.enumerate_regions(), poly.plane_regions([0, 0], [1, 0], [0, 1])
    order = [np.flatnonzero(np.all(enum.patterns == p, axis=1))[0] for p in plane.patterns]
    assert plane.n_regions == enum.n_regions
    np.testing.assert_allclose(plane.areas, enum.areas[order], atol=1e-12)


def test_what_stays_mlp_only_says_so():
    poly = ReLUPolytopes(_conv_net()).fit(X := _data(5, 36))
    for call in (poly.enumerate_regions, lambda: poly.polytope(X[0]), lambda: poly.chebyshev(X),
                 lambda: poly.neighbours(poly.patterns_[0])):
        with pytest.raises(ValueError, match="needs a ReLU MLP, but the network has a Conv2d"):
            call()
    with pytest.raises(ValueError, match="region_stats needs a ReLU MLP"):
        ReLUPolytopes(_conv_net(), region_stats=("chebyshev",)).fit(X)
    bn = nn.Sequential(nn.Unflatten(1, (1, 6, 6)), nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2),
                       nn.ReLU(), nn.Flatten(), nn.Linear(32, 1))
    with pytest.raises(ValueError, match="contains a BatchNorm2d layer"):
        ReLUPolytopes(bn).fit(X)


def test_conv_net_needs_flat_rows_and_image_shape():
    """Regression: a conv net (with or without Unflatten) was refused as 'dim 4' or
    'contains a Conv2d layer'."""
    X = _data(5, 36)
    with pytest.raises(ValueError, match="image_shape"):
        ReLUPolytopes(_conv_net(front=False)).fit(X)
    with pytest.raises(ValueError, match=r"flat rows: pass X.reshape\(len\(X\), -1\)"):
        ReLUPolytopes(_conv_net(front=False), image_shape=(1, 6, 6)).fit(X.reshape(5, 1, 6, 6))
    with pytest.raises(ValueError, match="does not match the network's Unflatten"):
        ReLUPolytopes(_conv_net(), image_shape=(1, 3, 12)).fit(X)
    net = as_relu_network(_conv_net(front=False), image_shape=(1, 6, 6))
    assert net.layer_sizes == (36, 108, 243, 16, 5, 3)


def test_unflatten_in_front_of_an_mlp_refuses_the_lps_by_name():
    net = nn.Sequential(nn.Unflatten(1, (1, 2, 2)), nn.Flatten(), nn.Linear(4, 3), nn.ReLU(),
                        nn.Linear(3, 1))
    poly = ReLUPolytopes(net).fit(_data(5, 4))
    with pytest.raises(ValueError, match="has a Unflatten layer"):
        poly.enumerate_regions()
