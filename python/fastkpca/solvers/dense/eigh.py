"""The symmetric eigendecomposition that Ctrl-C can stop: LAPACK's ``syevr`` (the driver of SciPy's ``eigh``)
written as its three stages, each a loop of BLAS and LAPACK calls of bounded work made with the GIL released
(calls.py). Between two calls Python runs its signal handlers: KeyboardInterrupt leaves the loop within
one call (but for stage 2 below).

For the lower triangle of a Fortran-ordered n × n array A (Golub and Van Loan, "Matrix Computations", 4th ed.,
§8.3.1 and §5.1.7; LAPACK's ``sytrd``, ``latrd``, ``stemr``, ``stebz``/``stein`` and ``ormtr``):

1. Householder tridiagonalisation QᵀAQ = T (``sytrd``): panels of PANEL columns. A panel's reflectors
   v_c and the matrix W of their effect on the trailing matrix come from ``latrd``; then the trailing matrix
   loses V Wᵀ + W Vᵀ (``syr2k`` on the diagonal blocks and ``gemm`` below them, by column chunks). ``latrd``
   reads the whole trailing matrix once per column (a ``symv``, bound by memory bandwidth): where one panel's
   reads exceed PANEL_POLL_BYTES, its columns go one at a time through the BLAS calls ``latrd`` itself makes
   (written out below), so that Ctrl-C is answered between columns; smaller panels are one ``latrd`` call.
2. T's eigenpairs: all of them by MRRR (``stemr``), a subset by bisection and inverse iteration (``stebz``,
   ``stein``), as ``syevr`` chooses (and bisection for all when MRRR fails, as it does). One LAPACK call,
   which cannot be cut: MRRR's representation tree spans the whole spectrum, and vectors from separate
   calls on parts of it need not be orthogonal. Its work is O(n) a pair, O(n²) for all, done at scalar speed,
   so a long one runs on a worker thread (threads.interruptible):
   Ctrl-C reaches the caller at once, and that call alone runs on to its end in the background, holding its
   n × k vectors until then.
3. The back-transformation Z ← Q Z (``ormtr``, through ``ormqr``'s blocked algorithm): the n − 1 reflectors
   in blocks of REFLECTOR_BLOCK from the last, each block's triangular factor once (``larft``), applied to
   column chunks of Z (``larfb``).

The flops are ``syevr``'s: 4n³/3 for the reduction (half of them matrix-vector products), 2n²k to transform k
vectors back; only the order of calls differs. A matrix whose largest entry is outside the range where the
reduction neither overflows nor underflows is scaled first, as ``syevr`` does.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .calls import Matrix, character, integer, pointer, precision, routine
from .threads import interruptible, small_algebra, small_algebra_threads

__all__ = ["on_one_blas_thread", "symmetric_eigh", "symmetric_eigenpairs", "PANEL", "PANEL_POLL_BYTES",
           "REFLECTOR_BLOCK", "POLL_FLOPS", "WHOLE_ROWS"]

#: Columns a panel of the reduction (LAPACK's block size for ``sytrd``; its crossover to the unblocked
#: reduction of the last columns is the same).
PANEL = 32
#: The most bytes of the trailing matrix one ``latrd`` call may read (PANEL reads of its lower triangle); a
#: panel above it is reduced column by column. A few tenths of a second of memory bandwidth.
PANEL_POLL_BYTES = 2e9
#: Reflectors a block of the back-transformation (``ormqr``'s largest block).
REFLECTOR_BLOCK = 64
#: The most flops of one BLAS-3 call; between calls Ctrl-C is answered (factorisations.POLL_FLOPS' reasoning).
POLL_FLOPS = 1.6e10
#: Columns per block of :func:`symmetric_eigh`'s copy of its matrix.
COPY_COLUMNS = 256
#: Matrices of at most this many rows go to ``syevr`` in one call: a fraction of a second.
WHOLE_ROWS = 512
#: syevr's flops per n³ for all pairs, what the one-thread rule weighs for a whole call.
_WHOLE_FLOPS_PER_CUBE = 4.0 / 3


def on_one_blas_thread(n: int) -> bool:
    """Whether :func:`symmetric_eigh` of an n × n matrix runs on one BLAS thread: LAPACK's ``syevr`` whole (at most
    WHOLE_ROWS rows) with work small enough for one thread (threads.small_algebra); every BLAS thread
    otherwise (the cost model reads this: solvers/choice.py)."""
    return n <= WHOLE_ROWS and small_algebra(_WHOLE_FLOPS_PER_CUBE * n**3)
#: Flops a tridiagonal eigenpair costs per row, about (MRRR's and inverse iteration's work, scalar code): the
#: stage runs on a worker thread when it is long (see the module).
TRIDIAGONAL_FLOPS = 200


def symmetric_eigh(A: np.ndarray, subset_by_index: tuple[int, int] | None = None, *,
                   overwrite_a: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and eigenvectors of the symmetric A (float32 or float64), those with indices
    ``subset_by_index`` = (lo, hi) inclusive, or all; such that Ctrl-C stops it.

    LAPACK's ``syevr`` (the driver of SciPy's ``eigh``: tridiagonal reduction, MRRR or bisection and inverse
    iteration, back-transformation), its stages written as calls of bounded work with the GIL released (see
    the module): a KeyboardInterrupt leaves it between two calls. Like SciPy's subset
    driver, it may return fewer pairs than asked for. ``overwrite_a``: A's memory may be used as the
    workspace."""
    n = A.shape[0]
    dtype = np.float32 if A.dtype == np.float32 else np.float64
    if overwrite_a and A.dtype == dtype and A.flags.writeable and (A.flags.f_contiguous or A.flags.c_contiguous):
        work = A if A.flags.f_contiguous else A.T  # symmetric: its transpose is the same matrix
    else:  # by column blocks: Ctrl-C is answered between them (a transposing copy of GBs takes seconds)
        work = np.empty((n, n), dtype=dtype, order="F")
        for j in range(0, n, COPY_COLUMNS):
            work[:, j:j + COPY_COLUMNS] = A[:, j:j + COPY_COLUMNS]
    return symmetric_eigenpairs(work, subset_by_index)


def symmetric_eigenpairs(A: np.ndarray, subset_by_index: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """Ascending eigenvalues of the symmetric A (the lower triangle of a Fortran-ordered float32 or float64
    array, destroyed) and their vectors, those with indices ``subset_by_index`` = (lo, hi) inclusive, or all;
    such that Ctrl-C stops it (see the module). Like SciPy's subset driver, it may return fewer pairs than asked
    for (when inverse iteration fails for some)."""
    n = A.shape[0]
    lo, hi = subset_by_index if subset_by_index is not None else (0, n - 1)
    if n == 0 or hi < lo:
        return np.empty(0, A.dtype), np.empty((n, 0), A.dtype)
    M = Matrix(A, dtypes=(np.float32, np.float64))
    if n <= WHOLE_ROWS:  # LAPACK's syevr whole, on one BLAS thread where on_one_blas_thread says so
        with small_algebra_threads(_WHOLE_FLOPS_PER_CUBE * n**3):
            return _syevr(M, subset_by_index)
    scale = _scale_into_range(M)
    d, e, tau = _tridiagonalise(M)
    wanted = hi - lo + 1
    if (lo, hi) == (0, n - 1):
        values, Z = interruptible(_tridiagonal_eigenpairs_mrrr, d, e, flops=TRIDIAGONAL_FLOPS * n * wanted)
    else:
        values, Z = None, None
    if Z is None:  # a subset, or MRRR failed
        values, Z = interruptible(_tridiagonal_eigenpairs_bisection, d, e, lo, hi,
                                  flops=TRIDIAGONAL_FLOPS * n * wanted)
    _apply_reflectors(M, tau, Z)
    if scale != 1.0:
        values /= scale
    return values, Z


def _syevr(M: Matrix, subset_by_index: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK's ``syevr`` in one call."""
    A, n = M.array, M.n
    lo, hi = subset_by_index if subset_by_index is not None else (0, n - 1)
    values = np.empty(n, A.dtype)
    vectors = np.empty((n, hi - lo + 1), A.dtype, order="F")
    support = np.empty(2 * (hi - lo + 1), np.int32)
    found, info = ctypes.c_int(0), ctypes.c_int(0)
    zero = M.scalar(0.0)  # the value range and the absolute tolerance (LAPACK's default): unused

    def run(work: np.ndarray, iwork: np.ndarray, query: bool) -> None:
        M.routine("syevr")(character("V"), character("A" if subset_by_index is None else "I"), character("L"),
                           integer(n), M.at(0, 0), M.ld, zero, zero, integer(lo + 1), integer(hi + 1), zero,
                           ctypes.byref(found), pointer(values), pointer(vectors), integer(n), pointer(support),
                           pointer(work), integer(-1 if query else work.shape[0]), pointer(iwork),
                           integer(-1 if query else iwork.shape[0]), ctypes.byref(info))

    work, iwork = np.empty(1, A.dtype), np.empty(1, np.int32)
    run(work, iwork, query=True)  # the workspace sizes
    run(np.empty(int(work[0]), A.dtype), np.empty(int(iwork[0]), np.int32), query=False)
    if info.value != 0:
        raise np.linalg.LinAlgError(f"syevr: info {info.value} (an internal error of the eigensolver)")
    return values[:found.value].copy(), vectors[:, :found.value]


def _scale_into_range(M: Matrix) -> float:
    """σ such that σA's largest entry lies in [√(tiny/ε), min(√huge, 1/√√tiny)] (``syevr``'s range, where the
    reduction's squares neither overflow nor lose everything to underflow); A is scaled in place by column
    chunks. 1.0 for the matrices met in practice: nothing done."""
    A, n = M.array, M.n
    work = np.empty(1, A.dtype)  # unused by the largest entry's norm
    largest = float(M.routine("lansy", M.real)(character("M"), character("L"), integer(n), M.at(0, 0), M.ld,
                                               pointer(work)))
    info = np.finfo(A.dtype)
    tiny, eps = float(info.smallest_normal), float(info.eps)
    low, high = np.sqrt(tiny / eps), min(np.sqrt(1.0 / tiny), 1.0 / np.sqrt(np.sqrt(tiny)))
    if largest == 0.0 or low <= largest <= high:
        return 1.0
    scale = (low if largest < low else high) / largest
    columns = max(1, int(POLL_FLOPS // (4.0 * n)))
    for j in range(0, n, columns):
        A[j:, j:j + columns] *= A.dtype.type(scale)
    return scale


def _tridiagonalise(M: Matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sytrd`` (lower) in place: T's diagonal d and subdiagonal e, and the reflectors' scalars τ (their vectors
    stay below A's subdiagonal)."""
    A, n = M.array, M.n
    d, e, tau = np.zeros(n, A.dtype), np.zeros(n, A.dtype), np.zeros(n, A.dtype)
    W = np.empty((n, PANEL), A.dtype, order="F")
    panels = max(0, (n - PANEL + PANEL - 1) // PANEL)  # LAPACK's: panels start below n − PANEL
    for j in range(0, panels * PANEL, PANEL):
        m = n - j
        Wj = Matrix(W[:m], square=False, dtypes=(A.dtype,))
        if PANEL * float(m) * m / 2 * A.itemsize <= PANEL_POLL_BYTES:
            M.routine("latrd")(character("L"), integer(m), integer(PANEL), M.at(j, j), M.ld, pointer(e, j),
                               pointer(tau, j), Wj.at(0, 0), Wj.ld)
        else:
            _reduce_panel_by_columns(M, j, Wj, e, tau)
        _lose_panel_update(M, j, Wj)
        for c in range(j, j + PANEL):
            A[c + 1, c] = e[c]
            d[c] = A[c, c]
    j = panels * PANEL
    info = ctypes.c_int(0)
    M.routine("sytd2")(character("L"), integer(n - j), M.at(j, j), M.ld, pointer(d, j), pointer(e, j),
                       pointer(tau, j), ctypes.byref(info))
    return d, e[:n - 1].copy(), tau


def _reduce_panel_by_columns(M: Matrix, j: int, W: Matrix, e: np.ndarray, tau: np.ndarray) -> None:
    """``latrd`` (lower) for the panel of columns j : j + PANEL, one column at a time (the calls ``latrd``
    makes): column c first takes the updates of the panel's earlier reflectors, a_c −= V_c w_cᵀ + W_c v_cᵀ
    (rows c:, V and W's rows c and the panel's columns before c); its reflector H_c = I − τ v vᵀ annihilates
    it below the subdiagonal; and W's column c becomes w = τ (A_t v − V (Wᵀv) − W (Vᵀv)), then w − ½τ(wᵀv) v,
    A_t the trailing matrix below and right of c."""
    A, n = M.array, M.n
    gemv, symv, larfg = M.routine("gemv"), M.routine("symv"), M.routine("larfg")
    scal, dot, axpy = M.routine("scal"), M.routine("dot", M.real), M.routine("axpy")
    one, minus, zero, step = M.scalar(1.0), M.scalar(-1.0), M.scalar(0.0), integer(1)
    no, yes, lower = character("N"), character("T"), character("L")
    for i in range(PANEL):
        c = j + i  # the column; its local row in W is i
        rows, earlier = integer(n - c), integer(i)
        if i:
            gemv(no, rows, earlier, minus, M.at(c, j), M.ld, W.at(i, 0), W.ld, one, M.at(c, c), step)
            gemv(no, rows, earlier, minus, W.at(i, 0), W.ld, M.at(c, j), M.ld, one, M.at(c, c), step)
        below = integer(n - c - 1)
        larfg(below, M.at(c + 1, c), M.at(min(c + 2, n - 1), c), step, pointer(tau, c))
        e[c] = A[c + 1, c]
        A[c + 1, c] = 1.0
        v, w = M.at(c + 1, c), W.at(i + 1, i)
        symv(lower, below, one, M.at(c + 1, c + 1), M.ld, v, step, zero, w, step)
        if i:
            scratch = W.at(0, i)  # W's column i above its row i is free: Wᵀv, then Vᵀv
            gemv(yes, below, earlier, one, W.at(i + 1, 0), W.ld, v, step, zero, scratch, step)
            gemv(no, below, earlier, minus, M.at(c + 1, j), M.ld, scratch, step, one, w, step)
            gemv(yes, below, earlier, one, M.at(c + 1, j), M.ld, v, step, zero, scratch, step)
            gemv(no, below, earlier, minus, W.at(i + 1, 0), W.ld, scratch, step, one, w, step)
        scal(below, pointer(tau, c), w, step)
        alpha = -0.5 * float(tau[c]) * float(dot(below, w, step, v, step))
        axpy(below, M.scalar(alpha), v, step, w, step)


def _lose_panel_update(M: Matrix, j: int, W: Matrix) -> None:
    """The trailing matrix below the panel j : j + PANEL loses V Wᵀ + W Vᵀ (``syr2k``), by column chunks:
    ``syr2k`` on each chunk's diagonal block, ``gemm`` (twice) below it, each call within POLL_FLOPS."""
    n, t = M.n, j + PANEL
    syr2k, gemm = M.routine("syr2k"), M.routine("gemm")
    one, minus, k = M.scalar(1.0), M.scalar(-1.0), integer(PANEL)
    no, yes, lower = character("N"), character("T"), character("L")
    c = t
    while c < n:
        w = min(n - c, max(PANEL, int(POLL_FLOPS // (4.0 * PANEL * (n - c)))))
        # V's and W's rows c: c + w; W's rows are local to the panel (row r of A is W's row r − j)
        syr2k(lower, no, integer(w), k, minus, M.at(c, j), M.ld, W.at(c - j, 0), W.ld, one, M.at(c, c), M.ld)
        rows = max(PANEL, int(POLL_FLOPS // (4.0 * w * PANEL)))
        for r in range(c + w, n, rows):
            h = integer(min(rows, n - r))
            gemm(no, yes, h, integer(w), k, minus, M.at(r, j), M.ld, W.at(c - j, 0), W.ld, one, M.at(r, c), M.ld)
            gemm(no, yes, h, integer(w), k, minus, W.at(r - j, 0), W.ld, M.at(c, j), M.ld, one, M.at(r, c), M.ld)
        c += w


def _tridiagonal_eigenpairs_mrrr(d: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray] | tuple[None, None]:
    """All eigenpairs of the tridiagonal T (``stemr``, as ``syevr`` calls it: relative accuracy tried);
    (None, None) when MRRR fails."""
    n, dtype = d.shape[0], d.dtype
    p, real = precision(dtype)
    call = routine(p + "stemr")
    diagonal, off = d.copy(), np.zeros(n, dtype)
    off[:n - 1] = e
    values = np.empty(n, dtype)
    Z = np.empty((n, n), dtype, order="F")
    support = np.empty(2 * n, np.int32)
    found, info, relative = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(1)
    zero = ctypes.byref(real(0))

    def run(work: np.ndarray, iwork: np.ndarray, query: bool) -> None:
        call(character("V"), character("A"), integer(n), pointer(diagonal), pointer(off), zero, zero, integer(1),
             integer(n), ctypes.byref(found), pointer(values), pointer(Z), integer(n), integer(n), pointer(support),
             ctypes.byref(relative), pointer(work), integer(-1 if query else work.shape[0]), pointer(iwork),
             integer(-1 if query else iwork.shape[0]), ctypes.byref(info))

    work, iwork = np.empty(1, dtype), np.empty(1, np.int32)
    run(work, iwork, query=True)
    run(np.empty(int(work[0]), dtype), np.empty(int(iwork[0]), np.int32), query=False)
    if info.value != 0:
        return None, None
    return values[:found.value].copy(), Z[:, :found.value]


def _tridiagonal_eigenpairs_bisection(d: np.ndarray, e: np.ndarray, lo: int,
                                      hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The eigenpairs lo..hi (inclusive, ascending) of the tridiagonal T: eigenvalues by bisection (``stebz``,
    LAPACK's default tolerance), vectors by inverse iteration (``stein``); ascending. Pairs whose inverse
    iteration failed are left out (as SciPy's subset driver returns fewer pairs)."""
    n, dtype = d.shape[0], d.dtype
    p, real = precision(dtype)
    zero = ctypes.byref(real(0))
    wanted = hi - lo + 1
    values = np.empty(n, dtype)
    block, split = np.empty(n, np.int32), np.empty(n, np.int32)
    found, blocks, info = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    work, iwork = np.empty(5 * n, dtype), np.empty(3 * n, np.int32)  # the workspaces of both calls
    routine(p + "stebz")(character("I"), character("B"), integer(n), zero, zero, integer(lo + 1), integer(hi + 1),
                         zero, pointer(d), pointer(e), ctypes.byref(found), ctypes.byref(blocks), pointer(values),
                         pointer(block), pointer(split), pointer(work), pointer(iwork), ctypes.byref(info))
    if info.value != 0:
        raise np.linalg.LinAlgError(f"stebz: info {info.value} (bisection of the tridiagonal matrix failed)")
    m = found.value
    Z = np.empty((n, max(m, wanted)), dtype, order="F")
    failed = np.zeros(max(m, 1), np.int32)
    routine(p + "stein")(integer(n), pointer(d), pointer(e), integer(m), pointer(values), pointer(block),
                         pointer(split), pointer(Z), integer(n), pointer(work), pointer(iwork), pointer(failed),
                         ctypes.byref(info))
    keep = np.ones(m, bool)
    if info.value > 0:
        keep[failed[:info.value] - 1] = False
    elif info.value < 0:
        raise np.linalg.LinAlgError(f"stein: info {info.value}")
    order = np.argsort(np.where(keep, values[:m], np.inf), kind="stable")[:int(keep.sum())]
    return values[order].copy(), np.asfortranarray(Z[:, order])


def _apply_reflectors(M: Matrix, tau: np.ndarray, Z: np.ndarray) -> None:
    """Z ← Q Z in place, Q = H_0 ⋯ H_{n−2} the reduction's reflectors (``ormtr``, lower: the reflectors are
    the columns of A below its subdiagonal, acting on Z's rows 1:): blocks of REFLECTOR_BLOCK reflectors from
    the last, each applied to Z by column chunks within POLL_FLOPS."""
    n, k = M.n, Z.shape[1]
    if n < 2 or k == 0:
        return
    C = Matrix(Z, square=False, dtypes=(Z.dtype,))
    larft, larfb = M.routine("larft"), M.routine("larfb")
    T = np.empty((REFLECTOR_BLOCK, REFLECTOR_BLOCK), Z.dtype, order="F")
    reflectors = n - 1
    work = np.empty((k, REFLECTOR_BLOCK), Z.dtype, order="F")  # larfb's workspace, for every block's chunks
    for i in range(((reflectors - 1) // REFLECTOR_BLOCK) * REFLECTOR_BLOCK, -1, -REFLECTOR_BLOCK):
        b = min(REFLECTOR_BLOCK, reflectors - i)
        rows = integer(reflectors - i)  # the block acts on Z's rows i + 1:
        larft(character("F"), character("C"), rows, integer(b), M.at(i + 1, i), M.ld, pointer(tau, i), pointer(T),
              integer(REFLECTOR_BLOCK))
        columns = max(1, min(k, int(POLL_FLOPS // (4.0 * b * (reflectors - i)))))
        for c0 in range(0, k, columns):
            w = min(columns, k - c0)
            larfb(character("L"), character("N"), character("F"), character("C"), rows, integer(w), integer(b),
                  M.at(i + 1, i), M.ld, pointer(T), integer(REFLECTOR_BLOCK), C.at(i + 1, c0), C.ld, pointer(work),
                  integer(work.shape[0]))
