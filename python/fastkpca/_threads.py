"""The thread rule: which native calls run on a team of OpenMP threads, and which on one thread.

A team pays for itself only where the work it shares is large against what starting it costs. Under the
wait policy the core runs with (passive: idle threads sleep, fastkpca/_native.py says why), a call that starts
a team wakes its sleeping threads, TEAM_START_SECONDS on an idle machine and a scheduler's slice when a core is
busy; two threads then save at most half of the work. So a call whose thread count is the default (``n_jobs``
None) runs on one thread when its predicted work on one thread is below TEAM_MIN_SECONDS, and on the default
team above it; an ``n_jobs`` the user gave is obeyed as given. A team whose call is short (below
BUSY_TEAM_MIN_SECONDS of work) takes only the cores that no other thread of the process is running on as the call
starts (SHORT_CALL_TEAM: the core reads the threads' states): right after a threaded BLAS call, OpenBLAS's
threads spin on theirs for a tenth of a second, and each region of the call would wait for them. The work of a
kernel pass is predicted from its entries (:func:`kernel_seconds`); other callers (the SVM's solve, the
eigensolver's passes) predict theirs in the same seconds.

The constants are measured on one thread, so they hold at any core count: ``python bench/thread_costs.py``
prints each beside the figure it measures. The cost model of solvers/choice.py adds TEAM_START_SECONDS to the
calls that start a team.
"""

from __future__ import annotations

__all__ = ["TEAM_START_SECONDS", "TEAM_MIN_SECONDS", "BLAS_SPIN_SECONDS", "BUSY_TEAM_MIN_SECONDS", "DEFAULT_TEAM",
           "SHORT_CALL_TEAM", "ENTRY_SECONDS", "FEATURE_SECONDS", "FLOP_SECONDS",
           "ARRAY_ENTRY_SECONDS", "kernel_seconds", "array_seconds", "operator_pass_seconds", "pass_threads",
           "array_threads"]

#: Seconds a call pays to wake the team's sleeping threads (idle machine; bench/thread_costs.py, "team start").
TEAM_START_SECONDS = 40e-6
#: Predicted one-thread work from which a call with the default thread count starts a team: at four times the
#: start, two threads save at least the start again (and a busy core's wait stays a small share of the call).
TEAM_MIN_SECONDS = 4 * TEAM_START_SECONDS
#: How long a BLAS library's idle threads keep spinning on their cores after a threaded call: OpenBLAS's 2^28 TSC
#: cycles (its THREAD_TIMEOUT), about a tenth of a second at 2.5 to 3 GHz.
BLAS_SPIN_SECONDS = 0.1
#: Predicted one-thread work of a call from which it starts the default team even where another thread of the
#: process holds a core: a team beside a spinning BLAS thread waits for that core at each region's end until the
#: spin ends (a short call can take several times its work: docs/user_guide/threads.md), so it loses at most about
#: BLAS_SPIN_SECONDS, and two threads save half the work. A call below it starts the team only on the cores no
#: other thread holds (SHORT_CALL_TEAM); a thread that stays busy longer (a user's own computation) makes a team
#: lose the more, the more regions the call starts.
BUSY_TEAM_MIN_SECONDS = 2 * BLAS_SPIN_SECONDS
#: The thread count that asks the core for its default team (parallel.hpp's ThreadScope) ...
DEFAULT_TEAM = 0
#: ... and for the default team cut to the cores no other thread of this process is running on when the call starts
#: (busy_threads.hpp reads each thread's state from /proc; the module exports the same value).
SHORT_CALL_TEAM = -1
#: One kernel entry's seconds on one thread, beyond its features (the exponential, the scaling, the store: about
#: 0.9 ns in a large block, up to 2.5 ns in the small ones the rule decides about) ...
ENTRY_SECONDS = 1.5e-9
#: ... and per feature of its distance or inner product (bench/thread_costs.py, "entry seconds").
FEATURE_SECONDS = 0.05e-9
#: Seconds of one flop of an operator pass's products on one thread: a stored kernel's 2n²b, a kernel pass's
#: products beside its entries (bench/thread_costs.py, "operator pass").
FLOP_SECONDS = 20e-12
#: Seconds of one entry of a stored matrix read (and written) once on one thread: centering in place, a
#: finiteness and symmetry scan (0.3 to 0.6 ns from 300 to 2,000 rows; bench/thread_costs.py, "array pass").
ARRAY_ENTRY_SECONDS = 0.5e-9


def kernel_seconds(entries: float, features: int) -> float:
    """Predicted seconds on one thread of evaluating ``entries`` kernel entries of ``features`` features."""
    return float(entries) * (ENTRY_SECONDS + max(int(features), 0) * FEATURE_SECONDS)


def array_seconds(entries: float) -> float:
    """Predicted seconds on one thread of a pass over ``entries`` entries of a stored matrix."""
    return float(entries) * ARRAY_ENTRY_SECONDS


def operator_pass_seconds(cost: dict) -> float:
    """Predicted seconds on one thread of one pass of a kernel operator, from the core's ``pass_cost(b)``: its
    kernel entries evaluated (their features unknown there: the entry's own cost) and its products' flops."""
    return float(cost["kernel_entries"]) * ENTRY_SECONDS + float(cost["flops"]) * FLOP_SECONDS


def pass_threads(threads: int, seconds: float, starts: float = 1.0) -> int:
    """The thread count of a native call asked for ``threads`` (0: the default) whose predicted work on one
    thread is ``seconds`` per start of its team, started ``starts`` times in the call: one thread for the default
    below TEAM_MIN_SECONDS; the default team (0: OMP_NUM_THREADS, threadpoolctl's limit, shared among concurrent
    calls by the core) where the call's work is at least BUSY_TEAM_MIN_SECONDS; between the two, SHORT_CALL_TEAM,
    the default team cut to the cores no other thread of this process holds when the call starts; ``threads``
    unchanged where the caller gave a count."""
    if threads > 0:
        return threads
    if seconds < TEAM_MIN_SECONDS:
        return 1
    return DEFAULT_TEAM if seconds * max(starts, 1.0) >= BUSY_TEAM_MIN_SECONDS else SHORT_CALL_TEAM


def array_threads(threads: int, entries: float) -> int:
    """:func:`pass_threads` of a pass over ``entries`` entries of a stored matrix."""
    return pass_threads(threads, array_seconds(entries))

