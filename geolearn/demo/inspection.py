"""Demo section: geometry tracked through training, and a geometry report of two checkpoints."""

import numpy as np

from ._plots import headless_pyplot

TITLE = "Inspection: geometry tracked through training, a report of any model"
SECONDS = (3, 3)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    import torch
    from skorch import NeuralNetClassifier

    from geolearn.datasets import make_sinusoid_boundary
    from geolearn.inspection import GeometryTracker, geometry_report

    X, y = make_sinusoid_boundary(300, random_state=0)
    X = X.astype(np.float32)

    def make_net(**kwargs):
        torch.manual_seed(0)
        module = torch.nn.Sequential(torch.nn.Linear(2, 32), torch.nn.ReLU(),
                                     torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                     torch.nn.Linear(32, 2))
        return NeuralNetClassifier(module, criterion=torch.nn.CrossEntropyLoss,
                                   optimizer=torch.optim.Adam, lr=0.01, batch_size=64,
                                   train_split=None, verbose=0, **kwargs)

    tracker = GeometryTracker(["region_density", "log_volume"], X, every=10, max_probes=128)
    net = make_net(max_epochs=60, callbacks=[tracker]).fit(X, y)
    epochs = net.history[:, ("epoch", "region_density", "log_volume")]
    print(f"  sine task, 2-32-32-2 ReLU net, training accuracy {net.score(X, y):.3f}")
    print("  linear regions crossed per unit length (32 fixed segments) and median log volume"
          " element, every 10 epochs:")
    print("   " + ", ".join(f"{e}: {d:.1f} / {v:.2f}" for e, d, v in epochs))

    report = geometry_report({"init": make_net(max_epochs=0).initialize(), "trained": net},
                             X, y, max_probes=128,
                             measure_params={"rdm_similarity": {"metric": "euclidean"}})
    frame = report.to_frame()
    wide = report.to_frame("wide").dropna()
    for (measure, layer), row in wide.iterrows():
        print(f"  {measure:>15}: init {row['init']:.3g} -> trained {row['trained']:.3g}")
    for _, row in frame[frame.model == "init"].dropna(subset=["reason"]).iterrows():
        print(f"  skipped {row.measure}: {row.reason}")

    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import GeometryHistoryDisplay

        disp = GeometryHistoryDisplay.from_estimator(net)
        disp.figure_.savefig(outdir / "inspection_history.png", dpi=100)
        plt.close(disp.figure_)
        report.to_html(outdir / "inspection_report.html")
