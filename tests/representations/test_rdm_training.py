"""RDM-regularised training: the differentiable RDM, RDMLoss, the skorch classifier, the scorers."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.stats
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, EarlyStopping

from geolearn._utils import torch_seed, torch_threads
from geolearn.models import TrainingInterruptedWarning
from geolearn.representations import (
    RDMLoss,
    RDMRegularizedClassifier,
    RDMSimilarityScoring,
    categorical_rdm,
    compare_rdms,
    compute_rdm,
    condense_rdm,
    differentiable_rdm,
    make_rdm_scorer,
)
from tests.helpers import assert_message


def _feats(b=9, n=5, seed=0):
    return torch.as_tensor(np.random.default_rng(seed).normal(size=(b, n)))


# -- differentiable RDM and RDMLoss ----------------------------------------------------------


def test_differentiable_rdm_is_the_correlation_rdm():
    F = _feats(8, 3 * 2 * 2).reshape(8, 3, 2, 2)  # rows are flattened
    R = differentiable_rdm(F, eps=0.0)
    np.testing.assert_allclose(R.numpy(), compute_rdm(F.reshape(8, -1).numpy()), atol=1e-12)
    np.testing.assert_allclose(differentiable_rdm(F).numpy(), R.numpy(), atol=1e-7)
    assert R.dtype == torch.float64 and torch.equal(torch.diagonal(R), torch.zeros(8).double())
    assert differentiable_rdm(F.float()).dtype == torch.float32  # the activations' dtype


@pytest.mark.parametrize("b", [3, 7, 12])
def test_pearson_loss_is_one_minus_pearson_of_condensed_rdms(b):
    F = _feats(b, 6, seed=b)
    target = compute_rdm(np.random.default_rng(b + 1).normal(size=(b, 4)))
    loss = RDMLoss()(F, torch.as_tensor(target))
    r_model = compute_rdm(F.numpy(), condensed=True)
    expected = 1 - scipy.stats.pearsonr(r_model, condense_rdm(target))[0]
    assert abs(float(loss) - expected) < 1e-6
    # invariant to the target's scale and offset (a correlation)
    again = RDMLoss()(F, torch.as_tensor(3 * target + 2 * (1 - np.eye(b))))
    assert abs(float(again) - float(loss)) < 1e-6


def test_atanh_mse_loss_matches_numpy():
    F = _feats(10, 4, seed=3)
    target = categorical_rdm(np.arange(10) % 3)
    loss = RDMLoss("atanh_mse", clamp=1e-3)(F, target)
    lim = 1 - 1e-3
    s_model = np.clip(1 - compute_rdm(F.numpy(), condensed=True), -lim, lim)
    s_target = np.clip(1 - condense_rdm(target), -lim, lim)
    expected = np.mean((np.arctanh(s_model) - np.arctanh(s_target)) ** 2)
    assert abs(float(loss) - expected) < 1e-6 * expected


@pytest.mark.parametrize("method", ["pearson", "atanh_mse"])
def test_gradient_is_finite_for_constant_rows_and_constant_targets(method):
    F = _feats(6, 4).float().requires_grad_(True)
    with torch.no_grad():
        F[2] = 0.7  # a stimulus whose activations are all equal
    target = torch.as_tensor(categorical_rdm([0, 0, 1, 1, 2, 2]))
    loss = RDMLoss(method)(F, target)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(F.grad).all()
    assert F.grad.abs().sum() > 0
    F.grad = None
    RDMLoss(method)(F, torch.ones(6, 6) - torch.eye(6)).backward()  # constant target
    assert torch.isfinite(F.grad).all()


@pytest.mark.parametrize("method", ["pearson", "atanh_mse"])
def test_minimising_the_loss_moves_the_rdm_to_the_target(method):
    labels = np.arange(12) % 3
    target = torch.as_tensor(categorical_rdm(labels)) * 0.9
    F = _feats(12, 8, seed=4).float().requires_grad_(True)
    before = compare_rdms(compute_rdm(F.detach().numpy()), target.numpy())
    opt = torch.optim.Adam([F], lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        RDMLoss(method)(F, target).backward()
        opt.step()
    after = compare_rdms(compute_rdm(F.detach().numpy()), target.numpy())
    assert before < 0.3 and after > 0.95


def test_loss_validation():
    with pytest.raises(ValueError, match="method must be one of"):
        RDMLoss("mse")
    with pytest.raises(ValueError, match="clamp"):
        RDMLoss(clamp=1.0)
    with pytest.raises(ValueError, match=r"target_rdm must have shape \(4, 4\)"):
        RDMLoss()(_feats(4), torch.zeros(3, 3))


# -- RDMRegularizedClassifier -----------------------------------------------------------------


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = (np.eye(3)[y] @ rng.normal(size=(3, 8)) + rng.normal(scale=0.8, size=(n, 8)))
    return X.astype(np.float32), y.astype(np.int64)


def _module():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


_NET = dict(criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-2,
            max_epochs=3, batch_size=16, train_split=None, verbose=0)


def _clf(X_ref, y_ref, module=_module, **kw):
    params = dict(_NET, rdm_layer="1", rdm_stimuli=X_ref, rdm_target=categorical_rdm(y_ref),
                  rdm_batch_size=10, random_state=0)
    params.update(kw)
    return RDMRegularizedClassifier(module, **params)


def _weights(net):
    return [p.detach().clone() for p in net.module_.parameters()]


def test_zero_weight_reproduces_a_plain_neural_net_classifier():
    X, y = _data()
    with torch_seed(5):  # the estimator trains under the torch seed its random_state gives
        plain = NeuralNetClassifier(_module, **_NET).fit(X, y)
    reg = _clf(X[:30], y[:30], rdm_weight=0, random_state=5).fit(X, y)
    for a, b in zip(_weights(plain), _weights(reg)):
        assert torch.allclose(a, b, atol=1e-6, rtol=0)
    assert "rdm_loss" not in reg.history_[-1, "batches", 0]  # the branch never ran
    regularised = _clf(X[:30], y[:30], rdm_weight=1.0, random_state=5).fit(X, y)
    assert not all(torch.allclose(a, b, atol=1e-3)
                   for a, b in zip(_weights(plain), _weights(regularised)))


def test_history_records_rdm_loss_and_subsets_follow_random_state():
    X, y = _data()
    a = _clf(X[:30], y[:30]).fit(X, y)
    batches = a.history_[-1, "batches"]
    assert len(batches) == 8 and all(0 <= b["rdm_loss"] <= 2 for b in batches)
    # its epoch mean is weighted by the batch sizes, like train_loss (which includes it)
    expected = np.average([b["rdm_loss"] for b in batches],
                          weights=[b["train_batch_size"] for b in batches])
    assert np.isclose(a.history_[-1, "rdm_loss"], expected)
    b = _clf(X[:30], y[:30]).fit(X, y)
    c = _clf(X[:30], y[:30], random_state=1).fit(X, y)
    assert all(torch.equal(p, q) for p, q in zip(_weights(a), _weights(b)))
    assert not all(torch.equal(p, q) for p, q in zip(_weights(a), _weights(c)))
    # the rdm_loss of the first batch is RDMLoss on the first subset of a fresh generator
    S = np.random.default_rng(0).choice(30, size=10, replace=False)
    d = _clf(X[:30], y[:30], max_epochs=1, batch_size=len(X)).fit(X, y)
    with torch_seed(0):  # the seed random_state=0 gives: the initial weights
        init = _module()
    with torch.no_grad():
        H = init[1](init[0](torch.as_tensor(X[S])))
    expected = RDMLoss()(H, categorical_rdm(y[S]))
    assert abs(d.history_[0, "batches", 0, "rdm_loss"] - float(expected)) < 1e-6


def test_validation_happens_in_fit_and_names_the_argument():
    X, y = _data(60)
    cases = [
        (dict(rdm_target=np.zeros((5, 5))), ["rdm_target", "(20, 20)"]),
        (dict(rdm_batch_size=21), ["rdm_batch_size", "<= 20"]),
        (dict(rdm_batch_size=1), ["rdm_batch_size", "[2, inf)"]),
        (dict(rdm_weight=-0.1), ["rdm_weight", "[0.0, inf)"]),
        (dict(rdm_loss="mse"), ["rdm_loss", "pearson", "atanh_mse"]),
        (dict(rdm_layer="nope"), ["nope", "'1'"]),
        (dict(rdm_stimuli=np.full((20, 8), np.nan)), ["rdm_stimuli", "NaN"]),
    ]
    for kw, words in cases:
        clf = _clf(X[:20], y[:20], **kw)  # construction never validates
        with pytest.raises(ValueError) as exc:
            clf.fit(X, y)
        assert_message(exc, *words)
        with pytest.raises(NotFittedError):
            check_is_fitted(clf)
    asym = categorical_rdm(y[:20])
    asym[0, 1] = 0.5
    with pytest.raises(ValueError, match="not symmetric"):
        _clf(X[:20], y[:20], rdm_target=asym).fit(X, y)
    # set_params before a warm continuation is checked too
    clf = _clf(X[:20], y[:20], warm_start=True).fit(X, y)
    clf.set_params(rdm_weight=-1)
    with pytest.raises(ValueError, match="rdm_weight"):
        clf.fit(X, y)


def test_gridsearch_over_rdm_weight_with_the_rdm_scorer():
    X, y = _data(180)
    X_ref, y_ref = X[:45], y[:45]
    scorer = make_rdm_scorer(X_ref, categorical_rdm(y_ref), layer="1")
    torch.manual_seed(0)
    search = GridSearchCV(_clf(X_ref, y_ref, max_epochs=6, rdm_batch_size=20, batch_size=32),
                          {"rdm_weight": [0.0, 3.0]}, scoring=scorer, cv=2)
    with torch_threads(1):  # many tiny steps: one thread is fastest
        search.fit(X[45:], y[45:])
    scores = search.cv_results_["mean_test_score"]
    assert scores[1] > scores[0]  # greater is better: the regularised model is more similar
    assert search.best_params_ == {"rdm_weight": 3.0}
    assert np.isclose(search.score(X, y), scorer(search.best_estimator_, X, y))
    assert search.best_estimator_.rdm_weight == 3.0


def test_clone_and_pickle():
    X, y = _data()
    clf = _clf(X[:30], y[:30], rdm_weight=0.5, optimizer__weight_decay=1e-4)
    twin = clone(clf)
    assert twin.rdm_weight == 0.5 and twin.optimizer__weight_decay == 1e-4
    assert twin.rdm_stimuli is not clf.rdm_stimuli
    np.testing.assert_array_equal(twin.rdm_stimuli, clf.rdm_stimuli)
    clf.fit(X, y)
    twin.fit(X, y)
    np.testing.assert_array_equal(twin.predict_proba(X), clf.predict_proba(X))
    loaded = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    # keeps training, subsets continue from the pickled generator
    loaded.set_params(warm_start=True).fit(X, y)
    assert len(loaded.history_) == len(clf.history_) + 3


def test_interrupt_warns_and_non_finite_loss_raises():
    X, y = _data(60)

    class Stop(Callback):
        def on_epoch_end(self, net, **kwargs):
            if len(net.history) == 2:
                raise KeyboardInterrupt

    with pytest.warns(TrainingInterruptedWarning, match="epoch 3 of 3"):
        _clf(X[:20], y[:20], callbacks=[Stop()]).fit(X, y)

    class Blowup(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.lin(x) * float("nan")

    with pytest.raises(RuntimeError, match="non-finite"):
        _clf(X[:20], y[:20], module=Blowup, rdm_layer="lin").fit(X, y)


# -- RDMSimilarityScoring and make_rdm_scorer -------------------------------------------------


def test_similarity_callback_records_hms_and_drives_early_stopping():
    X, y = _data()
    X_ref, target = X[:30], categorical_rdm(y[:30])
    snapshots = []

    class Keep(Callback):
        def on_epoch_end(self, net, **kwargs):
            snapshots.append(pickle.loads(pickle.dumps(net.module_)))

    torch.manual_seed(0)
    net = NeuralNetClassifier(_module, **dict(_NET, max_epochs=4),
                              callbacks=[RDMSimilarityScoring(X_ref, target, layer="1"), Keep()])
    net.fit(X, y)
    scorer = make_rdm_scorer(X_ref, target, "1")
    hms = net.history[:, "hms"]
    assert hms == pytest.approx([scorer(m) for m in snapshots], abs=1e-12)
    best = [max(hms[: i + 1]) == hms[i] for i in range(len(hms))]
    assert net.history[:, "hms_best"] == best

    # lr = 0: the weights and the score never change, so EarlyStopping(patience=2) stops at 3
    torch.manual_seed(0)
    net = NeuralNetClassifier(
        _module, **dict(_NET, lr=0.0, max_epochs=10),
        callbacks=[RDMSimilarityScoring(X_ref, target, layer="1", method="pearson", name="sim"),
                   EarlyStopping(monitor="sim", lower_is_better=False, patience=2)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrainingInterruptedWarning)
        net.fit(X, y)
    assert len(net.history) == 3
    assert net.history[:, "sim_best"] == [True, False, False]
    with pytest.raises(ValueError, match="rdm_target describes 5 stimuli"):
        NeuralNetClassifier(_module, **_NET, callbacks=[
            RDMSimilarityScoring(X_ref, categorical_rdm([0, 1, 0, 1, 0]), layer="1")]).fit(X, y)


def test_scorer_reads_the_layer_in_eval_mode_and_restores_modes():
    X, y = _data(60)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Dropout(0.5), torch.nn.ReLU(),
                              torch.nn.Linear(16, 3)).train()
    target = categorical_rdm(y[:40])
    scorer = make_rdm_scorer(X[:40], target, layer="2", method="kendall_tau_a")
    value = scorer(net, None, None)
    assert net.training and net[1].training
    assert scorer(net, X, y) == value  # deterministic: dropout is off
    with torch.no_grad():
        H = torch.relu(net[0](torch.as_tensor(X[:40]))).numpy()
    assert value == pytest.approx(compare_rdms(compute_rdm(H), target, "kendall_tau_a"),
                                  abs=1e-12)
    assert pickle.loads(pickle.dumps(scorer))(net) == value
    with pytest.raises(ValueError, match="method must be one of"):
        make_rdm_scorer(X[:40], target, layer="2", method="r2")
    with pytest.raises(ValueError, match="rdm_target describes 40 stimuli but rdm_stimuli has 39"):
        make_rdm_scorer(X[:39], target, layer="2")
    with pytest.raises(ValueError) as exc:
        make_rdm_scorer(X[:40], target, layer="9")(net)
    assert_message(exc, "'9'", "available")
