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
    a stored pass       n² (s + 2b)                  (the kernel read from memory where the limit lets it be kept)
    dense Cholesky      n³/3                         (potrf; the inverse's potri adds 2n³/3)
    dense eigenpairs    EIGH_FLOPS_PER_CUBE · n³     (tridiagonal reduction, then every vector's back transformation;
                                                      EIGH_SUBSET_FLOPS_PER_CUBE · n³ for a few vectors)

at these rates, each measured once per process on one thread and scaled to the threads each call gets
(:func:`thread_rate`: the threads times a parallel efficiency per doubling of them, THREAD_EFFICIENCY, which
``bench/scaling.py`` measures): DGEMM's (dense.threads.gemm_rate_one_thread) on NumPy's BLAS threads for the dense
algebra (:func:`gemm_rate`; LAPACK's Cholesky and eigensolver at their shares of it), and the fused multiply-add
peak of the core's own vectors (:func:`fma_rate_one_thread`) on its OpenMP team for the kernel passes
(:func:`kernel_rate`, at KERNEL_PEAK_SHARE of it), plus a fixed overhead per call of each solver where the Python
around it dominates at small n. The factorisations of every size run threaded (dense/factorisations.py, by blocks whose
symmetric rank-k updates stay far below the sizes where OpenBLAS's threaded ``dsyrk`` crashed: dense/threads.py).
No rate here assumes a core count (tests/test_solver_choice.py runs the model as if the machine had 1 to 64 cores);
two things are still as measured on 2 cores: THREAD_EFFICIENCY beyond the second thread, and the memory-bound passes
(a stored matrix's products at a share of the core's peak, array passes at a share of DGEMM's rate), which will not
keep scaling with the threads once memory's bandwidth is the limit. A stored kernel's fresh memory is priced at the
page faults' measured cost (:func:`fresh_memory_seconds`). The shares, the passes a solver takes and the overheads
are measured, not guessed: bench/solver_choice.py times every candidate of every family at several sizes beside
this model's prediction and prints both.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import _native
from ..operators.storage import DENSE_COPIES, PLAN_SLACK_BYTES
from .dense.eigh import on_one_blas_thread as eigh_on_one_blas_thread
from .dense.threads import default_blas_threads, gemm_rate_one_thread, small_algebra
from .krylov.lanczos import TYPICAL_PASSES, default_block_size, memory_needs

if TYPE_CHECKING:
    from ..kernels.kernel import Kernel
    from ..operators.samples import SolverSamples
    from .rows import ArrayRows

__all__ = ["Candidate", "Choice", "Machine", "choose", "machine", "gemm_rate", "gemm_rate_one_thread", "kernel_rate",
           "fma_rate_one_thread", "fresh_memory_seconds", "fresh_memory_seconds_per_byte", "thread_rate",
           "kernel_entry_flops", "evaluated_features", "kernel_pass_seconds", "stored_pass_seconds",
           "operator_passes_seconds", "stored_share", "lanczos_candidate", "cholesky_seconds", "eigh_seconds"]

# --------------------------------------------------------------------------------------------------- rates
#
# The shares and calibrated flop counts below are read against gemm_rate_one_thread's rate, except those of the
# core's passes (KERNEL_PEAK_SHARE, KERNEL_ENTRY_FLOPS, STORED_ENTRY_FLOPS, SVM_SWEEP_FLOPS), read against the peak
# of its own vectors (fma_rate_one_thread); a physical flop count at DGEMM's rate (an r × r factor, a product with a
# factor) is not a share. The machines they were measured on, and how far each is off on the others:
# docs/user_guide/threads.md.

#: Flops of a kernel entry beyond its distance (an exponential, a few scalings): the model's c.
KERNEL_ENTRY_FLOPS = 20
#: The core's passes' rate (the kernel pass's, counted in kernel_entry_flops; a stored kernel's product; the team's
#: products with a factor) against the fused multiply-add peak of the core's own vectors on as many threads
#: (fma_rate_one_thread). Not a share of DGEMM's rate: the core is compiled for the widest vectors the CPU runs,
#: which NumPy's BLAS may not use. Set to the share of DGEMM's rate that the shares below were calibrated with,
#: times DGEMM's share of the peak where its kernels are the CPU's widest (the figures: docs/user_guide/
#: performance.md, "The kernel pass against the machine"); ``python bench/scaling.py --paths gram64`` prints the
#: pass's measured seconds against this prediction.
KERNEL_PEAK_SHARE = 0.83
#: A stored kernel entry's cost in a product, in flops at the kernel pass's rate (as kernel_entry_flops counts an
#: evaluated one) beyond the block's 2b: reading it from memory (a pass over the packed triangle is bound by the
#: memory's bandwidth; bench/solver_choice.py): set between the values that fit the machines measured, so that
#: each lies within the model's 1.5×.
STORED_ENTRY_FLOPS = 25
#: Entries per second of a pass over a held n × n float64 array (a product by it, forming B = I + S K S, a
#: triangular solve: memory-bound), per DGEMM flop per second.
ARRAY_PASS_SHARE = 0.072
#: LAPACK's Cholesky factor (and inverse) against DGEMM's rate on the same threads.
CHOLESKY_SHARE = 0.64
#: LAPACK's symmetric eigensolver (scipy's eigh, all or some pairs) against DGEMM's rate (measured: syevr of 1,600
#: and 3,200 rows, all pairs or ten, at 0.35 to 0.43 of it; about half that on another machine measured:
#: docs/user_guide/threads.md).
EIGH_SHARE = 0.36
#: Flops of a dense symmetric eigensolve per n³ with all its vectors (the tridiagonal reduction's 4/3 and the
#: vectors' back transformation), and with a few (the reduction alone; the few vectors' share is O(n²k)).
EIGH_FLOPS_PER_CUBE = 4.0
EIGH_SUBSET_FLOPS_PER_CUBE = 4 / 3


#: A stored value of a sparse row in a kernel entry, in dense features: the sparse dot product's cost per
#: value against a dense one's per feature (bench/solver_choice.py --families sparse-pca).
SPARSE_VALUE_FLOPS = 8


#: The rate of 2p threads against twice p threads' (parallel efficiency per doubling of the threads), measured for
#: DGEMM's second thread (``python bench/scaling.py`` prints each path's efficiency at every thread count the
#: machine has; the performance page quotes the run).
THREAD_EFFICIENCY = 0.89


def thread_rate(rate_one: float, threads: int) -> float:
    """A rate on ``threads`` threads from its one-thread rate: threads × THREAD_EFFICIENCY per doubling."""
    threads = max(int(threads), 1)
    return rate_one * threads * THREAD_EFFICIENCY ** math.log2(threads)


@dataclass(frozen=True)
class Machine:
    """What the model reads of the machine: DGEMM's rate on one thread, the threads NumPy's BLAS runs a large call
    on, the core's default OpenMP team, the fused multiply-add peak of the core's vectors on one thread, and what a
    byte of fresh memory costs (:func:`fresh_memory_seconds_per_byte`). The tests give the model other machines of
    1 to 64 cores (monkeypatching :func:`machine`, and dense.threads.gemm_rate_one_thread for the thread rules that
    read the rate alone)."""

    rate_one_thread: float
    blas_threads: int
    team_threads: int
    peak_one_thread: float
    fresh_seconds_per_byte: float


def machine() -> Machine:
    """This process's machine, as the model reads it now (the rate measured once; the thread counts as they are
    set now: threadpoolctl's limits, OMP_NUM_THREADS)."""
    return Machine(gemm_rate_one_thread(), default_blas_threads(), int(_native.core.omp_max_threads()),
                   fma_rate_one_thread(), fresh_memory_seconds_per_byte())


#: Seconds of each of the peak's measurements (:func:`fma_rate_one_thread`: the best of PROBE_TRIES).
FMA_RATE_SECONDS = 2e-4
#: Tries of each of the machine's probes below; the best counts (a try the scheduler cut into reads too slow).
PROBE_TRIES = 3
#: Bytes of fresh memory :func:`fresh_memory_seconds_per_byte` touches in each try: 256 pages of 4 KiB.
FRESH_MEMORY_PROBE_BYTES = 2**20


@functools.lru_cache(maxsize=1)
def fma_rate_one_thread() -> float:
    """The fused multiply-add peak of the core's vectors on one thread (AVX-512's where the core runs its v4
    build), flops per second, measured once per process: independent chains in registers for FMA_RATE_SECONDS
    (``_core.fma_rate``), so nothing in memory moves the figure, the best of PROBE_TRIES. :func:`machine` reads it
    after DGEMM's rate, whose products have raised the core's clock."""
    return max(float(_native.core.fma_rate(1, FMA_RATE_SECONDS, "float64")) for _ in range(PROBE_TRIES))


@functools.lru_cache(maxsize=1)
def fresh_memory_seconds_per_byte() -> float:
    """What the system charges for a byte of memory the process has never touched, measured once per process: an
    anonymous mapping of FRESH_MEMORY_PROBE_BYTES (what the core's large blocks are: malloc maps them, in pages of
    4 KiB unless transparent huge pages are on for every mapping), one byte written per page, the mapping then
    returned; the best of PROBE_TRIES. Each page's first write faults and the system zeroes it, at a cost that on a
    virtual machine can exceed the pass that writes the pages (docs/user_guide/threads.md): the core's stored
    kernels, 4n² bytes, pay it once per fit. NumPy advises the system to back its arrays of 4 MiB and more with
    huge pages, whose faults cost far less a byte once the system has them free: the dense candidates' arrays are
    not priced so. A system where no mapping can be made prices nothing (0)."""
    import mmap

    best = math.inf
    for _ in range(PROBE_TRIES):
        try:
            region = mmap.mmap(-1, FRESH_MEMORY_PROBE_BYTES)
        except (OSError, ValueError):
            return 0.0
        try:
            pages = np.frombuffer(region, dtype=np.uint8)
            try:
                start = time.perf_counter()
                pages[:: mmap.PAGESIZE] = 1
                best = min(best, time.perf_counter() - start)
            finally:
                del pages  # the view released before the mapping is closed
        finally:
            region.close()
    return best / FRESH_MEMORY_PROBE_BYTES


def gemm_rate(threads: int | None = None) -> float:
    """DGEMM's flops per second on ``threads`` threads (None: NumPy's BLAS threads)."""
    m = machine()
    return thread_rate(m.rate_one_thread, m.blas_threads if threads is None else threads)


def kernel_rate(threads: int | None = None) -> float:
    """The fused micro-kernel's flops per second on ``threads`` threads (None: the core's default team)."""
    m = machine()
    return KERNEL_PEAK_SHARE * thread_rate(m.peak_one_thread, m.team_threads if threads is None else threads)


def kernel_entry_flops(d: int) -> float:
    """Flops of one kernel entry of d features (its distance and the function applied to it)."""
    return 2 * d + KERNEL_ENTRY_FLOPS


def evaluated_features(kernel: Kernel, samples: SolverSamples | ArrayRows) -> int:
    """The d of the model's kernel entry for a kernel of ``samples`` (engines/base.py's Samples): 0 for a
    precomputed kernel, whose entries are read from memory rather than evaluated; for sparse samples, the
    values a row stores (``values_per_row``) at SPARSE_VALUE_FLOPS each (an entry's sparse dot product is
    bound by the index lookups, not by flops); else the samples' columns."""
    if kernel.precomputed:
        return 0
    d = samples.shape[1]
    per_row = samples.values_per_row
    return d if per_row >= d else min(d, math.ceil(SPARSE_VALUE_FLOPS * per_row))


def kernel_pass_seconds(n: int, m: int, d: int, columns: int) -> float:
    """Seconds of one pass of the fused micro-kernel: an n × m kernel evaluated and multiplied into ``columns``
    vectors."""
    return n * m * (kernel_entry_flops(d) + 2 * columns) / kernel_rate()


def array_pass_seconds(n: int) -> float:
    """Seconds of one pass over a held n × n float64 array (memory-bound: ARRAY_PASS_SHARE)."""
    return n * n / (ARRAY_PASS_SHARE * gemm_rate())


def stored_pass_seconds(n: int, columns: int) -> float:
    """Seconds of one product of a stored n × n kernel (operators/storage.py: the packed triangle in memory)
    with ``columns`` vectors: the entries read instead of evaluated."""
    return n * n * (STORED_ENTRY_FLOPS + 2 * columns) / kernel_rate()


def stored_share(n: int, d: int, memory_limit: int, other_bytes: int = 0) -> float:
    """The share of the n-sample kernel's packed triangle (4n² bytes) that the storage plan keeps within the memory
    limit beside ``other_bytes``, its slack and the samples' working copies (operators/storage.py)."""
    room = memory_limit - other_bytes - PLAN_SLACK_BYTES - DENSE_COPIES * 8 * n * d
    return min(1.0, max(0.0, room / (4.0 * n * n)))


def operator_passes_seconds(n: int, d: int, columns: int, passes: float, memory_limit: int,
                            other_bytes: int = 0) -> float:
    """Seconds of ``passes`` products of the n-sample kernel operator with ``columns`` vectors, in the storage
    the memory limit leaves room for beside ``other_bytes`` (operators/storage.py's plan, which also sets aside
    its slack and the samples' working copies): the first pass evaluates the kernel; of the later ones, the
    share of the packed triangle (4n² bytes) that fits is read and the rest evaluated again (all of it read
    where it fits, all evaluated matrix-free). The stored share is fresh memory, which the first pass writes on the
    core's team: :func:`fresh_memory_seconds` of it, shared by the team's threads (each faults the pages of the
    tiles it writes; docs/user_guide/threads.md compares the two ways of pricing them on a fit)."""
    stored = stored_share(n, d, memory_limit, other_bytes)
    evaluated = kernel_pass_seconds(n, n, d, columns)
    later = stored * stored_pass_seconds(n, columns) + (1 - stored) * evaluated
    faults = fresh_memory_seconds(stored * 4.0 * n * n) / thread_rate(1.0, machine().team_threads)
    return faults + evaluated + max(passes - 1, 0) * later


#: The smallest allocation priced as fresh memory (:func:`fresh_memory_seconds`): glibc's malloc maps every block
#: from 32 MiB (its largest mmap threshold) afresh, while a smaller one may reuse pages of its heap that an earlier
#: fit touched (bench/solver_choice.py's Lanczos rows show it: docs/user_guide/performance.md, "The kernel pass
#: against the machine").
FRESH_MEMORY_MIN_BYTES = 32 * 2**20


def fresh_memory_seconds(nbytes: float) -> float:
    """Seconds the system takes to give the process ``nbytes`` of memory it has not touched before (from
    FRESH_MEMORY_MIN_BYTES): a page fault per page at its first write, which the machine's
    ``fresh_seconds_per_byte`` prices (on a virtual machine it can cost more than the pass that writes the pages:
    docs/user_guide/threads.md). Priced whether or not the core's spare buffer (cpp/include/fastkpca/spare_buffer.hpp)
    will serve it: the choice does not depend on what the fits of the last second left behind."""
    return nbytes * machine().fresh_seconds_per_byte if nbytes >= FRESH_MEMORY_MIN_BYTES else 0.0


def _lapack_rate(share: float, one_thread: bool) -> float:
    """LAPACK's rate at its share of DGEMM's, on one BLAS thread or on every one (the factorisations of any size
    run threaded: dense/factorisations.py)."""
    return share * gemm_rate(1 if one_thread else None)


def cholesky_seconds(n: int, inverse: bool = False) -> float:
    """Seconds of LAPACK's Cholesky factor of an n × n matrix (and its inverse from the factor)."""
    return (n**3 / 3 + (2 * n**3 / 3 if inverse else 0)) / _lapack_rate(CHOLESKY_SHARE, small_algebra(n**3 / 3))


def eigh_seconds(n: int, vectors: int | None = None, one_thread: bool = False) -> float:
    """Seconds of LAPACK's dense symmetric eigensolver on an n × n matrix, for all its eigenvectors or for a few
    (``vectors``, taken by index), on the BLAS threads dense/eigh.py gives it, or on one (``one_thread``: inside a
    caller's one BLAS thread)."""
    per_cube = EIGH_FLOPS_PER_CUBE if vectors is None or 4 * vectors >= n else EIGH_SUBSET_FLOPS_PER_CUBE
    return per_cube * n**3 / _lapack_rate(EIGH_SHARE, one_thread or eigh_on_one_blas_thread(n))


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


def choose(family: str, requested: str, candidates: Iterable[Candidate], memory_limit: int) -> Choice:
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

#: Why a candidate that needs the n × n matrix in this process cannot run (samples on a cluster).
_MATRIX_NOTE = {True: "", False: "the samples' engine does not hold an n × n matrix in this process"}


# ---- Kernel ridge regression: one fit -------------------------------------------------------------------

#: Iterations (block products by K) of preconditioned CG on a well-posed system of 1,000 samples, and how they
#: grow with n: RIDGE_CG_ITERATIONS · (n / 1000) ** RIDGE_CG_GROWTH (bench/solver_choice.py counts them).
RIDGE_CG_ITERATIONS = 43
RIDGE_CG_GROWTH = 0.6
#: Iterations CG may take on a singular system (alpha = 0), where its convergence has no bound: KernelRidge's
#: max_iter default.
RIDGE_SINGULAR_ITERATIONS = 1000
#: Seconds of a KernelRidge fit beyond its solver's work: validation, the choice and its record (measured: fits of
#: 50 to 200 samples by Cholesky took 0.4 to 0.5 ms beyond their flops' predicted seconds).
RIDGE_FIT_SECONDS = 0.0005
#: Seconds a cg fit spends beyond its passes and its preconditioner: the storage plan, the operator and CG's Python
#: (measured: 2 to 4 ms at 1,000 samples, the fit's time less its stages, ``solver_info_["stages"]``).
RIDGE_CG_SETUP_SECONDS = 0.003
#: Flops per n r² of the preconditioner of rank r beside its r × r eigendecomposition, all of it on one BLAS thread as
#: the solve runs it (ridge/systems.py, ``solve_cg``): RPCholesky's residual updates and the preconditioner made from
#: its factor (krylov/cg.py: FᵀF and U = F V Σ⁻¹), at the one-thread rate. Measured: the fits' preconditioner stage
#: at r = 500 grew by 6.75 to 7.5 n r² from 1,000 to 8,000 samples, on one thread and on two alike.
RIDGE_PRECONDITIONER_FLOPS = 6.75
#: Seconds per pivot of RPCholesky's acceptance (a Python step per proposal, low_rank.py's ``_accept``) and its
#: blocks' bookkeeping: what the preconditioner stage took beyond its flops and eigendecomposition, 15 to 20 ms at
#: r = 500 whatever n.
RPCHOLESKY_PIVOT_SECONDS = 30e-6


def ridge_preconditioner_seconds(n: int, rank: int) -> float:
    """Seconds of KernelRidge's CG preconditioner of rank r on n samples, on one thread whatever the cores (the solve
    keeps its dense algebra on one BLAS thread beside the kernel passes): RIDGE_PRECONDITIONER_FLOPS n r² at the
    one-thread rate, the r × r eigendecomposition on one thread and RPCholesky's per-pivot steps."""
    rank = min(rank, n)
    return (RIDGE_PRECONDITIONER_FLOPS * n * rank * rank / gemm_rate(1) + eigh_seconds(rank, one_thread=True)
            + RPCHOLESKY_PIVOT_SECONDS * rank)


def kernel_ridge(requested: str, *, n: int, d: int, targets: int, singular: bool, rank: int,
                 memory_limit: int, matrix_possible: bool = True) -> Choice:
    """KernelRidge's solver: "cholesky" (the kernel matrix, factored in place: one n × n float64 array, n³/3
    flops, and two triangular solves per target, each a pass over the factor: array_pass_seconds), "cg"
    (RIDGE_CG_ITERATIONS block products of ``targets`` vectors and a rank-``rank`` RPCholesky preconditioner,
    :func:`ridge_preconditioner_seconds`, within any memory limit; on a singular system (``singular``: an alpha of
    0) as many iterations as max_iter allows, so the exact factor, whose least-squares fallback answers it, is
    taken where it fits) or "nystrom" (approximate: only when asked for). ``matrix_possible``: whether the samples'
    engine can hold the n × n matrix in this process (samples on a cluster cannot)."""
    rank = min(rank, n)
    iterations = RIDGE_SINGULAR_ITERATIONS if singular else RIDGE_CG_ITERATIONS * (n / 1000) ** RIDGE_CG_GROWTH
    cholesky = (RIDGE_FIT_SECONDS + kernel_pass_seconds(n, n, d, 0) + cholesky_seconds(n)
                + 2 * targets * array_pass_seconds(n))
    cg_bytes = 8 * n * (6 * targets + rank) + 24 * rank * rank
    cg = (RIDGE_CG_SETUP_SECONDS + operator_passes_seconds(n, d, targets, iterations, memory_limit, cg_bytes)
          + kernel_pass_seconds(n, rank, d, 0) + ridge_preconditioner_seconds(n, rank))
    return choose("kernel ridge", requested, [
        Candidate("cholesky", cholesky, 8 * n * n, matrix_possible, note=_MATRIX_NOTE[matrix_possible]),
        Candidate("cg", cg, cg_bytes),
        Candidate("nystrom", kernel_pass_seconds(n, min(n, 1000), d, targets), 8 * 1000 * (1000 + targets),
                  automatic=False, note="approximate: Falkon's restricted problem"),
    ], memory_limit)


# ---- Kernel ridge cross-validation: every alpha's validation error for one kernel ------------------------

#: Iterations of the unpreconditioned multi-shift CG that solves a fold's systems for every alpha at once
#: (bench/solver_choice.py).
MULTISHIFT_ITERATIONS = 200


def kernel_ridge_cv(requested: str, *, n: int, d: int, targets: int, folds: int | None, native: bool,
                    memory_limit: int, matrix_possible: bool = True) -> Choice:
    """KernelRidgeCV's method for one kernel: "eigh" (the kernel matrix, its eigenvectors and eigh's workspace:
    three n × n arrays; one eigendecomposition for leave-one-out, ``folds is None``, or one per fold's training
    block) or "multishift-cg" (each fold's systems for every alpha by one multi-shift CG run, matrix-free:
    k-fold with one of fastkpca's native kernels only); ``matrix_possible`` as for :func:`kernel_ridge`."""
    train = n if folds is None else n - n // folds
    eigh = kernel_pass_seconds(n, n, d, 0) + (1 if folds is None else folds) * eigh_seconds(train)
    note = ("leave-one-out needs the eigendecomposition" if folds is None
            else "" if native else "needs one of fastkpca's native kernels")
    cg = (folds or 1) * MULTISHIFT_ITERATIONS * kernel_pass_seconds(train, train, d, targets)
    return choose("kernel ridge cross-validation", requested, [
        Candidate("eigh", eigh, 3 * 8 * n * n, matrix_possible, note=_MATRIX_NOTE[matrix_possible]),
        Candidate("multishift-cg", cg, 8 * n * 8 * targets, folds is not None and native, note=note),
    ], memory_limit)


# ---- Kernel PCA: the top k eigenpairs of the centered kernel -----------------------------------------------

#: Seconds of a Lanczos solve beyond its passes' flops: the plan, the operator, the basis's algebra and the
#: Python per pass (bench/solver_choice.py).
LANCZOS_SETUP_SECONDS = 0.005
#: Seconds of a KernelPCA fit on the kernel matrix beyond its kernel and eigensolver: validation, centering, the
#: choice and its record (measured: dense fits of 100, 200, 400 and 800 samples took 1.7 to 2.1 ms beyond their
#: flops' predicted seconds, ``python bench/solver_choice.py --families pca --repeats 5``); the same for every
#: candidate that solves the matrix (Lanczos's own are in LANCZOS_SETUP_SECONDS).
MATRIX_FIT_SECONDS = 0.0018
#: ARPACK's products for k pairs: about ARPACK_PRODUCTS + ARPACK_PRODUCTS_PER_PAIR · k (a fit to ARPACK's counts
#: on doubly centered rbf kernels, tol 1e-8, k = 10 to 100).
ARPACK_PRODUCTS = 15
ARPACK_PRODUCTS_PER_PAIR = 2.5
#: A matrix-vector product's rate against DGEMM's: two flops per entry read from memory.
MATVEC_SHARE = 0.024


def lanczos_candidate(n: int, d: int, k: int, memory_limit: int, possible: bool = True, note: str = "") -> Candidate:
    """Block Lanczos for k pairs: the memory the solver plans for itself (krylov.lanczos.memory_needs), and
    krylov.lanczos.TYPICAL_PASSES passes of the block it takes (default_block_size: narrow where the packed kernel
    is stored and a pass is bound by reading it, wider where every pass evaluates the kernel)."""
    _, needs = memory_needs(k, n)
    block = default_block_size(k, n, compute_bound=stored_share(n, d, memory_limit, needs) < 1)
    seconds = LANCZOS_SETUP_SECONDS + operator_passes_seconds(n, d, block, TYPICAL_PASSES, memory_limit, needs)
    return Candidate("lanczos", seconds, needs, possible, note=note)


def kernel_pca(requested: str, *, n: int, d: int, k: int, symmetric: bool, all_components: bool,
               memory_limit: int, matrix_possible: bool = True) -> Choice:
    """KernelPCA's eigensolver for the top ``k`` pairs: "dense" (the centered kernel matrix, LAPACK's eigh:
    three n × n arrays), "lanczos" (block Lanczos on the implicitly centered operator, within any memory limit;
    possible for a symmetric kernel and a number of components short of all), "arpack" (scikit-learn's, on the
    matrix; taken by "auto" only for a kernel that is not symmetric, which Lanczos cannot solve), "randomized"
    and "nystrom" (approximate: only when asked for); ``matrix_possible`` as for :func:`kernel_ridge`."""
    b = k + 10  # the randomized solver's block (scikit-learn's ten extra columns)
    kernel = MATRIX_FIT_SECONDS + kernel_pass_seconds(n, n, d, 0)
    note = _MATRIX_NOTE[matrix_possible]
    arpack_products = ARPACK_PRODUCTS + ARPACK_PRODUCTS_PER_PAIR * k
    lanczos_note = ("the kernel is not symmetric" if not symmetric
                    else "all components need the dense eigendecomposition" if all_components else "")
    return choose("kernel PCA", requested, [
        Candidate("dense", kernel + eigh_seconds(n, None if all_components else k), 3 * 8 * n * n, matrix_possible,
                  note=note),
        lanczos_candidate(n, d, k, memory_limit, symmetric and not all_components, lanczos_note),
        Candidate("arpack", kernel + arpack_products * 2 * n * n / (MATVEC_SHARE * gemm_rate()), 2 * 8 * n * n,
                  matrix_possible, automatic=not symmetric and not all_components, note=note),
        Candidate("randomized", kernel + 2 * 7 * kernel_pass_seconds(n, n, 0, b), 2 * 8 * n * n, matrix_possible,
                  automatic=False, note=note or "approximate: subspace iteration"),
        Candidate("nystrom", kernel_pass_seconds(n, min(n, 1000), d, k), 8 * 1000 * 1000, automatic=False,
                  note="approximate: landmarks"),
    ], memory_limit)


# ---- Spectral embedding and clustering: the bottom eigenvectors of a normalised Laplacian --------------------

def spectral(requested: str | None, *, n: int, d: int, k: int, memory_limit: int,
             matrix_possible: bool = True) -> Choice:
    """The spectral estimators' eigensolver (``requested`` None: "auto"): "lanczos" (block Lanczos on the Laplacian
    view of the affinity's operator, in any storage) or "dense" (LAPACK's eigensolver on that view made an n × n
    matrix: the affinity and its normalised copy; ``matrix_possible`` as for :func:`kernel_ridge`), the exact
    solvers; scikit-learn's "arpack", "lobpcg" and "amg" solve the materialised affinity and "nystrom" is
    approximate: those only when asked for."""
    dense = 8 * n * n
    sklearn = kernel_pass_seconds(n, n, d, 0) + (ARPACK_PRODUCTS + ARPACK_PRODUCTS_PER_PAIR * k) * 2 * n * n / (
        MATVEC_SHARE * gemm_rate())
    return choose("spectral embedding", "auto" if requested is None else requested, [
        lanczos_candidate(n, d, k, memory_limit),
        Candidate("dense", kernel_pass_seconds(n, n, d, 0) + eigh_seconds(n, k), 2 * dense, matrix_possible,
                  note=_MATRIX_NOTE[matrix_possible]),
        *(Candidate(name, sklearn, dense, automatic=False, note="scikit-learn's, on the materialised affinity")
          for name in ("arpack", "lobpcg", "amg")),
        Candidate("nystrom", kernel_pass_seconds(n, min(n, 1000), d, k), 8 * 1000 * 1000, automatic=False,
                  note="approximate: landmarks"),
    ], memory_limit)


# ---- Gaussian process regression: one evaluation of the likelihood and its gradient, or a fit at θ ---------

#: Block products by K an evaluation of the likelihood takes by cg (bench/solver_choice.py measures it).
GP_PRODUCTS_PER_EVALUATION = 30
#: The exact evaluation's passes over its n × n array, in kernel passes on one thread (kernel_pass_seconds at one
#: thread's rate): the kernel matrix of the Gaussian process's kernel formed whole (its terms summed, every entry
#: written), and, for the gradient, the weights formed in place over K̂⁻¹ and the gradient's pass over them
#: (exact.py). They run on the core's team, right after LAPACK's threaded factor and inverse, whose idle threads
#: spin on the other cores for a while: measured at 1,000 to 4,000 samples of 16 features (ARD), the matrix took
#: 2.0 to 2.6 and the gradient's passes 3.2 to 5.1 such passes, about as many seconds on two threads as on one.
GP_EXACT_MATRIX_PASSES = 2.4
GP_EXACT_GRADIENT_PASSES = 4.5
#: The cg evaluation's seconds against its flops at the kernel pass's rate: what its block operations, the
#: quadrature and the control variate's r × r algebra add.
GP_CG_OVERHEAD = 2.6
#: Seconds of a cg evaluation that do not grow with n: the quadrature's and the probes' iterations, each a few
#: small operations (bench/solver_choice.py --families gpr: measured minus the rest of this model's price was 0.7
#: to 1.9 s at n = 1,000 to 4,000 in two runs, since the control variate's products run on the core's team; 1.6
#: to 2.1 s before).
GP_CG_SECONDS = 1.4


#: Flops per r³ of a cg evaluation's r × r algebra: the probes' square root of the preconditioner (an
#: eigendecomposition, 12 r³: gaussian_process/preconditioner.py, ``sample``) and its Cholesky factors, at the
#: rate's share these run at.
GP_CG_SMALL_FLOPS_PER_CUBE = 16.0


def gp_exact_passes_seconds(n: int, d: int, gradient: bool = True) -> float:
    """Seconds of the exact evaluation's passes over its n × n array beside LAPACK's (GP_EXACT_MATRIX_PASSES, and
    GP_EXACT_GRADIENT_PASSES with the gradient), on one thread whatever the cores."""
    passes = GP_EXACT_MATRIX_PASSES + (GP_EXACT_GRADIENT_PASSES if gradient else 0.0)
    return passes * n * n * kernel_entry_flops(d) / kernel_rate(1)


def gp_cg_serial_seconds(n: int, rank: int) -> float:
    """The seconds of a cg evaluation on one thread whatever the cores: GP_CG_SECONDS and the preconditioner's r × r
    algebra, which the iterative solver runs on one BLAS thread (gaussian_process/iterative.py:
    ``on_one_blas_thread``). Its n × r products (the factor's Gram, and its products with every iterate: about
    10 n r² flops) run on the core's team (low_rank.factor_product and the others) and are priced with the
    passes."""
    return GP_CG_SECONDS + gp_cg_algebra_seconds(min(rank, n))


def gp_cg_algebra_seconds(rank: int) -> float:
    """Seconds of a cg evaluation's r × r algebra on one BLAS thread (GP_CG_SMALL_FLOPS_PER_CUBE r³)."""
    return GP_CG_SMALL_FLOPS_PER_CUBE * rank**3 / gemm_rate(1)


#: Flops per n r² of one build of the preconditioner of rank r, at the one-thread DGEMM rate (RPCholesky's draws
#: and residual updates, or the Nyström factor on held pivots and its triangular solve on one BLAS thread; the
#: Gram FᵀD⁻¹F and RPCholesky's products on the core's team, a small share): fits without an optimiser, which build
#: it three times (RPCholesky's pivots, the factor on them, the final solve's), spent 4.2 to 5.2 n r² on it at
#: n = 2,000 to 8,000, and about the same seconds on one thread as on two (bench/scaling.py, gpr_cg). Priced as
#: serial, it overprices the team's share on many cores.
GP_BUILD_FLOPS = 4.5
#: Builds of the preconditioner in a fit without an optimiser: RPCholesky's, the factor on its pivots, the final
#: solve's.
GP_FIT_BUILDS = 3
#: CG iterations of the final solve of a fit without an optimiser (to final_tol, from the evaluation's α): 15,
#: 31 and 49 at 2,000, 5,000 and 8,000 samples (bench/scaling.py, gpr_cg).
GP_FINAL_ITERATIONS = 30


def gp_cg_build_seconds(n: int, rank: int) -> float:
    """Seconds of one build of the rank-r preconditioner (GP_BUILD_FLOPS n r² and its r × r factor, on one
    thread)."""
    return (GP_BUILD_FLOPS * n * rank * rank + rank**3 / 3) / gemm_rate(1)


def gp_cg_iteration_seconds(n: int, d: int, columns: int, rank: int) -> float:
    """Seconds of one CG iteration on ``columns`` vectors: the kernel's pass and the preconditioner's solve (Fᵀ V and
    F C on the team, 4 n r flops a column; the r × r triangular solves on one BLAS thread)."""
    return (kernel_pass_seconds(n, n, d, columns) + 4 * n * rank * columns / kernel_rate()
            + 2 * rank * rank * columns / gemm_rate(1))


def gp_cg_fit_seconds(n: int, d: int, columns: int, targets: int, rank: int,
                      iterations: float = GP_PRODUCTS_PER_EVALUATION,
                      final_iterations: float = GP_FINAL_ITERATIONS) -> float:
    """Seconds of a cg fit without an optimiser: one evaluation of the likelihood without its gradient (the
    preconditioner, the probes' r × r algebra, ``iterations`` iterations on ``columns`` = targets + probes vectors)
    and the final solve (a fresh preconditioner, ``final_iterations`` on the ``targets``)."""
    rank = min(rank, n)
    return (gp_cg_fit_serial_seconds(n, rank) + iterations * gp_cg_iteration_seconds(n, d, columns, rank)
            + final_iterations * gp_cg_iteration_seconds(n, d, targets, rank))


def gp_cg_fit_serial_seconds(n: int, rank: int) -> float:
    """The seconds of :func:`gp_cg_fit_seconds` on one thread whatever the cores: the builds and the r × r
    algebra (the iterations' r × r solves aside)."""
    rank = min(rank, n)
    return GP_FIT_BUILDS * gp_cg_build_seconds(n, rank) + gp_cg_algebra_seconds(rank)


def gaussian_process_regression(requested: str, *, n: int, d: int, columns: int, rank: int, exact_possible: bool,
                                memory_limit: int, gradient: bool = True, targets: int = 1) -> Choice:
    """The regressor's solver: "cholesky" (the n × n factor and its inverse: n³ at LAPACK's rate, and the passes
    over the n × n array that form the kernel matrix and the gradient: :func:`gp_exact_passes_seconds`) or "cg"
    (GP_PRODUCTS_PER_EVALUATION block products of ``columns`` = targets + probes vectors, the gradient's pass, and
    a rank-``rank`` preconditioner built by RPCholesky), priced for one evaluation of the likelihood and its
    gradient. Without ``gradient`` (a fit without an optimiser: the likelihood at the kernel's θ and the final
    solve), the exact fit factors once, with no inverse, and cg's is :func:`gp_cg_fit_seconds` (``targets`` of the
    columns solved again). The exact evaluation grows as n³ and the cg one as n², so cg wins past a crossover; the
    exact solver is possible only where the samples' engine can hold the n × n matrix (``exact_possible``)."""
    rank = min(rank, n)
    exact = cholesky_seconds(n, inverse=gradient) + gp_exact_passes_seconds(n, d, gradient)
    if gradient:
        cg = gp_cg_serial_seconds(n, rank) + GP_CG_OVERHEAD * (
            (GP_PRODUCTS_PER_EVALUATION + 1) * kernel_pass_seconds(n, n, d, columns)
            + kernel_pass_seconds(n, rank, d, 0) + 10 * n * rank * rank / kernel_rate())
    else:
        cg = gp_cg_fit_seconds(n, d, columns, targets, rank)
    return choose("gaussian process regression", requested, [
        Candidate("cholesky", exact, 8 * n * n, exact_possible, note=_MATRIX_NOTE[exact_possible]),
        Candidate("cg", cg, 8 * n * (4 * columns + rank)),
    ], memory_limit)


# ---- Gaussian process classification: one evaluation of the Laplace approximation and its gradient --------
#
# An evaluation within a fit runs Newton's iteration from the last θ's mode (laplace.settled_mode), then the
# gradient. bench/gaussian_process_classification.py --solver-costs times one evaluation of each solver at
# several n beside these predictions: the constants below are read off its ratios.

#: Newton steps an evaluation takes from the last θ's mode (a fit's evaluations, on average).
LAPLACE_NEWTON_STEPS = 3.0
#: Passes over an n × n array a factored Newton step takes beside its factor (B formed, two products by K, the
#: solve with the factor), and the gradient beside B⁻¹ (Ω formed in place, u's products).
LAPLACE_STEP_PASSES = 8.0
LAPLACE_GRADIENT_PASSES = 6.0
#: Newton steps by CG on the held K (laplace_exact.py): products a step, and flops per n r² of the Nyström
#: factor's RPCholesky (once per evaluation: its pivots' columns read and accepted block by block, far below
#: DGEMM's rate, as a classifier fit's profile at n = 1,000 times it) and of a step's preconditioner (r:
#: LAPLACE_NYSTROM_RANK). The crossover with the factored steps falls between 2,500 and 3,000 samples.
LAPLACE_CG_STEP_PRODUCTS = 3.5
LAPLACE_RPCHOLESKY_FLOPS = 420.0
LAPLACE_PRECONDITIONER_FLOPS = 11.0
#: The Nyström factor's rank of the exact solver's Newton steps by CG (laplace_exact.py).
LAPLACE_NYSTROM_RANK = 128
#: The exact evaluation's seconds against the model's: LAPACK's factor and inverse run below CHOLESKY_SHARE of
#: DGEMM's rate at these n.
LAPLACE_EXACT_OVERHEAD = 1.9
#: cg (laplace_iterative.py): block products by K on the probes an evaluation takes (Newton's steps, the
#: probes' CG, the gradient's pass), flops per n r² of its dense algebra on the rank-r factor (the Nyström
#: factor on the held pivots, the control variate, every Newton step's preconditioner), the Python around it,
#: and its seconds against the model's.
LAPLACE_CG_PRODUCTS = 6.0
LAPLACE_CG_FACTOR_FLOPS = 17.5
LAPLACE_CG_SECONDS = 0.1
LAPLACE_CG_OVERHEAD = 2.5


def laplace_exact_bytes(n: int) -> int:
    """What the exact Laplace solver holds (and checks against the memory limit): its two n × n arrays and the
    Nyström factor of its Newton steps by CG beside them."""
    return 16 * n * n + 3 * 8 * n * min(n, LAPLACE_NYSTROM_RANK)


def laplace_newton_steps(n: int, requested: str = "auto", steps: float = LAPLACE_NEWTON_STEPS) -> Choice:
    """How the exact Laplace solver takes a fit's Newton steps (laplace_exact.py): "factor" (B = I + S K S
    factored at every step, n³/3, and the step's passes over n × n arrays) or "cg" (CG on products by the held
    K, preconditioned by a Nyström factor of rank LAPLACE_NYSTROM_RANK: its RPCholesky, every step's
    preconditioner and products, and B factored once, at the mode, for log det B and the gradient): the factor's
    n³ against CG's n², so CG past a crossover. Seconds of the ``steps`` Newton steps of one evaluation; both
    hold the same arrays."""
    rank = min(n, LAPLACE_NYSTROM_RANK)
    step = cholesky_seconds(n) + LAPLACE_STEP_PASSES * array_pass_seconds(n)
    factor = steps * step
    cg = step + (LAPLACE_RPCHOLESKY_FLOPS * n * rank * rank / gemm_rate()
                 + steps * (LAPLACE_CG_STEP_PRODUCTS * array_pass_seconds(n)
                                           + LAPLACE_PRECONDITIONER_FLOPS * n * rank * rank / gemm_rate()))
    held = laplace_exact_bytes(n)
    return choose("Laplace Newton steps", requested, [
        Candidate("factor", LAPLACE_EXACT_OVERHEAD * factor, held),
        Candidate("cg", LAPLACE_EXACT_OVERHEAD * cg, held),
    ], held)


def gaussian_process_classification(requested: str, *, n: int, d: int, probes: int, rank: int, cg_bytes: int,
                                    memory_limit: int, steps: float = LAPLACE_NEWTON_STEPS) -> Choice:
    """The classifier's solver for one binary model (the Laplace approximation), for one evaluation: "cholesky"
    (two n × n arrays: the kernel, the Newton steps by the cheaper of laplace_newton_steps's ways, B⁻¹ for the
    gradient, 2n³/3, and the kernel's and the gradient's passes) or "cg" (LAPLACE_CG_PRODUCTS block products by K
    on the ``probes``, the dense algebra on a rank-``rank`` factor, LAPLACE_CG_FACTOR_FLOPS · n r²; ``cg_bytes``
    from its memory plan; ``steps``: the exact evaluation's Newton steps). The exact evaluation grows as n³, the
    cg one as n r²: cg past a crossover."""
    rank = min(rank, n)
    newton = min(c.seconds for c in laplace_newton_steps(n, steps=steps).candidates)
    exact = newton + LAPLACE_EXACT_OVERHEAD * (cholesky_seconds(n, inverse=True) - cholesky_seconds(n)
                                               + kernel_pass_seconds(n, n, d, 0) + kernel_pass_seconds(n, n, d, 1)
                                               + LAPLACE_GRADIENT_PASSES * array_pass_seconds(n))
    cg = LAPLACE_CG_SECONDS + LAPLACE_CG_OVERHEAD * (LAPLACE_CG_PRODUCTS * kernel_pass_seconds(n, n, d, probes)
                                                     + LAPLACE_CG_FACTOR_FLOPS * n * rank * rank / gemm_rate())
    return choose("gaussian process classification", requested, [
        Candidate("cholesky", exact, laplace_exact_bytes(n)),
        Candidate("cg", cg, cg_bytes),
    ], memory_limit)


# ---- Support vector machines: one dual, the whole problem as one working set or working sets -------------

#: One variable's share of an SMO step on the whole problem (its gradient updated from the pair's two kernel columns
#: and its score compared for the next pair, in the core's vectors on one thread), in flops at the one-thread FMA
#: peak (fma_rate_one_thread): a sweep runs as wide as the core's vectors.
SVM_SWEEP_FLOPS = 54
#: The batched solver's work beyond its kernel columns, in such sweeps: SVM_BATCHED_SWEEPS per variable (each outer
#: step's fixed share: the selection's lists, the subproblem, the column passes' thread teams) and SVM_BATCHED_SHARE
#: per pair of variables (every outer step sweeps every row for the selection and the gradient's update, and the
#: outer steps grow with the variables). The two are set so that the batched solver's price at 20,000 variables is
#: the stages' seconds of a one-thread solve (selection, subproblem, update, shrinking: ``python bench/scaling.py
#: --paths svc``; the figures: docs/user_guide/performance.md, "Support vector machines"), and so that the two
#: solvers cross where they were measured to, on one thread and on two: at SVM_BATCHED_SWEEPS /
#: (1 - SVM_BATCHED_SHARE) = 1,024 variables (``python bench/solver_choice.py --families svm``;
#: docs/user_guide/svm.rst).
SVM_BATCHED_SWEEPS = 320
SVM_BATCHED_SHARE = 0.6875


def support_vector_machine(requested: str, *, variables: int, whole_bytes: int, batched_bytes: int,
                           every_column_cached: bool, memory_limit: int) -> Choice:
    """A support vector machine's dual of ``variables`` variables: "whole" (the whole problem as one working set:
    LIBSVM's own iteration on the whole kernel matrix, about one SMO step per variable, each sweeping every variable
    on one thread: variables² sweeps; every column in the cache, so possible only where the cache may hold them all,
    ``every_column_cached``) or "batched" (working sets, their columns evaluated together and the gradient updated
    by one product: SVM_BATCHED_SWEEPS sweeps a variable and SVM_BATCHED_SHARE a pair). Both evaluate each kernel
    column about once (the batched solver some of them again, in float32 at about twice the rate), left out of the
    seconds. The bytes (solvers/svm/plan.py) are one solve's, ``memory_limit`` its share of the limit; the batched
    solve's cache shrinks to what the share leaves, so it fits wherever its smallest cache does."""
    sweep = SVM_SWEEP_FLOPS / machine().peak_one_thread
    whole = variables * variables * sweep
    batched = (variables * SVM_BATCHED_SWEEPS + SVM_BATCHED_SHARE * variables * variables) * sweep
    return choose("support vector machine", requested, [
        Candidate("whole", whole, whole_bytes, every_column_cached,
                  note="" if every_column_cached else "cache_size holds fewer than every kernel column"),
        Candidate("batched", batched, batched_bytes),
    ], memory_limit)


# ---- Kernel k-means: one fit ---------------------------------------------------------------------------------

#: Lloyd passes a kernel k-means fit takes (bench/kmeans.py prints the passes of every fit beside this).
KMEANS_PASSES = 20
#: The exact solver's predicted seconds from which "auto" takes the Nyström approximation instead: exact passes
#: are what kernel k-means is, so the approximation is taken only where they would take longer than this.
KMEANS_EXACT_SECONDS = 600.0
#: Landmarks of the Nyström candidate when none is given (the rank of its features).
KMEANS_NYSTROM_RANK = 200


def kernel_kmeans(requested: str, *, n: int, d: int, columns: int, rank: int, exact_bytes: int, nystrom_bytes: int,
                  memory_limit: int, approximable: bool = True) -> Choice:
    """Kernel k-means' solver for ``columns`` = n_clusters × n_init weight vectors: "exact" (KMEANS_PASSES passes
    of the kernel operator in the storage the memory limit leaves beside the solver's ``exact_bytes``) or
    "nystrom" (rank-``rank`` Nyström features on RPCholesky landmarks: one n × rank pass, then the passes by the
    features; ``nystrom_bytes``). The approximation is taken by "auto" only where the exact fit is predicted to
    take more than KMEANS_EXACT_SECONDS, or does not fit the memory limit; it is possible only where landmarks
    can be evaluated against the samples (``approximable``: not for a precomputed kernel)."""
    exact = operator_passes_seconds(n, d, columns, KMEANS_PASSES, memory_limit, exact_bytes)
    rank = min(rank, n)
    nystrom = (kernel_pass_seconds(n, rank, d, rank) + KMEANS_PASSES * 4 * n * rank * columns / gemm_rate())
    slow = exact > KMEANS_EXACT_SECONDS
    exact_fits = exact_bytes + PLAN_SLACK_BYTES <= memory_limit
    return choose("kernel k-means", requested, [
        Candidate("exact", exact, exact_bytes + PLAN_SLACK_BYTES),
        Candidate("nystrom", nystrom, nystrom_bytes, approximable, automatic=slow or not exact_fits,
                  note="a precomputed kernel has no landmarks to evaluate" if not approximable else
                  "approximate: " + ("the exact passes are predicted to take longer than "
                                     f"{KMEANS_EXACT_SECONDS:g} s" if slow else "landmarks")),
    ], memory_limit)
