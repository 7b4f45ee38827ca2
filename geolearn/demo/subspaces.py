"""Demo section: Schubert varieties of best fit on planted subspaces and on digit sets."""

import numpy as np

TITLE = "Subspaces: Schubert variety of best fit (SVBF) and nearest-variety classification"
SECONDS = (1, 1)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline

    from geolearn.datasets import make_planted_variety
    from geolearn.subspaces import (
        SVBF,
        SubspaceEmbedding,
        SVBFClassifier,
        make_subspace_sets,
        working_dimension,
    )

    sets, W = make_planted_variety(120, 50, set_dim=2, variety_dim=3, random_state=0)
    train, test = sets[:60], sets[60:]
    ks = range(1, 6)
    fits = [SVBF(k, n_init=3, random_state=0).fit(train) for k in ks]
    scores = [f.score(test) for f in fits]
    k0 = working_dimension(scores, ks)
    print("  60 planes in R^50, each meeting a planted 3-d W in a line")
    print("  held-out mean cos^2 theta_1 for k = 1..5 (theta_1: the smallest angle between a "
          "plane and the fitted k-d variety centre; 1 = the plane meets it): "
          + ", ".join(f"{s:.3f}" for s in scores) + f"  -> working dimension {k0} (the knee)")
    best = fits[k0 - 1]
    gap = np.linalg.norm(best.basis_ @ best.basis_.T - W @ W.T)
    print(f"  k = {k0}: {best.n_iter_} MM iterations (majorise-minimise steps of the fit), "
          f"||K K^T - W W^T||_F = {gap:.1e} "
          "(distance of the fitted subspace K to the planted W; 0 = recovered)")

    digits = load_digits()
    keep = np.isin(digits.target, [3, 8])
    X, y = digits.data[keep] / 8.0 - 1.0, digits.target[keep]
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.22, stratify=y, random_state=0)
    S_tr, l_tr = make_subspace_sets(X_tr, y_tr, 3, random_state=0)
    S_te, l_te = make_subspace_sets(X_te, y_te, 3, random_state=0)
    clf = make_pipeline(SubspaceEmbedding(), SVBFClassifier(n_components=4, random_state=0))
    acc = clf.fit(S_tr, l_tr).score(S_te, l_te)
    print(f"  digits 3 vs 8 as sets of 3 images: nearest-variety accuracy {acc:.3f} "
          f"({len(S_te)} test sets)")

    if outdir is not None:
        import matplotlib.pyplot as plt

        from geolearn.plotting import PrincipalAnglesDisplay, SVBFConvergenceDisplay

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
        curve = SVBF(3, init="random", n_init=3, random_state=0).fit(train)
        SVBFConvergenceDisplay.from_estimator(curve, ax=axes[0])
        PrincipalAnglesDisplay.from_estimator(best, test, ax=axes[1])
        fig.savefig(f"{outdir}/subspaces.png", dpi=100)
        plt.close(fig)
