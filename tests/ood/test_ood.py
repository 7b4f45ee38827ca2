"""InpaintingOODDetector: the LMD score's properties, sign conventions, bad inputs, sklearn use.

Properties of experiment 4 of the method's acceptance list (masks, kept pixels, exact zero
score with nothing inpainted, reproducibility, r = 1, signs, dropped y == -1 rows), row
independence, and the spec's bad inputs.
"""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from geolearn.exceptions import DataRangeWarning, GeolearnWarning
from geolearn.generative.ddpm import NoisePredictor, UNetDenoiser
from geolearn.ood import InpaintingOODDetector, make_ood_auroc_scorer, ood_roc_auc
from tests.helpers import check_bad_inputs, check_pipeline_gridsearch_pickle

TINY = dict(n_blocks=2, n_timesteps=50, n_inference_steps=8, hidden_layer_sizes=(16,),
            max_epochs=2, n_reconstructions=3, validation_fraction=0.2, batch_size=32,
            device="cpu", random_state=0)


def _images(n=40, side=4, seed=0):
    return np.random.default_rng(seed).random((n, side * side))


@pytest.fixture(scope="module")
def fitted():
    X = _images()
    return InpaintingOODDetector(**TINY).fit(X), X


def _mse01(det, X, rec):
    return (((rec - X) / det.data_scale_) ** 2).mean(axis=1)


# -- the score ------------------------------------------------------------------------------

def test_attempts_of_the_score_are_the_reconstructions(fitted):
    """ood_score's attempt a is reconstruct(X, a), and d is the MSE on the [0, 1] scale."""
    det, X = fitted
    X = 3 * X + 2  # data units other than [0, 1]
    det = InpaintingOODDetector(**{**TINY, "aggregate": "mean"}).fit(X)
    d = np.stack([_mse01(det, X[:6], det.reconstruct(X[:6], attempt=a)) for a in range(3)])
    np.testing.assert_allclose(det.ood_score(X[:6]), d.mean(0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(det.set_params(aggregate="median").ood_score(X[:6]),
                               np.median(d, 0), rtol=1e-6, atol=1e-9)
    r1 = det.set_params(n_reconstructions=1).ood_score(X[:6])
    np.testing.assert_allclose(r1, d[0], rtol=1e-6, atol=1e-9)  # r = 1: the single distance


@pytest.mark.parametrize("mask", ["checkerboard_alt", "checkerboard", "center", "random_patch"])
def test_kept_pixels_equal_the_input(mask):
    X = 10 * _images() - 3
    det = InpaintingOODDetector(**{**TINY, "mask": mask, "patch_size": 2}).fit(X)
    for a in range(3):
        kept = det.masks(a).ravel() == 1
        rec = det.reconstruct(X[:5], attempt=a)
        np.testing.assert_allclose(rec[:, kept], X[:5, kept], atol=1e-6)
        assert np.abs(rec[:, ~kept] - X[:5, ~kept]).max() > 1e-3  # the rest is inpainted
    if mask == "checkerboard_alt":
        np.testing.assert_array_equal(det.masks(0) + det.masks(1), 1)
        assert det.masks(0).mean() == 0.5
    if mask == "checkerboard":
        np.testing.assert_array_equal(det.masks(0), det.masks(1))


def test_nothing_inpainted_scores_exactly_zero():
    X = _images()
    det = InpaintingOODDetector(**{**TINY, "mask": np.ones((4, 4))}).fit(X)
    np.testing.assert_array_equal(det.reconstruct(X), X)
    np.testing.assert_array_equal(det.ood_score(X), 0.0)


def test_signs_threshold_and_reproducibility(fitted):
    det, X = fitted
    s = det.ood_score(X)
    assert np.all(s >= 0)
    np.testing.assert_array_equal(det.ood_score(X), s)  # fixed random_state
    assert not np.array_equal(det.ood_score(X, random_state=1), s)  # the noise is in the score
    np.testing.assert_array_equal(det.score_samples(X), -s)
    np.testing.assert_array_equal(det.decision_function(X), -s - det.offset_)
    pred = det.predict(X)
    np.testing.assert_array_equal(pred, np.where(-s - det.offset_ < 0, -1, 1))
    assert det.offset_ == np.quantile(-det.validation_scores_, det.contamination)
    assert len(det.validation_scores_) == 8  # 0.2 of 40 rows held out


def test_outliers_score_higher_than_held_out_inliers():
    """A trained model (MLP, 8 x 8 blobs) scores noise images far above held-out blobs."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[:8, :8]
    centres = rng.uniform(2, 5, size=(540, 2))
    X = np.exp(-((yy - centres[:, :1, None]) ** 2 + (xx - centres[:, 1:, None]) ** 2) / 4)
    X = X.reshape(540, 64)
    noise = rng.random((20, 64))
    det = InpaintingOODDetector(n_blocks=4, n_inference_steps=50, hidden_layer_sizes=(128, 128),
                                max_epochs=40, batch_size=64,
                                n_reconstructions=4, data_range=(0, 1), device="cpu",
                                random_state=0).fit(X[:520])
    X_mix, y_mix = np.r_[X[520:], noise], np.r_[np.ones(20), -np.ones(20)]
    auroc = make_ood_auroc_scorer()(det, X_mix, y_mix)
    # the value of the former ood_auroc_scorer, which read ood_score
    assert auroc == roc_auc_score(y_mix == -1, det.ood_score(X_mix))
    assert auroc > 0.95  # measured 1.0
    assert det.ood_score(noise).mean() > 3 * det.ood_score(X[520:]).mean()  # measured 4.8x
    assert (det.predict(noise) == -1).mean() > 0.9


def test_fit_drops_outlier_rows():
    X = _images(50)
    y = np.r_[np.ones(40), -np.ones(10)]
    mixed = InpaintingOODDetector(**TINY).fit(X, y)
    clean = InpaintingOODDetector(**TINY).fit(X[:40])
    np.testing.assert_array_equal(mixed.ood_score(X), clean.ood_score(X))
    assert mixed.offset_ == clean.offset_ and mixed.data_min_ == clean.data_min_
    np.testing.assert_array_equal(mixed.fit_predict(X, y), clean.predict(X))


# -- row independence -------------------------------------------------------------------------

def test_a_rows_score_depends_only_on_the_row(fitted):
    det, X = fitted
    s = det.ood_score(X)
    perm = np.random.default_rng(1).permutation(len(X))
    np.testing.assert_array_equal(det.ood_score(X[perm]), s[perm])
    np.testing.assert_array_equal(det.ood_score(X[7:8]), s[7:8])
    small = clone(det).set_params(inference_batch_size=3, n_jobs=2)
    small.__dict__.update({k: v for k, v in vars(det).items() if k.endswith("_")})
    np.testing.assert_array_equal(small.ood_score(X), s)


def test_torch_state_is_left_as_found(fitted):
    det, X = fitted
    threads, rng = torch.get_num_threads(), torch.random.get_rng_state()
    det.set_params(n_jobs=2).ood_score(X[:5])
    det.set_params(n_jobs=None)
    assert torch.get_num_threads() == threads
    assert torch.equal(torch.random.get_rng_state(), rng)


@settings(max_examples=15)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 6), st.just(16)),
                elements=st.floats(-1e3, 1e3, allow_subnormal=False)))
def test_any_finite_images_get_finite_scores(fitted, X):
    det, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataRangeWarning)  # tested below
        s = det.ood_score(X)
        single = [det.ood_score(x[None])[0] for x in X]
    assert s.shape == (len(X),) and np.all(np.isfinite(s)) and np.all(s >= 0)
    # same draws per row; float32 GEMM kernels round by the batch's row count, and inputs
    # 1e3 past the data range magnify that rounding (seen: 3.6e-6 relative)
    np.testing.assert_allclose(s, single, rtol=1e-5)


def test_data_range_warning_once_and_no_clipping(fitted):
    det, X = fitted
    Y = X[:4].copy()
    Y[0, 0] = 5.0
    with pytest.warns(DataRangeWarning, match="outside the data range") as record:
        s = det.ood_score(Y)
    assert len(record) == 1
    with pytest.warns(DataRangeWarning):
        Y_clipped = np.clip(Y, 0, 1)
        assert not np.array_equal(det.ood_score(np.r_[Y, Y_clipped])[:4],
                                  det.ood_score(Y_clipped))
    with pytest.warns(DataRangeWarning):
        rec = det.reconstruct(Y[:1])
    if det.masks(0).ravel()[0]:
        assert rec[0, 0] == 5.0
    assert s[0] > 0


# -- layouts, options -------------------------------------------------------------------------

def test_layouts_sample_and_denoisers():
    X = _images(30, side=8).reshape(30, 8, 8)
    det = InpaintingOODDetector(**{**TINY, "hidden_layer_sizes": (64,)}).fit(X)
    assert det.image_shape_ == (1, 8, 8) and det.n_features_in_ == 64
    assert det.reconstruct(X[:2]).shape == (2, 8, 8)
    assert det.reconstruct(X[:2].reshape(2, 1, 8, 8)).shape == (2, 1, 8, 8)
    assert det.reconstruct(X[:2].reshape(2, 64)).shape == (2, 64)
    assert det.sample(3, random_state=0).shape == (3, 8, 8)
    np.testing.assert_array_equal(det.sample(3, random_state=0), det.sample(3, random_state=0))
    assert 0 <= det.sample(5, random_state=1).min() and det.sample(5, random_state=1).max() <= 1
    # 'auto' is the MLP with the 64-dim sinusoidal time embedding
    mlp = det.denoiser_
    assert isinstance(mlp, NoisePredictor) and mlp.n_freq == 32
    assert mlp.frequencies == "geometric" and mlp.net[0].in_features == 64 + 64
    assert len(det.history_) == 2


def test_auto_denoiser_is_an_mlp_only_where_it_can_carry_the_noise():
    """'auto' takes the MLP only where its narrowest layer holds the image's values, else the
    UNet (regression: 28 x 28 images got the 256-wide MLP, whose training loss stays near
    0.75, so its inpaintings are noise and the AUROC on MNIST shifts is at chance)."""
    kw = {**TINY, "max_epochs": 1, "n_reconstructions": 1, "n_inference_steps": 2,
          "unet_channels": (8, 8)}
    X = _images(20, side=8)
    det = InpaintingOODDetector(**{**kw, "hidden_layer_sizes": (64, 32)}).fit(X)
    assert isinstance(det.denoiser_.denoiser, UNetDenoiser)
    det = InpaintingOODDetector(**{**kw, "hidden_layer_sizes": (64,)}).fit(X)
    assert isinstance(det.denoiser_, NoisePredictor)
    det = InpaintingOODDetector(**{**kw, "denoiser": "mlp", "hidden_layer_sizes": (32,)}).fit(X)
    assert isinstance(det.denoiser_, NoisePredictor)  # an explicit choice is kept
    # no UNet fits 6 x 6 images: the narrow MLP, with a warning that says why
    with pytest.warns(GeolearnWarning, match="narrower than the images' 36 values"):
        det = InpaintingOODDetector(**{**kw, "hidden_layer_sizes": (16,)}).fit(_images(20, 6))
    assert isinstance(det.denoiser_, NoisePredictor)


def test_unet_is_seeded_and_reproducible():
    """The UNet's weights are drawn under the training seed; torch's global RNG is untouched."""
    X = _images(20, side=8).reshape(20, 1, 8, 8)
    rng = torch.random.get_rng_state()
    unets = [InpaintingOODDetector(**{**TINY, "denoiser": "unet", "unet_channels": (8, 8),
                                      "max_epochs": 1, "n_reconstructions": 1,
                                      "n_inference_steps": 3}).fit(X) for _ in range(2)]
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert isinstance(unets[0].denoiser_.denoiser, UNetDenoiser)
    np.testing.assert_array_equal(unets[0].ood_score(X[:2]), unets[1].ood_score(X[:2]))


def test_distance_options(fitted):
    det, X = fitted
    rec = det.reconstruct(X[:4])
    one = dict(n_reconstructions=1)
    ssim = clone(det).set_params(distance="ssim", **one).fit(X).ood_score(X[:4])
    assert np.all((ssim > 0) & (ssim < 2))
    mse_call = clone(det).set_params(
        distance=lambda A, B: ((A - B) ** 2).mean(axis=(1, 2, 3)), **one).fit(X)
    np.testing.assert_allclose(mse_call.ood_score(X[:4]), _mse01(det, X[:4], rec), rtol=1e-6)
    feat = clone(det).set_params(distance="feature", feature_extractor=torch.nn.Flatten(),
                                 **one).fit(X)
    u, v = X[:4] / 1.0, rec  # data_range 'auto' ~ [0, 1]
    u, v = (u - det.data_min_) / det.data_scale_, (v - det.data_min_) / det.data_scale_
    cos = 1 - (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(feat.ood_score(X[:4]), cos, rtol=1e-5, atol=1e-7)
    bad = clone(det).set_params(distance=lambda A, B: np.zeros(3), **one)
    with pytest.raises(ValueError, match="one value per image"):
        bad.fit(X[:20])


def test_diffuse_lift_grows_with_diffusion_t(fitted):
    det, X = fitted
    scores = [clone(det).set_params(lift="diffuse", diffusion_t=t).fit(X).ood_score(X).mean()
              for t in (2, 40)]
    assert scores[0] < scores[1]
    d = clone(det).set_params(lift="diffuse", diffusion_t=2).fit(X)
    np.testing.assert_array_equal(d.masks(0), 0)


def test_ema_decay_zero_is_the_last_weights(fitted):
    det, X = fitted
    ref = det.denoiser_.state_dict()
    for decay, same in ((0.0, True), (0.9, False)):
        ema = clone(det).set_params(ema_decay=decay).fit(X).denoiser_.state_dict()
        assert all(torch.equal(ema[k], ref[k]) for k in ref) == same


def test_validation_fraction_zero_warns():
    with pytest.warns(GeolearnWarning, match="validation_fraction=0"):
        det = InpaintingOODDetector(**{**TINY, "validation_fraction": 0.0}).fit(_images(20))
    assert len(det.validation_scores_) == 20


def test_verbose_shows_progress(fitted, capsys):
    det, X = fitted
    clone(det).set_params(verbose=1, max_epochs=1).fit(X)
    out = capsys.readouterr()
    assert "ood_score" in out.err and "train_loss" in out.out


# -- bad inputs -------------------------------------------------------------------------------

def test_bad_inputs():
    check_bad_inputs(InpaintingOODDetector(**TINY), _images(20), min_samples=10)


class _WrongShape(torch.nn.Module):
    def forward(self, x, t):
        return x[:, :1]


@pytest.mark.parametrize("params, match", [
    (dict(n_blocks=5), "n_blocks=5 must be at most"),
    (dict(n_blocks=0), "n_blocks"),
    (dict(mask="random_patch", patch_size=3), "patch_size=3 must divide"),
    (dict(n_reconstructions=0), "n_reconstructions"),
    (dict(aggregate="max"), "aggregate"),
    (dict(mask="stripes"), "mask"),
    (dict(mask=np.ones((3, 3))), "mask must be one of"),
    (dict(distance="l1"), "distance"),
    (dict(lift="blur"), "lift"),
    (dict(contamination=0.0), "contamination"),
    (dict(contamination=0.6), "contamination"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(validation_fraction=0.02), "at least 2"),
    (dict(n_inference_steps=51), "n_inference_steps=51 must be at most"),
    (dict(n_inference_steps=0), "n_inference_steps"),
    (dict(lift="diffuse", diffusion_t=60), "diffusion_t=60"),
    (dict(beta_end=1.0), "beta_end"),
    (dict(beta_end=0.9), "beta_end"),
    (dict(data_range=(1, 0)), "data_range"),
    (dict(data_range=(0, np.inf)), "data_range"),
    (dict(distance="feature"), "feature_extractor"),
    (dict(denoiser="unet", unet_channels=(8, 8), image_shape=(2, 8)), "divisible by 4"),
    (dict(denoiser=_WrongShape(), max_epochs=0), "denoiser returned shape"),
    (dict(denoiser=_WrongShape(), max_epochs=1), "denoiser returned shape"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        InpaintingOODDetector(**{**TINY, **params}).fit(_images())


def test_bad_data():
    det = InpaintingOODDetector(**TINY)
    with pytest.raises(ValueError, match="constant"):
        clone(det).fit(np.ones((20, 16)))
    with pytest.raises(ValueError, match="not a square number"):
        clone(det).fit(np.random.default_rng(0).random((20, 15)))
    with pytest.raises(ValueError, match="image_shape"):
        clone(det).set_params(image_shape=(4, 5)).fit(_images())
    with pytest.raises(ValueError, match="at least 10 inlier rows"):
        clone(det).fit(_images(20), np.r_[np.ones(9), -np.ones(11)])
    with pytest.raises(ValueError, match="(?i)complex|numbers"):
        clone(det).fit(_images(20) + 1j)
    X = (_images(20) * 16).astype(int)
    fitted = clone(det).fit(X)  # integers are read as float32
    assert fitted.ood_score(X).dtype == np.float64
    with pytest.raises(ValueError, match=r"\(1, 5, 5\).*\(1, 4, 4\)|image_shape_"):
        fitted.ood_score(np.zeros((2, 5, 5)))
    with pytest.raises(ValueError, match="25 features.*16"):
        fitted.ood_score(np.zeros((2, 25)))


def test_lpips_and_device_errors():
    try:
        import lpips  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="offline"):
            InpaintingOODDetector(**{**TINY, "distance": "lpips"}).fit(_images())
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            InpaintingOODDetector(**{**TINY, "device": "cuda"}).fit(_images())


def test_unfitted_methods_raise():
    from sklearn.exceptions import NotFittedError

    det = InpaintingOODDetector(**TINY)
    for call in (lambda: det.ood_score(_images()), lambda: det.reconstruct(_images()),
                 lambda: det.masks(0), lambda: det.sample(2)):
        with pytest.raises(NotFittedError):
            call()


# -- scikit-learn integration -------------------------------------------------------------------

def test_pipeline_gridsearch_clone_pickle():
    rng = np.random.default_rng(0)
    X = np.r_[_images(60), rng.random((12, 16)) ** 4]
    y = np.r_[np.ones(60), -np.ones(12)]
    order = rng.permutation(len(X))
    search = check_pipeline_gridsearch_pickle(
        InpaintingOODDetector(**TINY, data_range=(0, 1)), X[order], y[order],
        param_grid={"n_blocks": [1, 2], "distance": ["mse", "ssim"]},
        scoring=make_ood_auroc_scorer(), cv=KFold(2, shuffle=True, random_state=0))
    assert set(search.best_params_) == {"n_blocks", "distance"}


class _RowImages(InpaintingOODDetector):
    """Flat rows of any width as one-row images (1, 1, n_features): sklearn's check data."""

    @staticmethod
    def _infer_image_shape(n_features):
        return (1, 1, n_features)


@pytest.mark.filterwarnings("ignore::geolearn.exceptions.GeolearnWarning")
@parametrize_with_checks(
    [_RowImages(n_blocks=1, n_timesteps=50, n_inference_steps=4, hidden_layer_sizes=(8,),
                max_epochs=1, n_reconstructions=2, validation_fraction=0.2, batch_size=32,
                random_state=0, device="cpu")],
    expected_failed_checks=lambda est: {
        k: v for k, v in InpaintingOODDetector._expected_failed_checks.items()
        if k.startswith("check_outliers")})
def test_sklearn_checks_on_row_images(estimator, check):
    """The checks the registry declares for sklearn's non-square rows pass on row images."""
    check(estimator)


@settings(max_examples=15)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 5), st.just(16)),
                elements=st.floats(0, 1)),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]), data=st.data())
def test_non_finite_values_are_refused(fitted, X, bad, data):
    det, _ = fitted
    X = X.copy()
    X.flat[data.draw(st.integers(0, X.size - 1))] = bad
    for method in (det.ood_score, det.reconstruct, det.predict):
        with pytest.raises(ValueError, match="(?i)nan|infinity"):
            method(X)


def test_training_images_outside_a_given_range_warn_once():
    X = _images()
    X[0, 0] = 2.0
    with pytest.warns(DataRangeWarning) as record:
        InpaintingOODDetector(**{**TINY, "data_range": (0, 1)}).fit(X)
    assert len(record) == 1


@pytest.mark.filterwarnings("ignore::geolearn.exceptions.DataRangeWarning")  # unbounded data
@pytest.mark.parametrize("lift, gate", [("inpaint", 0.99), ("diffuse", 0.93)])
def test_exact_denoiser_separates_white_noise_fast(lift, gate):
    """A 4 x 4 version of the oracle reproduction: Gaussian images vs white noise.

    With the exact noise predictor no training is involved (measured AUROC: inpainting
    1.0, diffuse-denoise to t = 300 0.975).
    """
    from scipy.linalg import toeplitz

    from tests.reproductions.test_ood_oracle import ExactGaussianDenoiser

    K = toeplitz(0.9 ** np.arange(4))
    sigma = np.kron(K, K)
    rng = np.random.default_rng(0)
    X_id = rng.multivariate_normal(np.zeros(16), sigma, size=150)
    X_ood = rng.normal(size=(150, 16))
    det = InpaintingOODDetector(
        image_shape=(4, 4), denoiser=ExactGaussianDenoiser(sigma), max_epochs=0,
        data_range=(-1, 1), clip_output=False, n_blocks=4, n_reconstructions=4,
        n_inference_steps=50, lift=lift, diffusion_t=300, device="cpu",
        random_state=0).fit(X_id[:20])
    assert ood_roc_auc(det.ood_score(X_id), det.ood_score(X_ood)) >= gate


def test_colour_images_share_the_mask_across_channels():
    X = np.random.default_rng(0).random((30, 3, 4, 4))
    det = InpaintingOODDetector(**{**TINY, "max_epochs": 1}).fit(X)
    assert det.image_shape_ == (3, 4, 4)
    m = det.masks(1)
    assert m.shape == (3, 4, 4) and (m == m[:1]).all()
    rec = det.reconstruct(X[:2], attempt=1)
    assert rec.shape == (2, 3, 4, 4)
    np.testing.assert_array_equal(rec[:, m == 1], X[:2][:, m == 1])
    flat = InpaintingOODDetector(**{**TINY, "max_epochs": 1, "image_shape": (3, 4, 4)})
    np.testing.assert_array_equal(flat.fit(X.reshape(30, -1)).ood_score(X.reshape(30, -1)),
                                  det.ood_score(X))
