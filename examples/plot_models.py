"""
One interface to any model
==========================

Wrap a scikit-learn pipeline, read a hidden layer and the input Jacobians, and show the
Jacobian of one output as an image: which pixels move the "3" logit most.
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from geolearn.datasets import load_digits_images
from geolearn.models import as_model

X, y = load_digits_images(return_X_y=True)
X = X.reshape(len(X), -1)
pipe = make_pipeline(StandardScaler(), MLPClassifier((64,), max_iter=200, random_state=0))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pipe.fit(X, y)

m = as_model(pipe)
print(m)
print("layers:", m.layer_names)
logits = m.features(X, layer="mlpclassifier.linear_1")
J = m.jacobian(X[y == 3][:50], layer="mlpclassifier.linear_1")  # (50, 10, 64)

fig, axes = plt.subplots(1, 2, figsize=(6, 3))
axes[0].imshow(X[y == 3].mean(0).reshape(8, 8), cmap="gray")
axes[0].set_title("mean '3'")
axes[1].imshow(J[:, 3].mean(0).reshape(8, 8), cmap="RdBu_r")
axes[1].set_title("d logit_3 / d pixel")
for ax in axes:
    ax.axis("off")
fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_models.png" if len(plt.get_fignums()) == 1 else f"plot_models_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
