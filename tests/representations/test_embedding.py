"""TorchEmbedder and FourierEmbedding."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from torch import nn

from geolearn.representations import FourierEmbedding, TorchEmbedder
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle


def cnn(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(48, 5), nn.Tanh(), nn.Dropout(0.5), nn.Linear(5, 3))


def images(n=20, seed=0):
    return np.random.default_rng(seed).random((n, 1, 4, 4)).astype(np.float32)


def test_penultimate_embedding_is_the_input_of_the_final_linear():
    net = cnn().train()
    X = images()
    E = TorchEmbedder(net).fit(X).transform(X)
    with torch.no_grad():
        ref = net[:6].eval()(torch.as_tensor(X)).numpy()  # dropout off: identity
    net.train()
    assert E.dtype == np.float32 and E.shape == (20, 5)  # float32 images: float32 out
    np.testing.assert_allclose(E, ref, atol=1e-6)


def test_named_layer_and_flat_rows():
    net = cnn()
    X = images()
    emb = TorchEmbedder(net, layer="1", image_shape=(1, 4, 4)).fit(X.reshape(20, -1))
    E = emb.transform(X.reshape(20, -1))
    with torch.no_grad():
        ref = net[:2](torch.as_tensor(X)).flatten(1).numpy()
    assert emb.embedding_dim_ == 48 and emb.n_features_in_ == 16
    np.testing.assert_allclose(E, ref, atol=1e-6)


def test_model_state_and_modes_are_unchanged():
    net = cnn().train()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    TorchEmbedder(net).fit(images()).transform(images())
    assert all(m.training for m in net.modules())
    assert not net[-1]._forward_pre_hooks
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k])


def test_mixed_modes_and_gradient_flags_are_restored_and_frozen_meanwhile():
    """Regression (#14): embeddings are read inside ModelAdapter.frozen(): eval mode and no
    parameter gradients meanwhile, each submodule's mode and each parameter's requires_grad
    restored after, even when mixed."""
    net = cnn().train()
    net[3].eval()
    net[3].weight.requires_grad_(False)
    modes = [m.training for m in net.modules()]
    flags = [p.requires_grad for p in net.parameters()]
    seen = []
    net[3].register_forward_hook(
        lambda mod, inp, out: seen.append((net[5].training, net[0].weight.requires_grad)))
    emb = TorchEmbedder(net).fit(images())
    E = emb.transform(images())
    assert seen and set(seen) == {(False, False)}  # dropout off, no parameter gradients
    assert [m.training for m in net.modules()] == modes and modes.count(False) == 1
    assert [p.requires_grad for p in net.parameters()] == flags and flags.count(False) == 1
    assert all(p.grad is None for p in net.parameters())
    np.testing.assert_array_equal(E, emb.transform(images()))  # dropout off: deterministic


def test_skorch_net():
    from skorch import NeuralNetClassifier

    X = images(40)
    y = np.arange(40) % 3
    net = NeuralNetClassifier(cnn(), criterion=nn.CrossEntropyLoss, max_epochs=1,
                              train_split=None, verbose=0).fit(X, y)
    np.testing.assert_allclose(TorchEmbedder(net).fit(X).transform(X),
                               TorchEmbedder(net.module_).fit(X).transform(X))


def test_batches_give_the_same_embeddings():
    X = images(50)
    np.testing.assert_allclose(TorchEmbedder(cnn(), batch_size=7).fit(X).transform(X),
                               TorchEmbedder(cnn(), batch_size=64).fit(X).transform(X),
                               atol=1e-6)


def test_errors():
    X = images()
    check_bad_inputs(TorchEmbedder(cnn(), image_shape=(1, 4, 4)), X.reshape(20, -1),
                     cases=("nan", "inf", "image_shape", "unfitted"), min_samples=1)
    emb = TorchEmbedder(cnn()).fit(X)
    with pytest.raises(ValueError, match=r"samples of shape \(1, 5, 5\)"):
        emb.transform(np.zeros((2, 1, 5, 5), np.float32))
    with pytest.raises(ValueError, match="no torch.nn.Linear layer"):
        TorchEmbedder(nn.Sequential(nn.Flatten())).fit(X)
    with pytest.raises(ValueError, match="layer='nope'"):
        TorchEmbedder(cnn(), layer="nope").fit(X)
    with pytest.raises(ValueError, match="never moves"):
        TorchEmbedder(cnn(), device="meta").fit(X)
    with pytest.raises(NotFittedError):
        from skorch import NeuralNetClassifier

        TorchEmbedder(NeuralNetClassifier(cnn())).fit(X)


def test_pipeline_gridsearch_pickle():
    X = images(30).reshape(30, -1)
    y = np.arange(30) % 2
    from sklearn.svm import LinearSVC

    check_pipeline_gridsearch_pickle(TorchEmbedder(cnn(), image_shape=(1, 4, 4)), X, y,
                                     param_grid={"batch_size": [8, 64]},
                                     scoring=lambda est, X, y: 0.0)
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(TorchEmbedder(cnn(), image_shape=(1, 4, 4)), LinearSVC()).fit(X, y)
    assert pipe.predict(X).shape == (30,)


@settings(max_examples=20)
@given(n=st.integers(1, 5), d=st.integers(1, 16), seed=st.integers(0, 1000))
def test_fourier_spectra(n, d, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    mag = FourierEmbedding().fit_transform(X)
    phase = FourierEmbedding(part="phase").fit_transform(X)
    np.testing.assert_allclose(mag * np.exp(1j * phase), np.fft.fft(X, axis=1), atol=1e-10)
    # Parseval, and the magnitude spectrum ignores circular shifts of the embedding
    np.testing.assert_allclose((mag**2).sum(1), d * (X**2).sum(1), rtol=1e-10)
    np.testing.assert_allclose(FourierEmbedding().fit_transform(np.roll(X, 1, axis=1)), mag,
                               atol=1e-10)


def test_fourier_errors():
    with pytest.raises(ValueError, match="part"):
        FourierEmbedding(part="power").fit(np.ones((2, 3)))
    check_bad_inputs(FourierEmbedding(), np.ones((4, 3)), cases=("nan", "inf", "ndim"))


class _SkipsHead(nn.Module):
    """A classifier whose forward returns before its final linear layer."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.body(x)


def test_a_head_the_forward_pass_skips_is_named():
    # the adapter's LayerNotReachedError becomes an error that says what to pass
    X = np.random.RandomState(0).rand(5, 4).astype(np.float32)
    with pytest.raises(RuntimeError, match="never reached its final nn.Linear; pass layer="):
        TorchEmbedder(_SkipsHead()).fit(X).transform(X)
    assert TorchEmbedder(_SkipsHead(), layer="body").fit(X).transform(X).shape == (5, 3)
