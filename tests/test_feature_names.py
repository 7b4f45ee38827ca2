"""Every transformer names its output features and follows ``set_output``.

scikit-learn's estimator checks (``check_transformer_get_feature_names_out``,
``check_set_output_transform``) then verify the names against ``transform`` for
each registered instance; this module makes sure no transformer opts out by
lacking the methods, and checks the names where they carry meaning.
"""

import numpy as np
import pytest

from tests.registry import all_registered

# outputs that are not a table of features, with the reason
NO_NAMES = {"SubspaceEmbedding": "transforms sets into orthonormal bases (r, n, l), not rows"}

TRANSFORMERS = sorted({type(e).__name__: e for e in all_registered()
                       if hasattr(e, "transform") and type(e).__name__ not in NO_NAMES}.items())


@pytest.mark.parametrize("name, est", TRANSFORMERS, ids=[n for n, _ in TRANSFORMERS])
def test_every_transformer_names_its_features(name, est):
    """Defect: SVBF, LinearEmbeddingMap, TorchEmbedder, ... had no get_feature_names_out."""
    assert hasattr(est, "get_feature_names_out") and hasattr(est, "set_output")


def test_the_exempt_transformers_do_not_output_tables():
    """An exemption holds only while its transform really gives no rows of features."""
    from geolearn.subspaces import SubspaceEmbedding

    assert set(NO_NAMES) == {"SubspaceEmbedding"}
    sets = np.random.default_rng(0).standard_normal((5, 6, 2))
    assert SubspaceEmbedding().fit_transform(sets).ndim == 3
    assert not hasattr(SubspaceEmbedding(), "get_feature_names_out")


def test_svbf_names_follow_transform_output():
    from geolearn.subspaces import SVBF

    rng = np.random.default_rng(0)
    sets = np.linalg.qr(rng.standard_normal((30, 6, 2)))[0]
    svbf = SVBF(3, intersection_dim=2, random_state=0).fit(sets)
    svbf.set_output(transform="pandas")
    assert list(svbf.set_params(transform_output="angles").transform(sets).columns) == \
        ["svbf_theta1", "svbf_theta2"]
    cos = svbf.set_params(transform_output="cosines").transform(sets)
    assert list(cos.columns) == ["svbf_cos1", "svbf_cos2"] and np.all(cos.to_numpy() <= 1)
    with pytest.raises(ValueError, match="change_of_basis.*no fixed feature names"):
        svbf.set_params(transform_output="change_of_basis").get_feature_names_out()


def test_a_pipeline_of_autoencoder_codes_keeps_the_names():
    """CodecMixin's transform is wrapped by set_output (it was not: numpy came back)."""
    from geolearn.meta_learning import MetaManifoldAutoencoder

    X = np.random.default_rng(0).random((40, 6)).astype(np.float32)
    ae = MetaManifoldAutoencoder(n_latent=2, hidden_layer_sizes=(8,), max_epochs=2, batch_size=4,
                                 loss="mse", episodic_strategy=None, random_state=0)
    Z = ae.set_output(transform="pandas").fit(X).transform(X)
    assert list(Z.columns) == ["metamanifoldautoencoder0", "metamanifoldautoencoder1"]
