"""
One adversarial detector for two networks, through a linear map
================================================================

After "Leveraging linear mapping for model-agnostic adversarial defense" (2023): a
linear SVM trained on one network's penultimate embeddings (clean vs FGSM) screens a
second network's inputs once that network's embeddings are mapped into the first's
space by least squares. Both directions are run on the digits CNN / FFNN pair, and a
map fitted on permuted pairs shows what a broken map gives.
"""

import matplotlib.pyplot as plt
import numpy as np

from geolearn.demo.representations import (
    digits_cnn,
    digits_experiment_data,
    digits_ffnn,
    train_digits_net,
)
from geolearn.plotting import CanonicalSpaceDisplay, DetectionScoreDisplay
from geolearn.representations import cross_model_detection

X_train, X_test, y_train, y_test = digits_experiment_data(seed=0)
nets = {"CNN": train_digits_net(digits_cnn, X_train, y_train, seed=0, max_epochs=20),
        "FFNN": train_digits_net(digits_ffnn, X_train, y_train, seed=0, max_epochs=20)}

fig, axes = plt.subplots(2, 2, figsize=(10, 8))
for col, (target, source) in enumerate([("CNN", "FFNN"), ("FFNN", "CNN")]):
    res = cross_model_detection(nets, target, X_test, y_test, epsilon=0.2, random_state=0)

    # control: the same map fitted on permuted pairs
    E, parts, det = res.embeddings, res.splits, res.detector
    mp, val = parts["map"], parts["val"]
    X_map = np.r_[E[source][0][mp], E[source][1][mp]]
    Y_map = np.r_[E[target][0][mp], E[target][1][mp]]
    det.fit_source("permuted pairs", X_map, np.random.default_rng(0).permutation(Y_map))
    X_val = np.r_[E[source][0][val], E[source][1][val]]
    labels = np.repeat([0, 1], len(val))
    permuted = det.score(X_val, labels, source="permuted pairs")

    src = res.sources[source]
    print(f"target {target}: native AUROC {res.auroc_native:.3f}, {source} mapped "
          f"{src['auroc_mapped']:.3f} (R^2 {src['r2']:.2f}), permuted pairs {permuted:.3f}; "
          f"{target} head on mapped adversarial rows: accuracy "
          f"{src['mapped_head_accuracy_adv']:.2f}")

    CanonicalSpaceDisplay.from_results(res, ax=axes[0, col])
    axes[0, col].set_title(f"{target}'s embedding space (val rows)")
    disp = DetectionScoreDisplay({**{target: res.auroc_native, source: src["auroc_mapped"]},
                                  f"{source}\n(permuted pairs)": permuted}, target)
    disp.plot(ax=axes[1, col])

fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_representations.png" if len(plt.get_fignums()) == 1 else f"plot_representations_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
