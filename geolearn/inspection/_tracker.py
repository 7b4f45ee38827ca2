"""``GeometryTracker``: measures recorded in a skorch net's history as it trains."""

import numpy as np
from sklearn.utils import check_random_state
from skorch.callbacks import Callback

from .._utils import check_scalar_param
from ._measures import evaluate_measure, resolve_measures


class GeometryTracker(Callback):
    """skorch callback recording geometry measures of the model on fixed probes during training.

    Every ``every`` epochs (at the end of epochs ``every``, ``2 every``, ...)
    each measure is computed on the same probe set and recorded with
    ``net.history.record(column, value)``: a column of ``net.history`` (and of
    a geolearn estimator's ``history_``) named after the measure, absent from
    the other epochs. The model is measured through
    :func:`geolearn.models.as_model` under its ``frozen()`` context: eval mode
    and no parameter gradients during the measure, its training mode,
    parameters and batch-norm buffers as they were after, and the global torch
    and numpy random generators restored, so that training draws the same
    batches and dropout masks as without the tracker.

    Use it as a callback of a skorch net, or of any geolearn gradient-trained
    estimator through its ``callbacks=`` parameter.

    Parameters
    ----------
    measures : str, callable, list of them, or dict of str to them
        Names from :data:`MEASURES` (e.g. ``"relative_stability"``,
        ``"log_volume"``), callables ``f(model, X, y) -> float`` (recorded under
        their ``__name__``), or a dict ``{column: measure}``.
    X : array-like of shape (n_samples, ...)
        The probes, in the layout the model takes.
    y : array-like of shape (n_samples,), default=None
        Labels of the probes, for the measures that use them
        (``"rdm_similarity"``).
    every : int, default=1
        Measure every ``every`` epochs.
    image_shape : tuple of int, default=None
        Layout of flat rows as images, for image measures.
    layer : str or int, default=None
        The layer of the per-layer measures (``"log_volume"``,
        ``"rdm_similarity"``); None is the model's output.
    max_probes : int, default=100
        At most this many probes, drawn once from ``X`` with ``random_state``:
        it bounds the cost per measurement. ``log_volume`` and
        ``relative_stability`` cost about as much as training on 3 samples per
        probe, plus a few milliseconds (``log_volume``: one backward pass per
        feature of the layer, 10 for a 10-class output; ``region_density``
        costs its ``n_segments`` segments whatever the probes), so each takes
        about ``3 * max_probes / (n_train * every)`` of the training time on
        ``n_train`` samples. On the benchmark's 5,000 MNIST digits (a
        784-256-128-10 MLP) each measure costs 1-10% of an epoch at 100 probes
        (all four together 22%: ``every=3`` keeps them within 10%), 4-18% at
        256. Fewer than 100 probes make ``R_f`` noisy (its
        :class:`~geolearn.diffeo.StabilityWarning`); raise it on larger
        training sets.
    measure_params : dict of str to dict, default=None
        Keyword arguments of each measure, by column, e.g.
        ``{"logit_invariance": {"group": "xtrans3"}}``.
    n_threads : int, default=1
        torch threads while measuring (one is fastest for the small ops of
        small probe sets; see the thread notes of the user guide).
    random_state : int, RandomState or None, default=0
        Draws the probe subset, and is passed to the measures that take one
        (the same deformations and segments at every epoch).

    Attributes
    ----------
    measures_ : dict of str to callable
        The resolved measures, by history column.
    X_ : ndarray
        The probes measured.
    y_ : ndarray or None

    See Also
    --------
    geometry_report : every measure that applies to a model, once.
    geolearn.plotting.GeometryHistoryDisplay : the recorded measures against epochs.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skorch import NeuralNetClassifier
    >>> from geolearn.inspection import GeometryTracker
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(64, 2)).astype(np.float32)
    >>> y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    >>> _ = torch.manual_seed(0)
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2)),
    ...     criterion=torch.nn.CrossEntropyLoss, max_epochs=4, train_split=None, verbose=0,
    ...     callbacks=[GeometryTracker(["log_volume", "region_density"], X, every=2)])
    >>> _ = net.fit(X, y)
    >>> [("log_volume" in row, "region_density" in row) for row in net.history]
    [(False, False), (True, True), (False, False), (True, True)]
    """

    def __init__(self, measures, X, y=None, *, every=1, image_shape=None, layer=None,
                 max_probes=100, measure_params=None, n_threads=1, random_state=0):
        self.measures = measures
        self.X = X
        self.y = y
        self.every = every
        self.image_shape = image_shape
        self.layer = layer
        self.max_probes = max_probes
        self.measure_params = measure_params
        self.n_threads = n_threads
        self.random_state = random_state

    def initialize(self):
        """Resolve the measures and draw the probes."""
        for name in ("every", "max_probes", "n_threads"):
            check_scalar_param(getattr(self, name), name, kind="integer", low=1)
        self.measures_ = resolve_measures(self.measures)
        params = self.measure_params or {}
        unknown = sorted(set(params) - set(self.measures_))
        if unknown:
            raise ValueError(f"measure_params names {unknown}, which are not among the "
                             f"measures {sorted(self.measures_)}.")
        X = np.asarray(self.X)
        y = None if self.y is None else np.asarray(self.y)
        if y is not None and len(y) != len(X):
            raise ValueError(f"X has {len(X)} probes but y has {len(y)} labels.")
        if len(X) > self.max_probes:
            keep = np.sort(check_random_state(self.random_state).choice(
                len(X), self.max_probes, replace=False))
            X, y = X[keep], (None if y is None else y[keep])
        self.X_, self.y_ = X, y
        return self

    def measure(self, net):
        """Compute every measure on the probes now: ``{column: value}``.

        Parameters
        ----------
        net : skorch.NeuralNet, torch.nn.Module or estimator
            The model (any :func:`geolearn.models.as_model` accepts).

        Returns
        -------
        values : dict of str to float
        """
        context = {"image_shape": self.image_shape, "layer": self.layer,
                   "random_state": self.random_state}
        params = self.measure_params or {}
        return {column: evaluate_measure(column, func, net, self.X_, self.y_, context=context,
                                         params=params.get(column), n_threads=self.n_threads)[0]
                for column, func in self.measures_.items()}

    def on_epoch_end(self, net, **kwargs):
        """Record the measures at the end of every ``every``-th epoch."""
        if net.history[-1, "epoch"] % self.every:
            return
        for column, value in self.measure(net).items():
            net.history.record(column, value)
