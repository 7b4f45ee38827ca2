"""Demo section: maximum-entropy diffeomorphisms and relative stability R_f on digits."""

import warnings

from ._plots import headless_pyplot

TITLE = "Relative stability to diffeomorphisms: R_f = D_f / G_f (Petrini et al. 2021)"
SECONDS = (1, 1)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    import torch
    from sklearn.linear_model import LogisticRegression

    from geolearn.datasets import load_digits_images
    from geolearn.diffeo import (
        StabilityWarning,
        max_xi,
        relative_stability,
        sample_displacement_fields,
        temperature_for_delta,
        temperature_range,
    )

    X, y = load_digits_images(upsample=2, return_X_y=True)
    n, c = 16, 3
    T = temperature_for_delta(1.0, c, n)
    T_min, T_max = temperature_range(n, c)
    fields = sample_displacement_fields(n, T, c, size=2000, random_state=0)
    rms = float(fields.square().sum(1).mean().sqrt())
    print("  random smooth deformations of 16x16 digits: cut-off c (the highest spatial "
          "frequency of the displacement field) and temperature T (its size); T_min, T_max: "
          "the range where displacements are visible yet typically still diffeomorphisms")
    print(f"  c={c}, delta=1 px -> T={T:.5f} in [T_min, T_max] = [{T_min:.5f}, "
          f"{T_max:.5f}]; sampled RMS displacement {rms:.3f} px, "
          f"{(max_xi(fields) < 1).mean():.0%} diffeomorphisms")

    Xf = X.reshape(len(X), -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = LogisticRegression(max_iter=300).fit(Xf[:1200], y[:1200])
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(256, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        r_clf = relative_stability(clf, Xf[1200:1700], image_shape=(16, 16), random_state=0)
        r_net = relative_stability(net, X[1200:1700], random_state=0)
    print("  R_f = D_f / G_f: how much the output moves under a smooth deformation (D_f) "
          "relative to noise of the same norm (G_f); R_f < 1 means more stable to deformations")
    print(f"  untrained MLP: R_f = {r_net.R:.2f} (paper: ~1 at initialisation)")
    print(f"  logistic regression: R_f = {r_clf.R:.2f} (D_f = {r_clf.D:.3f}, G_f = {r_clf.G:.4f}):"
          " a linear model on pixels is less stable to deformations than to noise")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from pathlib import Path

        from geolearn.diffeo import deformation_grid
        from geolearn.plotting import DeformationGridDisplay

        disp = DeformationGridDisplay.from_results(
            deformation_grid(X[0], cutoffs=(1, 3, 5), random_state=0))
        path = Path(outdir) / "diffeo_grid.png"
        disp.figure_.savefig(path, dpi=100)
        plt.close(disp.figure_)
        print(f"  saved {path}")
