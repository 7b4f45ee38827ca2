"""SVBFNetClassifier: the abstract node and a centroid head trained in situ through skorch."""

from contextlib import contextmanager

import numpy as np
import torch
from skorch import NeuralNetClassifier
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .._utils import (
    check_scalar_param,
    discard_fitted,
    resolve_device,
    torch_seed,
)
from ..models._internal import RaiseOnNonFiniteLoss, warn_if_interrupted
from ._node import SVBFNode, centroid_logits
from ._validation import ZERO_SET_CHECKS, check_bases, check_labeled_bases, check_two_classes


class SVBFNet(nn.Module):
    """:class:`SVBFNode` followed by unit centroids: logits ``(b^T w_j)^2 / T`` (Eq. 7).

    Parameters
    ----------
    n_features, n_components : int
        ``n`` and ``k`` of the node.
    n_classes : int
    objective, orthogonality, detach
        As in :class:`SVBFNode`.
    T : float, default=0.1
        Softmax temperature.

    Examples
    --------
    >>> import torch
    >>> from geolearn.subspaces._net import SVBFNet
    >>> net = SVBFNet(n_features=6, n_components=2, n_classes=3)
    >>> net(torch.linalg.qr(torch.randn(4, 6, 2)).Q).shape
    torch.Size([4, 3])
    """

    def __init__(self, n_features, n_components, n_classes, objective="cos2",
                 orthogonality="parametrize", detach=True, T=0.1):
        super().__init__()
        self.node = SVBFNode(n_features, n_components, objective=objective,
                             orthogonality=orthogonality, detach=detach)
        self.centroids = nn.Parameter(torch.randn(n_classes, n_components))
        self.T = T

    def forward(self, X):
        return centroid_logits(self.node(X), self.centroids, self.T)


class SVBFNetClassifier(NeuralNetClassifier):
    """The paper's Algorithm III with in-situ training: SVBF node + centroid softmax (skorch).

    The loss is ``gamma * cross_entropy + alpha * fit_loss_ (+ beta * orth_loss_)``:
    the class loss of the softmax over ``(b^T w_j)^2 / T`` plus the node's fit of
    the variety (minus the mean ``cos^2 theta_1``, paper Eq. 7). With
    ``detach=True`` (the paper's choice) the class loss trains only the
    centroids and ``K`` learns from the fit loss.

    Sets are given as for :class:`SVBF` (``(r, n, l)``, a list of ``(n, l_i)``
    arrays, or a table of one-vector sets); sets that are not orthonormal are
    replaced by orthonormal bases with a warning; ragged sets are zero-padded.
    The network is built at :meth:`fit` from the data (``n``, classes).

    Parameters
    ----------
    module : type, default=SVBFNet
    n_components : int, default=4
        ``k``.
    objective : {"cos2", "cos"}, default="cos2"
    orthogonality : {"parametrize", "penalty"}, default="parametrize"
    detach : bool, default=True
    alpha, beta, gamma : float, default=1.0, 1e4, 1.0
        Weights of the fit loss, the orthogonality penalty (``"penalty"`` only;
        the paper's ``lambda_0``) and the class loss.
    T : float, default=0.1
        Softmax temperature.
    criterion, optimizer, lr, batch_size, max_epochs, train_split, device
        As in :class:`skorch.NeuralNetClassifier` (defaults: cross-entropy, Adam,
        the paper's ``lr=1e-3``, 64, 200, no validation split, ``"cpu"``).
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the batch order.
    **kwargs
        Passed to :class:`skorch.NeuralNetClassifier` (``callbacks``, ``warm_start``,
        ``verbose``, ``module__*``, ``optimizer__*``, ...). As with every geolearn
        net, a non-finite training loss stops training with a clear error, and
        ``device="cuda"`` without CUDA is a clear ``ValueError``.

    Attributes
    ----------
    module_ : SVBFNet
    classes_ : ndarray of shape (C,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import SVBFNetClassifier
    >>> rng = np.random.default_rng(0)
    >>> def planes(line, m):
    ...     return np.stack([np.linalg.qr(np.c_[line, rng.normal(size=8)])[0] for _ in range(m)])
    >>> X = np.concatenate([planes(np.eye(8)[0], 20), planes(np.eye(8)[1], 20)])
    >>> y = np.repeat(["a", "b"], 20)
    >>> net = SVBFNetClassifier(n_components=2, lr=0.05, max_epochs=30, verbose=0,
    ...                         random_state=0).fit(X, y)
    >>> net.predict(X[:2]).tolist()
    ['a', 'a']
    """

    def __init__(self, module=SVBFNet, *, n_components=4, objective="cos2",
                 orthogonality="parametrize", detach=True, alpha=1.0, beta=1e4, gamma=1.0,
                 T=0.1, criterion=nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-3,
                 batch_size=64, max_epochs=200, train_split=None, device="cpu",
                 random_state=None, **kwargs):
        super().__init__(module, criterion=criterion, optimizer=optimizer, lr=lr,
                         batch_size=batch_size, max_epochs=max_epochs, train_split=train_split,
                         device=device, **kwargs)
        self.n_components = n_components
        self.objective = objective
        self.orthogonality = orthogonality
        self.detach = detach
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.T = T
        self.random_state = random_state

    @property
    def classes_(self):
        return self.labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        # p(j | b) = p(j | -b) on lines through the origin (see SVBFClassifier)
        tags.classifier_tags.poor_score = True
        return tags

    _expected_failed_checks = {
        **ZERO_SET_CHECKS,
        "check_no_attributes_set_in_init": "skorch.NeuralNet.__init__ sets history_, "
                                           "initialized_ and virtual_params_",
        "check_set_params": "skorch.NeuralNet.set_params re-initialises the components it "
                            "touches, so it rejects the check's placeholder values at once",
    }

    def get_default_callbacks(self):
        # as every geolearn net: a non-finite training loss stops training with a clear error
        return [*super().get_default_callbacks(), ("finite_loss", RaiseOnNonFiniteLoss())]

    def initialize(self):
        if self.device is not None:
            resolve_device(self.device)  # a clear error when CUDA is asked for and absent
        # skorch compiles on any truthy value (compile="yes": minutes of torch.compile)
        check_scalar_param(self.compile, "compile", kind="boolean")
        return super().initialize()

    def _sets(self, X, reset):
        return check_bases(X, self, reset=reset)[0].astype(np.float32)

    def initialize_module(self):
        kwargs = {"n_features": self.n_features_in_, "n_classes": len(self.labels_),
                  "n_components": self.n_components, "objective": self.objective,
                  "orthogonality": self.orthogonality, "detach": self.detach, "T": self.T,
                  **self.get_params_for("module")}
        self.module_ = self.initialized_instance(self.module, kwargs)
        return self

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = self.gamma * super().get_loss(y_pred, y_true, X=X, training=training)
        node = self.module_.node
        loss = loss + self.alpha * node.fit_loss_
        if node.orthogonality == "penalty":
            loss = loss + self.beta * node.orth_loss_
        return loss

    def _prepare(self, X, y, reset, classes=None):
        bases, _, y = check_labeled_bases(X, y, self, reset=reset)
        X = bases.astype(np.float32)
        if reset:
            for name in ("alpha", "beta", "gamma"):
                check_scalar_param(getattr(self, name), name, low=0)
            check_scalar_param(self.T, "T", low=0, closed="neither")
            self.labels_ = np.unique(y if classes is None else classes)
            check_two_classes(self.labels_, self)
            if not 1 <= self.n_components <= X.shape[1]:
                raise ValueError(f"n_components must be in [1, n] = [1, {X.shape[1]}]; got "
                                 f"{self.n_components!r}.")
        unknown = np.setdiff1d(y, self.labels_)
        if unknown.size:
            raise ValueError(f"y contains labels not seen in the first fit: {unknown[:5]!r}.")
        return X, np.searchsorted(self.labels_, y).astype(np.int64)

    def fit(self, X, y, **fit_params):
        """Build the network for the data and train it from scratch.

        Parameters
        ----------
        X : set array (see :class:`SVBF`)
        y : array-like of shape (r,)
        **fit_params
            Passed to :meth:`skorch.NeuralNet.partial_fit`.

        Returns
        -------
        self : SVBFNetClassifier
        """
        with self._transaction(fit_params, before=0):
            X, y = self._prepare(X, y, reset=True)
            with torch_seed(self.random_state):
                self.initialize()
                NeuralNetClassifier.partial_fit(self, X, y, **fit_params)
        return self

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Continue training (the first call builds the network).

        Parameters
        ----------
        X : set array
        y : array-like of shape (r,)
        classes : array-like, default=None
            All classes, on the first call when ``y`` may not hold them all.
        **fit_params
            Passed to :meth:`skorch.NeuralNet.partial_fit`.

        Returns
        -------
        self : SVBFNetClassifier
        """
        first = not hasattr(self, "labels_")
        with self._transaction(fit_params, before=0 if first else len(self.history)):
            X, y = self._prepare(X, y, reset=first, classes=classes)
            if first:
                self.initialize()
            super().partial_fit(X, y, **fit_params)
        return self

    @contextmanager
    def _transaction(self, fit_params, before):
        """Train as a transaction: a failure leaves the net unfitted, an interrupt says so.

        skorch swallows a KeyboardInterrupt (the net keeps the last completed epoch), so
        it is reported by a ``TrainingInterruptedWarning``, or raised again when no epoch
        completed; any other failure discards the fitted state, so that no half-trained
        net passes ``check_is_fitted``.
        """
        try:
            yield
            warn_if_interrupted(self, self, fit_params.get("epochs") or self.max_epochs, before,
                                stacklevel=5)
        except BaseException:
            # skorch's constructor sets these three; the rest is fitted state
            discard_fitted(self, keep=("history_", "initialized_", "virtual_params_"))
            self.initialized_, self.history_ = False, None
            raise

    def predict_proba(self, X):
        """Softmax of ``(b^T w_j)^2 / T`` over classes.

        Parameters
        ----------
        X : set array

        Returns
        -------
        proba : ndarray of shape (r, C)
        """
        check_is_fitted(self, "labels_")
        return super().predict_proba(self._sets(X, reset=False))

    def predict(self, X):
        """The most probable class.

        Parameters
        ----------
        X : set array

        Returns
        -------
        y : ndarray of shape (r,)
        """
        proba = self.predict_proba(X)
        return self.labels_[np.argmax(proba, axis=1)]
