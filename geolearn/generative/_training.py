"""What every torch-trained estimator of the family shares: checks, training, ``module_``, ``score``.

GridVAE, VAEClassifier, FlowDensity and DiffusionDensity each build a module and an
objective; :meth:`TorchNetMixin._train_net` trains it the one way they all use (Adam
through an :class:`~geolearn.generative._net.ObjectiveNet`, seeded by ``random_state``).
"""

import numbers

import numpy as np
import torch
from sklearn.utils._param_validation import Interval

from .._utils import resolve_device, torch_seed
from ._net import ObjectiveNet, collate_batch

#: Constraints of the parameters every torch-trained estimator of the family has.
NET_CONSTRAINTS = {
    "hidden_sizes": ["array-like"],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "lr": [Interval(numbers.Real, 0, None, closed="neither")],
    "device": "no_validation",
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

#: Constraints of the estimators trained for whole epochs (not DiffusionDensity's steps).
EPOCH_CONSTRAINTS = {
    "max_epochs": [Interval(numbers.Integral, 0, None, closed="left")],
    "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
    "callbacks": [list, None],
}


def check_device(device):
    """Resolve ``device``; an explicit CUDA device without a GPU is an error."""
    dev = resolve_device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available; use device='auto' "
                         "or 'cpu'.")
    return dev


def check_hidden_sizes(hidden_sizes):
    """``hidden_sizes`` as a tuple of positive ints; anything else is an error."""
    sizes = np.asarray(hidden_sizes)
    if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or np.any(sizes < 1):
        raise ValueError("hidden_sizes must be a sequence of positive integers; got "
                         f"{hidden_sizes!r}.")
    return tuple(int(h) for h in sizes)


def check_positive_integer(value, name):
    """Raise unless ``value`` is an integer >= 1 (e.g. ``n_samples`` of ``sample``)."""
    if not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}.")
    return value


class TorchNetMixin:
    """Training, the fitted module and the tags of an estimator that trains a skorch ``net_``.

    The estimator has the parameters ``lr``, ``device`` and ``verbose``.
    """

    def _train_net(self, build_module, objective, dataset, *, seed, max_epochs, batch_size,
                   parts=(), callbacks=None, **net_params):
        """Build a module and train it on ``dataset`` with Adam under one torch seed.

        Sets ``device_`` and ``net_``.

        Parameters
        ----------
        build_module : callable
            ``build_module() -> torch.nn.Module``; called under the seed so that the
            initial weights are reproducible.
        objective : callable
            ``objective(module, y_pred, x, y, epoch) -> (loss, parts)`` (see ``ObjectiveNet``).
        dataset : TensorDataset
        seed : int, RandomState instance or None
            Seeds the initialisation, the batch order and the objective's noise.
        max_epochs, batch_size : int
            As in ``skorch.NeuralNet``; ``max_epochs=0`` keeps the initialised net.
        parts : tuple of str, default=()
            Names of the objective's parts recorded in the history.
        callbacks : list of skorch callbacks, default=None
        **net_params
            Further ``NeuralNet`` parameters (``optimizer__weight_decay``,
            ``iterator_train__shuffle``, ``iterator_train__sampler``, ...).
        """
        self.device_ = check_device(self.device)
        with torch_seed(seed):
            self.net_ = ObjectiveNet(
                build_module(), objective=objective, parts=parts, optimizer=torch.optim.Adam,
                lr=self.lr, max_epochs=max_epochs, batch_size=batch_size, train_split=None,
                iterator_train__collate_fn=collate_batch,
                iterator_valid__collate_fn=collate_batch,
                callbacks=list(callbacks) if callbacks else None, device=self.device_,
                verbose=self.verbose, **net_params)
            self.net_.initialize()
            if max_epochs:
                self.net_.partial_fit(dataset, None)

    @property
    def module_(self):
        """The fitted torch module (``net_.module_``)."""
        return self.net_.module_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # training draws minibatches and noise, so refits differ unless random_state is fixed
        tags.non_deterministic = True
        return tags


class MeanScoreMixin:
    """``score`` as the mean of ``score_samples`` (log-likelihood or ELBO, in nats)."""

    def score(self, X, y=None):
        """Mean of :meth:`score_samples` over X, in nats (higher is better).

        Parameters
        ----------
        X : array-like
            Samples in any form that :meth:`score_samples` accepts.
        y : ignored

        Returns
        -------
        score : float
        """
        return float(np.mean(self.score_samples(X)))
