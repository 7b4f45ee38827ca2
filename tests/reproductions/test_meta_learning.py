"""Reproduction of "Recovering manifold representations via unsupervised meta-learning"
(MRML) at CPU scale: the meta-learned autoencoder against plain training on a held-out
neighbourhood.

The paper's Table 1 (LineMOD, one object, a held-out neighbourhood of 100 views) shows
Meta-C (episodes whose meta-test batch is a local neighbourhood) reconstructing the
held-out views with a lower MSE (3.82e-3 against 4.03e-3) and a lower persistence-diagram
W2 total (14.10 against 18.67, "14.44%" below the best baseline) than the plain
autoencoder. LineMOD cannot be used offline; the family's spec replaces it by 1,313
images of a rotating glyph (16 x 16 x 3, an annulus of images) and gates, over seeds
0, 1, 2: training per-pixel MSE < 0.005 for both models; mean held-out MSE of Meta-C
<= 1.05 x the baseline's (spec's reference run: 0.94x); mean held-out W2 total of Meta-C
<= 1.10 x the baseline's (reference: 0.99x). The paper's 10-15% topological gain is not
reliably reproduced at this scale (1 of 3 seeds in the reference run): it is printed
(``-s``), not gated.
"""

import time

import numpy as np
import pytest

from geolearn.datasets import make_rotating_shape_images
from geolearn.generative import MetaManifoldAutoencoder, NeighborhoodHoldout
from geolearn.generative.metrics import (
    knn_spectral_distance,
    persistence_wasserstein,
    relative_reduction,
)

SEEDS = (0, 1, 2)
# the spec's setting: 768-256-128-10 ReLU MLP, 1,000 iterations of batch 64, Adam 1e-3,
# inner_lr "auto" (1.6e-6 here), meta_test_weight 1e-3, BCE summed
TRAIN = dict(architecture="mlp", n_iter=1000, batch_size=64, lr=1e-3, device="cpu")


def _measure(model, X, train, test):
    held = X[test]
    rec = model.reconstruct(held)
    return {"train_mse": -model.score(X[train]), "mse": -model.score(held),
            "w2": persistence_wasserstein(held, rec)["total"],
            "k5": knn_spectral_distance(held, rec, n_neighbors=5),
            "k20": knn_spectral_distance(held, rec, n_neighbors=20)}


@pytest.fixture(scope="module")
def runs():
    out = {"AE": [], "Meta-C": []}
    for s in SEEDS:
        X = make_rotating_shape_images(1313, image_size=16, random_state=s).reshape(1313, -1)
        train, test = next(NeighborhoodHoldout(n_holdout=100, random_state=s).split(X))
        for name, strategy in (("AE", None), ("Meta-C", "neighborhood")):
            t0 = time.perf_counter()
            model = MetaManifoldAutoencoder(episodic_strategy=strategy, random_state=s,
                                            **TRAIN).fit(X[train])
            m = _measure(model, X, train, test)
            out[name].append(m)
            print(f"seed {s} {name:6s}: train MSE {m['train_mse']:.4f}, holdout MSE "
                  f"{m['mse']:.4f} / W2 total {m['w2']:.2f} / spectral k=5 {m['k5']:.2f}, "
                  f"k=20 {m['k20']:.2f} ({time.perf_counter() - t0:.0f} s)")
    return out


def _mean(runs, name, key):
    return float(np.mean([m[key] for m in runs[name]]))


@pytest.mark.slow
def test_both_models_fit_the_training_views(runs):
    """Spec gate: training per-pixel MSE < 0.005 for the baseline and Meta-C (every seed)."""
    for name in runs:
        assert max(m["train_mse"] for m in runs[name]) < 0.005, name


@pytest.mark.slow
def test_meta_c_reconstructs_the_held_out_neighbourhood_as_well(runs):
    """Table 1's MSE column (Meta-C 3.82e-3 < AE 4.03e-3), gated as mean Meta-C <= 1.05 x AE."""
    ratio = _mean(runs, "Meta-C", "mse") / _mean(runs, "AE", "mse")
    print(f"holdout MSE Meta-C / AE: {ratio:.3f} (spec reference 0.94)")
    assert ratio <= 1.05


@pytest.mark.slow
def test_meta_c_keeps_the_held_out_shape(runs):
    """Table 1's W2 total (Meta-C 14.10 against AE 18.67), gated as mean Meta-C <= 1.10 x AE;
    the paper's relative reduction is printed, not gated (spec section 6)."""
    ae, meta = _mean(runs, "AE", "w2"), _mean(runs, "Meta-C", "w2")
    wins = sum(m["w2"] < a["w2"] for m, a in zip(runs["Meta-C"], runs["AE"]))
    print(f"holdout W2 total Meta-C / AE: {meta / ae:.3f} (spec reference 0.99); relative "
          f"reduction {relative_reduction(ae, meta):.1%} (paper 14.44%); Meta-C lower in "
          f"{wins} of {len(SEEDS)} seeds; spectral k=20 Meta-C / AE "
          f"{_mean(runs, 'Meta-C', 'k20') / _mean(runs, 'AE', 'k20'):.3f}")
    assert meta <= 1.10 * ae
