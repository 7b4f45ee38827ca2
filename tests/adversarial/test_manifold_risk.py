"""The manifold decomposition of adversarial risk: attacks, risks, scorers, training, data.

Closed forms used: a linear score ``s = w.x + b`` on a flat manifold (margins against
``eps ||w||``, ``eps ||P_N w||``, ``2 eps ||P_T w||``), and the unit circle cut by the
line x1 = 0 (chord distance to the boundary points (0, +-1)).
"""

import pickle
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from geolearn.adversarial import (
    ManifoldAdversarialClassifier,
    RiskDecomposition,
    in_manifold_attack,
    make_pessimistic_example,
    make_risk_scorer,
    normal_attack,
    pgd,
    risk_curve,
    risk_decomposition,
)
from geolearn.datasets import make_circle_classification, make_sine_plane_classification
from geolearn.exceptions import GeolearnWarning
from geolearn.manifold import AffineManifold, LatentManifold, LocalPCAManifold, SphereManifold
from tests.helpers import check_bad_inputs


def _linear(w, b=0.0):
    """Binary score ``w.x + b`` as a torch module (logits (0, s))."""
    lin = torch.nn.Linear(len(w), 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(np.asarray(w)[None], dtype=torch.float32))
        lin.bias.fill_(b)
    return lin


def _flat_case(n=300, seed=0, w_T=(1.0, 0.5), c=0.3, b=0.2):
    """Points on a random 2-plane of R^5 and a linear score with a normal component ``c``."""
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.normal(size=(5, 5)))[0]
    T = Q[:, :2]
    X = (rng.uniform(-2, 2, (n, 2)) @ T.T).astype(np.float32)
    w = T @ np.asarray(w_T) + c * Q[:, 2]
    s = X.astype(np.float64) @ w + b
    return _linear(w, b), AffineManifold(T), X, (s > 0).astype(int), np.abs(s), w


def _far(m, *thresholds):
    """Rows whose margin is not within 1e-3 (relative) of any threshold."""
    return np.all([np.abs(m - t) > 1e-3 * max(t, 1e-3) for t in thresholds], axis=0)


def _checksum(module):
    return (sum(float(p.detach().double().sum()) for p in module.parameters()),
            [m.training for m in module.modules()], [p.requires_grad for p in module.parameters()])


# ---------------------------------------------------------------- attacks

#: the "is there an adversarial point in the ball" search (the former pgd_attack's defaults)
SEARCH = dict(norm="l2", n_steps=40, random_start=False, stop_on_success=True,
              return_success=True, clip=None, batch_size=512)


def search(model, X, y, **kwargs):
    return pgd(model, X, y, **{**SEARCH, **kwargs})


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_pgd_search_success_is_the_linear_closed_form(norm):
    model, _, X, y, m, w = _flat_case()
    eps = 0.3
    X_adv, ok = search(model, X, y, epsilon=eps, norm=norm)
    reach = eps * (np.linalg.norm(w) if norm == "l2" else np.abs(w).sum())
    far = _far(m, reach)
    np.testing.assert_array_equal(ok[far], (m < reach)[far])
    d = X_adv.astype(np.float64) - X
    size = np.linalg.norm(d, axis=1) if norm == "l2" else np.abs(d).max(1)
    assert size.max() <= eps * (1 + 1e-5)


def test_pgd_search_rows_are_independent_of_batch_and_order():
    """A row's result depends only on the row, the model and random_state."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    X = np.random.default_rng(0).normal(size=(40, 2)).astype(np.float32)
    y = np.arange(40) % 3
    a, ok_a = search(net, X, y, epsilon=0.3, n_restarts=3, n_steps=5, random_state=1)
    perm = np.random.default_rng(1).permutation(40)
    b, ok_b = search(net, X[perm], y[perm], epsilon=0.3, n_restarts=3, n_steps=5,
                     random_state=1, batch_size=7)
    np.testing.assert_allclose(b, a[perm], atol=1e-6)
    np.testing.assert_array_equal(ok_b, ok_a[perm])


def test_margin_loss_and_restarts_find_what_a_flat_start_misses():
    """Theorem 2's score is flat at t = 0: restart 0 has no gradient, random restarts move."""
    model, _, X, y, _ = make_pessimistic_example(n=10, epsilon=0.2, n_samples=50)
    _, ok0 = search(model, X, y, epsilon=0.2, loss="margin")
    _, ok = search(model, X, y, epsilon=0.2, loss="margin", n_restarts=5, random_state=0)
    assert ok0.sum() == 0 and ok.sum() > 0


@pytest.mark.parametrize("method", ["pgd", "grid"])
def test_normal_attack_is_the_linear_closed_form_and_stays_normal(method):
    model, manifold, X, y, m, w = _flat_case(c=0.6)
    eps = 0.3
    if method == "grid":  # the grid needs codimension <= 2: use a plane of R^3
        rng = np.random.default_rng(0)
        T = np.linalg.qr(rng.normal(size=(3, 2)))[0]
        n = np.cross(T[:, 0], T[:, 1])
        X = (rng.uniform(-2, 2, (300, 2)) @ T.T).astype(np.float32)
        w = T @ [1.0, 0.5] + 0.6 * n
        s = X.astype(np.float64) @ w + 0.2
        model, manifold, y, m = _linear(w, 0.2), AffineManifold(T), (s > 0).astype(int), abs(s)
    Tb = manifold.tangent_basis(X)
    X_adv, ok = normal_attack(model, X, y, epsilon=eps, manifold=manifold, method=method,
                              grid_step=0.001)
    c = np.linalg.norm(w - np.einsum("ij,kj,k->i", Tb[0], Tb[0], w))
    far = _far(m, eps * c)
    np.testing.assert_array_equal(ok[far], (m <= eps * c)[far])
    d = X_adv.astype(np.float64) - X
    assert np.linalg.norm(d, axis=1).max() <= eps * (1 + 1e-5)
    assert np.abs(np.einsum("nij,ni->nj", Tb, d)).max() <= 1e-5


def _circle_chord(X, rho):
    """In-manifold closed form on the unit circle for y = 1[x1 > 0]: chord to (0, +-1) <= rho."""
    theta = np.arctan2(X[:, 1], X[:, 0])
    delta = np.minimum(np.abs(theta - np.pi / 2), np.abs(theta + np.pi / 2))
    return 2 * np.sin(np.minimum(delta, np.pi - delta) / 2)


@pytest.mark.parametrize("method", ["grid", "tangent_pgd", "project"])
def test_in_manifold_attack_on_the_circle_is_the_chord_closed_form(method):
    X, y = make_circle_classification(300, random_state=0)
    model, rho = _linear([1.0, 0.0]), 0.3
    X_adv, ok = in_manifold_attack(model, X, y, manifold=SphereManifold(), epsilon=rho,
                                   method=method, grid_step=0.001)
    chord = _circle_chord(X, rho)
    far = np.abs(chord - rho) > 0.01
    np.testing.assert_array_equal(ok[far], (chord <= rho)[far])
    assert np.linalg.norm(X_adv - X, axis=1).max() <= rho * (1 + 1e-5)
    np.testing.assert_allclose(np.linalg.norm(X_adv[ok], axis=1), 1, atol=1e-5)


def test_latent_in_manifold_attack_respects_the_decoded_budget():
    torch.manual_seed(0)
    enc = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    dec = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    X, y = make_circle_classification(60, random_state=0)
    X_adv, ok = in_manifold_attack(_linear([1.0, 0.0]), X, y, epsilon=0.2,
                                   manifold=LatentManifold(enc, dec), method="latent",
                                   n_steps=10)
    assert np.linalg.norm(X_adv - X, axis=1).max() <= 0.2 * (1 + 1e-5)
    assert ok[X[:, 0] * (2 * y - 1) <= 0].all()  # misclassified rows count


# ---------------------------------------------------------------- the decomposition


def test_flat_linear_decomposition_matches_every_closed_form():
    """The per-sample indicators of Section 2's linear case, and the pointwise bound."""
    model, manifold, X, y, m, w = _flat_case(n=400)
    eps = 0.3
    r = risk_decomposition(model, X, y, manifold=manifold, epsilon=eps, attack="pgd",
                           n_nnr_probes=4, random_state=0)
    T = manifold.tangent_basis(X[:1])[0]
    a = np.linalg.norm(T.T @ w)
    c = np.sqrt(max(w @ w - a * a, 0.0))
    closed = dict(adv=m < eps * np.linalg.norm(w), nor=m <= eps * c, in2=m <= 2 * eps * a,
                  A=m > eps * c, C=m > 2 * eps * a)
    closed["nnr"] = closed["A"] & closed["C"] & (m <= 2 * eps * a + eps * c)
    far = _far(m, eps * np.linalg.norm(w), eps * c, 2 * eps * a, 2 * eps * a + eps * c)
    for name, expected in closed.items():
        np.testing.assert_array_equal(r.indicators[name][far], expected[far], err_msg=name)
    assert r.pointwise_violations == 0 and r.bound_holds
    assert r.rhs == pytest.approx(r.std_risk + r.normal_risk + r.in_manifold_risk + r.nnr)
    assert r.rhs_without_nnr == pytest.approx(r.rhs - r.nnr)


def test_decomposition_leaves_the_model_unchanged_and_examples_in_budget():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Dropout(0.2),
                              torch.nn.Linear(16, 2)).train()
    net[0].bias.requires_grad_(False)
    before = _checksum(net)
    X, y = make_circle_classification(80, random_state=0)
    r = risk_decomposition(net, X, y, manifold=SphereManifold(), epsilon=0.2,
                           return_examples=True, random_state=0)
    assert _checksum(net) == before
    ex = r.examples
    for name, rho in [("ambient", 0.2), ("normal", 0.2), ("in_eps", 0.2), ("in2", 0.4)]:
        assert np.linalg.norm(ex[name] - X, axis=1).max() <= rho * (1 + 1e-5), name
    for name in ("in_eps", "in2"):
        np.testing.assert_allclose(np.linalg.norm(ex[name], axis=1), 1, atol=1e-5)
    radial = ex["normal"] - X  # normal perturbations on the circle are radial
    assert np.abs(radial[:, 0] * X[:, 1] - radial[:, 1] * X[:, 0]).max() <= 1e-5
    # the indicators nest as the definitions say
    I = r.indicators
    assert not (I["std"] & ~I["in_eps"]).any() and not (I["in_eps"] & ~I["in2"]).any()
    assert not (I["nnr"] & ~(I["A"] & I["C"])).any()


def test_rows_are_independent_of_order_and_batch_size():
    X, y = make_circle_classification(60, random_state=1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    kw = dict(manifold=SphereManifold(), epsilon=0.2, attack="tangent_pgd", n_restarts=2,
              n_steps=10, n_nnr_probes=3, random_state=3)
    a = risk_decomposition(net, X, y, **kw).indicators
    perm = np.random.default_rng(0).permutation(60)
    b = risk_decomposition(net, X[perm], y[perm], batch_size=7, **kw).indicators
    for name in a:
        np.testing.assert_array_equal(b[name], a[name][perm], err_msg=name)


def test_grid_rows_do_not_depend_on_the_other_rows():
    """The chart grid of an unbounded plane is a fixed lattice: a subset gives the same rows.

    (B and NNR may use the other rows by definition: the Corollary 1 plug-in.)
    """
    X, y = make_sine_plane_classification(40, random_state=0)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    kw = dict(manifold=AffineManifold(np.eye(3)[:, :2]), epsilon=0.3, attack="grid",
              nnr="sample", random_state=0)
    full = risk_decomposition(net, X, y, **kw).indicators
    part = risk_decomposition(net, X[5:12], y[5:12], **kw).indicators
    for name in ("std", "adv", "ambient", "nor", "in_eps", "in2", "A", "C"):
        np.testing.assert_array_equal(part[name], full[name][5:12], err_msg=name)


def test_images_and_flat_rows_with_image_shape_agree():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 2), torch.nn.Flatten(),
                              torch.nn.Linear(2, 2))
    rng = np.random.default_rng(0)
    T = np.linalg.qr(rng.normal(size=(4, 2)))[0]
    X = (rng.uniform(-1, 1, (20, 2)) @ T.T).astype(np.float32)
    y = np.arange(20) % 2
    kw = dict(manifold=AffineManifold(T), epsilon=0.2, attack="tangent_pgd", nnr="sample",
              random_state=0)
    flat = risk_decomposition(net, X, y, image_shape=(1, 2, 2), **kw)
    imgs = risk_decomposition(net, X.reshape(20, 1, 2, 2), y, **kw)
    for name in flat.indicators:
        np.testing.assert_array_equal(flat.indicators[name], imgs.indicators[name])


def test_black_boxes_need_the_grid():
    X, y = make_circle_classification(60, random_state=0)
    svm = SVC(kernel="linear").fit(X, y)  # a black box (LogisticRegression is converted)
    with pytest.raises(TypeError, match="attack='grid'"):
        risk_decomposition(svm, X, y, manifold=SphereManifold(), epsilon=0.1)
    r = risk_decomposition(svm, X, y, manifold=SphereManifold(), epsilon=0.1, attack="grid")
    # a linear boundary through the centre: x1 = 0 up to the fitted intercept
    assert r.pointwise_violations == 0 and 0 < r.in_manifold_risk < 0.3


# ---------------------------------------------------------------- bad inputs


def _rd(**kw):
    kw.setdefault("nnr", "sample")
    return RiskDecomposition(_linear([1.0, 0.0]), SphereManifold(), n_steps=3, **kw)


def test_bad_inputs_follow_the_shared_contract():
    X, y = make_circle_classification(30, random_state=0)
    check_bad_inputs(_rd(), X, y, cases=("nan", "inf", "ndim"))


@given(st.one_of(st.floats(max_value=0.0), st.just(np.nan), st.just(np.inf)))
@settings(max_examples=10)
def test_non_positive_or_non_finite_epsilon_is_refused(eps):
    X, y = make_circle_classification(5, random_state=0)
    with pytest.raises(ValueError, match="epsilon"):
        risk_decomposition(_linear([1.0, 0.0]), X, y, manifold=SphereManifold(), epsilon=eps)


class _BadTangents(SphereManifold):
    def tangent_basis(self, X):
        return 2 * super().tangent_basis(X)


@pytest.mark.parametrize("kw, match", [
    (dict(in_manifold_factor=0.0), "in_manifold_factor"),
    (dict(norm="l1"), "norm"),
    (dict(n_steps=0), "n_steps"),
    (dict(attack="magic"), "attack"),
    (dict(nnr="maybe"), "nnr"),
    (dict(grid_step=-1.0), "grid_step"),
    (dict(manifold=SphereManifold(ambient_dim=3)), "ambient_dim"),
    (dict(manifold=_BadTangents()), "orthonormal"),
    (dict(manifold=AffineManifold([[1.0], [0.0]]), attack="grid", grid_step=1e-9,
          X=np.c_[np.linspace(-1, 1, 6), np.zeros(6)]), "evaluations"),
    (dict(y=[0, 1]), "one label per row"),
    (dict(y=[0, 1, 2, 0, 1, 2]), r"unseen by the classifier"),
    (dict(image_shape=(1, 3, 1)), "image_shape"),
    (dict(X=np.array([[2.0, 0.0]] * 6)), "must lie on the manifold"),
])
def test_bad_arguments_raise_clear_errors(kw, match):
    X, y = make_circle_classification(6, random_state=0)
    X, y = kw.pop("X", X), kw.pop("y", y)
    kw.setdefault("manifold", SphereManifold())
    with pytest.raises(ValueError, match=match):
        risk_decomposition(_linear([1.0, 0.0]), X, y, epsilon=0.1, **kw)


def test_grid_needs_low_dimension_and_codimension():
    rng = np.random.default_rng(0)
    X4 = SphereManifold(ambient_dim=4).sample(5, random_state=0)
    with pytest.raises(ValueError, match="intrinsic_dim <= 2"):
        risk_decomposition(_linear(np.ones(4)), X4, np.ones(5, int),
                           manifold=SphereManifold(ambient_dim=4), epsilon=0.1, attack="grid")
    T = np.eye(5)[:, :2]
    X5 = rng.uniform(-1, 1, (5, 2)) @ T.T
    with pytest.raises(ValueError, match="codimension"):
        risk_decomposition(_linear(np.ones(5)), X5, np.ones(5, int), manifold=AffineManifold(T),
                           epsilon=0.1, attack="grid")


def test_unfitted_estimators_and_manifolds_raise_not_fitted():
    X, y = make_circle_classification(6, random_state=0)
    with pytest.raises(NotFittedError):
        risk_decomposition(MLPClassifier(), X, y, manifold=SphereManifold())
    with pytest.raises(NotFittedError):
        risk_decomposition(_linear([1.0, 0.0]), X, y, manifold=LocalPCAManifold(1))
    with pytest.raises(NotFittedError):
        _rd().score(X, y)


def test_warnings_say_what_the_bound_no_longer_covers():
    X, y = make_circle_classification(20, random_state=0)
    model = _linear([1.0, 0.0])
    with pytest.warns(GeolearnWarning, match="reach"):
        r = risk_decomposition(model, X, y, manifold=SphereManifold(), epsilon=1.0,
                               nnr="sample", n_steps=3)
    assert "eps >= reach" in r.flags
    with pytest.warns(GeolearnWarning, match="nnr='none'"):
        r = risk_decomposition(model, X, y, manifold=SphereManifold(), nnr="none", n_steps=3)
    assert "nnr not estimated" in r.flags and r.nnr == 0
    with pytest.warns(GeolearnWarning, match="heuristic"):
        r = risk_decomposition(model, X, y, manifold=SphereManifold(), norm="linf",
                               nnr="sample", n_steps=3)
    assert "linf heuristic" in r.flags
    noisy = X + 0.01 * np.random.default_rng(0).normal(size=X.shape)
    with pytest.warns(GeolearnWarning, match="offset convention"):
        risk_decomposition(model, noisy, y, manifold=LocalPCAManifold(1, 5).fit(noisy),
                           nnr="sample", n_steps=3)


# ---------------------------------------------------------------- scikit-learn integration


def test_scorer_in_pipeline_gridsearch_and_multimetric():
    X, y = make_circle_classification(120, random_state=0)
    pipe = make_pipeline(StandardScaler(), MLPClassifier((8,), max_iter=500, random_state=0))
    scoring = {"normal": make_risk_scorer("normal", manifold=SphereManifold(), epsilon=0.1,
                                          n_steps=5),
               "adv": make_risk_scorer("adversarial", manifold=SphereManifold(), epsilon=0.1,
                                       n_steps=5)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # sklearn's ConvergenceWarning
        search = GridSearchCV(pipe, {"mlpclassifier__alpha": [1e-4, 1e-2]}, cv=2,
                              scoring=scoring, refit="adv", error_score="raise").fit(X, y)
    res = search.cv_results_
    assert np.all((0 <= res["mean_test_adv"]) & (res["mean_test_adv"] <= 1))
    # the scorer is 1 - risk of the fitted pipeline (converted exactly to torch)
    r = risk_decomposition(search.best_estimator_, X, y, manifold=SphereManifold(),
                           epsilon=0.1, n_steps=5, nnr="sample")
    assert scoring["adv"](search.best_estimator_, X, y) == pytest.approx(1 - r.adv_risk)
    assert pickle.loads(pickle.dumps(scoring["adv"]))(search.best_estimator_, X, y) == \
        pytest.approx(1 - r.adv_risk)
    with pytest.raises(ValueError, match="kind"):
        make_risk_scorer("typo", manifold=SphereManifold(), epsilon=0.1)


def _scalars(result):
    """The scalar risks and flags of a risk_decomposition result."""
    return {k: v for k, v in result.items() if k not in ("indicators", "examples")}


def test_risk_decomposition_estimator_clone_pickle_and_curve():
    X, y = make_circle_classification(60, random_state=0)
    rd = _rd(epsilon=0.2, random_state=0)
    fitted = clone(rd).fit(X, y)
    again = pickle.loads(pickle.dumps(rd)).fit(X, y)
    assert _scalars(fitted.result_) == _scalars(again.result_)
    assert fitted.adv_risk_ == fitted.result_.adv_risk and fitted.n_features_in_ == 2
    assert fitted.score(X, y) == pytest.approx(1 - fitted.adv_risk_)
    curve = risk_curve(rd.estimator, X, y, manifold=SphereManifold(), epsilons=[0.1, 0.2],
                       nnr="sample", n_steps=3, random_state=0)
    assert [r.epsilon for r in curve] == [0.1, 0.2]
    assert _scalars(curve[1]) == _scalars(fitted.result_)


# ---------------------------------------------------------------- training


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


@pytest.mark.parametrize("adversary", ["ambient", "normal", "in_manifold"])
def test_training_loss_is_the_mean_of_clean_and_adversarial_losses(adversary):
    X, y = make_circle_classification(40, random_state=0)
    clf = ManifoldAdversarialClassifier(_mlp(), adversary=adversary, manifold=SphereManifold(),
                                        adv_epsilon=0.3, max_epochs=2).fit(X, y)
    net = clf.net_
    Xt, yt = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
    clf.module_.train()
    clean = net.get_loss(net.infer(Xt), yt, X=Xt, training=False)
    total = net.get_loss(net.infer(Xt), yt, X=Xt, training=True)
    adv = clf.history_[-1, "batches", -1]["adv_loss"]
    assert clf.module_.training
    assert float(total.detach()) == pytest.approx((float(clean.detach()) + adv) / 2, rel=1e-5)
    assert adv > float(clean.detach())  # the adversary raised the loss


def test_classifier_defaults_validation_clone_and_pickle():
    X, y = make_circle_classification(40, random_state=0)
    clf = ManifoldAdversarialClassifier(_mlp(), max_epochs=3)
    params = clf.get_params()
    assert (params["lr"], params["batch_size"], params["train_split"]) == (0.1, -1, None)
    assert params["optimizer"] is torch.optim.SGD
    fitted = clf.fit(X, y)
    loaded = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))
    assert clone(clf).get_params()["adversary"] == "none"
    with pytest.raises(ValueError, match="manifold"):
        clone(clf).set_params(adversary="normal").fit(X, y)
    with pytest.raises(ValueError, match="adversary"):
        clone(clf).set_params(adversary="wild").fit(X, y)
    with pytest.raises(ValueError, match="adv_epsilon"):
        clone(clf).set_params(adversary="ambient", adv_epsilon=0).fit(X, y)


# ---------------------------------------------------------------- datasets and Theorem 2


def test_datasets_follow_the_paper_labels():
    X, y = make_circle_classification(200, boundary="double", random_state=0)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1, atol=1e-6)
    np.testing.assert_array_equal(y, X[:, 0] * X[:, 1] > 0)
    X, y = make_sine_plane_classification(200, boundary="double", random_state=0)
    assert (np.abs(X[:, :2]) <= np.pi).all() and (X[:, 2] == 0).all()
    s = X[:, 0].astype(float) - np.sin(X[:, 1].astype(float))
    np.testing.assert_array_equal(y, s * X[:, 1] > 0)
    with pytest.raises(ValueError, match="boundary"):
        make_circle_classification(5, boundary="triple")


def test_pessimistic_score_has_the_theorem_2_shape():
    model, manifold, X, y, exact = make_pessimistic_example(n=10, epsilon=0.2, ramp=1e-4)
    g = model.g(torch.as_tensor(X[:, 0])).numpy()
    in_b = np.isclose(g, 0.1, atol=1e-6)
    assert in_b.mean() == pytest.approx(exact["normal"], abs=0.003)  # n |B_i| = 1/n
    assert np.isclose(g[~in_b], 1, atol=1e-6).mean() > 0.99
    assert exact == {"std": 0.0, "in_2eps": 0.0, "normal": 0.1, "adv": 1.0, "nnr": 0.9}
    with pytest.raises(ValueError, match="sqrt"):
        make_pessimistic_example(n=2, epsilon=0.2)
    with pytest.raises(ValueError, match="1/2"):
        make_pessimistic_example(n=10, epsilon=0.6)


def test_tangent_bases_linearise_the_manifold():
    """Known tangents give the tangent-plane risks: on a flat manifold, the same closed forms."""
    model, manifold, X, y, m, w = _flat_case(n=200)
    eps = 0.3
    kw = dict(epsilon=eps, n_nnr_probes=4, random_state=0)
    with_planes = risk_decomposition(model, X, y, manifold=None,
                                     tangent_bases=manifold.tangent_basis(X), **kw)
    assert "linearised manifold" in with_planes.flags
    T = manifold.tangent_basis(X[:1])[0]
    a = np.linalg.norm(T.T @ w)
    c = np.sqrt(max(w @ w - a * a, 0.0))
    far = _far(m, eps * c, 2 * eps * a, eps * np.linalg.norm(w), 2 * eps * a + eps * c)
    I = with_planes.indicators
    np.testing.assert_array_equal(I["in2"][far], (m <= 2 * eps * a)[far])
    np.testing.assert_array_equal(I["nor"][far], (m <= eps * c)[far])
    nnr = (m > eps * c) & (m > 2 * eps * a) & (m <= 2 * eps * a + eps * c)
    np.testing.assert_array_equal(I["nnr"][far], nnr[far])
    assert with_planes.pointwise_violations == 0
    with pytest.raises(ValueError, match="orthonormal"):
        risk_decomposition(model, X, y, manifold=None, tangent_bases=2 * manifold.tangent_basis(X),
                           **kw)


def test_nearly_orthonormal_user_bases_are_accepted_and_made_exact():
    """float32 bases pass the 1e-4 check; the attack then uses their exact orthonormalisation."""
    model, manifold, X, y, m, w = _flat_case(n=50, c=0.8)
    T = manifold.tangent_basis(X) * (1 + 4e-5)
    X_adv, ok = normal_attack(model, X, y, epsilon=0.3, tangent_bases=T)
    d = X_adv.astype(np.float64) - X
    assert ok.any()
    assert np.abs(np.einsum("nij,ni->nj", manifold.tangent_basis(X), d)).max() <= 1e-5
