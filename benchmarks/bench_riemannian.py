"""Riemannian family benchmark: batched torch.func geometry against the paper's autograd loops.

Peers (re-implemented here as the public code does them, spec §8):
- log volume: ``torch.autograd.functional.jacobian`` per point (the issue's per-point loop)
  and of the batch-summed output (``nn_curvature/src/utils/accessories_autograd.py``),
  ``Σ log σ_i(J/√width)``;
- Ricci scalar: metric by autograd, Christoffels with ``pinv``, their derivatives by
  autograd again, per point;
- conformal SVM: a hand-built ``SVC(kernel="precomputed")`` loop with the factor summed
  directly in numpy.

Run: ``OMP_NUM_THREADS=1 python -m benchmarks.bench_riemannian``
(``--issue-rows``: only the ``ConformalKernelSVC`` row, median of 5; ``--contended``: beside
one busy process).
"""

import argparse

import numpy as np
import torch
from scipy.spatial.distance import cdist
from sklearn.svm import SVC

from benchmarks._runner import compare, header, run_main
from geolearn.datasets import make_sinusoid_boundary
from geolearn.riemannian import (
    ConformalKernelSVC,
    PullbackMetric,
    RiemannianFeatureGeometry,
    ShallowNetworkGeometry,
)

F64 = torch.float64


def _sigmoid_layer(d, width, seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d, width), torch.nn.Sigmoid()).double()
    for p in net.parameters():
        torch.nn.init.normal_(p)
    return net


def _grid(n):
    side = int(np.sqrt(n))
    a = np.linspace(-1.5, 1.5, side)
    return np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T


def peer_log_volume_loop(net, X):
    """Per-point ``autograd.functional.jacobian`` then log singular values of J/√width."""
    width = net[0].out_features
    out = []
    for x in torch.as_tensor(X):
        J = torch.autograd.functional.jacobian(net, x) / width**0.5
        out.append(torch.log(torch.linalg.svdvals(J)).sum())
    return torch.stack(out).numpy()


def peer_log_volume_batch_summed(net, X):
    """The paper's batch Jacobian: jacobian of ``net(X).sum(0)`` w.r.t. the whole batch."""
    width = net[0].out_features
    J = torch.autograd.functional.jacobian(lambda Z: net(Z).sum(0), torch.as_tensor(X))
    J = J.permute(1, 0, 2) / width**0.5
    return torch.log(torch.linalg.svdvals(J)).sum(1).numpy()


def peer_ricci_loop(net, X):
    """Per-point Ricci from autograd metric derivatives and pinv Christoffels."""
    width = net[0].out_features

    def metric(x):
        J = torch.autograd.functional.jacobian(net, x, create_graph=True)
        return J.T @ J / width

    def christoffel(x):
        g = metric(x)
        dg = torch.autograd.functional.jacobian(metric, x, create_graph=True)  # [μ, ν, λ]
        first = 0.5 * (dg.permute(0, 2, 1) + dg - dg.permute(2, 0, 1))
        return torch.einsum("kl,lmn->kmn", torch.linalg.pinv(g), first)

    out = []
    for x in torch.as_tensor(X):
        gamma = christoffel(x)
        dgamma = torch.autograd.functional.jacobian(christoffel, x)
        ric = (torch.einsum("rvsr->sv", dgamma) - torch.einsum("rrsv->sv", dgamma)
               + torch.einsum("rrl,lvs->sv", gamma, gamma)
               - torch.einsum("rvl,lrs->sv", gamma, gamma))
        out.append(torch.einsum("sv,sv->", torch.linalg.pinv(metric(x)), ric).detach())
    return torch.stack(out).numpy()


def peer_conformal_svc(X, y, gamma, n_refits):
    """Amari–Wu by hand: precomputed Gram, factor summed in numpy, refit."""
    K0 = np.exp(-gamma * cdist(X, X, "sqeuclidean"))
    svc = SVC(kernel="precomputed").fit(K0, y)
    C = np.ones(len(X))
    tau = (2 * gamma) ** -0.5 / np.sqrt(X.shape[1])
    for _ in range(n_refits):
        S = X[svc.support_]
        C = C * np.exp(-cdist(X, S, "sqeuclidean") / (2 * tau**2)).sum(1)
        svc = SVC(kernel="precomputed").fit(C[:, None] * C[None] * K0, y)
    return svc


def bench_conformal_svc(repeat):
    Xs, ys = make_sinusoid_boundary(2000, random_state=0)
    ours_svc = ConformalKernelSVC(gamma=2.0, n_refits=2).fit(Xs, ys)
    peer_svc = peer_conformal_svc(Xs, ys, 2.0, 2)
    print(f"conformal SVC support vectors: ours {len(ours_svc.support_)}, "
          f"peer {len(peer_svc.support_)}")
    compare("ConformalKernelSVC fit, 2,000 points, n_refits=2 (target < 10 s)",
            lambda: ConformalKernelSVC(gamma=2.0, n_refits=2).fit(Xs, ys),
            lambda: peer_conformal_svc(Xs, ys, 2.0, 2), repeat=repeat)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issue-rows", action="store_true",
                        help="only issue 41's row (ConformalKernelSVC fit), median of 5")
    args = parser.parse_args(argv)
    header("riemannian: pullback-metric geometry and ConformalKernelSVC")
    if args.issue_rows:
        bench_conformal_svc(repeat=5)
        return

    net = _sigmoid_layer(2, 250)
    X = _grid(10_000)
    geo = RiemannianFeatureGeometry(net).fit(X)
    ours = geo.transform(X)[:, 0]
    # the per-point loop costs ~0.4 s per 100 points: time it on a subset
    sub = X[::50]
    print(f"log V agreement: loop {np.abs(ours[:20] - peer_log_volume_loop(net, X[:20])).max():.1e}"
          f", batch-summed {np.abs(ours - peer_log_volume_batch_summed(net, X)).max():.1e}")
    compare("log volume, 10,000 points, 2->250 sigmoid, vs batch-summed jacobian",
            lambda: geo.transform(X), lambda: peer_log_volume_batch_summed(net, X), repeat=3)
    compare("log volume, 200 of the points, vs per-point autograd loop",
            lambda: geo.transform(sub), lambda: peer_log_volume_loop(net, sub), repeat=1,
            warmup=0)

    X1600 = _grid(1600)
    compare("log volume, 1,600-point grid (target < 0.5 s)",
            lambda: geo.transform(X1600), lambda: peer_log_volume_batch_summed(net, X1600),
            repeat=3)
    ricci = RiemannianFeatureGeometry(net, quantities=("ricci_scalar",)).fit(X1600)
    sub = X1600[::160]
    gap = np.abs(ricci.transform(sub[:3])[:, 0] - peer_ricci_loop(net, sub[:3])).max()
    print(f"Ricci agreement: {gap:.1e}")
    compare("Ricci scalar, 10 points (Gauss route vs pinv-Christoffel loop)",
            lambda: ricci.transform(sub), lambda: peer_ricci_loop(net, sub), repeat=1, warmup=0)
    compare("Ricci scalar, 1,600-point grid (target < 3 s) vs batch-summed log V",
            lambda: ricci.transform(X1600), lambda: peer_log_volume_batch_summed(net, X1600),
            repeat=1)

    big = _sigmoid_layer(784, 2000)
    P = torch.rand(4, 784, dtype=F64, generator=torch.Generator().manual_seed(0)).numpy()
    generic = PullbackMetric(big)
    closed = ShallowNetworkGeometry.from_module(big)
    Pt = torch.as_tensor(P)
    print(f"784->2000 agreement generic vs closed form: "
          f"{float((generic.log_volume(Pt) - closed.log_volume(Pt)).abs().max()):.1e}")
    compare("4 points through 784->2000 sigmoid, generic vs per-point loop",
            lambda: generic.log_volume(Pt), lambda: peer_log_volume_loop(big, P), repeat=1,
            warmup=0)
    compare("4 points through 784->2000 sigmoid, closed form vs per-point loop",
            lambda: closed.log_volume(Pt), lambda: peer_log_volume_loop(big, P), repeat=1,
            warmup=0)

    bench_conformal_svc(repeat=1)


if __name__ == "__main__":
    run_main(main)
