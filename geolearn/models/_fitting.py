"""The one fitting policy for models that a geolearn estimator wraps."""

from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.validation import check_is_fitted
from torch import nn


def tabular_input(model, X):
    """``X`` as ``model`` takes it: images become flat rows for a model that takes only tables.

    scikit-learn's estimators validate ``X`` as a 2-D table, while image-aware
    models (torch modules, skorch nets, geolearn's image estimators) take
    ``(n, C, H, W)`` arrays. Which of the two ``model`` is follows from the model
    itself, before it is called: N-D ``X`` is flattened to ``(n, C*H*W)`` rows
    for a scikit-learn estimator (one whose ``fit`` is scikit-learn's, also in a
    subclass), except one that skips validation (tagged
    ``no_validation``: a ``FunctionTransformer``); a ``Pipeline`` is decided by
    its first step, and a ``FrozenEstimator`` or another meta-estimator
    (``GridSearchCV``) by the estimator it wraps. Any other model gets ``X`` as
    it is, and an error it raises propagates unchanged.

    Parameters
    ----------
    model : estimator, torch.nn.Module or callable
        The model that ``X`` is passed to (fitted or not).
    X : array-like of shape (n_samples, ...)

    Returns
    -------
    X : array-like
        ``X.reshape(len(X), -1)`` for a model that takes only tables, else ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models._internal import tabular_input
    >>> images = np.zeros((6, 1, 2, 2))
    >>> tabular_input(LogisticRegression(), images).shape
    (6, 4)
    """
    if getattr(X, "ndim", 2) > 2 and _takes_only_tables(model):
        return X.reshape(len(X), -1)
    return X


def _takes_only_tables(model):
    """Whether ``model`` validates ``X`` as a 2-D table (see :func:`tabular_input`)."""
    from sklearn.pipeline import Pipeline
    from sklearn.utils import get_tags

    if isinstance(model, Pipeline):
        steps = [step for _, step in model.steps if step not in (None, "passthrough")]
        return bool(steps) and _takes_only_tables(steps[0])
    # whose fit runs decides (a user's subclass of LogisticRegression is scikit-learn's)
    owner = next((cls for cls in type(model).__mro__ if "fit" in vars(cls)), type(model))
    if owner.__module__.partition(".")[0] != "sklearn":
        return False
    inner = getattr(model, "estimator", None)  # FrozenEstimator, GridSearchCV, ...
    if hasattr(inner, "fit"):
        return _takes_only_tables(inner)
    return not get_tags(model).no_validation


def is_prefit(model):
    """Whether ``model`` is used as it is (True) or fitted by the wrapping estimator (False).

    A torch module, a plain callable, a ``FrozenEstimator`` and any fitted
    estimator (a skorch net once initialised) are prefit; an unfitted
    estimator is not.

    Parameters
    ----------
    model : object
        A torch module, callable, skorch net or scikit-learn estimator.

    Returns
    -------
    prefit : bool

    Examples
    --------
    >>> import torch
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models._internal import is_prefit
    >>> is_prefit(torch.nn.Linear(2, 1)), is_prefit(LogisticRegression())
    (True, False)
    >>> is_prefit(LogisticRegression().fit([[0.0], [1.0]], [0, 1]))
    True
    """
    from skorch import NeuralNet

    if isinstance(model, nn.Module) or (callable(model) and not hasattr(model, "fit")):
        return True
    if isinstance(model, NeuralNet):
        return bool(getattr(model, "initialized_", False))
    try:
        check_is_fitted(model)
    except NotFittedError:
        return False
    return True


def fit_or_use(model, X, y=None, **fit_params):
    """The model a wrapping estimator works with: ``model`` itself if prefit, else a fitted clone.

    This is the fitting policy of every geolearn estimator that takes a model
    (``DiffeoStability(estimator)``, ``RiemannianFeatureGeometry(feature_map)``,
    ``OnManifoldPGD(estimator)``, ...):

    - a prefit model (see :func:`is_prefit`) is used as it is, never refitted
      and never copied;
    - an unfitted scikit-learn estimator or skorch net is cloned and fitted on
      ``X, y`` by the wrapping estimator's ``fit``.

    ``GridSearchCV`` clones its estimator, and ``clone`` turns a fitted model
    parameter back into an unfitted one, which is then refitted on each fold.
    To search over a wrapper's own parameters with a model that must stay as
    trained, wrap it in :class:`sklearn.frozen.FrozenEstimator`: it survives
    ``clone``.

    Parameters
    ----------
    model : estimator, torch.nn.Module or callable
    X, y : array-like
        Training data, used only when ``model`` is fitted here.
    **fit_params : dict
        Passed to ``model.fit``: the metadata :func:`route_fit_params` routed
        to it.

    Returns
    -------
    model : the prefit model, or a fitted clone of it

    Examples
    --------
    >>> from sklearn.frozen import FrozenEstimator
    >>> from sklearn.linear_model import LinearRegression
    >>> from geolearn.models import fit_or_use
    >>> X, y = [[0.0], [1.0], [2.0]], [0.0, 1.0, 2.0]
    >>> fitted = fit_or_use(LinearRegression(), X, y)      # unfitted: a fitted clone
    >>> fit_or_use(fitted, X, y) is fitted                   # prefit: used as is
    True
    >>> frozen = FrozenEstimator(fitted)
    >>> fit_or_use(frozen, X, y) is frozen
    True
    """
    if model is None:
        raise ValueError("the model is None: pass the model to work with.")
    if is_prefit(model):
        return model
    if not hasattr(model, "fit"):
        raise TypeError("the model must be a torch.nn.Module, a callable, or a scikit-learn "
                        f"estimator or skorch net; got {type(model).__name__}.")
    try:
        return clone(model).fit(tabular_input(model, X), y, **fit_params)
    except (TypeError, ValueError) as exc:
        if y is not None:
            raise
        # the usual cause: clone() (GridSearchCV, cross_val_score) unfitted a trained model
        raise type(exc)(
            f"{exc} [geolearn fitted this {type(model).__name__} because it was not fitted. If "
            "it was trained before and GridSearchCV, cross_val_score or clone() passed it on, "
            "those unfit models given as parameters: wrap it in "
            "sklearn.frozen.FrozenEstimator(model) to keep it as trained.]") from exc


def fit_router(owner, **models):
    """The metadata router of an estimator whose ``fit`` fits the given models.

    Every geolearn estimator that fits a user's model with :func:`fit_or_use`
    returns this from ``get_metadata_routing``, with its model parameters by
    name, as scikit-learn's meta-estimators do: each model's ``fit`` receives
    the metadata it requested (``set_fit_request``) from the owner's ``fit``.

    Parameters
    ----------
    owner : estimator
        The estimator whose routing this is.
    **models : estimator, torch.nn.Module or callable
        The models ``owner.fit`` fits, by parameter name. Modules and callables
        request no metadata.

    Returns
    -------
    router : sklearn.utils.metadata_routing.MetadataRouter

    Examples
    --------
    >>> import sklearn
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models._internal import fit_router
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     model = LogisticRegression().set_fit_request(sample_weight=True)
    ...     router = fit_router(object(), estimator=model)
    >>> sorted(router.consumes("fit", ["sample_weight", "groups"]))
    ['sample_weight']
    """
    router = MetadataRouter(owner=owner)
    for name, model in models.items():
        router.add(**{name: model}, method_mapping=MethodMapping().add(caller="fit", callee="fit"))
    return router


def route_fit_params(owner, fit_params, names=("estimator",), legacy=False):
    """The metadata for each model ``owner.fit`` fits, by the model's parameter name.

    With metadata routing enabled (``sklearn.set_config(enable_metadata_routing=True)``)
    the metadata are routed by ``owner.get_metadata_routing()`` (see
    :func:`fit_router`): each model gets what it requested, and metadata that no
    model requested raise scikit-learn's errors (``UnsetMetadataPassedError``
    where a model's ``fit`` takes it but did not say whether it wants it).
    Without routing, every model gets all of ``fit_params`` where ``owner.fit``
    forwarded them before routing existed (``legacy=True``), and any metadata
    raise a ``ValueError`` otherwise.

    Parameters
    ----------
    owner : estimator
        The estimator whose ``fit`` received ``fit_params``.
    fit_params : dict
        The keyword arguments of ``owner.fit`` that are metadata.
    names : tuple of str, default=("estimator",)
        The parameters of ``owner`` holding the models it fits.
    legacy : bool, default=False
        Whether ``owner.fit`` forwards ``fit_params`` without routing.

    Returns
    -------
    params : dict
        ``name -> dict`` of the keyword arguments for that model's ``fit``.
    """
    if _routing_enabled():
        routed = process_routing(owner, "fit", **fit_params)
        return {name: routed[name].fit for name in names}
    if not legacy:
        _raise_for_params(fit_params, owner, "fit")
    return {name: fit_params for name in names}
