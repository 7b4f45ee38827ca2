"""Shared pytest set-up: hypothesis profiles, torch threads, deterministic seeds."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# CI runs `pytest -n 2` on 2 cores: one torch thread a worker avoids oversubscription.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))

settings.register_profile("default", max_examples=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")


def pytest_configure(config):
    import torch

    threads = os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(int(threads) if threads else max(1, (os.cpu_count() or 1) // _workers))


@pytest.fixture(autouse=True)
def _seed():
    import torch

    np.random.seed(0)
    torch.manual_seed(0)


def pytest_collection_modifyitems(config, items):
    """Skip the ``gpu`` tests, saying why, where torch sees no CUDA device."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="gpu test: torch.cuda.is_available() is False here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
