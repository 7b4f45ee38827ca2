"""Data-parallel training of geolearn's torch estimators with accelerate.

Launch one process per device::

    accelerate launch --num_processes 2 train_ddp.py      # or: torchrun --nproc_per_node 2
    python train_ddp.py                                   # one process, same code

Every process builds the same estimator, with ``device=None`` (accelerate places
the module) and a ``net_class`` that puts skorch's ``AccelerateMixin`` in front
of the estimator's own net class, which keeps the estimator's objective. With
``split_batches=True`` each process takes its share of every batch of
``batch_size`` rows and the gradients are averaged, so the steps are those of
one process on the whole batch. On GPUs each process uses its own; without CUDA
the processes train on the CPU (gloo backend).
"""

import functools

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from skorch.hf import AccelerateMixin

from geolearn.datasets import make_transforming_mnist
from geolearn.generative import GridVAE
from geolearn.invariance import InvariantClassifier


class AcceleratedInvarianceNet(AccelerateMixin, InvariantClassifier.net_class):
    """InvariantClassifier's net (augmentation and regulariser included), through accelerate."""


class AcceleratedObjectiveNet(AccelerateMixin, GridVAE.net_class):
    """The net of GridVAE (and the family's other objective-trained models), through accelerate."""


def make_accelerator():
    """One Accelerator per process; it reads the rank and world size that the launcher set."""
    return Accelerator(cpu=not torch.cuda.is_available(),
                       dataloader_config=DataLoaderConfiguration(split_batches=True))


def main():
    accelerator = make_accelerator()
    X, y = make_transforming_mnist(group="rot4", return_X_y=True, random_state=0)
    clf = InvariantClassifier(
        group="rot4", nu=1.0, hidden_layer_sizes=(64,), max_epochs=2, batch_size=64,
        random_state=0, device=None,
        net_class=functools.partial(AcceleratedInvarianceNet, accelerator=accelerator))
    clf.fit(X, y)
    vae = GridVAE(n_latent=2, hidden_layer_sizes=(64,), max_epochs=2, batch_size=64, random_state=0,
                  device=None,
                  net_class=functools.partial(AcceleratedObjectiveNet, accelerator=accelerator))
    vae.fit(X.reshape(len(X), -1))
    # after training the modules are unwrapped: predict and transform run on each process
    accelerator.print(f"accuracy {clf.score(X, y):.3f}, ELBO {vae.score(X.reshape(len(X), -1)):.1f}")
    return accelerator, clf, vae


if __name__ == "__main__":
    main()
