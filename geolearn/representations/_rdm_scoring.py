"""Representational similarity as a score: a skorch callback (HMS early stopping) and a scorer.

The human-model similarity HMS of "A neurobiological evaluation metric for neural network
model search" is the Spearman correlation between a reference (brain) RDM and a network
layer's RDM on the same stimuli; both objects below measure it (or any comparison method).
"""

import functools

import numpy as np
from sklearn.utils.validation import check_array
from skorch.callbacks import Callback

from .._utils import check_choice
from ..models import as_model
from ._network_rdm import check_layer_names, layer_rdm
from ._rdm import check_rdm
from ._rdm_compare import METHODS, compare_rdms


def _check_reference(rdm_stimuli, rdm_target, method):
    """Validated ``(stimuli, target)``: at least 3 finite stimuli and their (m, m) RDM."""
    check_choice(method, "method", METHODS)
    stimuli = check_array(rdm_stimuli, dtype=np.float32, allow_nd=True, ensure_min_samples=3,
                          input_name="rdm_stimuli")
    target = check_rdm(rdm_target, "rdm_target", allow_nan=True)
    if len(target) != len(stimuli):
        raise ValueError(f"rdm_target describes {len(target)} stimuli but rdm_stimuli has "
                         f"{len(stimuli)}; pass the RDM of exactly these stimuli, in order.")
    return stimuli, target


def rdm_similarity(model, stimuli, target, layer, method, batch_size=256):
    """Similarity of ``layer``'s correlation RDM of ``stimuli`` to ``target`` (model frozen)."""
    adapter = as_model(model, batch_size=batch_size)
    adapter.require_gradients("an RDM similarity score (it hooks a layer)")
    check_layer_names(adapter, [layer], name="layer")
    R, _ = layer_rdm(adapter, stimuli, layer, batch_size=batch_size)
    return float(compare_rdms(R, target, method))


class RDMSimilarityScoring(Callback):
    """skorch callback recording a layer's RDM similarity to a reference RDM every epoch.

    At the end of each epoch the layer's correlation-distance RDM of the fixed
    reference stimuli is computed (model in eval mode, no gradients, modes
    restored) and compared with ``rdm_target``; the value is recorded in the
    history as ``name`` (and ``name + "_best"``), like skorch's ``EpochScoring``.
    With the default Spearman method this is HMS, so
    ``EarlyStopping(monitor="hms", lower_is_better=False)`` placed after this
    callback stops training by brain-likeness.

    Parameters
    ----------
    rdm_stimuli : array-like of shape (m, ...)
        At least 3 reference stimuli, in the layout the module takes.
    rdm_target : array-like of shape (m, m) or (m(m-1)/2,)
        Their reference RDM (NaN pairs are masked).
    layer : str
        Submodule name (``module_.named_modules()``).
    method : {"pearson", "spearman", "kendall_tau_a", "cosine"}, default="spearman"
    name : str, default="hms"
        Key in the history.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from skorch import NeuralNetClassifier
    >>> from geolearn.representations import RDMSimilarityScoring, categorical_rdm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 4)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(np.int64)
    >>> hms = RDMSimilarityScoring(X[:10], categorical_rdm(y[:10]), layer="0")
    >>> _ = torch.manual_seed(0)
    >>> net = NeuralNetClassifier(
    ...     torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)),
    ...     criterion=torch.nn.CrossEntropyLoss, max_epochs=2, train_split=None, verbose=0,
    ...     callbacks=[hms]).fit(X, y)
    >>> len(net.history[:, "hms"])
    2
    """

    def __init__(self, rdm_stimuli, rdm_target, layer, method="spearman", name="hms"):
        self.rdm_stimuli = rdm_stimuli
        self.rdm_target = rdm_target
        self.layer = layer
        self.method = method
        self.name = name

    def initialize(self):
        self.reference_ = _check_reference(self.rdm_stimuli, self.rdm_target, self.method)
        self.best_score_ = -np.inf
        return self

    def on_epoch_end(self, net, **kwargs):
        score = rdm_similarity(net.module_, *self.reference_, self.layer, self.method)
        net.history.record(self.name, score)
        is_best = score > self.best_score_
        net.history.record(self.name + "_best", bool(is_best))
        if is_best:
            self.best_score_ = score


def _rdm_score(estimator, X=None, y=None, *, stimuli, target, layer, method):
    """A layer's RDM similarity on fixed stimuli (the fold's X and y unused)."""
    return rdm_similarity(estimator, stimuli, target, layer, method)


def make_rdm_scorer(rdm_stimuli, rdm_target, layer, method="spearman"):
    """A scorer ranking fitted models by their layer's RDM similarity to a reference RDM.

    For ``GridSearchCV(scoring=...)`` or ``cross_validate``: ``scorer(estimator,
    X, y)`` ignores the fold's ``X`` and ``y`` and returns the similarity
    (greater is better) of ``layer``'s correlation RDM of the fixed
    ``rdm_stimuli`` to ``rdm_target``, so models are selected by
    representational similarity (HMS with the default Spearman). Any model
    :func:`geolearn.models.as_model` reads layers of works (skorch nets, torch
    modules, scikit-learn MLPs); it is evaluated in eval mode and its modes are
    restored.

    Parameters
    ----------
    rdm_stimuli : array-like of shape (m, ...)
    rdm_target : array-like of shape (m, m) or (m(m-1)/2,)
    layer : str
    method : {"pearson", "spearman", "kendall_tau_a", "cosine"}, default="spearman"

    Returns
    -------
    scorer : callable ``scorer(estimator, X=None, y=None) -> float``
        It reads the estimator's layer, so it is a scikit-learn scorer callable
        rather than a ``make_scorer`` of predictions; it pickles.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from geolearn.representations import make_rdm_scorer, categorical_rdm
    >>> X = np.array([[1, 0, 0], [1, 0, 0.1], [0, 1, 0], [0, 1, 0.1]], dtype=np.float32)
    >>> scorer = make_rdm_scorer(X, categorical_rdm([0, 0, 1, 1]), layer="0", method="pearson")
    >>> net = torch.nn.Sequential(torch.nn.Identity())
    >>> round(scorer(net, None, None), 3)  # the input space is clustered by category
    0.998
    """
    stimuli, target = _check_reference(rdm_stimuli, rdm_target, method)
    if not isinstance(layer, str):
        raise TypeError(f"layer must be a submodule name (str); got {layer!r}.")
    return functools.partial(_rdm_score, stimuli=stimuli, target=target, layer=layer,
                             method=method)
