"""Which Gaussian process solver a fit uses, decided once: ``solver="cholesky"``, ``"cg"``, or ``"auto"`` by
what an evaluation of the likelihood and its gradient would cost each, within the memory limit.

The model, in flops, for n samples of d features, t = targets + probes CG columns and the preconditioner's rank
r (rank.py's c ≈ KERNEL_ENTRY_FLOPS for a kernel entry beyond its distance):

    exact   n³ (potrf n³/3, potri 2n³/3) at LAPACK's rate, plus the kernel matrix and the gradient's pass
            over its lower tiles, 2 · ½n² (2d + c) at the kernel pass's rate;
    cg      I block products of n² (2d + c + 2t) each and the gradient's pass (n² (2d + c + 4t)) at the kernel
            pass's rate, plus the preconditioner's n r (2d + c) + ~10 n r² (RPCholesky's updates and the
            gradient's control variate, rank.py) at DGEMM's rate,

with I = PRODUCTS_PER_EVALUATION, the block products an evaluation took at random θ (11–42 measured at
N = 5,000 and 20,000). The rates are this machine's: DGEMM's measured once per process (:func:`gemm_rate`,
a few hundredths of a second), the kernel pass at KERNEL_PASS_SHARE of it (the fused micro-kernel's measured
share, performance page), LAPACK's factor and inverse at LAPACK_SHARE of it (halved on one thread where
lapack_threads.py limits the factor), and the cg evaluation's flops times CG_OVERHEAD, what its block
operations, quadrature and the control variate's r × r algebra add: with it the model gives the measured
ratios of the two evaluations, 0.47 at N = 5,000 (1.5 s against 3.2 s) and 5.5 at 20,000 (about 100 s against
13–24 s; the performance page's machines). The exact evaluation grows as n³ and the cg one as I·n², so cg
wins past a crossover near n ≈ 9,000 (the model's, whatever the rate: it scales both).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from ..lapack_threads import LARGE_MATRIX_BYTES
from .rank import DEFAULT_RANK, KERNEL_ENTRY_FLOPS

__all__ = ["exact_fits", "evaluation_seconds", "gemm_rate", "prefers_cg", "PRODUCTS_PER_EVALUATION"]

#: Block products an evaluation of the likelihood takes by cg in the model (see the module).
PRODUCTS_PER_EVALUATION = 30
#: The kernel pass's rate against DGEMM's.
KERNEL_PASS_SHARE = 0.7
#: LAPACK's potrf + potri rate against DGEMM's on the same threads.
LAPACK_SHARE = 0.8
#: The cg evaluation's seconds against its flops at the kernel pass's rate (see the module).
CG_OVERHEAD = 2.6


@functools.lru_cache(maxsize=1)
def gemm_rate() -> float:
    """DGEMM's flops per second on NumPy's BLAS threads: the best of three 768 × 768 products."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((768, 768)), rng.standard_normal((768, 768))
    a @ b  # the first call starts BLAS's threads
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * 768**3 / max(best, 1e-9)


def exact_fits(n: int, samples, memory_limit: int) -> bool:
    """Whether the exact solver's n × n array fits the limit where the samples are."""
    return n * n * 8 <= memory_limit and bool(samples.holds_matrix)


def evaluation_seconds(n: int, d: int, columns: int, rank: int = DEFAULT_RANK, rate: float | None = None) -> dict:
    """The model's seconds of one evaluation with gradient by each solver (see the module)."""
    rate = gemm_rate() if rate is None else rate
    kernel_rate = KERNEL_PASS_SHARE * rate
    lapack_rate = LAPACK_SHARE * rate / (2 if n * n * 8 >= LARGE_MATRIX_BYTES else 1)
    entry = 2 * d + KERNEL_ENTRY_FLOPS
    rank = min(rank, n)
    exact = n**3 / lapack_rate + n * n * entry / kernel_rate
    cg = CG_OVERHEAD * ((PRODUCTS_PER_EVALUATION * n * n * (entry + 2 * columns) + n * n * (entry + 4 * columns))
                        / kernel_rate + (n * rank * entry + 10 * n * rank * rank) / rate)
    return {"cholesky": exact, "cg": cg}


def prefers_cg(n: int, d: int, columns: int, rank: int = DEFAULT_RANK) -> tuple[bool, dict]:
    """(whether "auto" takes cg by cost, the model's seconds per evaluation of each)."""
    seconds = evaluation_seconds(n, d, columns, rank)
    return seconds["cg"] < seconds["cholesky"], seconds
