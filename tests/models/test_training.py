"""The shared skorch training base: prefixed settings, callbacks, warm start, net_class."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.model_selection import GridSearchCV
from skorch import NeuralNetRegressor
from skorch.callbacks import EarlyStopping

from geolearn.models import SkorchTrainingMixin


class _MLP(torch.nn.Module):
    def __init__(self, n_features=3, hidden=4):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.Tanh(),
                                        torch.nn.Linear(hidden, 1))

    def forward(self, x):
        return self.body(x)


class _Regressor(SkorchTrainingMixin, RegressorMixin, BaseEstimator):
    """A minimal estimator on the training base, as a family would write one."""

    net_class = NeuralNetRegressor

    def __init__(self, lr=0.05, max_epochs=5, batch_size=16, callbacks=None, warm_start=False,
                 device="cpu", verbose=0, random_state=0, **net_params):
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.verbose = verbose
        self.random_state = random_state
        self._set_net_params(net_params)

    def fit(self, X, y):
        X = torch.as_tensor(X, dtype=torch.float32)
        y = torch.as_tensor(y, dtype=torch.float32).view(-1, 1)
        self._fit_net(_MLP, X, y, seed=self.random_state, max_epochs=self.max_epochs,
                      train_split=None, module__n_features=X.shape[1])
        return self

    def predict(self, X):
        return self.net_.predict(np.asarray(X, dtype=np.float32)).ravel()


@pytest.fixture(scope="module")
def data():
    rng = np.random.RandomState(0)
    X = rng.randn(64, 3).astype(np.float32)
    return X, X @ np.array([1.0, -2.0, 0.5], dtype=np.float32)


def test_prefixed_settings_are_parameters(data):
    X, y = data
    est = _Regressor(module__hidden=7, optimizer__weight_decay=0.1)
    assert est.get_params()["module__hidden"] == 7
    assert clone(est).get_params()["optimizer__weight_decay"] == 0.1
    est.set_params(module__hidden=5, lr=0.01)
    est.fit(X, y)
    assert est.module_.body[0].out_features == 5 and est.lr == 0.01
    assert est.net_.optimizer_.param_groups[0]["weight_decay"] == 0.1
    est = _Regressor(hiden=3)  # scikit-learn estimators validate in fit, not in __init__
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['hiden'\\]"):
        est.fit(X, y)


def test_grid_search_over_a_prefixed_setting(data):
    X, y = data
    search = GridSearchCV(_Regressor(max_epochs=2), {"module__hidden": [2, 6]}, cv=2).fit(X, y)
    assert search.best_estimator_.module_.body[0].out_features in (2, 6)


def test_same_seed_same_net_and_pickle_round_trip(data):
    X, y = data
    a, b = _Regressor().fit(X, y), _Regressor().fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).predict(X), a.predict(X))


def test_warm_start_continues_training(data):
    X, y = data
    cold = _Regressor(max_epochs=3).fit(X, y).fit(X, y)
    assert len(cold.net_.history) == 3  # a second fit starts again
    warm = _Regressor(max_epochs=3, warm_start=True).fit(X, y)
    first = warm.net_
    warm.fit(X, y)
    assert warm.net_ is first and len(warm.net_.history) == 6
    assert warm.net_.history[-1, "train_loss"] < warm.net_.history[2, "train_loss"]


def test_a_warm_fit_trains_with_the_settings_set_since(data):
    """Regression: skorch's ``partial_fit`` read the net's own settings, so a warm fit after
    ``set_params(max_epochs=5, lr=0.5, batch_size=8)`` trained 3 epochs at the first lr."""
    X, y = data
    warm = _Regressor(max_epochs=3, warm_start=True).fit(X, y)
    warm.set_params(max_epochs=5, lr=0.5, batch_size=8).fit(X, y)
    assert len(warm.history_) == 3 + 5
    assert warm.net_.optimizer_.param_groups[0]["lr"] == 0.5
    assert len(warm.history_[-1, "batches"]) == 64 // 8


def test_user_callbacks_run(data):
    X, y = data
    stop = EarlyStopping(monitor="train_loss", patience=1, threshold=1e9, lower_is_better=True)
    est = _Regressor(max_epochs=50, callbacks=[stop]).fit(X, y)
    assert len(est.net_.history) < 50


def test_net_class_is_the_extension_point(data):
    X, y = data
    seen = []

    class Counting(NeuralNetRegressor):
        def train_step(self, batch, **kw):
            seen.append(len(batch[0]))
            return super().train_step(batch, **kw)

    class Custom(_Regressor):
        net_class = Counting

    Custom(max_epochs=1, batch_size=32).fit(X, y)
    assert seen == [32, 32]


def test_non_finite_loss_stops_with_a_clear_error(data):
    X, y = data
    with pytest.raises(RuntimeError, match="non-finite at epoch 1"):
        _Regressor(lr=1e30, max_epochs=3).fit(X, y * 1e30)


def test_non_finite_check_reads_only_the_last_epoch_while_finite():
    """The check is constant-time per epoch (the full loss column grows with the epochs)."""
    from types import SimpleNamespace

    from skorch.history import History

    from geolearn.models._internal import RaiseOnNonFiniteLoss

    class Guarded(History):
        def __getitem__(self, i):
            if isinstance(i, tuple) and i[0] == slice(None):
                raise AssertionError("read the full column")
            return super().__getitem__(i)

    for history, last in ((Guarded(), 0.25), (History(), float("nan"))):
        for loss in (1.0, 0.5, last):
            history.new_epoch()
            history.record("train_loss", loss)
        check = RaiseOnNonFiniteLoss()
        if np.isfinite(last):
            check.on_epoch_end(SimpleNamespace(history=history))
        else:
            with pytest.raises(RuntimeError, match=r"epoch 3 \(last finite loss: 0.5\)"):
                check.on_epoch_end(SimpleNamespace(history=history))


def test_skorchs_own_settings_are_parameters(data):
    """GridVAE(train_split=...) and GridVAE(compile=True) raised "Invalid parameter"."""
    from skorch.dataset import ValidSplit

    from geolearn.generative import GridVAE

    X, y = data
    est = _Regressor(train_split=ValidSplit(4), compile=False, iterator_train__shuffle=True)
    params = clone(est).get_params()
    assert isinstance(params["train_split"], ValidSplit) and params["compile"] is False
    est.set_params(train_split=None, compile=True)
    assert est.get_params()["train_split"] is None and est.compile is True
    est.set_params(compile=False, train_split=ValidSplit(4)).fit(X, y)
    assert "valid_loss" in est.history_[-1]
    with pytest.raises(ValueError, match="compile must be True or False; got 'yes'"):
        _Regressor(compile="yes").fit(X, y)
    # the objective replaces the criterion: a GridVAE criterion would be ignored, so it is refused
    with pytest.raises(TypeError, match="unexpected keyword arguments \\['criterion'\\]"):
        GridVAE(criterion=torch.nn.MSELoss, max_epochs=1).fit(np.abs(X) / np.abs(X).max())


def test_early_stopping_on_valid_loss_through_train_split():
    from skorch.dataset import ValidSplit

    from geolearn.generative import GridVAE

    X = np.random.default_rng(0).random((64, 8)).astype(np.float32)
    stop = EarlyStopping(monitor="valid_loss", patience=2, threshold=10.0)
    vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=30, train_split=ValidSplit(4),
                  callbacks=[stop], random_state=0).fit(X)
    assert len(vae.history_) == 3  # no epoch improves valid_loss by 1000 %
    assert all(np.isfinite(vae.history_[:, "valid_loss"]))
    assert clone(vae).get_params()["train_split"].cv == 4


def test_save_and_load_params_round_trip(data, tmp_path):
    X, y = data
    a = _Regressor().fit(X, y)
    a.save_params(f_params=tmp_path / "w.pt", f_history=tmp_path / "h.json")
    b = _Regressor(random_state=1).fit(X, y)
    assert not np.array_equal(a.predict(X), b.predict(X))
    b.load_params(f_params=tmp_path / "w.pt", f_history=tmp_path / "h.json")
    np.testing.assert_array_equal(b.predict(X), a.predict(X))
    assert b.history_ is b.net_.history and len(b.history_) == len(a.history_)
    with pytest.raises(Exception, match="not fitted"):
        _Regressor().save_params(f_params=tmp_path / "x.pt")


class _DeepRegressor(_Regressor):
    """Three layers: six parameter tensors, where the multi-tensor update starts to pay."""

    def fit(self, X, y):
        X = torch.as_tensor(X, dtype=torch.float32)
        y = torch.as_tensor(y, dtype=torch.float32).view(-1, 1)

        def module():  # built under the fit's seed
            return torch.nn.Sequential(torch.nn.Linear(X.shape[1], 4), torch.nn.Tanh(),
                                       torch.nn.Linear(4, 4), torch.nn.Tanh(),
                                       torch.nn.Linear(4, 1))

        self._fit_net(module, X, y, seed=self.random_state, max_epochs=self.max_epochs,
                      train_split=None)
        return self


@pytest.mark.parametrize("optimizer", [
    {}, {"optimizer": torch.optim.AdamW, "optimizer__weight_decay": 0.1},
    {"optimizer": torch.optim.SGD, "optimizer__momentum": 0.9, "optimizer__nesterov": True}])
def test_stock_optimiser_takes_the_multi_tensor_update_with_the_same_weights(data, optimizer):
    X, y = data
    ours = _DeepRegressor(**optimizer).fit(X, y)
    loop = _DeepRegressor(optimizer__foreach=False, **optimizer).fit(X, y)
    assert ours.net_.optimizer_.param_groups[0]["foreach"] is True
    assert loop.net_.optimizer_.param_groups[0]["foreach"] is False  # the user's choice
    for p, q in zip(ours.module_.parameters(), loop.module_.parameters(), strict=True):
        assert torch.equal(p, q)


def test_multi_tensor_update_left_to_torch_for_few_tensors_and_other_optimisers(data):
    X, y = data
    few = _Regressor().fit(*data)  # four parameter tensors
    assert few.net_.optimizer_.param_groups[0]["foreach"] is None
    other = _DeepRegressor(optimizer=torch.optim.RMSprop).fit(X, y)
    assert other.net_.optimizer_.param_groups[0]["foreach"] is None
