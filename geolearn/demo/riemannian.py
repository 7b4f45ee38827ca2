"""Demo section: training magnifies areas along the decision boundary; the conformal SVM."""

import numpy as np

from ._plots import headless_pyplot

TITLE = "Riemannian geometry: volume element of a trained net, conformal-kernel SVM"
SECONDS = (7, 8)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def _boundary_contrast(points, log_v):
    t = np.linspace(-1.6, 1.6, 4001)
    curve = np.column_stack([t, 0.6 * np.sin(7 * t - 1)])
    from scipy.spatial import cKDTree

    dist = cKDTree(curve).query(points)[0]
    return np.median(log_v[dist < 0.1]) - np.median(log_v[dist > 0.4])


def run(outdir=None, *, full=False):
    import torch
    from sklearn.svm import SVC
    from skorch import NeuralNetClassifier

    from geolearn.datasets import make_sinusoid_boundary
    from geolearn.riemannian import ConformalKernelSVC, RiemannianFeatureGeometry, ShallowNet

    X, y = make_sinusoid_boundary(400, random_state=42)
    X_test, y_test = make_sinusoid_boundary(1000, random_state=999)
    torch.manual_seed(0)
    net = NeuralNetClassifier(ShallowNet, module__n_features=2, module__width=100,
                              module__n_classes=2, criterion=torch.nn.CrossEntropyLoss,
                              optimizer=torch.optim.Adam, lr=0.02,
                              batch_size=-1, max_epochs=1500,
                              train_split=None, verbose=0,
                              callbacks="disable")
    net.initialize()
    geo = RiemannianFeatureGeometry(net, layer="features")
    inner = make_sinusoid_boundary(1, random_state=0)[0]  # any sample: fit only checks the map
    resolution = 60 if full else 40
    print(f"  log volume element on a {resolution} x {resolution} grid at init ...")
    init = geo.fit(inner).on_grid(bounds=(-1, 1), resolution=resolution)
    print(f"  training ({net.max_epochs} full-batch epochs) and the grid again ...")
    net.partial_fit(X, y)
    trained = geo.fit(inner).on_grid(bounds=(-1, 1), resolution=resolution)
    print(f"  sine task, width-100 sigmoid net: test accuracy {net.score(X_test, y_test):.3f}")
    print("  log V, the log volume element of the metric the net's hidden layer pulls back, "
          "measures how much the net stretches the input space there")
    print("  median log V near the boundary - far from it: "
          f"{_boundary_contrast(init.points, init['log_volume']):.2f} at init -> "
          f"{_boundary_contrast(trained.points, trained['log_volume']):.2f} trained")

    X200, y200 = X[:200], y[:200]
    svc = SVC(gamma=2.0).fit(X200, y200)
    conf = ConformalKernelSVC(gamma=2.0).fit(X200, y200)
    print(f"  SVC (gamma=2, C=1): accuracy {svc.score(X_test, y_test):.3f} with "
          f"{len(svc.support_)} support vectors -> conformal (kernel rescaled to magnify the "
          f"space near the first fit's boundary) {conf.score(X_test, y_test):.3f} with "
          f"{conf.n_support_history_[-1]} support vectors")

    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.plotting import GeometrySliceDisplay

        fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
        GeometrySliceDisplay.from_results(init, ax=axes[0])
        GeometrySliceDisplay.from_results(trained, ax=axes[1])
        axes[0].set_title("log volume element at init")
        axes[1].set_title("after training (white: decision boundary)")
        fig.savefig(Path(outdir) / "riemannian_volume.png", dpi=100, bbox_inches="tight")
        plt.close(fig)
