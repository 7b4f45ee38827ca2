"""MetaManifoldAutoencoder: the MLDG step (spec experiment 3) and the estimator's contract.

The step is checked in float64 on a tiny tanh MLP against a plain Adam step, the
first-order gradient, central finite differences and an autograd Hessian-vector
product; the estimator against the baseline it must reduce to, sklearn's tools, and
the spec's bad inputs.
"""

import functools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from skorch.callbacks import Callback

from geolearn.exceptions import DataRangeWarning
from geolearn.meta_learning import MetaManifoldAutoencoder, NeighborhoodHoldout
from tests.helpers import (
    assert_message,
    check_bad_inputs,
    check_pipeline_gridsearch_pickle,
)

SMALL = dict(architecture="mlp", hidden_layer_sizes=(16,), n_latent=3, max_epochs=30, batch_size=8,
             log_every=10, random_state=0, device="cpu")


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).random((80, 12)).astype(np.float32)


# -- the estimator -------------------------------------------------------------------------

def test_zero_meta_test_weight_retraces_the_baseline_exactly(X):
    meta = MetaManifoldAutoencoder(meta_test_weight=0.0, **SMALL).fit(X)
    plain = MetaManifoldAutoencoder(episodic_strategy=None, **SMALL).fit(X)
    for p, q in zip(meta.module_.parameters(), plain.module_.parameters()):
        assert torch.equal(p, q)
    other = MetaManifoldAutoencoder(meta_test_weight=1e-2, **SMALL).fit(X)
    assert not torch.equal(next(other.module_.parameters()), next(plain.module_.parameters()))


def test_training_lowers_the_loss_and_history_is_per_block(X):
    ae = MetaManifoldAutoencoder(**{**SMALL, "max_epochs": 25}).fit(X)
    assert ae.history_[:, "iteration"] == [10, 20, 25] and ae.n_iter_ == 25
    for h in ae.history_:  # J = L_train + beta L_test, block means of the same batches
        assert h["train_loss"] == pytest.approx(
            h["meta_train_loss"] + 1e-3 * h["meta_test_loss"], rel=1e-5)
    longer = MetaManifoldAutoencoder(**{**SMALL, "max_epochs": 300, "lr": 1e-2}).fit(X)
    assert longer.history_[-1, "meta_train_loss"] < 0.9 * longer.history_[0, "meta_train_loss"]
    assert longer.score(X) > ae.score(X)


def test_inner_lr_auto_keeps_the_papers_step():
    X = np.random.default_rng(0).random((200, 768)).astype(np.float32)
    ae = MetaManifoldAutoencoder(architecture="mlp", max_epochs=1, random_state=0,
                                 device="cpu").fit(X)
    assert ae.inner_lr_ == pytest.approx(1.6e-6)  # spec: 1e-7 * 64 * 12288 / (64 * 768)
    ae = MetaManifoldAutoencoder(architecture="mlp", max_epochs=1, reduction="mean",
                                 batch_size=16, random_state=0, device="cpu").fit(X)
    assert ae.inner_lr_ == pytest.approx(1e-7 * 64 * 12288)


def test_images_use_convs_and_round_trip_shapes():
    rng = np.random.default_rng(0)
    images = rng.random((40, 3, 16, 16)).astype(np.float32)
    ae = MetaManifoldAutoencoder(max_epochs=2, batch_size=4, conv_channels=(4, 4, 8, 8),
                                 hidden_layer_sizes=(8,), random_state=0, device="cpu").fit(images)
    assert ae.architecture_ == "conv" and ae.image_shape_ == (3, 16, 16)
    assert any(isinstance(m, torch.nn.Conv2d) for m in ae.module_.modules())
    flat = images.reshape(40, -1)
    np.testing.assert_array_equal(ae.transform(images), ae.transform(flat))
    rec = ae.reconstruct(images)
    assert rec.shape == (40, 768) and rec.min() >= 0 and rec.max() <= 1
    odd = rng.random((40, 3, 12, 12)).astype(np.float32)
    assert MetaManifoldAutoencoder(max_epochs=1, batch_size=4, hidden_layer_sizes=(8,), device="cpu"
                                   ).fit(odd).architecture_ == "mlp"  # "auto" falls back
    with pytest.raises(ValueError) as exc:
        MetaManifoldAutoencoder(architecture="conv", max_epochs=1, batch_size=4,
                                device="cpu").fit(odd)
    assert_message(exc, "divisible by 16", "(3, 12, 12)")
    with pytest.raises(ValueError, match="needs images"):
        MetaManifoldAutoencoder(architecture="conv", max_epochs=1, batch_size=4,
                                device="cpu").fit(flat)


@settings(max_examples=10, deadline=None)
@given(st.permutations(range(12)), st.integers(1, 12))
def test_a_rows_code_depends_only_on_the_row(perm, n):
    ae = _fitted()
    X = ae._X_check
    Z = ae.transform(X)
    # equal up to float32 rounding: BLAS may sum a row's products in another order
    # when the row sits elsewhere in a chunk
    np.testing.assert_allclose(ae.transform(X[list(perm)]), Z[list(perm)], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ae.reconstruct(X[:n]), ae.reconstruct(X)[:n], rtol=1e-5,
                               atol=1e-7)


@functools.cache
def _fitted():
    X = np.random.default_rng(1).random((40, 12)).astype(np.float32)
    ae = MetaManifoldAutoencoder(**{**SMALL, "batch_size": 5}).fit(X)
    ae._X_check = X[:12]
    return ae


def test_sklearn_integration_with_the_neighbourhood_cv(X):
    search = check_pipeline_gridsearch_pickle(
        MetaManifoldAutoencoder(**SMALL), X,
        param_grid={"episodic_strategy": [None, "neighborhood"], "meta_test_weight": [1e-3, 1e-2]},
        cv=NeighborhoodHoldout(n_holdout=15, n_splits=2, random_state=0))
    assert np.all(search.cv_results_["mean_test_score"] < 0)  # - MSE


def test_callbacks_warm_start_and_verbose(X, capsys):
    class Count(Callback):
        def initialize(self):
            self.n = 0
            return self

        def on_epoch_end(self, net, **kwargs):
            self.n += 1

    count = Count()
    ae = MetaManifoldAutoencoder(**{**SMALL, "callbacks": [count], "warm_start": True}).fit(X)
    assert count.n == 3
    first = next(ae.module_.parameters()).detach().clone()
    ae.fit(X)
    assert ae.n_iter_ == 60 and len(ae.history_) == 6
    assert not torch.equal(first, next(ae.module_.parameters()))
    MetaManifoldAutoencoder(**{**SMALL, "verbose": 1}).fit(X)
    assert "meta_test_loss" in capsys.readouterr().out


def test_bad_inputs(X):
    check_bad_inputs(MetaManifoldAutoencoder(**SMALL), X, min_samples=17)
    with pytest.raises(ValueError) as exc:
        MetaManifoldAutoencoder(**SMALL).fit(X * 3 - 1)
    assert_message(exc, "loss='bce'", "MinMaxScaler")
    MetaManifoldAutoencoder(**{**SMALL, "loss": "mse"}).fit(X * 3 - 1)
    for bad in ({"inner_lr": -1.0}, {"inner_lr": "fast"}, {"meta_test_weight": -1e-3},
                {"max_epochs": 0}, {"batch_size": 0}, {"episodic_strategy": "D"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            MetaManifoldAutoencoder(**{**SMALL, **bad}).fit(X)
    with pytest.raises(NotFittedError):
        MetaManifoldAutoencoder(**SMALL).reconstruct(X)
    with pytest.raises(ValueError, match="n_latent"):
        MetaManifoldAutoencoder(**SMALL).fit(X).inverse_transform(np.zeros((2, 4)))


def test_a_non_finite_loss_stops_with_the_iteration(X):
    with pytest.raises(RuntimeError) as exc:
        MetaManifoldAutoencoder(**{**SMALL, "inner_lr": 1e20, "meta_test_weight": 1.0}).fit(X)
    assert_message(exc, "non-finite at iteration 1;", "inner_lr")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 11), st.sampled_from([np.nan, np.inf, -0.5, 1.5]))
def test_one_bad_value_anywhere_is_refused_or_clipped_at_transform(position, value):
    """Non-finite values are refused; values past [0, 1] are clipped with a DataRangeWarning."""
    ae = _fitted()
    X = ae._X_check.copy()
    X.flat[position * X.shape[1] + position] = value
    if not np.isfinite(value):
        with pytest.raises(ValueError, match="NaN|infinity"):
            ae.transform(X)
        return
    with pytest.warns(DataRangeWarning, match="loss='bce'.*1 of .*clipped.*MinMaxScaler"):
        Z = ae.transform(X)
    np.testing.assert_array_equal(Z, ae.transform(np.clip(X, 0, 1)))
