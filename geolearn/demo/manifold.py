"""Demo section: CIDM on a noisy circle and an on-manifold adversary."""

import os
import warnings

import numpy as np

from ._plots import headless_pyplot

TITLE = ("Manifold: CIDM (conformally invariant diffusion map) spectrum, Nyström projection and "
         "on-manifold PGD on a circle")
SECONDS = (1, 1)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    import torch

    from geolearn.datasets import make_circle_points
    from geolearn.manifold import CIDM, OnManifoldPGD

    X, t = make_circle_points(400, noise=0.05, random_state=0, return_params=True)
    cidm = CIDM(n_eigenpairs=20, k_bandwidth=16, random_state=0).fit(X)
    xi = cidm.laplacian_eigenvalues_
    print(f"  Laplacian eigenvalue ratios xi_l / xi_1, l = 1..6: {np.round(xi[1:7] / xi[1], 2)} "
          "(the circle's exact spectrum gives 1 1 4 4 9 9); estimated intrinsic dimension "
          f"{cidm.dimension_:.2f} (a circle: 1)")
    before = np.abs(np.linalg.norm(X, axis=1) - 1).mean()
    after = np.abs(np.linalg.norm(cidm.nystrom_project(X), axis=1) - 1).mean()
    print(f"  mean distance to the unit circle: {before:.4f} -> {after:.4f} after projection")

    net = torch.nn.Linear(2, 2)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
        net.bias.copy_(torch.tensor([0.5, -0.5]))
    attack = OnManifoldPGD(net, tangent="sec", sec_params={"n_frame": 8}, intrinsic_dim=1,
                           n_vector_fields=2, cidm_params={"n_eigenpairs": 30},
                           random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        attack.fit(X, np.zeros(len(X), int), intrinsic_params=np.c_[np.cos(t), np.sin(t)])
    starts = np.c_[np.cos([1.8, -1.8]), np.sin([1.8, -1.8])]
    res = attack.generate(starts, y=[0, 0])
    angle = np.degrees(np.arctan2(res.intrinsic[:, 1], res.intrinsic[:, 0]))
    print("  on-manifold PGD (projected gradient descent that moves along the circle, not "
          "off it) against a classifier that cuts the circle at +-60 deg, from two points:")
    print(f"  attack success {res.success.tolist()}, steps {res.n_steps.tolist()}, "
          f"|x_adv| = {np.round(np.linalg.norm(res.X_adv, axis=1), 3).tolist()}, "
          f"recovered angles {np.round(angle, 1).tolist()} deg (cut at +-60 deg)")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import DiffusionEmbeddingDisplay, NystromProjectionDisplay

        fig, axes = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
        DiffusionEmbeddingDisplay.from_estimator(cidm, color=t, color_label="angle t (rad)",
                                                 ax=axes[0])
        NystromProjectionDisplay.from_estimator(cidm, 1.4 * X[::15], ax=axes[1])
        axes[1].scatter(res.X_adv[:, 0], res.X_adv[:, 1], marker="*", s=120, c="k",
                        label="on-manifold adversary")
        axes[1].legend(loc="center", fontsize="small")
        fig.savefig(os.path.join(outdir, "manifold.png"), dpi=100)
        plt.close(fig)
