import os
import tempfile

import numpy as np
import pytest
from hypothesis import settings

#: In a worker of the suite's two (pyproject.toml's addopts), the file whose lock shares the machine between
#: them (_machine_share); None in a single process, or without flock (Windows).
MACHINE_LOCK = None
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Before the OpenMP runtime loads (it reads this once; NumPy's OpenBLAS does not load it): a worker's idle
    # OpenMP threads sleep instead of spinning on cores the other worker's test needs. Each worker's native
    # passes take one OpenMP thread unless a test asks for more (n_jobs, threads): two teams of spinning threads
    # on two cores made the thread-count tests three times slower. NumPy's BLAS keeps its threads: results that
    # depend on its rounding stay those of a single-process run. The processes a test starts (interrupts,
    # exits, memory peaks) keep every default.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import threadpoolctl

    from fastkpca import _native

    for _level in _native.runnable_levels():  # every ISA module's OpenMP runtime loaded, then limited
        _native.load(_level)
    _ONE_OPENMP_THREAD = threadpoolctl.threadpool_limits(1, user_api="openmp")
    try:
        import fcntl
    except ImportError:  # the tests share the machine as they come
        fcntl = None
    if fcntl is not None:
        MACHINE_LOCK = os.path.join(tempfile.gettempdir(),
                                    f"fastkpca-tests-{os.environ['PYTEST_XDIST_TESTRUNUID']}.lock")

settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: Test files whose tests run teams of threads on purpose (thread counts, every ISA level's parallel paths):
#: in two workers each of their tests has the machine to itself (_machine_share), since a team that shares its
#: cores with the other worker's test waits for them at every parallel region (ten times slower here).
THREAD_TEAM_FILES = frozenset({"test_operators.py", "test_memory_safety.py", "test_eigsh.py", "test_micro_kernel.py",
                               "test_float32_products.py"})


@pytest.fixture(autouse=True)
def _machine_share(request):
    """In a worker: a shared lock on MACHINE_LOCK around every test, an exclusive one around the tests of
    THREAD_TEAM_FILES, so that those run while the other worker waits."""
    if MACHINE_LOCK is None:
        yield
        return
    with open(MACHINE_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if request.node.path.name in THREAD_TEAM_FILES else fcntl.LOCK_SH)
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
