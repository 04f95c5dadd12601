"""The thread rule (fastkpca/_threads.py): a native call with the default thread count starts a team of OpenMP
threads only where its predicted work pays for the team; a count the user gave is obeyed."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from fastkpca import _threads, kernels


def test_the_rule_starts_a_team_only_for_work_that_pays_for_it():
    small, short, long = 0.5 * _threads.TEAM_MIN_SECONDS, 2 * _threads.TEAM_MIN_SECONDS, _threads.BUSY_TEAM_MIN_SECONDS
    assert _threads.pass_threads(0, small) == 1
    assert _threads.pass_threads(0, short) == _threads.SHORT_CALL_TEAM  # the team, on the cores free now
    assert _threads.pass_threads(0, long) == _threads.DEFAULT_TEAM
    assert _threads.pass_threads(3, small) == 3  # asked for: obeyed
    assert _threads.pass_threads(1, long) == 1


def test_a_call_that_starts_its_team_often_counts_its_whole_work():
    """A solve that starts its team once a pass (block Lanczos) weighs the busy cores against all its passes."""
    per_pass = _threads.BUSY_TEAM_MIN_SECONDS / 10
    assert _threads.pass_threads(0, per_pass) == _threads.SHORT_CALL_TEAM
    assert _threads.pass_threads(0, per_pass, starts=10) == _threads.DEFAULT_TEAM
    assert _threads.pass_threads(0, 0.5 * _threads.TEAM_MIN_SECONDS, starts=1e6) == 1  # each pass still too small


def test_the_core_applies_the_same_rule_to_its_own_loops():
    """The core's loops inside a call (the SVM's selection, say) start the team from the same work as the Python
    layer's calls: one constant, held twice (parallel.hpp's kTeamMinSeconds)."""
    from fastkpca import _native

    assert _native.core.TEAM_MIN_SECONDS == _threads.TEAM_MIN_SECONDS


def test_the_core_and_the_rule_name_the_short_calls_team_alike():
    from fastkpca import _native

    assert _native.core.SHORT_CALL_TEAM == _threads.SHORT_CALL_TEAM
    assert _threads.DEFAULT_TEAM == 0 and _threads.SHORT_CALL_TEAM < 0  # parallel.hpp: n <= 0 is the default


#: Both children's start: two cores, two OpenMP threads, and a Python thread that computes until `stop` is set.
_TWO_CORES = """
import os
os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])  # two cores, before OpenMP reads them
import threading, time, numpy as np, fastkpca
from fastkpca import _native
core = _native.core
stop = threading.Event()
def spin():
    while not stop.is_set():
        pass
spinner = threading.Thread(target=spin)
"""

_needs_two_cores = pytest.mark.skipif(
    not os.path.isdir("/proc/self/task") or len(getattr(os, "sched_getaffinity", lambda _: ())(0)) < 2,
    reason="reads threads' states in /proc; needs two cores")


def _run_on_two_cores(script: str) -> str:
    """The child's output (it must exit cleanly), run after the _TWO_CORES start with two OpenMP threads."""
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", _TWO_CORES + script], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


_SPINNING_NEIGHBOUR = """
X = np.random.default_rng(0).standard_normal((1000, 16))
fastkpca.gram(X, kernel='rbf', n_jobs=2)  # the pool exists
time.sleep(0.3)  # BLAS's threads asleep
quiet = [core.short_call_team() for _ in range(20)]
after_own_team = []
for _ in range(20):  # the team's threads may still spin: they are the team, not counted
    fastkpca.gram(X, kernel='rbf', n_jobs=2)
    after_own_team.append(core.short_call_team())
spinner.start()
time.sleep(0.05)
beside = [core.short_call_team() for _ in range(20)]
stop.set()
spinner.join()
print(min(quiet), min(after_own_team), max(beside))
"""


@pytest.mark.threads
@_needs_two_cores
def test_a_short_call_leaves_the_core_another_thread_holds():
    """On two cores and two OpenMP threads: a short call's team is both threads while the process's other threads
    sleep, and just after the team's own threads ran; one thread while another thread of the process computes (a
    Python loop here: it holds the GIL whenever the core's call has let it go, and stays runnable)."""
    quiet, after_own_team, beside = map(int, _run_on_two_cores(_SPINNING_NEIGHBOUR).split())
    assert (quiet, after_own_team, beside) == (2, 2, 1)


_SPINNER_THAT_STOPS = """
rng = np.random.default_rng(0)
X = rng.standard_normal((2000, 8))
op = core.kernel_operator(X, "rbf", 0.1, 3.0, 1.0, 10**6, 2)  # packed: the pool exists
v0 = np.asfortranarray(rng.standard_normal((2000, 4)))
spinner.start()
time.sleep(0.05)
teams = []
def progress(passes, converged, residual):
    teams.append(core.omp_max_threads())  # the team the call's next regions get
    if passes == 3:
        stop.set()
        spinner.join()
core.eigsh(op, v0, 4, 1e-14, 40, 8, 1, False, progress, core.SHORT_CALL_TEAM)
print(*teams)
"""


@pytest.mark.threads
@_needs_two_cores
def test_a_short_call_takes_back_a_core_once_the_thread_holding_it_stops():
    """A short call of many passes (block Lanczos) cut to one thread because another thread held a core as it
    started looks again at every pass: while that thread computes, one thread; once it has stopped, both."""
    teams = [int(t) for t in _run_on_two_cores(_SPINNER_THAT_STOPS).split()]
    # (the stopped thread may still be leaving, runnable, at the fourth pass's look)
    assert len(teams) == 8 and teams[:3] == [1, 1, 1] and teams == sorted(teams) and teams[-3:] == [2, 2, 2], teams


def test_a_call_of_unknown_length_asks_for_the_default_team():
    """A call that bounds its work only from below (the SVM's dual solve, starts=inf) is never a short call:
    cutting its team for a whole solve could cost far more than a spinning thread's tenth of a second."""
    assert _threads.pass_threads(0, 2 * _threads.TEAM_MIN_SECONDS, starts=float("inf")) == _threads.DEFAULT_TEAM


def test_kernel_work_grows_with_entries_and_features():
    assert _threads.kernel_seconds(2e6, 8) == pytest.approx(2 * _threads.kernel_seconds(1e6, 8))
    assert _threads.kernel_seconds(1e6, 64) > _threads.kernel_seconds(1e6, 4)


def test_a_native_kernel_passes_small_blocks_to_one_thread():
    kernel = kernels.make("rbf", gamma=0.5, n_features=5)
    assert kernel.pass_threads(100 * 100, 5) == 1  # a 100-row Gram: microseconds
    assert kernel.pass_threads(3000 * 3000, 64) == _threads.SHORT_CALL_TEAM  # milliseconds: the team on free cores
    assert kernel.pass_threads(20000 * 20000, 64) == _threads.DEFAULT_TEAM  # seconds: the team whatever else runs
    asked = kernels.make("rbf", gamma=0.5, n_features=5, n_jobs=2)
    assert asked.pass_threads(100 * 100, 5) == 2


_COUNT_THREADS = """
import os, numpy as np, fastkpca
def threads():
    return len(os.listdir('/proc/self/task'))
rng = np.random.default_rng(0)
fastkpca.gram(np.ones((2, 2)))  # the module and NumPy's BLAS loaded, their threads started
before = threads()
fastkpca.gram(rng.standard_normal((100, 5)), kernel='rbf')
small = threads()
fastkpca.gram(rng.standard_normal((3000, 32)), kernel='rbf')
print(before, small, threads())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the process's threads in /proc")
def test_a_small_call_starts_no_team_and_a_large_one_does():
    """In a fresh process on two OpenMP threads: a 100-row Gram leaves the process's thread count as it was (no
    OpenMP worker started); a 3,000-row one starts the team's second thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", _COUNT_THREADS], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    before, small, large = map(int, out.stdout.split())
    assert small == before
    assert large == before + 1


def test_results_do_not_depend_on_the_rule(rng):
    """The rule moves only the thread count, and results do not depend on it (bit for bit)."""
    import fastkpca

    X = rng.standard_normal((150, 7))
    assert np.array_equal(fastkpca.gram(X, kernel="rbf"), fastkpca.gram(X, kernel="rbf", n_jobs=2))


def test_cpu_count_is_joblibs_with_its_limits(monkeypatch):
    """n_jobs=-1 counts the CPUs as scikit-learn does (joblib: affinity, cgroup quota, LOKY_MAX_CPU_COUNT)."""
    import joblib

    from fastkpca import _validation as v

    v.cpu_count.cache_clear()
    monkeypatch.setenv("LOKY_MAX_CPU_COUNT", "1")
    try:
        assert v.cpu_count() == joblib.cpu_count() == 1
        assert v.n_threads(-1) == 1 and v.n_threads(-2) == 1 and v.n_threads(3) == 3
    finally:
        v.cpu_count.cache_clear()
    monkeypatch.delenv("LOKY_MAX_CPU_COUNT")
    assert v.cpu_count() == joblib.cpu_count() >= 1


def test_an_operator_keeps_one_thread_for_its_passes_where_they_are_small_work():
    """A kernel operator's row sums, trace and products (and its build) follow the rule: a 10-row operator
    (microseconds a pass) on one thread, a 3,000-row one on the default team, a count the user gave as given."""
    from fastkpca import kernel_operator
    from fastkpca.operators import from_matrix

    rng = np.random.default_rng(0)
    small, large = rng.standard_normal((10, 5)), rng.standard_normal((3000, 64))
    assert kernel_operator(small, kernel="rbf").threads == 1
    assert kernel_operator(small, kernel="rbf", storage="matrix_free").threads == 1
    assert kernel_operator(large, kernel="rbf", storage="matrix_free").threads == 0
    assert kernel_operator(small, kernel="rbf", n_jobs=2).threads == 2
    assert from_matrix(np.eye(10)).threads == 1
    assert from_matrix(np.eye(2000)).threads == 0
    op = kernel_operator(small, kernel="rbf")
    np.testing.assert_allclose(op.row_sums(), op @ np.ones(10))
