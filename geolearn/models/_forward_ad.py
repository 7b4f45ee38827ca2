"""One process-wide lock around torch's forward-mode AD (``jacfwd``, ``jvp``)."""

import threading
from contextlib import contextmanager

_FORWARD_AD_LOCK = threading.RLock()


@contextmanager
def forward_ad_lock():
    """Hold the process-wide lock of torch's forward-mode AD (``torch.func.jacfwd``, ``jvp``).

    torch keeps the forward-AD level in process-global state (the current dual
    level and the ``jvp`` nesting depth are module globals, not per thread), so
    two threads inside ``jacfwd`` at once corrupt each other's level ("dual
    Tensor for forward AD but no level exists"). It cannot be made reentrant
    from outside torch, so geolearn serialises its forward-mode passes with
    this one reentrant lock: wrap every call of a ``jacfwd``/``jvp`` function
    in it. Reverse mode (``jacrev``, ``autograd.grad``) is per thread and needs
    no lock.

    Yields
    ------
    None
        The block runs holding the lock.

    Examples
    --------
    >>> import torch
    >>> from torch.func import jacfwd
    >>> from geolearn.models import forward_ad_lock
    >>> with forward_ad_lock():
    ...     J = jacfwd(torch.sin)(torch.zeros(2))
    >>> bool(torch.equal(J, torch.eye(2)))
    True
    """
    with _FORWARD_AD_LOCK:
        yield


def locked_jacfwd(func, *args, **kwargs):
    """``torch.func.jacfwd(func, ...)`` whose every call holds :func:`forward_ad_lock`.

    Same arguments and result as ``jacfwd``; use it (and :func:`locked_jvp`)
    wherever geolearn differentiates in forward mode, so that one fitted
    estimator can be used from several threads at once. Calls nested inside
    one another (``jacfwd(jacfwd(f))``, ``vmap``) re-enter the lock freely.

    Parameters
    ----------
    func : callable
        A function of torch tensors.
    *args, **kwargs
        Passed to ``torch.func.jacfwd`` (``argnums``, ``has_aux``, ...).

    Returns
    -------
    jac : callable
        ``jacfwd(func, *args, **kwargs)``, holding the lock on each call.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import locked_jacfwd
    >>> J = locked_jacfwd(torch.sin)(torch.zeros(3))
    >>> bool(torch.equal(J, torch.eye(3)))
    True
    """
    from torch.func import jacfwd

    jac = jacfwd(func, *args, **kwargs)

    def locked(*a, **k):
        with _FORWARD_AD_LOCK:
            return jac(*a, **k)

    return locked


def locked_jvp(func, primals, tangents, *args, **kwargs):
    """``torch.func.jvp`` holding :func:`forward_ad_lock` (see :func:`locked_jacfwd`).

    Parameters
    ----------
    func : callable
        A function of torch tensors.
    primals, tangents : tuple of torch.Tensor
        The point and the direction, as for ``torch.func.jvp``.
    *args, **kwargs
        Passed to ``torch.func.jvp``.

    Returns
    -------
    output, jvp_out : torch.Tensor
        ``func(*primals)`` and its directional derivative along ``tangents``.

    Examples
    --------
    >>> import torch
    >>> from geolearn.models._internal import locked_jvp
    >>> out, d = locked_jvp(torch.sin, (torch.zeros(2),), (torch.ones(2),))
    >>> d.tolist()
    [1.0, 1.0]
    """
    from torch.func import jvp

    with _FORWARD_AD_LOCK:
        return jvp(func, primals, tangents, *args, **kwargs)

