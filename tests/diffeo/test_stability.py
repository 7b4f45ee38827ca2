"""DiffeoStability, relative_stability, the scorer and the probing rules."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from torch import nn

from geolearn.datasets import load_digits_images
from geolearn.diffeo import (
    DiffeoStability,
    StabilityWarning,
    log_average,
    log_std,
    make_stability_scorer,
    relative_stability,
    subspace_relative_stability,
)
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits_images(upsample=2, return_X_y=True)
    return X[:400], y[:400]


def small_cnn(bn=False):
    torch.manual_seed(0)
    layers = [nn.Conv2d(1, 4, 3, padding=1)]
    if bn:
        layers.append(nn.BatchNorm2d(4))
    layers += [nn.ReLU(), nn.Dropout(0.5), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
               nn.Linear(16, 10)]
    return nn.Sequential(*layers)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        return fn(*args, **kwargs)


def test_log_average_and_std():
    assert log_average([0.01, 1.0]) == pytest.approx(0.1)
    R, D, G = np.array([0.5, 2.0]), np.array([0.1, 0.4]), np.array([0.2, 0.2])
    assert log_average(R) == pytest.approx(log_average(D) / log_average(G))
    assert log_std([0.01, 1.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="> 0"):
        log_std([0.0, 1.0])


def test_result_does_not_depend_on_batch_size_and_is_seeded(digits):
    X, _ = digits
    net = small_cnn()
    ref = quiet(relative_stability, net, X[:150], random_state=0, batch_size=150)
    for bs in (13, 64):
        res = quiet(relative_stability, net, X[:150], random_state=0, batch_size=bs)
        assert res.R == pytest.approx(ref.R, rel=1e-5)
        assert res.D == pytest.approx(ref.D, rel=1e-5)
    again = quiet(relative_stability, net, X[:150], random_state=0)
    assert again.R == ref.R and again.G == ref.G
    other = quiet(relative_stability, net, X[:150], random_state=1)
    assert other.R != ref.R
    # R = D / G, per repeat and for the log-averages
    res = quiet(relative_stability, net, X[:150], random_state=0, n_repeats=3)
    np.testing.assert_allclose(res.R_repeats, res.D_repeats / res.G_repeats)
    assert res.R == pytest.approx(res.D / res.G)
    assert res.R == pytest.approx(np.exp(np.log(res.R_repeats).mean()))
    assert res.log10_R_std == pytest.approx(np.log10(res.R_repeats).std())
    assert res.num.shape == res.den.shape == (150,)


def test_sampled_displacement_hits_delta(digits):
    X, _ = digits
    res = quiet(relative_stability, small_cnn(), X, delta=1.0, c=3, random_state=0,
                n_diffeo=3)
    assert res.T == pytest.approx(0.00726, abs=1e-5)
    assert res.delta_empirical == pytest.approx(1.0, rel=0.05)
    assert 0 <= res.frac_non_diffeo < 0.5


def test_model_mode_and_batchnorm_buffers_are_restored(digits):
    X, _ = digits
    net = small_cnn(bn=True)
    net.train()
    net(torch.as_tensor(X[:64]))  # non-trivial running statistics
    buffers = {k: v.clone() for k, v in net.state_dict().items()}
    eval_R = quiet(relative_stability, net, X[:120], random_state=0).R
    batch_R = quiet(relative_stability, net, X[:120], random_state=0, bn_mode="batch").R
    assert net.training and all(m.training for m in net.modules())
    for k, v in net.state_dict().items():
        assert torch.equal(v, buffers[k]), k
    assert eval_R != pytest.approx(batch_R, rel=1e-3)
    # eval mode: dropout off, so repeated measurements agree
    assert quiet(relative_stability, net, X[:120], random_state=0).R == eval_R


def test_bn_mode_batch_normalises_over_the_whole_probe_set():
    """More probes than the adapter's chunk of 1024: one set of batch statistics for all."""
    import copy

    from geolearn.diffeo._probe import Probe

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), nn.BatchNorm1d(4))
    X = torch.rand(1500, 1, 4, 4, dtype=torch.float64)
    out = Probe(net, "module", bn_mode="batch")(X, (1, 4, 4))["output"]
    expected = copy.deepcopy(net).train()(X.float()).detach().numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert not net[2].running_mean.any()  # the running statistics are untouched


def test_bn_mode_batch_without_batchnorm_warns(digits):
    X, _ = digits
    with pytest.warns(StabilityWarning, match="no BatchNorm"):
        relative_stability(small_cnn(), X[:120], bn_mode="batch", random_state=0)


def test_bn_mode_auto_follows_the_papers_protocol(digits):
    """Appendix E: at initialisation batch norms use batch statistics (running statistics of
    0 and 1 would not normalise); a net whose statistics were trained is probed in eval."""
    X, _ = digits
    torch.manual_seed(0)
    net = small_cnn(bn=True)
    auto = quiet(relative_stability, net, X[:120], random_state=0)
    assert auto.bn_mode == "batch"
    assert auto.R == quiet(relative_stability, net, X[:120], random_state=0, bn_mode="batch").R
    assert auto.R != pytest.approx(
        quiet(relative_stability, net, X[:120], random_state=0, bn_mode="eval").R, rel=1e-3)
    net.train()
    net(torch.as_tensor(X[:64]))  # running statistics move: a trained net
    net.eval()
    auto = quiet(relative_stability, net, X[:120], random_state=0)
    assert auto.bn_mode == "eval"
    assert auto.R == quiet(relative_stability, net, X[:120], random_state=0, bn_mode="eval").R
    assert relative_stability(small_cnn(), X[:120], random_state=0).bn_mode == "eval"


def test_bn_mode_auto_uses_batch_statistics_only_where_running_ones_are_untouched():
    from geolearn.diffeo._probe import Probe

    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), nn.BatchNorm1d(4), nn.Linear(4, 3),
                        nn.BatchNorm1d(3))
    net[2].running_mean.fill_(0.5)
    X = torch.rand(50, 1, 4, 4, dtype=torch.float64)
    probe = Probe(net, "module")
    assert probe._norms == [net[4]] and probe.bn_mode_ == "batch"
    out = probe(X, (1, 4, 4))["output"]
    with torch.no_grad():
        h = net[3](net[2].eval()(net[1](net[0](X.float()))))
        expected = (h - h.mean(0)) / torch.sqrt(h.var(0, unbiased=False) + net[4].eps)
        expected = expected * net[4].weight + net[4].bias
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-5)
    assert net[4].running_mean.count_nonzero() == 0 and bool((net[4].running_var == 1).all())


def test_torch_layers_and_unknown_layer(digits):
    X, _ = digits
    net = small_cnn()
    res = quiet(relative_stability, net, X[:120], layers=["0", "4"], random_state=0)
    assert set(res.layers) == {"output", "0", "4"}
    assert res.layers["output"].R == res.R
    # the input-linear first conv layer is near R = 1 (per-sample equal norms, equivariance)
    assert 0.3 < res.layers["0"].R < 3
    with pytest.raises(ValueError, match="valid names"):
        quiet(relative_stability, net, X[:120], layers=["conv9"])


def test_pipeline_steps_as_layers(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)).fit(Xf, y)
    res = quiet(relative_stability, pipe, Xf, image_shape=(16, 16), layers=["standardscaler"],
                random_state=0)
    assert res.response == "decision_function"
    assert set(res.layers) == {"output", "standardscaler"}


def test_response_resolution(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    kw = dict(image_shape=(16, 16), random_state=0)
    lr = LogisticRegression(max_iter=100).fit(Xf, y)
    assert quiet(DiffeoStability(lr, **kw).fit, Xf).response_ == "decision_function"
    mlp = MLPClassifier((8,), max_iter=20, random_state=0).fit(Xf, y)
    assert quiet(DiffeoStability(mlp, **kw).fit, Xf).response_ == "clr_proba"
    knn = KNeighborsRegressor().fit(Xf, y.astype(float))
    assert quiet(DiffeoStability(knn, **kw).fit, Xf).response_ == "predict"
    assert quiet(DiffeoStability(small_cnn(), **kw).fit, X).response_ == "module"
    with pytest.raises(ValueError, match="no decision_function"):
        quiet(DiffeoStability(mlp, response="decision_function", **kw).fit, Xf)
    with pytest.raises(ValueError, match="module"):
        quiet(DiffeoStability(lr, response="module", **kw).fit, Xf)


class LabelsOnly(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.zeros(len(X), dtype=int)


def test_classifier_with_labels_only_is_refused(digits):
    X, y = digits
    with pytest.raises(ValueError, match="class labels"):
        quiet(DiffeoStability(LabelsOnly()).fit, X, y)


def test_clr_proba_of_softmax_is_centred_logits(digits):
    """For a softmax MLP, clr(p) = logits - mean(logits): same R as the torch logits."""
    X, y = digits
    Xf = X.reshape(len(X), -1)
    mlp = MLPClassifier((16,), max_iter=50, random_state=0).fit(Xf, y)
    logits = nn.Sequential(*(m for name, m in mlp_torch(mlp).named_children()
                             if name != "out_activation"))
    kw = dict(image_shape=(16, 16), random_state=0)
    r_clr = quiet(relative_stability, mlp, Xf, **kw)
    centred = nn.Sequential(logits, Centre())
    r_torch = quiet(relative_stability, centred, Xf, **kw)
    assert r_clr.R == pytest.approx(r_torch.R, rel=1e-6)


class Centre(nn.Module):
    def forward(self, z):
        return z - z.mean(dim=1, keepdim=True)


def mlp_torch(mlp):
    from geolearn.models import mlp_to_torch

    return mlp_to_torch(mlp, dtype=torch.float64)


def test_skorch_net_and_pipeline_ending_in_it(digits):
    from skorch import NeuralNetClassifier

    X, y = digits
    net = NeuralNetClassifier(small_cnn(), max_epochs=1, lr=0.01, train_split=None,
                              verbose=0).fit(X, y)
    res = quiet(relative_stability, net, X[:120], random_state=0)
    assert res.response == "module"
    # logits, not softmax: same as probing the bare module
    assert res.R == quiet(relative_stability, net.module_, X[:120], random_state=0).R
    pipe = make_pipeline(FunctionTransformer(), net)
    assert quiet(relative_stability, pipe, X[:120], random_state=0).R == pytest.approx(res.R)


def test_constant_model_gives_nan_with_warning(digits):
    X, _ = digits

    class Zero(nn.Module):
        def forward(self, x):
            return torch.zeros(len(x), 3)

    with pytest.warns(StabilityWarning, match="nan"):
        res = relative_stability(Zero(), X[:120], random_state=0)
    assert np.isnan(res.R) and np.isnan(res.D) and np.isnan(res.G)


def test_noise_norm_average_uses_one_radius(digits):
    X, _ = digits
    eye = nn.Linear(256, 256, bias=False, dtype=torch.float64)
    with torch.no_grad():
        eye.weight.copy_(torch.eye(256))
    Xf = X.reshape(len(X), -1)
    res = quiet(relative_stability, eye, Xf, image_shape=(16, 16), noise_norm="average",
                random_state=0)
    assert np.allclose(res.den, res.den[0])  # |eta|^2 is the same for every sample
    assert np.sqrt(res.den[0]) == pytest.approx(np.sqrt(res.num).mean())


def test_warnings_for_few_probes_and_temperature_outside_range(digits):
    X, _ = digits
    with pytest.warns(StabilityWarning, match="probe"):
        relative_stability(small_cnn(), X[:20], random_state=0)
    X8, _ = load_digits_images(return_X_y=True)
    # on 8x8 images delta = 1 px also breaks most fields: both warnings are due
    with pytest.warns(StabilityWarning, match="upsample"), \
            pytest.warns(StabilityWarning, match="not diffeomorphisms"):
        relative_stability(small_cnn(), X8[:120], c=3, delta=1.0, random_state=0)


def test_device_mismatch_is_refused(digits):
    X, _ = digits
    # a CPU module asked for on CUDA: never moved; without CUDA, the device itself is refused
    match = "never moves" if torch.cuda.is_available() else "CUDA is not available"
    with pytest.raises(ValueError, match=match):
        quiet(relative_stability, small_cnn(), X[:120], device="cuda:0")


def test_bad_inputs(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    est = DiffeoStability(LogisticRegression(max_iter=50), image_shape=(16, 16), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        check_bad_inputs(est, Xf[:120], y[:120], min_samples=2)


@pytest.mark.parametrize("params, match", [
    (dict(image_shape=None), "image_shape"),
    (dict(c=0), "c"),
    (dict(c=15), "n - 2"),
    (dict(T=-0.1), "T"),
    (dict(delta=0.0), "delta"),
    (dict(interp="cubic"), "interp"),
    (dict(average="trimmed"), "average"),
    (dict(noise_norm="max"), "noise_norm"),
    (dict(response="logits"), "response"),
    (dict(bn_mode="train"), "bn_mode"),
    (dict(delta_formula="paper"), "delta_formula"),
    (dict(c=1, delta_formula="asymptotic"), "c=1"),
    (dict(estimator=None), "estimator"),
])
def test_bad_parameters(digits, params, match):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    est = DiffeoStability(LogisticRegression(max_iter=50), image_shape=(16, 16))
    with pytest.raises(ValueError, match=match):
        quiet(est.set_params(**params).fit, Xf[:100], y[:100])


def test_non_square_and_tiny_images():
    rng = np.random.RandomState(0)
    est = DiffeoStability(small_cnn())
    with pytest.raises(ValueError, match="square"):
        est.fit(rng.rand(10, 1, 8, 6))
    with pytest.raises(ValueError, match=">= 4"):
        est.fit(rng.rand(10, 1, 3, 3))


@given(T=st.one_of(st.floats(max_value=-1e-9), st.just(float("nan")), st.just(float("inf"))))
def test_non_finite_or_negative_temperature(T):
    X = np.random.RandomState(0).rand(10, 1, 8, 8)
    with pytest.raises(ValueError, match="'T' parameter"):
        DiffeoStability(small_cnn(), T=T).fit(X)


def test_sklearn_integration(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    est = DiffeoStability(LogisticRegression(max_iter=50), image_shape=(16, 16), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        search = check_pipeline_gridsearch_pickle(est, Xf[:200], y[:200],
                                                  param_grid={"c": [2, 3]})
    assert search.best_params_["c"] in (2, 3)
    fitted = quiet(clone(est).fit, Xf[:200], y[:200])
    loaded = pickle.loads(pickle.dumps(fitted))
    assert quiet(loaded.score, Xf[200:320]) == quiet(fitted.score, Xf[200:320])


def test_scorer_in_grid_search_both_patterns(digits):
    X, y = digits
    Xf = X.reshape(len(X), -1)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=100))
    scorer = make_stability_scorer(image_shape=(16, 16), c=3, delta=1.0)
    scoring = {"acc": "accuracy", "neg_log10_R": scorer}
    grid = {"logisticregression__C": [1e-3, 1.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        by_acc = GridSearchCV(pipe, grid, scoring=scoring, refit="acc", cv=2).fit(Xf, y)
        by_R = GridSearchCV(pipe, grid, scoring=scoring, refit="neg_log10_R", cv=2).fit(Xf, y)
        fitted = clone(pipe).fit(Xf, y)
        # common random numbers: the same fields for every call
        assert scorer(fitted, Xf[:150]) == scorer(fitted, Xf[:150])
        expected = -np.log10(relative_stability(fitted, Xf[:150], image_shape=(16, 16),
                                                random_state=0).R)
        assert scorer(fitted, Xf[:150]) == pytest.approx(expected)
    scores = by_R.cv_results_["mean_test_neg_log10_R"]
    assert by_R.best_index_ == int(np.argmax(scores))
    assert np.array_equal(scores, by_acc.cv_results_["mean_test_neg_log10_R"])
    assert by_acc.best_index_ == int(np.argmax(by_acc.cv_results_["mean_test_acc"]))
    with pytest.raises(ValueError, match="quantity"):
        make_stability_scorer("Q")


def test_subspace_bad_arguments():
    X = np.random.RandomState(0).randn(50, 5)
    clf = LogisticRegression().fit(X, X[:, 0] > 0)
    for dims in ([], [5], [0, 1, 2, 3, 4], [0.5]):
        with pytest.raises(ValueError, match="parallel_dims"):
            subspace_relative_stability(clf, X, dims)
    with pytest.raises(ValueError, match="radius"):
        subspace_relative_stability(clf, X, 0, radius=0.0)


def test_score_is_greater_is_better_so_a_search_picks_the_most_stable(digits):
    """Defect: ``score`` returned R_f (lower is better), so GridSearchCV chose the least stable C."""
    from sklearn.model_selection import KFold

    X, y = digits
    Xf, y = X.reshape(len(X), -1)[:300], y[:300]
    est = DiffeoStability(LogisticRegression(max_iter=200), image_shape=(16, 16), c=3,
                          delta=1.0, random_state=0)
    grid = {"estimator__C": [1e-3, 1.0, 100.0]}
    cv = KFold(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        search = GridSearchCV(est, grid, cv=cv).fit(Xf, y)
        # the mean over the same folds of log10 R_f, computed by hand
        log_R = [np.mean([np.log10(clone(est).set_params(**p).fit(Xf[tr], y[tr])
                                   .stability(Xf[te]).R) for tr, te in cv.split(Xf)])
                 for p in search.cv_results_["params"]]
    assert np.allclose(search.cv_results_["mean_test_score"], -np.asarray(log_R))
    assert search.best_index_ == int(np.argmin(log_R))  # the most stable, not the least


def test_verbose_shows_the_forward_passes_and_changes_nothing(digits, capsys):
    """Defect: DiffeoStability had no verbose; long measurements showed no progress."""
    X, y = digits
    net = nn.Sequential(nn.Flatten(), nn.Linear(256, 10))
    kw = dict(c=3, delta=1.0, batch_size=50, n_repeats=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        quiet_R = relative_stability(net, X[:150], **kw).R
        capsys.readouterr()
        loud_R = relative_stability(net, X[:150], verbose=1, **kw).R
    err = capsys.readouterr().err
    # 3 batches: one pass for f(x), then a deformed and a noised pass per repeat
    assert "DiffeoStability" in err and "15/15" in err
    assert loud_R == quiet_R


def test_an_sklearn_model_measured_on_image_arrays_gets_flat_rows(digits):
    """Defect: 4-D images reached LogisticRegression ("Found array with dim 4")."""
    X, y = digits
    Xf = X.reshape(len(X), -1)
    kw = dict(c=3, delta=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        clf = LogisticRegression(max_iter=100).fit(Xf[:300], y[:300])
        flat = relative_stability(clf, Xf[300:450], image_shape=(16, 16), **kw).R
        assert relative_stability(clf, X[300:450], **kw).R == pytest.approx(flat, rel=1e-12)
        est = DiffeoStability(LogisticRegression(max_iter=100), **kw).fit(X[:300], y[:300])
    assert est.estimator_.n_features_in_ == 256
    np.testing.assert_array_equal(est.predict(X[300:320]), clf.predict(Xf[300:320]))


def test_a_model_fitted_on_a_dataframe_is_probed_without_feature_name_warnings(digits):
    """Defect: every probe of a DataFrame-fitted model warned about feature names."""
    pd = pytest.importorskip("pandas")
    X, y = digits
    df = pd.DataFrame(X.reshape(len(X), -1)[:300]).add_prefix("px")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        warnings.simplefilter("error")  # sklearn's feature-name UserWarning included
        clf = LogisticRegression(max_iter=100).fit(df, y[:300])
        R_df = relative_stability(clf, df.iloc[150:], image_shape=(16, 16), random_state=0).R
        R_np = relative_stability(clf, df.to_numpy()[150:], image_shape=(16, 16),
                                  random_state=0).R
    assert R_df == R_np
