"""
Where is a classifier vulnerable: off the data manifold, or along it?
=====================================================================

After "Manifold-driven decomposition for adversarial robustness" (Frontiers in Computer
Science, 2024). For data on a manifold M, an adversarial perturbation of budget eps either
leaves M along its normal space, moves along M, or lands near a point of M where a normal
perturbation flips the prediction (the nearby-normal risk, NNR). The paper's Theorem 1 bounds
the adversarial risk by these terms:
``R_adv(eps) <= R_std + R_nor(eps) + R_in(2 eps) + NNR(eps)``.

First the paper's circle (its Table 1): for a network trained on the double-boundary labels,
the adversarial risk follows the Bayes closed form and the bound holds at every budget; the
normal risk is small and the in-manifold term carries the bound. Then the shape of its Table 3
on real images: scikit-learn's digits, the manifold given by an autoencoder, where the normal
risk exceeds the in-manifold risk at the same budget, and random normal noise of the same norm
fools the classifier far less often than a normal attack does.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from geolearn.adversarial import risk_curve, risk_decomposition
from geolearn.demo.manifold_risk import circle_classifier, digits_setup
from geolearn.manifold import SphereManifold
from geolearn.plotting import AdversarialExamplesDisplay, RiskCurveDisplay

torch.set_num_threads(1)  # small MLPs run fastest on one thread

# %%
# The circle: the paper's f (MLP 2-64-64-2, full-batch SGD, lr 0.1, 1,000 epochs)
eps = [0.05, 0.1, 0.2, 0.3]
clf, X, y = circle_classifier("double")
circle = SphereManifold()
results = risk_curve(clf, X, y, manifold=circle, epsilons=eps, random_state=0)
for r in results:
    print(f"eps {r.epsilon}: R_adv {r.adv_risk:.3f} <= RHS {r.rhs:.3f} (R_std {r.std_risk:.3f}, "
          f"R_nor {r.normal_risk:.3f}, R_in(2 eps) {r.in_manifold_risk:.3f}, NNR {r.nnr:.3f}); "
          f"pointwise violations {r.pointwise_violations}")

fig, axes = plt.subplots(1, 2, figsize=(12, 5))
RiskCurveDisplay.from_results(results, ax=axes[0])
axes[0].plot(eps, 4 / np.pi * np.arcsin(eps), ":", color="C3", label="Bayes $R_{adv}$")
axes[0].legend(fontsize="small")
axes[0].set_title("circle, double boundary: the bound at every budget")
AdversarialExamplesDisplay.from_estimator(clf, X[:300], y[:300], manifold=circle, epsilon=0.2,
                                          random_state=0, ax=axes[1])
axes[1].set_title("eps = 0.2: normal (off M) vs in-manifold (along M) examples")
fig.tight_layout()

# %%
# Digits with an autoencoder manifold (Table 3's shape). eps = 0.5 is MNIST's 1.5 scaled
# by sqrt(64 / 784). The paper's Table 3 has no NNR column: nnr="sample" is the cheap
# plug-in of its Corollary 1.
setup = digits_setup()
clf_d, manifold = setup["classifier"], setup["manifold"]
X_d, y_d = setup["X_test"], setup["y_test"]
res = risk_decomposition(clf_d, X_d, y_d, manifold=manifold, epsilon=0.5, n_restarts=2,
                         nnr="sample", random_state=0, return_examples=True)
T = manifold.tangent_basis(X_d)
g = np.random.default_rng(0).normal(size=X_d.shape)
g -= np.einsum("nij,nj->ni", T, np.einsum("nij,ni->nj", T, g))
noise = 0.5 * g / np.linalg.norm(g, axis=1, keepdims=True)
noise_risk = np.mean(clf_d.predict((X_d + noise).astype(np.float32)) != y_d)
columns = {"R_adv (LHS)": res.adv_risk, "R_std": res.std_risk,
           "R_in(eps)": res.in_manifold_risk_eps, "R_nor(eps)": res.normal_risk,
           "random normal noise": noise_risk,
           "R_std + R_nor + R_in(2 eps)": res.rhs_without_nnr}
for name, value in columns.items():
    print(f"{name}: {value:.3f}")

fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1.3, 1]})
axes[0].bar(range(len(columns)), list(columns.values()),
            color=["C3", "0.4", "C2", "C0", "0.7", "black"])
axes[0].set_xticks(range(len(columns)), [c.replace(" + ", "\n+ ") for c in columns],
                   rotation=20, fontsize="small")
axes[0].set_ylabel("risk")
axes[0].set_title("digits, eps = 0.5 (the shape of the paper's Table 3)")
# one digit, its normal and in-manifold adversarial examples (the paper's Figs. 5-6)
both = res.indicators["nor"] & res.indicators["in_eps"] & ~res.indicators["std"]
j = int(np.flatnonzero(both)[0]) if both.any() else 0
images = [X_d[j], res.examples["normal"][j], res.examples["in_eps"][j],
          res.examples["normal"][j] - X_d[j], res.examples["in_eps"][j] - X_d[j]]
scale = max(np.abs(images[3]).max(), np.abs(images[4]).max())
titles = ["digit", "normal\nexample", "in-manifold\nexample", "normal\nchange",
          "in-manifold\nchange"]
axes[1].axis("off")
for k, (img, title) in enumerate(zip(images, titles)):
    sub = axes[1].inset_axes([k / 5, 0.2, 0.19, 0.6])
    if k < 3:
        sub.imshow(img.reshape(8, 8), cmap="gray", vmin=0, vmax=1)
    else:
        sub.imshow(img.reshape(8, 8), cmap="coolwarm", vmin=-scale, vmax=scale)
    sub.set_title(title, fontsize="small")
    sub.set_xticks([])
    sub.set_yticks([])
fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_manifold_risk.png" if len(plt.get_fignums()) == 1 else \
            f"plot_manifold_risk_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
