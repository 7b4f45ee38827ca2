"""geolearn's torch estimators with skorch's AccelerateMixin (Hugging Face accelerate).

One process here; ``test_two_processes_*`` trains data-parallel on two CPU processes
(gloo). The estimators take ``net_class`` (their own net class with the mixin in front)
and ``device=None`` (accelerate places the module), and keep their objectives. The tests
that run accelerate skip without it (the ``scale`` extra); the others need only skorch.
"""

import functools
import os
import pathlib
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from sklearn.base import clone
from skorch.callbacks import Callback
from skorch.hf import AccelerateMixin

from geolearn.generative import GridVAE
from geolearn.invariance import InvariantClassifier
from geolearn.models import SkorchClassifierMixin, SkorchTrainingMixin

from ..torch_estimators import IDS, TINY, TORCH_ESTIMATORS
from ..torch_estimators import data as _data
from . import ddp_worker


def _fit(est, kind):
    X, y = _data(kind)
    return est.fit(X, y)


def _import_accelerate():
    return pytest.importorskip("accelerate", reason="accelerate is in the 'scale' extra: "
                               'pip install -e ".[scale]"')


def _accelerated(est):
    """``est``'s own net class with AccelerateMixin in front, bound to a CPU Accelerator."""
    accelerate = _import_accelerate()
    base = type(est).net_class
    net = type(f"Accelerated{base.__name__}", (AccelerateMixin, base), {})
    return functools.partial(net, accelerator=accelerate.Accelerator(cpu=True))


def _weights(est):
    return {k: v.detach().clone() for k, v in est.module_.state_dict().items()}


def _losses(est):
    net = getattr(est, "net_", est)  # a skorch net is its own net
    return net.history[:, "train_loss"]


def test_every_torch_estimator_is_listed():
    import geolearn

    found = set()
    assert geolearn.__all__
    for family in geolearn.__all__:
        module = __import__(f"geolearn.{family}", fromlist=["__all__"])
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if (isinstance(obj, type) and issubclass(obj, SkorchTrainingMixin)
                    and obj not in (SkorchTrainingMixin, SkorchClassifierMixin)):
                found.add(obj.__name__)
    assert found == set(IDS), sorted(found ^ set(IDS))


@pytest.mark.parametrize(("est", "kind"), TORCH_ESTIMATORS, ids=IDS)
def test_accelerated_net_trains_the_estimators_objective(est, kind):
    # one process, CPU: accelerate adds nothing to the arithmetic, so a net whose
    # objective the mixin shadowed (InvariantClassifier's regulariser lived in
    # train_step_single) or dropped would give other losses and weights
    plain = _fit(clone(est).set_params(device="cpu"), kind)
    fast = _fit(clone(est).set_params(device=None, net_class=_accelerated(est)), kind)
    assert isinstance(fast.net_, AccelerateMixin)
    assert fast.device_ == torch.device("cpu")
    np.testing.assert_allclose(_losses(fast), _losses(plain), rtol=1e-6)
    for name, value in _weights(plain).items():
        torch.testing.assert_close(_weights(fast)[name], value, rtol=1e-6, atol=1e-7)
    X, _ = _data(kind)
    for method in ("predict_proba", "transform", "score_samples"):
        if hasattr(plain, method):
            np.testing.assert_allclose(getattr(fast, method)(X), getattr(plain, method)(X),
                                       rtol=1e-5, atol=1e-6)


def test_invariant_classifier_regulariser_is_in_the_accelerated_loss():
    est, kind = TORCH_ESTIMATORS[0]
    fast = _fit(clone(est).set_params(device=None, net_class=_accelerated(est)), kind)
    without = _fit(clone(est).set_params(device="cpu", nu=0.0), kind)
    # the regulariser's weight changes the training: the accelerated loss is not plain CE
    assert not np.allclose(_losses(fast), _losses(without))


@pytest.mark.parametrize(("est", "kind"), TORCH_ESTIMATORS[:3], ids=IDS[:3])
def test_device_none_leaves_placement_to_the_net(est, kind):
    fitted = _fit(clone(est).set_params(device=None), kind)
    assert fitted.net_.device is None
    assert fitted.device_ == torch.device("cpu")


class _CountEpochs(Callback):
    def initialize(self):
        self.epochs_ = 0
        return self

    def on_epoch_end(self, net, **kwargs):
        self.epochs_ += 1


@pytest.mark.parametrize(("est", "kind"), TORCH_ESTIMATORS, ids=IDS)
def test_net_class_and_callbacks_are_parameters(est, kind):
    counter = _CountEpochs()
    base = type(est).net_class
    marked = type("Marked", (base,), {})
    est = clone(est).set_params(device="cpu", net_class=marked, callbacks=[counter])
    assert est.get_params()["net_class"] is marked
    assert clone(est).get_params()["net_class"] is marked
    fitted = _fit(est, kind)
    assert type(fitted.net_) is marked
    assert counter.epochs_ == len(fitted.net_.history) > 0


def test_net_class_must_keep_the_estimators_net():
    from skorch import NeuralNetClassifier

    est = InvariantClassifier(max_epochs=1, hidden_layer_sizes=(4,), net_class=NeuralNetClassifier)
    X, y = _data("images")
    with pytest.raises(TypeError, match="net_class must be InvarianceNet or a subclass"):
        est.fit(X, y)


class _PartTypes(Callback):
    def initialize(self):
        self.types_ = []
        return self

    def on_batch_end(self, net, **kwargs):
        self.types_.append(type(net.history[-1, "batches", -1, "recon"]))


def test_objective_parts_wait_for_the_epoch_end_to_become_floats():
    # a part read with .item() every batch would make the device wait every batch
    types = _PartTypes()
    vae = GridVAE(max_epochs=2, callbacks=[types], **TINY).set_params(device="cpu")
    X, _ = _data("rows")
    vae.fit(X)
    assert types.types_ == [torch.Tensor] * 4
    assert all(isinstance(row["recon"], float) for row in vae.net_.history[-1, "batches"])
    assert vae.history_[-1]["recon"] == pytest.approx(
        np.mean(vae.net_.history[-1, "batches", :, "recon"]))


@pytest.mark.slow
def test_two_processes_match_one(tmp_path):
    """Data-parallel on two CPU processes (gloo) against one process.

    InvariantClassifier (regulariser on, no augmentation, no shuffling) draws no
    training noise, so the two-process weights equal the one-process ones up to
    float32 summation order (atol 1e-5). GridVAE's reparameterisation noise is
    drawn per process, so the runs differ by their noise: each epoch's loss is
    within 10% of the one-process run. In both, the two ranks end with identical
    weights (the gradients were averaged).
    """
    _import_accelerate()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = pathlib.Path(__file__).resolve().parents[2]
    start = time.perf_counter()
    procs = [subprocess.Popen(
        [sys.executable, str(pathlib.Path(ddp_worker.__file__)), str(tmp_path)],
        env={**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
             "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
             "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
             "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    print(f"two processes: {time.perf_counter() - start:.1f} s")
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    assert ranks[0]["distributed"] == "DistributedType.MULTI_CPU"
    assert "ELBO" in outs[0][0]  # the documented recipe ran to its end
    clf, vae = ddp_worker.fit(device="cpu")
    for key, single in (("clf", clf), ("vae", vae)):
        for name, value in ranks[0][key].items():
            torch.testing.assert_close(ranks[1][key][name], value, rtol=0, atol=0)
    for name, value in ddp_worker.state(clf).items():
        torch.testing.assert_close(ranks[0]["clf"][name], value, rtol=0, atol=1e-5)
    X, _ = ddp_worker.data()
    np.testing.assert_allclose(ranks[0]["proba"], clf.predict_proba(X), atol=1e-5)
    single = vae.history_[:, "train_loss"]
    for r in ranks:
        np.testing.assert_allclose(r["vae_loss"], single, rtol=0.1)


def _wrapped(base):
    """``base`` whose module is wrapped while it trains, as accelerate wraps it in DDP.

    The wrapper shows only ``forward``; like accelerate, the net unwraps it at the end.
    """

    class Wrapped(base):
        def initialize_module(self):
            super().initialize_module()
            self.module_ = torch.nn.DataParallel(self.module_)  # on the CPU: a plain wrapper
            return self

        def on_train_begin(self, net, **kwargs):
            super().on_train_begin(net, **kwargs)
            self.wrapped_ = isinstance(self.module_, torch.nn.DataParallel)

        def on_train_end(self, net, **kwargs):
            super().on_train_end(net, **kwargs)
            self.module_ = self.module_.module

    return Wrapped


@pytest.mark.parametrize("index", [2, 3], ids=IDS[2:4])
def test_objectives_reach_the_module_inside_a_wrapper(index):
    # the VAE objective calls module.decode (and VAEClassifier's module.head), which a
    # DistributedDataParallel wrapper hides
    est, kind = TORCH_ESTIMATORS[index]
    X, y = _data(kind)
    plain = clone(est).set_params(device="cpu").fit(X, y)
    wrapped = clone(est).set_params(device="cpu", net_class=_wrapped(type(est).net_class))
    wrapped.fit(X, y)
    assert wrapped.net_.wrapped_
    np.testing.assert_allclose(_losses(wrapped), _losses(plain), rtol=1e-6)


def test_rdm_regularizer_reaches_its_layer_inside_a_wrapper():
    from geolearn.representations import RDMRegularizedClassifier, categorical_rdm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)

    def fit(**kw):
        return RDMRegularizedClassifier(
            rdm_layer="1", rdm_stimuli=X[:20], rdm_target=categorical_rdm(y[:20]),
            rdm_batch_size=10, random_state=0, max_epochs=3, device="cpu", **kw).fit(X, y)

    plain = fit()
    wrapped = fit(net_class=_wrapped(RDMRegularizedClassifier.net_class))
    assert wrapped.net_.wrapped_
    np.testing.assert_allclose(wrapped.history_[:, "rdm_loss"], plain.history_[:, "rdm_loss"],
                               rtol=1e-6)
    np.testing.assert_allclose(_losses(wrapped), _losses(plain), rtol=1e-6)


class _OrthogonalGridVAE(GridVAE):
    # the documented way to add a latent regulariser: a partial as the class's net_class
    from geolearn.disentanglement import LatentRegularizerMixin
    from geolearn.models import ObjectiveNet

    net_class = functools.partial(type("Net", (LatentRegularizerMixin, ObjectiveNet), {}),
                                  alpha_orth=1.0, n_latent_blocks=2)


def test_a_partial_net_class_on_a_subclass_is_its_own_default():
    X, _ = _data("rows")
    vae = _OrthogonalGridVAE(max_epochs=1, **TINY).set_params(device="cpu").fit(X)
    assert "orth" in vae.net_.history[-1, "batches", 0]
