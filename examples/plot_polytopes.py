"""
The linear regions of a ReLU network
====================================

A ReLU network is affine on each cell of a partition of its input space. Train a small
2-10-10-1 network on the disc problem of paper 1 (``x1^2 + x2^2 < 0.4``), enumerate every
region of ``[-1, 1]^2`` exactly, colour them by bit string and by the norm of their affine
map, and count the regions crossed by segments between digit images and their nearest
neighbours (paper 1, Table 5: never fewer than the Hamming distance of the end points + 1).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.neighbors import NearestNeighbors
from sklearn.neural_network import MLPClassifier

from geolearn.plotting import PolytopePartitionDisplay, SegmentRegionsDisplay
from geolearn.polytopes import ReLUPolytopes

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(2000, 2))
y = ((X ** 2).sum(1) < 0.4).astype(int)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    toy = MLPClassifier((10, 10), max_iter=500, random_state=0).fit(X, y)

poly = ReLUPolytopes(toy, bounds=(-1, 1)).fit(X)
regions = poly.enumerate_regions()  # exact polygon subdivision in 2-D
print(f"{regions.n_regions} regions in [-1, 1]^2, {poly.n_regions_} of them hold training points")
print(f"mean Chebyshev radius {regions.chebyshev_radius.mean():.3f}; "
      f"{int(regions.bounded.sum())} regions are bounded in R^2")

fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
PolytopePartitionDisplay.from_results(regions, color_by="pattern", ax=axes[0])
PolytopePartitionDisplay.from_results(regions, color_by="norm", ax=axes[1])
PolytopePartitionDisplay.from_results(regions, color_by="sign", ax=axes[2])
axes[2].set_title("decision regions (sign of the logit)")

# %%
# Regions crossed between nearby digits
# -------------------------------------
# Exact breakpoints along each segment, compared with the Hamming distance of its ends.
Xd, yd = load_digits(return_X_y=True)
Xd = Xd / 16.0
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mlp = MLPClassifier((64, 64, 64), max_iter=40, random_state=0).fit(Xd, yd)
digits = ReLUPolytopes(mlp, bounds=(0, 1)).fit(Xd)
idx = rng.choice(len(Xd), 200, replace=False)
nn_idx = NearestNeighbors(n_neighbors=2).fit(Xd).kneighbors(Xd[idx])[1][:, 1]
disp = SegmentRegionsDisplay.from_estimator(digits, Xd[idx], Xd[nn_idx])
print(f"digits: {digits.n_regions_} distinct regions among {len(Xd)} images; segments cross "
      f"{disp.n_regions.mean():.1f} regions on average (Hamming {disp.hamming.mean():.1f})")

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_polytopes.png" if len(plt.get_fignums()) == 1 else f"plot_polytopes_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
