"""InpaintingDisplay and OODScoreDisplay draw what the detector computes."""

import matplotlib
import numpy as np
import pytest

from geolearn.plotting import InpaintingDisplay, OODScoreDisplay

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture(scope="module")
def detector_and_data():
    from geolearn.datasets import load_digits_images, make_shape_images
    from geolearn.ood import InpaintingOODDetector

    X, _ = load_digits_images(return_X_y=True)
    X = X[:200] * 16  # raw digits scale: the display must divide by the data range
    det = InpaintingOODDetector(data_range=(0, 16), n_blocks=4, n_reconstructions=2,
                                n_inference_steps=5, n_timesteps=50, max_epochs=2,
                                denoiser="mlp", hidden_layer_sizes=(16,), device="cpu",
                                random_state=0).fit(X[:150])
    return det, X[150:], make_shape_images(10, random_state=0).data * 16


def test_triptych_rows_are_original_masked_and_inpainted(detector_and_data):
    det, X_in, X_out = detector_and_data
    disp = InpaintingDisplay.from_estimator(det, X_in, X_out, n_images=2, attempt=1)
    assert disp.axes_.shape == (4, 3)
    assert [disp.axes_[i, 0].get_ylabel() for i in range(4)] == ["ID 0", "ID 1", "OOD 0",
                                                                  "OOD 1"]
    images = np.r_[X_in[:2], X_out[:2]]
    rec = np.r_[det.reconstruct(X_in[:2], attempt=1), det.reconstruct(X_out[:2], attempt=1)]
    hidden = det.masks(1)[0] == 0
    red = np.array(matplotlib.colors.to_rgb("tab:red"))
    for i in range(4):
        original, masked, inpainted = (np.asarray(disp.images_[i, j].get_array())
                                       for j in range(3))
        np.testing.assert_allclose(original, images[i, 0] / 16, atol=1e-6)
        np.testing.assert_allclose(inpainted, np.clip(rec[i, 0] / 16, 0, 1), atol=1e-6)
        np.testing.assert_allclose(masked[hidden], np.tile(red, (hidden.sum(), 1)))
        np.testing.assert_allclose(masked[~hidden][:, 0], images[i, 0][~hidden] / 16, atol=1e-6)
        # the detector's distance: mean squared change on the [0, 1] scale, not the raw one
        text = disp.axes_[i, 2].texts[0].get_text()
        assert text == f"d = {np.mean(((images[i] - rec[i]) / 16) ** 2):.3g}"
    # the checkerboard alternates: attempt 0 inpaints what attempt 1 keeps
    disp0 = InpaintingDisplay.from_estimator(det, X_in, n_images=1, attempt=0)
    masked0 = np.asarray(disp0.images_[0, 1].get_array())
    assert disp0.axes_.shape == (1, 3)
    np.testing.assert_array_equal(np.all(masked0 == red, axis=-1), ~hidden)
    plt.close("all")


def test_score_histograms_and_their_auroc():
    rng = np.random.default_rng(0)
    s_in, s_out = rng.gamma(2.0, 1.0, 80), rng.gamma(4.0, 1.0, 60)
    fig, ax = plt.subplots()
    disp = OODScoreDisplay.from_results(s_in, s_out, threshold=3.0, bins=12, ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    # AUROC: the probability that an OOD score exceeds an ID score (ties count half)
    pairs = s_out[:, None] - s_in[None, :]
    assert disp.auroc_ == pytest.approx(np.mean(pairs > 0) + 0.5 * np.mean(pairs == 0))
    assert ax.get_legend().get_title().get_text() == f"AUROC {disp.auroc_:.3f}"
    edges = np.linspace(min(s_in.min(), s_out.min()), max(s_in.max(), s_out.max()), 13)
    np.testing.assert_allclose(disp.bins_, edges)
    density = np.histogram(s_out, bins=edges, density=True)[0]
    np.testing.assert_allclose([p.get_height() for p in disp.bars_out_], density)
    assert disp.threshold_line_.get_xdata()[0] == 3.0
    log = OODScoreDisplay.from_results(s_in, s_out, bins=5, log_scale=True)
    np.testing.assert_allclose(np.diff(np.log(log.bins_)), np.log(log.bins_[-1] / log.bins_[0]) / 5)
    assert log.ax_.get_xscale() == "log" and log.threshold_line_ is None
    with pytest.raises(ValueError, match="log_scale needs positive"):
        OODScoreDisplay.from_results(s_in - 5, s_out, log_scale=True)
    with pytest.raises(ValueError, match="non-empty and finite"):
        OODScoreDisplay.from_results([], s_out)
    plt.close("all")


def test_score_display_from_estimator_draws_its_scores_and_threshold(detector_and_data):
    det, X_in, X_out = detector_and_data
    disp = OODScoreDisplay.from_estimator(det, X_in, X_out, bins=8)
    np.testing.assert_allclose(disp.scores_in, det.ood_score(X_in))
    np.testing.assert_allclose(disp.scores_out, det.ood_score(X_out))
    # predict calls a row an outlier exactly when its score is past the drawn threshold
    x = disp.threshold_line_.get_xdata()[0]
    np.testing.assert_array_equal(det.predict(X_in) == -1, disp.scores_in > x)
    plt.close("all")
