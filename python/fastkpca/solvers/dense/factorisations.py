"""Dense factorisations that Ctrl-C can stop: LAPACK's blocked algorithms, written as a loop over BLAS-3 calls
of bounded work, each made with the GIL released.

A LAPACK call checks no signal, and SciPy's wrappers hold the GIL while it runs: Ctrl-C waits for the whole
factor of an n × n matrix (n³/3 flops: seconds at n = 10,000, tens of seconds at 20,000). Here the same
arithmetic runs as LAPACK's own blocked algorithms, one panel of ``BLOCK`` (``INVERSE_BLOCK``) columns at a time, with
every BLAS call cut to at most ``POLL_FLOPS`` flops (a fraction of a second on one core). The calls go through
SciPy's own BLAS and LAPACK, called through ctypes with the GIL released (calls.py); between two calls
Python runs its signal handlers, so KeyboardInterrupt leaves the loop within one call, and nothing is left running
in the background: the caller's array is all the memory the loop holds.

The algorithms (Golub and Van Loan, "Matrix Computations", 4th ed., §4.2.9 and §3.1; LAPACK's ``dpotrf``,
``dtrtri`` and ``dlauum``), for the lower triangle of a Fortran-ordered n × n array A:

- :func:`cholesky_in_place`: for each panel j, L_jj = chol(A_jj) (``dpotrf`` on the b × b block),
  L_ij = A_ij L_jjᵀ⁻¹ below it (``dtrsm``, a wide triangle split so that most of its work is ``dgemm``), and
  the trailing matrix loses L_·j L_·jᵀ (``dsyrk`` on the diagonal blocks, ``dgemm`` below them), by column
  chunks.
- :func:`cholesky_solve`: (L Lᵀ)⁻¹ B, as ``dpotrs``: forward then backward substitution by panels, each panel's
  triangle solved and the rows below it coupled by one product.
- :func:`cholesky_inverse_in_place`: A⁻¹ = L⁻ᵀ L⁻¹ from the factor, as ``dpotri``: first L⁻¹ in place
  (panels from the last: the panel's rows below the diagonal block become −(L⁻¹)_trailing L_·j L_jj⁻¹), then
  the product Lᵀ L of the inverse factor in place (panels from the first: the panel's row block collects
  L_jjᵀ L_j,<j + L_>j,jᵀ L_>j,<j and its diagonal block L_jjᵀ L_jj + L_>j,jᵀ L_>j,j).

Flops are LAPACK's (n³/3 for the factor, 2n³/3 for the inverse); the panel width and the cut only change
how the work is split among calls.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from .calls import Matrix, character as _char, integer as _int, routine

__all__ = ["cholesky_factor", "cholesky_in_place", "cholesky_inverse_in_place", "cholesky_solve", "solve_with_factor",
           "zero_strict_upper", "BLOCK",
           "INVERSE_BLOCK", "POLL_FLOPS"]

#: Panel widths: LAPACK's own block size range, large enough that the BLAS-3 calls run at the machine's rate
#: (the factor's trailing updates are products of inner dimension BLOCK; the inverse's products have a
#: panel's rows as one side, and ran faster with the wider panel on a 2-core AVX-512 machine).
BLOCK = 256
INVERSE_BLOCK = 1024
#: Up to this many rows a solve with several right-hand sides goes to ``dpotrs`` whole, as fast there as the panels
#: (one right-hand side goes by panels from BLOCK rows on: ``dpotrs``' ``dtrsm`` with one column is the slow case).
WHOLE_SOLVE_ROWS = 1024
#: The widest triangle a right-side triangular solve hands to ``dtrsm`` whole: a wider one is split in halves,
#: the coupling between them a ``dgemm`` (:func:`_solve_right_lower`).
TRSM_BLOCK = 256
#: The most flops in one call; between calls Ctrl-C is answered. 1.6e10 flops is about a tenth of a second at a
#: 2-core machine's DGEMM rate and a few tenths with another process on the cores; a smaller cut made the
#: inverse's products narrow enough to run slower than LAPACK's.
POLL_FLOPS = 1.6e10


def _double(value: float) -> ctypes._CArgObject:
    return ctypes.byref(ctypes.c_double(value))


def _chunk(flops_per_unit: float, least: int = 1) -> int:
    """How many units (rows or columns) one call may take so that it stays within POLL_FLOPS."""
    return max(least, int(POLL_FLOPS // max(flops_per_unit, 1.0)))


def _gemm(ta: str, tb: str, m: int, n: int, k: int, alpha: float, a: ctypes.c_void_p, lda: ctypes._CArgObject,
          b: ctypes.c_void_p, ldb: ctypes._CArgObject, beta: float, c: ctypes.c_void_p,
          ldc: ctypes._CArgObject) -> None:
    routine("dgemm")(_char(ta), _char(tb), _int(m), _int(n), _int(k), _double(alpha), a, lda, b, ldb,
                      _double(beta), c, ldc)


def _lapack_info(name: str, uplo: str, A: Matrix, i: int, size: int, *extra: ctypes.c_char_p) -> int:
    info = ctypes.c_int(0)
    routine(name)(_char(uplo), *extra, _int(size), A.at(i, i), A.ld, ctypes.byref(info))
    return info.value


def cholesky_in_place(A: np.ndarray) -> int:
    """The lower Cholesky factor L of A (its lower triangle; Fortran-ordered, float64) in place over that
    triangle, such that Ctrl-C stops it (see the module). Returns LAPACK's info: 0, or k > 0 when the leading
    minor of order k is not positive definite (the factor is then incomplete). The strict upper triangle is
    not touched."""
    M = Matrix(A)
    n = M.n
    if float(n) ** 3 / 3 <= POLL_FLOPS:  # within one call's work: LAPACK's, whole
        return _lapack_info("dpotrf", "L", M, 0, n)
    syrk = routine("dsyrk")
    for j in range(0, n, BLOCK):
        b = min(BLOCK, n - j)
        info = _lapack_info("dpotrf", "L", M, j, b)
        if info:
            return j + info
        below = n - j - b
        if not below:
            break
        rows = _chunk(float(b) * b, least=1)
        for r in range(j + b, n, rows):  # L_ij = A_ij L_jj⁻ᵀ
            _solve_right_lower(M, r, min(rows, n - r), j, b, "T", 1.0)
        k = j + b
        while k < n:  # the trailing matrix's columns k:k+w lose L_·j L_k:k+w,jᵀ
            w = min(n - k, max(BLOCK, _chunk(2.0 * (n - k) * b)))
            syrk(_char("L"), _char("N"), _int(w), _int(b), _double(-1.0), M.at(k, j), M.ld, _double(1.0),
                 M.at(k, k), M.ld)
            rows = _chunk(2.0 * w * b, least=BLOCK)
            for r in range(k + w, n, rows):
                _gemm("N", "T", min(rows, n - r), w, b, -1.0, M.at(r, j), M.ld, M.at(k, j), M.ld, 1.0,
                      M.at(r, k), M.ld)
            k += w
    return 0


def cholesky_factor(A: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the symmetric positive definite A (its lower triangle read) as a new
    Fortran-ordered array with zeros above the diagonal: :func:`cholesky_in_place` on a copy, on the threads of
    threads.blocked_threads. What ``numpy.linalg.cholesky`` gives for a non-empty square float64 matrix
    (float32 comes back as float64), without handing OpenBLAS's threaded ``dpotrf`` a large matrix
    (threads.py); raises ``numpy.linalg.LinAlgError`` where A is not positive definite."""
    from .threads import blocked_threads

    L = np.array(A, dtype=np.float64, order="F")
    with blocked_threads(L.shape[0]):
        info = cholesky_in_place(L)
    if info:
        raise np.linalg.LinAlgError(f"the leading minor of order {info} is not positive definite")
    zero_strict_upper(L)
    return L


def cholesky_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """X = (L Lᵀ)⁻¹ B for the lower Cholesky factor L (its lower triangle read; Fortran-ordered, float64, n × n)
    and B (n or n × m), as LAPACK's ``dpotrs``: L Z = B by forward substitution, then Lᵀ X = Z backwards, each by
    panels of ``BLOCK`` rows. A panel's diagonal triangle is solved by ``dtrsv`` (one column) or ``dtrsm`` and the
    rows below it are coupled by ``dgemv`` or ``dgemm``: the products read L once per substitution on the BLAS
    threads the caller has, where OpenBLAS's ``dtrsm`` with one right-hand side (``dpotrs``' call) runs several
    times slower than the memory pass it is; a factor of one panel, or of up to WHOLE_SOLVE_ROWS rows with several
    right-hand sides, goes to ``dpotrs`` whole. B's columns are taken so many at a time that every call stays within
    POLL_FLOPS, so Ctrl-C stops it (see the module). Returns a new Fortran-ordered float64 array of B's shape; B is
    not modified. ValueError where B has not n rows."""
    n = L.shape[0]
    if np.ndim(B) not in (1, 2) or np.shape(B)[0] != n:
        raise ValueError(f"B must have the factor's {n} rows (one or two dimensions), got shape {np.shape(B)}")
    if n == 0:
        return np.zeros(np.shape(B))
    if n <= BLOCK and 2.0 * n * n * (np.shape(B)[1] if np.ndim(B) == 2 else 1) <= POLL_FLOPS:
        # one panel: LAPACK's whole, through SciPy's wrapper (scikit-learn's own call, so its rounding; a small
        # solve's cost is its wrappers')
        from scipy.linalg import lapack

        return lapack.dpotrs(L, np.asarray(B, dtype=np.float64), lower=1)[0]
    X = np.array(np.reshape(B, (n, -1)), dtype=np.float64, order="F")
    M = Matrix(L)
    columns = max(1, int(POLL_FLOPS // (2.0 * n * n)))  # the whole solve of this many columns: one call's work
    for c in range(0, X.shape[1], columns):
        _cholesky_solve_columns(M, Matrix(X[:, c:c + columns], square=False))
    return X[:, 0] if np.ndim(B) == 1 else X


def solve_with_factor(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """:func:`cholesky_solve` on the BLAS threads its work pays for (threads.small_algebra_threads: its 2n² flops a
    column of B, and its passes over L's n²/2 entries, twice)."""
    from .threads import small_algebra_threads

    n = L.shape[0]
    columns = np.shape(B)[1] if np.ndim(B) == 2 else 1
    with small_algebra_threads(2.0 * n * n * columns, entries=float(n) * n):
        return cholesky_solve(L, B)


def _cholesky_solve_columns(M: Matrix, R: Matrix) -> None:
    """R ← (L Lᵀ)⁻¹ R in place, L the lower triangle of M (see :func:`cholesky_solve`)."""
    n, m = M.n, R.columns
    if n <= BLOCK or (m > 1 and n <= WHOLE_SOLVE_ROWS):  # LAPACK's, whole (scikit-learn's own call and rounding)
        info = ctypes.c_int(0)
        routine("dpotrs")(_char("L"), _int(n), _int(m), M.at(0, 0), M.ld, R.at(0, 0), R.ld, ctypes.byref(info))
        return
    one = _int(1)
    trsv, trsm, gemv = routine("dtrsv"), routine("dtrsm"), routine("dgemv")

    def triangle(j: int, b: int, trans: str) -> None:  # X_j ← op(L_jj)⁻¹ X_j
        if m == 1:
            trsv(_char("L"), _char(trans), _char("N"), _int(b), M.at(j, j), M.ld, R.at(j, 0), one)
        else:
            trsm(_char("L"), _char("L"), _char(trans), _char("N"), _int(b), _int(m), _double(1.0), M.at(j, j), M.ld,
                 R.at(j, 0), R.ld)

    for j in range(0, n, BLOCK):  # L Z = B: Z_j = L_jj⁻¹ B_j, then the rows below lose L_>j,j Z_j
        b = min(BLOCK, n - j)
        triangle(j, b, "N")
        if m == 1:
            if j + b < n:
                gemv(_char("N"), _int(n - j - b), _int(b), _double(-1.0), M.at(j + b, j), M.ld, R.at(j, 0), one,
                     _double(1.0), R.at(j + b, 0), one)
            continue
        rows = _chunk(2.0 * b * m, least=BLOCK)
        for r in range(j + b, n, rows):
            _gemm("N", "N", min(rows, n - r), m, b, -1.0, M.at(r, j), M.ld, R.at(j, 0), R.ld, 1.0, R.at(r, 0), R.ld)
    for j in range(((n - 1) // BLOCK) * BLOCK, -1, -BLOCK):  # Lᵀ X = Z: X_j = L_jj⁻ᵀ (Z_j − L_>j,jᵀ X_>j)
        b = min(BLOCK, n - j)
        if m == 1:
            if j + b < n:
                gemv(_char("T"), _int(n - j - b), _int(b), _double(-1.0), M.at(j + b, j), M.ld, R.at(j + b, 0), one,
                     _double(1.0), R.at(j, 0), one)
        else:
            rows = _chunk(2.0 * b * m, least=BLOCK)
            for r in range(j + b, n, rows):
                _gemm("T", "N", b, m, min(rows, n - r), -1.0, M.at(r, j), M.ld, R.at(r, 0), R.ld, 1.0, R.at(j, 0),
                      R.ld)
        triangle(j, b, "T")


def cholesky_inverse_in_place(L: np.ndarray) -> int:
    """(L Lᵀ)⁻¹'s lower triangle in place over the lower Cholesky factor L (Fortran-ordered, float64), as
    LAPACK's ``dpotri`` computes it, such that Ctrl-C stops it (see the module). Returns LAPACK's info: 0, or
    k > 0 when L_kk is zero. The strict upper triangle is not touched."""
    M = Matrix(L)
    n = M.n
    if 2 * float(n) ** 3 / 3 <= POLL_FLOPS:  # within one call's work: LAPACK's, whole
        return _lapack_info("dpotri", "L", M, 0, n)
    info = _inverse_factor(M)
    if info:
        return info
    _inverse_factor_product(M)
    return 0


def _inverse_factor(M: Matrix) -> int:
    """L⁻¹ in place (``dtrtri``, lower, non-unit): panels from the last; the inverse of the trailing triangle T
    is already in place, so the panel's rows below its diagonal block become −T L_·j L_jj⁻¹."""
    n, trmm = M.n, routine("dtrmm")
    for j in range(((n - 1) // INVERSE_BLOCK) * INVERSE_BLOCK, -1, -INVERSE_BLOCK):
        b = min(INVERSE_BLOCK, n - j)
        t = j + b  # the trailing triangle T = A[t:, t:], its panel rows B = A[t:, j:t]
        if t < n:
            # B ← T B, in place from the bottom row block up: block rows r0:r1 take T_rr B_r + T_r,<r B_<r,
            # where B_<r (above) still holds its own values.
            r1 = n
            while r1 > t:
                rows = min(r1 - t, max(INVERSE_BLOCK, _chunk(2.0 * b * (r1 - t))))
                r0 = r1 - rows
                trmm(_char("L"), _char("L"), _char("N"), _char("N"), _int(rows), _int(b), _double(1.0),
                     M.at(r0, r0), M.ld, M.at(r0, j), M.ld)
                if r0 > t:
                    _gemm_chunked_inner("N", "N", rows, b, r0 - t, M, (r0, t), (t, j), (r0, j))
                r1 = r0
            rows = _chunk(float(b) * b)
            for r in range(t, n, rows):  # B ← −B L_jj⁻¹
                _solve_right_lower(M, r, min(rows, n - r), j, b, "N", -1.0)
        info = _lapack_info("dtrtri", "L", M, j, b, _char("N"))
        if info:
            return j + info
    return 0


def _solve_right_lower(M: Matrix, r: int, rows: int, j: int, b: int, trans: str, alpha: float) -> None:
    """X = α B op(L)⁻¹ in place over B = M[r:r+rows, j:j+b], for the lower triangular L = M[j:j+b, j:j+b] and
    op(L) = L ("N") or Lᵀ ("T"): LAPACK's ``dtrsm`` (side R), with a triangle wider than TRSM_BLOCK split in
    halves L = [L₁₁ 0; L₂₁ L₂₂] and the coupling done by ``dgemm``, which runs at the machine's rate where
    ``dtrsm`` on a wide triangle does not. The same substitution, blocked: X op(L) = αB by blocks of columns,
    for "N" from the last (X₂ L₂₂ = αB₂, then X₁ L₁₁ = αB₁ − X₂ L₂₁), for "T" from the first (X₁ L₁₁ᵀ = αB₁,
    then X₂ L₂₂ᵀ = αB₂ − X₁ L₂₁ᵀ)."""
    if b <= TRSM_BLOCK:
        routine("dtrsm")(_char("R"), _char("L"), _char(trans), _char("N"), _int(rows), _int(b), _double(alpha),
                         M.at(j, j), M.ld, M.at(r, j), M.ld)
        return
    h = b // 2
    if trans == "N":
        _solve_right_lower(M, r, rows, j + h, b - h, trans, alpha)
        # αB₁ − X₂ L₂₁ = α(B₁ − X₂ L₂₁ / α): B₁ takes −X₂ L₂₁ / α, then the solve scales by α
        _gemm("N", "N", rows, h, b - h, -1.0 / alpha, M.at(r, j + h), M.ld, M.at(j + h, j), M.ld, 1.0,
              M.at(r, j), M.ld)
        _solve_right_lower(M, r, rows, j, h, trans, alpha)
    else:
        _solve_right_lower(M, r, rows, j, h, trans, alpha)
        _gemm("N", "T", rows, b - h, h, -1.0 / alpha, M.at(r, j), M.ld, M.at(j + h, j), M.ld, 1.0,
              M.at(r, j + h), M.ld)
        _solve_right_lower(M, r, rows, j + h, b - h, trans, alpha)


def _gemm_chunked_inner(ta: str, tb: str, m: int, n: int, k: int, M: Matrix, a: tuple, b: tuple,
                        c: tuple) -> None:
    """C += op(A) op(B) for blocks of M (C: m × n, inner dimension k), the inner dimension cut so that each
    call stays within POLL_FLOPS. ``a``, ``b``, ``c``: the blocks' top-left (row, column) in M; op(A) is
    m × k (A itself k × m with "T"), op(B) k × n."""
    step = max(INVERSE_BLOCK, _chunk(2.0 * m * n))
    for p in range(0, k, step):
        q = min(step, k - p)
        a_at = M.at(a[0], a[1] + p) if ta == "N" else M.at(a[0] + p, a[1])
        b_at = M.at(b[0] + p, b[1]) if tb == "N" else M.at(b[0], b[1] + p)
        _gemm(ta, tb, m, n, q, 1.0, a_at, M.ld, b_at, M.ld, 1.0, M.at(*c), M.ld)


def _inverse_factor_product(M: Matrix) -> None:
    """Lᵀ L in place over the lower triangular L (``dlauum``, lower): for each panel j, its row block A[j:t, :j]
    becomes L_jjᵀ L_j,<j + L_>j,jᵀ L_>j,<j and its diagonal block L_jjᵀ L_jj + L_>j,jᵀ L_>j,j."""
    n, trmm, syrk = M.n, routine("dtrmm"), routine("dsyrk")
    for j in range(0, n, INVERSE_BLOCK):
        b = min(INVERSE_BLOCK, n - j)
        t = j + b
        columns = _chunk(float(b) * b)
        for c0 in range(0, j, columns):
            trmm(_char("L"), _char("L"), _char("T"), _char("N"), _int(b), _int(min(columns, j - c0)),
                 _double(1.0), M.at(j, j), M.ld, M.at(j, c0), M.ld)
        _lapack_info("dlauum", "L", M, j, b)
        if t < n:
            columns = max(INVERSE_BLOCK, _chunk(2.0 * b * (n - t)))
            for c0 in range(0, j, columns):
                _gemm_chunked_inner("T", "N", b, min(columns, j - c0), n - t, M, (t, j), (t, c0), (j, c0))
            rows = _chunk(float(b) * b)
            for r in range(t, n, rows):  # the diagonal block gains L_>j,jᵀ L_>j,j, by row ranges of L_>j,j
                syrk(_char("L"), _char("T"), _int(b), _int(min(rows, n - r)), _double(1.0), M.at(r, j), M.ld,
                     _double(1.0), M.at(j, j), M.ld)


def zero_strict_upper(A: np.ndarray) -> None:
    """Zeros above the diagonal of the square A, by column blocks (a memory pass over n²/2 entries, in pieces so
    that Ctrl-C is answered between them); a diagonal block's strict upper triangle through a mask made once per
    block size (index arrays made for every block cost more than the pass)."""
    n = A.shape[0]
    for j0 in range(0, n, BLOCK):
        j1 = min(n, j0 + BLOCK)
        A[:j0, j0:j1] = 0.0
        np.copyto(A[j0:j1, j0:j1], 0.0, where=_strict_upper_mask(j1 - j0))


@functools.lru_cache(maxsize=4)
def _strict_upper_mask(b: int) -> np.ndarray:
    mask = np.triu(np.ones((b, b), dtype=bool), 1)
    mask.flags.writeable = False
    return mask
