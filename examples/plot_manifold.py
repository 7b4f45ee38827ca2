"""
CIDM on a noisy circle: embedding, Nyström projection, extension far away, and an attack
=========================================================================================

The conformally invariant diffusion map (CIDM) learns the circle from noisy
samples. Its first two eigenfunctions are (cos t, sin t); the Nyström
projection maps noisy and off-manifold points back onto a smooth circle (the
paper's Figure 2); a function extended with 20 eigenfunctions stays smooth and
finite far from the data, unlike a small neural network (Figure 1); and
OnManifoldPGD finds an adversary of a linear classifier that stays on the
circle.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.neural_network import MLPRegressor

from geolearn.datasets import make_circle_points
from geolearn.manifold import CIDM, OnManifoldPGD
from geolearn.plotting import DiffusionEmbeddingDisplay, NystromProjectionDisplay

X, t = make_circle_points(800, noise=0.05, random_state=0, return_params=True)
cidm = CIDM(n_eigenpairs=20, random_state=0).fit(X)

fig, axes = plt.subplots(2, 2, figsize=(10, 9))
DiffusionEmbeddingDisplay.from_estimator(cidm, color=t, color_label="angle t (rad)",
                                         ax=axes[0, 0])
axes[0, 0].set_title("CIDM embedding, coloured by angle")
rng = np.random.default_rng(1)
s = rng.uniform(0, 2 * np.pi, 60)
off = rng.choice([0.6, 1.5], 60)[:, None] * np.c_[np.cos(s), np.sin(s)]
NystromProjectionDisplay.from_estimator(cidm, off, n_iter=2, ax=axes[0, 1])
axes[0, 1].set_title("Nyström projection (2 iterations)")

# Figure 1: extend f(t) = sin 2t + 0.5 cos 3t away from the circle
def f(a):
    return np.sin(2 * a) + 0.5 * np.cos(3 * a)


F = f(np.arctan2(X[:, 1], X[:, 0]))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    net = MLPRegressor(hidden_layer_sizes=(32, 32), max_iter=2000, random_state=0).fit(X, F)
ring = np.linspace(0, 2 * np.pi, 300)
for R, style in [(1.0, "-"), (3.0, "--"), (10.0, ":")]:
    Q = R * np.c_[np.cos(ring), np.sin(ring)]
    axes[1, 0].plot(ring, cidm.extend(F, Q), "C0" + style, label=f"CIDM, radius {R:g}")
    axes[1, 0].plot(ring, net.predict(Q), "C3" + style, label=f"MLP, radius {R:g}")
axes[1, 0].plot(ring, f(ring), "k", lw=0.8, label="f")
axes[1, 0].set_xlabel("angle")
axes[1, 0].legend(fontsize="x-small", ncol=2)
axes[1, 0].set_title("Function extension away from the data")

# On-manifold PGD against the cut x0 > 0.5
clf = torch.nn.Linear(2, 2)
with torch.no_grad():
    clf.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
    clf.bias.copy_(torch.tensor([0.5, -0.5]))
attack = OnManifoldPGD(clf, tangent="jacobian", intrinsic_dim=1, random_state=0)
attack.fit(X, np.zeros(len(X), int))
starts = np.c_[np.cos([1.6, 2.2, -1.6, -2.2]), np.sin([1.6, 2.2, -1.6, -2.2])]
res = attack.generate(starts, y=np.zeros(4, int))
ax = axes[1, 1]
ax.scatter(X[:, 0], X[:, 1], s=3, c="0.8")
ax.axvline(0.5, color="k", lw=0.8)
ax.scatter(*starts.T, c="tab:green", label="start")
ax.scatter(*res.X_adv.T, marker="*", s=150, c="k", label="on-manifold adversary")
ax.set_aspect("equal")
ax.legend(fontsize="small")
ax.set_title(f"OnManifoldPGD: success {res.success.sum()}/4")
fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_manifold.png" if len(plt.get_fignums()) == 1 else f"plot_manifold_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
