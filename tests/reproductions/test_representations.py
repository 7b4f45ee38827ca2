"""Acceptance experiments of the linear-mapping spec (section 6), on digits at 8x8 scale.

Paper: "Leveraging linear mapping for model-agnostic adversarial defense" (Frontiers in
Computer Science 5:1274832, 2023).
"""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import ortho_group
from sklearn.linear_model import Ridge
from torch import nn

from geolearn.adversarial import carlini_wagner_l2, fgsm, pgd
from geolearn.datasets import load_digits_images
from geolearn.demo.representations import (
    digits_cnn,
    digits_experiment_data,
    digits_ffnn,
    train_digits_net,
)
from geolearn.exceptions import GeolearnWarning
from geolearn.representations import (
    CanonicalAdversarialDetector,
    LinearEmbeddingMap,
    cross_model_detection,
    embedding_mse,
)
from geolearn.representations._linear_map import _solve_cholesky, _solve_svd

SEEDS = (0, 1, 2)


# --- experiment 2: analytic map checks --------------------------------------------------------

@pytest.fixture
def gaussian():
    return np.random.default_rng(0).normal(size=(500, 40))


def test_exact_affine_map_is_recovered(gaussian):
    """Eq. 1 with an offset: Y = X M^T + b is fitted exactly (spec 6.2a)."""
    rng = np.random.default_rng(1)
    M, b = rng.normal(size=(30, 40)), rng.normal(size=30)
    Y = gaussian @ M.T + b
    emap = LinearEmbeddingMap(fit_intercept=True).fit(gaussian, Y)
    np.testing.assert_allclose(emap.coef_, M, atol=1e-10)
    np.testing.assert_allclose(emap.intercept_, b, atol=1e-10)
    assert emap.score(gaussian, Y) == pytest.approx(1.0, abs=1e-12)


def test_orthogonal_map_is_recovered(gaussian):
    """Embeddings related by a rotation, Y = X Q, give coef_ = Q^T (spec 6.2b)."""
    Q = ortho_group.rvs(40, random_state=2)
    emap = LinearEmbeddingMap().fit(gaussian, gaussian @ Q)
    np.testing.assert_allclose(emap.coef_, Q.T, atol=1e-10)


def test_underdetermined_map_is_the_minimum_norm_solution(gaussian):
    """m = 20 < d = 40 (the paper's VGG-19 regime): warning, interpolation, pinv(X) Y (6.2c)."""
    X = gaussian[:20]
    Y = np.random.default_rng(3).normal(size=(20, 30))
    with pytest.warns(UserWarning, match="underdetermined"):
        emap = LinearEmbeddingMap().fit(X, Y)
    assert emap.train_mse_ < 1e-20 and emap.rank_ == 20
    np.testing.assert_allclose(emap.coef_.T, np.linalg.pinv(X) @ Y, atol=1e-10)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_ridge_map_matches_sklearn_and_solvers_agree(gaussian, fit_intercept):
    """alpha = 3 equals sklearn Ridge; primal, dual and SVD solutions agree (6.2d)."""
    Y = gaussian @ np.random.default_rng(4).normal(size=(40, 30)) + 1.0
    ref = Ridge(alpha=3.0, fit_intercept=fit_intercept).fit(gaussian, Y)
    for solver in ("auto", "cholesky", "svd"):
        emap = LinearEmbeddingMap(alpha=3.0, fit_intercept=fit_intercept, solver=solver)
        emap.fit(gaussian, Y)
        np.testing.assert_allclose(emap.coef_, ref.coef_, atol=1e-8)
        np.testing.assert_allclose(emap.intercept_, np.broadcast_to(ref.intercept_, (30,)),
                                   atol=1e-8)
    for X in (gaussian, gaussian[:25]):  # m >= d and m < d
        Yx = Y[: len(X)]
        primal = _solve_cholesky(X, Yx, 3.0, dual=False)[0]
        np.testing.assert_allclose(_solve_cholesky(X, Yx, 3.0, dual=True)[0], primal, atol=1e-8)
        np.testing.assert_allclose(_solve_svd(X, Yx, 3.0)[0], primal, atol=1e-8)


def test_mse_reductions_differ_by_the_target_dimension():
    """Sec. 3.4.1: per-sample sums are d_B times the elementwise mean (6.2e)."""
    rng = np.random.default_rng(5)
    A, B = rng.normal(size=(50, 30)), rng.normal(size=(50, 30))
    assert embedding_mse(A, B, reduction="per_sample_sum") == pytest.approx(
        30 * embedding_mse(A, B), rel=1e-14)


# --- experiment 3: detector composition identities --------------------------------------------

def test_detector_composition_identities():
    """Sec. 2.3: the mapped detector is the canonical SVM composed with the map, and folds into
    one linear detector on the source space (the paper's "matrix multiplication" overhead)."""
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(400, 20))
    Z[200:, :3] += 0.8
    t = np.r_[np.zeros(200, int), np.ones(200, int)]
    X_s = np.tanh(Z @ rng.normal(size=(20, 32))) + 0.05 * rng.normal(size=(400, 32))
    det = CanonicalAdversarialDetector(random_state=0).fit(Z, t).fit_source("s", X_s, Z)
    ref = det.detector_.decision_function(det.maps_["s"].transform(X_s))
    np.testing.assert_allclose(det.decision_function(X_s, source="s"), ref, rtol=0, atol=1e-9)
    w, b = det.source_linear_detector("s")
    np.testing.assert_allclose(X_s @ w + b, ref, rtol=0, atol=1e-9)

    det.fit_source("self", Z, Z)
    np.testing.assert_allclose(det.maps_["self"].coef_, np.eye(20), atol=1e-10)
    assert det.score(Z, t, source="self") == det.score(Z, t)


# --- experiment 4: attack properties -----------------------------------------------------------

@pytest.fixture
def linear_softmax():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    X, y = load_digits_images(return_X_y=True)
    return net, X[:300], y[:300]


def test_fgsm_equals_the_closed_form_step_of_a_linear_softmax(linear_softmax):
    """Eq. 3 for logits W x + c: grad_x J = (softmax(W x + c) - onehot(y)) W (spec 6.4a)."""
    net, X, y = linear_softmax
    W = net[1].weight.detach().double().numpy()
    c = net[1].bias.detach().double().numpy()
    flat = X.reshape(len(X), -1).astype(np.float64)
    p = torch.softmax(torch.as_tensor(flat @ W.T + c), 1).numpy()
    grad = (p - np.eye(10)[y]) @ W
    expected = np.clip(flat + 0.1 * np.sign(grad), 0, 1)
    X_adv = fgsm(net, X, y, 0.1)
    np.testing.assert_allclose(X_adv.reshape(len(X), -1), expected, rtol=0, atol=1e-7)


def test_attacks_stay_in_the_box_and_the_ball(linear_softmax):
    """Every attack output lies in [0, 1]; FGSM and PGD within eps in L-inf (spec 6.4b)."""
    net, X, y = linear_softmax
    for eps in (0.05, 0.3):
        for X_adv in (fgsm(net, X, y, eps), pgd(net, X, y, eps, random_state=0)):
            assert np.abs(X_adv - X).max() <= eps + 1e-6
            assert X_adv.min() >= 0 and X_adv.max() <= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X_cw, _ = carlini_wagner_l2(net, X, y, n_steps=20)
    assert X_cw.min() >= 0 and X_cw.max() <= 1


def test_one_step_pgd_is_fgsm(linear_softmax):
    """PGD with T = 1, alpha = eps and no random start is eq. 3 exactly (spec 6.4c)."""
    net, X, y = linear_softmax
    np.testing.assert_allclose(pgd(net, X, y, 0.2, n_steps=1, step_size=0.2,
                                   random_start=False),
                               fgsm(net, X, y, 0.2), rtol=0, atol=1e-7)


# --- experiments 1 and 4(d, e): trained digits networks ---------------------------------------

@pytest.fixture(scope="module")
def digits_nets():
    """The CNN / FFNN pair of the paper's MNIST experiment (128-d embeddings), trained once per
    seed on first use: ``digits_nets(seed) -> (nets, X_test, y_test)``."""
    cache = {}

    def get(seed):
        if seed not in cache:
            X_train, X_test, y_train, y_test = digits_experiment_data(seed)
            nets = {"CNN": train_digits_net(digits_cnn, X_train, y_train, seed=seed),
                    "FFNN": train_digits_net(digits_ffnn, X_train, y_train, seed=seed)}
            cache[seed] = nets, X_test, y_test
        return cache[seed]

    return get


def _auroc_of_map(det, res, source, target, rows, *, permute=None):
    """Score the val rows of ``source`` through a map fitted on ``rows`` of the map split."""
    E, mp, val = res.embeddings, res.splits["map"], res.splits["val"]
    X_map = np.vstack([E[source][i][mp] for i in rows])
    Y_map = np.vstack([E[target][i][mp] for i in rows])
    if permute is not None:
        Y_map = Y_map[permute.permutation(len(Y_map))]
    name = f"{source}-{rows}-{permute is not None}"
    det.fit_source(name, X_map, Y_map)
    X_val = np.vstack([E[source][0][val], E[source][1][val]])
    labels = np.r_[np.zeros(len(val)), np.ones(len(val))]
    return det.score(X_val, labels, source=name)


@pytest.mark.slow
def test_canonical_detector_screens_mapped_networks(digits_nets):
    """Central claim (paper Sec. 4-5, Tables 3 and 7; MNIST CNN <-> FFNN at 99.4-99.5% mapped
    vs 99.8-99.9% native): a detector trained only in the canonical space detects mapped
    adversarial embeddings of another architecture nearly as well as native ones, while a map
    fitted on permuted pairs does not; mapped adversarial embeddings stay adversarial for the
    target's head (Table 7)."""
    gaps = {"CNN": [], "FFNN": []}
    report = []
    for seed in SEEDS:
        nets, X, y = digits_nets(seed)
        for target, source in (("CNN", "FFNN"), ("FFNN", "CNN")):
            res = cross_model_detection(nets, target, X, y, epsilon=0.2, random_state=seed)
            src = res.sources[source]
            det = res.detector
            permuted = _auroc_of_map(det, res, source, target, (0, 1),
                                     permute=np.random.RandomState(seed))
            clean_only = _auroc_of_map(det, res, source, target, (0,))
            report.append(f"seed {seed} {source}->{target}: native {res.auroc_native:.3f} "
                          f"mapped {src['auroc_mapped']:.3f} permuted {permuted:.3f} "
                          f"clean-only {clean_only:.3f} R2 {src['r2']:.3f} head adv "
                          f"{src['mapped_head_accuracy_adv']:.3f} clean "
                          f"{src['mapped_head_accuracy_clean']:.3f}")
            assert res.auroc_native >= 0.80, report[-1]
            assert src["auroc_mapped"] >= 0.75, report[-1]
            assert src["auroc_mapped"] >= res.auroc_native - 0.20, report[-1]
            assert 0.30 <= permuted <= 0.62, report[-1]
            assert permuted <= src["auroc_mapped"] - 0.25, report[-1]
            assert src["r2"] >= 0.75, report[-1]
            assert src["mapped_head_accuracy_adv"] <= 0.35, report[-1]
            assert src["mapped_head_accuracy_clean"] >= 0.85, report[-1]
            gaps[target].append(res.auroc_native - src["auroc_mapped"])
    print("\n".join(report))
    for target, gap in gaps.items():
        assert np.mean(gap) <= 0.15, (target, gap)


def _mean_ce_and_accuracy(net, X, y):
    with torch.no_grad():
        logits = net.module_(torch.as_tensor(X))
    return (F.cross_entropy(logits, torch.as_tensor(y)).item(),
            float((logits.argmax(1).numpy() == y).mean()))


@pytest.mark.slow
def test_pgd_and_cw_on_the_digits_ffnn(digits_nets):
    """Sec. 3.3: PGD (eq. 4) is at least as strong as FGSM (eq. 3) at eps = 0.2, and C&W finds
    smaller L2 perturbations than FGSM for most samples (spec 6.4d, e); attacks leave the
    model's mode and parameter gradients untouched."""
    nets, X, y = digits_nets(0)
    ffnn = nets["FFNN"]
    module = ffnn.module_.train()
    grads = [None if p.grad is None else p.grad.clone() for p in module.parameters()]
    X_fgsm = fgsm(ffnn, X, y, 0.2)
    X_pgd = pgd(ffnn, X, y, 0.2, random_state=0)
    with pytest.warns(GeolearnWarning, match="never misclassified"):  # flagged in success
        X_cw, success = carlini_wagner_l2(ffnn, X, y, c=1.0, n_steps=100)
    assert module.training
    for p, g in zip(module.parameters(), grads):  # skorch leaves the last step's gradients
        assert (p.grad is None and g is None) or torch.equal(p.grad, g)
    module.eval()
    ce_fgsm, acc_fgsm = _mean_ce_and_accuracy(ffnn, X_fgsm, y)
    ce_pgd, acc_pgd = _mean_ce_and_accuracy(ffnn, X_pgd, y)
    assert ce_pgd >= ce_fgsm and acc_pgd <= acc_fgsm + 0.02, (ce_fgsm, ce_pgd, acc_fgsm, acc_pgd)
    l2 = lambda A: np.linalg.norm((A - X).reshape(len(X), -1), axis=1)  # noqa: E731
    print(f"\nFFNN: CE fgsm {ce_fgsm:.2f} pgd {ce_pgd:.2f}, acc fgsm {acc_fgsm:.3f} pgd "
          f"{acc_pgd:.3f}; C&W success {success.mean():.3f}, median L2 "
          f"{np.median(l2(X_cw)[success]):.3f} vs FGSM {np.median(l2(X_fgsm)):.3f}")
    assert success.mean() >= 0.8
    assert np.median(l2(X_cw)[success]) < np.median(l2(X_fgsm))
