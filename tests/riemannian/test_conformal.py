"""ConformalKernelSVC: conformal factor, iterations, geometry, bad inputs, sklearn use."""

import warnings

import numpy as np
import pytest
import sklearn
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from sklearn.datasets import make_blobs
from sklearn.metrics.pairwise import polynomial_kernel as sk_poly
from sklearn.metrics.pairwise import rbf_kernel as sk_rbf
from sklearn.svm import SVC

from geolearn.datasets import make_sinusoid_boundary
from geolearn.riemannian import ConformalKernelSVC, KernelMetric, polynomial_kernel
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


@pytest.fixture(scope="module")
def data():
    return make_sinusoid_boundary(100, random_state=0)


def test_factor_kernel_and_decision_are_consistent(data):
    X, y = data
    clf = ConformalKernelSVC(gamma=2.0, n_refits=2).fit(X, y)
    assert len(clf.tau_) == len(clf.centers_) == 2
    assert len(clf.n_support_history_) == 3
    np.testing.assert_allclose(clf.tau_, [clf.sigma_ / np.sqrt(2)] * 2)
    np.testing.assert_allclose(clf.sigma_, 0.5)
    L = sum(logsumexp(-((X[:, None] - c[None]) ** 2).sum(-1) / (2 * t**2), axis=1)
            for c, t in zip(clf.centers_, clf.tau_))
    np.testing.assert_allclose(clf.log_factor_fit_, L, rtol=1e-12)
    np.testing.assert_allclose(clf.log_conformal_factor(X), L, rtol=1e-12)
    np.testing.assert_allclose(clf.conformal_factor(X), np.exp(L), rtol=1e-12)
    K = clf.kernel_matrix(X)
    np.testing.assert_allclose(K, np.exp(L[:, None] + L[None]) * sk_rbf(X, gamma=2.0), rtol=1e-12)
    dual = np.zeros(len(X))
    dual[clf.support_] = clf.dual_coef_[0]
    np.testing.assert_allclose(clf.decision_function(X), K @ dual + clf.intercept_[0],
                               atol=1e-10)
    np.testing.assert_array_equal(clf.support_vectors_, X[clf.support_])


def test_multiclass_uses_the_union_of_support_vectors():
    X, y = make_blobs(90, centers=3, cluster_std=1.0, random_state=0)
    clf = ConformalKernelSVC(n_refits=1).fit(X, y)
    assert clf.decision_function(X).shape == (90, 3)
    np.testing.assert_array_equal(np.unique(clf.predict(X)), [0, 1, 2])
    assert clf.score(X, y) > 0.95
    assert clf.centers_[0].shape[0] == clf.n_support_history_[0]


def test_tau_forms_and_other_kernels(data):
    X, y = data
    clf = ConformalKernelSVC(tau=[0.3, 0.2], n_refits=2).fit(X, y)
    assert clf.tau_ == [0.3, 0.2]
    poly = ConformalKernelSVC(kernel="poly", degree=2, gamma=0.5, coef0=1.0, n_refits=0).fit(X, y)
    np.testing.assert_allclose(
        poly.log_volume_element(X[:5]),
        KernelMetric(polynomial_kernel(0.5, 1.0, 2)).log_volume(torch.as_tensor(X[:5])),
        rtol=1e-10)
    auto = ConformalKernelSVC(kernel="poly", degree=2).fit(X, y)
    S = auto.centers_[0]
    dist = np.sqrt(((S[:, None] - S[None]) ** 2).sum(-1)) + np.diag(np.full(len(S), np.inf))
    np.testing.assert_allclose(auto.tau_[0], np.median(dist.min(1)))
    custom = ConformalKernelSVC(kernel=lambda A, B: sk_poly(A, B, degree=2, gamma=1.0),
                                n_refits=0).fit(X, y)
    np.testing.assert_allclose(custom.decision_function(X),
                               ConformalKernelSVC(kernel="poly", degree=2, gamma=1.0, coef0=1.0,
                                                  n_refits=0).fit(X, y).decision_function(X),
                               atol=1e-8)
    with pytest.raises(ValueError, match="built-in kernel"):
        custom.log_volume_element(X)


def test_probability_is_opt_in(data):
    X, y = data
    assert not hasattr(ConformalKernelSVC().fit(X, y), "predict_proba")


@pytest.mark.parametrize("n_refits", [0, 2])
def test_probability_is_platt_scaling_of_the_final_decision(data, n_refits):
    # scikit-learn 1.9 deprecates SVC(probability=True): the fit must not use it (the
    # FutureWarning is an error here), and the probabilities must be a sigmoid of the
    # final conformal SVC's decision values, increasing with them
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        clf = ConformalKernelSVC(n_refits=n_refits, probability=True, random_state=0).fit(X, y)
    Z = make_sinusoid_boundary(60, random_state=1)[0]
    proba, dec = clf.predict_proba(Z), clf.decision_function(Z)
    np.testing.assert_allclose(proba.sum(1), 1)
    order = np.argsort(dec)
    assert np.all(np.diff(proba[order, 1]) >= 0)
    logit = np.log(proba[:, 1] / proba[:, 0])
    slope, intercept = np.polyfit(dec, logit, 1)
    np.testing.assert_allclose(logit, slope * dec + intercept, atol=1e-8)
    assert slope > 0
    np.testing.assert_allclose(clf.predict_log_proba(Z), np.log(proba))
    again = ConformalKernelSVC(n_refits=n_refits, probability=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(Z), proba)


def test_probability_needs_two_samples_per_class(data):
    X, y = data
    y = y.copy()
    y[0] = 7
    with pytest.raises(ValueError, match="at least 2 samples of every class"):
        ConformalKernelSVC(probability=True).fit(X, y)


def test_parameter_errors(data):
    X, y = data
    cases = [
        (dict(n_refits=-1), "n_refits"),
        (dict(tau=0.0), "tau"),
        (dict(tau=[0.1, 0.2]), "one value per refit"),
        (dict(gamma=-1.0), "gamma"),
        (dict(gamma="big"), "gamma"),
        (dict(kernel="laplacian"), "kernel"),
        (dict(max_samples_precomputed=50), r"GiB"),
    ]
    for params, match in cases:
        with pytest.raises(ValueError, match=match):
            ConformalKernelSVC(**params).fit(X, y)
    with pytest.raises(ValueError, match="2 classes"):
        ConformalKernelSVC().fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError):
        ConformalKernelSVC().fit(np.array([["a", "b"]] * 4), [0, 1, 0, 1])


def test_far_points_warn_of_factor_underflow(data):
    X, y = data
    clf = ConformalKernelSVC(gamma=50.0).fit(X, y)
    with pytest.warns(RuntimeWarning, match="underflows"):
        clf.decision_function(X + 100.0)


def test_bad_inputs(data):
    X, y = data
    check_bad_inputs(ConformalKernelSVC(), X, y,
                     cases=("nan", "inf", "ndim", "few_samples", "unfitted"), min_samples=2)


@settings(max_examples=10)
@given(st.floats(0.2, 5.0), st.floats(0.05, 2.0))
def test_volume_is_largest_at_a_lone_support_vector(gamma, factor):
    """H.8: with tau = factor·σ/√d, log V peaks at the SV iff factor >= 1."""
    X = np.array([[0.0, 0.0], [1e-3, 0.0]])
    clf = ConformalKernelSVC(gamma=gamma, tau=1.0, n_refits=0).fit(X, [0, 1])
    sigma = clf.sigma_
    clf.centers_, clf.tau_ = [np.zeros((1, 2))], [factor * sigma / np.sqrt(2)]
    r = np.linspace(0, 3 * sigma, 2001)
    log_v = clf.log_volume_element(np.column_stack([r, np.zeros_like(r)]))
    assert (np.argmax(log_v) == 0) == (factor >= 1.0 - 1e-3) or abs(factor - 1.0) < 1e-2


def test_pipeline_gridsearch_pickle(data):
    X, y = data
    search = check_pipeline_gridsearch_pickle(
        ConformalKernelSVC(gamma=2.0), X, y,
        param_grid={"C": [1.0, 10.0], "n_refits": [0, 1, 2], "tau": ["auto", 0.3]})
    assert search.best_params_["n_refits"] in (0, 1, 2)



_MANY_REFITS = """
import time, warnings
from geolearn.datasets import make_sinusoid_boundary
from geolearn.riemannian import ConformalKernelSVC
X, y = make_sinusoid_boundary(200, random_state=0)
warnings.simplefilter("ignore")
for n_refits, gamma in [(18, "scale"), (20, "scale"), (20, 2.0)]:
    start = time.perf_counter()
    try:
        ConformalKernelSVC(n_refits=n_refits, gamma=gamma).fit(X, y).predict(X[:3])
        outcome = "fitted"
    except ValueError as exc:
        outcome = "ValueError: " + str(exc)
    print(n_refits, gamma, round(time.perf_counter() - start, 1), outcome, flush=True)
"""


def test_many_refits_on_a_degenerate_kernel_finish_quickly():
    """Regression: libsvm with max_iter=-1 looped for minutes on the degenerate conformal
    kernel of n_refits=18/20 refits (200-point sine data); now each fit ends in seconds,
    fitted or with a ValueError naming n_refits and the cure. libsvm's C loop ignores
    signals, hence a subprocess with a timeout. The timeout only tells a hang (each old fit
    ran past 120 s) from an end: it is generous, since a loaded CI runner is slow."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1")
    try:
        run = subprocess.run([sys.executable, "-c", _MANY_REFITS], capture_output=True,
                             text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"three ConformalKernelSVC fits did not finish in 300 s: {exc.stdout!r}")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 3, run.stdout
    for line in lines:
        n_refits, gamma, seconds, outcome = line.split(" ", 3)
        assert outcome == "fitted" or all(w in outcome for w in ("n_refits", "max_iter",
                                                                 "tau")), line


def test_a_positive_max_iter_warns_with_the_parameter_named(data):
    from sklearn.exceptions import ConvergenceWarning

    X, y = data
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        ConformalKernelSVC(gamma=2.0, max_iter=2).fit(X, y)


def test_zero_weight_is_dropping_the_row(data):
    X, y = data
    w = np.ones(len(X))
    w[::7] = 0
    kw = {"gamma": 2.0, "n_refits": 2, "probability": True, "random_state": 0}
    weighted = ConformalKernelSVC(**kw).fit(X, y, sample_weight=w)
    dropped = ConformalKernelSVC(**kw).fit(X[w > 0], y[w > 0])
    np.testing.assert_array_equal(weighted.n_support_history_, dropped.n_support_history_)
    np.testing.assert_allclose(weighted.decision_function(X), dropped.decision_function(X),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weighted.predict_proba(X), dropped.predict_proba(X), atol=1e-12)


def test_weights_reach_every_refit(data):
    X, y = data
    w = np.where(y == y[0], 10.0, 0.1)
    plain = ConformalKernelSVC(gamma=2.0, n_refits=1).fit(X, y)
    weighted = ConformalKernelSVC(gamma=2.0, n_refits=1).fit(X, y, sample_weight=w)
    assert weighted.n_support_history_ != plain.n_support_history_
    # the final fit is the weighted SVC on the final conformal kernel
    L = weighted.log_factor_fit_
    K = np.exp(L[:, None] + L[None, :]) * sk_rbf(X, X, gamma=2.0)
    svc = SVC(kernel="precomputed").fit(K, y, sample_weight=w)
    np.testing.assert_allclose(weighted.dual_coef_, svc.dual_coef_, rtol=1e-10)


def test_integer_weights_are_repeats_without_refits():
    X, y = make_blobs(40, centers=2, cluster_std=3.0, random_state=0)
    w = np.random.RandomState(0).randint(1, 4, len(X))
    weighted = ConformalKernelSVC(gamma=0.5, n_refits=0, tol=1e-10).fit(X, y, sample_weight=w)
    repeated = ConformalKernelSVC(gamma=0.5, n_refits=0, tol=1e-10).fit(
        X.repeat(w, axis=0), y.repeat(w))
    np.testing.assert_allclose(weighted.decision_function(X), repeated.decision_function(X),
                               atol=1e-8)


def test_negative_weights_are_refused(data):
    X, y = data
    with pytest.raises(ValueError, match="[Nn]egative"):
        ConformalKernelSVC().fit(X, y, sample_weight=-np.ones(len(X)))


def test_weighted_calibration_is_the_same_with_metadata_routing(data):
    X, y = data
    w = np.linspace(0.5, 2.0, len(X))
    kw = {"gamma": 2.0, "probability": True, "random_state": 0}
    plain = ConformalKernelSVC(**kw).fit(X, y, sample_weight=w).predict_proba(X)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = ConformalKernelSVC(**kw).fit(X, y, sample_weight=w).predict_proba(X)
    np.testing.assert_array_equal(routed, plain)
    assert not np.allclose(ConformalKernelSVC(**kw).fit(X, y).predict_proba(X), plain)


def _brute_force(clf, X, Z):
    """The paper's formulas in plain float64 broadcasts: ``L = Σ_t logsumexp_i(−|x − s_i|²/(2τ²))``,
    its gradient, and ``K̃ = C(x) C(y) K(x, y)`` with ``C = exp(L)`` and the rbf ``K``."""
    L, grad = np.zeros(len(Z)), np.zeros_like(Z)
    for centers, tau in zip(clf.centers_, clf.tau_):
        diff = Z[:, None] - centers[None]
        logits = -(diff**2).sum(-1) / (2 * tau**2)
        L_t = logsumexp(logits, axis=1)
        L += L_t
        grad -= (np.exp(logits - L_t[:, None])[:, :, None] * diff).sum(1) / tau**2
    L_fit = clf.log_factor_fit_
    K = np.exp(-clf.gamma_ * ((Z[:, None] - X[None]) ** 2).sum(-1))
    return L, grad, np.exp(L)[:, None] * np.exp(L_fit)[None] * K


@pytest.mark.parametrize("d", [1, 2, 13, 40])
def test_factor_kernel_and_decision_equal_the_brute_force_formulas(d):
    """The library route (cdist or scikit-learn's rbf kernel, a direct or scipy's shifted log-sum,
    row blocks, the refit kernel multiplied in place) equals the float64 formulas to rounding,
    near the support vectors and far from all of them (where c(x) underflows)."""
    X, y = make_blobs(160, n_features=d, centers=2, cluster_std=2.0, random_state=d)
    rng = np.random.default_rng(d)
    clf = ConformalKernelSVC(n_refits=2).fit(X, y)
    L, grad, K = _brute_force(clf, X, X)
    np.testing.assert_allclose(clf.log_factor_fit_, L, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(clf.conformal_factor(X), np.exp(L), rtol=1e-12)
    np.testing.assert_allclose(clf.kernel_matrix(X), K, rtol=1e-12)
    # the final SVC was fitted on the kernel the formulas give: refitting on it agrees
    svc = SVC(kernel="precomputed").fit(K, y)
    np.testing.assert_array_equal(clf.support_, svc.support_)
    np.testing.assert_allclose(clf.dual_coef_, svc.dual_coef_, rtol=1e-9, atol=1e-9)  # C = 1
    dual = np.zeros(len(X))
    dual[clf.support_] = clf.dual_coef_[0]
    decision = K @ dual + clf.intercept_[0]
    # a sum of terms of both signs: rounding is relative to the sum of their magnitudes
    np.testing.assert_allclose(clf.decision_function(X), decision, rtol=0,
                               atol=1e-12 * (np.abs(K) @ np.abs(dual)).max())
    s = clf.sigma_
    log_volume = d * (L - np.log(s)) + 0.5 * np.log1p(s**2 * (grad**2).sum(1))
    # logs: an absolute error is the relative error of the factor or volume
    np.testing.assert_allclose(clf.log_volume_element(X), log_volume, rtol=1e-12, atol=1e-12)
    # many rows (several row blocks), some far from every centre (the shifted log-sum)
    Z = np.concatenate([X.mean(0) + 2 * X.std(0) * rng.normal(size=(3000, d)),
                        X[:50] + 60 * clf.sigma_])
    L, grad, _ = _brute_force(clf, X, Z)
    assert (np.exp(L[-50:]) < 1e-200).all()
    np.testing.assert_allclose(clf.log_conformal_factor(Z), L, rtol=1e-12, atol=1e-14)
    log_volume = d * (L - np.log(s)) + 0.5 * np.log1p(s**2 * (grad**2).sum(1))
    np.testing.assert_allclose(clf.log_volume_element(Z), log_volume, rtol=1e-12, atol=1e-12)


def test_an_overflowing_refit_kernel_names_the_cure(data):
    X, y = data
    K = sk_rbf(X, gamma=2.0)
    K[0, 1] = K[1, 0] = np.inf
    with pytest.raises(ValueError, match="overflows float64 at refit 1 .*n_refits"):
        ConformalKernelSVC(n_refits=1)._fit_svc(K, y, 1, np.zeros(len(X)), None)


def test_fit_does_not_depend_on_the_memory_layout_of_X():
    """Regression: the factor's broadcast sums ran in another order on a Fortran-ordered X (a
    DataFrame's array, say), so the same data fitted to other last bits and support vectors."""
    X, y = make_blobs(300, n_features=10, centers=2, cluster_std=4.0, random_state=0)
    a = ConformalKernelSVC(n_refits=2).fit(X, y)
    b = ConformalKernelSVC(n_refits=2).fit(np.asfortranarray(X), y)
    np.testing.assert_array_equal(a.log_factor_fit_, b.log_factor_fit_)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.decision_function(X),
                                  a.decision_function(np.asfortranarray(X)))


def test_a_callable_kernel_s_array_is_not_rescaled_in_place(data):
    """The refit kernel is rescaled in place: a Gram matrix the callable keeps must not be."""
    X, y = data
    gram = sk_rbf(X, gamma=2.0)
    kept = gram.copy()
    clf = ConformalKernelSVC(kernel=lambda A, B: gram, tau=0.35, n_refits=2).fit(X, y)
    clf.kernel_matrix(X)
    np.testing.assert_array_equal(gram, kept)
    reference = ConformalKernelSVC(gamma=2.0, tau=0.35, n_refits=2).fit(X, y)
    np.testing.assert_allclose(clf.dual_coef_, reference.dual_coef_, rtol=1e-9, atol=1e-12)
