"""Reproduction of "Implications of data topology for deep generative models" (Jin et al.,
Front. Comput. Sci. 6:1260604, 2024) at reduced scale: the generators.

The topology family's spec, section 6, experiment 4 ("latent models
fill the hole"), gates unchanged: hole(DDPM) < 0.02, hole(VAE) > 0.03,
loop(DDPM) > loop(VAE). Spec's measurement (seed 0): data 0.000 / 1.50, VAE 0.085 / 0.29,
DDPM 0.005 / 0.49. Run with one torch thread (``OMP_NUM_THREADS=1``); measured figures
are printed (``-s``).
"""

import time

import numpy as np
import pytest

from geolearn.datasets import make_circle_points
from geolearn.generative import ChartAutoencoder, DiffusionGenerator, VAEGenerator
from geolearn.topology import persistence_diagrams

# 4,000 Adam steps: 2,000 points in batches of 256 are 8 steps an epoch
TRAIN = dict(max_epochs=500, batch_size=256, lr=1e-3, random_state=0, device="cpu")


def hole_and_loop(S):
    """Share of samples with ||x|| < 0.5, and the largest H1 persistence of 500 of them."""
    hole = float(np.mean(np.linalg.norm(S, axis=1) < 0.5))
    h1 = persistence_diagrams(S, maxdim=1, n_subsample=500, random_state=0)[1]
    return hole, float((h1[:, 1] - h1[:, 0]).max()) if len(h1) else 0.0


@pytest.fixture(scope="module")
def circle():
    return make_circle_points(2000, noise=0.05, random_state=0)


def _fit_and_measure(name, estimator, X):
    t0 = time.perf_counter()
    S = estimator.fit(X).sample(2000, random_state=0)
    hole, loop = hole_and_loop(S)
    print(f"{name}: hole {hole:.3f}, loop {loop:.2f} ({time.perf_counter() - t0:.0f} s)")
    return hole, loop


@pytest.fixture(scope="module")
def vae(circle):
    est = VAEGenerator(n_latent=2, hidden_layer_sizes=(128, 128), likelihood="gaussian",
                       sigma=0.05, beta=1.0, **TRAIN)
    return _fit_and_measure("VAE (n_latent=2)", est, circle)


@pytest.fixture(scope="module")
def ddpm(circle):
    est = DiffusionGenerator(n_timesteps=1000, denoiser="mlp", hidden_layer_sizes=(256, 256),
                             **TRAIN)
    return _fit_and_measure("DDPM (T=1000)", est, circle)


@pytest.mark.slow
def test_data_has_an_empty_hole_and_a_strong_loop(circle):
    """The reference: the noisy circle itself (spec: hole 0.000, loop 1.50)."""
    hole, loop = hole_and_loop(circle)
    print(f"data: hole {hole:.3f}, loop {loop:.2f}")
    assert hole == 0.0 and loop > 1.2


@pytest.mark.slow
def test_vae_fills_the_hole(vae):
    """Sections 2.1.1 and 3.5, Fig. 10B: a continuous decoder of a Gaussian on R^2 cannot
    map onto a circle without putting mass in its hole (spec gate: hole(VAE) > 0.03)."""
    assert vae[0] > 0.03


@pytest.mark.slow
def test_ddpm_leaves_the_hole_empty(ddpm):
    """Sections 2.1.3 and 3.5, Fig. 10C: the DDPM has no latent space and no topological
    constraint; its samples avoid the hole (spec gate: hole(DDPM) < 0.02)."""
    assert ddpm[0] < 0.02


@pytest.mark.slow
def test_ddpm_keeps_the_loop_the_vae_weakens(vae, ddpm):
    """Section 3.5, Fig. 9: the DDPM's samples keep the data's H1 class more persistent
    than the VAE's (spec gate: loop(DDPM) > loop(VAE))."""
    assert ddpm[1] > vae[1]


#: Section 2.1.2 / Fig. 7 at CPU scale: seeds and data no other test uses (circle seeds 11-13),
#: 1,000 points, 800 Adam steps; both models with their defaults (beta = 1, sigma = 0.05).
ATLAS_SEEDS = (11, 12, 13)
ATLAS = dict(hidden_layer_sizes=(64, 64), max_epochs=100, batch_size=128, device="cpu")


@pytest.fixture(scope="module")
def atlas_runs():
    """Hole share of 2,000 samples of a ChartAutoencoder and a VAEGenerator, per seed."""
    runs = []
    for seed in ATLAS_SEEDS:
        X = make_circle_points(1000, noise=0.05, random_state=seed)
        t0 = time.perf_counter()
        cae = ChartAutoencoder(random_state=seed, **ATLAS).fit(X)
        hole_cae = float(np.mean(np.linalg.norm(cae.sample(2000, random_state=seed), axis=1)
                                 < 0.5))
        vae = VAEGenerator(random_state=seed, **ATLAS).fit(X)
        hole_vae = float(np.mean(np.linalg.norm(vae.sample(2000, random_state=seed), axis=1)
                                 < 0.5))
        print(f"seed {seed}: hole CAE {hole_cae:.3f} (charts used {cae.chart_counts_}), "
              f"VAE {hole_vae:.3f} ({time.perf_counter() - t0:.0f} s)")
        runs.append((hole_cae, hole_vae))
    return np.array(runs)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "measured (seeds 11-13, noisy circle, 1,000 points, 800 steps, defaults): hole share "
    "CAE 0.146 / 0.182 / 0.069 (0.132 +- 0.058), VAE 0.194 / 0.198 / 0.198 (0.197 +- "
    "0.002): lower in 3/3 seeds but not halved; the chart predictor sends most points to "
    "one or two charts (1 of 4 charts used in seed 12)"))
def test_chart_autoencoder_leaves_the_hole_a_vae_fills(atlas_runs):
    """Fig. 7 and Section 2.1.2 (Jin et al. 2024): several charts cover a support one
    Euclidean latent cannot, so the CAE puts clearly less mass in the circle's hole than
    the VAE: at most half the VAE's hole share in every seed."""
    assert np.all(atlas_runs[:, 0] <= 0.5 * atlas_runs[:, 1])
