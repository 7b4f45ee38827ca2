"""GridVAE family timings against plain torch loops with the same networks and losses.

The peer for training is the loop users write by hand (pythae / ClustPy are not
installed here): the same ``MLPVAE``, Adam, shuffled minibatches and the same
per-sample loss, without skorch. Run::

    OMP_NUM_THREADS=1 python -m benchmarks.bench_generative
    python -m benchmarks.bench_generative --issue-rows [--contended]   # the GridVAE epoch only

``--issue-rows`` also times the one-epoch fit against the plain loop that, as the fit does,
finds the training rows' grid cells (``labels_``) afterwards.
"""

import time

import numpy as np
import torch

from benchmarks._runner import compare, header, run_main
from geolearn.datasets import make_point_shapes, make_two_digit_composites
from geolearn.generative import (
    DiffusionDensity,
    ELBOPurifier,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    patch_attack,
    rectangular_patch_mask,
)
from geolearn.generative._base import VAEObjective
from geolearn.generative._grid import check_grid, flat_index, grid_codes
from geolearn.generative._losses import GridPrior
from geolearn.generative._modules import MLPVAE, VAEModule
from geolearn.models import frozen


def plain_vae_epochs(X, n_epochs, batch_size=256, seed=0, labels=False):
    """The hand-written loop: same module, same GridVAE loss, no skorch.

    ``labels=True`` also does what ``GridVAE.fit`` does after training: the grid cell of
    each training row's ``mu(x)`` (its ``labels_``).
    """
    torch.manual_seed(seed)
    module = VAEModule(MLPVAE(X.shape[1], 2, (256, 128)), 2)
    grid = check_grid((-2, -1, 0, 1, 2, 3), 2)
    objective = VAEObjective(prior=GridPrior(grid, 1 / 3),
                             kl_estimator="sample", likelihood="bernoulli",
                             sigma=0.7071067811865476, output_activation="sigmoid")
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    X = torch.as_tensor(X, dtype=torch.float32)
    module.train()
    for _ in range(n_epochs):
        for idx in torch.randperm(len(X)).split(batch_size):
            x = X[idx]
            loss, _ = objective(module, module(x), x, torch.empty(len(x), 0))
            opt.zero_grad()
            loss.backward()
            opt.step()
    if labels:
        module.eval()
        with torch.no_grad():
            mu = module.encode(X)[0].numpy()
        return module, flat_index(grid_codes(mu, grid), grid)
    return module


def plain_patch_pgd(clf, X, y, mask, n_iter):
    """PGD on the patch as in torchattacks/ART, written directly against the torch module."""
    module = clf.module_
    x = torch.as_tensor(X, dtype=torch.float32)
    M = torch.as_tensor(mask, dtype=torch.float32)
    target = torch.as_tensor(np.searchsorted(clf.classes_, y))
    x_adv = x * (1 - M) + torch.rand_like(x) * M
    with frozen(module):  # eval mode, no parameter gradients (as torchattacks/ART do)
        for _ in range(n_iter):
            x_adv.requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(module.head(module.encode(x_adv)[0]),
                                                     target, reduction="sum")
            g = torch.autograd.grad(loss, x_adv)[0]
            x_adv = (x_adv.detach() + g.sign() * M / 255).clamp(0, 1)
    return x_adv


def timed(label, fn, target=None):
    t0 = time.perf_counter()
    fn()
    t = time.perf_counter() - t0
    note = f" (target <= {target:g}s)" if target else ""
    print(f"{label}, {t:.3g}s{note}", flush=True)
    return t


def main():
    import sys

    header("geolearn.generative: GridVAE, VAEClassifier, purification, densities")
    Xtr = make_two_digit_composites(6000, 10, random_state=0)[0]

    compare("GridVAE one epoch (6000 x 128, MLP 256-128, batch 256) vs plain torch loop",
            lambda: GridVAE(max_epochs=1, random_state=0, device="cpu").fit(Xtr),
            lambda: plain_vae_epochs(Xtr, 1), repeat=5, warmup=1)
    if "--issue-rows" in sys.argv:  # issue 41's row only
        # the fit's fixed work (labels_ of the training rows, checks, initialisation) spread
        # over five epochs
        compare("GridVAE five epochs vs plain torch loop",
                lambda: GridVAE(max_epochs=5, random_state=0, device="cpu").fit(Xtr),
                lambda: plain_vae_epochs(Xtr, 5), repeat=3, warmup=1)
        # like for like: the plain loop also finds the training rows' grid cells (labels_)
        compare("GridVAE one epoch vs plain torch loop + labels_ of the training rows",
                lambda: GridVAE(max_epochs=1, random_state=0, device="cpu").fit(Xtr),
                lambda: plain_vae_epochs(Xtr, 1, labels=True), repeat=5, warmup=1)
        return
    timed("GridVAE.fit 150 epochs (A1)",
          lambda: GridVAE(max_epochs=150, random_state=0, device="cpu").fit(Xtr), target=60)

    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr_d, ytr_d, Xte_d, yte_d = X[:1200], y[:1200], X[1200:1500], y[1200:1500]
    clf = VAEClassifier(max_epochs=100, random_state=0, device="cpu")
    timed("VAEClassifier.fit (1200 x 64, 100 epochs)", lambda: clf.fit(Xtr_d, ytr_d), target=15)
    mask = rectangular_patch_mask((8, 8), 0, 0, 8, 2)
    compare("patch_attack PGD 2048 iterations on 300 x 64 vs plain torch PGD",
            lambda: patch_attack(clf, Xte_d, yte_d, mask, n_steps=2048, batch_size=300,
                                 random_state=0),
            lambda: plain_patch_pgd(clf, Xte_d, yte_d, mask, 2048), repeat=1, warmup=0)
    pfy = ELBOPurifier(clf, random_state=0).fit(Xtr_d)
    timed("ELBOPurifier 256 iterations on 300 x 64", lambda: pfy.transform(Xte_d), target=5)

    rng = np.random.default_rng(0)
    G = rng.normal(size=(5000, 4))
    timed("FlowDensity.fit (5000 x 4, 30 epochs)",
          lambda: FlowDensity(max_epochs=30, random_state=0, device="cpu").fit(G), target=15)
    roll = make_point_shapes(10000, ("swiss_roll",), random_state=0)["swiss_roll"]
    diff = DiffusionDensity(random_state=0, device="cpu")
    timed("DiffusionDensity.fit (3000 steps, batch 1024, d = 2)", lambda: diff.fit(roll),
          target=45)
    timed("DiffusionDensity.score_samples (2000 points, 10 rounds, h = 1)",
          lambda: diff.score_samples(roll[:2000]), target=10)
    if torch.cuda.is_available():
        timed("GridVAE one epoch on CUDA",
              lambda: GridVAE(max_epochs=1, random_state=0, device="cuda").fit(Xtr))


if __name__ == "__main__":
    run_main(main)
