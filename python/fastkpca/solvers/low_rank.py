"""Low-rank kernel factors: landmark selection and the streamed Nyström algebra.

Nyström approximates a kernel matrix from m landmarks S: with C = K(X, S) and W = K(S, S),
``K ≈ C W⁺ Cᵀ``. Two ways to choose S:

- ``"uniform"``: m samples drawn uniformly without replacement (scikit-learn's Nystroem draws them this
  way, and so does :class:`fastkpca.Nystroem` for the same ``random_state``);
- ``"rpcholesky"``: randomly pivoted Cholesky (Chen, Epperly, Tropp and Webber, 2022). Each pivot is drawn
  with probability proportional to the diagonal of the residual kernel ``K − F Fᵀ``, so regions that
  the landmarks already explain are not sampled again and small clusters are not missed. Its factor F
  (``K ≈ F Fᵀ``, N×m) is the Nyström approximation on the chosen pivots.

:func:`rpcholesky` is the blocked, rejection-sampled form (Epperly, Tropp and Webber, 2024, "Embrace
rejection"): it proposes a block of pivots i.i.d. from the residual diagonal, evaluates their kernel
columns at once, and accepts each proposal with probability (its residual diagonal given the proposals
accepted before it in the block) / (its diagonal when proposed). Accepted pivots have exactly the
distribution of one-at-a-time RPCholesky, while the work is matrix-matrix products. Cost: N·(m + rejected)
kernel evaluations and O(N·m²) flops; memory: the N×m factor.

The factor takes N·m·8 bytes, which at N = 1,000,000 and m = 1,000 is 8 GB. :func:`select_landmarks`
therefore runs RPCholesky on a uniform subsample of at most :data:`RPCHOLESKY_FACTOR_BYTES` of factor
(33,554 rows at m = 1,000); on large N the landmarks are RPCholesky's choice among those rows.

:func:`nystrom_moments` and :func:`nystrom_project` stream over the rows of X in chunks (a row source,
rows.py: an array here, or an engine's samples on a cluster): they hold one chunk of C at a time, never
the N×m features.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from scipy import linalg as sla

from .. import _native, _threads
from .. import _validation as v
from ..kernels import Kernel
from ..kernels.precomputed import MatrixColumns
from .krylov.eigenvalues import check_psd_eigenvalues, column_signs
from .dense.eigh import symmetric_eigh
from .dense.threads import interruptible, one_blas_thread
from .dense.subnormals import flush_subnormals
from .rows import as_rows

if TYPE_CHECKING:
    from ..operators.samples import ColumnSource, SolverSamples
    from .rows import ArrayRows

__all__ = ["LowRankFactor", "rpcholesky", "rpcholesky_bytes", "factor_products_bytes", "team_size",
           "select_landmarks", "landmarks", "nystrom_moments", "nystrom_project", "NystromProjection", "nystrom_pca",
           "nystrom_kernel_pca", "LANDMARK_METHODS", "DEFAULT_N_LANDMARKS"]

LANDMARK_METHODS = ("uniform", "rpcholesky")
#: Landmarks of a Nyström fit when the estimator's n_landmarks is None (or all samples, if fewer).
DEFAULT_N_LANDMARKS = 1000
#: At most this much memory for RPCholesky's factor when choosing landmarks (also at most a quarter of the
#: memory limit): beyond it the landmarks are chosen among a uniform subsample of the rows.
RPCHOLESKY_FACTOR_BYTES = 256 * 2**20
#: Largest chunk K(X_chunk, S) the streamed passes hold (also at most an eighth of the memory limit).
STREAM_CHUNK_BYTES = 128 * 2**20
#: Landmark-kernel eigenvalues below this many ε·λ_max are treated as zero by the Nyström PCA.
WHITENING_RTOL = 16
#: Proposals per block of RPCholesky.
RPCHOLESKY_BLOCK = 128


@dataclass
class LowRankFactor:
    """``K ≈ F Fᵀ`` from :func:`rpcholesky`.

    Attributes
    ----------
    pivots : ndarray of int64, shape (r,)
        Rows of X chosen, in the order they were accepted.
    factor : ndarray of float64 (or float32, as asked), shape (n, r)
        F. ``F[pivots]`` is lower triangular and ``F Fᵀ`` equals the Nyström approximation
        ``K(X, S) K(S, S)⁻¹ K(S, X)`` on S = X[pivots].
    trace : float
        trace(K).
    residual_trace : float
        trace(K − F Fᵀ) (its diagonal, clipped at 0 against rounding): the approximation's error in the
        trace norm, since K − F Fᵀ is positive semidefinite.
    n_proposals : int
        Kernel columns evaluated (accepted and rejected proposals).
    exhausted : bool
        The residual vanished (K has rank r up to rounding) before the rank asked for was reached.
    """

    pivots: np.ndarray
    factor: np.ndarray
    trace: float
    residual_trace: float
    n_proposals: int
    exhausted: bool = False

    @property
    def rank(self) -> int:
        return self.pivots.shape[0]


def rpcholesky(X: np.ndarray | ColumnSource, rank: int, kernel: Kernel | None, *, random_state: Any = None,
               block_size: int = RPCHOLESKY_BLOCK, dtype: DTypeLike = np.float64, threads: int = 0) -> LowRankFactor:
    """Randomly pivoted Cholesky factor of the kernel matrix of X, of rank ``rank`` (fewer if exhausted).

    Parameters
    ----------
    X : ndarray of shape (n, d), or (n, n) with kernel=None, or a column source
        Samples as the kernel evaluates them (kernels.Kernel.check_samples); or, with ``kernel=None``, the
        kernel matrix itself (only its diagonal and the pivots' columns are read), or any source with ``n``,
        ``dtype``, ``diagonal()`` and ``columns(index, out)`` (Kernel.columns; an engine's samples give one).
    rank : int
        Pivots to choose, 1 <= rank <= n.
    kernel : Kernel or None
    random_state : int, RandomState or None
        Seeds the proposals and the acceptance draws: the same seed gives the same factor.
    block_size : int
        Proposals per block.
    dtype : float64 or float32
        Storage of the factor (float32: half the memory; the residual columns are still formed in float64, a
        block of rows at a time, so the n × rank factor never exists in float64).

    Returns
    -------
    LowRankFactor
        Stops early, with ``exhausted=True``, when the residual diagonal has vanished: every remaining
        direction is already explained and further pivots would only add rounding noise.
    """
    rng = v.check_random_state(random_state)
    source: Any
    if hasattr(X, "columns") and hasattr(X, "diagonal") and not hasattr(X, "shape"):  # a column source (an engine's)
        source = X
    else:
        source = MatrixColumns(X) if kernel is None else kernel.columns(X)
    n = source.n
    if not 1 <= rank <= n:
        raise ValueError(f"rank must be between 1 and the number of samples ({n}), got {rank}")
    diag = source.diagonal().astype(np.float64)
    np.maximum(diag, 0.0, out=diag)  # a non-PSD kernel (sigmoid) may have negative diagonal entries
    trace = float(diag.sum())
    factor = v.empty((n, rank), dtype, f"the {n}×{rank} randomly pivoted Cholesky factor")
    # A residual diagonal entry below this is rounding: the kernel columns carry ~eps relative error, and
    # subtracting r columns of F accumulates about r of them.
    eps = np.finfo(source.dtype).eps
    tiny = max(rank, 16) * eps * max(float(diag.max(initial=0.0)), np.finfo(np.float64).tiny)
    # Buffers reused by every block (fresh memory is expensive to touch); flat, so that a narrower last
    # block is still a C-contiguous n × b view. With G[:, keep]'s copy, the working memory is three n × b
    # float64 arrays (rpcholesky_bytes).
    width = min(block_size, rank)
    columns_buf = np.empty(n * width, source.dtype)
    residual_buf = columns_buf if source.dtype == np.float64 else np.empty(n * width)
    update_buf = np.empty(n * width)
    r, proposals, exhausted, pivots = _rpcholesky_blocks(source, rank, rng, block_size, factor, diag, tiny, columns_buf,
                                                         residual_buf, update_buf, threads=threads)
    piv = np.concatenate(pivots) if pivots else np.empty(0, dtype=np.int64)
    if r < rank:
        factor = factor[:, :r].copy()
    return LowRankFactor(piv.astype(np.int64), factor, trace, float(diag.sum()), proposals, exhausted)


def _rpcholesky_blocks(source: ColumnSource, rank: int, rng: np.random.RandomState, block_size: int,
                       factor: np.ndarray, diag: np.ndarray, tiny: float, columns_buf: np.ndarray,
                       residual_buf: np.ndarray, update_buf: np.ndarray,
                       threads: int = 0) -> tuple[int, int, bool, list[np.ndarray]]:
    """RPCholesky's blocks (see :func:`rpcholesky`): fills ``factor`` and updates ``diag`` in place; returns
    (rank reached, proposals made, whether the residual vanished, the accepted pivots of each block).

    One thread pool for the loop: the products by the tall factor (the residual update, the accepted columns) run
    on the core's OpenMP team (tall_products.hpp), as a native kernel's column passes do, and the b × b algebra on
    one BLAS thread. With BLAS's threads on the products and the small algebra, each pool's idle threads spun on the
    cores the other needed next (slower on two threads than on one). A kernel evaluated by NumPy keeps the caller's
    BLAS threads for its columns."""
    n = source.n
    pivots: list[np.ndarray] = []
    r = proposals = idle_blocks = 0
    exhausted = False
    while r < rank:
        total = float(diag.sum())
        if not total > tiny * n or idle_blocks >= 8:
            exhausted = True
            break
        b = min(block_size, rank - r)
        S = rng.choice(n, size=b, replace=True, p=diag / total)
        u = rng.random_sample(b)
        proposals += b
        columns = source.columns(S, columns_buf[:n * b].reshape(n, b))  # K(X, X_S)
        G = residual_buf[:n * b].reshape(n, b)
        if residual_buf is not columns_buf:
            G[...] = columns
        if r:  # the residual columns: K(X, X_S) − F F[S]ᵀ
            G -= factor_product(factor, factor[S, :r].T.astype(np.float64), update_buf[:n * b].reshape(n, b), columns=r,
                                team=True, threads=threads)
        # Residual columns of the accepted pivots = F_new · L_kkᵀ with L_kk the Cholesky factor of their residual
        # block: F_new = G[:, keep] · L_kk⁻ᵀ (the small inverse by a triangular solve, then one product on the
        # team, faster than a triangular solve with n right-hand sides).
        with one_blas_thread():
            keep, L = _accept(G[S], diag[S], u, tiny)
            L_inv = sla.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
        if not keep:
            idle_blocks += 1
            continue
        idle_blocks = 0
        a = len(keep)  # G.take: C-ordered, as the core's product reads it (G[:, keep] would be Fortran-ordered)
        F_new = flush_subnormals(factor_product(G.take(keep, axis=1), np.ascontiguousarray(L_inv.T),
                                                update_buf[:n * a].reshape(n, a), team=True, threads=threads))
        factor[:, r:r + a] = F_new
        diag -= np.einsum("ij,ij->i", F_new, F_new)
        np.maximum(diag, 0.0, out=diag)
        chosen = S[keep]
        diag[chosen] = 0.0
        pivots.append(chosen)
        r += a
    return r, proposals, exhausted, pivots


def rpcholesky_bytes(n: int, block_size: int, source_itemsize: int = 8) -> int:
    """RPCholesky's working memory besides the factor: three n × b float64 arrays (the proposals' columns,
    their residual update, the accepted columns), and the columns as the source gives them when not float64."""
    return n * block_size * (3 * 8 + (source_itemsize if source_itemsize != 8 else 0))


#: Rows of a float32 factor converted to float64 (or taken in float32) at a time.
CHUNK_ROWS = 4096


def _on_the_team(F: np.ndarray, other: np.ndarray) -> bool:
    """Whether the core can multiply the tall factor F with ``other`` (the native products of
    cpp/include/fastkpca/tall_products.hpp: on the core's OpenMP team, beside its kernel passes, and the same bits on
    any number of threads): a row-major float32 or float64 F, and a float64 other operand. The callers ask for it
    (``team``) where their loop alternates the products with the core's passes (the Gaussian processes' iterative
    solvers, for blocks of a few columns or more; RPCholesky, always), so that BLAS is not a second pool beside the
    team; for a single vector alone BLAS's own is faster (Fᵀv: 1.4 ms against 1.8 at 8,000 × 500, one thread), and
    for FᵀF (its syrk: half the flops)."""
    return (F.ndim == 2 and F.flags.c_contiguous and F.dtype in (np.float32, np.float64) and other.dtype == np.float64
            and other.ndim in (1, 2))


def factor_products_bytes(rank: int, itemsize: int, threads: int = 0) -> int:
    """What the native factor products (:func:`factor_product`, :func:`factor_t_product`, :func:`factor_gram` with
    the team) hold beside their operands for a factor of ``rank`` columns stored in ``itemsize`` bytes: each
    thread's scratch (cpp/include/fastkpca/tall_products.hpp: ``tall_scratch_bytes``) times the team's threads
    (``threads``; 0: the default team, the most it may start)."""
    return team_size(threads) * int(_native.core.tall_scratch_bytes(rank, itemsize))


def team_size(threads: int = 0) -> int:
    """The threads of the core's team for a call given ``threads`` (0: the default team, OMP_NUM_THREADS or
    threadpoolctl's limit)."""
    return threads if threads > 0 else int(_native.core.omp_max_threads())


def _team_threads(threads: int, flops: float) -> int:
    """The native products' threads: ``threads`` (the fit's ``n_jobs``; 0: the default team, or one thread where
    the work does not pay for waking it)."""
    return _threads.pass_threads(threads, flops * _threads.FLOP_SECONDS)


def factor_t_product(F: np.ndarray, V: np.ndarray, *, float32_products: bool = False, team: bool = False,
                     threads: int = 0) -> np.ndarray:
    """Fᵀ V in float64 for an n × r factor F: with ``team``, by the core on its team (:func:`_on_the_team`); else by
    NumPy, a float32 F a block of rows at a time (a float64 copy of all of it would be n × r × 8 bytes), each block
    converted to float64, or with ``float32_products`` multiplied in float32 against V rounded to float32 (no
    conversion of the blocks, and float32 arithmetic; the blocks' sums still in float64)."""
    if team and not (float32_products and F.dtype != np.float64) and _on_the_team(F, V):
        block = np.ascontiguousarray(V.reshape(V.shape[0], -1))
        out = np.empty((F.shape[1], block.shape[1]))
        _native.core.factor_t_product_into(F, block, out, _team_threads(threads, 2.0 * F.size * block.shape[1]))
        return out if V.ndim == 2 else out[:, 0]
    if F.dtype == np.float64:
        return F.T @ V
    W = V.astype(np.float32) if float32_products else V
    out = np.zeros((F.shape[1], V.shape[1]))
    for s in range(0, F.shape[0], CHUNK_ROWS):
        block = F[s:s + CHUNK_ROWS]
        out += (block if float32_products else block.astype(np.float64)).T @ W[s:s + CHUNK_ROWS]
    return out


def factor_product(F: np.ndarray, C: np.ndarray, out: np.ndarray | None = None, *,
                   columns: int | None = None, team: bool = False, threads: int = 0) -> np.ndarray:
    """F C in float64 (into ``out`` when given), or F's first ``columns`` columns times C (RPCholesky's factor
    while it grows): with ``team``, by the core on its team (:func:`_on_the_team`); else by NumPy, a float32 F
    converted a block of rows at a time."""
    used = F.shape[1] if columns is None else columns
    if C.shape[0] != used or used > F.shape[1]:
        raise ValueError(f"C must have {used} rows (F's columns used, of {F.shape[1]}), got {C.shape[0]}")
    native = team and _on_the_team(F, C) and C.ndim == 2 and (out is None or (out.flags.c_contiguous
                                                                               and out.dtype == np.float64))
    if native:  # the core reads F's first `used` columns in place
        result = np.empty((F.shape[0], C.shape[1])) if out is None else out
        _native.core.factor_product_into(F, np.ascontiguousarray(C), result,
                                         _team_threads(threads, 2.0 * F.shape[0] * used * C.shape[1]))
        return result
    F = F[:, :used]
    if F.dtype == np.float64:
        return np.matmul(F, C, out=out)
    out = np.empty((F.shape[0], C.shape[1])) if out is None else out
    for s in range(0, F.shape[0], CHUNK_ROWS):
        np.matmul(F[s:s + CHUNK_ROWS].astype(np.float64), C, out=out[s:s + CHUNK_ROWS])
    return out


def factor_gram(F: np.ndarray, d: np.ndarray, threads: int = 0) -> np.ndarray:
    """Fᵀ diag(d) F in float64 (r × r, exactly symmetric) for an n × r factor F: by the core on its team
    (:func:`_on_the_team`, ``threads`` as :func:`_team_threads`); else a block of rows at a time, each converted to
    float64."""
    d = np.ascontiguousarray(d, dtype=np.float64)
    if d.shape != (F.shape[0],):
        raise ValueError(f"d must have one entry per row of F ({F.shape[0]}), got shape {d.shape}")
    r = F.shape[1]
    out = np.empty((r, r))
    if _on_the_team(F, d):
        _native.core.factor_gram_into(F, d, out, _team_threads(threads, float(F.size) * r))
        return out
    out[...] = 0.0
    for s in range(0, F.shape[0], CHUNK_ROWS):
        block = F[s:s + CHUNK_ROWS].astype(np.float64, copy=False)
        out += interruptible(np.matmul, block.T, block * d[s:s + CHUNK_ROWS, None], flops=2.0 * block.shape[0] * r * r)
    return out


def _accept(C: np.ndarray, proposed_diag: np.ndarray, u: np.ndarray, tiny: float) -> tuple[list[int], np.ndarray]:
    """Rejection step of blocked RPCholesky on the proposals' residual block C (b × b).

    Proposal j is accepted with probability res_j / d_j, where res_j is its residual diagonal after the
    proposals accepted before it (a Cholesky step on C) and d_j its diagonal when it was drawn. A repeat of
    an accepted proposal has res_j = 0 and is always rejected. Returns (accepted positions, L) with L the
    lower-triangular Cholesky factor of C restricted to the accepted positions.
    """
    b = C.shape[0]
    cols = np.zeros((b, b))
    keep: list[int] = []
    for j in range(b):
        c = C[:, j] - cols[:, :len(keep)] @ cols[j, :len(keep)]
        res = c[j]
        if res <= tiny or u[j] * proposed_diag[j] >= res:
            continue
        cols[:, len(keep)] = c / np.sqrt(res)
        keep.append(j)
    return keep, cols[keep][:, :len(keep)]


def rpcholesky_rows(n: int, m: int, memory_limit: int) -> int:
    """Rows RPCholesky chooses among for m landmarks: all n when the factor fits in
    RPCHOLESKY_FACTOR_BYTES (and a quarter of the limit), else a uniform subsample (at least 4·m rows)."""
    budget = min(RPCHOLESKY_FACTOR_BYTES, memory_limit // 4)
    return int(min(n, max(4 * m, budget // (8 * m))))


def select_landmarks(X: np.ndarray | SolverSamples | ArrayRows, m: int, method: str, kernel: Kernel, *,
                     random_state: Any = None, memory_limit: int) -> tuple[np.ndarray, dict]:
    """Indices of m landmark rows of X (an array or a row source), and a dict describing the choice.

    ``"uniform"`` takes the first m of a random permutation (scikit-learn's draw for the same seed).
    ``"rpcholesky"`` runs :func:`rpcholesky` on all rows, or on a uniform subsample of
    :func:`rpcholesky_rows` rows; if the kernel has rank below m (the residual vanishes first), the
    remaining landmarks are drawn uniformly from the rows not chosen, and the info says so.
    """
    start = time.perf_counter()
    rng = v.check_random_state(random_state)
    n = X.shape[0]
    if method == "uniform":
        return rng.permutation(n)[:m].astype(np.int64), {"method": "uniform", "seconds": time.perf_counter() - start}
    rows = rpcholesky_rows(n, m, memory_limit)
    subset = np.sort(rng.choice(n, size=rows, replace=False)) if rows < n else None
    X = as_rows(X)
    # The rows searched, here, in the samples' format (sparse rows stay sparse for a native kernel).
    Xs = kernel.check_samples(X.rows(np.arange(n) if subset is None else subset), "X")
    fac = rpcholesky(Xs, m, kernel, random_state=rng, threads=kernel.threads)
    chosen = fac.pivots if subset is None else subset[fac.pivots]
    filled = m - chosen.shape[0]
    if filled:
        rest = np.setdiff1d(np.arange(n), chosen, assume_unique=False)
        chosen = np.concatenate([chosen, rng.choice(rest, size=filled, replace=False)])
    info = {"method": "rpcholesky", "rows_searched": rows, "proposals": fac.n_proposals,
            "residual_trace_fraction": fac.residual_trace / fac.trace if fac.trace > 0 else 0.0,
            "filled_uniformly": int(filled), "seconds": time.perf_counter() - start}
    return chosen.astype(np.int64), info


def landmarks(X: np.ndarray | SolverSamples | ArrayRows, spec: str | ArrayLike, m: int | None, kernel: Kernel, *,
              random_state: Any = None, memory_limit: int, name: str) -> tuple[Any, np.ndarray | None, dict]:
    """The landmarks an estimator's ``landmarks=`` argument asks for: (points S, C-contiguous in X's dtype;
    their rows of X, or None for given points; how they were chosen). X is an array or a row source.

    ``spec`` is a method of :data:`LANDMARK_METHODS` (then ``m`` of them, at most the number of samples; None:
    DEFAULT_N_LANDMARKS or all the samples if fewer; ``name`` is the estimator's parameter for m, for the error)
    or an array of points of X's width.
    """
    if m is None:
        m = min(DEFAULT_N_LANDMARKS, X.shape[0])
    if not isinstance(spec, str):
        return v.check_landmarks(spec, X.shape[1], X.dtype), None, {"method": "given", "seconds": 0.0}
    if m > X.shape[0]:
        raise ValueError(f"{name}={m} is larger than the number of samples ({X.shape[0]})")
    index, info = select_landmarks(X, m, spec, kernel, random_state=random_state, memory_limit=memory_limit)
    return kernel.check_samples(as_rows(X).rows(index), "X"), index, info  # in the samples' format


def stream_rows(n: int, m: int, itemsize: int, memory_limit: int, *, extra_bytes: int = 0, what: str) -> int:
    """Rows per chunk of a streamed Nyström pass, after checking that the chunk, the m×m algebra and
    ``extra_bytes`` fit the memory limit (MemoryError naming ``what`` otherwise)."""
    rows = chunk_rows(m, itemsize, memory_limit)
    v.check_within(min(rows, n) * m * itemsize + 6 * m * m * 8 + extra_bytes, memory_limit, what)
    return rows


def chunk_rows(m: int, itemsize: int, memory_limit: int) -> int:
    """Rows of X per chunk of K(X_chunk, S) in the streamed passes."""
    budget = min(STREAM_CHUNK_BYTES, memory_limit // 8)
    return int(max(64, budget // max(1, m * itemsize)))


class _Moments:
    """One chunk's ``(CᵀWC, CᵀW1, CᵀWY or None)``, C = K(chunk, S), W = diag(weights): the step of
    :func:`nystrom_moments`. It keeps its buffer for C from chunk to chunk (fresh memory is expensive to
    touch) but does not pickle it (a cluster's tasks each make their own)."""

    _buf: np.ndarray | None

    def __init__(self, S: np.ndarray, kernel: Kernel) -> None:
        self.S, self.kernel, self._buf = S, kernel, None

    def __getstate__(self) -> dict[str, Any]:
        return {"S": self.S, "kernel": self.kernel, "_buf": None}

    def on_threads(self, threads: int) -> _Moments:
        return _Moments(self.S, self.kernel.on_threads(threads))

    def __call__(self, X: Any, weights: np.ndarray | None = None,
                 targets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        X = self.kernel.new_rows(X, self.S, self.S.dtype)
        m = self.S.shape[0]
        if self._buf is None or self._buf.shape[0] < X.shape[0] or self._buf.dtype != X.dtype:
            self._buf = np.empty((X.shape[0], m), X.dtype)
        C = self.kernel.cross(X, self.S, out=self._buf[:X.shape[0]])
        root = None if weights is None else np.sqrt(weights).astype(X.dtype)
        if root is not None:
            C *= root[:, None]  # W^½ C: its Gram is Cᵀ W C
        # NumPy recognises the transpose product and runs BLAS syrk; a second per chunk at m = 3,000, so on a
        # worker thread, where Ctrl-C does not wait for it
        gram = interruptible(np.matmul, C.T, C, flops=float(C.shape[0]) * m * m)
        sums = C.sum(axis=0, dtype=np.float64) if root is None else root @ C
        cross = None
        if targets is not None:
            cross = interruptible(np.matmul, C.T, targets if root is None else targets * root[:, None],
                                  flops=2.0 * C.size * (targets.size // max(1, len(targets))))
        return gram.astype(np.float64, copy=False), sums.astype(np.float64, copy=False), \
            None if cross is None else cross.astype(np.float64, copy=False)


def nystrom_moments(X: np.ndarray | SolverSamples | ArrayRows, S: np.ndarray, kernel: Kernel, rows: int, *,
                    weights: np.ndarray | None = None, targets: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``(CᵀWC, CᵀW1)`` in float64 for C = K(X, S) and W = diag(weights) (default I), accumulated over row
    chunks of X (an array or a row source) in a fixed order; with ``targets`` Y (n × t) also ``CᵀWY``.

    One pass: N·m kernel evaluations and N·m² flops (a symmetric rank-k update per chunk), O(m² + rows·m)
    memory.
    """
    gram, sums, cross = as_rows(X).reduce(_Moments(S, kernel), row_args=(weights, targets), rows=rows)
    return (gram, sums) if targets is None else (gram, sums, cross)


class NystromProjection:
    """``x ↦ K(x, S)·P − offset``, the cross kernel multiplied into P tile by tile and never stored: the
    scores of Nyström kernel PCA (training rows and new ones alike). Evaluated in S's dtype; the result in
    float64, or ``out_dtype``. Picklable."""

    def __init__(self, S: np.ndarray, kernel: Kernel, P: np.ndarray, offset: np.ndarray | None, *,
                 out_dtype: DTypeLike | None = None) -> None:
        self.S, self.kernel, self.P, self.offset, self.out_dtype = S, kernel, P, offset, out_dtype

    @property
    def width(self) -> int:
        return self.P.shape[1]

    def on_threads(self, threads: int) -> NystromProjection:
        """The same map evaluated on ``threads`` threads (an engine's tasks share their worker's cores)."""
        return NystromProjection(self.S, self.kernel.on_threads(threads), self.P, self.offset, out_dtype=self.out_dtype)

    def __call__(self, X: Any) -> np.ndarray:
        out = self.kernel.product(self.kernel.new_rows(X, self.S, self.S.dtype), self.S, self.P)
        if self.offset is not None:
            out -= self.offset
        return out if self.out_dtype is None else out.astype(self.out_dtype, copy=False)


def nystrom_project(X: np.ndarray | SolverSamples | ArrayRows, S: np.ndarray, kernel: Kernel, P: np.ndarray,
                    offset: np.ndarray | None, rows: int, *, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """``K(X, S) @ P − offset`` in float64 (or ``out_dtype``) for X an array or a row source, ``rows`` rows at a
    time."""
    return as_rows(X).map(NystromProjection(S, kernel, P, offset, out_dtype=out_dtype), rows=rows)


def landmark_whitening(S: np.ndarray, kernel: Kernel) -> tuple[np.ndarray, int]:
    """:func:`whitening` of W = K(S, S), dropping eigenvalues below WHITENING_RTOL·ε·λ_max (ε of S's dtype;
    see :func:`nystrom_pca` for why)."""
    W = kernel.cross(S).astype(np.float64, copy=False)
    return whitening(W, WHITENING_RTOL * float(np.finfo(S.dtype).eps))


def whitening(W: np.ndarray, rtol: float) -> tuple[np.ndarray, int]:
    """T with ``T Tᵀ`` the pseudo-inverse of the PSD landmark kernel W, dropping the eigen-directions with
    eigenvalue at most ``rtol·λ_max`` (and the negative ones rounding leaves): Φ = K(X, S)·T are the
    Nyström features (``Φ Φᵀ = C W⁺ Cᵀ``). Returns (T, rank)."""
    values, vectors = symmetric_eigh(W)
    top = float(values[-1]) if values.size else 0.0
    keep = values > rtol * top if top > 0 else np.zeros(values.shape, bool)
    return vectors[:, keep] / np.sqrt(values[keep]), int(keep.sum())


@dataclass
class NystromPCA:
    """Top-k kernel PCA of the Nyström approximation ``K̃ = Φ Φᵀ`` (Φ = K(X, S)·T, see :func:`whitening`),
    centered in feature space: with μ the mean of Φ's rows, ``H K̃ H = Φ_c Φ_cᵀ`` with Φ_c = Φ − 1μᵀ, whose
    nonzero eigenvalues are those of the r×r matrix ``Φ_cᵀ Φ_c = Tᵀ(CᵀC − s sᵀ/N)T`` (s = Cᵀ1). With its
    eigenvectors Q, a point x scores ``(φ(x) − μ)ᵀ Q = K(x, S)·P − offset`` where P = T Q and
    offset = μᵀ Q; on the training data these are ``Φ_c Q``, i.e. the eigenvectors of H K̃ H times √λ.
    """

    eigenvalues: np.ndarray   # (k,) descending
    projection: np.ndarray    # P, (m, k)
    offset: np.ndarray        # (k,)
    total_variance: float     # trace(H K̃ H)
    rank: int                 # r, the directions of W kept
    seconds: dict


def nystrom_pca(X: np.ndarray | SolverSamples | ArrayRows, S: np.ndarray, kernel: Kernel, k: int,
                rows: int) -> NystromPCA:
    """Eigenpairs of the centered Nyström kernel on landmarks S from one streamed pass over X.

    W's eigen-directions below 16·ε·λ_max are dropped (ε of X's dtype): there W's eigenvalues are rounding
    noise of the kernel entries, and inverting them would amplify that noise (in float32 a threshold of
    ε/8 gives eigenvalues wrong by 100%). With it the eigenvalues are those of explicitly formed features
    (same threshold), also for landmark kernels whose condition number reaches 1/ε.
    """
    seconds = {}
    start = time.perf_counter()
    T, rank = landmark_whitening(S, kernel)
    seconds["landmark_kernel"] = time.perf_counter() - start
    start = time.perf_counter()
    gram, sums = nystrom_moments(X, S, kernel, rows)
    seconds["moments"] = time.perf_counter() - start
    start = time.perf_counter()
    n = X.shape[0]
    mean = T.T @ sums / n
    A = T.T @ gram @ T - n * np.outer(mean, mean)
    A = (A + A.T) / 2
    k_eff = min(k, rank)
    values, Q = symmetric_eigh(A, subset_by_index=(rank - k_eff, rank - 1)) if rank else \
        (np.zeros(0), np.zeros((0, 0)))
    values, Q = values[::-1], Q[:, ::-1]
    P = T @ Q
    seconds["eigen"] = time.perf_counter() - start
    return NystromPCA(values, P, mean @ Q, float(np.trace(A)), rank, seconds)


@dataclass
class NystromKernelPCA:
    """The fitted state of Nyström kernel PCA (:func:`nystrom_kernel_pca`)."""

    eigenvalues: np.ndarray    # (k,) descending, as the centered Nyström kernel's
    eigenvectors: np.ndarray   # (n, k) the training scores over √λ (0 where λ = 0)
    projection: NystromProjection  # x ↦ its scores
    total_variance: float
    rank: int
    seconds: dict


def nystrom_kernel_pca(X: np.ndarray | SolverSamples | ArrayRows, S: np.ndarray, kernel: Kernel, k: int, rows: int,
                       *, remove_zero: bool) -> NystromKernelPCA:
    """Kernel PCA of the Nyström approximation on landmarks S with scikit-learn's conventions: k eigenpairs
    (zero-padded when the landmark kernel has rank below k), the PSD check, each eigenvector signed so its
    largest entry is positive (the sign carried over to the projection), zero components dropped when
    ``remove_zero``. Two streamed passes over X (an array or a row source): the moments, then the
    scores."""
    pca = nystrom_pca(X, S, kernel, k, rows)
    start = time.perf_counter()
    m, found = S.shape[0], pca.eigenvalues.shape[0]
    values, P, offset = np.zeros(k), np.zeros((m, k)), np.zeros(k)
    values[:found], P[:, :found], offset[:found] = pca.eigenvalues, pca.projection, pca.offset
    values = check_psd_eigenvalues(values)
    scores = as_rows(X).map(NystromProjection(S, kernel, P, offset), rows=rows)
    signs = column_signs(scores)
    scores *= signs
    P *= signs
    offset *= signs
    if remove_zero:
        keep = values > 0
        values, scores, P, offset = values[keep], scores[:, keep], P[:, keep], offset[keep]
    root = np.sqrt(values)
    scores /= np.where(root > 0, root, 1)
    seconds = dict(pca.seconds, scores=time.perf_counter() - start)
    return NystromKernelPCA(values.astype(S.dtype), scores.astype(S.dtype, copy=False),
                            NystromProjection(S, kernel, P, offset, out_dtype=S.dtype), pca.total_variance, pca.rank,
                            seconds)

