"""ReconstructionDisplay and TrainingCurvesDisplay: what they draw is what the models give."""

import matplotlib
import numpy as np
import pytest
from sklearn.decomposition import PCA

from geolearn.generative import GridVAE
from geolearn.meta_learning import MetaManifoldAutoencoder, ReconstructionMetrics
from geolearn.meta_learning.metrics import persistence_wasserstein
from geolearn.plotting import ReconstructionDisplay, TrainingCurvesDisplay

matplotlib.use("Agg")

SMALL = dict(architecture="mlp", hidden_layer_sizes=(8,), max_epochs=12, log_every=4, batch_size=6,
             random_state=0, device="cpu")


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).random((40, 3, 4, 4))


def test_image_rows_are_the_data_and_each_reconstruction(images):
    import matplotlib.pyplot as plt

    models = {"plain": MetaManifoldAutoencoder(episodic_strategy=None, **SMALL).fit(images),
              "meta": MetaManifoldAutoencoder(**SMALL).fit(images)}
    disp = ReconstructionDisplay.from_estimator(models, images[:5], n_images=5)
    picture = disp.axes_[0].images[0].get_array()
    assert picture.shape == (3 * 5 - 1, 5 * 5 - 1, 3)  # 3 rows of 5 tiles of 4x4, 1 px gaps
    # row 1, tile 2 is the plain model's reconstruction of image 2, channel-last
    tile = np.asarray(picture[5:9, 10:14])
    expected = models["plain"].reconstruct(images[2:3]).reshape(3, 4, 4).transpose(1, 2, 0)
    np.testing.assert_allclose(tile, expected, rtol=1e-6)
    labels = [t.get_text() for t in disp.axes_[0].get_yticklabels()]
    assert labels == ["data", "plain", "meta"]
    plt.close(disp.figure_)


def test_vectors_are_drawn_on_the_datas_principal_axes():
    import matplotlib.pyplot as plt

    X = np.random.default_rng(1).random((30, 5))
    ae = MetaManifoldAutoencoder(**SMALL).fit(X)
    disp = ReconstructionDisplay.from_estimator([ae], X)
    data = disp.axes_[0].collections[0].get_offsets()
    rec = disp.axes_[0].collections[1].get_offsets()
    # the data's first two principal axes (up to sign), and the reconstructions on the same axes
    pca = PCA(2).fit(X)
    signs = np.sign(np.sum(data * pca.transform(X), axis=0))
    np.testing.assert_allclose(data, pca.transform(X) * signs, atol=1e-9)
    np.testing.assert_allclose(rec, pca.transform(ae.reconstruct(X)) * signs, atol=1e-9)
    assert disp.axes_[0].get_title() == "MetaManifoldAutoencoder 0"
    plt.close(disp.figure_)


def test_curves_are_the_history_and_the_callback_records_the_metrics(images):
    import matplotlib.pyplot as plt

    held = images[:12]
    ae = MetaManifoldAutoencoder(callbacks=[ReconstructionMetrics(held)], **SMALL).fit(images)
    assert ae.history_[:, "iteration"] == [4, 8, 12]
    last = ae.history_[-1]
    rec = ae.reconstruct(held)
    flat = held.reshape(12, -1)
    assert last["holdout_mse"] == pytest.approx(np.mean((flat - rec) ** 2), rel=1e-5)
    assert last["holdout_persistence"] == pytest.approx(
        persistence_wasserstein(flat, rec)["total"], rel=1e-4)
    disp = TrainingCurvesDisplay.from_estimator({"meta": ae},
                                                keys=["train_loss", "holdout_persistence"])
    line = disp.lines_["holdout_persistence", "meta"]
    np.testing.assert_array_equal(line.get_xdata(), [4, 8, 12])
    np.testing.assert_allclose(line.get_ydata(),
                               ae.history_[:, "holdout_persistence"])
    with pytest.raises(ValueError, match="has no"):
        TrainingCurvesDisplay.from_estimator({"meta": ae}, keys=["holdout_spectral_x"])
    # any gradient-trained estimator's history, against its epochs, one estimator alone
    vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=3, device="cpu", random_state=0)
    disp = TrainingCurvesDisplay.from_estimator(vae.fit(images.reshape(40, -1)))
    assert sorted(disp.keys) == ["kl", "recon", "train_loss"]
    line = disp.lines_["kl", "GridVAE 0"]
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(line.get_ydata(), vae.history_[:, "kl"])
    assert disp.axes_[0].get_xlabel() == "epoch"
    with pytest.raises(ValueError, match="metrics"):
        MetaManifoldAutoencoder(callbacks=[ReconstructionMetrics(held, metrics=("fid",))],
                                **SMALL).fit(images)
    plt.close("all")
