"""Demo section: persistent homology of data with known topology."""

import os

import numpy as np

from ._plots import headless_pyplot

TITLE = "Topology: Betti numbers of a torus and a Klein bottle, a generator that fills a hole"
SECONDS = (4, 4)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from sklearn.neighbors import KernelDensity

    from geolearn.datasets import (
        make_circle_points,
        make_klein_bottle_points,
        make_torus_points,
    )
    from geolearn.topology import (
        betti_numbers,
        empirical_wasserstein2,
        make_diagram_distance_scorer,
        persistence_diagrams,
    )

    # n_jobs=1: giotto-ph's threads pair generators with the wrong diagram rows (a known
    # failure of persistence_diagrams with n_jobs > 1), and the demo runs on one thread
    torus = make_torus_points(300, embedding="r3", random_state=0)
    dgms = persistence_diagrams(torus, maxdim=2, n_jobs=1)
    print("  Betti numbers count the components, loops and voids (H0, H1, H2) that persist "
          "longer than a threshold; W2: the Wasserstein-2 distance between point clouds")
    print(f"  torus (300 points): Betti numbers at persistence > (0.9, 0.9, 0.25): "
          f"{betti_numbers(dgms, (0.9, 0.9, 0.25)).tolist()} (expected [1, 2, 1])")
    klein = make_klein_bottle_points(400, random_state=0)
    top = [np.ptp(persistence_diagrams(klein, maxdim=2, coeff=p, n_jobs=1)[2], axis=1).max()
           for p in (2, 3)]
    print(f"  Klein bottle: largest H2 (void) persistence with coefficients in Z/2 {top[0]:.3f}, "
          f"in Z/3 {top[1]:.3f} "
          "(the void exists over Z/2 only)")
    X = make_circle_points(300, noise=0.05, random_state=0)
    print("  a kernel density estimate (KDE) of a noisy circle, sampled: a narrow bandwidth "
          "keeps the hole, a wide one fills it")
    scorer = make_diagram_distance_scorer(X)
    for bw in (0.03, 0.6):
        kde = KernelDensity(bandwidth=bw).fit(X)
        S = kde.sample(300, random_state=1)
        print(f"  KDE bandwidth {bw}: share of samples in the hole (|x| < 0.5) "
              f"{(np.linalg.norm(S, axis=1) < 0.5).mean():.3f}, H1 diagram distance "
              f"{-scorer(kde):.3f}, W2 {empirical_wasserstein2(X, S):.3f}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import PersistenceDiagramDisplay

        fig, axes = plt.subplots(1, 2, figsize=(9, 4))
        PersistenceDiagramDisplay.from_results(dgms, ax=axes[0])
        axes[0].set_title("Torus in R^3: H1 x 2, H2 x 1")
        PersistenceDiagramDisplay.from_results(dgms[1:], homology_dimensions=[1, 2],
                                               kind="barcode", ax=axes[1])
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "topology.png"), dpi=100)
        plt.close(fig)
