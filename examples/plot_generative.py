"""
A latent grid for two-digit images (GridVAE)
=============================================

Train a GridVAE on images made of two bundled digits side by side. Its prior is a
6x6 grid of Gaussians, so each latent dimension becomes a discrete symbol. Decoding the
grid centres shows one dimension writing the left digit and the other the right one,
and traversing a dimension changes one digit only.
"""

import matplotlib.pyplot as plt
import numpy as np

from geolearn.datasets import make_two_digit_composites
from geolearn.generative import GridVAE
from geolearn.generative.metrics import (
    cluster_accuracy,
    disentangled_accuracy,
    topographic_similarity,
)
from geolearn.plotting import LatentGridDisplay, LatentTraversalDisplay

Xtr, ytr, ctr, Xte, yte, cte = make_two_digit_composites(6000, 2000, random_state=0)
vae = GridVAE(n_latent=2, grid_values=(-2, -1, 0, 1, 2, 3), prior_std=1 / 3, max_epochs=60,
              image_shape=(8, 16), random_state=0).fit(Xtr)

codes = vae.predict_codes(Xte)
print(f"cluster accuracy (36 classes): {cluster_accuracy(yte, vae.predict(Xte)):.2f}")
print(f"disentangled accuracy: {disentangled_accuracy(cte, codes):.2f}")
print(f"topographic similarity: {topographic_similarity(cte, codes, 1000, random_state=0):.2f}")

fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(14, 4.5),
                                    gridspec_kw={"width_ratios": [2, 2, 1.4]})
LatentGridDisplay.from_estimator(vae, ax=ax0)
ax0.set_title("decoded grid centres")
LatentTraversalDisplay.from_estimator(vae, Xte[:1], ax=ax1)
ax1.set_title("traversing each latent dimension")
Z = vae.transform(Xte)
ax2.scatter(Z[:, 0], Z[:, 1], c=yte, s=2, cmap="tab20")
for v in np.arange(-1.5, 3):
    ax2.axvline(v, color="r", lw=0.5)
    ax2.axhline(v, color="r", lw=0.5)
ax2.set(title="test latent means", xlabel="z0", ylabel="z1")
plt.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_generative.png" if len(plt.get_fignums()) == 1 else f"plot_generative_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
