"""Demo section: orthogonal latent blocks for disentangled attributes (DAE-OG)."""

import os

import numpy as np

from ._plots import epoch_progress, headless_pyplot

TITLE = "Disentanglement: orthogonal latent blocks, one per attribute (DAE-OG against DAE-G)"
SECONDS = (8, 17)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from geolearn.datasets import make_shapes3d_like
    from geolearn.disentanglement import DisentangledAttributeAutoencoder
    from geolearn.disentanglement.metrics import mig

    X, factors = make_shapes3d_like(factor_sizes=(1, 4, 4, 3, 3, 3), image_size=16,
                                    random_state=0)
    names = ("wall hue", "object hue", "scale", "shape", "orientation")  # the varying factors
    print(f"  {len(X)} images of 3D-Shapes-like scenes (16 x 16 x 3): {', '.join(names)} vary")
    print("  two autoencoders with one latent block per attribute, trained without labels: "
          "DAE-OG (orthogonality + graph losses: blocks pushed to be orthogonal, decodings of "
          "random codes pushed to look like the data) and DAE-G (graph loss only)")
    epochs = 30 if full else 12
    models = {}
    for name, alpha_orth in (("DAE-OG", 0.1), ("DAE-G", 0.0)):
        print(f"  training {name} ({epochs} epochs) ...")
        models[name] = DisentangledAttributeAutoencoder(
            image_shape=(3, 16, 16), n_latent=40, attribute_dims=(4, 4, 3, 3, 3),
            alpha_orth=alpha_orth, graph_distance_scale="median",
            max_epochs=epochs, batch_size=32, lr=1e-3, callbacks=[epoch_progress()],
            random_state=0).fit(X)
        m = models[name]
        cos = m.block_cosines(X)[~np.eye(5, dtype=bool)].mean()
        print(f"  {name:6s} mean |cos| between latent blocks {cos:.3f} (0: orthogonal), "
              f"reconstruction MSE {np.mean((m.reconstruct(X) - X) ** 2):.4f}, MIG "
              f"{mig(factors[:, 1:], m.transform(X)):.3f} (mutual information gap, 0-1: how much "
              "each attribute has one code of its own)")
    # name each block by the factor its code follows best: the blocks are unsupervised
    model = models["DAE-OG"]
    codes = model.transform(X)
    bounds = np.cumsum((0, *model.attribute_dims))
    titles, followed = [], []
    for b in range(len(model.attribute_dims)):
        block = codes[:, bounds[b]:bounds[b + 1]]
        r = np.nan_to_num([[abs(np.corrcoef(c, f)[0, 1]) for c in block.T]
                           for f in factors[:, 1:].T])
        f, best = int(r.max(axis=1).argmax()), r.max()
        followed.append(f"{names[f]} ({best:.2f})")
        titles.append(f"block {b}: {names[f]}\n(|r| = {best:.2f})")
    print(f"  DAE-OG's blocks 0-{len(titles) - 1} follow {', '.join(followed)} (the factor "
          "best correlated with a coordinate of the block, |r|); disentangled blocks would "
          "each follow a factor of their own")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import AttributeTraversalDisplay, BlockOrthogonalityDisplay

        # a scene whose wall, object and floor colours all differ
        shown = np.flatnonzero((factors[:, 1] != factors[:, 2]) & (factors[:, 1] > 0)
                               & (factors[:, 2] > 0))[0]
        fig = plt.figure(figsize=(11, 6.5), layout="constrained")
        top, bottom = fig.subfigures(2, 1, height_ratios=(1, 0.9))
        # sweep the codes over the values they take on the data, where the decoder was trained
        values = np.round(np.quantile(codes, [0.02, 0.25, 0.5, 0.75, 0.98]), 1)
        AttributeTraversalDisplay.from_estimator(model, X[shown], values=values,
                                                 attribute_names=titles,
                                                 axes=top.subplots(1, 5))
        top.suptitle("DAE-OG: one image decoded as each coordinate (row) of a block's code "
                     "takes the values\nbelow (columns); title: the factor the block follows")
        axes = bottom.subplots(1, 2)
        for ax, (name, m) in zip(axes, models.items()):
            BlockOrthogonalityDisplay.from_estimator(
                m, X, name=f"{name}: mean |cos| between blocks", ax=ax)
        fig.savefig(os.path.join(outdir, "disentanglement.png"), dpi=100)
        plt.close(fig)
