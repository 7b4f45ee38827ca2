"""Helpers for the thread-safety tests: many calls from 8 threads, compared with serial ones."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch


def model_state(module):
    """Every submodule's ``training`` flag and every parameter's ``requires_grad``."""
    return ([m.training for m in module.modules()], [p.requires_grad for p in module.parameters()])


def run_in_threads(calls, n_threads=8, repeats=25):
    """Run each ``(name, fn)`` of ``calls`` ``repeats`` times from ``n_threads`` threads.

    Calls start together behind a barrier (so they overlap) and are interleaved across
    the kinds of call. Returns ``[(name, result or exception)]``.
    """
    jobs = [calls[i % len(calls)] for i in range(n_threads * repeats)]
    barrier = threading.Barrier(n_threads)

    def run(job):
        name, fn = job
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:
            pass
        try:
            return name, fn()
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            return name, exc

    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(run, jobs))


def check_all_equal(results, expected, rtol=1e-6, atol=1e-8):
    """No exception, and every result allclose to the serial one of its name."""
    errors = [f"{name}: {type(r).__name__}: {r}" for name, r in results if isinstance(r, Exception)]
    assert not errors, f"{len(errors)} of {len(results)} calls failed, e.g. {errors[:3]}"
    for name, r in results:
        np.testing.assert_allclose(np.asarray(r), np.asarray(expected[name]), rtol=rtol, atol=atol,
                                   err_msg=name)


def small_net(seed=0):
    """A small Sequential with dropout and batch norm (mode-dependent), in train mode."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16),
                                  torch.nn.Tanh(), torch.nn.Dropout(0.5), torch.nn.Linear(16, 8),
                                  torch.nn.Tanh(), torch.nn.Linear(8, 3))
    return net.train()
