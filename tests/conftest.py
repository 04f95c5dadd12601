import os

import numpy as np
import pytest
from hypothesis import settings

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under `-n` (pytest-xdist), before the OpenMP runtime loads (it reads this once; NumPy's OpenBLAS does not
    # load it): a worker's idle OpenMP threads sleep instead of spinning on cores another worker's test needs,
    # and its native passes and NumPy's and SciPy's BLAS take one thread unless a test asks for more (n_jobs,
    # threads). Tests marked `threads` run teams on purpose or time latencies: `-m "not threads"` leaves them
    # out of a parallel run, for a run of their own (docs/development.rst). The processes a test starts keep
    # every default.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import threadpoolctl

    from fastkpca import _native

    for _level in _native.runnable_levels():  # every ISA module's OpenMP runtime loaded, then limited
        _native.load(_level)
    import scipy.linalg  # noqa: F401  (SciPy's own OpenBLAS loaded, to be limited too)

    _ONE_THREAD = threadpoolctl.threadpool_limits(1)

settings.register_profile("default", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


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
