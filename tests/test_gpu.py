"""The GPU suite: CUDA against the CPU (``pytest -m gpu``).

The tests marked ``gpu`` run where torch sees a CUDA device; the conftest skips them,
with the reason, elsewhere. The unmarked ones check, on any machine, what the GPU
paths rely on: ``torch_seed`` restoring the CUDA generators, the group augmentation
picking rows without reading the device, and a CUDA fit unpickled without CUDA.
"""

import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.base import clone

from geolearn._utils import torch_seed
from geolearn.models import as_model

from .torch_estimators import IDS, TORCH_ESTIMATORS, data

ROOT = pathlib.Path(__file__).resolve().parents[1]
gpu = pytest.mark.gpu

#: Estimators whose training draws no noise on the device: CUDA must match the CPU.
_NOISE_FREE = {"InvariantClassifier", "CentroidSoftmaxClassifier"}


def _outputs(est, X):
    """What the fitted estimator gives for ``X``: probabilities, codes or scores."""
    for method in ("predict_proba", "transform", "score_samples"):
        if hasattr(est, method):
            return np.asarray(getattr(est, method)(X), dtype=np.float64)
    return np.asarray(est.sample(8, random_state=0), dtype=np.float64)


@gpu
@pytest.mark.parametrize(("est", "kind"), TORCH_ESTIMATORS, ids=IDS)
def test_torch_estimator_fits_and_transforms_on_cuda(est, kind):
    X, y = data(kind)
    on_gpu = clone(est).set_params(device="cuda").fit(X, y)
    assert on_gpu.device_.type == "cuda"
    if hasattr(on_gpu, "net_"):
        assert all(p.is_cuda for p in on_gpu.module_.parameters())
    out = _outputs(on_gpu, X)
    assert np.all(np.isfinite(out))
    on_cpu = clone(est).set_params(device="cpu").fit(X, y)
    assert out.shape == _outputs(on_cpu, X).shape
    if type(est).__name__ in _NOISE_FREE:
        np.testing.assert_allclose(out, _outputs(on_cpu, X), atol=1e-3)


@gpu
def test_cidm_torch_lobpcg_on_cuda_matches_arpack():
    from geolearn.manifold import CIDM

    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 600)
    X = np.c_[np.cos(t), np.sin(t), 0.05 * rng.normal(size=600)]
    kw = {"n_neighbors": 20, "n_eigenpairs": 6, "random_state": 0}
    arpack = CIDM(eigen_solver="arpack", **kw).fit(X)
    lobpcg = CIDM(eigen_solver="lobpcg", device="cuda", **kw).fit(X)
    np.testing.assert_allclose(lobpcg.eigenvalues_, arpack.eigenvalues_, atol=1e-6)
    # eigenvectors up to sign (the circle's pairs are nearly degenerate: compare spans)
    P = arpack.eigenvectors_[:, :1]
    Q = lobpcg.eigenvectors_[:, :1]
    assert abs(float(P[:, 0] @ Q[:, 0])) / (np.linalg.norm(P) * np.linalg.norm(Q)) > 1 - 1e-6


@gpu
def test_diffeo_deformations_on_cuda_match_the_cpu():
    from geolearn.diffeo import DiffeoAugment

    x = torch.rand(16, 1, 16, 16)
    cpu = DiffeoAugment(T=0.01, c=3, random_state=0)(x)
    gpu_out = DiffeoAugment(T=0.01, c=3, random_state=0)(x.cuda())
    assert gpu_out.is_cuda
    torch.testing.assert_close(gpu_out.cpu(), cpu, rtol=0, atol=1e-5)


@gpu
def test_jacobians_on_cuda_match_the_cpu():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    X = np.random.default_rng(0).normal(size=(32, 5)).astype(np.float32)
    J_cpu = as_model(net).jacobian(X)
    J_gpu = as_model(net.cuda()).jacobian(X)
    np.testing.assert_allclose(J_gpu, J_cpu, rtol=1e-4, atol=1e-5)


_LOAD_ON_CPU = """
import pickle, sys, warnings
import numpy as np
import torch
assert not torch.cuda.is_available()
with open(sys.argv[1], "rb") as f:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CUDA-to-CPU notices of skorch and geolearn
        est, X, expected = pickle.load(f)
out = est.predict_proba(X) if hasattr(est, "predict_proba") else est.transform(X)
np.testing.assert_allclose(out, expected, atol=1e-4)
assert all(not p.is_cuda for p in est.module_.parameters())
print("ok")
"""


@gpu
@pytest.mark.parametrize("index", [0, 2], ids=[IDS[0], IDS[2]])
def test_cuda_fitted_model_unpickles_on_a_cpu_machine(index, tmp_path):
    est, kind = TORCH_ESTIMATORS[index]
    X, y = data(kind)
    est = clone(est).set_params(device="cuda").fit(X, y)
    expected = est.predict_proba(X) if hasattr(est, "predict_proba") else est.transform(X)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps((est, X, expected)))
    # a CPU machine: CUDA hidden from a fresh interpreter
    out = subprocess.run([sys.executable, "-c", _LOAD_ON_CPU, str(path)], check=False, cwd=ROOT,
                         env={"CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT),
                              "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]


def test_torch_seed_restores_the_cuda_generators(monkeypatch):
    # a CPU-testable seam: torch's CUDA RNG API, as a machine with CUDA has it
    saved, restored = [torch.ByteTensor([1, 2, 3])], []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: saved)
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.append)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: None)
    before = torch.get_rng_state()
    with torch_seed(0):
        torch.rand(3)
    assert restored == [saved]
    assert torch.equal(torch.get_rng_state(), before)
    with pytest.raises(RuntimeError, match="inside"), torch_seed(1):
        raise RuntimeError("inside")
    assert restored == [saved, saved]


def test_group_augmentation_picks_rows_without_a_boolean_mask(monkeypatch):
    # a boolean mask on the device makes CUDA wait (nonzero) for every group element
    from geolearn.invariance._groups import resolve_group

    group = resolve_group("rot4", (1, 4, 4))
    x = torch.arange(8 * 16, dtype=torch.float32).reshape(8, 1, 4, 4)
    masks = []
    original = torch.Tensor.__getitem__
    monkeypatch.setattr(torch.Tensor, "__getitem__", lambda t, key: (
        masks.append(isinstance(key, torch.Tensor) and key.dtype == torch.bool)
        or original(t, key)))
    out, idx = group.apply_random(x, torch.Generator().manual_seed(0))
    monkeypatch.undo()
    assert not any(masks)
    for i, k in enumerate(idx.tolist()):
        torch.testing.assert_close(out[i:i + 1], group[k](x[i:i + 1]))


@pytest.mark.parametrize("index", [0, 1, 2], ids=IDS[:3])
def test_unpickling_a_cuda_fit_without_cuda_falls_back_to_the_cpu(index):
    # what a CPU machine sees of a CUDA fit: device_ names CUDA, which it does not have
    from geolearn.exceptions import GeolearnWarning

    est, kind = TORCH_ESTIMATORS[index]
    X, y = data(kind)
    est = clone(est).set_params(device="cpu").fit(X, y)
    expected = _outputs(est, X)
    est.device_ = torch.device("cuda:0")
    with pytest.warns(GeolearnWarning, match="was fitted on cuda:0, which is not available"):
        back = pickle.loads(pickle.dumps(est))
    assert back.device_ == torch.device("cpu")
    np.testing.assert_allclose(_outputs(back, X), expected)
