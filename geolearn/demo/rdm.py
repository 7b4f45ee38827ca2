"""Demo section: digits representations compared by their RDMs, and a Fiedler partition."""

from ._plots import headless_pyplot

TITLE = "RDMs: pixels cluster by digit, noise does not (correlation with the categorical RDM)"
SECONDS = (1, 1)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    import numpy as np
    from sklearn.datasets import load_digits

    from geolearn.representations import (
        bootstrap_compare_rdms,
        categorical_rdm,
        compute_rdm,
        fiedler_accuracy,
    )

    X, y = load_digits(return_X_y=True)
    X, y = X[:600], y[:600]
    reps = {"pixels": X, "pixels + N(0, 16^2)": X + np.random.default_rng(0).normal(0, 16, X.shape)}
    target = categorical_rdm(y)
    pair = (y == 3) | (y == 8)
    rdms = {}
    print("  r: Pearson correlation of a representation's RDM (1 - correlation of every image "
          "pair) with the categorical RDM (0 within a digit, 1 across), 0 = no digit structure; "
          "Fiedler accuracy: the unsupervised two-way cut of the 3s and 8s (chance 0.5). "
          "See docs/user_guide/rdm.md.")
    for name, V in reps.items():
        R = rdms[name] = compute_rdm(V)
        res = bootstrap_compare_rdms(R, target, n_boot=300, random_state=0)
        acc = fiedler_accuracy(R[np.ix_(pair, pair)], y[pair])
        print(f"  {name:20s} Pearson r with the categorical RDM {res.statistic:.3f} "
              f"(95% CI {res.ci_low:.3f}-{res.ci_high:.3f}, p {res.p_value:.1e}); "
              f"Fiedler accuracy 3 vs 8: {acc:.2f}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.plotting import RDMDisplay

        fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
        for ax, (name, R) in zip(axes, rdms.items()):
            RDMDisplay.from_results(R, y, ax=ax)
            ax.set_title(name)
        fig.savefig(Path(outdir) / "rdm_digits.png", dpi=100)
        plt.close(fig)
