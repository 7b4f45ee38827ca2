"""
Relative stability to diffeomorphisms
=====================================

Petrini et al. (2021) measure how much a model changes under smooth deformations of its input
images, relative to isotropic noise of the same norm: ``R_f = D_f / G_f``. Good CNNs have
``R_f`` one to two decades below 1; fully connected nets do not.

This example (i) shows the maximum-entropy deformations over a grid of temperatures ``T`` and
cut-offs ``c``, with the useful region (``T_min <= T <= T_max``) framed, and (ii) follows
``R_f``, ``D_f`` and ``G_f`` of a fully connected network on digits as the training set grows.
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from geolearn.datasets import load_digits_images
from geolearn.diffeo import deformation_grid, relative_stability
from geolearn.plotting import DeformationGridDisplay, StabilityCurveDisplay

X, y = load_digits_images(upsample=2, return_X_y=True)  # 16x16: T(delta=1) < T_max at c=3
DeformationGridDisplay.from_results(deformation_grid(X[3], cutoffs=(1, 3, 5), random_state=0))

# %%
# A fully connected net on raw pixels in [0, 1]. Note: a per-pixel ``StandardScaler`` would
# blow up the noise on the near-constant border pixels (which deformations leave at 0) and
# make ``G_f`` huge; scale globally, or not at all, when measuring ``R_f``.
X_flat = X.reshape(len(X), -1)
X_tr, X_te, y_tr, y_te = train_test_split(X_flat, y, test_size=500, stratify=y, random_state=0)
sizes = [100, 200, 400, 800, len(X_tr)]
results = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for P in sizes:
        model = MLPClassifier((64, 64), max_iter=300, random_state=0)
        model.fit(X_tr[:P], y_tr[:P])
        res = relative_stability(model, X_te, image_shape=(16, 16), c=3, delta=1.0,
                                 n_repeats=3, random_state=0)
        results.append(res)
        print(f"P={P:5d}  acc={model.score(X_te, y_te):.3f}  R={res.R:.2f}  D={res.D:.3f}  "
              f"G={res.G:.4f}")

fig, ax = plt.subplots()
StabilityCurveDisplay.from_results(sizes, results, xlabel="training-set size P").plot(ax=ax)
ax.axhline(1.0, color="0.6", lw=0.8)
ax.set_title("FC net on digits: R_f stays above 1 (paper, Fig. 4)")

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_diffeo.png" if len(plt.get_fignums()) == 1 else f"plot_diffeo_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
