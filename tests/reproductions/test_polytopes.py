"""Acceptance experiments of the polytopes family (spec relu-polytopes.md, section 6.2, A1-A4).

Papers: "Integrating geometries of ReLU feedforward neural networks" (paper 1) and
"Locally linear attributes of ReLU neural networks" (paper 2).
"""

import warnings
from math import comb

import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from geolearn.polytopes import (
    LocalLinearClustering,
    LocalLinearMap,
    Polytope,
    ReLUPolytopes,
    dual_distances,
)
from geolearn.polytopes._maps import forward_bits
from geolearn.polytopes._stats import hamming
from tests.polytopes._nets import check_xor_regions, gaussian_net, sequential, simplex_net, xor_net


# ----------------------------------------------------------------------------- helpers
def _digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)


def _train_digits(hidden, seed, epochs, data):
    X_tr, _, y_tr, _ = data
    mlp = MLPClassifier(hidden, solver="adam", learning_rate_init=1e-3, batch_size=64, alpha=0.0,
                        max_iter=epochs, tol=0.0, n_iter_no_change=epochs + 1, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlp.fit(X_tr.astype(np.float32), y_tr)


@pytest.fixture(scope="module")
def digits():
    return _digits()


def _offset_grid(n, offset=7.31e-4):
    g = np.linspace(-1, 1, n) + offset
    g = g[(g > -1) & (g < 1)]
    return np.array(np.meshgrid(g, g)).reshape(2, -1).T, g[1] - g[0]


# ---------------------------------------------------------------------------------- A1
@pytest.mark.slow
def test_a1a_arrangement_closed_form():
    """Spec A1(a) (paper 1, Section 2.3; Zaslavsky): one hidden layer in general position
    has sum_{i<=m} C(k, i) regions, C(k-1, m) of them bounded: 37/21, 79/55, 42/10."""
    rng = np.random.default_rng(0)
    for (m, k), (n_exp, b_exp) in zip([(2, 8), (2, 12), (3, 6)], [(37, 21), (79, 55), (42, 10)]):
        W1, b1, W2 = rng.normal(size=(k, m)), rng.normal(size=k), rng.normal(size=(1, k))
        net = sequential([W1, W2], [b1, np.zeros(1)])
        enum = ReLUPolytopes(net, bounds=None).fit(np.zeros((1, m))).enumerate_regions()
        assert enum.complete
        assert (enum.n_regions, int(enum.bounded.sum())) == (n_exp, b_exp)
        assert sum(comb(k, i) for i in range(m + 1)) == n_exp and comb(k - 1, m) == b_exp


def test_a1b_xor_net():
    """Spec A1(b) (paper 2, Section 2.2, eq. 3): the XOR net has exactly three regions,
    -2x-2y+1, 2x+2y+1 and -1, all unbounded; the pattern (0, 1) is empty."""
    enum = ReLUPolytopes(xor_net(), bounds=None).fit(np.zeros((1, 2))).enumerate_regions()
    check_xor_regions(enum)


def _check_box_enumeration(net, grid, spacing, generic):
    est = ReLUPolytopes(net, bounds=(-1, 1), random_state=0).fit(np.zeros((1, 2)))
    sub = est.enumerate_regions(method="subdivision")
    trav = est.enumerate_regions(method="traversal")
    keys = {p.tobytes() for p in sub.patterns}
    assert keys == {p.tobytes() for p in trav.patterns}
    grid_keys = {p.tobytes() for p in _unique_bits(forward_bits(est.network_, grid)[0])}
    assert grid_keys <= keys
    big = sub.chebyshev_radius > spacing / np.sqrt(2)
    assert {p.tobytes() for p in sub.patterns[big]} <= grid_keys
    assert sub.areas.sum() == pytest.approx(4.0, rel=1e-9)
    for p, W, b in zip(sub.patterns, sub.W, sub.b):
        center, radius = Polytope(p, *_hrep(est, p), W, b, -np.ones(2), np.ones(2)).chebyshev()
        np.testing.assert_allclose(W @ center + b, forward_bits(est.network_, center[None])[2][0],
                                   atol=1e-10)
    for e in (sub, trav):
        A = e.adjacency
        assert (A != A.T).nnz == 0
        assert connected_components(A, directed=False)[0] == 1
        if generic:  # each edge flips one bit, so a dual path is at least as long as H
            H = hamming(e.patterns)
            r, c = A.nonzero()
            assert np.all(H[r, c] == 1)
            assert np.all(dual_distances(e) >= H)
    return trav


def _unique_bits(bits):
    """Distinct rows of a large bool array (hashing the packed rows as integers)."""
    packed = np.packbits(bits, axis=1).astype(np.uint64)
    codes = packed @ (np.uint64(256) ** np.arange(packed.shape[1], dtype=np.uint64))
    _, first = np.unique(codes, return_index=True)
    return bits[first]


def _hrep(est, p):
    from geolearn.polytopes._maps import hrep

    return hrep(est.network_, p)


@pytest.mark.slow
def test_a1c_box_enumeration_matches_subdivision_and_grid():
    """Spec A1(c) (paper 1, Algorithm 1 and its completeness claim): in [-1, 1]^2 traversal
    equals exact subdivision, a 1001 x 1001 offset grid only meets enumerated regions, every
    region wider than the grid spacing is met, areas sum to 4, maps match the network, the dual
    graph is connected and symmetric with Hamming-1 edges (Gaussian nets) and dual distance >=
    Hamming (generic nets only: a multi-bit edge of a degenerate net shortens dual paths).
    Bias-free nets need the witness crossing (flip-only traversal fails on them)."""
    grid, spacing = _offset_grid(1001)
    for sizes in ((2, 5, 5, 1), (2, 8, 8, 8, 1)):
        for seed in range(5):
            _check_box_enumeration(gaussian_net(sizes, seed), grid, spacing, generic=True)
    degenerate = 0
    for seed in range(20):
        trav = _check_box_enumeration(gaussian_net((2, 4, 4, 1), seed, bias=False), grid,
                                      spacing, generic=False)
        degenerate += trav.n_degenerate_crossings > 0
    assert degenerate > 0  # the one-bit flip alone would have missed regions


def _train_toy(seed):
    """The paper's toy net, trained full-batch with Adam through skorch (early stopping on
    the last 2,000 points, patience 100, best weights restored)."""
    from skorch import NeuralNetRegressor
    from skorch.callbacks import EarlyStopping
    from skorch.helper import predefined_split

    from geolearn.models._internal import TensorDataset, collate_batch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(10_000, 2))
    y = (X ** 2).sum(1) - 0.4
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]
    net = torch.nn.Sequential(torch.nn.Linear(2, 10), torch.nn.ReLU(), torch.nn.Linear(10, 10),
                              torch.nn.ReLU(), torch.nn.Linear(10, 1))
    stop = EarlyStopping(patience=100, threshold=0, threshold_mode="abs", load_best=True)
    reg = NeuralNetRegressor(net, optimizer=torch.optim.Adam, lr=1e-2, max_epochs=1500,
                             batch_size=-1, callbacks=[stop], verbose=0, dataset=TensorDataset,
                             train_split=predefined_split(TensorDataset(Xt[8000:], yt[8000:])),
                             iterator_train__shuffle=False,
                             iterator_train__collate_fn=collate_batch,
                             iterator_valid__collate_fn=collate_batch)
    return reg.fit(Xt[:8000], yt[:8000]).module_


@pytest.mark.slow
def test_a1d_toy_regions_smaller_near_the_data():
    """Spec A1(d) (paper 1, Section 4.1.1, Fig. 1): for a 2-10-10-1 net fit to x1^2+x2^2-0.4 on
    [-1,1]^2, H((0,-1),(0,1)) > H((6,-1),(6,1)) and regions are larger away from the data
    (mean Chebyshev radius in [5,7]x[-1,1] > in [-1,1]^2)."""
    for seed in range(3):
        net = _train_toy(seed)
        est = ReLUPolytopes(net, bounds=(-1, 1)).fit(np.zeros((1, 2)))
        near = est.hamming_distances([[0, -1]], [[0, 1]])[0, 0]
        far = est.hamming_distances([[6, -1]], [[6, 1]])[0, 0]
        assert near > far
        r_in = est.enumerate_regions().chebyshev_radius.mean()
        r_out = est.enumerate_regions(bounds=([5, -1], [7, 1])).chebyshev_radius.mean()
        assert r_out > r_in


# ---------------------------------------------------------------------------------- A2
def test_a2_simplex_and_cube():
    """Spec A2 (paper 1, eqs. 6-8 on known polytopes): the simplex region has Chebyshev radius
    1/(5+sqrt 5) with centre radius*1, its 6 layer-2 units are the active bits, the 10 layer-1
    rows are redundant; clarkson == lp == cvxpy; the all-off cube region has radius 1."""
    x0 = np.full(5, 0.1)
    r_star = 1 / (5 + np.sqrt(5))
    facets = {}
    for solver in ("highs", "cvxpy"):
        for method in ("clarkson", "lp"):
            est = ReLUPolytopes(simplex_net(), bounds=None, facet_method=method,
                                lp_solver=solver).fit(x0[None])
            P = est.polytope(x=x0)
            facets[solver, method] = P.active_bits().tolist()
            center, radius = P.chebyshev()
            assert radius == pytest.approx(r_star, abs=1e-8 if solver == "highs" else 1e-6)
            if solver == "highs":
                np.testing.assert_allclose(center, r_star * np.ones(5), atol=1e-7)
    assert all(f == list(range(10, 16)) for f in facets.values())
    A_red, c_red = P.reduced()
    assert Polytope(P.pattern, A_red, c_red, P.W, P.b).chebyshev()[1] == pytest.approx(r_star,
                                                                                        abs=1e-8)
    assert est.margin(x0[None])[0] == pytest.approx(min(0.1, 0.5 / np.sqrt(5), 1.9))
    for m in (2, 5):
        eye = np.eye(m)
        cube = sequential([np.vstack([eye, -eye]), np.ones((1, 2 * m))],
                          [-np.ones(2 * m), [0.0]])
        c, r = ReLUPolytopes(cube, bounds=None).fit(np.zeros((1, m))).polytope(
            x=np.zeros(m)).chebyshev()
        assert r == pytest.approx(1.0, abs=1e-9)
        np.testing.assert_allclose(c, 0, atol=1e-9)


@pytest.mark.slow
def test_a2_lineality_and_digits_facets(digits):
    """Spec A2 (paper 1, Section 3.3): with h_1 < m every region holds lines (radius +inf,
    unbounded); on digits regions of a 64-32-32-10 net both facet methods agree."""
    X_tr = digits[0]
    narrow = _train_digits((32,), 0, 5, digits)
    est = ReLUPolytopes(narrow, bounds=None, region_stats=("chebyshev", "boundedness")).fit(
        X_tr[:20])
    assert np.all(np.isinf(est.chebyshev_radius_)) and not np.any(est.bounded_)
    net = _train_digits((32, 32), 0, 20, digits)
    for method_pair in [("clarkson", "lp")]:
        est = ReLUPolytopes(net, bounds=(0, 1)).fit(X_tr)
        for x in X_tr[:3]:
            P = est.polytope(x=x)
            f = {}
            for method in method_pair:
                f[method] = Polytope(P.pattern, P.A, P.c, P.W, P.b, P.lo, P.hi,
                                     facet_method=method).facets().tolist()
            assert f["clarkson"] == f["lp"] and len(f["lp"]) > 0


# ---------------------------------------------------------------------------------- A3
@pytest.fixture(scope="module")
def depth_nets(digits):
    return {L: _train_digits((64,) * L, 0, 40, digits) for L in (1, 2, 3, 4)}


@pytest.mark.slow
def test_a3_segment_crossings(digits, depth_nets):
    """Spec A3 (paper 1, Section 3.2, Table 5 and Fig. 4, reduced): on segments between 40 train
    points and their nearest train neighbours, flips >= Hamming with equal parity, one bit per
    crossing, dense sampling agrees with the exact sequence, bisection <= exact, and deeper nets
    cross more regions (mean(L=4) >= 2 mean(L=1), max(L=4) > max(L=1))."""
    from sklearn.neighbors import NearestNeighbors

    X_tr = digits[0]
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X_tr), 40, replace=False)
    nn_idx = NearestNeighbors(n_neighbors=2).fit(X_tr).kneighbors(X_tr[idx])[1][:, 1]
    XA, XB = X_tr[idx], X_tr[nn_idx]
    counts = {}
    for L, net in depth_nets.items():
        est = ReLUPolytopes(net, bounds=None).fit(X_tr)
        segs = [est.segment_regions(a, b) for a, b in zip(XA, XB)]
        for s in segs:
            assert s.n_flips.sum() >= s.hamming and (s.n_flips.sum() - s.hamming) % 2 == 0
            assert s.n_regions - 1 == s.n_flips.sum()
        counts[L] = np.array([s.n_regions for s in segs])
        for a, b, s in list(zip(XA, XB, segs))[:5 if L == 4 else 0]:
            t = np.linspace(0, 1, 100_001)
            bits = est.transform(a + t[:, None] * (b - a)).astype(bool)
            runs = bits[np.concatenate([[True], np.any(bits[1:] != bits[:-1], axis=1)])]
            pos = 0
            for r in runs:
                while pos < s.n_regions and np.any(s.patterns[pos] != r):
                    pos += 1
                assert pos < s.n_regions
            if np.diff(np.concatenate([[0], s.t_breaks, [1]])).min() > 1e-5:
                assert len(runs) == s.n_regions
            assert est.segment_regions(a, b, method="bisection").n_regions <= s.n_regions
    assert counts[4].mean() >= 2 * counts[1].mean()
    assert counts[4].max() > counts[1].max()


# ---------------------------------------------------------------------------------- A4
@pytest.fixture(scope="module")
def a4_nets(digits):
    return {"dense": _train_digits((128,), 0, 60, digits),
            "3x64": _train_digits((64, 64, 64), 1, 60, digits),
            "2x256": _train_digits((256, 256), 2, 60, digits)}


@pytest.mark.slow
def test_a4_paper1_statistics(digits, a4_nets):
    """Spec A4 (paper 1, Tables 4 and 6; paper 2's '<1% shared regions'): almost every train
    digit has its own region; radii (box [0,1]) and Hamming at radius 0.5 are alike on train and
    test (ratio in [0.8, 1.25]; |ratio - 1| <= 0.10)."""
    X_tr, X_te, _, _ = digits
    net = a4_nets["3x64"]
    est = ReLUPolytopes(net, bounds=(0, 1), random_state=0).fit(X_tr)
    assert est.n_regions_ / len(X_tr) >= 0.95
    r_tr = est.chebyshev(X_tr[:100])[0]
    r_te = est.chebyshev(X_te[:100])[0]
    assert 0.8 <= r_te.mean() / r_tr.mean() <= 1.25
    free = ReLUPolytopes(net, bounds=None).fit(X_tr)
    assert np.all(np.isinf(free.chebyshev(X_tr[:5])[0]))
    table = est.summary_table({"train": X_tr, "test": X_te}, "hamming_at_radius", radius=0.5)
    assert abs(table["test"]["mean"] / table["train"]["mean"] - 1) <= 0.10


@pytest.mark.slow
def test_a4_paper2_reduction_and_maps(digits, a4_nets):
    """Spec A4 (paper 2, Tables 1 and 2, reduced to digits): k = 1 keeps >= 90% of the dense
    net's accuracy; more clusters never hurt by more than 1%; k >= distinct rows reproduces the
    network; a self-map is exact; cross maps score within [0.9 min, max + 1%] of the originals."""
    X_tr, X_te, y_tr, y_te = digits
    orig = {k: net.score(X_te, y_te) for k, net in a4_nets.items()}
    for name, net in a4_nets.items():
        acc = {k: LocalLinearClustering(net, n_clusters=k, random_state=0).fit(X_tr).score(X_te,
                                                                                            y_te)
               for k in (1, 100)}
        if name == "dense":
            assert acc[1] >= 0.9 * orig[name]
        assert acc[100] >= acc[1] - 0.01
    small = X_tr[:60]
    full = LocalLinearClustering(a4_nets["dense"], n_clusters=60, random_state=0).fit(small)
    np.testing.assert_array_equal(full.predict(small), a4_nets["dense"].predict(small))
    self_map = LocalLinearMap(source=a4_nets["dense"], target=a4_nets["dense"]).fit(X_tr)
    assert self_map.score(X_te, y_te) == orig["dense"]
    from geolearn.polytopes import local_rows

    W, b = local_rows(a4_nets["dense"], X_tr)
    C = np.concatenate([W, b[..., None]], axis=2)
    resid = np.einsum("noa,oab->nob", C, self_map.maps_) - C
    assert np.linalg.norm(resid) <= 1e-8 * np.linalg.norm(C)
    for s, t in [("dense", "3x64"), ("3x64", "2x256"), ("2x256", "dense")]:
        acc = LocalLinearMap(source=a4_nets[s], target=a4_nets[t]).fit(X_tr).score(X_te, y_te)
        assert 0.9 * min(orig[s], orig[t]) <= acc <= max(orig[s], orig[t]) + 0.01
