"""Dense algebra beside the native core: which of its calls Ctrl-C can interrupt, on how many BLAS threads each
runs, and subnormals flushed from the factors it multiplies over and over. The design, in one place:

Ctrl-C. A BLAS or LAPACK call checks no signal, so a long one would hold KeyboardInterrupt back for seconds to
minutes. NumPy's calls release the GIL: :func:`threads.interruptible` runs a long one (INTERRUPTIBLE_FLOPS and
up) on a worker thread while the main thread waits in short steps, where Python runs its signal handlers; an
interrupted call finishes in the background, and the next interruptible call (and the interpreter's exit) waits
for it. SciPy's LAPACK wrappers hold the GIL, so the long factorisations are never one SciPy call: calls.py
reaches SciPy's own BLAS and LAPACK routines (its Cython exports) one call at a time through ctypes, with the GIL
released, and factorisations.py (the Cholesky factor, in place, the inverse from it and the solves with it:
``dpotrf``, ``dpotri`` and ``dpotrs``) and eigh.py (``syevr``'s three stages) write LAPACK's blocked algorithms
as loops of such calls of bounded work (POLL_FLOPS), so that KeyboardInterrupt leaves between two calls and nothing
runs on. The one call that cannot be cut, eigh.py's tridiagonal eigenpairs, goes through
:func:`threads.interruptible`; the triangular solve is cut into blocks (:func:`threads.solve_lower_triangular`).

BLAS threads (threads.py). After a threaded call OpenBLAS's threads spin on the cores for about a tenth of a
second, and the core's next OpenMP pass waits for them: a call whose work on one thread (at DGEMM's one-thread
rate, measured once per process) is below BLAS_TEAM_MIN_SECONDS runs on one BLAS thread
(:func:`threads.small_algebra`; :func:`threads.small_algebra_threads` for a loop of small algebra between the
core's passes), a larger one on the BLAS threads the caller has. The factorisations follow the same rule at any
size (:func:`threads.blocked_threads`): on every BLAS thread above the small ones, safely, because their blocks
keep each ``dsyrk`` update to a few thousand rows, so OpenBLAS's threaded ``dpotrf`` is never handed a large
matrix (it segfaulted from 16,000 rows on two threads: threads.py records the crash and the reports behind it;
no module but factorisations.py calls a whole-matrix Cholesky, tests/test_architecture.py checks). ``syevr`` runs
whole up to WHOLE_ROWS rows, on one thread where its work is small, and by stages on every BLAS thread above
(:func:`eigh.on_one_blas_thread`, which the cost model reads). The one-thread context
(:func:`threads.one_blas_thread`) is counted across Python threads, since BLAS's thread count is the process's
and fits may run in several threads at once: the first context to open sets one thread, the last to close
restores the counts from before the first (a library whose count is per thread, OpenBLAS on OpenMP, is set and
restored by each context in its own thread).

Subnormals (subnormals.py). Entries below the smallest normal number in the dense factors that BLAS multiplies
over and over (randomly pivoted Cholesky's, the Gaussian process's preconditioner and control variate) are set
to zero: each product with a subnormal operand takes a microcode assist on x86, and the project does not build
with -ffast-math's flush-to-zero.
"""
