"""Demo section: a diffusion model trained on digits inpaints digits well and shapes badly."""

import os

from ._plots import epoch_progress, headless_pyplot

TITLE = "OOD detection by diffusion inpainting: digits in, shapes and photo patches out"
SECONDS = (2, 3)  # quick, --full: measured CPU seconds (one thread; the idle wall time)


def run(outdir=None, *, full=False):
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from geolearn.datasets import load_digits_images, load_natural_patches, make_shape_images
    from geolearn.ood import InpaintingOODDetector

    X, _ = load_digits_images(return_X_y=True)
    X = X[np.random.RandomState(0).permutation(len(X))]
    # a small training and few, short reconstructions keep the section to seconds
    epochs, n_rec, n_steps = (30, 6, 100) if full else (8, 4, 50)
    print(f"  training a diffusion model on 1,000 8x8 digits ({epochs} epochs) ...")
    det = InpaintingOODDetector(data_range=(0, 1), n_blocks=4, n_reconstructions=n_rec,
                                n_inference_steps=n_steps, max_epochs=epochs,
                                validation_fraction=0.05, device="cpu",
                                callbacks=[epoch_progress()], random_state=0).fit(X[:1000])
    n = 40
    sets = {"shapes": make_shape_images(n, random_state=1).data,
            "natural patches": load_natural_patches(n, random_state=2).data}
    s_in = det.ood_score(X[1400:1400 + n])
    print(f"  trained on 1,000 8x8 digits ({det.max_epochs} epochs); score = median over "
          f"{det.n_reconstructions} checkerboard inpaintings of the mean squared change, "
          "higher = more out of distribution; AUROC 1 = perfect separation, 0.5 = chance")
    print(f"  {n} held-out digits: median score {np.median(s_in):.4f}")
    scores = {}
    for name, X_out in sets.items():
        s_out = scores[name] = det.ood_score(X_out)
        auc = roc_auc_score(np.r_[np.zeros(n), np.ones(n)], np.r_[s_in, s_out])
        print(f"  {n} {name}: median score {np.median(s_out):.4f}, AUROC {auc:.3f}, "
              f"flagged by predict {np.mean(det.predict(X_out) == -1):.0%} (held-out digits "
              f"{np.mean(det.predict(X[1400:1400 + n]) == -1):.0%})")
    print("  (a short training: the reproduction, 250 epochs and 10 reconstructions of 100 "
          "steps, is in docs/user_guide/ood.md)")
    plt = headless_pyplot(outdir)
    if plt is not None:
        from geolearn.plotting import InpaintingDisplay, OODScoreDisplay

        fig = plt.figure(figsize=(10, 5), layout="constrained")
        left, right = fig.subfigures(1, 2, width_ratios=(1, 1.4))
        InpaintingDisplay.from_estimator(det, X[1400:], sets["shapes"], n_images=3,
                                         axes=left.subplots(6, 3))
        OODScoreDisplay.from_results(s_in, scores["shapes"], labels=("digits", "shapes"),
                                     ax=right.subplots())
        fig.savefig(os.path.join(outdir, "ood.png"), dpi=100)
        plt.close(fig)
