"""SVBFNetClassifier: the abstract node and a centroid head trained in situ through skorch."""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNetClassifier
from torch import nn

from .._utils import check_scalar_param
from ..models import SkorchClassifierMixin
from ..models._internal import WeightedLossNetMixin, weighted_mean
from ._node import SVBFNode, centroid_logits
from ._validation import ZERO_SET_CHECKS, check_bases


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


class SVBFNetLoss(WeightedLossNetMixin, NeuralNetClassifier):
    """The skorch net of :class:`SVBFNetClassifier`: the class loss plus the node's losses.

    A batch's ``sample_weight`` weights the class loss and the node's fit loss per set;
    the orthogonality penalty is a term of ``K`` alone.
    """

    def __init__(self, *args, alpha=1.0, beta=1e4, gamma=1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma

    def get_loss(self, y_pred, y_true, X=None, training=False):
        loss = self.gamma * super().get_loss(y_pred, y_true, X=X, training=training)
        node = self.module_.node
        loss = loss + self.alpha * weighted_mean(node.fit_losses_, self.split_target(y_true)[1])
        if node.orthogonality == "penalty":
            loss = loss + self.beta * node.orth_loss_
        return loss


class SVBFNetClassifier(SkorchClassifierMixin, ClassifierMixin, BaseEstimator):
    """The paper's Algorithm III with in-situ training: SVBF node + centroid softmax (skorch).

    The loss is ``gamma * cross_entropy + alpha * fit_loss_ (+ beta * orth_loss_)``:
    the class loss of the softmax over ``(b^T w_j)^2 / T`` plus the node's fit of
    the variety (minus the mean ``cos^2 theta_1``, paper Eq. 7). With
    ``detach=True`` (the paper's choice) the class loss trains only the
    centroids and ``K`` learns from the fit loss.

    Sets are given as for :class:`SVBF` (``(r, n, l)``, a list of ``(n, l_i)``
    arrays, or a table of one-vector sets); sets that are not orthonormal are
    replaced by orthonormal bases with a warning; ragged sets are zero-padded.
    The network is built at :meth:`fit` from the data (``n``, classes). Training
    runs through geolearn's one route for torch estimators
    (:class:`geolearn.models.SkorchClassifierMixin`, with :attr:`net_class` a
    skorch ``NeuralNetClassifier`` whose ``get_loss`` adds the node's losses).

    Parameters
    ----------
    module : type, default=SVBFNet
        Called with ``n_features``, ``n_components``, ``n_classes``, ``objective``,
        ``orthogonality``, ``detach``, ``T`` and the ``module__*`` settings.
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
    criterion, optimizer : torch class, default=CrossEntropyLoss, Adam
    lr : float, default=1e-3
        The paper's.
    batch_size : int, default=64
    max_epochs : int, default=200
    train_split : callable or None, default=None
    callbacks : list of skorch callbacks, optional
    warm_start : bool, default=False
        A second ``fit`` continues training the fitted net.
    device : str, torch.device or None, default="auto"
    verbose : int, default=0
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights and the batch order.
    **net_params
        skorch's prefixed settings (``module__*``, ``optimizer__*``, ...) and
        ``net_class``.

    Attributes
    ----------
    module_ : SVBFNet
    classes_ : ndarray of shape (C,)
    n_features_in_ : int
    history_ : skorch.History
    net_, device_
        The fitted skorch net and its device.

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import SVBFNetClassifier
    >>> rng = np.random.default_rng(0)
    >>> def planes(line, m):
    ...     return np.stack([np.linalg.qr(np.c_[line, rng.normal(size=8)])[0] for _ in range(m)])
    >>> X = np.concatenate([planes(np.eye(8)[0], 20), planes(np.eye(8)[1], 20)])
    >>> y = np.repeat(["a", "b"], 20)
    >>> net = SVBFNetClassifier(n_components=2, lr=0.05, max_epochs=30,
    ...                         random_state=0).fit(X, y)
    >>> net.predict(X[:2]).tolist()
    ['a', 'a']
    """

    _parameter_constraints = {
        **SkorchClassifierMixin._parameter_constraints,
        "module": [callable],
        # at most n_features: checked with X
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "objective": [StrOptions({"cos2", "cos"})],
        "orthogonality": [StrOptions({"parametrize", "penalty"})],
        "detach": ["boolean"],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "beta": [Interval(Real, 0, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="left")],
        "T": [Interval(Real, 0, None, closed="neither")],
    }

    net_class = SVBFNetLoss

    _expected_failed_checks = ZERO_SET_CHECKS

    def __init__(self, module=SVBFNet, *, n_components=4, objective="cos2",
                 orthogonality="parametrize", detach=True, alpha=1.0, beta=1e4, gamma=1.0,
                 T=0.1, criterion=nn.CrossEntropyLoss, optimizer=torch.optim.Adam, lr=1e-3,
                 batch_size=64, max_epochs=200, train_split=None, callbacks=None,
                 warm_start=False, device="auto", verbose=0, random_state=None, **net_params):
        self.module = module
        self.n_components = n_components
        self.objective = objective
        self.orthogonality = orthogonality
        self.detach = detach
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.T = T
        self.criterion = criterion
        self.optimizer = optimizer
        self.lr = lr
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.train_split = train_split
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.verbose = verbose
        self.random_state = random_state
        self._set_net_params(net_params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.non_deterministic = self.random_state is None
        # p(j | b) = p(j | -b) on lines through the origin (see SVBFClassifier)
        tags.classifier_tags.poor_score = True
        return tags

    def _check_X(self, X, *, reset):
        """Orthonormal bases of the sets as float32 ``(r, n, L)``; sets ``n_features_in_``."""
        if not reset:
            check_is_fitted(self)
        return check_bases(X, self, reset=reset)[0].astype(np.float32)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Build the network for the data and train it.

        With ``warm_start=True`` and a fitted net, training continues for
        ``max_epochs`` more epochs.

        Parameters
        ----------
        X : set array (see :class:`SVBF`)
        y : array-like of shape (r,)
        sample_weight : array-like of shape (r,), default=None
            Per-set weights of the class loss and of the node's fit loss: each is
            the batch's weighted mean ``sum_i w_i l_i / sum_i w_i``, so integer
            weights equal repeated sets and a weight 0 drops a set. The
            orthogonality penalty (a term of ``K`` alone) is not weighted.

        Returns
        -------
        self : SVBFNetClassifier
        """
        X, y, sample_weight = self._fit_data(X, y, sample_weight)
        check_scalar_param(self.n_components, "n_components", kind="integer", low=1,
                           high=X.shape[1], closed="both")
        weights = {"alpha": self.alpha, "beta": self.beta, "gamma": self.gamma}
        if self._warm():
            self.net_.set_params(**weights)
        module = {"module__n_features": self.n_features_in_,
                  "module__n_classes": len(self.classes_),
                  "module__n_components": self.n_components, "module__objective": self.objective,
                  "module__orthogonality": self.orthogonality, "module__detach": self.detach,
                  "module__T": self.T}
        data, settings = self._training_data(X, y, sample_weight)
        self._fit_net(self.module, data, y, seed=self.random_state, max_epochs=self.max_epochs,
                      criterion=self.criterion, optimizer=self.optimizer,
                      train_split=self.train_split, **module, **weights, **settings)
        return self._after_fit()
