"""Threads for LAPACK's factorisations of large matrices.

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
"""

from __future__ import annotations

import contextlib

__all__ = ["factorisation_threads", "LARGE_MATRIX_BYTES"]

#: Matrices from this many bytes are factored on one BLAS thread.
LARGE_MATRIX_BYTES = 2**31


def factorisation_threads(n: int, itemsize: int = 8):
    """A context in which LAPACK may factor an n × n matrix: BLAS limited to one thread when the matrix has
    ``LARGE_MATRIX_BYTES`` or more (see the module), else nothing changed."""
    if n * n * itemsize < LARGE_MATRIX_BYTES:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")
