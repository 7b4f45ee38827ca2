"""
The variety of best fit sees what the flag mean misses
======================================================

Digit images grouped into sets of three span 3-dimensional subspaces of R^64. One
Schubert variety of best fit per class (Karimov, Kirby & Peterson 2023, Algorithm II)
asks that every set *meet* the class subspace W in a line; the flag mean asks W to
contain the sets as a whole. Left: the convergence of the monotone solver. Middle: the
held-out fit against k flattens at the "working dimension" (the paper's Fig. 4). Right:
the first column of each class's K, shown as an image (its interpretable representative).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from geolearn.plotting import SVBFConvergenceDisplay
from geolearn.subspaces import (
    SVBF,
    SubspaceEmbedding,
    SVBFClassifier,
    make_subspace_sets,
    working_dimension,
)

digits = load_digits()
keep = np.isin(digits.target, [3, 8])
X, y = digits.data[keep] / 8.0 - 1.0, digits.target[keep]          # [-1, 1] as in the paper
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.22, stratify=y, random_state=0)
S_tr, l_tr = make_subspace_sets(X_tr, y_tr, 3, random_state=0)
S_te, l_te = make_subspace_sets(X_te, y_te, 3, random_state=0)
embed = SubspaceEmbedding().fit(S_tr)
B_tr, B_te = embed.transform(S_tr), embed.transform(S_te)

for c, name in [(1, "SVBF (c = 1)"), (3, "flag mean (c = 3)")]:
    clf = make_pipeline(SubspaceEmbedding(), SVBFClassifier(n_components=4, intersection_dim=c,
                                                            random_state=0))
    print(f"{name}: held-out accuracy {clf.fit(S_tr, l_tr).score(S_te, l_te):.3f}")

ks = list(range(1, 9))
scores = [SVBF(k, n_init=2, random_state=0).fit(B_tr[l_tr == 3]).score(B_te[l_te == 3])
          for k in ks]
k0 = working_dimension(scores, ks)
print(f"class 3: working dimension {k0}")

fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
svbf = SVBF(4, init="uniform", n_init=4, random_state=0).fit(B_tr[l_tr == 3])
SVBFConvergenceDisplay.from_estimator(svbf, ax=axes[0])
axes[1].plot(ks, scores, marker="o")
axes[1].axvline(k0, color="0.6", ls="--")
axes[1].set(xlabel="k", ylabel="held-out mean cos^2 theta_1", title="working dimension (class 3)")
clf = SVBFClassifier(n_components=4, random_state=0).fit(B_tr, l_tr)
images = np.hstack([np.abs(K[:, 0]).reshape(8, 8) for K in clf.bases_])
axes[2].imshow(images, cmap="gray")
axes[2].set(title="first column of K: class 3 | class 8", xticks=[], yticks=[])
fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_subspaces.png" if len(plt.get_fignums()) == 1 else f"plot_subspaces_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
