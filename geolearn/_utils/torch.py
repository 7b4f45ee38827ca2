"""Torch plumbing: device resolution, array/tensor conversion, batching, seeding, threads."""

import functools
import inspect
import os
import threading
from contextlib import contextmanager

import numpy as np
import scipy.sparse
import torch
from threadpoolctl import ThreadpoolController


def resolve_device(device="auto", name="device"):
    """Return a :class:`torch.device` for a ``device`` parameter.

    The one place geolearn turns a ``device`` parameter into a device.

    Parameters
    ----------
    device : {"auto"} or str or torch.device or None
        ``"auto"`` (or None) picks CUDA when available, else the CPU.
    name : str, default="device"
        The parameter named in error messages.

    Returns
    -------
    torch.device

    Raises
    ------
    ValueError
        For a string torch does not read as a device, or when a CUDA device is
        asked for on a machine (or a torch build) without CUDA.

    Examples
    --------
    >>> from geolearn._utils import resolve_device
    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"{name} must be 'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device; got {device!r}."
        ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={device!r} but CUDA is not available on this machine (or in "
                         "this torch build); use 'auto' or 'cpu'.")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"{name}={device!r} but only {torch.cuda.device_count()} CUDA "
                         "device(s) are visible.")
    return dev


def to_tensor(X, device="cpu", dtype=torch.float32):
    """Convert an array-like (or tensor) to a tensor on ``device`` without needless copies.

    The one conversion of a user's array: torch cannot view negative strides (``X[::-1]``,
    ``np.flip``, ``np.rot90``) or share a read-only buffer, so those are copied here, once.
    ``dtype=None`` keeps the array's dtype.
    """
    if isinstance(X, torch.Tensor):
        return X.to(device=device, dtype=dtype)
    # torch cannot view negative strides (np.rot90, flips): copy those once; numpy calls a
    # one-row view of a flipped array contiguous and leaves its negative stride
    X = np.ascontiguousarray(X)
    if any(stride < 0 for stride in X.strides):
        X = X.copy()
    if not X.flags.writeable:  # torch would share (and warn about) a read-only buffer
        return torch.tensor(X, dtype=dtype, device=device)
    return torch.as_tensor(X, dtype=dtype, device=device)


def to_numpy(t):
    """Detach a tensor to a numpy array on the CPU (arrays pass through)."""
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    if scipy.sparse.issparse(t):  # np.asarray would make it a 0-d object array
        raise TypeError("X is a scipy sparse matrix, but dense data is required: pass "
                        "X.toarray().")
    return np.asarray(t)


def iter_batches(n, batch_size):
    """Yield ``slice`` objects covering ``range(n)`` in chunks of ``batch_size``.

    ``batch_size=None`` yields one slice over everything.
    """
    if batch_size is None or batch_size >= n:
        yield slice(0, n)
        return
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer or None; got {batch_size!r}.")
    for start in range(0, n, batch_size):
        yield slice(start, min(start + batch_size, n))


#: Held by every :func:`torch_seed` block: the global generator is one for all threads.
_GLOBAL_RNG_LOCK = threading.RLock()


@contextmanager
def torch_seed(random_state):
    """Seed torch from a numpy ``random_state`` inside a block, restoring the global RNG after.

    Gives reproducible torch sampling (skorch training: weight initialisation, batch
    order, dropout, noise drawn on a GPU) without leaving the user's global torch
    RNGs changed: the CPU generator's state and, where CUDA is available, every
    CUDA generator's are restored on exit, also when the block raises. Blocks of
    different threads run one at a time, since each reseeds the one global generator
    and restores it on exit (overlapping blocks would draw each other's numbers and
    restore each other's states). Code that only samples should rather draw from its
    own ``torch.Generator``, which needs no lock.
    """
    from sklearn.utils import check_random_state

    seed = int(check_random_state(random_state).randint(0, 2**31 - 1))
    with _GLOBAL_RNG_LOCK:
        cpu_state = torch.get_rng_state()
        # torch.manual_seed seeds the CUDA generators too (lazily, before CUDA starts)
        cuda_states = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        try:
            torch.manual_seed(seed)
            yield seed
        finally:
            torch.set_rng_state(cpu_state)
            if cuda_states is not None:
                torch.cuda.set_rng_state_all(cuda_states)


#: Modules with at most this many parameters run their small ops on one torch thread.
SMALL_MODEL = 200_000


def small_model_threads(module):
    """The torch thread count for a module's passes: 1 when small, or beside other work.

    A small network's products are too small to split over threads, and its two default
    threads collapse beside another busy process (docs/user_guide/threads.md). A larger
    module on the CPU uses the caller's threads well on an otherwise idle machine but
    waits on them beside another process (ResNet-18's passes measured 2-4x slower on two
    threads beside one and two busy loops, against one thread): it keeps the caller's
    setting (``None``) while no other task is runnable (:func:`other_runnable_tasks`),
    and takes one thread while one is. Modules on other devices keep the caller's setting.

    Parameters
    ----------
    module : torch.nn.Module

    Returns
    -------
    n_threads : 1 or None
        For :func:`torch_threads`.

    Examples
    --------
    >>> import torch
    >>> from geolearn._utils.torch import small_model_threads
    >>> small_model_threads(torch.nn.Linear(10, 2))
    1
    """
    params = list(module.parameters())
    if not all(p.device.type == "cpu" for p in params):
        return None
    if sum(p.numel() for p in params) <= SMALL_MODEL:
        return 1
    return 1 if other_runnable_tasks() else None


@contextmanager
def torch_threads(n_threads):
    """Run a block with ``n_threads`` torch intra-op threads, restoring the setting after.

    Many small torch ops (small MLPs, per-chunk work) run fastest on one thread and
    collapse when two threads compete with another process; large GEMM-bound steps
    want the default. ``None`` leaves the setting unchanged.
    """
    if n_threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@functools.cache
def _threadpool_controller():
    # one inspection of the loaded libraries (~3 ms; threadpool_limits repeats it per call),
    # made at the first limit, when NumPy's and SciPy's BLAS are loaded
    return ThreadpoolController()


#: The BLAS limit shared by overlapping :func:`blas_threads` blocks (the pools are global).
_BLAS_LOCK = threading.Lock()
_blas_limit = {"blocks": 0, "limiter": None}


@contextmanager
def blas_threads(n_threads):
    """A context that runs NumPy's and SciPy's BLAS on ``n_threads`` threads (None: as set).

    BLAS thread counts are global to the process, so blocks that overlap (nested, or on
    several threads, as concurrent fits in a thread pool) share one limit: the first block
    sets it and the last one to end restores the caller's counts. Each block saving and
    restoring on its own would let two threads restore each other's limit, leaving the
    process on one thread.

    Parameters
    ----------
    n_threads : int or None

    Returns
    -------
    context : context manager
        Restores the previous thread counts on exit.

    Examples
    --------
    >>> from geolearn._utils.torch import blas_threads
    >>> with blas_threads(1):
    ...     pass
    """
    if n_threads is None:
        yield
        return
    with _BLAS_LOCK:
        if not _blas_limit["blocks"]:
            _blas_limit["limiter"] = _threadpool_controller().limit(limits=n_threads,
                                                                    user_api="blas")
        _blas_limit["blocks"] += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _blas_limit["blocks"] -= 1
            if not _blas_limit["blocks"]:
                _blas_limit["limiter"].restore_original_limits()
                _blas_limit["limiter"] = None


def other_runnable_tasks(samples=3):
    """How many tasks of other processes the kernel could run right now (Linux), or None.

    The fourth field of ``/proc/loadavg`` counts the runnable tasks at this instant, unlike
    the load averages, which lag a new process by a minute; this process's own runnable
    threads (the caller, BLAS or OpenMP workers still spinning) are taken off. The least of
    a few reads, so that a task caught waking for a moment is not taken for a busy process.
    """
    counts = []
    for _ in range(samples):
        try:
            with open("/proc/loadavg") as f:
                runnable = int(f.read().split()[3].split("/")[0])
            counts.append(runnable - _own_runnable_threads())
        except (OSError, IndexError, ValueError):
            return None
    return max(0, min(counts))


def _own_runnable_threads():
    own = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                # the state follows the command name, which is in parentheses
                own += f.read().rpartition(")")[2].split()[0] == "R"
        except OSError:  # a thread that ended meanwhile
            pass
    return own


def busy_blas_threads():
    """:func:`blas_threads` for a large BLAS or LAPACK call: one thread beside other work.

    Such a call (the dense eigensolve of a few thousand points) uses the caller's threads
    well on an otherwise idle machine, but its threads wait for each other when another
    process holds a core: on 2 cores, one thread measured 1.6x slower idle and 1.5x faster
    beside one busy process. So the caller's setting while no other task is runnable, one
    thread while one is (or the caller's setting where the count is unknown).

    Returns
    -------
    context : context manager

    Examples
    --------
    >>> from geolearn._utils.torch import busy_blas_threads
    >>> with busy_blas_threads():
    ...     pass
    """
    return blas_threads(1 if other_runnable_tasks() else None)


@contextmanager
def small_ops_threads(module=None, *, device=None, blas=False):
    """Run a block of many small operations on one thread, restoring the caller's setting after.

    The one rule of docs/user_guide/threads.md: small operations are too small to split
    over threads, and threads that wait for each other collapse beside another busy
    process. torch runs on one intra-op thread, unless ``module`` is given and is large
    on an otherwise idle machine or off the CPU (:func:`small_model_threads`), or
    ``device`` is given and is not the
    CPU; with ``blas=True`` NumPy's and SciPy's BLAS run on one thread too. Both settings
    come back when the block exits, also when it raises.

    Parameters
    ----------
    module : torch.nn.Module, optional
        The network the block runs; None when the caller knows its ops are small.
    device : str or torch.device, optional
        Where the block runs, for a caller whose ops are small whatever the network's
        size (or before the network exists): off the CPU the caller's torch setting
        is kept. Ignored when ``module`` is given.
    blas : bool, default=False
        Also limit the BLAS libraries (threadpoolctl) to one thread, for loops of
        many small matrix products in NumPy or SciPy.

    Examples
    --------
    >>> import torch
    >>> from geolearn._utils.torch import small_ops_threads
    >>> with small_ops_threads(torch.nn.Linear(10, 2)):
    ...     torch.get_num_threads()
    1
    """
    if module is not None:
        n_threads = small_model_threads(module)
    else:
        n_threads = 1 if device is None or torch.device(device).type == "cpu" else None
    with (torch_threads(n_threads),
          blas_threads(1 if blas else None)):
        yield


#: Prefixes of the public methods that do not run a fitted module: training (which has its
#: own rule) and parameter plumbing.
NOT_INFERENCE = ("fit", "partial_fit", "get_", "set_", "save_", "load_")


def on_module_threads(cls, module_of):
    """Run the inference methods of ``cls`` under :func:`small_ops_threads` of its module.

    Called from ``__init_subclass__`` (as scikit-learn's ``set_output`` wraps
    ``transform``). The inference methods are the public methods ``cls`` defines or
    inherits from geolearn as plain functions (``predict``, ``transform``,
    ``score_samples``, ``sample``, ``traverse``, ...), all but those named in
    :data:`NOT_INFERENCE`; each runs on one torch thread when ``module_of(self)`` is a
    small CPU module, and on the caller's threads when it is large, on a GPU, or None
    (not fitted). Descriptors
    (properties, scikit-learn's ``available_if``, static and class methods) are left
    as they are.

    Parameters
    ----------
    cls : type
    module_of : callable
        ``module_of(estimator)``: the fitted module, or None.
    """
    names = {name for klass in cls.__mro__ for name in vars(klass)
             if not name.startswith(("_", *NOT_INFERENCE))}
    for name in sorted(names):
        method = next(vars(klass)[name] for klass in cls.__mro__ if name in vars(klass))
        # geolearn's own methods: scikit-learn's (``score``) call the wrapped ones
        if (inspect.isfunction(method) and method.__module__.startswith("geolearn.")
                and not getattr(method, "_on_module_threads", False)):
            setattr(cls, name, _on_module_threads(method, module_of))


def _on_module_threads(method, module_of):
    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        module = module_of(self)
        if module is None:  # not fitted: the method raises its own error
            return method(self, *args, **kwargs)
        with small_ops_threads(module):
            return method(self, *args, **kwargs)

    wrapped._on_module_threads = True
    return wrapped
