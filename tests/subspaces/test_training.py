"""The family's training routes go through skorch and the shared base (issue #14).

SVBF's paper solver (penalised Adam, Eq. 5-6) runs as an ObjectiveNet over a
dataset of sets; CentroidSoftmaxClassifier is a SkorchTrainingMixin estimator;
SVBFNetClassifier is a skorch net with the base's non-finite-loss stop and
device errors. Each must give the same numbers as the hand-written loops it
replaced, bit for bit.
"""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from skorch.callbacks import EarlyStopping

from geolearn.models import ObjectiveNet, SkorchTrainingMixin
from geolearn.subspaces import SVBF, CentroidSoftmaxClassifier, SVBFNetClassifier
from geolearn.subspaces._adam import adam_solve
from geolearn.subspaces._node import centroid_logits, unit_rows

from ._data import common_line_sets, haar_sets

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


def _slices(r, batch_size):
    size = r if batch_size is None else batch_size
    return [slice(s, min(s + size, r)) for s in range(0, r, size)]


def _paper_loop(XT, w, K0, beta0, alpha0, objective, orth_penalty, lr, max_iter, tol,
                batch_size):
    """The hand-written Adam loop the solver replaced (reference for bit-identity)."""
    K = K0.clone().requires_grad_(True)
    beta = beta0.clone().requires_grad_(True)
    alpha = alpha0.clone().requires_grad_(True) if objective == "cos" else None
    opt = torch.optim.Adam([p for p in (K, beta, alpha) if p is not None], lr=lr)
    eye = torch.eye(K.shape[1], dtype=K.dtype)
    scale, batches, losses, fits = w * len(w), _slices(len(w), batch_size), [], []
    for t in range(max_iter):
        sl = batches[t % len(batches)]
        b = beta[sl] / torch.linalg.vector_norm(beta[sl], dim=1, keepdim=True)
        XtKb = (XT[sl] @ (b @ K.T)[:, :, None])[..., 0]
        if objective == "cos2":
            terms = XtKb.square().sum(dim=1)
        else:
            a = alpha[sl] / torch.linalg.vector_norm(alpha[sl], dim=1, keepdim=True)
            terms = (a * XtKb).sum(dim=1)
        loss = -(scale[sl] * terms).sum() + orth_penalty * (K.T @ K - eye).square().sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        fits.append(((w[sl] * terms.detach()).sum() / w[sl].sum()).item())
        if (tol is not None and t >= 1000 and (t + 1) % 1000 == 0
                and abs(losses[-1] - losses[-1001]) <= tol * max(1.0, abs(losses[-1001]))):
            return K.detach(), losses, fits, True
    return K.detach(), losses, fits, False


def _problem(seed, r, n, l, dtype=torch.float64, weighted=False):
    rng = np.random.default_rng(seed)
    XT = torch.as_tensor(haar_sets(n, r, l, seed=seed).transpose(0, 2, 1).copy(), dtype=dtype)
    w = rng.uniform(0.5, 2.0, r) if weighted else np.ones(r)
    w = torch.as_tensor(w / w.sum(), dtype=dtype)
    K0, beta0, alpha0 = (torch.as_tensor(rng.uniform(size=shape), dtype=dtype)
                         for shape in ((n, 1), (r, 1), (r, l)))
    return XT, w, K0, beta0, alpha0


@given(seed=st.integers(0, 2**31 - 1), r=st.integers(1, 9), n=st.integers(2, 6),
       l=st.integers(1, 2), batch_size=st.one_of(st.none(), st.integers(1, 10)),
       objective=st.sampled_from(["cos2", "cos"]), max_iter=st.integers(1, 25),
       dtype=st.sampled_from([torch.float64, torch.float32]), weighted=st.booleans())
def test_adam_solver_is_the_papers_loop_bit_for_bit(seed, r, n, l, batch_size, objective,
                                                     max_iter, dtype, weighted):
    """Same parameters, same ops, same order: skorch's Adam steps equal the old loop's."""
    XT, w, K0, beta0, alpha0 = _problem(seed, r, n, l, dtype, weighted)
    K, history, fits, converged = adam_solve(
        XT, w, K0, beta0, alpha0, objective, orth_penalty=10.0, learning_rate=0.01,
        max_iter=max_iter, tol=1e-10, batch_size=batch_size)
    losses = history[-1, "batches", :, "train_loss"]
    K_ref, losses_ref, fits_ref, converged_ref = _paper_loop(
        XT, w, K0, beta0, alpha0, objective, 10.0, 0.01, max_iter, 1e-10, batch_size)
    assert torch.equal(K, K_ref)
    assert losses == losses_ref and fits == fits_ref and converged == converged_ref
    assert len(losses) == max_iter


def test_adam_early_stop_is_a_callback_checked_every_thousand_steps():
    XT, w, K0, beta0, alpha0 = _problem(3, 6, 4, 2)
    for tol, stop in ((10.0, 2000), (1e-30, None)):  # stops at the first check / never
        K, history, fits, converged = adam_solve(
            XT, w, K0, beta0, alpha0, "cos2", orth_penalty=10.0, learning_rate=0.01,
            max_iter=2500, tol=tol, batch_size=4)
        out = K, history[-1, "batches", :, "train_loss"], fits, converged
        ref = _paper_loop(XT, w, K0, beta0, alpha0, "cos2", 10.0, 0.01, 2500, tol, 4)
        assert len(out[1]) == (stop or 2500) and out[3] == (stop is not None)
        assert torch.equal(out[0], ref[0]) and out[1:] == ref[1:]


def test_svbf_adam_trains_through_an_objective_net(monkeypatch):
    """Regression: the paper's solver was a hand-written Adam loop, then a hand-built skorch
    net; now an ObjectiveNet trained through the one training route (``_fit_net``)."""
    nets = []
    fit_net = SkorchTrainingMixin._fit_net

    def spy(self, *args, **kwargs):
        nets.append(fit_net(self, *args, **kwargs))
        return nets[-1]

    monkeypatch.setattr(SkorchTrainingMixin, "_fit_net", spy)
    X, _ = common_line_sets(n=8, r=6, l=2)
    svbf = SVBF(1, solver="adam", init="uniform", n_init=2, max_iter=30, batch_size=4,
                random_state=0).fit(X)
    assert len(nets) == 2
    best = [net for net in nets if len(net.history) == 1
            and net.history is svbf.history_]
    assert best and best[0].history[-1, "batches", :, "objective"] == svbf.objective_curve_
    assert svbf.n_iter_ == 30 and "finite_loss" in dict(best[0].callbacks_)
    assert all(isinstance(net, ObjectiveNet) for net in nets)


def test_svbf_adam_non_finite_loss_is_a_clear_error():
    """Regression: a diverging paper solver ended in an obscure linalg error."""
    X, _ = common_line_sets(n=10, r=10, l=3)
    svbf = SVBF(1, solver="adam", init="uniform", n_init=1, max_iter=50, lr=1e300,
                orth_penalty=1e300, random_state=0)
    with pytest.raises(RuntimeError, match="training loss became non-finite"):
        svbf.fit(X)


_ON_CUDA = {  # estimator on "cuda", whether it takes y, whether it takes a table
    "SVBF": (lambda: SVBF(1, device="cuda"), False, False),
    "SVBF.adam": (lambda: SVBF(1, solver="adam", max_iter=5, device="cuda"), False, False),
    "CentroidSoftmaxClassifier": (
        lambda: CentroidSoftmaxClassifier(max_epochs=5, device="cuda"), True, True),
    "SVBFNetClassifier": (lambda: SVBFNetClassifier(n_components=1, max_epochs=1,
                                                    device="cuda", verbose=0), True, False),
}


@NO_CUDA
@pytest.mark.parametrize("name", list(_ON_CUDA))
def test_cuda_without_cuda_is_a_clear_error(name):
    """Regression: SVBFNetClassifier failed inside torch (AssertionError); the head had no device."""
    make, supervised, table = _ON_CUDA[name]
    X, _ = common_line_sets(n=6, r=8, l=2)
    X = X[:, :, 0] if table else X
    with pytest.raises(ValueError, match="CUDA"):
        make().fit(X, np.arange(8) % 2) if supervised else make().fit(X)


# ------------------------------------------------------------------ the centroid head
def _directions(n=60, seed=0):
    rng = np.random.default_rng(seed)
    angle = rng.uniform(-0.3, 0.3, n) + np.repeat([0.0, np.pi / 2], n // 2)
    B = np.column_stack([np.cos(angle), np.sin(angle)]) * rng.choice([-1, 1], (n, 1))
    return B, np.repeat([0, 1], n // 2)


def _centroid_loop(B, y, T, max_iter, lr, seed):
    """The hand-written full-batch Adam loop the classifier replaced."""
    rng = np.random.RandomState(seed)
    omega = torch.tensor(rng.standard_normal((2, B.shape[1])), requires_grad=True)
    opt = torch.optim.Adam([omega], lr=lr)
    losses = []
    for _ in range(max_iter):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(
            centroid_logits(torch.from_numpy(B), omega, T), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return unit_rows(omega.detach()).numpy(), losses


@given(seed=st.integers(0, 2**31 - 1), T=st.floats(0.05, 2.0), max_iter=st.integers(1, 30),
       lr=st.floats(1e-3, 0.5))
def test_centroid_head_is_the_old_loop_bit_for_bit(seed, T, max_iter, lr):
    B, y = _directions(seed=seed % 1000)
    clf = CentroidSoftmaxClassifier(temperature=T, max_epochs=max_iter, lr=lr,
                                    random_state=seed).fit(B, y)
    centroids, losses = _centroid_loop(B, y, T, max_iter, lr, seed)
    np.testing.assert_array_equal(clf.centroids_, centroids)
    assert list(clf.net_.history[:, "train_loss"]) == losses and clf.n_iter_ == max_iter


def test_centroid_head_has_the_bases_callbacks_warm_start_and_settings():
    """Regression: the head had its own Adam loop, without callbacks or warm start."""
    B, y = _directions()
    assert issubclass(CentroidSoftmaxClassifier, SkorchTrainingMixin)
    stop = EarlyStopping(monitor="train_loss", patience=2, threshold=1e9)
    clf = CentroidSoftmaxClassifier(max_epochs=100, callbacks=[stop], random_state=0).fit(B, y)
    assert clf.n_iter_ < 100
    warm = CentroidSoftmaxClassifier(max_epochs=20, warm_start=True, random_state=0)
    warm.fit(B, y).fit(B, y)  # Adam's state carries over: as one run of 40 iterations
    once = CentroidSoftmaxClassifier(max_epochs=40, random_state=0).fit(B, y)
    np.testing.assert_array_equal(warm.centroids_, once.centroids_)
    assert warm.n_iter_ == 40
    with pytest.raises(ValueError, match="classes of the first fit"):
        warm.fit(B, y + 1)
    decayed = CentroidSoftmaxClassifier(max_epochs=5, optimizer__weight_decay=0.5)
    assert decayed.get_params()["optimizer__weight_decay"] == 0.5
    assert decayed.fit(B, y).net_.optimizer_.param_groups[0]["weight_decay"] == 0.5


def test_centroid_head_non_finite_loss_is_a_clear_error():
    """Regression: an overflowing head trained on NaN losses silently."""
    B, y = _directions()
    with pytest.raises(RuntimeError, match="training loss became non-finite"):
        CentroidSoftmaxClassifier(temperature=1e-320, max_epochs=3, random_state=0).fit(B, y)


# -------------------------------------------------------------------- SVBFNetClassifier
def test_svbf_net_stops_on_a_non_finite_loss():
    """Regression: SVBFNetClassifier lacked the base's RaiseOnNonFiniteLoss (trained on NaN)."""
    X, _ = common_line_sets(n=6, r=10, l=2)
    y = np.arange(10) % 2
    # float32 overflow of the weighted loss (T = 0 used to do it; it is now refused up front)
    net = SVBFNetClassifier(n_components=1, gamma=3e38, alpha=3e38, max_epochs=2, verbose=0,
                            random_state=0)
    with pytest.raises(RuntimeError, match="non-finite at epoch 2"):
        net.fit(X, y)


def test_centroid_softmax_integer_weights_are_repeated_rows():
    rng = np.random.RandomState(0)
    X, y, w = rng.randn(30, 3), rng.randint(0, 3, 30), rng.randint(0, 4, 30)
    params = {"max_epochs": 50, "random_state": 0, "device": "cpu"}
    weighted = CentroidSoftmaxClassifier(**params).fit(X, y, sample_weight=w)
    repeated = CentroidSoftmaxClassifier(**params).fit(X.repeat(w, axis=0), y.repeat(w))
    unweighted = CentroidSoftmaxClassifier(**params).fit(X, y)
    # full-batch Adam on the same weighted mean loss: the same centroids up to rounding
    np.testing.assert_allclose(weighted.centroids_, repeated.centroids_, atol=1e-12)
    assert not np.allclose(weighted.centroids_, unweighted.centroids_, atol=1e-3)


def test_centroid_softmax_refuses_all_zero_weights():
    X, y = np.eye(4), [0, 0, 1, 1]
    with pytest.raises(ValueError, match="non-zero"):
        CentroidSoftmaxClassifier(max_epochs=1, device="cpu").fit(X, y, sample_weight=np.zeros(4))
