"""SVBFNode: the variety as a torch layer."""

import pickle

import numpy as np
import pytest
import torch

from geolearn.subspaces import SVBF, SVBFNode
from geolearn.subspaces._node import _TopEigenpair

from ._data import common_line_sets, haar_sets


def test_top_eigenpair_gradient():
    A = torch.randn(3, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    A = (A + A.mT).requires_grad_()

    def top(A):
        lam, v = _TopEigenpair.apply(0.5 * (A + A.mT))
        return lam, v * torch.sign(v[..., :1])  # fix the sign for finite differences

    assert torch.autograd.gradcheck(top, (A,))


def test_node_outputs_match_svbf_coordinates():
    X = haar_sets(8, 10, 3, seed=0)
    svbf = SVBF(3, n_init=1).fit(X)
    node = SVBFNode(8, 3).double()
    with torch.no_grad():
        node.basis.weight = torch.from_numpy(svbf.basis_)
    b = node(torch.from_numpy(X))
    np.testing.assert_allclose(node.K.detach().numpy(), svbf.basis_, atol=1e-12)
    np.testing.assert_allclose(b.numpy(), svbf.transform(X), atol=1e-8)
    assert float(node.fit_loss_) == pytest.approx(-svbf.score(X), abs=1e-10)
    assert not b.requires_grad


@pytest.mark.parametrize("orthogonality", ["parametrize", "penalty"])
def test_training_the_node_finds_the_common_line(orthogonality):
    X, u = common_line_sets(n=10, r=20, l=3)
    torch.manual_seed(0)
    node = SVBFNode(10, 2, orthogonality=orthogonality, detach=False).double()
    opt = torch.optim.Adam(node.parameters(), lr=0.05)
    Xt = torch.from_numpy(X)
    for _ in range(100):
        opt.zero_grad()
        b = node(Xt)
        assert b.requires_grad
        (node.fit_loss_ + 10.0 * node.orth_loss_).backward()
        opt.step()
    node(Xt)
    K = node.K.detach().numpy()
    assert float(node.fit_loss_) < -0.99
    Q = np.linalg.qr(K)[0]
    assert np.linalg.norm(Q.T @ u) > 0.99
    if orthogonality == "parametrize":
        np.testing.assert_allclose(K.T @ K, np.eye(2), atol=1e-6)  # float32 at creation


def test_node_rejects_bad_arguments():
    with pytest.raises(ValueError, match="objective"):
        SVBFNode(4, 2, objective="sin")
    with pytest.raises(ValueError, match="orthogonality"):
        SVBFNode(4, 2, orthogonality="qr")
    with pytest.raises(ValueError, match="n_components"):
        SVBFNode(4, 5)


def test_net_classifier_trains_the_node_and_the_head():
    from sklearn.base import clone

    from geolearn.subspaces import SVBFNetClassifier

    from .test_classifier import planted_classes

    X, y = planted_classes(n=6, per_class=10, n_classes=2)
    labels = np.array(["a", "b"])[y]
    net = SVBFNetClassifier(n_components=2, lr=0.05, max_epochs=15, verbose=0, random_state=0)
    net.fit(X, labels)
    assert net.score(X, labels) >= 0.9
    # K learned from the fit loss: both class lines e_0, e_1 lie close to W
    K = net.module_.node.K.detach().numpy()
    assert np.linalg.norm(K.T @ np.eye(6)[:, :2], axis=0).min() > 0.9
    np.testing.assert_array_equal(clone(net).fit(X, labels).predict_proba(X),
                                  net.predict_proba(X))
    loaded = pickle.loads(pickle.dumps(net))
    np.testing.assert_array_equal(loaded.predict_proba(X), net.predict_proba(X))
    with pytest.raises(ValueError, match="the first fit did not see"):
        net.set_params(warm_start=True).fit(X, np.array(["a", "c"])[y])
    with pytest.raises(ValueError, match="at least 2 classes"):
        clone(net).fit(X, np.zeros(len(X)))


def test_net_classifier_validates_sets_and_labels():
    from geolearn.subspaces import SVBFNetClassifier

    from .test_classifier import planted_classes

    X, y = planted_classes(n=6, per_class=5, n_classes=2)
    net = SVBFNetClassifier(n_components=2, max_epochs=1, verbose=0, random_state=0)
    with pytest.warns(UserWarning, match="not orthonormal") as record:
        net.fit(2.0 * X, y)  # scaled bases are raw sets
    message = str(record[0].message)
    assert "SubspaceEmbedding" in message and "input_type" not in message  # no such parameter
    with pytest.raises(ValueError, match="requires y"):
        net.fit(X, None)
