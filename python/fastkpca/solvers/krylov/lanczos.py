"""Top-k symmetric eigensolver: block Lanczos in the native core, on any operator.

The solver's policies live here, once: the default tolerance and pass limit, the block width, the basis
size, the memory it needs and when a problem is small enough to solve densely. The C++ solver takes them
as given and only checks that they are consistent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable
import time
import warnings

import numpy as np

from ... import _native, _threads
from ... import _validation as v
from ...exceptions import ConvergenceWarning
from ...operators.arithmetic import products_for
from ...operators.storage import pass_bytes
from .eigenvalues import sign_flip

if TYPE_CHECKING:
    from ..._core import Operator as NativeOperator
    from ...operators.operator import KernelOperator

__all__ = ["eigsh", "solve", "block_size_for"]

#: Default relative residual tolerance: ‖Av − λv‖ ≤ tol·|λ₁| for every returned pair.
DEFAULT_TOL = 1e-10
#: Default limit on the number of passes (products of the operator with a block).
DEFAULT_MAX_PASSES = 1000
#: Block Lanczos's passes over K for k pairs to 1e-8 (bench/solver_choice.py counts them): the cost model's count
#: (solvers/choice.py) and the team starts the thread rule expects of a solve.
TYPICAL_PASSES = 15
#: Memory the Krylov basis may take before the solver restarts sooner (at least k + 4 blocks are kept).
BASIS_BUDGET_BYTES = 256 * 2**20


def default_block_size(k: int, n: int, compute_bound: bool = False) -> int:
    """Vectors per block.

    Memory-bound operators (a stored kernel): 8 for k <= 12, else min(k + 6, max(16, k/2 + 8)), rounded up
    to a multiple of 8. A pass costs max(reading A, 2·N²·b flops). At b = 8 a pass over the packed
    (one-triangle) kernel is bound by memory and about half the cost of a b = 16 pass, which is bound by
    arithmetic, while b = 16 saves only a fraction of the passes for k <= 12.

    Compute-bound operators (``compute_bound``: tiles recomputed on every pass): a pass pays a kernel
    evaluation per entry whatever b is (a GEMM of depth d and an exp), and the block product adds only
    4·b flops per entry, so a wider block that saves passes pays: k + 14 rounded up to a multiple of 8, at
    most 64 (24 for k = 10): up to there the passes a wider block saves outweigh what it adds to each.
    """
    if compute_bound:
        b = min(k + 14, 64)
    else:
        b = 8 if k <= 12 else min(k + 6, max(16, k // 2 + 8))
    return min(n, -(-b // 8) * 8)


def solves_densely(k: int, b: int, n: int) -> bool:
    """Whether the problem is solved densely: the Krylov basis (k + 3 blocks) would not fit in n."""
    return k + 3 * b > n


def basis_size(k: int, b: int, n: int) -> int:
    """Basis columns kept before a restart: about 20 blocks, at least k + 4 blocks, within
    BASIS_BUDGET_BYTES, at most n - b."""
    size = max(k + 4 * b, min(20 * b, BASIS_BUDGET_BYTES // (8 * n)))
    return max(k + 2 * b, min(size, n - b))


def memory_needs(k: int, n: int) -> tuple[int, int]:
    """(block width a storage plan should assume, bytes the solver needs besides the operator) for the top k
    pairs of an n×n operator whose storage is not chosen yet: the plan decides between full and packed
    storage by the block of a stored kernel, and the solver's memory is counted at the widest block, that
    of a kernel recomputed on every pass."""
    widest = default_block_size(k, n, compute_bound=True)
    return default_block_size(k, n), solver_bytes(k, widest, n)


def solver_bytes(k: int, b: int, n: int) -> int:
    """Memory the eigensolver needs besides the operator: the basis, the block products, T and its
    eigendecomposition, and the working memory of a pass (or, dense, three n×n float64 arrays)."""
    if solves_densely(k, b, n):
        return 8 * n * n * 3
    m = basis_size(k, b, n)
    return 8 * n * (m + 6 * b + k) + 8 * m * m * 3 + pass_bytes(b, n)


class PassClock:
    """Times the passes of a solve and estimates the time left from the residual's decay.

    Block Krylov residuals fall roughly geometrically with the passes; from the residual at the last two
    Rayleigh-Ritz steps, the passes still needed to reach ``tol`` are log(r/tol) / (rate per pass).
    """

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.start = time.perf_counter()
        self.points: list[tuple[int, float]] = []

    def __call__(self, passes: int, converged: int, residual: float) -> dict:
        elapsed = time.perf_counter() - self.start
        per_pass = elapsed / max(passes, 1)
        if math.isfinite(residual) and residual > 0 and (not self.points or self.points[-1][1] != residual):
            self.points.append((passes, residual))
        eta = None
        if len(self.points) >= 2:
            (p0, r0), (p1, r1) = self.points[-2], self.points[-1]
            rate = math.log(r0 / r1) / max(p1 - p0, 1)
            if rate > 0:
                remaining = max(0.0, math.log(max(r1, self.tol) / self.tol) / rate - (passes - p1))
                eta = remaining * per_pass
        return {"passes": passes, "converged": max(converged, 0), "residual": residual,
                "seconds": elapsed, "seconds_per_pass": per_pass, "eta_seconds": eta}


def block_size_for(op: KernelOperator | NativeOperator, k: int) -> int:
    """The default block width of the top k pairs of ``op``: that of a compute-bound operator when its
    passes evaluate kernel entries (recomputed tiles), else that of a memory-bound one."""
    op = getattr(op, "native", op)
    return default_block_size(k, op.n, op.pass_cost(8)["kernel_entries"] > 0)


def solve(op: KernelOperator | NativeOperator, k: int, *, tol: float | None, maxiter: int | None,
          block_size: int | None, random_state: Any, threads: int, progress: Callable[[dict], object] | None = None,
          start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Top-k pairs of the operator ``op`` (a :class:`fastkpca.KernelOperator`, centered or shifted views
    included, or the core's operator itself). ``progress(figures)`` gets the PassClock's figures after
    every pass. ``start`` (n × j, j <= block size) replaces the first j columns of the random starting
    block, e.g. approximate eigenvectors.

    Returns (values descending, vectors, info dict). No sign convention is applied.
    """
    op = getattr(op, "native", op)
    n = op.n
    b = block_size_for(op, k) if block_size is None else block_size
    tol = DEFAULT_TOL if tol is None else tol
    maxiter = DEFAULT_MAX_PASSES if maxiter is None else maxiter
    # the thread rule (fastkpca/_threads.py) on one pass: every pass starts the team anew
    threads = _threads.pass_threads(threads, _threads.operator_pass_seconds(op.pass_cost(b)),
                                    starts=min(maxiter, TYPICAL_PASSES))
    rng = v.check_random_state(random_state)
    dense = solves_densely(k, b, n)
    v.check_memory(solver_bytes(k, b, n),
                   f"the dense eigensolver on a {n}×{n} matrix" if dense
                   else f"the eigensolver's basis ({n}×{basis_size(k, b, n) + b} float64)")
    if dense:
        max_basis, v0 = 0, np.zeros((n, 1), order="F")
    else:
        max_basis = basis_size(k, b, n)
        v0 = np.asfortranarray(rng.standard_normal((n, b)))
        if start is not None:
            j = min(start.shape[1], b)
            v0[:, :j] = start[:, :j]
    seed = int(rng.randint(0, 2**62))
    products = products_for(op, tol)
    clock = PassClock(tol)
    callback: Callable[[int, int, float], None] | None = None
    if progress is not None:
        def callback(passes: int, converged: int, residual: float) -> None:
            progress(clock(passes, converged, residual))
    began = time.perf_counter()
    r = _native.core.eigsh(op, v0, k, float(tol), max_basis, maxiter, seed, dense, callback, threads, products)
    seconds = time.perf_counter() - began
    values = r["values"]
    if values.shape[0] < k:  # never a silently short result
        raise RuntimeError(f"the eigensolver returned {values.shape[0]} of the {k} eigenpairs asked for")
    info = {
        "n_passes": int(r["passes"]),
        "n_vectors": int(r["n_vectors"]),
        "converged": bool(r["converged"]),
        "residual_norms": r["residuals"],
        "n_restarts": int(r["restarts"]),
        "block_size": int(b),
        "method": "dense" if dense else "block_lanczos",
        "products": products,
        "solve_seconds": seconds,
        "seconds_per_pass": seconds / max(int(r["passes"]), 1),
    }
    return values, r["vectors"], info


def as_native_operator(A: Any, threads: int) -> tuple[NativeOperator, np.dtype]:
    """(native operator, dtype of the result) for an array-like or an operator.

    Arrays are validated (square, finite, symmetric) and read in place when C- or F-contiguous. A fastkpca
    operator is used as it is; any other object with ``shape`` and ``matmat`` (a SciPy LinearOperator,
    say) is wrapped, and its products run in Python.
    """
    native = getattr(A, "native", None)
    if native is not None:
        return native, np.dtype(np.float64)
    if hasattr(A, "matmat") and hasattr(A, "shape") and not v.is_sparse(A):
        shape = tuple(A.shape)
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 1:
            raise ValueError(f"A must be a square operator, got shape {shape}")

        def matmat(V: np.ndarray) -> np.ndarray:
            return np.asarray(A.matmat(V), dtype=np.float64)

        from ...operators import python_operator

        return python_operator(matmat, int(shape[0])).native, np.dtype(np.float64)
    arr = v.as_float_array(A, "A")
    v.check_square(arr, "A")
    if not arr.flags.c_contiguous and arr.flags.f_contiguous:
        arr = arr.T  # a symmetric matrix in Fortran order is its own transpose in C order
    arr = v.contiguous(arr)  # read in place by the operator: C-ordered and aligned, copied once if not
    finite, max_abs, asym = _native.core.scan_square(arr, True, _threads.array_threads(threads, arr.size))
    if not finite:
        raise ValueError("A contains NaN or infinity")
    rtol = 1e-4 if arr.dtype == np.float32 else 1e-8
    if asym > rtol * max_abs:
        raise ValueError(
            f"A is not symmetric: max |A - A.T| = {asym:.3g} ({asym / max_abs:.3g} relative to max |A|); "
            f"eigsh needs a symmetric matrix (tolerance {rtol:g} relative)"
        )
    return _native.core.dense_operator(arr), arr.dtype


def eigsh(A: Any, k: int, *, tol: float | None = None, maxiter: int | None = None, block_size: int | None = None,
          random_state: int | np.random.RandomState | None = None, return_info: bool = False,
          n_jobs: int | None = None) -> tuple[Any, ...]:
    """The k algebraically largest eigenpairs of a symmetric matrix or operator, by block Lanczos.

    Parameters
    ----------
    A : ndarray of shape (N, N), or an operator
        A symmetric matrix, float32 or float64 (integers are converted to float64), read and never
        modified; float32 matrices are multiplied in float32 but accumulate and orthogonalise in float64.
        Or an operator: one from :func:`fastkpca.kernel_operator` (run natively, whatever its storage), or
        any object with ``shape`` and ``matmat`` such as a ``scipy.sparse.linalg.LinearOperator`` (its
        products run in Python, the rest of the solver natively). Operators are assumed symmetric.
    k : int
        Number of eigenpairs, 1 <= k <= N.
    tol : float, default=None
        Stop when every wanted pair has ‖Av − λv‖ <= tol·abs(λ₁) (λ₁ the largest eigenvalue returned).
        ``None`` means 1e-10, enough for eigenvalues within about 1e-10·abs(λ₁) of the exact ones.
    maxiter : int, default=None
        Maximum number of passes (products of A with a block); ``None`` means 1000. When reached, the best
        pairs found are returned with a :class:`fastkpca.ConvergenceWarning`.
    block_size : int, default=None
        Vectors per block; ``None`` chooses from k and the operator's cost per pass (see
        ``linalg.default_block_size``).
    random_state : int, RandomState or None, default=None
        Seed of the random starting block; a given seed gives the same result on the same machine,
        whatever the thread count.
    return_info : bool, default=False
        Also return a dict with ``n_passes`` (products of A with a block: each reads A once),
        ``n_vectors`` (products with single vectors), ``converged``, ``residual_norms`` (‖Av − λv‖ per
        pair, from the Lanczos relation), ``n_restarts``, ``block_size``, ``method``, ``solve_seconds``
        and ``seconds_per_pass``.
    n_jobs : int, default=None
        Threads, as in :func:`fastkpca.gram`.

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
        Descending.
    eigenvectors : ndarray of shape (N, k)
        Orthonormal columns, each signed so that its largest-magnitude entry is positive.
    info : dict
        Only with ``return_info=True``.

    Raises
    ------
    ValueError
        k not in [1, N]; A not square, not symmetric (the message gives the largest entry of
        abs(A − Aᵀ)), or with NaN/inf; negative tol.
    TypeError
        k, maxiter or block_size not an integer; A of a non-numeric type.

    Notes
    -----
    Block Lanczos with full reorthogonalisation and thick restarts (see the C++ core,
    ``block_lanczos.hpp``). Each pass streams A from memory once for all b vectors of a block, so the
    number of passes is the figure of merit; block Krylov needs far fewer passes than ARPACK's
    matrix-vector products (the performance page compares them). When k + 3·block_size > N the problem is
    solved densely.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> A = np.diag([3.0, 1.0, 2.0])
    >>> vals, vecs = fastkpca.eigsh(A, 2, random_state=0)
    >>> vals
    array([3., 2.])
    """
    threads = v.n_threads(n_jobs)
    shape: tuple = tuple(getattr(A, "shape", ()))
    if len(shape) == 2:  # the input's scan, by the thread rule on its entries (the passes' own: solve)
        threads = _threads.pass_threads(threads, _threads.kernel_seconds(float(shape[0]) * shape[0], 0))
    op, dtype = as_native_operator(A, threads)
    n = op.n
    k = v.check_int(k, "k", minimum=1, maximum=n)
    if tol is not None:
        tol = v.check_real(tol, "tol", minimum=0.0)
    if maxiter is not None:
        maxiter = v.check_int(maxiter, "maxiter", minimum=1)
    if block_size is not None:
        block_size = v.check_int(block_size, "block_size", minimum=1, maximum=n)
    values, vectors, info = solve(op, k, tol=tol, maxiter=maxiter, block_size=block_size,
                                  random_state=random_state, threads=threads)
    if not info["converged"]:
        warnings.warn(
            f"eigsh: not all {k} eigenpairs converged in {info['n_passes']} passes (maxiter); "
            f"largest relative residual {np.max(info['residual_norms']) / max(abs(values[0]), 1e-300):.2e}. "
            "Returning the best pairs found.",
            ConvergenceWarning,
            stacklevel=2,
        )
    vectors = sign_flip(np.ascontiguousarray(vectors))
    values = values.astype(dtype, copy=False)
    vectors = vectors.astype(dtype, copy=False)
    if return_info:
        return values, vectors, info
    return values, vectors
