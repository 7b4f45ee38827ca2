"""Estimator-check instances of the invariance family.

sklearn's checks feed flat tabular data with varying feature counts, read as
rows ``(1, 1, n_features)``: the instance uses a user group (identity and the
left-right flip of the row), which acts on any such row. It is a named
FiniteGroup so that the test ids (its repr) are the same in every xdist worker.
"""

from geolearn.invariance import FiniteGroup, InvariantClassifier


def identity(x):
    return x


def flip_lr(x):
    return x.flip(-1)


ESTIMATORS = [
    InvariantClassifier(group=FiniteGroup([identity, flip_lr], name="flip-lr"), augment=False,
                        hidden_layer_sizes=(16,), max_epochs=20, batch_size=32, lr=1e-2,
                        device="cpu", random_state=0),
]
