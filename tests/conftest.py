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

#: Test files whose tests run teams of threads on purpose (thread counts, every ISA level's parallel paths):
#: in two workers each of their tests has the machine to itself (_machine_share), since a team that shares its
#: cores with the other worker's test waits for them at every parallel region (ten times slower here).
THREAD_TEAM_FILES = frozenset({"test_operators.py", "test_memory_safety.py", "test_eigsh.py", "test_micro_kernel.py",
                               "test_float32_products.py"})


@pytest.fixture(autouse=True)
def _machine_share(request):
    """In a worker: a shared lock on a file of this run around every test, an exclusive one around the tests of
    THREAD_TEAM_FILES, so that those run while the other worker waits."""
    try:
        import fcntl
    except ImportError:  # (no flock: Windows) the tests share the machine as they come
        fcntl = None
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run or fcntl is None:
        yield
        return
    import tempfile

    exclusive = request.node.path.name in THREAD_TEAM_FILES
    with open(os.path.join(tempfile.gettempdir(), f"fastkpca-tests-{run}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield


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
