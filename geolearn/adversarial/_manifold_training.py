"""Adversarial training against ambient, normal or in-manifold adversaries (a skorch classifier)."""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from skorch import NeuralNetClassifier
from skorch.callbacks import PassthroughScoring
from skorch.utils import to_tensor

from .._utils import to_numpy
from ..models import SkorchClassifierMixin
from ..models._internal import FLOAT32_WEIGHTS_REASON, WeightedLossNetMixin
from ._manifold_attacks import in_manifold_core, is_latent, normal_projection
from ._pgd import NORMS, Classifier, pgd_loop

ADVERSARIES = ("none", "ambient", "normal", "in_manifold")


class ManifoldAdversarialNet(WeightedLossNetMixin, NeuralNetClassifier):
    """The skorch net of :class:`ManifoldAdversarialClassifier`: its loss attacks each batch.

    On training batches ``get_loss`` is the mean of the clean and adversarial
    criteria, each weighted per row by the batch's ``sample_weight`` when it has
    one; ``history`` records ``adv_loss``. The ``adv_*`` arguments and
    ``manifold`` are those of the estimator, which validates them.
    """

    def __init__(self, *args, adversary="none", adv_epsilon=0.1, adv_norm="l2", adv_n_steps=10,
                 adv_in_manifold_factor=2.0, manifold=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.adversary = adversary
        self.adv_epsilon = adv_epsilon
        self.adv_norm = adv_norm
        self.adv_n_steps = adv_n_steps
        self.adv_in_manifold_factor = adv_in_manifold_factor
        self.manifold = manifold

    def get_default_callbacks(self):
        callbacks = list(super().get_default_callbacks())
        at = next((i for i, (name, _) in enumerate(callbacks) if name == "print_log"),
                  len(callbacks))
        callbacks.insert(at, ("adv_loss", PassthroughScoring(name="adv_loss", on_train=True)))
        return callbacks

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The criterion; on training batches, the mean of clean and adversarial criteria."""
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        if not training or self.adversary == "none":
            return loss
        X_adv = self._adversarial(X, self.split_target(y_true)[0])
        adv_loss = super().get_loss(self.infer(X_adv), y_true, X=X_adv, training=training)
        self.history.record_batch("adv_loss", adv_loss.item())
        return (loss + adv_loss) / 2

    def _adversarial(self, X, y):
        """Adversarial examples of a batch, attacked with the module frozen (eval mode)."""
        x = to_tensor(X, device=self.device).float()
        t = to_tensor(y, device=self.device).long()
        flat = x.reshape(len(x), -1)
        clf = Classifier(self.module_, flat.shape[1], tuple(x.shape[1:]))
        eps, steps = float(self.adv_epsilon), int(self.adv_n_steps)
        if self.manifold is not None and self.manifold.ambient_dim != flat.shape[1]:
            raise ValueError(f"manifold.ambient_dim={self.manifold.ambient_dim} but X has "
                             f"{flat.shape[1]} features.")
        with clf.model.frozen(), clf.threads():
            if self.adversary == "in_manifold":
                Xn = to_numpy(flat).astype(np.float64)
                method = "latent" if is_latent(self.manifold) else "tangent_pgd"
                rho = self.adv_in_manifold_factor * eps
                out = in_manifold_core(clf, self.manifold, Xn, to_numpy(t),
                                       np.zeros(len(Xn), bool), rho=rho, method=method,
                                       n_steps=steps, step_size=2.5 * rho / steps,
                                       n_restarts=1, loss="ce", grid_step=None,
                                       batch_size=len(Xn), random_state=0)[0]
                return torch.as_tensor(out, device=x.device).reshape(x.shape)
            projection, norm = None, self.adv_norm
            if self.adversary == "normal":
                T = self.manifold.tangent_basis(to_numpy(flat).astype(np.float64))
                projection = normal_projection(torch.as_tensor(T, dtype=flat.dtype,
                                                               device=flat.device))
                norm = "l2"
            out, _ = pgd_loop(lambda xa, tt, _: clf.grad_wrong(xa, tt), flat, t, epsilon=eps,
                              norm=norm, step_size=2.5 * eps / steps, n_steps=steps,
                              projection=projection, stop_on_success=False,
                              need_success=False)
        return out.detach().reshape(x.shape)


class ManifoldAdversarialClassifier(SkorchClassifierMixin, ClassifierMixin, BaseEstimator):
    """A classifier trained on clean and adversarial examples of a chosen kind.

    On every training batch the module (in eval mode, parameters frozen) is
    attacked: ``"ambient"`` by PGD in the ``adv_norm`` ball of ``adv_epsilon``
    (last iterate, Madry et al.), ``"normal"`` by PGD in each sample's normal
    disk (L2), ``"in_manifold"`` by in-manifold PGD at budget
    ``adv_in_manifold_factor * adv_epsilon`` (tangent steps, or latent steps for
    a :class:`~geolearn.manifold.LatentManifold`). The loss is the mean of the
    clean and adversarial criteria: the mean loss over the concatenation of
    clean and adversarial batches, as in the paper's reference code (batch-norm
    layers see the two halves in separate passes). The objective lives in the
    ``get_loss`` of its skorch net (:attr:`net_class`, a
    ``ManifoldAdversarialNet``), so skorch's ``train_step`` (and mixins such as
    ``AccelerateMixin``) compose with it; ``history_`` records ``adv_loss``.
    Training runs through geolearn's one route for torch estimators
    (:class:`geolearn.models.SkorchClassifierMixin`).

    Defaults follow the paper's synthetic runs: plain SGD, ``lr=0.1``,
    ``max_epochs=1000``, one full batch, no validation split.

    Parameters
    ----------
    module : torch.nn.Module class or instance, default=None
        Returns logits ``(n, C)`` of flat rows. ``None``: a ReLU MLP of
        ``hidden_layer_sizes``. An instance is copied at every fit.
    adversary : {"none", "ambient", "normal", "in_manifold"}, default="none"
    adv_epsilon : float, default=0.1
    adv_norm : {"l2", "linf"}, default="l2"
        Of the ambient adversary (normal and in-manifold balls are L2).
    adv_n_steps : int, default=10
    adv_in_manifold_factor : float, default=2.0
        The in-manifold budget in units of ``adv_epsilon`` (the paper trains on ``2 eps``).
    manifold : manifold object, optional
        Needed by the normal and in-manifold adversaries.
    hidden_layer_sizes : tuple of int, default=(16,)
        Of the MLP built when ``module=None``.
    criterion, optimizer : torch class, default=CrossEntropyLoss, SGD
        As for skorch (cross-entropy on logits).
    lr : float, default=0.1
    max_epochs : int, default=1000
    batch_size : int, default=-1
        ``-1``: one full batch.
    train_split : callable or None, default=None
        skorch's validation split.
    callbacks : list of skorch callbacks, optional
    warm_start : bool, default=False
        A second ``fit`` continues training the fitted net.
    device : str, torch.device or None, default="auto"
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights (of a module class or the MLP) and the batch order.
    **net_params
        skorch's prefixed settings (``module__*``, ``optimizer__*``, ...) and
        ``net_class``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    history_ : skorch.History
        Per epoch ``train_loss`` and ``adv_loss``.
    net_, module_, device_
        The fitted skorch net, its module and device.

    Examples
    --------
    >>> from geolearn.adversarial import ManifoldAdversarialClassifier
    >>> from geolearn.datasets import make_circle_classification
    >>> from geolearn.manifold import SphereManifold
    >>> X, y = make_circle_classification(100, random_state=0)
    >>> clf = ManifoldAdversarialClassifier(adversary="normal", manifold=SphereManifold(),
    ...                                     max_epochs=5, random_state=0).fit(X, y)
    >>> len(clf.history_), "adv_loss" in clf.history_[-1]
    (5, True)
    """

    _parameter_constraints = {
        **SkorchClassifierMixin._parameter_constraints,
        "module": [None, callable],
        "adversary": [StrOptions(set(ADVERSARIES))],
        "adv_epsilon": [Interval(Real, 0, None, closed="neither")],
        "adv_norm": [StrOptions(set(NORMS))],
        "adv_n_steps": [Interval(Integral, 1, None, closed="left")],
        "adv_in_manifold_factor": [Interval(Real, 0, None, closed="neither")],
        "manifold": [HasMethods(["project", "tangent_basis"]), None],
        "hidden_layer_sizes": ["array-like"],
    }

    net_class = ManifoldAdversarialNet

    _expected_failed_checks = {  # noqa: RUF012
        "check_sample_weight_equivalence_on_dense_data": FLOAT32_WEIGHTS_REASON,
    }

    def __init__(self, module=None, *, adversary="none", adv_epsilon=0.1, adv_norm="l2",
                 adv_n_steps=10, adv_in_manifold_factor=2.0, manifold=None,
                 hidden_layer_sizes=(16,), criterion=torch.nn.CrossEntropyLoss,
                 optimizer=torch.optim.SGD, lr=0.1, max_epochs=1000, batch_size=-1,
                 train_split=None, callbacks=None, warm_start=False, device="auto", verbose=0,
                 random_state=None, **net_params):
        self.module = module
        self.adversary = adversary
        self.adv_epsilon = adv_epsilon
        self.adv_norm = adv_norm
        self.adv_n_steps = adv_n_steps
        self.adv_in_manifold_factor = adv_in_manifold_factor
        self.manifold = manifold
        self.hidden_layer_sizes = hidden_layer_sizes
        self.criterion = criterion
        self.optimizer = optimizer
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.train_split = train_split
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.verbose = verbose
        self.random_state = random_state
        self._set_net_params(net_params)

    def _check_adversary(self, n_features):
        """What the constraints cannot say: the manifold the adversary needs, of X's width."""
        if self.adversary in ("normal", "in_manifold"):
            if self.manifold is None:
                raise ValueError(f"adversary={self.adversary!r} needs a manifold (e.g. "
                                 "geolearn.manifold.SphereManifold()).")
            if self.manifold.ambient_dim != n_features:
                raise ValueError(f"manifold.ambient_dim={self.manifold.ambient_dim} but X has "
                                 f"{n_features} features.")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train on clean and adversarial examples of ``X``.

        With ``warm_start=True`` and a fitted net, training continues for
        ``max_epochs`` more epochs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights of both the clean and the adversarial loss: each is
            the weighted mean ``sum_i w_i l_i / sum_i w_i`` of the batch's per-row
            losses (the adversarial one at the row's adversarial example), so integer
            weights equal repeated rows and a weight 0 drops a row.

        Returns
        -------
        self : ManifoldAdversarialClassifier
        """
        X, y, sample_weight = self._fit_data(X, y, sample_weight)
        self._check_adversary(X.shape[1])
        adversary = {name: getattr(self, name) for name in (
            "adversary", "adv_epsilon", "adv_norm", "adv_n_steps", "adv_in_manifold_factor",
            "manifold")}
        if self._warm():  # the adv_* settings may have changed since
            self.net_.set_params(**adversary)
        data, settings = self._training_data(X, y, sample_weight)
        self._fit_net(self._module(X.shape[1]), data, y, seed=self.random_state,
                      max_epochs=self.max_epochs, criterion=self.criterion,
                      optimizer=self.optimizer, train_split=self.train_split,
                      **adversary, **settings)
        return self._after_fit()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags
