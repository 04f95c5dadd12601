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
    # on two cores made the thread-count tests three times slower. NumPy's and SciPy's BLAS take one thread as
    # well (two workers' two BLAS threads each spin on two cores); the tests whose subject is BLAS's thread
    # count set their own. The processes a test starts (interrupts, exits, memory peaks) keep every default.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import threadpoolctl

    from fastkpca import _native

    for _level in _native.runnable_levels():  # every ISA module's OpenMP runtime loaded, then limited
        _native.load(_level)
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS loaded, to be limited too)

    _ONE_THREAD = threadpoolctl.threadpool_limits(1)
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
#: in two workers each of them has the machine to itself (_machine_to_itself), since a team that shares its
#: cores with the other worker's test waits for them at every parallel region (ten times slower here).
THREAD_TEAM_FILES = frozenset({"test_operators.py", "test_memory_safety.py", "test_eigsh.py", "test_micro_kernel.py",
                               "test_float32_products.py"})


#: The files that take longest, longest first. The two workers start on them (xdist's own order, by number of
#: tests, is turned off in pyproject.toml's addopts), so that none of them starts last and runs alone while the
#: other worker has finished, and none is running its one long test when a THREAD_TEAM_FILES file waits for it.
LONG_FILES = ("test_sklearn_suites.py", "test_reliability.py", "test_dask.py", "test_gaussian_process_cg.py",
              "test_gaussian_process_classifier.py", "test_decomposition.py", "test_hostile_input.py")


def pytest_collection_modifyitems(items):
    """LONG_FILES first, in their order; every other file after them, in collection order."""
    rank = {name: position for position, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def _machine_lock(shared):
    """The context of a lock on MACHINE_LOCK, shared or exclusive."""
    lock = open(MACHINE_LOCK, "a")
    fcntl.flock(lock, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    return lock


@pytest.fixture(autouse=True, scope="module")
def _machine_to_itself(request):
    """In a worker: an exclusive lock on MACHINE_LOCK around a whole file of THREAD_TEAM_FILES, so that its
    tests run while the other worker waits. A lock a file rather than a test: the worker waits once for the
    test the other one is running (up to a minute), not once a test."""
    if MACHINE_LOCK is None or request.path.name not in THREAD_TEAM_FILES:
        yield
        return
    with _machine_lock(shared=False):
        yield


@pytest.fixture(autouse=True)
def _machine_share(request):
    """In a worker: a shared lock on MACHINE_LOCK around every test outside THREAD_TEAM_FILES (whose file holds
    the exclusive one already: a second lock of the same process on another descriptor would wait for it)."""
    if MACHINE_LOCK is None or request.node.path.name in THREAD_TEAM_FILES:
        yield
        return
    with _machine_lock(shared=True):
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
