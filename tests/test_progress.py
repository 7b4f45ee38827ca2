"""Long operations show progress through the one progress helper at ``verbose=1``, and
nothing at ``verbose=0``. Regression: these estimators had no ``verbose`` and ran silently."""

import numpy as np
import pytest
import torch

from geolearn.representations import NetworkRDM
from geolearn.riemannian import ConformalKernelSVC, RiemannianFeatureGeometry
from geolearn.subspaces import SVBF, SVBFClassifier
from geolearn.topology import PersistenceTransformer


def _sets():
    rng = np.random.default_rng(0)
    X = np.stack([np.linalg.qr(rng.normal(size=(5, 2)))[0] for _ in range(12)])
    return X, np.arange(12) % 2


def _table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    return X, (X[:, 0] > 0).astype(int)


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


CASES = {
    "NetworkRDM": (lambda v: NetworkRDM(_net(), verbose=v), _table),
    "PersistenceTransformer": (
        lambda v: PersistenceTransformer(n_bins=2, verbose=v, random_state=0),
        lambda: (np.random.default_rng(0).normal(size=(3, 10, 2)), None)),
    "SVBF": (lambda v: SVBF(n_init=2, random_state=0, verbose=v), _sets),
    "SVBFClassifier": (lambda v: SVBFClassifier(n_components=1, n_init=1, random_state=0,
                                                verbose=v), _sets),
    "ConformalKernelSVC": (lambda v: ConformalKernelSVC(n_refits=2, verbose=v), _table),
}


@pytest.mark.parametrize("name", list(CASES))
def test_progress_only_when_verbose(name, capsys):
    make, data = CASES[name]
    X, y = data()
    make(0).fit(X, y)
    assert capsys.readouterr() == ("", "")
    make(1).fit(X, y)
    err = capsys.readouterr().err
    assert name in err and "100%" in err


def test_riemannian_geometry_shows_progress_over_chunks_only_when_verbose(capsys):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh())
    X = np.random.default_rng(0).normal(size=(10, 2))
    geo = RiemannianFeatureGeometry(net, batch_size=4).fit(X)
    geo.transform(X)
    assert capsys.readouterr() == ("", "")
    geo.set_params(verbose=1).transform(X)
    err = capsys.readouterr().err
    assert "3/3" in err and "chunk" in err
