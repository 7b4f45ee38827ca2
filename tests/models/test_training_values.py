"""Training settings that used to be accepted and gave an untrained or endlessly compiling fit."""

import functools

import numpy as np
import pytest
from sklearn.base import clone

from geolearn.disentanglement import DisentangledAttributeAutoencoder
from geolearn.generative import (
    ChartAutoencoder,
    DiffusionGenerator,
    FlowDensity,
    GridVAE,
    VAEClassifier,
    VAEGenerator,
)
from geolearn.ood import InpaintingOODDetector
from geolearn.subspaces import SVBFNetClassifier
from tests.torch_estimators import IDS, TORCH_ESTIMATORS, data

EPOCH_TRAINED = [GridVAE, VAEClassifier, VAEGenerator, ChartAutoencoder, FlowDensity,
                 DiffusionGenerator, DisentangledAttributeAutoencoder, InpaintingOODDetector]


@pytest.mark.parametrize("est, kind", [(est, kind) for est, kind in TORCH_ESTIMATORS
                                       if type(est) in EPOCH_TRAINED],
                         ids=[i for (est, _), i in zip(TORCH_ESTIMATORS, IDS)
                              if type(est) in EPOCH_TRAINED])
def test_max_epochs_zero_is_refused(est, kind):
    """max_epochs=0 fitted and returned an untrained (random) model."""
    X, y = data(kind)
    with pytest.raises(ValueError, match="max_epochs"):
        clone(est).set_params(max_epochs=0).fit(X, y)


def _sets():
    """20 planes of R^6 (orthonormal bases) and two classes."""
    rng = np.random.default_rng(0)
    X = np.stack([np.linalg.qr(rng.normal(size=(6, 2)))[0] for _ in range(20)])
    return X, np.arange(20) % 2


@pytest.mark.parametrize("est, kind", TORCH_ESTIMATORS, ids=IDS)
def test_non_boolean_compile_is_refused_by_every_trained_estimator(est, kind):
    """compile="yes" is truthy: skorch ran torch.compile (over 120 s) instead of refusing it."""
    X, y = data(kind)
    net_class = functools.partial(type(est).net_class, compile="yes")
    with pytest.raises(ValueError, match="compile must be True or False; got 'yes'"):
        clone(est).set_params(net_class=net_class).fit(X, y)


def test_svbf_net_refuses_a_non_boolean_compile_keyword():
    """SVBFNetClassifier(compile="yes") ran torch.compile for minutes; skorch's compile is a
    keyword of every trained estimator now, checked to be a boolean."""
    X, y = _sets()
    with pytest.raises(ValueError, match="compile must be True or False; got 'yes'"):
        SVBFNetClassifier(n_components=2, max_epochs=2, compile="yes").fit(X, y)
