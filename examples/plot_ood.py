"""
Detect out-of-distribution images by diffusion inpainting
==========================================================

After "Leveraging diffusion models for unsupervised out-of-distribution detection on image
manifold" (Liu et al. 2023, LMD: lift, map, detect), on scikit-learn's 8x8 digits. A
diffusion model is trained on digits only. To score an image, half of it is masked by a
checkerboard (lift), the masked half is inpainted by the diffusion model (map), and the score
is the mean squared change, the median over reconstructions whose checkerboards alternate
(detect). Digits come back close to themselves; filled shapes and patches of photographs are
pulled toward digits and change more. The training here (100 epochs, 6 reconstructions of 50
steps) is shorter than the paper reproduction's (250 epochs, 10 reconstructions of 100 steps),
so the example runs in under a minute.
"""

import matplotlib.pyplot as plt
import numpy as np

from geolearn.datasets import load_digits_images, load_natural_patches, make_shape_images
from geolearn.ood import InpaintingOODDetector
from geolearn.plotting import InpaintingDisplay, OODScoreDisplay

X, y = load_digits_images(return_X_y=True)                 # (1797, 1, 8, 8) in [0, 1]
X = X[np.random.RandomState(0).permutation(len(X))]
X_train, X_in = X[:1400], X[1400:1480]

det = InpaintingOODDetector(data_range=(0, 1), n_blocks=4, n_reconstructions=6,
                           n_inference_steps=50, max_epochs=100, random_state=0)
det.fit(X_train)

# %%
# Two kinds of out-of-distribution images at the digits' scale
X_shapes = make_shape_images(80, random_state=1).data
X_patches = load_natural_patches(80, random_state=2).data
s_in = det.ood_score(X_in)
for name, X_out in (("shapes", X_shapes), ("natural patches", X_patches)):
    disp = OODScoreDisplay.from_results(s_in, det.ood_score(X_out), threshold=-det.offset_,
                                        labels=("held-out digits", name), log_scale=True)
    disp.ax_.set_title(f"digits vs {name}")
    print(f"digits vs {name}: AUROC {disp.auroc_:.3f}; predict flags "
          f"{np.mean(det.predict(X_out) == -1):.0%} of them and "
          f"{np.mean(det.predict(X_in) == -1):.0%} of the held-out digits")

# %%
# What the detector sees: the checkerboard of attempt 0 (red: inpainted), and the inpainting
disp = InpaintingDisplay.from_estimator(det, X_in, np.r_[X_shapes[:2], X_patches[:2]],
                                        n_images=4)
disp.figure_.suptitle("inpainting by the digits' diffusion model")

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_ood.png" if len(plt.get_fignums()) == 1 else f"plot_ood_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
