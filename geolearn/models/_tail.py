"""Models whose output is a torch forward pass, possibly after numpy preprocessing steps."""

from torch import nn

from ._adapter import _unfrozen


def _is_torch_model(model):
    from skorch import NeuralNet

    return isinstance(model, (nn.Module, NeuralNet)) or (
        callable(model) and not hasattr(model, "fit"))


def split_torch_tail(model):
    """``(preprocessing, net)`` when ``model``'s output is a torch forward pass, else None.

    :func:`as_model` converts a ``Pipeline`` only when every step before the
    net is an affine scaler; any other preprocessing makes it a black box. A
    method that probes the forward pass of the net itself, after the
    pipeline's own preprocessing, splits the pipeline here and sends ``net``
    through :func:`as_model`:

    - a torch module, a skorch net (fitted or not) or a plain callable on
      tensors: ``(None, model)``;
    - a ``Pipeline`` whose last step is one of these: ``(pipeline[:-1], last
      step)``, the first element a fitted pipeline of numpy transformers
      (None for a one-step pipeline);
    - anything else, including estimators that train a torch module inside
      and are seen through their own ``decision_function`` or
      ``predict_proba``: None.

    A ``FrozenEstimator`` (also as the last step) is seen as the estimator it wraps.

    Parameters
    ----------
    model : object

    Returns
    -------
    split : tuple ``(preprocessing or None, net)`` or None

    Examples
    --------
    >>> import torch
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from geolearn.models._internal import split_torch_tail
    >>> net = torch.nn.Linear(3, 2)
    >>> split_torch_tail(net) == (None, net)
    True
    >>> pre, tail = split_torch_tail(make_pipeline(FunctionTransformer(), net))
    >>> type(pre).__name__, tail is net
    ('Pipeline', True)
    >>> split_torch_tail(LogisticRegression()) is None
    True
    """
    from sklearn.pipeline import Pipeline

    model = _unfrozen(model)
    if _is_torch_model(model):
        return None, model
    if isinstance(model, Pipeline) and model.steps:
        last = _unfrozen(model.steps[-1][1])
        if _is_torch_model(last):
            return (model[:-1] if len(model.steps) > 1 else None), last
    return None
