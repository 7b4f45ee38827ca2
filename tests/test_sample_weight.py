"""``sample_weight`` of the weighted-loss estimators: InvariantClassifier, the classifiers trained
through ``SkorchClassifierMixin``, the VAE family, the flow and the diffusion models.

Each batch's loss is the weighted mean ``sum_i w_i l_i / sum_i w_i`` (and the densities'
standardisation is weighted): integer weights equal repeated rows (in full batches, with the
training noise held fixed: the VAEs draw their reparameterisation noise per row, the diffusion
models their step and noise), and a weight 0 drops the row, exactly. scikit-learn's
``check_sample_weight_equivalence_on_dense_data`` asks for 1e-7 with the noise drawn, which
the estimators declare they cannot meet (``docs/estimator_checks.md``).
"""

import numpy as np
import pytest
import sklearn
import torch
from sklearn.model_selection import cross_validate

from geolearn.adversarial import ManifoldAdversarialClassifier
from geolearn.generative import (
    ChartAutoencoder,
    DiffusionDensity,
    DiffusionGenerator,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    VAEGenerator,
)
from geolearn.invariance import InvariantClassifier
from geolearn.representations import RDMRegularizedClassifier
from geolearn.subspaces import SVBFNetClassifier

pytestmark = [pytest.mark.filterwarnings("ignore:kl_estimator='batch' with only"),
              # SVBFNetClassifier reads _data's rows as one-vector sets, normalised
              pytest.mark.filterwarnings("ignore:X holds sets that are not orthonormal")]

_NET = {"hidden_layer_sizes": (8,), "max_epochs": 5, "random_state": 0, "device": "cpu"}
_SKORCH = {"max_epochs": 5, "random_state": 0, "device": "cpu"}

# the RDM term's fixed stimuli (rows like _data's) and an RDM of them
_STIMULI = np.random.RandomState(1).rand(6, 16)
_RDM = 1 - np.corrcoef(_STIMULI[:, :8])

ESTIMATORS = {
    "GridVAE": lambda **kw: GridVAE(**_NET, **kw),
    "GridVAE-batch-kl": lambda **kw: GridVAE(kl_estimator="batch", **_NET, **kw),
    "VAEGenerator": lambda **kw: VAEGenerator(**_NET, **kw),
    "VAEClassifier": lambda **kw: VAEClassifier(n_latent=2, **_NET, **kw),
    "ChartAutoencoder": lambda **kw: ChartAutoencoder(n_charts=2, **_NET, **kw),
    "InvariantClassifier": lambda **kw: InvariantClassifier(image_shape=(4, 4), augment=False,
                                                            **_NET, **kw),
    "InvariantClassifier-IR": lambda **kw: InvariantClassifier(image_shape=(4, 4), augment=False,
                                                               nu=0.5, **_NET, **kw),
    # the adversarial loss is weighted per row too (a PGD attack from 0: no training noise)
    "ManifoldAdversarialClassifier": lambda **kw: ManifoldAdversarialClassifier(
        adversary="ambient", adv_epsilon=0.5, adv_n_steps=3, lr=0.5, **_NET, **kw),
    # the RDM term is a batch term on fixed stimuli, drawn from its own seeded generator
    "RDMRegularizedClassifier": lambda **kw: RDMRegularizedClassifier(
        rdm_layer="1", rdm_stimuli=_STIMULI, rdm_target=_RDM, rdm_batch_size=4, lr=0.5,
        **_NET, **kw),
    # rows as one-vector sets; the node's fit loss is weighted per set too. SGD: the basis'
    # first gradients have entries at rounding noise about 0, which Adam turns into +-lr
    "SVBFNetClassifier": lambda **kw: SVBFNetClassifier(
        n_components=2, optimizer=torch.optim.SGD, lr=0.5, **_SKORCH, **kw),
    # SGD: the flow's first gradients of standardised data are rounding noise about 0 (the
    # identity couplings' shifts), whose signs Adam's normalised step turns into +-lr
    "FlowDensity": lambda **kw: FlowDensity(n_layers=2, optimizer=torch.optim.SGD, **_NET, **kw),
    "DiffusionGenerator": lambda **kw: DiffusionGenerator(n_timesteps=50, **_NET, **kw),
    # max_epochs minibatches drawn with replacement
    "DiffusionDensity": lambda **kw: DiffusionDensity(n_timesteps=50, n_rounds=2, **_NET, **kw),
    # one step on the rows in order (the user's sampler replaces the drawn minibatches)
    "DiffusionDensity-one-step": lambda **kw: DiffusionDensity(
        n_timesteps=50, n_rounds=2, iterator_train__sampler=None, **_NET, **kw),
}


def _data():
    rng = np.random.RandomState(0)
    X, y = rng.rand(12, 16), np.tile([0, 1, 2], 4)
    w = rng.randint(0, 4, len(X))
    w[0] = 0
    return X, y, w


def _outputs(est, X):
    for method in ("predict_proba", "transform", "score_samples"):
        if hasattr(est, method):
            return getattr(est, method)(X)


def _last_step(low, high, size, **kwargs):
    """``torch.randint`` that draws every diffusion row's step as the last one."""
    return torch.full(size, high - 1, dtype=torch.long, device=kwargs.get("device"))


# minibatches drawn with replacement from 11 weighted or 20 repeated rows cannot coincide
@pytest.mark.parametrize("name", [name for name in ESTIMATORS if name != "DiffusionDensity"])
def test_integer_weights_equal_repeated_rows(name, monkeypatch):
    # the VAEs' only training noise is the reparameterisation draw: held at 0 (z = mu); the
    # diffusion models' noise too, and their step held at the last one
    monkeypatch.setattr(torch, "randn_like", torch.zeros_like)
    if name.startswith("Diffusion"):
        monkeypatch.setattr(torch, "randint", _last_step)
    X, y, w = _data()
    make = ESTIMATORS[name]
    weighted = make(batch_size=64).fit(X, y, sample_weight=w)
    repeated = make(batch_size=64).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(_outputs(weighted, X), _outputs(repeated, X), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(weighted.history_[:, "train_loss"],
                               repeated.history_[:, "train_loss"], rtol=1e-5)
    # the weights made a difference, far beyond the weighted/repeated mismatch
    unweighted = make(batch_size=64).fit(X, y)
    mismatch = np.abs(_outputs(repeated, X) - _outputs(weighted, X)).max()
    assert np.abs(_outputs(unweighted, X) - _outputs(weighted, X)).max() > 100 * mismatch + 1e-6


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_zero_weight_drops_the_row(name):
    """Exactly, with the training noise and shuffled minibatches of the default fit."""
    X, y, w = _data()
    make = ESTIMATORS[name]
    w = (w > 0).astype(float)
    weighted = make(batch_size=4).fit(X, y, sample_weight=w)
    dropped = make(batch_size=4).fit(X[w > 0], y[w > 0])
    np.testing.assert_array_equal(_outputs(weighted, X), _outputs(dropped, X))


@pytest.mark.parametrize("name", ["GridVAE", "InvariantClassifier", "FlowDensity",
                                  "DiffusionGenerator", "DiffusionDensity", "SVBFNetClassifier"])
def test_invalid_weights_are_refused(name):
    X, y, _ = _data()
    with pytest.raises(ValueError, match="Negative values"):
        ESTIMATORS[name]().fit(X, y, sample_weight=-np.ones(len(X)))
    with pytest.raises(ValueError, match="at least one non-zero"):
        ESTIMATORS[name]().fit(X, y, sample_weight=np.zeros(len(X)))


def test_validation_split_reads_the_labels_of_weighted_rows():
    X, y, w = _data()
    clf = ESTIMATORS["InvariantClassifier"](validation_fraction=0.3)
    clf.fit(np.tile(X, (2, 1)), np.tile(y, 2), sample_weight=np.tile(w, 2))
    assert np.isfinite(clf.history_[:, "valid_acc"]).all()


@pytest.mark.parametrize("name", ["VAEClassifier", "InvariantClassifier", "FlowDensity",
                                  "DiffusionDensity", "ManifoldAdversarialClassifier"])
def test_weights_routed_by_metadata_routing(name):
    """A search requests and routes the weights like any scikit-learn consumer's."""
    X, y, w = _data()
    X, y, w = np.tile(X, (2, 1)), np.tile(y, 2), np.tile(w, 2)
    with sklearn.config_context(enable_metadata_routing=True):
        est = ESTIMATORS[name]().set_fit_request(sample_weight=True)
        if hasattr(est, "set_score_request"):  # the classifiers' score takes weights too
            est = est.set_score_request(sample_weight=False)
        assert est.get_metadata_routing().consumes("fit", ["sample_weight"]) == {"sample_weight"}
        routed = cross_validate(est, X, y, cv=2, params={"sample_weight": w},
                                return_estimator=True)
        plain = cross_validate(est.set_fit_request(sample_weight=False), X, y, cv=2,
                               return_estimator=True)
    # the fold's weights reached the fit: another model than the unweighted one
    assert not np.allclose(_outputs(routed["estimator"][0], X),
                           _outputs(plain["estimator"][0], X))


def test_skorch_classifier_validation_split_and_warm_fits_mix_weights():
    """SkorchClassifierMixin: the validation accuracy reads the labels of weighted batches, and
    a warm fit may bring weights or not whatever the fit before it did."""
    from skorch.dataset import ValidSplit

    X, y, w = _data()
    X, y, w = np.tile(X, (3, 1)), np.tile(y, 3), np.tile(w, 3)
    clf = ManifoldAdversarialClassifier(train_split=ValidSplit(3), warm_start=True, **_NET)
    clf.fit(X, y, sample_weight=w)
    clf.fit(X, y)
    clf.fit(X, y, sample_weight=w)
    assert len(clf.history_) == 15
    assert np.isfinite(clf.history_[:, "valid_acc"]).all()
