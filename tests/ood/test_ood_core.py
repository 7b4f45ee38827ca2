"""The DDPM-core pieces of InpaintingOODDetector: respacing, inpainting, masks, SSIM, EMA, AUROC."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from geolearn.generative.ddpm import (
    EMAWeights,
    ancestral_sample,
    diffusion_schedule,
    inpaint_sample,
    inpainting_mask,
    respaced_grid,
    time_grid,
)
from geolearn.ood import make_ood_auroc_scorer, ood_roc_auc
from geolearn.ood._distances import cosine_distance, mse_distance, ssim_distance

ABAR = diffusion_schedule(1000)[1]


def _exact_eps(x, t):
    return math.sqrt(1 - ABAR[t]) * x  # exact noise predictor of N(0, I) data


# -- respacing ------------------------------------------------------------------------------

@given(T=st.integers(1, 2000), data=st.data())
def test_respaced_grid_is_rounded_linspace(T, data):
    S = data.draw(st.integers(1, T))
    grid = respaced_grid(T, S)
    assert grid[0] == 0 and grid[-1] == T and len(grid) == S + 1
    np.testing.assert_array_equal(grid[1:], np.round(np.linspace(1, T, S)) if S > 1 else [T])
    assert np.all(np.diff(grid) > 0)


def test_respaced_grid_full_and_truncated():
    assert respaced_grid(50) == time_grid(50)
    g = respaced_grid(1000, 100, stop=500)
    assert g[-1] == 500 and all(t < 500 for t in g[:-1]) and g[:3] == [0, 1, 11]


# -- the inpainting sampler -----------------------------------------------------------------

def test_inpaint_with_nothing_known_is_posterior_ancestral_sampling():
    """An all-False mask gives ancestral sampling with the posterior variance, draw for draw."""
    grid = respaced_grid(1000, 20)
    x_T = torch.randn(64, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    gen_a = torch.Generator().manual_seed(2)
    ref = ancestral_sample(_exact_eps, x_T, ABAR, grid, "posterior", generator=gen_a)
    gen_b = torch.Generator().manual_seed(2)
    out = inpaint_sample(_exact_eps, x_T, torch.zeros_like(x_T), torch.tensor(False), ABAR, grid,
                         lambda k: torch.randn(x_T.shape, generator=gen_b, dtype=x_T.dtype))
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)


def test_inpaint_keeps_known_pixels_and_clips_only_the_unknown():
    known = torch.tensor([[5.0, -5.0, 0.3, 0.1]])
    mask = torch.tensor([True, True, False, False])
    gen = torch.Generator().manual_seed(0)
    out = inpaint_sample(lambda x, t: -10 * torch.ones_like(x), torch.zeros(1, 4), known, mask,
                         ABAR, respaced_grid(1000, 10),
                         lambda k: torch.randn(1, 4, generator=gen), clip=(-1.0, 1.0))
    assert out[0, :2].tolist() == [5.0, -5.0]  # exactly the input, outside the clip range
    assert out[0, 2:].abs().max() <= 1.0


def test_inpaint_known_pixels_follow_the_forward_chain():
    """Before the last step the known pixels are fresh forward draws sqrt(abar_s) x + ... z."""
    grid = [0, 500, 1000]
    known, mask = torch.full((1, 2), 0.7), torch.tensor([True, False])
    z = torch.tensor([[0.4, -0.2]])
    calls = []

    def eps(x, t):
        calls.append((t, x.clone()))
        return torch.zeros_like(x)

    inpaint_sample(eps, torch.zeros(1, 2), known, mask, ABAR, grid, lambda k: z)
    t, x_500 = calls[1]
    assert t == 500
    expected = math.sqrt(ABAR[500]) * 0.7 + math.sqrt(1 - ABAR[500]) * 0.4
    assert x_500[0, 0].item() == pytest.approx(expected, rel=1e-6)


# -- masks ----------------------------------------------------------------------------------

@given(H=st.integers(1, 12), W=st.integers(1, 12), data=st.data())
def test_alternating_masks_are_complementary(H, W, data):
    N = data.draw(st.integers(1, min(H, W)))
    a = data.draw(st.integers(0, 5))
    m0 = inpainting_mask("checkerboard_alt", (2, H, W), a, N)
    m1 = inpainting_mask("checkerboard_alt", (2, H, W), a + 1, N)
    np.testing.assert_array_equal(m0.astype(int) + m1.astype(int), 1)
    np.testing.assert_array_equal(inpainting_mask("checkerboard", (2, H, W), a, N),
                                  inpainting_mask("checkerboard_alt", (2, H, W), 0, N))
    # the block of pixel (i, j) is (floor(i N / H), floor(j N / W))
    i, j = data.draw(st.integers(0, H - 1)), data.draw(st.integers(0, W - 1))
    assert m0[1, i, j] == ((i * N // H + j * N // W + a) % 2 == 0)
    if N % 2 == 0 and H % N == 0 and W % N == 0:
        assert m0.mean() == 0.5


def test_center_and_random_patch_masks():
    c = inpainting_mask("center", (1, 8, 6))[0]
    assert (~c).sum() == 4 * 3 and not c[2:6, 1:4].any() and c[1].all() and c[:, 4].all()
    masks = [inpainting_mask("random_patch", (3, 8, 8), a, patch_size=2, random_state=[7, a])
             for a in range(4)]
    for m in masks:
        patches = m[0].reshape(4, 2, 4, 2).transpose(0, 2, 1, 3).reshape(16, 4)
        assert np.all(patches.all(1) | ~patches.any(1))  # whole patches only
        assert (~patches.any(1)).sum() == 8  # ceil(16 / 2) inpainted
        assert (m == m[:1]).all()  # the same for every channel
    assert not all((m == masks[0]).all() for m in masks[1:])  # a new draw each attempt
    np.testing.assert_array_equal(
        masks[1], inpainting_mask("random_patch", (3, 8, 8), 1, patch_size=2, random_state=[7, 1]))


# -- distances ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 1, 8, 8), (2, 3, 9, 11), (2, 1, 5, 6)])
def test_ssim_matches_skimage(shape):
    skm = pytest.importorskip("skimage.metrics")
    rng = np.random.default_rng(0)
    X = rng.random(shape)
    Y = np.clip(X + 0.2 * rng.normal(size=shape), 0, 1)
    ours = ssim_distance(torch.as_tensor(X), torch.as_tensor(Y)).numpy()
    win = min(7, shape[2], shape[3])
    win -= 1 - win % 2
    ref = [1 - np.mean([skm.structural_similarity(x[c], y[c], data_range=1, win_size=win)
                        for c in range(shape[1])]) for x, y in zip(X, Y)]
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def test_mse_and_cosine_distances():
    X, Y = torch.zeros(2, 1, 2, 2), torch.tensor([0.5, 1.0]).reshape(2, 1, 1, 1).expand(2, 1, 2, 2)
    np.testing.assert_allclose(mse_distance(X, Y).numpy(), [0.25, 1.0])
    np.testing.assert_allclose(cosine_distance([[1.0, 1.0], [2.0, 0.0]], [[2.0, 2.0], [-1.0, 0.0]]),
                               [0.0, 2.0], atol=1e-12)


# -- EMA --------------------------------------------------------------------------------------

def test_ema_weights_average_the_trajectory():
    from skorch import NeuralNetRegressor

    torch.manual_seed(0)
    trajectory = []

    class Record(EMAWeights):
        def on_batch_end(self, net, training=False, **kwargs):
            super().on_batch_end(net, training=training, **kwargs)
            trajectory.append(net.module_.weight.detach().clone())

    start = torch.nn.Linear(1, 1)
    init = start.weight.detach().clone()
    net = NeuralNetRegressor(start, max_epochs=3, batch_size=2, lr=0.1, train_split=None,
                             callbacks=[Record(0.5)], verbose=0)
    net.fit(torch.randn(4, 1), torch.randn(4, 1))
    expected = init
    for w in trajectory:
        expected = 0.5 * expected + 0.5 * w
    torch.testing.assert_close(net.module_.weight.detach(), expected)


# -- AUROC helpers ----------------------------------------------------------------------------

def test_ood_roc_auc_and_scorer():
    rng = np.random.default_rng(0)
    s_in, s_out = rng.normal(size=30), rng.normal(1, size=20)
    expected = roc_auc_score(np.r_[np.zeros(30), np.ones(20)], np.r_[s_in, s_out])
    assert ood_roc_auc(s_in, s_out) == pytest.approx(expected)
    with pytest.raises(ValueError, match="both kinds"):
        ood_roc_auc(s_in, [])
    X = np.r_[rng.normal(size=(40, 2)), rng.normal(4, 1, size=(10, 2))]
    y = np.r_[np.ones(40), -np.ones(10)]
    forest = IsolationForest(random_state=0).fit(X[:40])
    pipe = make_pipeline(FunctionTransformer(), IsolationForest(random_state=0)).fit(X[:40])
    expected = roc_auc_score(y == -1, -forest.score_samples(X))
    scorer = make_ood_auroc_scorer()
    assert scorer(forest, X, y) == expected
    assert scorer(pipe, X, y) == expected
    with pytest.raises(ValueError, match="inlier"):
        scorer(forest, X, (y > 0).astype(int))
