"""Kernel ridge regression's solvers: (K + αI) β = y for one α per target.

- :func:`solve_cholesky`: exact, dense, in place on an N×N kernel (every alpha from one array), with
  scikit-learn's least-squares fallback when K + αI is singular;
- :func:`solve_cg`: conjugate gradients on any kernel operator (full, packed, cached, matrix-free or an
  engine's), preconditioned by a randomly pivoted Cholesky factor of K (cg.LowRankPreconditioner);
- :func:`solve_nystrom`: Falkon's restricted problem on m landmarks, from one streamed pass over X.

Sample weights w enter as scikit-learn's formulation: (D K D + αI) z = D y and β = D z for D = diag(√w).
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from scipy import linalg as sla

from ...exceptions import ConvergenceWarning, SingularKernelWarning
from ... import _validation as v
from ...operators import pass_bytes
from ...operators.storage import PLAN_SLACK_BYTES, fixed_bytes
from ..krylov import cg
from ..dense.factorisations import cholesky_in_place, solve_with_factor
from ..dense.threads import blocked_threads, one_blas_thread
from ..low_rank import RPCHOLESKY_BLOCK, landmark_whitening, nystrom_moments, rpcholesky, rpcholesky_bytes

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ..._core import Operator as NativeOperator
    from ...kernels.kernel import Kernel
    from ...operators.operator import KernelOperator
    from ...operators.samples import ColumnSource, KernelOfSamples, SolverSamples
    from ..rows import ArrayRows

__all__ = ["solve_cholesky", "solve_cg", "solve_nystrom", "preconditioner_rank", "preconditioner_dtype", "cg_bytes",
           "cg_working_bytes", "wants_fast_products", "mixed_bytes", "mixed_plans", "CG_PRECISIONS", "DEFAULT_TOL",
           "DEFAULT_MAX_ITER"]

#: Relative residual ‖(K + αI)β − y‖/‖y‖ the cg solver stops at when tol is None.
DEFAULT_TOL = 1e-8
#: Products by K the cg solver may spend when max_iter is None.
DEFAULT_MAX_ITER = 1000
#: cg's precision for its iterations' products (wants_fast_products).
CG_PRECISIONS = ("auto", "float64", "mixed")
#: Rank of cg's preconditioner when none is asked for (less if memory or N demand), for a stored kernel
#: and for one recomputed on every pass.
DEFAULT_PRECONDITIONER_RANK = 500
RECOMPUTED_PRECONDITIONER_RANK = 1000
#: When what the default share leaves could cache less than this fraction of the kernel's one triangle, a
#: pass recomputes nearly every entry whatever is cached: the preconditioner then takes UNCACHED_SHARE of
#: what cg's working memory leaves (at large N a limit of a few GiB caches a few percent of the triangle).
NEGLIGIBLE_CACHE = 0.1
UNCACHED_SHARE = 0.9


# ---------------------------------------------------------------------------------------------- dense

def solve_cholesky(K: np.ndarray, Y: np.ndarray, alphas: np.ndarray,
                   root_w: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """β for every column of Y from the kernel K (N×N, float64, C-contiguous), which is overwritten by its
    Cholesky factors: one N×N array for every alpha. Returns (β, singular); a singular K + αI (alpha = 0 and
    a rank-deficient kernel) gets scikit-learn's fallback, a least-squares solution, with a
    SingularKernelWarning.

    The factorisation writes one triangle (and the diagonal); the other keeps K, so each further alpha
    restores the factored triangle from it and the saved diagonal.
    """
    if root_w is not None:
        K *= root_w[:, None]
        K *= root_w[None, :]
        Y = Y * root_w[:, None]
    n = K.shape[0]
    diagonal = np.diagonal(K).copy()
    dual = np.empty_like(Y)
    singular = False
    A = K.T  # F-contiguous view of the C-ordered K: LAPACK factors it without a copy
    for index, alpha in enumerate(np.unique(alphas)):
        columns = np.flatnonzero(alphas == alpha)
        if index:
            _restore_factored(K, diagonal)
        K.flat[:: n + 1] = diagonal + alpha
        try:
            with blocked_threads(n):
                info = cholesky_in_place(A)
            if info:
                raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
            dual[:, columns] = solve_with_factor(A, Y[:, columns])
        except np.linalg.LinAlgError:
            singular = True
            _restore_factored(K, diagonal)
            K.flat[:: n + 1] = diagonal + alpha
            dual[:, columns] = sla.lstsq(K, Y[:, columns], check_finite=False)[0]
    if singular:
        warnings.warn("kernel ridge: K + alpha·I is singular (alpha = 0 with a rank-deficient kernel?); the dual "
                      "coefficients are a least-squares solution, as scikit-learn's fallback gives",
                      SingularKernelWarning, stacklevel=3)
    if root_w is not None:
        dual *= root_w[:, None]
    return dual, singular


def _restore_factored(K: np.ndarray, diagonal: np.ndarray) -> None:
    """Copy K's upper triangle (in C order, the triangle LAPACK factored through the view K.T) back from
    its lower triangle, which the factorisation left untouched, and put the diagonal back."""
    n = K.shape[0]
    step = 512
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        K[:i0, i0:i1] = K[i0:i1, :i0].T  # columns i0:i1 above the diagonal block
        block = K[i0:i1, i0:i1]
        upper = np.triu_indices(i1 - i0, 1)
        block[upper] = block.T[upper]
    np.fill_diagonal(K, diagonal)


# ------------------------------------------------------------------------------------------------ cg

def preconditioner_rank(requested: int | None, n: int, memory_limit: int, stored: bool, itemsize: int = 8, *,
                        working: int = 0, kernel_itemsize: int | None = None) -> int:
    """cg's preconditioner rank: ``requested`` (at most n), or by default 500 and at most a quarter of the
    limit when the kernel is stored (a pass is a read of memory); when it must be recomputed (a pass costs
    N² kernel evaluations), iterations are dear and memory is better spent on the preconditioner than on a
    sliver of cached tiles: up to 1000 and 60% of the limit, and UNCACHED_SHARE of what cg's ``working``
    bytes leave when the other 40% would cache less than NEGLIGIBLE_CACHE of the kernel's triangle (entries
    of ``kernel_itemsize`` bytes; None: not considered). A float32 factor (``itemsize`` 4, see
    :func:`preconditioner_dtype`) doubles both: the rank the memory allows and the cap."""
    if requested is not None:
        return min(requested, n)
    cap, share = _default_rank(stored, itemsize)
    budget = share * memory_limit
    if not stored and kernel_itemsize is not None and \
            memory_limit - budget < NEGLIGIBLE_CACHE * kernel_itemsize * n * (n + 1) / 2:
        budget = max(budget, UNCACHED_SHARE * (memory_limit - working))
    # The factor (itemsize·n·r) and the r × r algebra (24·r²) within the budget: the positive root.
    by_memory = int((-itemsize * n + ((itemsize * n) ** 2 + 96.0 * budget) ** 0.5) / 48)
    return int(max(0, min(cap, n - 1, by_memory)))


def _default_rank(stored: bool, itemsize: int) -> tuple[int, float]:
    """The default rank's cap and its share of the memory limit (see :func:`preconditioner_rank`)."""
    cap, share = (DEFAULT_PRECONDITIONER_RANK, 0.25) if stored else (RECOMPUTED_PRECONDITIONER_RANK, 0.6)
    return cap * 8 // itemsize, share


def preconditioner_dtype(requested: str, rank_requested: int | None, n: int, memory_limit: int, stored: bool,
                         alphas: np.ndarray, columns: ColumnSource, **budget: int) -> np.dtype:
    """The storage of cg's preconditioner factor (``preconditioner_dtype``): "float64", "float32", or "auto":
    float32 where it doubles the rank, that is where the memory limit holds a float64 factor below its cap
    (the default rank), and where its rounding is far below the shift: ε₃₂ · max K_ii ≤ 1e-3 · min α (the
    factor's residual columns are formed from it, and a pivot's residual is trusted down to about α).
    ``budget``: :func:`preconditioner_rank`'s ``working`` and ``kernel_itemsize``."""
    if requested != "auto":
        return np.dtype(requested)
    if rank_requested is not None or preconditioner_rank(None, n, memory_limit, stored, **budget) >= \
            min(_default_rank(stored, 8)[0], n - 1):
        return np.dtype(np.float64)
    alpha = float(np.min(alphas))
    largest = float(np.max(columns.diagonal(), initial=0.0))
    return np.dtype(np.float32 if np.finfo(np.float32).eps * largest <= 1e-3 * alpha else np.float64)


def rpcholesky_block(n: int) -> int:
    """RPCholesky's proposals per block for the preconditioner: its three n × block buffers stay within
    96 MiB."""
    return int(max(16, min(RPCHOLESKY_BLOCK, (32 * 2**20) // (8 * n))))


def cg_bytes(n: int, targets: int, rank: int, itemsize: int = 8, source_itemsize: int = 8) -> int:
    """Memory cg needs besides the operator: its vectors (cg.pcg_bytes), a pass's working memory, the
    preconditioner's n × r factor (``itemsize`` bytes an entry), RPCholesky's buffers while it is built (the
    kernel's columns in ``source_itemsize`` bytes) and the r × r algebra."""
    return cg.pcg_bytes(n, targets, rank) + pass_bytes(targets, n) + itemsize * n * rank + \
        rpcholesky_bytes(n, min(rpcholesky_block(n), rank), source_itemsize) + 8 * rank * rank * 3


def cg_working_bytes(samples: SolverSamples, targets: int, mixed: bool) -> int:
    """What cg holds besides the preconditioner's factor and r × r algebra, within the memory given to
    :func:`preconditioner_rank`: :func:`cg_bytes`'s vectors, pass and RPCholesky buffers (at their widest) and,
    unless in mixed precision (whose operators :func:`mixed_bytes` counts), the operator's fixed part."""
    n, itemsize = samples.shape[0], samples.dtype.itemsize
    own = 0 if mixed else fixed_bytes(n, samples.shape[1], itemsize)  # as for dense samples (sparse: fewer)
    return own + cg_bytes(n, targets, 0) + rpcholesky_bytes(n, rpcholesky_block(n), itemsize)


def wants_fast_products(precision: str, samples: SolverSamples, kernel: Kernel, plan: Any) -> bool:
    """Whether cg takes its iterations' products from a float32 evaluation of the kernel (CG's ``precision``):
    "mixed" asks for it (a native kernel on float64 samples only); "auto" takes it when the kernel is
    recomputed on every pass in this process (cached or matrix-free storage), where a float32 pass evaluates
    twice the entries per SIMD instruction; a stored kernel's pass is a read of memory, and a float32 copy would
    take memory."""
    eligible = (kernel.native and not kernel.precomputed and samples.dtype == np.float64
                and not v.is_sparse(samples.fitted()))
    if precision == "mixed" and not eligible:
        raise ValueError(f"CG(precision='mixed') needs one of fastkpca's native kernels on dense float64 samples, "
                         f"not {kernel.label} on {samples.dtype} samples; use CG(precision='float64')")
    return precision == "mixed" or (precision == "auto" and eligible and plan.storage in ("cached", "matrix_free"))


def _float64_side_bytes(n: int, n_features: int) -> int:
    """What mixed-precision cg's float64 operator (matrix-free) and the float32 copy of the samples hold
    (operators.storage's accounting: the working copies of the samples and their norms). Not a pass nor the
    plan's slack: the two operators' passes never overlap (:func:`cg_bytes` counts one) and the float32 plan
    counts the process's slack."""
    return fixed_bytes(n, n_features, 8) - PLAN_SLACK_BYTES + n * n_features * 4


def mixed_bytes(n: int, n_features: int) -> int:
    """What mixed-precision cg holds besides what :func:`cg_bytes` counts (its vectors, a pass and the
    preconditioner): the float64 side and the float32 operator's fixed part (its working copies, the slack)."""
    return _float64_side_bytes(n, n_features) + fixed_bytes(n, n_features, 4)


def mixed_plans(K: KernelOfSamples, fast: KernelOfSamples, shape: tuple[int, ...], *, block_size: int,
                memory_limit: Any, other_bytes: int) -> tuple[Any, Any]:
    """The storage of mixed-precision cg's two operators on samples of ``shape``: the float64 kernel ``K``
    matrix-free (read for the few true residuals) and the float32 one, ``fast``, (read on every iteration) in
    what the float64 side leaves."""
    exact = K.plan(block_size=block_size, memory_limit=memory_limit, other_bytes=other_bytes, storage="matrix_free")
    n, n_features = shape
    beside = other_bytes + _float64_side_bytes(n, n_features)
    return exact, fast.plan(block_size=block_size, memory_limit=memory_limit, other_bytes=beside)


def solve_cg(op: KernelOperator, columns: ColumnSource, Y: np.ndarray, alphas: np.ndarray,
             root_w: np.ndarray | None = None, *, rank: int, tol: float | None = None, maxiter: int | None = None,
             random_state: Any = None, progress: Callable[..., Any] | None = None,
             report: Callable[..., None] | None = None, fast_op: KernelOperator | None = None,
             factor_dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict]:
    """Preconditioned CG on the kernel operator ``op`` (a KernelOperator, any storage), the preconditioner a
    rank-``rank`` RPCholesky factor of the kernel whose diagonal and columns ``columns`` gives (a column
    source: kernels.KernelColumns, MatrixColumns, or an engine's).

    ``progress(iterations, converged, residual)`` after every iteration; ``report(stage, **figures)`` after
    the preconditioner. ``fast_op``: the kernel in float32, for the iterations' products (cg.pcg's
    ``fast_matmat``); ``factor_dtype``: the preconditioner factor's storage (:func:`preconditioner_dtype`).
    Returns (β, info) and warns (ConvergenceWarning) when tol was not reached.
    """
    tol = DEFAULT_TOL if tol is None else tol
    maxiter = DEFAULT_MAX_ITER if maxiter is None else maxiter
    stages = {}
    start = time.perf_counter()
    native, threads = op.native, op.threads
    # The dense algebra between the kernel passes (RPCholesky's updates, the preconditioner, CG's vector
    # operations) is small: on one BLAS thread. OpenBLAS's idle threads spin for a while after each call
    # and take cores from the next native pass.
    with one_blas_thread():
        precondition, rank_used = None, 0
        if rank > 0:
            factor = rpcholesky(columns, rank, None, random_state=random_state,
                                block_size=rpcholesky_block(columns.n), dtype=factor_dtype, threads=threads).factor
            if root_w is not None:
                factor *= root_w[:, None]
            precondition = cg.LowRankPreconditioner(factor, alphas)
            rank_used = precondition.rank
        stages["preconditioner"] = time.perf_counter() - start
        if report is not None:
            report("preconditioner", seconds=stages["preconditioner"], rank=rank_used)

        def weighted(native: NativeOperator) -> Callable[[np.ndarray], np.ndarray]:
            def matmat(V: np.ndarray) -> np.ndarray:
                if root_w is None:
                    return native.matmat(np.asfortranarray(V), threads)
                return native.matmat(np.asfortranarray(V * root_w[:, None]), threads) * root_w[:, None]
            return matmat

        B = Y if root_w is None else Y * root_w[:, None]
        Z, info = cg.pcg(weighted(native), B, alphas, tol=tol, maxiter=maxiter, precondition=precondition,
                         progress=progress, fast_matmat=None if fast_op is None else weighted(fast_op.native))
    stages["solve"] = info["seconds"]
    if not info["converged"]:
        why = ("rounding does not allow a smaller residual for this system: lower tol's demand or raise alpha"
               if info["stalled"] else "raise max_iter or the preconditioner's rank")
        if info["broken_down"].size:
            why = f"CG broke down (a zero or non-finite curvature) on columns {info['broken_down'].tolist()}"
        if info["indefinite"] is not None:
            why += (f"; the kernel matrix plus alpha is not positive definite (CG met a curvature of "
                    f"{info['indefinite']:.3g}): use a positive semi-definite kernel or solver='cholesky'")
        warnings.warn(f"kernel ridge: conjugate gradients stopped after {info['iterations']} products by K with "
                      f"relative residual {info['residuals'].max():.2e} > tol={tol:g}; {why}",
                      ConvergenceWarning, stacklevel=3)
    dual = Z if root_w is None else Z * root_w[:, None]
    precision = {"fast_products": info["fast_products"], "fast_dropped": info["fast_dropped"]} if fast_op else {}
    return dual, {"iterations": info["iterations"], **precision, "residuals": info["residuals"],
                  "residuals_are_true": info["residuals_are_true"], "converged": info["converged"],
                  "stalled": info["stalled"], "indefinite": info["indefinite"],
                  "column_iterations": info["column_iterations"], "tol": tol,
                  "preconditioner_rank": rank_used, "preconditioner_dtype": np.dtype(factor_dtype).name,
                  "stages": stages}


# ------------------------------------------------------------------------------------------- nystrom

def solve_nystrom(X: np.ndarray | SolverSamples | ArrayRows, S: np.ndarray, kernel: Kernel, Y: np.ndarray,
                  alphas: np.ndarray, root_w: np.ndarray | None = None, *, rows: int) -> tuple[np.ndarray, dict]:
    """Falkon's restricted problem: β on m landmarks S minimising ‖W^½(K(X, S)β − y)‖² + α βᵀK(S, S)β, for X
    an array or a row source (rows.py).

    With T = K(S, S)^(-½) (truncated as in low_rank.nystrom_pca) and θ = T⁻¹β the normal equations are
    (Tᵀ Cᵀ W C T + αI) θ = Tᵀ Cᵀ W y: an m×m system from one streamed pass over X, solved for every
    alpha from one eigendecomposition. A singular system (alpha = 0) gives its null directions zero
    coefficients (the least-squares solution) with a SingularKernelWarning.
    """
    stages = {}
    start = time.perf_counter()
    T, rank = landmark_whitening(S, kernel)
    gram, _, cross = nystrom_moments(X, S, kernel, rows, targets=Y, weights=None if root_w is None else root_w**2)
    stages["moments"] = time.perf_counter() - start
    start = time.perf_counter()
    A = T.T @ gram @ T
    values, Q = np.linalg.eigh((A + A.T) / 2)
    rhs = Q.T @ (T.T @ cross)
    denom = values[:, None] + alphas[None, :]
    tiny = max(float(values[-1]), 0.0) * rank * np.finfo(np.float64).eps if rank else 0.0
    singular = bool((denom <= tiny).any())
    theta = Q @ np.where(denom > tiny, rhs / np.where(denom > tiny, denom, 1.0), 0.0)
    if singular:
        warnings.warn("kernel ridge: the Nyström system is singular (alpha = 0?); its null directions get zero "
                      "coefficients (the least-squares solution)", SingularKernelWarning, stacklevel=3)
    dual = T @ theta
    stages["solve"] = time.perf_counter() - start
    return dual, {"rank": rank, "singular": singular, "stages": stages}
