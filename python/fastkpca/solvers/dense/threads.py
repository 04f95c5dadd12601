"""Threads for LAPACK: the factorisations on every BLAS thread, one BLAS thread for small dense algebra, and long
LAPACK calls that Ctrl-C can interrupt.

OpenBLAS's threaded Cholesky crashes on large matrices: with the SkylakeX kernels (threadpoolctl's
``architecture``), OpenBLAS 0.3.30 and 0.3.31, two threads, ``dpotrf`` segfaults from about 16,000 rows (the
reproduction, the versions and OpenBLAS's reports of the kind: docs/user_guide/threads.md). None names a fix.

So the library never hands LAPACK's threaded ``dpotrf`` or ``dpotri`` a large matrix: every factorisation and
inverse of an n × n matrix runs as factorisations.py's loop, whose ``dsyrk`` calls write blocks of at most a few
thousand rows, on every BLAS thread (:func:`blocked_threads`; docs/user_guide/threads.md times it at 17,000
rows): one rule for every size and every machine, with no version or core type to keep up to date. The solves with
a factor, which do not crash, follow the rule for any small BLAS call (:func:`small_algebra_threads`).

A LAPACK or BLAS call checks no signal: an ``eigh`` of a 4096 × 4096 matrix or the factor of an n × n one runs
for seconds to minutes while Ctrl-C waits. :func:`interruptible` runs such a call on a worker thread while the
main thread waits in short steps, where Python runs its signal handlers: KeyboardInterrupt reaches the caller
within a step, and the abandoned call finishes in the background (the next interruptible call waits for it, so
they never pile up).

That works only for a call that releases the GIL while it computes. NumPy's do (``matmul``,
``numpy.linalg``); SciPy's LAPACK wrappers do not (with SciPy 1.17, a Python thread beside
``scipy.linalg.eigh``, ``svd``, ``solve_triangular``, ``cho_solve``, ``lapack.dpotrf`` or ``dpotri`` does not
run until the call returns; beside ``numpy.linalg.cholesky`` or ``svd`` it runs). Long calls therefore go
through NumPy, or are cut into pieces:
:func:`solve_lower_triangular` is the triangular solve by blocks, NumPy products between small SciPy solves.
The exact solvers' n × n factorisations (the Cholesky factor and its inverse, in place to keep one n × n array)
and the symmetric eigendecomposition (eigh.symmetric_eigh) are LAPACK's algorithms written as calls of
bounded work (factorisations.py, eigh.py); the factorisations run on the threads of
:func:`blocked_threads`.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from ... import _threads

if TYPE_CHECKING:
    from threadpoolctl import LibController, ThreadpoolController

__all__ = ["blas_threads", "blocked_threads", "default_blas_threads", "gemm_rate_one_thread", "interruptible",
           "one_blas_thread", "on_one_blas_thread", "small_algebra", "small_algebra_threads", "solve_lower_triangular",
           "BLAS_TEAM_MIN_SECONDS", "GEMM_RATE_PRODUCTS", "GEMM_RATE_ROWS",
           "GEMM_RATE_WARMUP_SECONDS", "INTERRUPTIBLE_FLOPS"]

#: Calls of at least this many flops run on a worker thread (:func:`interruptible`): enough work that a
#: thread's start is a small part of it, little enough that a call below it holds Ctrl-C back no longer than
#: about one wait step (_WAIT) on one core.
INTERRUPTIBLE_FLOPS = 2e8
#: The main thread's wait between signal checks, in seconds.
_WAIT = 0.02
_abandoned: list[threading.Event] = []  # the calls an interrupt left running

#: Rows of L per diagonal block of :func:`solve_lower_triangular`.
TRIANGULAR_BLOCK = 256

#: A BLAS call runs on NumPy's BLAS threads only where its work on one thread is at least this many seconds, else
#: on one thread (:func:`small_algebra`): after a threaded call OpenBLAS's threads spin on the cores for about a
#: tenth of a second (2^28 cycles), and the next OpenMP team (the core's passes, scikit-learn's k-means) waits for
#: one of them to be descheduled, a scheduler slice whatever its size; below this a threaded call saves less than
#: that costs. The cost holds at any core count (DGEMM's one-thread rate converts it to flops: about a 1,000-row
#: factorisation's on one core; bench/solver_choice.py's gpr family times evaluations either side).
BLAS_TEAM_MIN_SECONDS = 4e-3

_R = TypeVar("_R")


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    """threadpoolctl's view of the BLAS libraries loaded (NumPy's and SciPy's, which may differ), taken once:
    limiting through it costs microseconds where ``threadpool_limits`` scans the process every time."""
    import scipy.linalg  # noqa: F401  (SciPy's own BLAS is loaded before the view is taken)
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _per_thread(library: LibController) -> bool:
    """Whether the library's thread count is the calling thread's rather than the process's: OpenBLAS built on
    OpenMP, whose count threadpoolctl sets through ``omp_set_num_threads``."""
    return getattr(library, "threading_layer", None) == "openmp"


@functools.lru_cache(maxsize=1)
def _blas_libraries() -> tuple[tuple[LibController, ...], tuple[LibController, ...]]:
    """(process-wide, per-thread): the BLAS libraries of :func:`_controller`'s view, by whose thread count they
    keep, sorted once."""
    libraries = _controller().select(user_api="blas").lib_controllers
    return (tuple(library for library in libraries if not _per_thread(library)),
            tuple(library for library in libraries if _per_thread(library)))


def blas_threads() -> int:
    """The threads NumPy's BLAS runs on now (the most of the BLAS libraries loaded)."""
    return max((int(library.num_threads) for group in _blas_libraries() for library in group), default=1)


def default_blas_threads() -> int:
    """The threads NumPy's BLAS runs a call on outside this module's one-thread contexts: while one is open (in any
    Python thread), the counts saved when the first opened; :func:`blas_threads` otherwise."""
    with _one_thread_lock:
        saved = [int(count) for _, count in _threads_before]
    return max(saved, default=0) or blas_threads()


#: The one-thread rate's measurement (:func:`gemm_rate_one_thread`): square products of GEMM_RATE_ROWS rows (their
#: three operands, 864 KiB, fit the L2 cache of a server core of 1 MiB or more, so that what the other tenants of
#: a shared L3 do moves the figure less; the output is written in place, no fresh memory per product),
#: repeated for GEMM_RATE_WARMUP_SECONDS before they are timed (a core's clock takes a few milliseconds of work to
#: reach its rate), then the best of GEMM_RATE_PRODUCTS: about 6 ms once per process. How much the fits' seconds
#: vary around its prediction from one process to the next, against a measurement without the warm-up:
#: docs/user_guide/threads.md.
GEMM_RATE_ROWS = 192
GEMM_RATE_WARMUP_SECONDS = 0.004
GEMM_RATE_PRODUCTS = 5


@functools.lru_cache(maxsize=1)
def gemm_rate_one_thread() -> float:
    """DGEMM's flops per second on one thread, at the clock the core reaches under load (the constants above).

    Measured on one thread because a threaded call leaves OpenBLAS's threads spinning on the cores for a while,
    and the fit that asked for the rate would then run its first native passes beside them (a 3,000-sample
    kernel took 2–3 times as long). The operands are constant: a product's speed does not depend on the values,
    and drawing random ones would cost more than the products."""
    m = GEMM_RATE_ROWS
    a, b, c = np.full((m, m), 0.5), np.full((m, m), 0.25), np.empty((m, m))
    best = np.inf
    with one_blas_thread():
        np.matmul(a, b, out=c)  # the first call's setup, before the clock's warm-up is timed
        start = time.perf_counter()
        while time.perf_counter() - start < GEMM_RATE_WARMUP_SECONDS:
            np.matmul(a, b, out=c)
        for _ in range(GEMM_RATE_PRODUCTS):
            start = time.perf_counter()
            np.matmul(a, b, out=c)
            best = min(best, time.perf_counter() - start)
    return 2 * m**3 / max(best, 1e-9)


def small_algebra(flops: float, entries: float = 0.0) -> bool:
    """Whether a BLAS call of about ``flops`` flops that reads about ``entries`` stored matrix entries runs on one
    thread: its work on one thread below BLAS_TEAM_MIN_SECONDS, the work the longer of its flops at the cost
    model's measured rate (:func:`gemm_rate_one_thread`) and its pass over memory (_threads.array_seconds: a
    triangular solve with a few right-hand sides is bound by reading the triangle, not by its flops)."""
    return max(flops / gemm_rate_one_thread(), _threads.array_seconds(entries)) < BLAS_TEAM_MIN_SECONDS


def blocked_threads(n: int) -> AbstractContextManager[None]:
    """The context of the blocked factorisations (factorisations.py) of an n × n matrix: one BLAS thread for a small one
    (:func:`small_algebra`), every thread above, at any size (their symmetric rank-k updates write blocks of at
    most a few thousand rows, far below the sizes where the threaded ``dsyrk`` inside ``dpotrf`` crashes: see the
    module)."""
    return small_algebra_threads(float(n) ** 3 / 3)


def small_algebra_threads(flops: float, entries: float = 0.0) -> AbstractContextManager[None]:
    """A context for a loop of dense algebra whose largest BLAS call takes about ``flops`` flops and reads about
    ``entries`` stored entries, interleaved with the core's passes: one BLAS thread for small work
    (:func:`small_algebra`), nothing changed above. Two BLAS threads on small calls beside the core's OpenMP team
    make each side wait for the other's spinning threads to leave the cores, many times the calls' own work."""
    return one_blas_thread() if small_algebra(flops, entries) else contextlib.nullcontext()


#: The contexts of :func:`one_blas_thread` open now, per Python thread (its ident), and the thread counts from
#: before the first of them of the BLAS libraries whose count is the process's.
_one_thread_lock = threading.Lock()
_one_thread_users: dict[int, int] = {}
_threads_before: list = []


def _set_blas_threads(library: LibController, count: int) -> None:
    """Set a BLAS library's thread count (the process's) from whichever Python thread. threadpoolctl from 3.8
    lets only the Python thread that set OpenBLAS's count last set it again while that thread lives (its
    "controlling thread", until its own limits end), and ignores the others without a word: the control is
    taken from whichever thread holds it for the setting and given back after it."""
    release = getattr(type(library), "clear_controlling_thread", None)
    if release is not None:
        release(force=True)
    library.set_num_threads(count)
    if release is not None:
        release(force=True)


def _restore_shared() -> None:
    """The process-wide counts back to what they were before the first open context (under the lock)."""
    global _threads_before
    before, _threads_before = _threads_before, []
    for library, count in before:
        _set_blas_threads(library, count)


def _open_shared() -> None:
    """The first context's one thread for the process-wide libraries (under the lock); on an error, those set
    are set back."""
    global _threads_before
    if _one_thread_users:
        return
    _threads_before = [(library, library.num_threads) for library in _blas_libraries()[0]]
    try:
        for library, _ in _threads_before:
            _set_blas_threads(library, 1)
    except BaseException:
        _restore_shared()
        raise


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: a fresh lock (another thread may have held it), that
    thread's open contexts kept, the others' gone, and the counts restored if none of its own is open."""
    global _one_thread_lock
    _one_thread_lock = threading.Lock()
    mine = _one_thread_users.get(threading.get_ident(), 0)
    _one_thread_users.clear()
    if mine:
        _one_thread_users[threading.get_ident()] = mine
    elif _threads_before:
        _restore_shared()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """A context in which NumPy's and SciPy's BLAS run on one thread: the dense algebra beside the native
    passes is small, and OpenBLAS's threads spin for a while after each call, taking cores from the next pass
    (and, under load, slowing the call itself many times over).

    BLAS's thread count belongs to the process (OpenBLAS on its own threads), and fits may run in several
    Python threads at once (joblib's threading backend): the first context to open sets one thread and the
    last to close restores the counts from before the first. (Each context saving and restoring on its own,
    two that overlapped restored in the wrong order and left the process on one BLAS thread for good.) A
    library whose count is the calling thread's (OpenBLAS on OpenMP) is set and restored by each context in
    its own thread."""
    own = [(library, library.num_threads) for library in _blas_libraries()[1]]
    me = threading.get_ident()
    opened = False
    try:
        for library, _ in own:
            library.set_num_threads(1)
        with _one_thread_lock:
            _open_shared()
            _one_thread_users[me] = _one_thread_users.get(me, 0) + 1
            opened = True
        yield
    finally:
        if opened:
            with _one_thread_lock:
                _one_thread_users[me] -= 1
                if not _one_thread_users[me]:
                    del _one_thread_users[me]
                if not _one_thread_users:
                    _restore_shared()
        for library, count in own:
            library.set_num_threads(count)


def on_one_blas_thread(method: Callable[..., _R]) -> Callable[..., _R]:
    """The method (a decorator) with NumPy's BLAS on one thread (:func:`one_blas_thread`): the iterative Gaussian
    process solvers' dense algebra, beside the native passes, is small; under load two BLAS threads made the
    preconditioner's r × r factorisations many times slower, and Ctrl-C waited for them. (Not the regression's
    predictive variances, which run on NumPy's threads.)"""
    @functools.wraps(method)
    def wrapped(*args: Any, **kwargs: Any) -> _R:
        with one_blas_thread():
            return method(*args, **kwargs)

    return wrapped


def _wait(done: threading.Event) -> None:
    """Wait for a worker's call in short steps (where Ctrl-C reaches the main thread). Its Event, not the thread:
    with Python 3.11, a KeyboardInterrupt that lands in ``Thread.join(timeout)`` marks the thread stopped
    while it still runs its call, and every later join returns at once."""
    while not done.wait(_WAIT):
        pass


@atexit.register
def _finish_abandoned() -> None:
    """At exit, the calls abandoned by an interrupt run to their end first. A worker still inside a BLAS call
    when the interpreter exits leaves OpenBLAS's exit handler (gotoblas_quit → blas_thread_shutdown_) joining a
    server thread that sleeps on its condition variable forever, or crashes the process: 4 exits in 5 hung
    after Ctrl-C half a second into a 3,000 × 3,000 ``numpy.linalg.eigh`` on a worker thread, none once the
    call had ended. The calls made this way are small (INTERRUPTIBLE_FLOPS; the long factorisations go by
    blocks, factorisations.py), so the wait is short."""
    while _abandoned:
        _wait(_abandoned.pop(0))


def interruptible(func: Callable[..., Any], *args: Any, flops: float = INTERRUPTIBLE_FLOPS, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, a LAPACK or BLAS call of about ``flops`` flops, such that Ctrl-C interrupts it
    within a few hundredths of a second (see the module). Called directly when it is small or off the main
    thread (where no signal arrives)."""
    if flops < INTERRUPTIBLE_FLOPS or threading.current_thread() is not threading.main_thread():
        return func(*args, **kwargs)
    while _abandoned:  # a call abandoned by an earlier interrupt: its cores first
        _wait(_abandoned[0])
        _abandoned.pop(0)
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = func(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="fastkpca-lapack", daemon=True).start()
    try:
        _wait(done)
    except BaseException:
        _abandoned.append(done)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def solve_lower_triangular(L: np.ndarray, B: np.ndarray, *, overwrite_b: bool = False) -> np.ndarray:
    """L⁻¹ B for a lower triangular L (n × n) and B (n × m), float64, such that Ctrl-C interrupts it.

    Forward substitution by blocks of rows (LAPACK's own blocked ``trsm`` does the same arithmetic): for each
    block i, X_i = L_ii⁻¹ (B_i − L_i,<i X_<i). The update is a NumPy product through :func:`interruptible`;
    the diagonal block's solve, SciPy's (holding the GIL), runs on at most ``INTERRUPTIBLE_FLOPS`` flops at
    a time, so no stretch without a signal check is longer than one such call. ``overwrite_b``:
    the result may take B's memory (when B is float64 and writeable).
    """
    from scipy.linalg import solve_triangular

    n, m = B.shape
    X = B if overwrite_b and B.dtype == np.float64 and B.flags.writeable else np.array(B, dtype=np.float64)
    if float(n) * n * m < INTERRUPTIBLE_FLOPS:
        return solve_triangular(L, X, lower=True, overwrite_b=True, check_finite=False)
    columns = max(1, int(INTERRUPTIBLE_FLOPS // (TRIANGULAR_BLOCK * TRIANGULAR_BLOCK)))
    for i0 in range(0, n, TRIANGULAR_BLOCK):
        i1 = min(n, i0 + TRIANGULAR_BLOCK)
        if i0:
            X[i0:i1] -= interruptible(np.matmul, L[i0:i1, :i0], X[:i0], flops=2.0 * (i1 - i0) * i0 * m)
        diagonal = L[i0:i1, i0:i1]
        for j0 in range(0, m, columns):
            j1 = min(m, j0 + columns)
            X[i0:i1, j0:j1] = solve_triangular(diagonal, X[i0:i1, j0:j1], lower=True, check_finite=False)
    return X
