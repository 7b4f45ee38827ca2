"""One process of the 2-process data-parallel test in ``test_accelerate.py``.

Run as ``python ddp_worker.py OUT_DIR`` with the launcher's environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``); saves this rank's fitted weights and
losses. The settings make a data-parallel run follow one process exactly (no shuffling,
no augmentation, batches that split evenly) wherever the training draws no noise.
"""

import functools
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECIPE = ROOT / "docs" / "user_guide" / "recipes"

N_SAMPLES = 128
CLASSIFIER = {"group": "rot4", "augment": False, "nu": 1.0, "hidden_layer_sizes": (16,), "max_epochs": 3,
                  "batch_size": 32, "lr": 1e-2, "random_state": 0, "iterator_train__shuffle": False}
VAE = {"n_latent": 2, "hidden_layer_sizes": (16,), "max_epochs": 3, "batch_size": 32, "lr": 1e-2,
           "random_state": 0, "iterator_train__shuffle": False}


def data():
    """The images and labels both runs train on."""
    sys.path.insert(0, str(ROOT))
    from tests.torch_estimators import transforming_mnist

    return transforming_mnist(N_SAMPLES)


def fit(device=None, classifier_net=None, vae_net=None):
    """Fit the classifier and the VAE with these settings; with ``*_net`` classes if given."""
    from geolearn.generative import GridVAE
    from geolearn.invariance import InvariantClassifier

    X, y = data()
    extra = {"net_class": classifier_net} if classifier_net is not None else {}
    clf = InvariantClassifier(**CLASSIFIER, device=device, **extra).fit(X, y)
    extra = {"net_class": vae_net} if vae_net is not None else {}
    vae = GridVAE(**VAE, device=device, **extra).fit(X.reshape(len(X), -1))
    return clf, vae


def state(estimator):
    return {k: v.detach().cpu().clone() for k, v in estimator.module_.state_dict().items()}


def main(out_dir):
    sys.path.insert(0, str(RECIPE))
    import train_ddp as recipe

    accelerator = recipe.make_accelerator()
    clf, vae = fit(classifier_net=functools.partial(recipe.AcceleratedInvarianceNet,
                                                    accelerator=accelerator),
                   vae_net=functools.partial(recipe.AcceleratedObjectiveNet,
                                             accelerator=accelerator))
    X, _ = data()
    torch.save({"world_size": accelerator.num_processes, "clf": state(clf), "vae": state(vae),
                "vae_loss": vae.history_[:, "train_loss"],
                "proba": clf.predict_proba(X), "codes": vae.transform(X.reshape(len(X), -1)),
                "clf_type": type(clf.net_).__name__, "distributed": str(accelerator.distributed_type)},
               pathlib.Path(out_dir) / f"rank{accelerator.process_index}.pt")
    # the recipe as documented, end to end
    recipe.main()


if __name__ == "__main__":
    main(sys.argv[1])
