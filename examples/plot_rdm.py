"""
Compare representations by their RDMs, and train towards one
=============================================================

After "Exploring fMRI RDMs: enhancing model robustness through neurobiological data"
(2023), on scikit-learn's digits. A representational dissimilarity matrix (RDM) holds the
correlation distances between the responses to every pair of stimuli; representations are
compared by correlating their RDMs with a model RDM (here the categorical one: 0 within a
digit, 1 across digits), with stimulus-bootstrap intervals as in the paper's Table 2.
Fiedler partitioning then asks whether the representation separates two digits without
labels (the paper's Algorithm 1). Finally an MLP is trained with a loss that pulls its
hidden layer's RDM towards the categorical RDM of held-out reference images, the RDM weight
being chosen by GridSearchCV on the layer's RDM similarity, and NetworkRDM reads the RDM of
every layer of the selected network.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split

from geolearn.plotting import FiedlerDisplay, RDMComparisonDisplay, RDMDisplay
from geolearn.representations import (
    NetworkRDM,
    RDMRegularizedClassifier,
    WeightedRDMModel,
    bootstrap_compare_rdms,
    categorical_rdm,
    category_rdms,
    compute_rdm,
    condense_rdm,
    fiedler_pairwise,
    make_rdm_scorer,
    stack_condensed,
)

torch.set_num_threads(1)  # a small MLP trains fastest on one thread

X, y = load_digits(return_X_y=True)
X = (X / 16).astype(np.float32)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)
target = categorical_rdm(y_test)

# %%
# Three representations of the test images against the categorical model
rng = np.random.default_rng(0)
reps = {"pixels": X_test,
        "pixels + noise": X_test + rng.normal(0, 0.5, X_test.shape),
        "pure noise": rng.normal(size=X_test.shape)}
rdms = {name: compute_rdm(V) for name, V in reps.items()}
results = {name: bootstrap_compare_rdms(R, target, n_boot=500, random_state=0)
           for name, R in rdms.items()}
for name, res in results.items():
    print(f"{name:15s} r = {res.statistic:.3f} [{res.ci_low:.3f}, {res.ci_high:.3f}]")

# which digits do pixels cluster most tightly? (the paper's weighted categorical model)
components, digits = category_rdms(y_test)
weighted = WeightedRDMModel(nonnegative=True).fit(stack_condensed(components),
                                                  condense_rdm(rdms["pixels"]))
print("weighted categorical model (pixels):",
      ", ".join(f"{d}: {w:.2f}" for d, w in zip(digits, weighted.coef_)))

# %%
# Fiedler partitions of digit pairs, with Bonferroni-corrected BCa intervals and a
# label-permutation p-value (the better of the two sign assignments puts chance slightly
# above 0.5; the permutation test accounts for it)
pairs = [(0, 1), (3, 8), (1, 7), (4, 9)]
for name in ("pixels", "pure noise"):
    for row in fiedler_pairwise(rdms[name], y_test, pairs=pairs, n_boot=500, n_permutations=500,
                                random_state=0):
        print(f"{name:10s} {row['class_a']} vs {row['class_b']}: accuracy "
              f"{row['accuracy']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}], "
              f"permutation p {row['p_permutation']:.3f}")

# %%
# Train towards the categorical RDM of 300 reference images, choosing the RDM weight by
# the similarity of the hidden layer's RDM on those images (HMS-style selection)
ref = rng.choice(len(X_train), 300, replace=False)
fit_rows = np.setdiff1d(np.arange(len(X_train)), ref)
X_ref, ref_rdm = X_train[ref], categorical_rdm(y_train[ref])


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))


clf = RDMRegularizedClassifier(
    mlp, optimizer=torch.optim.Adam, lr=1e-3, max_epochs=20, batch_size=64,
    rdm_layer="3", rdm_stimuli=X_ref, rdm_target=ref_rdm, random_state=0)
search = GridSearchCV(clf, {"rdm_weight": [0.0, 0.3, 1.0]}, cv=2,
                      scoring=make_rdm_scorer(X_ref, ref_rdm, layer="3", method="pearson"))
search.fit(X_train[fit_rows], y_train[fit_rows])
print("mean RDM similarity per rdm_weight:", search.cv_results_["mean_test_score"].round(3),
      "-> selected", search.best_params_,
      f"(test accuracy {search.best_estimator_.score(X_test, y_test):.3f})")

layers = NetworkRDM(search.best_estimator_, layers=["0", "1", "2", "3", "4"]).fit(X_test)
for layer, r in layers.compare(target).items():
    print(f"layer {layer}: r with the categorical RDM of the test images {r:.3f}")
print("most category-like layer:", layers.best_layer(target))

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 9))
RDMDisplay.from_results(rdms["pixels"], y_test, ax=axes[0, 0])
axes[0, 0].set_title("pixel RDM of the test images, by digit")
RDMDisplay.from_estimator(layers, layer="3", labels=y_test, ax=axes[0, 1])
axes[0, 1].set_title(f"hidden-layer RDM (rdm_weight={search.best_params_['rdm_weight']})")
pair = (y_test == 3) | (y_test == 8)
FiedlerDisplay.from_results(rdms["pixels"][np.ix_(pair, pair)], y_test[pair], ax=axes[1, 0])
axes[1, 0].set_title("Fiedler vector of the pixel RDM, 3 vs 8")
layer_result = bootstrap_compare_rdms(layers.rdms_["3"], target, n_boot=500, random_state=0)
RDMComparisonDisplay.from_results({**results, "trained layer": layer_result}, ax=axes[1, 1])
fig.tight_layout()

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_rdm.png" if len(plt.get_fignums()) == 1 else f"plot_rdm_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
