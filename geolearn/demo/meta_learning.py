"""Demo section: an autoencoder meta-learned to keep a held-out neighbourhood's shape."""

import os

from ._plots import epoch_progress, headless_pyplot

TITLE = "Manifold meta-learning: plain and episodic autoencoders on a held-out neighbourhood"
SECONDS = (4, 12)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    from geolearn.datasets import make_rotating_shape_images
    from geolearn.meta_learning import (
        MetaManifoldAutoencoder,
        NeighborhoodHoldout,
        ReconstructionMetrics,
    )
    from geolearn.meta_learning.metrics import knn_spectral_distance, persistence_wasserstein

    X = make_rotating_shape_images(800, image_size=16, random_state=0)
    train, test = next(NeighborhoodHoldout(n_holdout=80, random_state=0).split(X))
    print(f"  {len(X)} images of a rotating glyph (16 x 16 x 3, an annulus of images); "
          f"{len(test)} neighbouring views held out")
    epochs = 400 if full else 100
    models = {}
    print("  plain: an autoencoder trained on all the training images at once; meta-learned: "
          "trained on episodes that each hold out a neighbourhood of views and score its "
          "reconstruction (the paper's strategy C)")
    print("  each a distance between the held-out views and their reconstructions, lower is "
          "better: MSE of the pixels; persistence W2, of the point clouds' persistence diagrams "
          "(their loops and components); kNN spectral, of their neighbourhood graphs")
    for name, strategy in (("plain", None), ("meta-learned", "neighborhood")):
        print(f"  training {name} ({epochs} epochs) ...")
        models[name] = MetaManifoldAutoencoder(
            architecture="mlp", episodic_strategy=strategy, max_epochs=epochs,
            log_every=epochs // 8,
            callbacks=[ReconstructionMetrics(X[test], metrics=("mse", "persistence")),
                       epoch_progress()],
            random_state=0).fit(X[train])
        rec = models[name].reconstruct(X[test])
        flat = X[test].reshape(len(test), -1)
        print(f"  {name:12s} held-out MSE {-models[name].score(X[test]):.4f}, persistence W2 "
              f"(H0 + H1) {persistence_wasserstein(flat, rec)['total']:.3f}, kNN spectral "
              f"distance (k = 5) {knn_spectral_distance(flat, rec):.3f}")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import ReconstructionDisplay, TrainingCurvesDisplay

        fig = plt.figure(figsize=(12, 6.5), layout="constrained")
        top, bottom = fig.subfigures(2, 1, height_ratios=(1, 1.1))
        ax = top.subplots()
        ReconstructionDisplay.from_estimator(models, X[test], n_images=12, axes=ax)
        ax.set_title("Held-out neighbourhood: data and reconstructions")
        TrainingCurvesDisplay.from_estimator(
            models, keys=["meta_train_loss", "holdout_mse", "holdout_persistence"],
            axes=bottom.subplots(1, 3))
        fig.savefig(os.path.join(outdir, "meta_learning.png"), dpi=100)
        plt.close(fig)
