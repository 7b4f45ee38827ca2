"""Reproduction: RDM-regularised training ("Exploring fMRI RDMs: enhancing model robustness
through neurobiological data", Frontiers in Computer Science 2023, which proposes training
networks towards brain RDMs with the regulariser of "Learning from brains how to regularize
machines").

Claim checked (a property check of the training use, not a number of the paper): adding
``rdm_weight * (1 - pearson(layer RDM, reference RDM))`` on random subsets of reference
stimuli pulls the layer's representational geometry towards the reference, monotonically in
the weight, without costing the task. Setting: scikit-learn's digits scaled to [0, 1], an MLP
64-128-64-10 (ReLU), Adam lr 1e-3, 30 epochs, batch 64; a 30% stratified test split
(``random_state=0``); 300 reference stimuli held out of the training part with
``categorical_rdm`` of their labels as the target; the regularised layer is the 64-unit
hidden layer (after its ReLU); ``rdm_batch_size=32``; the measured figure is the Pearson
correlation between that layer's correlation RDM of the test images and ``categorical_rdm`` of
their labels. Pass: at ``rdm_weight=1.0`` the correlation exceeds the ``rdm_weight=0`` run of
the same seed by >= 0.20, it increases over weights (0, 0.3, 1.0), test accuracy stays >= 0.90,
and ``rdm_weight=0`` reproduces a plain ``NeuralNetClassifier`` to 1e-6 in its weights.
Reference run (two seeds): correlation 0.49-0.52 at weight 0, 0.63-0.66 at 0.3, 0.85-0.86 at
1.0, 0.89 at 3.0; test accuracy 0.955-0.98.
"""

import time

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from skorch import NeuralNetClassifier

from geolearn._utils import torch_seed, torch_threads
from geolearn.representations import (
    NetworkRDM,
    RDMRegularizedClassifier,
    categorical_rdm,
)

LAYER = "3"  # the ReLU after Linear(128, 64): the 64-unit hidden layer
WEIGHTS = (0.0, 0.3, 1.0, 3.0)
SEEDS = (0, 1)


def _mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 10))


def _split():
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    ref = np.zeros(len(X_tr), dtype=bool)
    ref[np.random.default_rng(0).choice(len(X_tr), 300, replace=False)] = True
    return (X_tr[~ref], y_tr[~ref]), (X_tr[ref], y_tr[ref]), (X_te, y_te)


_NET = dict(criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-3,
            max_epochs=30, batch_size=64, train_split=None, verbose=0)


@pytest.mark.slow
def test_rdm_regularisation_pulls_the_layer_geometry_towards_the_target():
    (X, y), (X_ref, y_ref), (X_te, y_te) = _split()
    target_te = categorical_rdm(y_te)
    results = {}
    start = time.perf_counter()
    with torch_threads(1):  # a small MLP: one thread is fastest beside other work
        for seed in SEEDS:
            for w in WEIGHTS:
                clf = RDMRegularizedClassifier(
                    _mlp, rdm_layer=LAYER, rdm_stimuli=X_ref, rdm_target=categorical_rdm(y_ref),
                    rdm_weight=w, rdm_batch_size=32, rdm_loss="pearson", random_state=seed,
                    **_NET).fit(X, y)
                r = NetworkRDM(clf, layers=[LAYER]).fit(X_te).compare(target_te)[LAYER]
                results[seed, w] = (r, float(np.mean(clf.predict(X_te) == y_te)), clf)
            with torch_seed(seed):  # the seed random_state=seed trains under
                plain = NeuralNetClassifier(_mlp, **_NET).fit(X, y)
            for a, b in zip(plain.module_.parameters(), results[seed, 0.0][2].module_.parameters()):
                assert torch.allclose(a, b, atol=1e-6, rtol=0)
    elapsed = time.perf_counter() - start
    for seed in SEEDS:
        print(f"seed {seed}: " + ", ".join(
            f"w={w}: r={results[seed, w][0]:.3f} acc={results[seed, w][1]:.3f}" for w in WEIGHTS))
    print(f"{len(SEEDS) * (len(WEIGHTS) + 1)} fits in {elapsed:.1f} s")

    for seed in SEEDS:
        r = [results[seed, w][0] for w in (0.0, 0.3, 1.0)]
        assert r[2] >= r[0] + 0.20, (seed, r)
        assert r[0] < r[1] < r[2], (seed, r)
        for w in WEIGHTS:
            assert results[seed, w][1] >= 0.90, (seed, w, results[seed, w][1])
