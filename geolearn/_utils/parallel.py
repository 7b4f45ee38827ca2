"""The one entry point for geolearn's internal parallelism: chunks over threads, one torch
thread each.

Hot paths made of many small ops (small MLPs, per-chunk kernels, per-region LPs) run
fastest with one intra-op thread per chunk, and their parallelism is over chunks through
``n_jobs``: two intra-op threads beside one competing process run several times slower
than one. Every internal ``Parallel`` of the package goes through :func:`thread_map`, which
names its backend explicitly, so a user's ``parallel_config(backend="dask")`` scales the
user's own loops (``GridSearchCV``, ``cross_validate``) and never receives geolearn's chunk
pools. Threads come from :mod:`concurrent.futures`: joblib's result loop polls every 10 ms,
a fixed cost per call that is most of a call of a 0.1 s hot path.
"""

import functools
from concurrent.futures import ThreadPoolExecutor

from joblib import Parallel, delayed, effective_n_jobs, parallel_config

from .torch import blas_threads as _blas_limit
from .torch import torch_threads

#: The backends :func:`thread_map` accepts: threads, or processes for GIL-bound work.
_BACKENDS = ("threading", "loky")


def resolve_n_jobs(n_jobs, backend="threading"):
    """The number of workers ``n_jobs`` means for geolearn's own chunk pools.

    Read as joblib reads it (``None`` is 1 unless a ``parallel_config(n_jobs=...)`` says
    otherwise, ``-1`` is every core), but against geolearn's explicit ``backend``, never
    against a backend the caller configured for their own loops.

    Parameters
    ----------
    n_jobs : int or None
        joblib's ``n_jobs``.
    backend : {"threading", "loky"}, default="threading"
        The backend the workers will run in.

    Returns
    -------
    int
        At least 1.

    Examples
    --------
    >>> from geolearn._utils import resolve_n_jobs
    >>> resolve_n_jobs(None), resolve_n_jobs(3)
    (1, 3)
    """
    with parallel_config(backend=backend):
        return max(1, effective_n_jobs(n_jobs))


def _one_thread(fn, n_threads, *args):
    # inside the worker: torch's intra-op count is per thread, so set it where fn runs
    with torch_threads(n_threads):
        return fn(*args)


def thread_map(fn, items, n_jobs=None, *, torch_threads_per_worker=1, blas_threads=1,
               backend="threading", progress=None):
    """``[fn(item) for item in items]`` over ``n_jobs`` workers, one thread each.

    Each call of ``fn`` runs with ``torch_threads_per_worker`` torch intra-op threads
    (restored after, also on an exception); with more than one worker, BLAS (NumPy,
    SciPy) is held at ``blas_threads`` threads for the duration, since the chunks are
    the parallelism. The backend is named explicitly, so an outer ``parallel_config``
    (Dask, Ray, a custom backend) is not used by these internal pools. Workers take
    the items in order as they free up, so a worker slowed by another process takes
    fewer. With one worker (``n_jobs=None`` or 1) the items run in order in the calling
    thread, under the same torch setting; BLAS keeps its threads there, since a single
    chunk that is GEMM-bound wants them.

    Results come back in the order of ``items`` and do not depend on ``n_jobs``.

    Parameters
    ----------
    fn : callable
        Called once per item as ``fn(item)``.
    items : iterable
        The chunks (or tasks).
    n_jobs : int or None, default=None
        joblib's ``n_jobs`` for the pool (see :func:`resolve_n_jobs`).
    torch_threads_per_worker : int or None, default=1
        torch intra-op threads inside each call; ``None`` leaves torch's setting as is.
    blas_threads : int or None, default=1
        BLAS threads while more than one worker runs; ``None`` leaves BLAS as is.
    backend : {"threading", "loky"}, default="threading"
        Threads of a :class:`concurrent.futures.ThreadPoolExecutor`, or joblib's
        ``"loky"`` (processes) only for work that holds the GIL (pure-Python LP or
        persistence code); everything that releases it (torch, NumPy, SciPy, BLAS) uses
        threads.
    progress : callable or None, default=None
        Wraps the iterator of results (e.g. a tqdm bar); called as ``progress(results)``.

    Returns
    -------
    list
        ``fn(item)`` for each item, in order.

    Examples
    --------
    >>> from geolearn._utils import thread_map
    >>> thread_map(lambda x: x * x, range(4), n_jobs=2)
    [0, 1, 4, 9]
    """
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}; got {backend!r}.")
    items = list(items)
    call = functools.partial(_one_thread, fn, torch_threads_per_worker)
    n_workers = min(resolve_n_jobs(n_jobs, backend), len(items))
    if n_workers <= 1:
        results = (call(item) for item in items)
        return list(progress(results) if progress is not None else results)
    with _blas_limit(blas_threads):
        if backend == "loky":
            results = Parallel(n_jobs=n_workers, backend=backend, return_as="generator")(
                delayed(call)(item) for item in items)
            return list(progress(results) if progress is not None else results)
        with ThreadPoolExecutor(n_workers) as pool:
            try:
                results = pool.map(call, items)
                return list(progress(results) if progress is not None else results)
            except BaseException:
                pool.shutdown(cancel_futures=True)  # a failed chunk: run no more of them
                raise
