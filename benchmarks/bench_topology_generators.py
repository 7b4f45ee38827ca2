"""DDPM sampling of the topology generators against a plain torch Algorithm 2 loop.

Spec target (topology-generative.md, section 7): sampling 2,000 points from the 2-D DDPM
with T = 1000 in under 10 s. The peer is DDPM's ancestral sampler written as the paper
does it (Ho et al. 2020, Algorithm 2: ``x_{t-1} = (x_t - beta_t / sqrt(1 - abar_t)
eps(x_t, t)) / sqrt(alpha_t) + sigma_t z``, ``sigma_t^2 = beta_t``) on the same trained
network, so the ratio is the cost of geolearn's shared sampler and validation. Run::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_topology_generators.py [--contended]

(``--contended``: beside one competing CPU-bound process).
"""

import sys

import torch

from benchmarks._runner import compare, contended, header
from geolearn.datasets import make_circle_points
from geolearn.generative import DiffusionGenerator
from geolearn.models import frozen


@torch.no_grad()
def plain_ddpm_sampling(model, betas, n_samples, n_features, seed=0):
    """Algorithm 2 of Ho et al. (2020) in plain torch with the model's ``eps(x_t, t)``."""
    torch.manual_seed(seed)
    betas = torch.as_tensor(betas, dtype=torch.float32)
    alphas = 1 - betas
    alphas_cumprod = torch.cumprod(alphas, 0)
    x = torch.randn(n_samples, n_features)
    for t in range(len(betas), 0, -1):
        z = torch.randn_like(x) if t > 1 else torch.zeros_like(x)
        eps = model.eps(x, torch.full((n_samples,), t, dtype=torch.long))
        x = ((x - (1 - alphas[t - 1]) / (1 - alphas_cumprod[t - 1]).sqrt() * eps)
             / alphas[t - 1].sqrt() + betas[t - 1].sqrt() * z)
    return x


def main(busy=False):
    header("topology generators: DDPM sampling" + (" (contended: one competing process)"
                                                   if busy else " (idle)"))
    X = make_circle_points(2000, noise=0.05, random_state=0)
    # the weights do not change the cost: a short training is enough
    ddpm = DiffusionGenerator(n_timesteps=1000, denoiser="mlp", hidden_layer_sizes=(256, 256),
                              max_epochs=20, batch_size=256, random_state=0,
                              device="cpu").fit(X)
    with contended(busy), frozen(ddpm.module_):
        ours, _, _ = compare(
            "DiffusionGenerator.sample 2000 points, d = 2, T = 1000 (MLP 256-256) vs plain "
            "torch Algorithm 2",
            lambda: ddpm.sample(2000, random_state=0),
            lambda: plain_ddpm_sampling(ddpm.module_, ddpm.betas_, 2000, 2),
            repeat=3, warmup=1)
        compare("the same on 10 points (the per-step overhead of the sampler)",
                lambda: ddpm.sample(10, random_state=0),
                lambda: plain_ddpm_sampling(ddpm.module_, ddpm.betas_, 10, 2),
                repeat=5, warmup=1)
    print(f"spec target: < 10 s: {'met' if ours < 10 else 'NOT met'} ({ours:.2f} s)", flush=True)


if __name__ == "__main__":
    main(busy="--contended" in sys.argv)
