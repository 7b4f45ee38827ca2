"""
Training magnifies areas along the decision boundary
====================================================

A one-hidden-layer sigmoid network learns the sinusoidal boundary of Zavatone-Veth et al.
(Fig. 1). The volume element of the metric its hidden layer pulls back to the input plane is
nearly radial at initialisation; after training it is largest along the boundary. The same
effect, built by hand, is the Amari–Wu conformal SVM (right).
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from skorch import NeuralNetClassifier

from geolearn.datasets import make_sinusoid_boundary
from geolearn.plotting import GeometrySliceDisplay
from geolearn.riemannian import ConformalKernelSVC, RiemannianFeatureGeometry, ShallowNet

X, y = make_sinusoid_boundary(400, random_state=42)
torch.manual_seed(0)
net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=250,
                          module__n_classes=2, criterion=torch.nn.CrossEntropyLoss,
                          optimizer=torch.optim.Adam, lr=0.02, batch_size=-1, max_epochs=2000,
                          train_split=None, verbose=0, callbacks="disable")
net.initialize()  # measure the initial geometry before training the same weights

geo = RiemannianFeatureGeometry(net, layer="features")
init = geo.fit(X).on_grid(resolution=40)
net.partial_fit(X, y)
trained = geo.fit(X).on_grid(resolution=40)
path = geo.along_path(np.array([-0.2, -0.9]), np.array([-0.2, 0.9]), n_steps=64)

svc = ConformalKernelSVC(gamma=2.0).fit(X[:200], y[:200])
a = np.linspace(-1.5, 1.5, 80)
P = np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T

fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
GeometrySliceDisplay.from_results(init, ax=axes[0])
axes[0].set_title("log volume element at init")
GeometrySliceDisplay.from_results(trained, ax=axes[1])
axes[1].set_title("after training (white: decision boundary)")
GeometrySliceDisplay.from_results(path, ax=axes[2])
axes[2].set_title("along x1 = -0.2 (dashed: class change)")
im = axes[3].tricontourf(P[:, 0], P[:, 1], svc.log_volume_element(P), levels=20)
axes[3].scatter(*svc.centers_[0].T, s=4, c="w")
axes[3].set_title("ConformalKernelSVC: log V (dots: support vectors)")
axes[3].set_aspect("equal")
fig.colorbar(im, ax=axes[3])

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_riemannian.png" if len(plt.get_fignums()) == 1 else f"plot_riemannian_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
