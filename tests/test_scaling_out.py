"""geolearn past one machine: joblib's Dask (and Ray) backends, dask-ml wrappers, blockwise R_f.

The Dask tests share one real ``distributed.LocalCluster`` with 2 workers (the module's
``client`` fixture): a scheduler, workers and the Dask joblib backend as on a real cluster.
The workers are threads of the test process (``processes=False``): worker processes would
import torch and geolearn again, which costs more than all these tests on 2 cores.
The code of ``docs/user_guide/scaling_out.md`` runs here as written (``test_docs_recipes_run``),
and the ``recipe_*`` functions below repeat it for the other families.
"""

import builtins
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from joblib import parallel_backend
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline

from geolearn.datasets import load_digits_images, make_transforming_mnist
from geolearn.diffeo import make_stability_scorer
from geolearn.generative import GridVAE
from geolearn.invariance import InvariantClassifier
from geolearn.manifold import CIDM
from geolearn.polytopes import ReLUPolytopes
from geolearn.riemannian import RiemannianFeatureGeometry
from geolearn.subspaces import SubspaceEmbedding, SVBFClassifier, make_subspace_sets

_SCALE = "the scale-out peers are in the 'scale' extra: pip install -e \".[scale]\""
distributed = pytest.importorskip("distributed", reason=_SCALE)
da = pytest.importorskip("dask.array", reason=_SCALE)
dask = pytest.importorskip("dask", reason=_SCALE)
pytest.importorskip("dask_ml", reason=_SCALE)

pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    # distributed's note that the cluster's ports are in use is noise here
    "ignore::UserWarning:distributed.*",
)


@pytest.fixture(scope="module")
def client():
    """One LocalCluster of 2 single-threaded workers for the whole module."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client


DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "user_guide" / "scaling_out.md"


def docs_blocks():
    """The python blocks of the Scaling out page, in order."""
    return re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(), flags=re.DOTALL)


def run_blocks(blocks, namespace):
    for code in blocks:
        exec(compile(code, str(DOCS_PAGE), "exec"), namespace)  # noqa: S102  (the docs page)
    return namespace


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:400] / 16.0, y[:400]


# --------------------------------------------------------------------------- the recipes
def recipe_grid_search_on_dask(search, X, y=None):
    """Docs recipe: a scikit-learn search whose fits run on a Dask cluster."""
    with parallel_backend("dask"):   # a distributed.Client must exist
        search.fit(X, y)
    return search


def recipe_parallel_post_fit(estimator, X_fit, X_big, method="transform"):
    """Docs recipe: fit in memory, then transform a dask array block by block."""
    from dask_ml.wrappers import ParallelPostFit

    wrapped = ParallelPostFit(estimator).fit(X_fit)
    # dask-ml guesses the output's shape from the input's: compute, don't trust .shape
    return getattr(wrapped, method)(X_big).compute()


# --------------------------------------------------------------------------- grid searches
def _on_cluster_equals_in_memory(client, make_search, X, y=None):
    """The same search in memory and on the cluster: same choice, same scores."""
    expected = make_search().set_params(n_jobs=None).fit(X, y)   # in memory, one process
    with distributed.get_task_stream(client) as tasks:
        got = recipe_grid_search_on_dask(make_search(), X, y)
    assert tasks.data, "the search did not run on the cluster"
    assert got.best_params_ == expected.best_params_
    # the workers use one torch thread, the test process maybe more: equal up to rounding
    np.testing.assert_allclose(got.cv_results_["mean_test_score"],
                               expected.cv_results_["mean_test_score"], rtol=1e-6)
    return got


def test_invariant_classifier_grid_search(client):
    X, y = make_transforming_mnist(group="rot4", transform=False, random_state=0,
                                   return_X_y=True)
    _on_cluster_equals_in_memory(client, lambda: GridSearchCV(
        InvariantClassifier(group="rot4", hidden_layer_sizes=(8,), max_epochs=2,
                            batch_size=60, device="cpu", random_state=0),
        {"nu": [0.0, 1.0]}, cv=2, n_jobs=-1), X[:120], y[:120])


def test_svbf_classifier_grid_search(client):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((240, 10)), np.repeat([0, 1], 120)
    X[y == 1, :3] += 2.0
    sets, labels = make_subspace_sets(X, y, set_size=3, random_state=0)
    _on_cluster_equals_in_memory(client, lambda: GridSearchCV(
        make_pipeline(SubspaceEmbedding(),
                      SVBFClassifier(n_components=1, n_init=1, max_iter=30, random_state=0)),
        {"svbfclassifier__n_components": [1, 2]}, cv=2, n_jobs=-1), sets, labels)


def test_grid_vae_grid_search(client, digits):
    _on_cluster_equals_in_memory(client, lambda: GridSearchCV(
        GridVAE(hidden_layer_sizes=(16,), max_epochs=2, batch_size=64, n_mc_score=2, device="cpu",
                random_state=0),
        {"beta": [0.5, 1.0]}, cv=2, n_jobs=-1), digits[0])


def test_stability_scorer_grid_search(client):
    X, y = load_digits_images(upsample=2, return_X_y=True)
    X = X[:240].reshape(240, -1)   # 120 probes a fold
    _on_cluster_equals_in_memory(client, lambda: GridSearchCV(
        LogisticRegression(max_iter=50), {"C": [0.01, 1.0]}, cv=2, n_jobs=-1,
        scoring=make_stability_scorer(image_shape=(16, 16))), X, y[:240])


def test_docs_recipes_run(client):
    """The page's Dask recipes, as written, on this module's cluster (its own client aside)."""
    blocks = [b for b in docs_blocks() if "LocalCluster(" not in b and "import ray" not in b]
    assert len(blocks) == 4
    with distributed.get_task_stream(client) as tasks:
        ns = run_blocks(blocks, {})
    assert tasks.data, "the recipes did not run on the cluster"
    X, y = ns["X"], ns["y"]
    expected = clone(ns["search"]).set_params(n_jobs=None).fit(X, y)
    assert ns["search"].best_params_ == expected.best_params_
    np.testing.assert_allclose(ns["search"].cv_results_["mean_test_score"],
                               expected.cv_results_["mean_test_score"], rtol=1e-6)
    np.testing.assert_array_equal(ns["Z"], ns["cidm"].estimator.transform(X))
    assert ns["Z"].shape == (400, 5)
    # flat rows through the wrapper = the images in memory
    np.testing.assert_allclose(ns["proba"], ns["clf"].estimator.predict_proba(ns["images"]),
                               rtol=1e-6, atol=1e-7)
    # the blockwise R_f is asserted equal to the in-memory one inside the recipe


@pytest.mark.slow
def test_ray_grid_search(client, monkeypatch):
    """The page's Ray recipe (a local Ray instance, 2 CPUs) gives the in-memory search.

    Slow: Ray starts its own processes, which import torch and geolearn.
    """
    pytest.importorskip("ray", reason=_SCALE)
    # ray.shutdown() leaves its own builtins.print behind (Ray 2.60), which makes skorch's
    # silent logs print in every later test of this worker: monkeypatch restores the original
    monkeypatch.setattr(builtins, "print", builtins.print)
    search_block, ray_block = (b for b in docs_blocks()
                               if "GridSearchCV(" in b or "import ray" in b)
    ns = run_blocks([search_block, ray_block], {})
    X, y = ns["X"], ns["y"]
    expected = clone(ns["search"]).set_params(n_jobs=None).fit(X, y)
    assert ns["search"].best_params_ == expected.best_params_
    np.testing.assert_allclose(ns["search"].cv_results_["mean_test_score"],
                               expected.cv_results_["mean_test_score"], rtol=1e-6)


# --------------------------------------------------------------------------- regression
def test_cidm_internal_threads_stay_off_the_cluster(client, digits):
    """CIDM's thread pools are its own: under the Dask backend they must not become tasks.

    Shipping the Nyström chunks and neighbour queries to the cluster made
    ``CIDM(n_jobs=2).fit(X).transform(Q)`` about 5 times slower.
    """
    X = digits[0]
    # batch_size=50: the Nyström extension of the 400 rows runs as 8 chunks in threads
    cidm = CIDM(n_eigenpairs=5, n_jobs=2, batch_size=50, random_state=0)
    with distributed.get_task_stream(client) as tasks, parallel_backend("dask"):
        cidm.fit(X).transform(X)
    assert not tasks.data, f"{len(tasks.data)} of CIDM's internal tasks ran on the cluster"


# --------------------------------------------------------------------------- dask-ml wrappers
@pytest.mark.parametrize("make", [
    lambda: CIDM(n_eigenpairs=6, batch_size=100, random_state=0),
    lambda: ReLUPolytopes(MLPClassifier((8,), max_iter=50, random_state=0).fit(
        *load_digits(return_X_y=True))),
    lambda: RiemannianFeatureGeometry(torch.nn.Sequential(
        torch.nn.Linear(64, 64), torch.nn.Tanh()).double(), quantities=("log_volume",)),
], ids=["CIDM", "ReLUPolytopes", "RiemannianFeatureGeometry"])
def test_parallel_post_fit_transform(client, digits, make):
    """A chunked dask array transformed by the cluster equals the in-memory transform."""
    torch.manual_seed(0)
    X = digits[0]
    est = make()
    # chunks of CIDM's batch_size: the Nyström products see the same rows, so equal to the bit
    got = recipe_parallel_post_fit(est, X[:300], da.from_array(X, chunks=(100, -1)))
    np.testing.assert_array_equal(got, est.transform(X))


def test_parallel_post_fit_refuses_image_arrays(client):
    """Why the page keeps images flat: dask-ml probes the method with a (1, X.shape[1]) row."""
    from dask_ml.wrappers import ParallelPostFit

    X, y = make_transforming_mnist(group="rot4", transform=False, random_state=0,
                                   return_X_y=True)
    wrapped = ParallelPostFit(InvariantClassifier(
        group="rot4", hidden_layer_sizes=(8,), max_epochs=1, device="cpu",
        random_state=0)).fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="expecting 144 features"):
        wrapped.predict(da.from_array(X[:200], chunks=(100, 1, 12, 12)))
