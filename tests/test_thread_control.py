"""Thread control of the hot paths (issue: speed that holds on a shared machine).

Regressions: small-op hot paths ran with torch's default intra-op threads (several times
slower beside one competing process), and internal ``Parallel(prefer="threads")`` calls
shipped geolearn's chunk pools to whatever backend the caller configured (a Dask cluster
for ``with parallel_config(backend="dask"): CIDM(n_jobs=2).fit(X).transform(Q)``).
"""

import threading
import time
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import Parallel, parallel_config, register_parallel_backend
from joblib._parallel_backends import ThreadingBackend
from skorch.callbacks import Callback
from torch import nn

from geolearn._utils import resolve_n_jobs, thread_map
from geolearn.datasets import make_torus_points
from geolearn.diffeo import deform, sample_displacement_fields
from geolearn.exceptions import NumericalWarning
from geolearn.manifold import CIDM
from geolearn.polytopes import ReLUPolytopes
from geolearn.representations import fiedler_pairwise
from geolearn.riemannian import PullbackMetric
from geolearn.subspaces import SVBF
from tests.polytopes._nets import gaussian_net
from tests.subspaces._data import haar_sets

USER_THREADS = 2


@pytest.fixture
def idle_machine(monkeypatch):
    """No other runnable task: large modules keep the caller's threads (under xdist and
    beside other jobs the real count varies)."""
    from geolearn._utils import torch as torch_utils

    monkeypatch.setattr(torch_utils, "other_runnable_tasks", lambda: 0)


@pytest.fixture
def user_threads():
    """The caller's torch setting (2 intra-op threads), restored after the test."""
    before = torch.get_num_threads()
    torch.set_num_threads(USER_THREADS)
    yield USER_THREADS
    torch.set_num_threads(before)


class _Recording(ThreadingBackend):
    """A joblib backend that records each use: geolearn must never be handed it."""

    uses = []

    def configure(self, *args, **kwargs):
        _Recording.uses.append(1)
        return super().configure(*args, **kwargs)


register_parallel_backend("geolearn-test-recording", _Recording)


@pytest.fixture
def outer_backend():
    _Recording.uses.clear()
    with parallel_config(backend="geolearn-test-recording"):
        yield _Recording.uses


# ----------------------------------------------------------------------- the helper
def test_thread_map_runs_each_item_with_one_torch_thread_and_restores(user_threads):
    for n_jobs in (1, 2):
        seen = thread_map(lambda i: (i, torch.get_num_threads()), range(6), n_jobs=n_jobs)
        assert seen == [(i, 1) for i in range(6)]
        assert torch.get_num_threads() == user_threads


def test_thread_map_restores_the_setting_after_an_exception(user_threads):
    def fail(i):
        if i == 3:
            raise RuntimeError("chunk 3 failed")
        return i

    for n_jobs in (1, 2):
        with pytest.raises(RuntimeError, match="chunk 3"):
            thread_map(fail, range(6), n_jobs=n_jobs)
        assert torch.get_num_threads() == user_threads


def test_thread_map_runs_its_workers_at_once():
    # a barrier of two parties breaks (after its timeout) unless two items run together
    barrier = threading.Barrier(2, timeout=20)
    assert thread_map(lambda i: barrier.wait() in (0, 1), range(2), n_jobs=2) == [True, True]


def test_thread_map_runs_no_more_items_after_a_failure():
    ran = []

    def slow(i):
        if i == 0:
            raise RuntimeError("item 0 failed")
        time.sleep(0.01)
        ran.append(i)

    with pytest.raises(RuntimeError, match="item 0"):
        thread_map(slow, range(200), n_jobs=2)
    assert len(ran) < 100  # the rest were cancelled, not run to the end


def test_thread_map_ignores_the_callers_backend_and_the_check_can_fail(outer_backend):
    Parallel(n_jobs=2, prefer="threads")(iter([]))  # the recorder sees what it is given
    assert outer_backend == [1]
    outer_backend.clear()
    assert thread_map(abs, [-1, -2, 3], n_jobs=2) == [1, 2, 3]
    assert outer_backend == []


def test_resolve_n_jobs_reads_n_jobs_but_not_the_callers_backend(outer_backend):
    assert resolve_n_jobs(None) == 1 and resolve_n_jobs(3) == 3
    with parallel_config(n_jobs=3):
        assert resolve_n_jobs(None) == 3


def test_thread_map_rejects_an_unknown_backend():
    with pytest.raises(ValueError, match="backend must be one of"):
        thread_map(abs, [1], backend="dask")


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-1000, 1000), max_size=30), st.integers(1, 4))
def test_thread_map_equals_the_serial_map(items, n_jobs):
    assert thread_map(lambda v: v * v - 3, items, n_jobs=n_jobs) == [v * v - 3 for v in items]


# ----------------------------------------------------------------------- hot paths
def _recorder(monkeypatch, module, name):
    """Wrap ``module.name`` so each call records torch's intra-op thread count."""
    seen, original = [], getattr(module, name)

    def wrapped(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    return seen


def test_deform_runs_its_chunks_on_one_thread(user_threads, monkeypatch):
    from geolearn.diffeo import _sampler

    seen = _recorder(monkeypatch, _sampler, "_remap_chunk")
    X = np.random.default_rng(0).random((1200, 16, 16))  # several chunks
    for n_jobs in (None, 2):
        deform(X, sample_displacement_fields(16, 0.005, 3, size=1200, random_state=0),
               n_jobs=n_jobs)
    assert len(seen) > 2 and set(seen) == {1}
    assert torch.get_num_threads() == user_threads


def test_deform_restores_the_setting_after_an_exception(user_threads, monkeypatch):
    from geolearn.diffeo import _sampler

    def fail(*args):
        raise RuntimeError("chunk failed")

    monkeypatch.setattr(_sampler, "_remap_chunk", fail)
    X = np.zeros((300, 16, 16))
    with pytest.raises(RuntimeError, match="chunk failed"):
        deform(X, np.zeros((300, 2, 16, 16)))
    assert torch.get_num_threads() == user_threads


class _ThreadProbe(nn.Module):
    """A 2-250 sigmoid layer that records torch's thread count at each forward."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Sequential(nn.Linear(2, 250), nn.Sigmoid()).double()
        self.seen = []

    def forward(self, x):
        self.seen.append(torch.get_num_threads())
        return self.layer(x)


def test_pullback_volume_and_curvature_run_on_one_thread(user_threads):
    net = _ThreadProbe()
    metric = PullbackMetric(net, batch_size=64)
    X = torch.as_tensor(np.random.default_rng(0).standard_normal((200, 2)))
    metric.log_volume(X)
    metric.ricci_scalar(X[:20])
    assert len(net.seen) > 1 and set(net.seen) == {1}
    assert torch.get_num_threads() == user_threads


def test_svbf_runs_on_one_thread_per_restart(user_threads, monkeypatch, outer_backend):
    seen = _recorder(monkeypatch, SVBF, "_run")
    X = haar_sets(n=8, r=10, l=2)
    a = SVBF(1, n_init=3, random_state=0, n_jobs=2).fit(X)
    assert len(seen) == 3 and set(seen) == {1}
    assert torch.get_num_threads() == user_threads
    assert outer_backend == []
    seen.clear()
    b = SVBF(1, n_init=3, random_state=0, n_jobs=1).fit(X)
    np.testing.assert_array_equal(a.basis_, b.basis_)


# ------------------------------------------------- internal pools ignore the caller's
def test_cidm_with_n_jobs_never_uses_the_callers_backend(outer_backend):
    X = make_torus_points(600, R=1.0, r=1.0, random_state=0)
    Q = make_torus_points(300, R=1.0, r=1.0, random_state=1)
    params = dict(n_eigenpairs=6, n_neighbors=30, batch_size=50, random_state=0)
    Z2 = CIDM(n_jobs=2, **params).fit(X).transform(Q)
    assert outer_backend == []
    Z1 = CIDM(n_jobs=1, **params).fit(X).transform(Q)
    np.testing.assert_array_equal(Z1, Z2)


def test_fiedler_pairwise_with_n_jobs_never_uses_the_callers_backend(outer_backend):
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1], 10)
    V = rng.standard_normal((20, 5)) + 2.0 * codes[:, None]
    R = 1 - np.corrcoef(V)
    a = fiedler_pairwise(R, codes, n_boot=500, n_jobs=2, random_state=0)
    assert outer_backend == []
    b = fiedler_pairwise(R, codes, n_boot=500, n_jobs=1, random_state=0)
    assert len(a) == len(b) == 1
    for key, value in a[0].items():
        np.testing.assert_array_equal(value, b[0][key])


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**16), st.integers(1, 300))
def test_relu_bits_do_not_depend_on_n_jobs(seed, n):
    X = np.random.default_rng(seed).uniform(-2, 2, size=(n, 3))
    est = ReLUPolytopes(gaussian_net((3, 8, 6, 2), seed=0), batch_size=32,
                        region_stats=(), random_state=0)
    one = est.set_params(n_jobs=1).fit(X).transform(X)
    two = est.set_params(n_jobs=2).fit(X).transform(X)
    np.testing.assert_array_equal(one, two)


def test_stability_probes_run_on_one_thread(user_threads):
    from geolearn.diffeo import relative_stability

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.seen = []
            self.fc = nn.Linear(64, 3)

        def forward(self, x):
            self.seen.append(torch.get_num_threads())
            return self.fc(x.flatten(1))

    net = Probe()
    X = np.random.default_rng(0).random((100, 1, 8, 8)).astype(np.float32)
    relative_stability(net, X, T=0.01, c=2, random_state=0)
    assert len(net.seen) >= 3 and set(net.seen) == {1}
    assert torch.get_num_threads() == user_threads


class _ThreadsPerBatch(Callback):
    """Records torch's intra-op thread count at every training batch."""

    def __init__(self):
        self.seen = []

    def on_batch_begin(self, net, **kwargs):
        self.seen.append(torch.get_num_threads())


@pytest.mark.parametrize(("hidden", "threads"), [((32,), 1), ((1024, 256), USER_THREADS)])
def test_small_networks_train_on_one_thread(user_threads, idle_machine, hidden, threads):
    # every gradient-trained estimator trains through SkorchTrainingMixin: a small module on
    # the CPU on one thread (its two default threads collapse beside a busy process), a
    # larger one (here 400k parameters) with the caller's setting
    from geolearn.generative import GridVAE

    X = np.random.default_rng(0).random((64, 128)).astype(np.float32)
    probe = _ThreadsPerBatch()
    vae = GridVAE(hidden_layer_sizes=hidden, max_epochs=2, batch_size=32, device="cpu",
                  callbacks=[("probe", probe)], random_state=0, warm_start=True).fit(X)
    vae.fit(X)  # warm start: the same rule
    assert len(probe.seen) == 8 and set(probe.seen) == {threads}
    assert torch.get_num_threads() == user_threads


# ------------------------------------------------------------ the one rule, inference too
def _blas_threads():
    from threadpoolctl import threadpool_info

    # single-threaded builds (the OpenBLAS that cvxpy's SCS bundles, loaded by whichever test
    # of the worker imports cvxpy first) hold one thread whatever the limit
    return {info["num_threads"] for info in threadpool_info()
            if info["user_api"] == "blas" and info.get("threading_layer") != "disabled"}


def test_blas_threads_blocks_overlapping_on_two_threads_restore_the_callers_setting(
        monkeypatch):
    # thread A enters, thread B enters, A leaves, B leaves. Saved and restored per block, B
    # would save A's limit of 1 and restore it last, leaving the process on one thread. A
    # recording controller stands in for threadpoolctl's: this OpenBLAS ignores limits set
    # outside the main thread, MKL and other builds do not.
    import threading

    from geolearn._utils import blas_threads
    from geolearn._utils import torch as torch_utils

    class Limiter:
        def __init__(self, state, n):
            self.state, self.saved = state, state["n"]
            state["n"] = n

        def restore_original_limits(self):
            self.state["n"] = self.saved

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.restore_original_limits()

    class Controller:
        state = {"n": 2}

        def limit(self, limits, user_api):
            return Limiter(self.state, limits)

    monkeypatch.setattr(torch_utils, "_threadpool_controller", Controller)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    inside = {}

    def a():
        with blas_threads(1):
            a_in.set()
            b_in.wait()
        a_out.set()

    def b():
        a_in.wait()
        with blas_threads(1):
            b_in.set()
            a_out.wait()
            inside["b"] = Controller.state["n"]  # A has left: B's block still holds it

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inside["b"] == 1
    assert Controller.state["n"] == 2


def test_small_ops_threads_restores_torch_and_blas_after_an_exception(user_threads,
                                                                   idle_machine):
    from threadpoolctl import threadpool_limits

    from geolearn._utils import small_ops_threads

    with threadpool_limits(2, user_api="blas"):
        with pytest.raises(RuntimeError, match="inside"), small_ops_threads(blas=True):
            assert torch.get_num_threads() == 1 and _blas_threads() == {1}
            raise RuntimeError("inside")
        assert torch.get_num_threads() == user_threads and _blas_threads() == {2}
        with small_ops_threads(nn.Linear(1000, 1000)):  # a million parameters: the caller's
            assert torch.get_num_threads() == user_threads and _blas_threads() == {2}


@pytest.mark.parametrize(("others", "threads"), [(0, USER_THREADS), (1, 1), (None, USER_THREADS)])
def test_large_modules_take_one_thread_beside_other_work(monkeypatch, user_threads, others,
                                                         threads):
    from geolearn._utils import small_ops_threads
    from geolearn._utils import torch as torch_utils

    monkeypatch.setattr(torch_utils, "other_runnable_tasks", lambda: others)
    with small_ops_threads(nn.Linear(1000, 1000)):  # a million parameters
        assert torch.get_num_threads() == threads
    with small_ops_threads(nn.Linear(10, 10)):  # small: one thread whatever the load
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == user_threads


def _record_linear_threads(module):
    """Record torch's thread count at the forward of every ``nn.Linear`` of ``module``."""
    seen = []
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            layer.register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    return seen


@pytest.mark.parametrize(("hidden", "threads"), [((32,), 1), ((1024, 256), USER_THREADS)])
def test_small_networks_infer_on_one_thread(user_threads, idle_machine, hidden, threads):
    # the inference methods of a torch-trained estimator follow the training rule: a small
    # module on the CPU on one thread, a larger one (400k parameters) on the caller's; the
    # hooks count the Linear layers each call runs
    from geolearn.generative import GridVAE

    X = np.random.default_rng(0).random((64, 128)).astype(np.float32)
    vae = GridVAE(hidden_layer_sizes=hidden, max_epochs=1, device="cpu", random_state=0).fit(X)
    seen = _record_linear_threads(vae.module_)
    calls = [vae.transform, vae.predict, vae.predict_proba, vae.score_samples, vae.score]
    for method in calls:
        method(X)
    vae.inverse_transform(vae.transform(X))
    vae.sample(5, random_state=0)
    vae.traverse(X[:2], 0, [0.0, 1.0])  # a method of its own: every public method but fit
    assert len(seen) > len(calls) and set(seen) == {threads}
    assert torch.get_num_threads() == user_threads


def test_inference_restores_the_setting_after_an_exception(user_threads):
    from geolearn.generative import GridVAE

    X = np.random.default_rng(0).random((64, 16)).astype(np.float32)
    vae = GridVAE(hidden_layer_sizes=(8,), max_epochs=1, device="cpu", random_state=0).fit(X)
    with pytest.raises(ValueError, match="features"):
        vae.transform(X[:, :5])
    assert torch.get_num_threads() == user_threads


def test_adapter_runs_a_small_module_on_one_thread(user_threads):
    from geolearn.models import as_model

    net = _ThreadProbe()
    m = as_model(net, batch_size=64)
    X = np.random.default_rng(0).standard_normal((100, 2))
    m.forward(X)
    m.features(X, layer="layer.0")
    m.input_gradient(X, targets=np.zeros(100, int))
    m.jacobian(X[:10])
    assert len(net.seen) >= 4 and set(net.seen) == {1}
    assert torch.get_num_threads() == user_threads


def test_inference_wrapping_keeps_available_if():
    # scikit-learn's available_if hides a method where it does not apply: the thread rule
    # must not wrap (and so expose) it
    from sklearn.base import BaseEstimator
    from sklearn.utils.metaestimators import available_if

    from geolearn.models import SkorchTrainingMixin

    class Toy(SkorchTrainingMixin, BaseEstimator):
        @available_if(lambda est: False)
        def predict_proba(self, X):
            return X

    assert not hasattr(Toy(), "predict_proba")


def test_svbf_distances_and_transform_run_on_one_thread(user_threads, monkeypatch):
    # a batch of small SVDs per call: beside a busy process, two threads measured 12-35x
    # slower (benchmarks/RESULTS.md)
    from geolearn.subspaces import _svbf

    X = haar_sets(n=8, r=10, l=2)
    est = SVBF(1, random_state=0).fit(X)
    seen = _recorder(monkeypatch, _svbf, "angles_kernel")
    blas = []
    monkeypatch.setattr(_svbf, "angles_kernel", _blas_recording(_svbf.angles_kernel, blas))
    from threadpoolctl import threadpool_limits

    with threadpool_limits(2, user_api="blas"):
        est.distance(X)
        est.transform(X)
        est.score(X)
    assert len(seen) == 3 and set(seen) == {1} and set(blas) == {1}
    assert torch.get_num_threads() == user_threads


def _blas_recording(fn, seen):
    def wrapped(*args, **kwargs):
        seen.extend(_blas_threads())
        return fn(*args, **kwargs)

    return wrapped


def test_small_ops_threads_follows_the_module_then_the_device(user_threads):
    from geolearn._utils import small_ops_threads

    for kwargs, threads in [({"device": "cpu"}, 1), ({"device": torch.device("meta")},
                                                     user_threads),
                            ({"module": nn.Linear(2, 2), "device": "meta"}, 1)]:
        with small_ops_threads(**kwargs):
            assert torch.get_num_threads() == threads
        assert torch.get_num_threads() == user_threads


class _LargeProbe(_ThreadProbe):
    """:class:`_ThreadProbe` with a 2-250-1000 head: 250k parameters, above the small rule."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Sequential(self.layer, nn.Linear(250, 1000)).double()


@pytest.mark.parametrize(("probe", "threads"), [(_ThreadProbe, 1), (_LargeProbe, USER_THREADS)])
def test_attacks_follow_the_small_module_rule(user_threads, idle_machine, probe, threads):
    from geolearn.adversarial import pgd

    net = probe()
    X = np.random.default_rng(0).standard_normal((20, 2))
    pgd(net, X, np.zeros(20, int), 0.1, n_steps=2, clip=None, device="cpu", random_state=0)
    # the first pass probes the input layer on two rows: one thread, any size (the labels
    # are bounded by the first batch's logits, without a probe of their own)
    assert net.seen[:1] == [1] and len(net.seen) > 1 and set(net.seen[1:]) == {threads}
    with pytest.raises(ValueError, match="epsilon"):
        pgd(net, X, np.zeros(20, int), -1.0, device="cpu")
    assert torch.get_num_threads() == user_threads


@pytest.mark.parametrize("family", ["disentanglement", "meta_learning"])
def test_autoencoders_train_on_one_thread_and_restore(user_threads, family):
    probe = _ThreadsPerBatch()
    X = np.random.default_rng(0).random((32, 12)).astype(np.float32)
    if family == "disentanglement":
        from geolearn.disentanglement import DisentangledAttributeAutoencoder

        est = DisentangledAttributeAutoencoder(image_shape=None, n_latent=4,
                                               attribute_dims=(2, 2), max_epochs=1,
                                               batch_size=16, device="cpu", random_state=0,
                                               callbacks=[("probe", probe)])
    else:
        from geolearn.meta_learning import MetaManifoldAutoencoder

        est = MetaManifoldAutoencoder(architecture="mlp", hidden_layer_sizes=(16,), n_latent=3,
                                      max_epochs=4, batch_size=8, log_every=2, device="cpu",
                                      random_state=0, callbacks=[("probe", probe)])
    est.fit(X)
    assert probe.seen and set(probe.seen) == {1}
    assert torch.get_num_threads() == user_threads


@pytest.mark.parametrize("max_memory", [None, 1000])
def test_local_linear_map_solves_on_one_blas_thread(monkeypatch, max_memory):
    # one small least-squares problem per output: 40-60x faster on one BLAS thread than on
    # two (benchmarks/RESULTS.md); max_memory=1000 takes the normal equations' route
    from threadpoolctl import threadpool_limits

    from geolearn.polytopes import LocalLinearMap

    seen = []
    monkeypatch.setattr(np.linalg, "matrix_rank",
                        _blas_recording(np.linalg.matrix_rank, seen))
    X = np.random.default_rng(0).standard_normal((60, 3))
    params = {} if max_memory is None else {"max_memory": max_memory, "batch_size": 20}
    est = LocalLinearMap(gaussian_net([3, 8, 2], 0), gaussian_net([3, 8, 2], 1), device="cpu",
                         **params)
    with threadpool_limits(2, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", NumericalWarning)  # the normal equations' notice
        est.fit(X)
        assert _blas_threads() == {2}
    assert len(seen) == 2 and set(seen) == {1}


@pytest.mark.parametrize("eigen_solver", ["dense", "arpack"])
@pytest.mark.parametrize(("others", "threads"), [(0, 2), (1, 1), (3, 1), (None, 2)])
def test_cidm_eigensolver_takes_one_blas_thread_beside_other_work(monkeypatch, eigen_solver,
                                                                    others, threads):
    # the dense solve of 2,000 points measured 1.6x slower on one BLAS thread than on two
    # idle, 1.5x faster beside one busy process (benchmarks/RESULTS.md)
    from threadpoolctl import threadpool_limits

    from geolearn._utils import torch as torch_utils
    from geolearn.manifold import _cidm

    seen = []
    monkeypatch.setattr(_cidm, "top_eigenpairs", _blas_recording(_cidm.top_eigenpairs, seen))
    monkeypatch.setattr(torch_utils, "other_runnable_tasks", lambda: others)
    X = np.random.default_rng(0).standard_normal((200, 3))
    with threadpool_limits(2, user_api="blas"):
        CIDM(n_eigenpairs=5, eigen_solver=eigen_solver, random_state=0).fit(X)
        assert _blas_threads() == {2}
    assert seen and set(seen) == {threads}


def test_other_runnable_tasks_reads_the_instant_count(monkeypatch, tmp_path):
    from geolearn._utils import torch as torch_utils

    reads = iter(["0.50 0.40 0.30 3/120 999\n", "0.50 0.40 0.30 2/120 999\n",
                  "0.50 0.40 0.30 5/120 999\n"])
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/loadavg":
            file = tmp_path / "loadavg"
            file.write_text(next(reads))
            return real_open(file, *args, **kwargs)
        return real_open(path, *args, **kwargs)

    assert torch_utils._own_runnable_threads() >= 1  # the thread reading it runs
    monkeypatch.setattr(torch_utils, "_own_runnable_threads", lambda: 1)
    monkeypatch.setattr("builtins.open", fake_open)
    assert torch_utils.other_runnable_tasks() == 1  # the least of three reads, less this task
    monkeypatch.setattr("builtins.open", lambda *a, **k: (_ for _ in ()).throw(OSError()))
    assert torch_utils.other_runnable_tasks() is None
