"""``frozen``: eval mode and no parameter gradients, counted across concurrent users."""

import threading
from contextlib import contextmanager

from torch import nn


@contextmanager
def frozen(module):
    """Eval mode and no parameter gradients inside a block; every submodule restored after.

    The one way geolearn freezes a model while it probes or attacks it: dropout
    and batch norm behave as at inference, gradients flow only to the inputs,
    and each submodule's ``training`` flag and each parameter's
    ``requires_grad`` are put back as they were, even when they were mixed.

    Parameters
    ----------
    module : torch.nn.Module or None
        None is accepted (a black box): the block then runs unchanged.

    Yields
    ------
    None
        The block runs with ``module`` frozen.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models import frozen
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout())
    >>> with frozen(net):
    ...     net.training, net[0].weight.requires_grad
    (False, False)
    >>> net.training, net[0].weight.requires_grad
    (True, True)
    """
    if module is None:
        yield
        return
    held = _freeze(module)
    try:
        yield
    finally:
        _unfreeze(held)



# -- frozen(): reference-counted across concurrent users ---------------------------------------
#
# One fitted model is often shared by threads (a web service, joblib's threading backend), and
# the mode flags and ``requires_grad`` that frozen() changes live on the shared module. Saving
# and restoring them per call is wrong there: a call that leaves while another is still inside
# would switch the model back to training mode under it, and a call that enters while another
# is inside would save the *frozen* state and "restore" it for good. So every submodule and
# every parameter is counted: the first user saves its flag and switches it, later users only
# count, and the last user to leave restores the saved flag. A lock makes each enter and exit
# atomic. Overlapping blocks on different parts of one model (the whole net and one layer)
# share the counts of the objects they have in common.

_FROZEN_LOCK = threading.Lock()
_FROZEN_USERS = {}  # id(module or parameter) -> [object, users, saved flag]


def _freeze(module):
    """Enter a frozen block on ``module``; returns what :func:`_unfreeze` must release."""
    objects = [*module.modules(), *module.parameters()]
    with _FROZEN_LOCK:
        first = []
        for obj in objects:
            entry = _FROZEN_USERS.get(id(obj))
            if entry is None:
                saved = obj.training if isinstance(obj, nn.Module) else obj.requires_grad
                _FROZEN_USERS[id(obj)] = [obj, 1, saved]
                first.append(obj)
            else:
                entry[1] += 1
        for obj in first:
            if isinstance(obj, nn.Module):
                obj.training = False
            else:
                obj.requires_grad_(False)
        if first and first[0] is module:
            module.eval()  # modules overriding train() see the call they saw before
    return objects


def _unfreeze(objects):
    with _FROZEN_LOCK:
        for obj in objects:
            entry = _FROZEN_USERS[id(obj)]
            entry[1] -= 1
            if entry[1] == 0:
                del _FROZEN_USERS[id(obj)]
                if isinstance(obj, nn.Module):
                    obj.training = entry[2]
                else:
                    obj.requires_grad_(entry[2])

