"""Diffeomorphism sampling, interpolation and R_f against the authors' per-image algorithm.

The peer is the ``diffeomorphism`` library of Petrini et al. (pcsl-epfl/diffeomorphism,
``diff.py``), not on PyPI: its published algorithm is re-implemented below line for line
(one field per call through ``torch.einsum``, ``remap`` with ``linear`` interpolation by
advanced indexing and the dense ``O(n^4)`` Gaussian sum), driven by a per-image loop as in
the authors' evaluation scripts.

Ours draws the fields and deforms with ``n_jobs=-1`` (threads over cache-sized chunks, one
torch thread each); the peer's loop runs with torch's default intra-op threads, as its users
run it.

Run: ``OMP_NUM_THREADS=2 python benchmarks/bench_diffeo.py [--contended] [--quick]``
(``--quick``: a fifth of the images and probes, one timed call per side: the same paths in
seconds, for ``bench_contention --benches``).
"""

import functools
import math
import sys
import warnings

import torch
from torch import nn

from benchmarks._runner import compare, header, run_main
from geolearn.diffeo import StabilityWarning, deform, relative_stability, sample_displacement_fields


# --------------------------------------------------------------------------- the peer
@functools.lru_cache()
def _peer_modes(n, m, dtype=torch.float64, device="cpu"):
    x = torch.linspace(0, 1, n, dtype=dtype, device=device)
    k = torch.arange(1, m + 1, dtype=dtype, device=device)
    i, j = torch.meshgrid(k, k, indexing="ij")
    r = (i.pow(2) + j.pow(2)).sqrt()
    e = (r < m + 0.5) / r
    s = torch.sin(math.pi * x[:, None] * k[None, :])
    return e, s


def _peer_scalar_field(n, m):
    e, s = _peer_modes(n, m, dtype=torch.get_default_dtype())
    c = torch.randn(m, m) * e
    return torch.einsum("ij,xi,yj->yx", c, s, s)


def peer_remap(a, dx, dy, interp):
    """The authors' ``remap``: ``interp="linear"`` by advanced indexing, ``"gaussian"`` by the
    dense ``O(n^4)`` sum (also the reference of ``tests/diffeo/test_sampler.py``)."""
    n, m = a.shape[-2:]
    y, x = torch.meshgrid(torch.arange(n, dtype=dx.dtype), torch.arange(m, dtype=dx.dtype),
                          indexing="ij")
    xn = (x - dx).clamp(0, m - 1)
    yn = (y - dy).clamp(0, n - 1)
    if interp == "linear":
        xf, yf, xc, yc = xn.floor().long(), yn.floor().long(), xn.ceil().long(), yn.ceil().long()
        xv, yv = xn - xf, yn - yf
        return ((1 - yv) * (1 - xv) * a[..., yf, xf] + (1 - yv) * xv * a[..., yf, xc]
                + yv * (1 - xv) * a[..., yc, xf] + yv * xv * a[..., yc, xc])
    sigma = 0.4715
    dx = xn[:, :, None, None] - x
    dy = yn[:, :, None, None] - y
    c = (-dx**2 - dy**2).div(2 * sigma**2).exp()
    c = c / c.sum([2, 3], keepdim=True)
    return (c * a[..., None, None, :, :]).sum([-1, -2])


def peer_deform(image, T, cut, interp="linear"):
    n = image.shape[-1]
    u = _peer_scalar_field(n, cut)
    v = _peer_scalar_field(n, cut)
    dx = T**0.5 * u * n
    dy = T**0.5 * v * n
    return peer_remap(image, dx, dy, interp).contiguous()


def peer_relative_stability(f, X, T, cut):
    """The evaluation scripts' recipe: per-image deformations, noise of matched norm per
    sample, batched forwards, per-output-unit medians."""
    with torch.no_grad():
        X_tau = torch.stack([peer_deform(x, T, cut) for x in X])
        eta = torch.randn_like(X)
        r = (X_tau - X).flatten(1).norm(dim=1) / eta.flatten(1).norm(dim=1)
        X_eta = X + r[:, None, None, None] * eta
        f0, f_tau, f_eta = f(X), f(X_tau), f(X_eta)
        return ((f_tau - f0).pow(2).median(0).values.sum()
                / (f_eta - f0).pow(2).median(0).values.sum()).item()


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(),
                         nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10)).eval()


def main(quick=False):
    header("geolearn.diffeo vs the authors' per-image diffeomorphism algorithm")
    print("# ours: sample_displacement_fields and deform with n_jobs=-1", flush=True)
    torch.manual_seed(0)
    n, T, c = 32, 0.005, 3
    scale, repeat = (5, 1) if quick else (1, 3)
    for count, interp, peer_interp in [(10_000 // scale, "bilinear", "linear"),
                                      (200 // scale, "gaussian", "gaussian")]:
        X = torch.rand(count, 1, n, n)

        def ours():
            deform(X, sample_displacement_fields(n, T, c, size=count, random_state=0, n_jobs=-1),
                   interp=interp, n_jobs=-1)

        def peer():
            for x in X:
                peer_deform(x, T, c, peer_interp)

        compare(f"{count} deformations 32x32 {interp}", ours, peer, repeat=repeat)

    X = torch.rand(500 // scale, 1, 28, 28)
    net = lenet()

    def ours_R():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StabilityWarning)
            relative_stability(net, X, T=T, c=c, average="median_per_unit", random_state=0)

    compare(f"R_f, {len(X)} probes 28x28, LeNet", ours_R,
            lambda: peer_relative_stability(net, X, T, c), repeat=repeat)


if __name__ == "__main__":
    run_main(main, quick="--quick" in sys.argv)
