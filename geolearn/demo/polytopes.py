"""Demo section: the linear regions of small ReLU networks, computed exactly."""

import warnings

import numpy as np

from ._plots import headless_pyplot

TITLE = "ReLU polytopes: linear regions, facets, Chebyshev balls and paths (papers 1-2)"
SECONDS = (2, 2)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    from geolearn.polytopes import LocalLinearClustering, ReLUPolytopes

    rng = np.random.default_rng(0)
    X2 = rng.uniform(-1, 1, size=(1000, 2))
    y2 = ((X2 ** 2).sum(1) < 0.4).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        toy = MLPClassifier((10, 10), max_iter=300, random_state=0).fit(X2, y2)
    est = ReLUPolytopes(toy, bounds=(-1, 1)).fit(X2)
    enum = est.enumerate_regions()
    print(f"  2-10-10-1 disc classifier: {enum.n_regions} regions in [-1,1]^2 (exact subdivision; "
          f"areas sum to {enum.areas.sum():.12f}), {est.n_regions_} of them hold data")
    seg = est.segment_regions([0, -1], [0, 1])
    print(f"  segment (0,-1)->(0,1) crosses {seg.n_regions} regions; its end points' activation "
          f"patterns differ in {seg.hamming} units (Hamming distance; each boundary crossed flips "
          "one unit, some flip back)")

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier((32, 32), max_iter=30, random_state=0).fit(X[:900], y[:900])
    digits = ReLUPolytopes(mlp, bounds=(0, 1)).fit(X[:900])
    radius, _ = digits.chebyshev(X[:5])
    P = digits.polytope(x=X[0])
    print(f"  digits 64-32-32-10: {digits.n_regions_} regions for 900 images; Chebyshev radii "
          f"(radius of the largest ball inside an image's region) {np.round(radius, 3).tolist()}; "
          f"the first image's region is bounded by {len(P.active_bits())} of the "
          f"{digits.n_hidden_units_} hidden units (its \"active bits\": units whose on/off "
          "boundary is a face of the region)")
    red = LocalLinearClustering(mlp, n_clusters=10, random_state=0).fit(X[:900])
    print(f"  network reduction, 10 affine maps per class: test accuracy "
          f"{red.score(X[900:], y[900:]):.3f} vs the network's {mlp.score(X[900:], y[900:]):.3f}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.plotting import PolytopePartitionDisplay

        fig, axes = plt.subplots(1, 2, figsize=(10, 5), layout="constrained")
        PolytopePartitionDisplay.from_results(enum, color_by="pattern", ax=axes[0])
        PolytopePartitionDisplay.from_results(enum, color_by="norm", ax=axes[1])
        fig.savefig(Path(outdir) / "polytopes_partition.png", dpi=100)
        plt.close(fig)
