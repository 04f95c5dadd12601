import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Before any OpenMP runtime loads (it reads this once): a worker's idle OpenMP threads sleep instead of
    # spinning, so that a test's team of threads does not hold cores the other worker's test needs (below).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # The suite runs in two worker processes (pyproject.toml's addopts): each worker's native passes take one
    # OpenMP thread unless a test asks for more (n_jobs, threads), so that two teams of spinning threads do
    # not share two cores (the thread-count tests ran three times slower so). NumPy's BLAS keeps its threads:
    # results that depend on its rounding stay those of a single-process run. The processes a test starts
    # (interrupts, exits, memory peaks) keep every default.
    import threadpoolctl

    from fastkpca import _native

    for _level in _native.runnable_levels():  # every ISA module's OpenMP runtime loaded, then limited
        _native.load(_level)
    _ONE_OPENMP_THREAD = threadpoolctl.threadpool_limits(1, user_api="openmp")


def _runnable_levels():
    from fastkpca import _native

    return _native.runnable_levels()


@pytest.fixture(params=_runnable_levels())
def isa(request, monkeypatch):
    """Runs a test once per native module (ISA level) this machine can execute."""
    from fastkpca import _native

    monkeypatch.setattr(_native, "core", _native.load(request.param))
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
