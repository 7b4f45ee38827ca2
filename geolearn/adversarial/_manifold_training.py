"""Adversarial training against ambient, normal or in-manifold adversaries (a skorch classifier)."""

import numpy as np
import torch
from skorch import NeuralNetClassifier
from skorch.callbacks import PassthroughScoring
from skorch.utils import to_tensor

from .._utils import check_choice, check_positive, to_numpy, torch_threads
from ..models._internal import RaiseOnNonFiniteLoss
from ._manifold_attacks import in_manifold_core, is_latent, normal_projection
from ._pgd import NORMS, SMALL_MODEL, Classifier, pgd_loop

ADVERSARIES = ("none", "ambient", "normal", "in_manifold")


class ManifoldAdversarialClassifier(NeuralNetClassifier):
    """A skorch classifier trained on clean and adversarial examples of a chosen kind.

    On every training batch the module (in eval mode, parameters frozen) is
    attacked: ``"ambient"`` by PGD in the ``adv_norm`` ball of ``adv_epsilon``
    (last iterate, Madry et al.), ``"normal"`` by PGD in each sample's normal
    disk (L2), ``"in_manifold"`` by in-manifold PGD at budget
    ``adv_in_manifold_factor * adv_epsilon`` (tangent steps, or latent steps for
    a :class:`~geolearn.manifold.LatentManifold`). The loss is the mean of the
    clean and adversarial criteria: the mean loss over the concatenation of
    clean and adversarial batches, as in the paper's reference code (batch-norm
    layers see the two halves in separate passes). The objective lives in
    ``get_loss``, so skorch's ``train_step`` (and mixins such as
    ``AccelerateMixin``) compose with it; ``history`` records ``adv_loss``.

    Defaults follow the paper's synthetic runs: plain SGD, ``lr=0.1``,
    ``max_epochs=1000``, one full batch, no validation split. Inputs are
    float32 ``(n, D)``, labels int64 class indices.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        Returns logits ``(n, C)``.
    *args
        skorch's positional arguments.
    adversary : {"none", "ambient", "normal", "in_manifold"}, default="none"
    adv_epsilon : float, default=0.1
    adv_norm : {"l2", "linf"}, default="l2"
        Of the ambient adversary (normal and in-manifold balls are L2).
    adv_n_steps : int, default=10
    adv_in_manifold_factor : float, default=2.0
        The in-manifold budget in units of ``adv_epsilon`` (the paper trains on ``2 eps``).
    manifold : manifold object, optional
        Needed by the normal and in-manifold adversaries.
    criterion, optimizer, lr, max_epochs, batch_size, train_split
        As for skorch, with the defaults above (cross-entropy on logits).
    **kwargs
        Any other skorch argument (``callbacks``, ``device``, ``module__*``, ...).

    Attributes
    ----------
    module_, history, classes_ :
        As for skorch.

    Examples
    --------
    >>> import torch
    >>> from geolearn.adversarial import ManifoldAdversarialClassifier
    >>> from geolearn.datasets import make_circle_classification
    >>> from geolearn.manifold import SphereManifold
    >>> X, y = make_circle_classification(100, random_state=0)
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    >>> clf = ManifoldAdversarialClassifier(net, adversary="normal", manifold=SphereManifold(),
    ...                                     max_epochs=5, verbose=0).fit(X, y)
    >>> len(clf.history), "adv_loss" in clf.history[-1]
    (5, True)
    """

    def __init__(self, module, *args, adversary="none", adv_epsilon=0.1, adv_norm="l2",
                 adv_n_steps=10, adv_in_manifold_factor=2.0, manifold=None,
                 criterion=torch.nn.CrossEntropyLoss, optimizer=torch.optim.SGD, lr=0.1,
                 max_epochs=1000, batch_size=-1, train_split=None, **kwargs):
        super().__init__(module, *args, criterion=criterion, optimizer=optimizer, lr=lr,
                         max_epochs=max_epochs, batch_size=batch_size, train_split=train_split,
                         **kwargs)
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
        callbacks[at:at] = [("adv_loss", PassthroughScoring(name="adv_loss", on_train=True)),
                            ("finite_loss", RaiseOnNonFiniteLoss())]
        return callbacks

    def _check_adversary(self):
        check_choice(self.adversary, "adversary", ADVERSARIES)
        check_positive(self.adv_epsilon, "adv_epsilon")
        check_choice(self.adv_norm, "adv_norm", NORMS)
        check_positive(self.adv_n_steps, "adv_n_steps", integer=True)
        check_positive(self.adv_in_manifold_factor, "adv_in_manifold_factor")
        if self.adversary in ("normal", "in_manifold") and self.manifold is None:
            raise ValueError(f"adversary={self.adversary!r} needs a manifold (e.g. "
                             "geolearn.manifold.SphereManifold()).")

    def initialize(self):
        """Validate the ``adv_*`` parameters, then initialise the net (see skorch)."""
        self._check_adversary()
        return super().initialize()

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Train (see skorch); small CPU modules train on one torch thread (many tiny ops)."""
        if not self.initialized_:
            self.initialize()
        n_params = sum(p.numel() for p in self.module_.parameters())
        small = str(self.device).startswith("cpu") and n_params <= SMALL_MODEL
        with torch_threads(1 if small else None):
            return super().partial_fit(X, y, classes=classes, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        """The criterion; on training batches, the mean of clean and adversarial criteria."""
        loss = super().get_loss(y_pred, y_true, X=X, training=training)
        if not training or self.adversary == "none":
            return loss
        X_adv = self._adversarial(X, y_true)
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
        with clf.model.frozen(), torch_threads(clf.threads):
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
                              projection=projection, stop_on_success=False)
        return out.detach().reshape(x.shape)
