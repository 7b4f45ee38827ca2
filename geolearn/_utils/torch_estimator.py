"""What the torch-trained estimators of several families share on top of the one training route.

The estimators of geolearn.generative, geolearn.ood, geolearn.disentanglement and
geolearn.meta_learning use these constraints and mixins. GridVAE, VAEClassifier,
FlowDensity and DiffusionDensity, for instance, train through
:class:`geolearn.models.SkorchTrainingMixin` with ``net_class =``
:class:`geolearn.models.ObjectiveNet`: each supplies a module (a class or a
``functools.partial``, built by skorch at ``initialize()`` under the seed, with
the user's ``module__*`` settings) and a per-sample objective.
"""

import numbers

import numpy as np
import torch
from sklearn.utils._param_validation import Interval

from ..models import ObjectiveNet, SkorchTrainingMixin
from .tensor_data import TensorDataset, collate_batch

#: Constraints of the parameters every torch-trained estimator of the family has.
NET_CONSTRAINTS = {
    "hidden_layer_sizes": ["array-like"],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "lr": [Interval(numbers.Real, 0, None, closed="neither")],
    "callbacks": [list, None],
    "warm_start": ["boolean"],
    "device": "no_validation",
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

#: Constraints of the estimators trained for whole epochs (not DiffusionDensity's steps).
EPOCH_CONSTRAINTS = {
    "max_epochs": [Interval(numbers.Integral, 1, None, closed="left")],
    "weight_decay": [Interval(numbers.Real, 0, None, closed="left")],
}


def check_max_epochs(max_epochs, denoiser):
    """Refuse ``max_epochs=0`` unless ``denoiser`` is a module to use as it is.

    A built denoiser (``"auto"``, ``"mlp"``, ``"unet"``) trained for no epoch is
    random: the fit would return a model that looks fitted and generates noise.
    """
    if max_epochs == 0 and isinstance(denoiser, str):
        raise ValueError(f"max_epochs=0 would leave the {denoiser!r} denoiser untrained: "
                         "max_epochs must be >= 1 (0 only with a denoiser module, used as it "
                         "is).")


class ObjectiveTrainingMixin(SkorchTrainingMixin):
    """Trains a module on a per-sample objective through :class:`~geolearn.models.ObjectiveNet`.

    The estimator has the parameters of :class:`~geolearn.models.SkorchTrainingMixin`
    (``lr``, ``batch_size``, ``callbacks``, ``warm_start``, ``device``,
    ``verbose``, ``random_state`` and skorch's prefixed settings).
    """

    net_class = ObjectiveNet
    # the objective replaces the criterion, and the rows arrive as a built dataset
    _refused_net_settings = ("criterion", "dataset")

    def _train(self, module, objective, X, y=None, *, seed, max_epochs, parts=(),
               sample_weight=None, **settings):
        """Train ``module`` on the rows of the tensor ``X`` (and ``y``); sets ``net_``.

        ``sample_weight`` (a checked ndarray, or None) makes the objective a weighted mean
        over each batch's rows (``objective(..., sample_weight=w)``); rows of weight 0 are
        left out, so they are exactly dropped rows (and no batch has a zero total weight).

        The family's one fit route: every epoch visits the rows in shuffled minibatches of
        ``min(batch_size, n_samples)`` rows, unless ``settings`` pass an
        ``iterator_train__sampler``. ``settings`` are further net arguments
        (``optimizer__weight_decay``, ``iterator_train__drop_last``, ...). With
        ``warm_start`` the fitted net goes
        on training on the new rows for ``max_epochs`` more epochs at the current
        ``lr`` and ``batch_size``, with this fit's data-dependent
        ``iterator_train__*`` settings (unless the user set them).
        """
        if sample_weight is not None:
            kept = torch.from_numpy(sample_weight > 0)
            X, y = X[kept], (None if y is None else y[kept])
            sample_weight = torch.from_numpy(sample_weight[sample_weight > 0])
        dataset = TensorDataset(X, y, sample_weight)
        rows = ({} if "iterator_train__sampler" in settings else
                {"iterator_train__shuffle": True,
                 "iterator_train__batch_size": min(self.batch_size, len(X))})
        settings = {"train_split": None, "iterator_train__collate_fn": collate_batch,
                    "iterator_valid__collate_fn": collate_batch, **rows, **settings}
        if self._warm():
            self.net_.set_params(max_epochs=max_epochs, lr=self.lr, batch_size=self.batch_size)
            # the loader settings that depend on this fit's data (skorch reads them at every
            # epoch; its set_params refuses them on an initialised net)
            user = self._net_params()
            for key, value in settings.items():
                if key.startswith("iterator_train__") and key not in user:
                    setattr(self.net_, key, value)
        return self._fit_net(module, dataset, None, seed=seed, max_epochs=max_epochs,
                             objective=objective, parts=parts, **settings)


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


