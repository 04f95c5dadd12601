"""Which solver answers a problem: the one place where every estimator's ``"auto"`` is decided.

Each family of problems (kernel ridge's linear systems, kernel PCA's and the spectral estimators' eigenpairs, a
Gaussian process's likelihood, regression or classification, a support vector machine's dual) declares here its
candidate solvers, each with a predicted cost: seconds, from this machine's measured rates, and bytes, against the
memory limit. :func:`choose` then keeps the candidates that can run (``fits``: their bytes within the limit and
nothing else ruling them out) and that ``"auto"`` may take (``automatic``: an approximate solver, or one whose
answer differs from the exact problem's, is taken only when asked for by name), and picks the cheapest. A solver
named by the user is taken as asked (a solver that cannot run then says why when it runs, with the size it needs).
What the model predicted and what it picked is the fit's ``solver_info_["choice"]``.

The model, in flops, for n samples of d features (c: a kernel entry's flops beyond its distance):

    a kernel entry      2d + c                       (its distance by a product, the exponential and scalings)
    a kernel pass       n² (2d + c + 2b)             (the fused micro-kernel on a block of b vectors, matrix-free)
    dense Cholesky      n³/3                         (potrf; the inverse's potri adds 2n³/3)
    dense eigenpairs    EIGH_FLOPS_PER_CUBE · n³     (tridiagonal reduction, then the vectors asked for)

at these rates: DGEMM's, measured once per process (:func:`gemm_rate`: the best of three 768 × 768 products on
NumPy's BLAS threads), the kernel pass at KERNEL_PASS_SHARE of it, LAPACK's Cholesky and eigensolver at their
shares of it (a factor of LARGE_MATRIX_BYTES or more runs on one BLAS thread, lapack_threads.py: half the rate
on this two-core machine), plus a fixed overhead per call of each solver where the Python around it dominates at
small n. The shares, the passes a solver takes and the overheads are measured, not guessed: bench/solver_choice.py
times every candidate of every family at several sizes beside this model's prediction and prints both.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from .lapack_threads import LARGE_MATRIX_BYTES

__all__ = ["Candidate", "Choice", "choose", "gemm_rate", "kernel_entry_flops", "kernel_pass_seconds",
           "cholesky_seconds", "eigh_seconds"]

# --------------------------------------------------------------------------------------------------- rates

#: Flops of a kernel entry beyond its distance (an exponential, a few scalings): the model's c.
KERNEL_ENTRY_FLOPS = 20
#: The kernel pass's rate against DGEMM's (the fused micro-kernel's measured share).
KERNEL_PASS_SHARE = 0.7
#: LAPACK's Cholesky factor (and inverse) against DGEMM's rate on the same threads.
CHOLESKY_SHARE = 0.8
#: LAPACK's symmetric eigensolver (scipy's eigh, all or some pairs) against DGEMM's rate.
EIGH_SHARE = 0.25
#: Flops of a dense symmetric eigensolve per n³: the tridiagonal reduction's 4/3 and the vectors' back
#: transformation.
EIGH_FLOPS_PER_CUBE = 4.0


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


def kernel_entry_flops(d: int) -> float:
    """Flops of one kernel entry of d features (its distance and the function applied to it)."""
    return 2 * d + KERNEL_ENTRY_FLOPS


def kernel_pass_seconds(n: int, m: int, d: int, columns: int) -> float:
    """Seconds of one pass of the fused micro-kernel: an n × m kernel evaluated and multiplied into ``columns``
    vectors."""
    return n * m * (kernel_entry_flops(d) + 2 * columns) / (KERNEL_PASS_SHARE * gemm_rate())


def _lapack_rate(n: int, share: float) -> float:
    """LAPACK's rate on an n × n float64 matrix: one BLAS thread from LARGE_MATRIX_BYTES (lapack_threads.py)."""
    return share * gemm_rate() / (2 if n * n * 8 >= LARGE_MATRIX_BYTES else 1)


def cholesky_seconds(n: int, inverse: bool = False) -> float:
    """Seconds of LAPACK's Cholesky factor of an n × n matrix (and its inverse from the factor)."""
    return (n**3 / 3 + (2 * n**3 / 3 if inverse else 0)) / _lapack_rate(n, CHOLESKY_SHARE)


def eigh_seconds(n: int) -> float:
    """Seconds of LAPACK's dense symmetric eigensolver on an n × n matrix."""
    return EIGH_FLOPS_PER_CUBE * n**3 / _lapack_rate(n, EIGH_SHARE)


# ---------------------------------------------------------------------------------------------- the rule

@dataclass(frozen=True)
class Candidate:
    """One solver a family offers for a problem, with the model's prediction of what it costs."""

    #: The solver's name, as the estimator's ``solver=`` parameter spells it.
    name: str
    #: Predicted seconds of the work the choice is about (a fit, or one evaluation of a likelihood).
    seconds: float
    #: Predicted bytes the solver holds beyond the inputs.
    bytes: int
    #: Whether it can run here at all besides its bytes (False: ``note`` says why).
    possible: bool = True
    #: Whether ``"auto"`` may take it (False for approximate solvers, taken only when named).
    automatic: bool = True
    #: Why it cannot run, or what it is.
    note: str = ""


@dataclass(frozen=True)
class Choice:
    """A family's candidates for one problem and the one picked (the estimator's ``solver_info_["choice"]``)."""

    family: str
    requested: str
    picked: str
    candidates: tuple[Candidate, ...]
    memory_limit: int
    reason: str

    def fits(self, candidate: Candidate) -> bool:
        return candidate.possible and candidate.bytes <= self.memory_limit

    def as_dict(self) -> dict:
        """What the fit records: the request, the pick and why, and each candidate's predicted seconds and
        bytes, whether it fits and whether ``"auto"`` may take it."""
        return {"family": self.family, "requested": self.requested, "picked": self.picked, "reason": self.reason,
                "memory_limit": self.memory_limit,
                "candidates": {c.name: {"seconds": float(c.seconds), "bytes": int(c.bytes), "fits": self.fits(c),
                                        "automatic": c.automatic, **({"note": c.note} if c.note else {})}
                               for c in self.candidates}}


def choose(family: str, requested: str, candidates, memory_limit: int) -> Choice:
    """The solver for a problem: ``requested`` when it names one of the candidates, else (``"auto"``) the
    cheapest automatic candidate that fits; where none fits, the automatic one that needs the fewest bytes (its
    own checks then fail with the size it needs)."""
    candidates = tuple(candidates)
    names = [c.name for c in candidates]
    if requested != "auto":
        if requested not in names:
            raise ValueError(f"{family}: no solver {requested!r} (candidates: {', '.join(names)})")
        return Choice(family, requested, requested, candidates, memory_limit, "asked for by name")
    automatic = [c for c in candidates if c.automatic]
    if not automatic:
        raise ValueError(f"{family}: no candidate solver may be chosen automatically")
    probe = Choice(family, requested, "", candidates, memory_limit, "")
    fitting = [c for c in automatic if probe.fits(c)]
    if fitting:
        best = min(fitting, key=lambda c: c.seconds)
        reason = "the cheapest predicted" + ("" if len(fitting) == len(automatic) else " of those that fit")
    else:
        best = min((c for c in automatic if c.possible), key=lambda c: c.bytes, default=automatic[0])
        reason = "none fits memory_limit: the one needing the fewest bytes"
    return Choice(family, requested, best.name, candidates, memory_limit, reason)


# ------------------------------------------------------------------------------------------- the families
#
# Each family's candidates for one problem, in the order the estimators' documentation lists them.

# ---- Gaussian process regression: one evaluation of the likelihood and its gradient ----------------------

#: Block products by K an evaluation of the likelihood takes by cg (11–42 at random θ: bench/solver_choice.py).
GP_PRODUCTS_PER_EVALUATION = 30
#: The cg evaluation's seconds against its flops at the kernel pass's rate: what its block operations, the
#: quadrature and the control variate's r × r algebra add.
GP_CG_OVERHEAD = 2.6


def gaussian_process_regression(requested: str, *, n: int, d: int, columns: int, rank: int, exact_possible: bool,
                                memory_limit: int) -> Choice:
    """The regressor's solver: "cholesky" (the n × n factor and its inverse: n³ at LAPACK's rate, and the kernel
    and the gradient's pass over its lower tiles) or "cg" (GP_PRODUCTS_PER_EVALUATION block products of
    ``columns`` = targets + probes vectors, the gradient's pass, and a rank-``rank`` preconditioner built by
    RPCholesky). The exact evaluation grows as n³ and the cg one as n², so cg wins past a crossover; the exact
    solver is possible only where the samples' engine can hold the n × n matrix (``exact_possible``)."""
    entry = kernel_entry_flops(d)
    rank = min(rank, n)
    exact = cholesky_seconds(n, inverse=True) + kernel_pass_seconds(n, n, d, 0)
    cg = GP_CG_OVERHEAD * ((GP_PRODUCTS_PER_EVALUATION + 1) * kernel_pass_seconds(n, n, d, columns)
                           + (n * rank * entry + 10 * n * rank * rank) / gemm_rate())
    return choose("gaussian process regression", requested, [
        Candidate("cholesky", exact, 8 * n * n, exact_possible,
                  note="" if exact_possible else "the samples' engine does not hold an n × n matrix"),
        Candidate("cg", cg, 8 * n * (4 * columns + rank)),
    ], memory_limit)


# ---- Support vector machines: one dual, the whole problem as one working set or working sets -------------

#: Seconds of one variable's share of an SMO step on the whole problem: its gradient updated from the pair's two
#: kernel columns and its score compared for the next pair, on one thread.
SVM_SWEEP_SECONDS = 1e-9
#: The batched solver's work per variable, in such sweeps: its share of the outer steps (the selection over every
#: row, the gradient's update by one product, the column passes' thread teams). It is also where the two solvers
#: cross: the whole problem is cheaper up to this many variables (the crossover measured when the rule was set).
SVM_BATCHED_SWEEPS = 4096


def support_vector_machine(requested: str, *, variables: int, whole_bytes: int, batched_bytes: int,
                           every_column_cached: bool, memory_limit: int) -> Choice:
    """A support vector machine's dual of ``variables`` variables: "whole" (the whole problem as one working set:
    LIBSVM's own iteration on the whole kernel matrix, about one SMO step per variable, each sweeping every
    variable on one thread: variables² sweeps; every column in the cache, so possible only where the cache may hold
    them all, ``every_column_cached``) or "batched" (working sets, their columns evaluated together and the gradient
    updated by one product: SVM_BATCHED_SWEEPS sweeps a variable). Both evaluate each kernel column about once (the
    batched solver some of them again, in float32 at about twice the rate), left out of the seconds. The bytes
    (solvers/svm/plan.py) are one solve's, ``memory_limit`` its share of the limit; the batched solve's cache
    shrinks to what the share leaves, so it fits wherever its smallest cache does."""
    whole = variables * variables * SVM_SWEEP_SECONDS
    batched = variables * SVM_BATCHED_SWEEPS * SVM_SWEEP_SECONDS
    return choose("support vector machine", requested, [
        Candidate("whole", whole, whole_bytes, every_column_cached,
                  note="" if every_column_cached else "cache_size holds fewer than every kernel column"),
        Candidate("batched", batched, batched_bytes),
    ], memory_limit)
