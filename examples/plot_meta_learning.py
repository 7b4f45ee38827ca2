"""
Manifold meta-learning: keep a held-out neighbourhood's shape
=============================================================

An autoencoder trained on unevenly sampled data reconstructs well where samples are
dense and distorts the manifold where they are scarce. MRML ("Recovering manifold
representations via unsupervised meta-learning") trains it by MLDG episodes: a
virtual step on one batch, then the stepped network must also reconstruct a second,
disjoint batch -- here a whole local neighbourhood (the paper's setting C).

The images show a glyph rotating about the image centre (an annulus of images). One
neighbourhood of views is held out by :class:`~geolearn.meta_learning.NeighborhoodHoldout`;
:class:`~sklearn.model_selection.GridSearchCV` compares the plain and the episodic
training on it with a persistence-diagram scorer, and the pictures show the held-out
views, both reconstructions, and the held-out metrics over training.
"""

import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from geolearn.datasets import make_rotating_shape_images
from geolearn.meta_learning import (
    MetaManifoldAutoencoder,
    NeighborhoodHoldout,
    ReconstructionMetrics,
)
from geolearn.meta_learning.metrics import make_manifold_scorer
from geolearn.plotting import ReconstructionDisplay, TrainingCurvesDisplay

X = make_rotating_shape_images(800, image_size=16, random_state=0).reshape(800, -1)
cv = NeighborhoodHoldout(n_holdout=80, n_splits=2, random_state=0)

# GridSearchCV on held-out neighbourhoods, scored by the shape of the reconstructions
pipe = make_pipeline(MinMaxScaler(clip=True),
                     MetaManifoldAutoencoder(architecture="mlp", max_epochs=300, random_state=0))
grid = {"metamanifoldautoencoder__episodic_strategy": [None, "neighborhood"]}
search = GridSearchCV(pipe, grid, cv=cv, scoring=make_manifold_scorer("persistence")).fit(X)
for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
    print(params, f"held-out persistence W2 (H0 + H1): {-score:.3f}")

# Both trainings on one held-out neighbourhood, with the metrics over training
train, test = next(NeighborhoodHoldout(n_holdout=80, random_state=1).split(X))
models = {name: MetaManifoldAutoencoder(
              architecture="mlp", episodic_strategy=strategy, max_epochs=400, log_every=50,
              callbacks=[ReconstructionMetrics(X[test])], random_state=0).fit(X[train])
          for name, strategy in (("plain", None), ("meta-learned", "neighborhood"))}

fig = plt.figure(figsize=(13, 7), layout="constrained")
top, bottom = fig.subfigures(2, 1)
ReconstructionDisplay.from_estimator(models, X[test], image_shape=(3, 16, 16), n_images=12,
                                     axes=top.subplots())
TrainingCurvesDisplay.from_estimator(
    models, keys=["holdout_mse", "holdout_persistence", "holdout_spectral"],
    axes=bottom.subplots(1, 3))
print("held-out MSE:", {name: round(-m.score(X[test]), 5) for name, m in models.items()})

if __name__ == "__main__":  # run as a script: save the figures in the working folder
    for i in plt.get_fignums():
        name = "plot_meta_learning.png" if len(plt.get_fignums()) == 1 else f"plot_meta_learning_{i}.png"
        plt.figure(i).savefig(name, dpi=100, bbox_inches="tight")
        print(f"saved {name}")
plt.show()
