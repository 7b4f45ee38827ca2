"""Reproductions: the manifold decomposition of adversarial risk on the paper's data sets.

From "Manifold-driven decomposition for adversarial robustness" (Frontiers in Computer Science,
2024). Two experiments, each sharing one trained model per data set through a module-scoped
fixture:

- The unit circle (the paper's Sec. 3, Table 1, the columns of the standard classifier ``f``):
  1,000 training and 1,000 test points for each boundary, an MLP 2-64-64-2 (ReLU) trained by
  full-batch SGD (lr 0.1, 1,000 epochs: ``ManifoldAdversarialClassifier``'s defaults, the
  paper's settings), L2 budgets 0.05, 0.1, 0.2, 0.3, ``SphereManifold``, in-manifold
  risks on the chart grid, ``nnr="probe"``. Pass: ``R_adv`` within 0.03 of the Bayes closed
  form ``(2/pi) arcsin eps`` (single) or twice that (double) and within 0.03 of Table 1's
  ``f`` column; ``R_in(2 eps)`` within 0.04 of ``(4/pi) arcsin eps`` (twice that, double);
  ``R_std <= 0.02``; the bound holds at every budget with at most 2 pointwise violations;
  ``R_adv`` within 0.015 of the fraction of test points within ``eps`` of the Bayes boundary
  (the same comparison without the test sample's noise, about 0.015 at 1,000 points);
  every in-manifold example lies on the circle and every example within its budget. The
  L-infinity union (the paper's own search) is printed, not asserted: the ball is larger than
  the theorem's.
- Digits with an autoencoder manifold (the paper's Sec. 4, Table 3, reduced to the CPU:
  scikit-learn's 8 x 8 digits instead of MNIST, one seed). 75/25 stratified split; the
  manifold is decoded by an autoencoder 64-128-10-128-64 with a sigmoid output (geolearn's
  ``MetaManifoldAutoencoder`` without episodes, i.e. a plain autoencoder: summed MSE, Adam
  1e-3, batch 128, 150 epochs); the classifier an MLP 64-128-128-10 (ReLU, Adam 1e-3, batch
  64, at least 20 epochs then stopped at 99% training accuracy, the paper's rule);
  ``eps = 0.5`` (L2, MNIST's 1.5 scaled by ``sqrt(64 / 784)``), PGD 40 steps, 2 restarts,
  ``nnr="sample"``. Pass (the shape of Table 3): the normal risk exceeds the in-manifold risk
  at the same budget by >= 0.05; ``R_adv <= R_std + R_nor + R_in(2 eps)`` (as for
  FashionMNIST and SVHN); normal PGD beats random normal noise of norm ``eps`` (10 draws) by
  >= 0.2 in risk; every example is within its budget and every normal perturbation is
  orthogonal to the tangent space. ``LocalPCAManifold(n_components=10, n_neighbors=30)`` is
  run on 45 test digits for comparison, beside the autoencoder on the same digits (printed,
  no threshold).
"""

import time

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from skorch import NeuralNetClassifier
from skorch.callbacks import Callback, EpochScoring

from geolearn._utils import torch_threads
from geolearn.adversarial import ManifoldAdversarialClassifier, risk_curve, risk_decomposition
from geolearn.datasets import make_circle_classification
from geolearn.exceptions import GeolearnWarning
from geolearn.manifold import LatentManifold, LocalPCAManifold, SphereManifold
from geolearn.meta_learning import MetaManifoldAutoencoder

pytestmark = pytest.mark.slow

EPSILONS = (0.05, 0.1, 0.2, 0.3)
# Table 1, R_adv of the standard classifier f at EPSILONS
TABLE1_F = {"single": (0.0280, 0.0709, 0.128, 0.1979), "double": (0.0620, 0.1170, 0.242, 0.386)}
BAYES_FACTOR = {"single": 1, "double": 2}
TOL = 1e-5  # relative budget tolerance (float32)


def _scalars(result):
    """The scalar risks and flags of a risk_decomposition result (assertion messages)."""
    return {k: v for k, v in result.items() if k not in ("indicators", "examples")}


def _circle_mlp():
    return torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 2))


@pytest.fixture(scope="module", params=["single", "double"])
def circle(request):
    """The trained ``f`` of one boundary and its decomposition at every budget."""
    boundary = request.param
    X, y = make_circle_classification(1000, boundary=boundary, random_state=0)
    X_te, y_te = make_circle_classification(1000, boundary=boundary, random_state=1)
    X_te = X_te.astype(np.float32)  # the examples are float32: exact zero moves stay zero
    start = time.perf_counter()
    with torch_threads(1):  # a small MLP: one thread is fastest beside other work
        clf = ManifoldAdversarialClassifier(_circle_mlp, random_state=0).fit(X, y)
        trained = time.perf_counter()
        results = risk_curve(clf, X_te, y_te, manifold=SphereManifold(), epsilons=EPSILONS,
                             attack="auto", nnr="probe", random_state=0, return_examples=True)
        done = time.perf_counter()
        with pytest.warns(GeolearnWarning, match="linf"):
            linf = risk_curve(clf, X_te, y_te, manifold=SphereManifold(), epsilons=EPSILONS,
                              norm="linf", random_state=0)
    bayes = BAYES_FACTOR[boundary] * 2 / np.pi * np.arcsin(EPSILONS)
    print(f"\n{boundary}: training {trained - start:.1f} s, four budgets {done - trained:.1f} s")
    for r, b, t, li in zip(results, bayes, TABLE1_F[boundary], linf):
        print(f"  eps {r.epsilon}: R_adv {r.adv_risk:.3f} (Bayes {b:.3f}, Table 1 {t:.3f}; "
              f"L-inf union {li.adv_risk:.3f}), R_std {r.std_risk:.3f}, R_nor "
              f"{r.normal_risk:.3f}, R_in(2eps) {r.in_manifold_risk:.3f} (closed form "
              f"{2 * b:.3f}), NNR {r.nnr:.3f}, RHS {r.rhs:.3f}, violations "
              f"{r.pointwise_violations}")
    return boundary, X_te, results


def test_circle_adversarial_risk_matches_bayes(circle):
    """Sec. 2 and Table 1: R_adv of f follows the Bayes closed form (2/pi) arcsin eps
    (double boundary: twice that) within 0.03."""
    boundary, _, results = circle
    adv = np.array([r.adv_risk for r in results])
    bayes = BAYES_FACTOR[boundary] * 2 / np.pi * np.arcsin(EPSILONS)
    np.testing.assert_allclose(adv, bayes, atol=0.03, rtol=0, err_msg="Bayes closed form")


def test_circle_adversarial_risk_matches_table1(circle, request):
    """Table 1, column R_adv of f: the paper's figures within 0.03."""
    boundary, _, results = circle
    if boundary == "double":
        # measured: 0.072 / 0.132 / 0.273 / 0.386 against Table 1's 0.062 / 0.117 / 0.242 /
        # 0.386; eps = 0.2 misses by 0.001. The test sample (random_state=1) has 27.0% of its
        # points within 0.2 of the axes against 25.6% in the population (Bayes 0.256), and
        # training seeds 0, 1, 2 give 0.273 / 0.272 / 0.273: the gap is the two papers'
        # samples, not the model (binomial sd of a 1,000-point risk near 0.25: 0.014).
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "Table 1 double boundary, eps 0.2: R_adv 0.273 against 0.242 (test-sample noise; "
            "0.256 is the Bayes risk)")))
    adv = np.array([r.adv_risk for r in results])
    np.testing.assert_allclose(adv, TABLE1_F[boundary], atol=0.03, rtol=0, err_msg="Table 1")


def test_circle_adversarial_risk_matches_the_bayes_risk_of_the_test_sample(circle):
    """Table 1, R_adv of f, without the test sample's noise: the trained f is close to Bayes,
    so its R_adv is the fraction of test points within eps of the Bayes boundary (the axes)."""
    boundary, X, results = circle
    near = np.abs(X[:, 0]) if boundary == "single" else np.abs(X).min(axis=1)
    empirical = [np.mean(near < eps) for eps in EPSILONS]
    # f is a trained net, not the Bayes rule: its boundary moves by the training draw. Over
    # random_state 0-3 the largest gap measured is 0.012 (seed 0, eps 0.4, double boundary),
    # within the sampling noise of 1,000 test points (about 0.015)
    np.testing.assert_allclose([r.adv_risk for r in results], empirical, atol=0.015, rtol=0)


def test_circle_in_manifold_risk_matches_the_chord_closed_form(circle):
    """Sec. 3 (Table 1's RHS term): R_in(2 eps) = (4/pi) arcsin eps (double: twice that)."""
    boundary, _, results = circle
    in2 = np.array([r.in_manifold_risk for r in results])
    closed = BAYES_FACTOR[boundary] * 4 / np.pi * np.arcsin(EPSILONS)
    np.testing.assert_allclose(np.minimum(in2, 1.0), np.minimum(closed, 1.0), atol=0.04, rtol=0)


def test_circle_bound_holds_at_every_budget(circle):
    """Theorem 1 (I) on Table 1's data: R_adv <= RHS at every eps, and pointwise."""
    _, _, results = circle
    for r in results:
        assert r.std_risk <= 0.02, _scalars(r)
        assert r.bound_holds, _scalars(r)
        assert r.pointwise_violations <= 2, _scalars(r)


def test_circle_examples_are_within_budget_and_on_the_circle(circle):
    """The decomposition's guarantees (never silently wrong) on Table 1's data."""
    _, X, results = circle
    for r in results:
        ex, eps = r.examples, r.epsilon
        for key, budget in (("ambient", eps), ("normal", eps), ("in_eps", eps),
                            ("in2", 2 * eps)):
            assert np.linalg.norm(ex[key] - X, axis=1).max() <= budget * (1 + TOL), key
        for key in ("in_eps", "in2"):
            np.testing.assert_allclose(np.linalg.norm(ex[key], axis=1), 1.0, atol=1e-5)
        # normal perturbations of the circle are radial: no tangent component
        delta = ex["normal"] - X
        tangent = np.abs(delta[:, 0] * X[:, 1] - delta[:, 1] * X[:, 0])
        # relative 1e-5, plus float32 rounding of x + delta - x on the unit circle
        assert np.all(tangent <= 1e-5 * np.linalg.norm(delta, axis=1) + 1e-6)


# -- digits with an autoencoder manifold (Table 3) ----------------------------------------

DIGITS_EPS = 0.5


class _StopAtTrainingAccuracy(Callback):
    """Stop once the training accuracy reaches ``accuracy`` after ``min_epochs`` (the paper)."""

    def __init__(self, accuracy=0.99, min_epochs=20):
        self.accuracy = accuracy
        self.min_epochs = min_epochs

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        if row["epoch"] >= self.min_epochs and row["train_acc"] >= self.accuracy:
            raise KeyboardInterrupt  # skorch's way to end training (as EarlyStopping does)


def _digits_mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                               torch.nn.ReLU(), torch.nn.Linear(128, 10))


@pytest.fixture(scope="module")
def digits():
    """The autoencoder manifold, the classifier and the decomposition at eps = 0.5."""
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    start = time.perf_counter()
    with torch_threads(1):
        ae = MetaManifoldAutoencoder(
            n_latent=10, architecture="mlp", hidden_layer_sizes=(128,), episodic_strategy=None,
            loss="mse", reduction="sum", lr=1e-3, batch_size=128,
            max_epochs=150 * -(-len(X_tr) // 128), log_every=100, random_state=0).fit(X_tr)
        torch.manual_seed(0)
        clf = NeuralNetClassifier(
            _digits_mlp, criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.Adam,
            lr=1e-3, batch_size=64, max_epochs=200, train_split=None, verbose=0,
            callbacks=[("train_acc", EpochScoring("accuracy", on_train=True, name="train_acc",
                                                  lower_is_better=False)),
                       _StopAtTrainingAccuracy()]).fit(X_tr, y_tr)
        trained = time.perf_counter()
        # the decoder ends in the sigmoid the estimator applies to its logits
        manifold = LatentManifold(ae.module_.encoder,
                                  torch.nn.Sequential(ae.module_.decoder, torch.nn.Sigmoid()))
        kw = {"epsilon": DIGITS_EPS, "n_steps": 40, "n_restarts": 2, "nnr": "sample",
              "random_state": 0}
        with pytest.warns(GeolearnWarning, match="offset convention"):
            res = risk_decomposition(clf, X_te, y_te, manifold=manifold, return_examples=True,
                                     **kw)
        decomposed = time.perf_counter()
        # local PCA's tangent steps re-fit a neighbourhood at every projection: a subset
        sub = np.sort(np.random.default_rng(0).choice(len(X_te), 45, replace=False))
        pca = LocalPCAManifold(n_components=10, n_neighbors=30).fit(X_tr)
        with pytest.warns(GeolearnWarning, match="offset convention"):
            res_pca = risk_decomposition(clf, X_te[sub], y_te[sub], manifold=pca, **kw)
        with pytest.warns(GeolearnWarning, match="offset convention"):
            res_sub = risk_decomposition(clf, X_te[sub], y_te[sub], manifold=manifold, **kw)
    accuracy = float(np.mean(clf.predict(X_te) == y_te))
    print(f"\ndigits: training {trained - start:.1f} s ({len(clf.history)} classifier epochs, "
          f"test accuracy {accuracy:.3f}), decomposition of {len(X_te)} digits "
          f"{decomposed - trained:.1f} s, LocalPCA + latent on {len(sub)} "
          f"{time.perf_counter() - decomposed:.1f} s")
    for name, r in (("latent", res), (f"latent, {len(sub)}", res_sub),
                    (f"local PCA, {len(sub)}", res_pca)):
        print(f"  {name}: R_adv {r.adv_risk:.3f}, R_std {r.std_risk:.3f}, R_nor "
              f"{r.normal_risk:.3f}, R_in(eps) {r.in_manifold_risk_eps:.3f}, R_in(2eps) "
              f"{r.in_manifold_risk:.3f}, NNR(sample) {r.nnr:.3f}, sum without NNR "
              f"{r.rhs_without_nnr:.3f}, violations {r.pointwise_violations}")
    return clf, manifold, X_te, y_te, res


def test_digits_normal_risk_dominates_in_manifold_risk(digits):
    """Table 3's shape: the normal risk exceeds the in-manifold risk (4-8x in the paper)."""
    res = digits[-1]
    assert res.std_risk <= 0.05, _scalars(res)
    assert res.normal_risk - res.in_manifold_risk_eps >= 0.05, _scalars(res)
    # as for FashionMNIST and SVHN: the LHS below the sum without NNR
    assert res.adv_risk <= res.std_risk + res.normal_risk + res.in_manifold_risk, _scalars(res)


def test_digits_normal_space_must_be_searched_not_sampled(digits):
    """Sec. 4.3: normal PGD finds adversarial points that random normal noise does not."""
    clf, manifold, X, y, res = digits
    T = manifold.tangent_basis(X)
    rng = np.random.default_rng(0)
    fooled = clf.predict(X) != y
    for _ in range(10):
        g = rng.normal(size=X.shape)
        g -= np.einsum("nij,nj->ni", T, np.einsum("nij,ni->nj", T, g))
        noise = DIGITS_EPS * g / np.linalg.norm(g, axis=1, keepdims=True)
        fooled |= clf.predict((X + noise).astype(np.float32)) != y
    print(f"random normal noise risk (10 draws) {fooled.mean():.3f}, normal PGD "
          f"{res.normal_risk:.3f}")
    assert res.normal_risk - fooled.mean() >= 0.2


def test_digits_examples_respect_their_budgets(digits):
    """The decomposition's guarantees on real data: budgets and normal orthogonality."""
    _, manifold, X, _, res = digits
    ex = res.examples
    for key, budget in (("ambient", DIGITS_EPS), ("normal", DIGITS_EPS),
                        ("in_eps", DIGITS_EPS), ("in2", 2 * DIGITS_EPS)):
        assert np.linalg.norm(ex[key] - X, axis=1).max() <= budget * (1 + TOL), key
    delta = (ex["normal"] - X).astype(np.float64)
    along = np.einsum("nij,ni->nj", manifold.tangent_basis(X), delta)
    norms = np.linalg.norm(delta, axis=1)
    assert np.all(np.linalg.norm(along, axis=1) <= TOL * np.maximum(norms, 1e-12))
