"""FGSM, PGD and Carlini-Wagner L2: defining properties, model handling and bad inputs."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier
from torch import nn

from geolearn.adversarial import carlini_wagner_l2, fgsm, pgd
from geolearn.models import GradientsUnavailableError

ATTACKS = {
    "fgsm": lambda m, X, y, **kw: fgsm(m, X, y, 0.1, **kw),
    "pgd": lambda m, X, y, **kw: pgd(m, X, y, 0.1, random_state=0, **kw),
    "cw": lambda m, X, y, **kw: carlini_wagner_l2(m, X, y, n_steps=5, **kw)[0],
}


def small_net(seed=0, d=12, k=3, dropout=False):
    torch.manual_seed(seed)
    layers = [nn.Linear(d, 16), nn.ReLU()] + ([nn.Dropout(0.5)] if dropout else [])
    return nn.Sequential(*layers, nn.Linear(16, k))


def data(n=40, d=12, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, d)).astype(np.float32), rng.integers(0, k, n)


def cross_entropy(model, X, y):
    with torch.no_grad():
        return F.cross_entropy(model(torch.as_tensor(X)), torch.as_tensor(y)).item()


@pytest.mark.parametrize("name", ATTACKS)
def test_model_mode_and_parameter_grads_untouched(name):
    net = small_net(dropout=True).train()
    X, y = data()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # C&W failures after 5 steps
        ATTACKS[name](net, X, y)
    assert net.training and all(m.training for m in net.modules())
    assert all(p.grad is None for p in net.parameters())
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])


@pytest.mark.parametrize("name", ATTACKS)
def test_dropout_is_off_during_the_attack(name):
    """In eval mode the attack is deterministic even though the model holds dropout."""
    net = small_net(dropout=True).train()
    X, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        np.testing.assert_array_equal(ATTACKS[name](net, X, y), ATTACKS[name](net, X, y))


@pytest.mark.parametrize("name", ATTACKS)
def test_batch_size_does_not_change_the_result(name):
    net = small_net()
    X, y = data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        full = ATTACKS[name](net, X, y, batch_size=len(X))
        small = ATTACKS[name](net, X, y, batch_size=7)
    np.testing.assert_allclose(full, small, atol=1e-6)


def test_layout_and_dtype_follow_the_input():
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Flatten(), nn.Linear(32, 3))
    rng = np.random.default_rng(0)
    X = rng.random((5, 16))
    y = rng.integers(0, 3, 5)
    flat = fgsm(cnn, X, y, 0.1, image_shape=(1, 4, 4))
    images = fgsm(cnn, X.reshape(5, 1, 4, 4), y, 0.1)
    assert flat.shape == (5, 16) and flat.dtype == np.float32
    np.testing.assert_array_equal(flat, images.reshape(5, 16))


def test_fgsm_loss_is_monotone_in_eps_for_a_linear_model():
    """Along the FGSM direction the convex cross-entropy of a linear model never decreases."""
    torch.manual_seed(1)
    net = nn.Linear(12, 3)
    X, y = data()
    clip = (-100.0, 100.0)
    losses = [cross_entropy(net, fgsm(net, X, y, eps, clip=clip), y)
              for eps in (0.0, 0.05, 0.1, 0.2, 0.4)]
    assert np.all(np.diff(losses) > 0)


def test_pgd_loss_increases_with_steps_on_a_linear_model():
    torch.manual_seed(2)
    net = nn.Linear(12, 3)
    X, y = data()
    losses = [cross_entropy(net, pgd(net, X, y, 0.2, n_steps=s, step_size=0.05,
                                     random_start=False), y)
              for s in (1, 2, 4, 8)]
    assert np.all(np.diff(losses) >= -1e-6) and losses[-1] > losses[0]


@settings(max_examples=10)
@given(eps=st.floats(0, 0.5), lo=st.floats(-1, 0), width=st.floats(0.5, 2),
       seed=st.integers(0, 10))
def test_every_attack_stays_in_the_ball_and_the_box(eps, lo, width, seed):
    net = small_net(seed)
    X, y = data(n=10, seed=seed)
    X = lo + width * X
    clip = (lo, lo + width)
    for X_adv in (fgsm(net, X, y, eps, clip=clip),
                  pgd(net, X, y, eps, clip=clip, random_state=seed)):
        assert np.abs(X_adv - X).max() <= eps + 1e-6
        assert X_adv.min() >= clip[0] - 1e-6 and X_adv.max() <= clip[1] + 1e-6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X_cw, _ = carlini_wagner_l2(net, X, y, n_steps=2, clip=clip)
    assert X_cw.min() >= clip[0] - 1e-6 and X_cw.max() <= clip[1] + 1e-6


def test_no_box_gives_the_unclipped_equations():
    """clip=None: x + eps sign(grad) exactly, even outside [0, 1] (eqs. 3-4 as printed)."""
    net = small_net()
    X, y = data()
    X = 3 * X - 1
    X_adv = fgsm(net, X, y, 0.5, clip=None)
    np.testing.assert_allclose(np.abs(X_adv - X), 0.5, atol=1e-6)
    assert X_adv.max() > 1 and X_adv.min() < 0
    X_pgd = pgd(net, X, y, 0.5, clip=None, random_state=0)
    assert np.abs(X_pgd - X).max() <= 0.5 + 1e-6
    with pytest.raises(ValueError, match="clip"):
        carlini_wagner_l2(net, X, y, clip=None)


def test_pgd_random_start_is_seeded():
    net = small_net()
    X, y = data()
    a = pgd(net, X, y, 0.1, random_state=3)
    np.testing.assert_array_equal(a, pgd(net, X, y, 0.1, random_state=3))
    assert not np.array_equal(a, pgd(net, X, y, 0.1, random_state=4))


def test_cw_flags_failures_and_warns():
    """A model that always predicts class 0 with a huge margin cannot be fooled."""
    net = nn.Linear(12, 3)
    with torch.no_grad():
        net.weight.zero_()
        net.bias.copy_(torch.tensor([100.0, 0.0, 0.0]))
    X, y = data()
    y = np.zeros_like(y)
    with pytest.warns(UserWarning, match=f"{len(X)} of {len(X)} samples"):
        X_adv, success = carlini_wagner_l2(net, X, y, n_steps=3)
    assert not success.any() and X_adv.shape == X.shape


def scaled_linear(seed=0):
    """A 3-class linear model whose decision boundaries cross the unit box."""
    torch.manual_seed(seed)
    net = nn.Linear(12, 3)
    with torch.no_grad():
        net.weight.mul_(10)
        net.bias.zero_()
    return net


def test_cw_l2_is_close_to_the_closed_form_minimum_of_a_linear_model():
    """For logits W x + b the least L2 change reaching class j is (z_y - z_j) / ||w_y - w_j||."""
    net = scaled_linear()
    X, _ = data()
    W = net.weight.detach().numpy().astype(np.float64)
    z = X @ W.T
    y = z.argmax(1)
    margin = z[np.arange(len(X)), y][:, None] - z
    norm = np.linalg.norm(W[y][:, None, :] - W[None, :, :], axis=2)
    other = np.arange(3)[None] != y[:, None]
    bound = np.where(other, margin / np.where(other, norm, 1.0), np.inf).min(1)
    X_adv, success = carlini_wagner_l2(net, X, y, c=10.0, n_steps=200, lr=0.02)
    l2 = np.linalg.norm(X_adv - X, axis=1)
    assert success.all()
    assert np.all(l2 >= bound - 1e-4)
    assert np.median(l2 / bound) < 1.5


def test_cw_binary_search_raises_a_too_small_c():
    net = scaled_linear()
    X, _ = data()
    with torch.no_grad():
        y = net(torch.as_tensor(X)).argmax(1).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _, single = carlini_wagner_l2(net, X, y, c=1e-3, n_steps=30, lr=0.05)
        _, searched = carlini_wagner_l2(net, X, y, c=1e-3, n_steps=30, lr=0.05,
                                        binary_search_steps=4)
    assert searched.sum() > single.sum() + len(X) // 2


def test_skorch_net_and_sklearn_mlp_through_the_adapter():
    from skorch import NeuralNetClassifier

    X, y = data(n=60)
    torch.manual_seed(0)
    skorch_net = NeuralNetClassifier(small_net(), criterion=nn.CrossEntropyLoss, max_epochs=2,
                                     train_split=None, verbose=0).fit(X, y)
    mlp = MLPClassifier((8,), max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp.fit(X, y)
    for model in (skorch_net, mlp):
        X_adv = fgsm(model, X, y, 0.1)
        assert np.abs(X_adv - X).max() == pytest.approx(0.1, abs=1e-6)


def test_black_box_models_need_gradients():
    X, y = data()
    forest = RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    with pytest.raises(GradientsUnavailableError, match="fgsm needs gradients"):
        fgsm(forest, X, y, 0.1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": -0.1}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"n_steps": 0}, "n_steps"),
        ({"n_steps": 1.5}, "n_steps"),
        ({"step_size": 0.0}, "step_size"),
        ({"n_restarts": 0}, "n_restarts"),
        ({"norm": "l1"}, "norm"),
        ({"loss": "hinge"}, "loss"),
        ({"norm": "linf", "projection": lambda v, rows: v}, "projection"),
        ({"clip": (1.0, 0.0)}, "clip"),
        ({"clip": (0.0,)}, "clip"),
    ],
)
def test_pgd_parameter_errors(kwargs, match):
    X, y = data()
    kwargs = {"epsilon": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        pgd(small_net(), X, y, **kwargs)


@pytest.mark.parametrize("kwargs, match", [({"c": 0}, "c must"), ({"kappa": -1}, "kappa"),
                                           ({"lr": 0}, "lr"), ({"binary_search_steps": -1},
                                                               "binary_search_steps")])
def test_cw_parameter_errors(kwargs, match):
    X, y = data()
    with pytest.raises(ValueError, match=match):
        carlini_wagner_l2(small_net(), X, y, **kwargs)


@pytest.mark.parametrize("name", ATTACKS)
def test_labels_beyond_the_logits_raise_before_any_loss(name):
    """The class count is read off the first batch's logits (no probe pass): a label out of
    range in a later batch still raises the ValueError, for scores read as two logits too."""
    X, y = data()
    y = y.copy()
    y[-1] = 3  # the last batch of 16
    with pytest.raises(ValueError, match=r"labels in \[0, 3\].*has 3 classes"):
        ATTACKS[name](small_net(), X, y, batch_size=16)
    with pytest.raises(ValueError, match="has 2 classes"):
        ATTACKS[name](small_net(k=1), X, y % 3, batch_size=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # C&W's warning for rows it did not turn
        assert ATTACKS[name](small_net(k=1), X, y % 2, batch_size=16).shape == X.shape


def test_input_and_label_errors():
    net = small_net()
    X, y = data()
    with pytest.raises(ValueError, match="outside clip"):
        fgsm(net, X + 0.5, y, 0.1)
    with pytest.raises(ValueError, match="labels must lie in"):
        fgsm(net, X, y + 3, 0.1)
    with pytest.raises(ValueError, match="labels must lie in"):
        fgsm(net, X, y - 1, 0.1)
    with pytest.raises(ValueError, match="integer class indices"):
        fgsm(net, X, y + 0.5, 0.1)
    with pytest.raises(ValueError, match="one label per row"):
        fgsm(net, X, y[:-1], 0.1)
    with pytest.raises(ValueError, match="image_shape"):
        fgsm(net, X, y, 0.1, image_shape=(1, 3, 3))
    with pytest.raises(ValueError, match="logits of shape"):
        fgsm(nn.Sequential(net, nn.Flatten(0)), X, y, 0.1)


@given(pos=st.integers(0, 40 * 12 - 1), value=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_inputs_raise(pos, value):
    X, y = data()
    X = X.copy()
    X.flat[pos] = value
    with pytest.raises(ValueError, match="(?i)nan|infinity"):
        fgsm(small_net(), X, y, 0.1)


# ------------------------------------------- one PGD: the two former attacks are its settings


def _input_gradient(net, x, t):
    x = x.detach().requires_grad_(True)
    return torch.autograd.grad(F.cross_entropy(net(x), t, reduction="sum"), x)[0]


def _reference_madry_pgd(net, X, y, *, epsilon, step_size, n_steps, seed, clip=(0.0, 1.0)):
    """Madry et al.'s PGD written out: uniform start, signed steps, last iterate."""
    x, t = torch.as_tensor(X), torch.as_tensor(y)
    delta0 = np.random.RandomState(seed).uniform(-epsilon, epsilon, X.shape).astype(np.float32)
    x_adv = (x + torch.as_tensor(delta0)).clamp(*clip)
    for _ in range(n_steps):
        step = step_size * _input_gradient(net, x_adv, t).sign()
        x_adv = (x + (x_adv - x + step).clamp(-epsilon, epsilon)).clamp(*clip)
    return x_adv.detach().numpy()


def _reference_l2_search(net, X, y, *, epsilon, step_size, n_steps):
    """Row by row: L2 steps from x, the first misclassified iterate (ties count) or the last."""
    radius = epsilon * (1 - 1e-7)  # the open ball
    out, found = X.copy(), np.zeros(len(X), bool)
    for i in range(len(X)):
        x, t = torch.as_tensor(X[i:i + 1]), torch.as_tensor(y[i:i + 1])
        x_adv = x.clone()
        for step in range(n_steps + 1):
            with torch.no_grad():
                z = net(x_adv)[0]
            if z[t[0]] <= torch.cat([z[:t[0]], z[t[0] + 1:]]).max():
                found[i] = True
                break
            if step == n_steps:
                break
            g = _input_gradient(net, x_adv, t)
            delta = x_adv - x + step_size * g / g.norm() if g.norm() > 0 else x_adv - x
            x_adv = x + delta * min(1.0, radius / max(float(delta.norm()), 1e-30))
        out[i] = x_adv.detach().numpy()[0]
    return out, found


def test_pgd_is_madry_pgd_written_out():
    """The former ``pgd(eps, alpha, steps)``: ``pgd(epsilon, step_size, n_steps)``, same output."""
    net, (X, y) = small_net(), data()
    X_adv = pgd(net, X, y, 0.1, step_size=0.03, n_steps=7, random_state=3)
    expected = _reference_madry_pgd(net, X, y, epsilon=0.1, step_size=0.03, n_steps=7, seed=3)
    np.testing.assert_allclose(X_adv, expected, rtol=0, atol=1e-6)


def test_pgd_search_is_the_row_by_row_search_written_out():
    """The former ``pgd_attack(epsilon=...)``: ``pgd`` with its defaults spelled out."""
    net, (X, y) = small_net(), data()
    X_adv, success = pgd(net, X, y, 0.3, norm="l2", n_steps=40, random_start=False,
                         stop_on_success=True, return_success=True, clip=None)
    expected, found = _reference_l2_search(net, X, y, epsilon=0.3, step_size=2.5 * 0.3 / 40,
                                           n_steps=40)
    assert 0 < success.sum() < len(X)
    np.testing.assert_array_equal(success, found)
    np.testing.assert_allclose(X_adv, expected, rtol=0, atol=1e-5)


def _reference_fgsm(net, x, t, epsilon, clip):
    """FGSM as the loop computed it before it dropped its copies: ``x0 = clip(x + 0)``, one
    signed step from ``x0``, clipped to the ball and the box."""
    x0 = (x + torch.zeros_like(x)).clamp(*clip)
    step = epsilon * _input_gradient(net, x0, t).sign()
    return (x + (x0 - x + step).clamp(-epsilon, epsilon)).clamp(*clip)


@pytest.mark.parametrize("layout", ["float32", "float64", "fortran", "read-only"])
def test_fgsm_and_pgd_equal_the_loop_written_out_bit_for_bit(layout):
    """Regression for the loop without copies: a CNN on images in batches of 7 (the last one
    partial), inputs with -0.0 and values just outside the box (clamped, within the check's
    tolerance): the same bits as the attacks written out, and ``X`` is left untouched."""
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(),
                        nn.Linear(48, 3)).eval()
    rng = np.random.default_rng(0)
    X = rng.random((20, 1, 4, 4)).astype(np.float32)
    X[:3, 0, 0] = -0.0
    X[3:5, 0, 1, 1], X[5, 0, 2, 2] = 1 + 5e-7, -5e-7
    y = rng.integers(0, 3, 20)
    X_in = {"float32": X, "float64": X.astype(np.float64), "fortran": np.asfortranarray(X),
            "read-only": X.copy()}[layout]
    X_in.setflags(write=layout != "read-only")
    before = X_in.copy()
    xs, ts = torch.as_tensor(X).split(7), torch.as_tensor(y).split(7)
    for clip in [(0.0, 1.0), (-np.inf, np.inf)]:
        expected = torch.cat([_reference_fgsm(cnn, x, t, 0.1, clip) for x, t in zip(xs, ts)])
        out = fgsm(cnn, X_in, y, 0.1, clip=None if np.isinf(clip[0]) else clip, batch_size=7)
        np.testing.assert_array_equal(out, expected.detach().numpy())
        assert out.tobytes() == expected.detach().numpy().tobytes()  # -0.0 too
    delta0 = np.random.RandomState(3).uniform(-0.1, 0.1, (20, 16)).astype(np.float32)
    x_adv = (torch.as_tensor(X).flatten(1) + torch.as_tensor(delta0)).clamp(0, 1).view(20, 1, 4, 4)
    for _ in range(4):
        step = 0.03 * torch.cat([_input_gradient(cnn, x, t) for x, t in
                                 zip(x_adv.split(7), ts)]).sign()
        x_adv = (torch.as_tensor(X) + (x_adv - torch.as_tensor(X) + step).clamp(-0.1, 0.1)
                 ).clamp(0, 1)
    out = pgd(cnn, X_in, y, 0.1, step_size=0.03, n_steps=4, batch_size=7, random_state=3)
    assert out.tobytes() == x_adv.detach().numpy().tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # C&W's warning for rows it did not turn
        carlini_wagner_l2(cnn, X_in, y, n_steps=2, batch_size=7)
    np.testing.assert_array_equal(X_in, before)  # float32 rows are read in place, not written


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_pgd_restarts_only_add_successes_and_stay_in_the_ball(norm):
    net, (X, y) = small_net(), data()
    kw = dict(norm=norm, n_steps=5, return_success=True, random_state=0)
    X_one, ok_one = pgd(net, X, y, 0.05, **kw)
    X_many, ok_many = pgd(net, X, y, 0.05, n_restarts=4, **kw)
    assert np.all(ok_many >= ok_one)
    # a row that the first restart already misclassifies keeps that restart's iterate; the
    # others come from a later restart (L-infinity iterates often reach the same corner)
    np.testing.assert_array_equal(X_many[ok_one], X_one[ok_one])
    assert np.any(X_many[~ok_one] != X_one[~ok_one])
    d = (X_many - X).astype(np.float64)
    size = np.abs(d).max(1) if norm == "linf" else np.linalg.norm(d, axis=1)
    assert size.max() <= 0.05 * (1 + 1e-5)
    with torch.no_grad():
        z = net(torch.as_tensor(X_many))
    wrong = z.gather(1, torch.as_tensor(y)[:, None])[:, 0] <= z.scatter(
        1, torch.as_tensor(y)[:, None], float("-inf")).amax(1)
    np.testing.assert_array_equal(ok_many, wrong.numpy())


def test_pgd_takes_labels_of_an_estimator_with_classes():
    """Labels are the model's ``classes_`` when it has them (the former pgd_attack's rule)."""
    X, y = data(60, d=4)
    mlp = MLPClassifier((8,), max_iter=300, random_state=0).fit(X, np.array(["a", "b", "c"])[y])
    labels = mlp.predict(X)
    X_adv = pgd(mlp, X, labels, 0.2, random_state=0)
    assert (mlp.predict(X_adv) != labels).mean() > (mlp.predict(X) != labels).mean()
    with pytest.raises(ValueError, match="unseen by the classifier"):
        pgd(mlp, X, np.full(len(X), "z"), 0.2)


class _CountingNet(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net, self.calls = net, 0

    def forward(self, x):
        self.calls += 1
        return self.net(x)


@pytest.mark.parametrize("n_restarts", [1, 3])
def test_attacks_skip_the_success_pass_nobody_reads(n_restarts):
    # FGSM and PGD without return_success judged their last iterates with one more forward
    # pass (a third of FGSM's time); the iterates do not depend on it
    X, y = data()
    net = _CountingNet(small_net())
    assert fgsm(net, X, y, 0.1, batch_size=16).shape == X.shape
    # one gradient pass per batch of 16 out of 40 rows and the door's partial pass (two zero
    # rows up to the first layer) of a module with its own forward; no pass to count the
    # classes: the first batch's logits bound the labels
    assert net.calls == 3 + 1
    kwargs = dict(epsilon=0.3, n_steps=4, n_restarts=n_restarts, random_state=0, batch_size=16)
    net.calls = 0
    X_adv = pgd(net, X, y, **kwargs)
    calls = net.calls
    X_ok, success = pgd(net, X, y, return_success=True, **kwargs)
    assert net.calls - calls > calls  # the judging pass, where success is returned
    np.testing.assert_array_equal(X_adv, X_ok)
    assert success.any()
