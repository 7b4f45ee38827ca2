"""Classifiers on sets: nearest Schubert variety (Algorithm II) and the centroid head (III)."""

from numbers import Integral, Real

import numpy as np
import torch
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data
from torch import nn

from .._utils import progress_bar, thread_map, to_numpy, to_tensor
from ..models import SkorchTrainingMixin
from ..models._internal import FunctionalCriterion, TensorDataset, collate_batch
from ._grassmann import METRICS
from ._node import centroid_logits, unit_rows
from ._sets import unpad
from ._svbf import SVBF, SVBF_PARAMETERS
from ._validation import _SetsMixin, check_labeled_bases, check_two_classes


class SVBFClassifier(_SetsMixin, ClassifierMixin, BaseEstimator):
    """Nearest Schubert variety: one :class:`SVBF` per class (the paper's Algorithm II).

    Each class ``j`` gets its variety ``Omega_c(W_j)`` fitted to its training
    sets; a new set is assigned to the class whose variety is nearest. With
    ``c = 1`` every metric ranks classes by the smallest principal angle
    ``theta_1(V, W_j)``, the paper's rule.

    Read more in the :doc:`User Guide </user_guide/subspaces>`.

    Parameters
    ----------
    n_components : int or tuple of int, default=4
        ``k`` of every class variety (the paper's "working dimension" for its
        image sets is 4).
    intersection_dim, objective, solver, max_iter, tol, n_init, init, shift, \
orth_penalty, lr, batch_size, input_type, subspace_dim, set_shape, dtype, device
        As in :class:`SVBF`.
    metric : {"chordal", "geodesic", "cos2", "cos"}, default="chordal"
        Distance to each variety used by :meth:`decision_function` and :meth:`predict`.
    temperature : float, default=0.05
        :meth:`predict_proba` is the softmax over classes of minus the
        distances divided by ``temperature`` (a geolearn convention; the paper
        defines no probabilities). For ``metric="cos2"`` it is the softmax of
        the per-class fit :meth:`SVBF.score_samples` over ``temperature``.
    n_jobs : int or None, default=None
        Classes fitted in parallel (threads).
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0
        ``> 0`` shows a progress bar over the classes.

    Attributes
    ----------
    classes_ : ndarray of shape (C,)
    estimators_ : list of SVBF
        The fitted variety of each class.
    bases_ : ndarray of shape (C, n, k)
        ``basis_`` of each class variety.
    n_iter_ : ndarray of shape (C,)
        Iterations of each class fit.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import SVBFClassifier
    >>> rng = np.random.default_rng(0)
    >>> def planes(line, m):   # planes through a class-specific line
    ...     return np.stack([np.linalg.qr(np.c_[line, rng.normal(size=10)])[0] for _ in range(m)])
    >>> X = np.concatenate([planes(np.eye(10)[0], 20), planes(np.eye(10)[1], 20)])
    >>> y = np.repeat([0, 1], 20)
    >>> clf = SVBFClassifier(n_components=1, random_state=0).fit(X, y)
    >>> clf.score(X, y)
    1.0
    """

    _parameter_constraints = {
        **SVBF_PARAMETERS,
        "metric": [StrOptions(set(METRICS))],
        "temperature": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, n_components=4, intersection_dim=1, *, objective="cos2", solver="mm",
                 max_iter=None, tol=1e-10, n_init=4, init="flag_mean", shift=1e-6,
                 orth_penalty=1e4, lr=1e-3, batch_size=None, input_type="auto",
                 subspace_dim=None, set_shape=None, metric="chordal", temperature=0.05,
                 dtype="float64", device="auto", n_jobs=None, random_state=None, verbose=0):
        self.n_components = n_components
        self.intersection_dim = intersection_dim
        self.objective = objective
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.init = init
        self.shift = shift
        self.orth_penalty = orth_penalty
        self.lr = lr
        self.batch_size = batch_size
        self.input_type = input_type
        self.subspace_dim = subspace_dim
        self.set_shape = set_shape
        self.metric = metric
        self.temperature = temperature
        self.dtype = dtype
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit one Schubert variety per class.

        Parameters
        ----------
        X : set array (see :class:`SVBF`)
        y : array-like of shape (r,)
        sample_weight : array-like of shape (r,), default=None

        Returns
        -------
        self : SVBFClassifier
        """
        bases, dims, y = check_labeled_bases(X, y, self, **self._set_options)
        w = _check_sample_weight(sample_weight, bases, dtype=np.float64,
                                 ensure_non_negative=True)
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        check_two_classes(self.classes_, self)
        # the class varieties take every SVBF parameter but the input layout (the sets are
        # bases by now), their own seeds and threads
        params = {name: getattr(self, name) for name in SVBF._get_param_names()
                  if name not in ("transform_output", "n_jobs", "input_type", "set_shape",
                                  "subspace_dim", "random_state", "verbose")}
        seeds = check_random_state(self.random_state).randint(np.iinfo(np.int32).max,
                                                              size=len(self.classes_))
        members = [np.flatnonzero(y_idx == j) for j in range(len(self.classes_))]
        for j, idx in enumerate(members):
            if w[idx].sum() <= 0:
                raise ValueError(f"sample_weight is zero on every set of class "
                                 f"{self.classes_[j]!r}.")

        def fit_class(idx, seed):
            est = SVBF(**params, input_type="basis", random_state=seed)
            return est.fit(unpad(bases[idx], dims[idx]), sample_weight=w[idx])

        self.estimators_ = thread_map(
            lambda job: fit_class(*job), list(zip(members, seeds)), self.n_jobs,
            progress=lambda fits: progress_bar(fits, total=len(members), desc="SVBFClassifier",
                                               unit="class", verbose=self.verbose))
        self.bases_ = np.stack([est.basis_ for est in self.estimators_])
        self.n_iter_ = np.array([est.n_iter_ for est in self.estimators_])
        return self

    def _distances(self, X):
        """``(r, C)`` distances of the sets to each class variety (``metric``)."""
        check_is_fitted(self)
        sets = unpad(*self._bases(X, reset=False))
        return np.stack([est.distance(sets, metric=self.metric) for est in self.estimators_],
                        axis=1)

    def decision_function(self, X):
        """Minus the distance of each set to each class variety.

        Parameters
        ----------
        X : set array

        Returns
        -------
        scores : ndarray of shape (r, C), or (r,) for two classes
            For two classes, ``d_0 - d_1`` (positive means ``classes_[1]``), the
            scikit-learn convention.
        """
        scores = -self._distances(X)
        return scores[:, 1] - scores[:, 0] if len(self.classes_) == 2 else scores

    def predict(self, X):
        """The class of the nearest variety (ties: the first class).

        Parameters
        ----------
        X : set array

        Returns
        -------
        y : ndarray of shape (r,)
        """
        nearest = np.argmin(self._distances(X), axis=1)  # checks the fit first
        return self.classes_[nearest]

    def predict_proba(self, X):
        """Softmax over classes of minus the distances divided by ``temperature``.

        Parameters
        ----------
        X : set array

        Returns
        -------
        proba : ndarray of shape (r, C)
        """
        return softmax(-self._distances(X) / self.temperature, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A row of a table is a one-vector set, i.e. a line through the origin: classes
        # of points on opposite sides of the origin (the checks' blobs) look alike.
        tags.classifier_tags.poor_score = True
        return tags


class CentroidHead(nn.Module):
    """Centroids ``omega`` (C, k) as a parameter; logits ``(b^T w_j)^2 / T``, ``w_j`` unit.

    Parameters
    ----------
    omega0 : array-like of shape (C, k)
        Initial centroids (any norm).
    temperature : float
        ``T``.
    """

    def __init__(self, omega0, temperature):
        super().__init__()
        self.omega = nn.Parameter(torch.tensor(omega0))
        self.temperature = temperature

    def forward(self, B):
        return centroid_logits(B, self.omega, self.temperature)


class CentroidSoftmaxClassifier(SkorchTrainingMixin, ClassifierMixin, BaseEstimator):
    """Softmax over squared cosines to unit centroids (the paper's Algorithm III head).

    ``p(j | b) = softmax_j((b^T w_j)^2 / T)`` with unit centroids
    ``w_j = omega_j / ||omega_j||`` learned by full-batch Adam on the
    cross-entropy, trained through skorch (:class:`~geolearn.models.SkorchTrainingMixin`).
    Invariant to the sign of ``b`` by construction, as the
    coordinates ``b_i`` of :class:`SVBF` are defined up to sign. Use it after
    ``SVBF(transform_output="coordinates")`` in a Pipeline (the paper's
    "detached" training: the class loss does not change ``K``).

    Parameters
    ----------
    temperature : float, default=0.1
        ``T``.
    max_epochs : int, default=500
        Adam iterations (full-batch epochs).
    lr : float, default=0.05
    callbacks : list of skorch callbacks or None, default=None
        Added to the net's (e.g. ``EarlyStopping(monitor="train_loss")``, LR
        schedulers, checkpoints); a non-finite loss always stops training with
        an error.
    warm_start : bool, default=False
        A second ``fit`` continues training the fitted centroids.
    device : {"auto", "cpu", "cuda"}, torch.device or None, default="auto"
        ``"auto"``: CUDA when available, else the CPU. None leaves placement to the
        net (``net_class`` with skorch's ``AccelerateMixin``).
    verbose : int, default=0
        ``1`` prints skorch's epoch log, ``2`` adds a progress bar.
    random_state : int, RandomState instance or None, default=None
        Draws the initial centroids.
    **net_params
        skorch settings (``optimizer__*``, ``callbacks__*``, ...), see
        :class:`~geolearn.models.SkorchTrainingMixin`.

    Attributes
    ----------
    centroids_ : ndarray of shape (C, k)
        Unit centroids ``w_j``.
    classes_ : ndarray of shape (C,)
    n_iter_ : int
        Adam iterations run (``max_epochs``, fewer when a callback stops training; with
        ``warm_start``, those of every fit).
    net_ : skorch.NeuralNet
        The trained net.
    history_ : skorch.history.History
        The net's training history, one row per (full-batch) iteration:
        ``history_[:, "train_loss"]``.
    device_ : torch.device
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geolearn.subspaces import CentroidSoftmaxClassifier
    >>> B = np.array([[1.0, 0.0], [-0.9, 0.1], [0.0, 1.0], [0.1, -0.9]])
    >>> clf = CentroidSoftmaxClassifier(random_state=0).fit(B, [0, 0, 1, 1])
    >>> clf.predict([[-1.0, 0.05], [0.0, -1.0]]).tolist()
    [0, 1]
    """

    _parameter_constraints = {
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "callbacks": [list, None],
        "warm_start": ["boolean"],
        "device": [str, torch.device, None],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
    }

    #: Full batch (skorch's ``-1``), as the training base reads it.
    batch_size = -1

    def __init__(self, temperature=0.1, max_epochs=500, lr=0.05, *, callbacks=None,
                 warm_start=False, device="auto", verbose=0, random_state=None, **net_params):
        self.temperature = temperature
        self.max_epochs = max_epochs
        self.lr = lr
        self.callbacks = callbacks
        self.warm_start = warm_start
        self.device = device
        self.verbose = verbose
        self.random_state = random_state
        self._set_net_params(net_params)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Learn the centroids.

        Parameters
        ----------
        X : array-like of shape (r, k)
            Coordinates ``b_i``.
        y : array-like of shape (r,)
        sample_weight : array-like of shape (r,), default=None
            Per-sample weights of the cross-entropy: the loss is the weighted mean
            ``sum_i w_i CE_i / sum_i w_i``, so integer weights equal repeated rows
            and a weight 0 drops a row.

        Returns
        -------
        self : CentroidSoftmaxClassifier
        """
        warm = self._warm()
        X, y = validate_data(self, X, y, dtype=np.float64, reset=not warm)
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if warm and not np.array_equal(classes, self.classes_):
            raise ValueError(f"warm_start=True needs the classes of the first fit "
                             f"{self.classes_.tolist()}; got {classes.tolist()}.")
        self.classes_ = classes
        check_two_classes(self.classes_, self)
        rng = check_random_state(self.random_state)
        omega0 = None if warm else rng.standard_normal((len(self.classes_), X.shape[1]))
        if sample_weight is not None:
            sample_weight = torch.from_numpy(_check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True))
        data = TensorDataset(to_tensor(X, dtype=None), torch.from_numpy(y_idx), sample_weight)
        net = self._fit_net(
            CentroidHead, data, seed=rng, max_epochs=self.max_epochs,
            criterion=FunctionalCriterion, train_split=None, iterator_train__shuffle=False,
            iterator_train__collate_fn=collate_batch, module__omega0=omega0,
            module__temperature=self.temperature)
        self.n_iter_ = len(net.history)
        self.centroids_ = to_numpy(unit_rows(net.module_.omega))
        return self

    def _proba(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        logits = centroid_logits(to_tensor(X, dtype=None), torch.from_numpy(self.centroids_),
                                 self.temperature)
        return torch.softmax(logits, dim=1).numpy()

    def predict_proba(self, X):
        """Class probabilities ``softmax_j((b^T w_j)^2 / T)``.

        Parameters
        ----------
        X : array-like of shape (r, k)

        Returns
        -------
        proba : ndarray of shape (r, C)
        """
        return self._proba(X)

    def predict(self, X):
        """The most probable class.

        Parameters
        ----------
        X : array-like of shape (r, k)

        Returns
        -------
        y : ndarray of shape (r,)
        """
        proba = self._proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # p(j | b) = p(j | -b): classes on opposite sides of the origin look alike.
        tags.classifier_tags.poor_score = True
        return tags
