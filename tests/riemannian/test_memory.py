"""RiemannianFeatureGeometry keeps within max_memory, and its chunks never change a result.

The audit measured a peak of 7.4 GiB on 3x32x32 inputs with max_memory=1 GiB: every point's
Jacobian was held at once, and forward-mode AD on a chunk that was a view of all the points
gave each chunk a tangent of every point. Now each chunk's Jacobians and autodiff
intermediates are estimated and kept within max_memory, and volumes and eigenvalues are
reduced chunk by chunk.
"""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from geolearn.riemannian import PullbackMetric, RiemannianFeatureGeometry

# Peak resident memory of one transform, in a fresh process: glibc returns every block of
# 64 KiB or more to the system when it is freed (MALLOC_MMAP_THRESHOLD_), so the peak
# counts the bytes torch and numpy hold at once, not the allocator's caches.
_PEAK = """
import warnings
import numpy as np, torch
from geolearn.riemannian import RiemannianFeatureGeometry
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256),
                          torch.nn.Tanh(), torch.nn.Linear(256, 10))
X = np.random.default_rng(0).random((300, 64))
# the 256 features of a hidden layer: forward mode, 131 KiB of Jacobian per point
geo = RiemannianFeatureGeometry(net, layer=3, max_memory=4_000_000).fit(X[:4])
geo.transform(X[:4])

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current resident size
before = status("VmRSS:")
geo.transform(X)
print(status("VmHWM:") - before)
"""


# Curvature: the Hessians (m x d x d per point) of a chunk of batch_size points, as before,
# held 37 MiB at once here and peaked at 156 MiB (328 MB for 1,000 points through a
# width-4000 map with max_memory=8 MB).
_CURVATURE_PEAK = _PEAK.replace(
    "net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256),\n"
    "                          torch.nn.Tanh(), torch.nn.Linear(256, 10))\n"
    "X = np.random.default_rng(0).random((300, 64))",
    "net = torch.nn.Sequential(torch.nn.Linear(3, 2000), torch.nn.Tanh())\n"
    "X = np.random.default_rng(0).random((256, 3))",
).replace("layer=3, max_memory=4_000_000", "quantities=('ricci_scalar',), max_memory=4_000_000")


def _peak(script):
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1",
               MALLOC_MMAP_THRESHOLD_="65536")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    return int(run.stdout.split()[-1])


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux /proc only")
@pytest.mark.parametrize("script", [_PEAK, _CURVATURE_PEAK], ids=["volume", "curvature"])
def test_transform_peak_memory_stays_within_max_memory(script):
    peak = _peak(script)
    # holding every point's Jacobian (39 MiB), as before, peaked at 95 MiB
    assert peak <= 1.5 * 4_000_000, f"peak {peak / 2**20:.1f} MiB for max_memory 3.8 MiB"


def test_curvature_chunks_never_change_a_result():
    X = np.random.default_rng(0).uniform(-1, 1, (7, 3))
    net = _mlp(width=8)
    small = PullbackMetric(net, max_memory=20_000)
    whole = PullbackMetric(net, max_memory=2**40)
    assert small._curvature_points(small._as_points(X), "gauss") < len(X)
    for name in ("hessian", "christoffel", "metric_derivative", "ricci_scalar"):
        torch.testing.assert_close(getattr(small, name)(X), getattr(whole, name)(X),
                                   rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("verbose", [0, 1])
def test_progress_only_when_verbose(verbose, capfd):
    """One bar per computation over the chunks of points, on stderr; silence at 0."""
    X = np.random.default_rng(0).uniform(-1, 1, (6, 3))
    geo = RiemannianFeatureGeometry(_mlp(), quantities=("log_volume", "ricci_scalar"),
                                    batch_size=2, verbose=verbose).fit(X)
    capfd.readouterr()
    geo.transform(X)
    out, err = capfd.readouterr()
    assert out == ""
    if verbose:
        # the volumes, the metric checked before curvature, the curvature: three bars, none
        # for the chunks of Jacobians and Hessians inside a curvature chunk
        assert err.count("0/3") == 3, err  # each bar starts at 0 of its 3 chunks
    else:
        assert err == ""


def _mlp(d_in=3, width=16, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d_in, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width), torch.nn.Tanh())


@settings(max_examples=10)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 12), st.just(3)),
                elements=st.floats(-2, 2)),
       max_memory=st.integers(1, 200_000))
def test_chunking_never_changes_a_result(X, max_memory):
    """Any max_memory (down to one point a chunk) gives the same volumes, eigenvalues and
    metrics as one chunk for all points."""
    net = _mlp()
    small = PullbackMetric(net, max_memory=max_memory)
    whole = PullbackMetric(net, max_memory=2**40)
    with warnings.catch_warnings():  # below one point's cost: see the test of its warning
        warnings.filterwarnings("ignore", "the Jacobian of one point", UserWarning)
        got = (small.log_volume(X), small.metric_eigvals(X), small.metric(X), small.jacobian(X))
    want = (whole.log_volume(X), whole.metric_eigvals(X), whole.metric(X), whole.jacobian(X))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)


def test_chunks_follow_the_estimated_cost_per_point():
    """The chunk size is max_memory over the estimated bytes of one point (three copies of
    its m x d Jacobian plus d tangents of each saved intermediate in forward mode)."""
    net = _mlp(width=16)
    pm = PullbackMetric(net, max_memory=10**6)
    X = torch.zeros(5, 3, dtype=torch.float64)
    chunk = pm._chunk_points(pm._as_points(X), "fwd")
    per_point = pm._point_bytes["fwd"]
    # saved per point: the outputs of the two tanh (16 each; frozen Linear layers save no
    # input), times d = 3 tangents
    assert per_point == 3 * (16 * 3 * 8) + 3 * (16 + 16) * 8
    assert chunk == min(256, 10**6 // per_point)


def test_one_point_over_max_memory_warns_and_names_the_cure():
    pm = PullbackMetric(_mlp(), max_memory=100)
    with pytest.warns(UserWarning, match=r"more than max_memory=100.*fewer features"):
        pm.log_volume(np.zeros((2, 3)))


def test_estimator_passes_max_memory_to_its_engine():
    X = np.random.default_rng(0).random((6, 3))
    geo = RiemannianFeatureGeometry(_mlp(), max_memory=1000).fit(X)
    with pytest.warns(UserWarning, match="max_memory=1000"):
        small = geo.transform(X)
    big = RiemannianFeatureGeometry(_mlp(), max_memory=2**30).fit(X).transform(X)
    np.testing.assert_allclose(small, big, rtol=1e-12)
