"""
Geometry tracked through training, and a one-call geometry report
=================================================================

:class:`~geolearn.inspection.GeometryTracker` records geometry measures in a skorch net's
history as it trains. Here a one-hidden-layer sigmoid network learns the sinusoidal boundary of
Zavatone-Veth et al. (Fig. 1): every 150 epochs the tracker records, on a fixed grid of probes,
the median log volume element of the metric its hidden layer pulls back to the input plane,
and a measure of our own, the contrast of that log volume near the boundary against far from
it, which grows as training magnifies areas along the boundary (about 0.4 at initialisation,
0.85 after 1500 epochs; not monotonically). :class:`~geolearn.plotting.GeometryHistoryDisplay` draws
them beside the loss; :func:`~geolearn.inspection.geometry_report` then compares the net at
initialisation with the trained one, and says which measures do not apply (no images, not a
ReLU net).
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.spatial import cKDTree
from skorch import NeuralNetClassifier

from geolearn.datasets import make_sinusoid_boundary
from geolearn.inspection import GeometryTracker, geometry_report
from geolearn.plotting import GeometryHistoryDisplay
from geolearn.riemannian import RiemannianFeatureGeometry, ShallowNet

X, y = make_sinusoid_boundary(400, random_state=42)
X = X.astype(np.float32)
a = np.linspace(-1, 1, 30)
grid = np.array(np.meshgrid(a, a, indexing="ij")).reshape(2, -1).T.astype(np.float32)
t = np.linspace(-1.6, 1.6, 4001)
boundary = cKDTree(np.column_stack([t, 0.6 * np.sin(7 * t - 1)]))


def boundary_contrast(model, X, y=None):
    """Median log volume element within 0.1 of the boundary minus beyond 0.4 of it."""
    log_v = RiemannianFeatureGeometry(model, layer="activation").fit(X).log_volume_element(X)
    dist = boundary.query(X)[0]
    return float(np.median(log_v[dist < 0.1]) - np.median(log_v[dist > 0.4]))


def make_net(**kwargs):
    torch.manual_seed(0)
    return NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=100,
                               module__n_classes=2, criterion=torch.nn.CrossEntropyLoss,
                               optimizer=torch.optim.Adam, lr=0.02,
                               batch_size=-1, train_split=None, verbose=0, **kwargs)


tracker = GeometryTracker({"log_volume": "log_volume", "boundary_contrast": boundary_contrast},
                          grid, every=150, layer="activation", max_probes=256)
net = make_net(max_epochs=1500, callbacks=[tracker]).fit(X, y)
print("boundary contrast every 150 epochs:",
      np.round([row["boundary_contrast"] for row in net.history if "boundary_contrast" in row], 2))
GeometryHistoryDisplay.from_estimator(net)

# %%
# The same measures, once, on the net at initialisation and the trained one, side by side.
# ``"auto"`` tries every registered measure; the table says why the image measures and the
# ReLU-region density were skipped.
init = make_net(max_epochs=0).initialize()
report = geometry_report({"init": init, "trained": net}, X, y, layers=["activation"],
                         measure_params={"rdm_similarity": {"metric": "euclidean"}})
print(report.to_frame("wide"))
print(report.to_frame().dropna(subset=["reason"])[["model", "measure", "reason"]]
      .to_string(max_colwidth=60))
report.plot()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = f"plot_inspection_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
