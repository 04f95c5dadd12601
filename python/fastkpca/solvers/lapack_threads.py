"""Threads for LAPACK: the factorisations of large matrices, one BLAS thread for small dense algebra, and long
LAPACK calls that Ctrl-C can interrupt.

OpenBLAS 0.3.30 (SciPy's wheels) and 0.3.31 (NumPy's) crash with a segmentation fault in their threaded
symmetric rank-k update (``dsyrk``, which ``dpotrf`` calls) once the n × n matrix passes 2 GiB (n > 16,384 in
float64): measured here, ``scipy.linalg.lapack.dpotrf`` of a 17,000 × 17,000 matrix and
``numpy.linalg.cholesky`` of a 20,000 × 20,000 one died on 2 threads and factored on one, while a threaded
``dgemm`` into a 2.3 GB matrix and a threaded ``dpotri`` of the 17,000 × 17,000 factor were fine. Until the
libraries are fixed, the Cholesky routines run on one BLAS thread for matrices that large: correct, at about
half the speed on 2 cores. (Both libraries ran their SkylakeX kernels on that AVX-512 machine; scikit-learn's
``scipy.linalg.solve(assume_a="pos")`` had died the same way at N = 20,000 in an earlier session, and ran with
``OPENBLAS_CORETYPE=Haswell``. Which kernels and thread counts are affected was not isolated further: the guard
applies whatever the machine.)

A LAPACK or BLAS call checks no signal: an ``eigh`` of a 4096 × 4096 matrix or the factor of an n × n one runs
for seconds to minutes while Ctrl-C waits. :func:`interruptible` runs such a call on a worker thread while the
main thread waits in short steps, where Python runs its signal handlers: KeyboardInterrupt reaches the caller
within a step, and the abandoned call finishes in the background (the next interruptible call waits for it, so
they never pile up).
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["factorisation_threads", "interruptible", "one_blas_thread", "LARGE_MATRIX_BYTES", "INTERRUPTIBLE_FLOPS"]

#: Calls of at least this many flops run on a worker thread (:func:`interruptible`): about 10 ms on one core,
#: against a thread's start of about 0.1 ms.
INTERRUPTIBLE_FLOPS = 2e8
#: The main thread's wait between signal checks, in seconds.
_WAIT = 0.02
_abandoned: list[threading.Thread] = []

#: Matrices from this many bytes are factored on one BLAS thread.
LARGE_MATRIX_BYTES = 2**31


def factorisation_threads(n: int, itemsize: int = 8):
    """A context in which LAPACK may factor an n × n matrix: BLAS limited to one thread when the matrix has
    ``LARGE_MATRIX_BYTES`` or more (see the module), else nothing changed."""
    if n * n * itemsize < LARGE_MATRIX_BYTES:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def one_blas_thread():
    """A context in which NumPy's BLAS runs on one thread: the dense algebra beside the native passes is small,
    and OpenBLAS's threads spin for a while after each call, taking cores from the next pass (and, under load,
    slowing the call itself many times over)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _wait(thread: threading.Thread) -> None:
    while thread.is_alive():
        thread.join(_WAIT)


def interruptible(func, *args, flops: float = INTERRUPTIBLE_FLOPS, **kwargs):
    """``func(*args, **kwargs)``, a LAPACK or BLAS call of about ``flops`` flops, such that Ctrl-C interrupts it
    within a few hundredths of a second (see the module). Called directly when it is small or off the main
    thread (where no signal arrives)."""
    if flops < INTERRUPTIBLE_FLOPS or threading.current_thread() is not threading.main_thread():
        return func(*args, **kwargs)
    while _abandoned:  # a call abandoned by an earlier interrupt: its cores first
        _wait(_abandoned[0])
        _abandoned.pop(0)
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = func(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="fastkpca-lapack", daemon=True)
    worker.start()
    try:
        _wait(worker)
    except BaseException:
        _abandoned.append(worker)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
