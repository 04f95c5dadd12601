"""Top-k symmetric eigensolver: block Lanczos in the native core."""

from __future__ import annotations

import warnings

import numpy as np

from . import _native
from . import _validation as v
from .exceptions import ConvergenceWarning

__all__ = ["eigsh"]

#: Default relative residual tolerance: ‖Av − λv‖ ≤ tol·|λ₁| for every returned pair.
DEFAULT_TOL = 1e-10
_BASIS_BUDGET_BYTES = 256 * 2**20
#: Largest block for which a pass over the packed (one-triangle) kernel is as fast as over the full matrix
#: (measured at N = 20000 on 2 cores: equal up to 24 vectors, 1.5 times slower from 32 on).
PACKED_MAX_BLOCK = 24


def default_block_size(k: int, n: int) -> int:
    """Vectors per block: 8 for k <= 12, else min(k + 6, max(16, k/2 + 8)) rounded up to a multiple of 8.

    A pass costs max(reading A, 2·N²·b flops). At b = 8 a pass over the packed (one-triangle) kernel is
    bound by memory and about half the cost of a b = 16 pass, which is bound by arithmetic (measured at
    N = 20000 on 2 cores: 0.043 s against 0.085–0.10 s), while b = 16 saves only 15–25% of the passes for
    k <= 12 (rbf, poly and laplacian kernels, N = 5000 and 20000: k = 10 took 13–19 passes with b = 8,
    10–14 with b = 16). Beyond that each pass gets dearer in proportion to b while saving fewer passes, so
    larger k gets a block a little larger than k, or about k/2 (with more passes).
    """
    b = 8 if k <= 12 else min(k + 6, max(16, k // 2 + 8))
    return min(n, -(-b // 8) * 8)


def _sign_flip(vectors: np.ndarray) -> np.ndarray:
    """Make each column's largest-magnitude entry positive (scikit-learn's svd_flip convention)."""
    if vectors.size == 0:
        return vectors
    rows = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[rows, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1
    vectors *= signs
    return vectors


def solve(A: np.ndarray, k: int, *, centered: bool, tol, maxiter, block_size, random_state,
          threads: int, progress=None, packed_n=None):
    """Top-k pairs of A (or of H A H when ``centered``): A is a validated, C-contiguous symmetric matrix,
    or (``packed_n`` given) the 1-D packed lower-tile form of a packed_n × packed_n one.

    Returns (values descending, vectors, info dict). No sign convention is applied.
    """
    n = A.shape[0] if packed_n is None else packed_n
    b = default_block_size(k, n) if block_size is None else block_size
    tol = DEFAULT_TOL if tol is None else tol
    maxiter = 1000 if maxiter is None else maxiter
    rng = v.check_random_state(random_state)
    dense = k + 3 * b > n
    if dense:
        v.check_memory(8 * n * n * 3, f"the dense eigensolver on a {n}×{n} matrix")
        max_basis = 0
        v0 = np.zeros((n, 1), order="F")
    else:
        # Basis columns kept before a restart: enough for ~20 blocks, within a memory budget.
        max_basis = max(k + 4 * b, min(20 * b, _BASIS_BUDGET_BYTES // (8 * n)))
        max_basis = min(max_basis, n - b)
        v.check_memory(8 * n * (max_basis + 3 * b) + 8 * max_basis**2 * 3,
                       f"the eigensolver's basis ({n}×{max_basis + b} float64)")
        v0 = np.asfortranarray(rng.standard_normal((n, b)))
    seed = int(rng.randint(0, 2**62))
    args = (v0, k, float(tol), max_basis, maxiter, seed, centered, dense, progress, threads)
    if packed_n is None:
        r = _native.core.eigsh(A, *args)
    else:
        r = _native.core.eigsh_packed(A, packed_n, *args)
    info = {
        "n_passes": int(r["passes"]),
        "n_vectors": int(r["n_vectors"]),
        "converged": bool(r["converged"]),
        "residual_norms": r["residuals"],
        "n_restarts": int(r["restarts"]),
        "block_size": int(b),
        "method": "dense" if dense else "block_lanczos",
    }
    return r["values"], r["vectors"], info


def eigsh(A, k, *, tol=None, maxiter=None, block_size=None, random_state=None, return_info=False, n_jobs=None):
    """The k algebraically largest eigenpairs of a symmetric matrix, by block Lanczos.

    Parameters
    ----------
    A : ndarray of shape (N, N)
        Symmetric matrix, float32 or float64 (integers are converted to float64). Read, never modified.
        float32 matrices are multiplied in float32 but accumulate and orthogonalise in float64.
    k : int
        Number of eigenpairs, 1 <= k <= N.
    tol : float, default=None
        Stop when every wanted pair has ‖Av − λv‖ <= tol·|λ₁| (λ₁ the largest eigenvalue returned).
        ``None`` means 1e-10, enough for eigenvalues within about 1e-10·|λ₁| of the exact ones.
    maxiter : int, default=None
        Maximum number of passes (products of A with a block); ``None`` means 1000. When reached, the best
        pairs found are returned with a :class:`fastkpca.ConvergenceWarning`.
    block_size : int, default=None
        Vectors per block; ``None`` means 8 for k <= 12, else min(k + 6, max(16, k/2 + 8)) rounded up to a
        multiple of 8.
    random_state : int, RandomState or None, default=None
        Seed of the random starting block; a given seed gives the same result on the same machine,
        whatever the thread count.
    return_info : bool, default=False
        Also return a dict with ``n_passes`` (products of A with a block: each reads A once),
        ``n_vectors`` (products with single vectors), ``converged``, ``residual_norms`` (‖Av − λv‖ per
        pair, from the Lanczos relation), ``n_restarts``, ``block_size`` and ``method``.
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
        k not an integer in [1, N]; A not square, not symmetric (the message gives max |A − Aᵀ|), or with
        NaN/inf; negative tol.

    Notes
    -----
    Block Lanczos with full reorthogonalisation and thick restarts (see the C++ core,
    ``block_lanczos.hpp``). Each pass streams A from memory once for all b vectors of a block, so the
    number of passes is the figure of merit; it is typically 2–5 times smaller than ARPACK's number of
    matrix-vector products. When k + 3·block_size > N the problem is solved densely.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> A = np.diag([3.0, 1.0, 2.0])
    >>> vals, vecs = fastkpca.eigsh(A, 2, random_state=0)
    >>> vals
    array([3., 2.])
    """
    arr = v.as_float_array(A, "A")
    v.check_square(arr, "A")
    n = arr.shape[0]
    k = v.check_int(k, "k", minimum=1, maximum=n)
    if tol is not None:
        tol = v.check_real(tol, "tol", minimum=0.0)
    if maxiter is not None:
        maxiter = v.check_int(maxiter, "maxiter", minimum=1)
    if block_size is not None:
        block_size = v.check_int(block_size, "block_size", minimum=1, maximum=n)
    threads = v.n_threads(n_jobs)
    if not arr.flags.c_contiguous:
        # A symmetric matrix in Fortran order is its own transpose in C order; otherwise copy once.
        arr = arr.T if arr.flags.f_contiguous else np.ascontiguousarray(arr)
    finite, max_abs, asym = _native.core.scan_square(arr, True, threads)
    if not finite:
        raise ValueError("A contains NaN or infinity")
    rtol = 1e-4 if arr.dtype == np.float32 else 1e-8
    if asym > rtol * max_abs:
        raise ValueError(
            f"A is not symmetric: max |A - A.T| = {asym:.3g} ({asym / max_abs:.3g} relative to max |A|); "
            f"eigsh needs a symmetric matrix (tolerance {rtol:g} relative)"
        )
    values, vectors, info = solve(arr, k, centered=False, tol=tol, maxiter=maxiter, block_size=block_size,
                                  random_state=random_state, threads=threads)
    if not info["converged"]:
        warnings.warn(
            f"eigsh: not all {k} eigenpairs converged in {info['n_passes']} passes (maxiter); "
            f"largest relative residual {np.max(info['residual_norms']) / max(abs(values[0]), 1e-300):.2e}. "
            "Returning the best pairs found.",
            ConvergenceWarning,
            stacklevel=2,
        )
    vectors = _sign_flip(np.ascontiguousarray(vectors))
    values = values.astype(arr.dtype, copy=False)
    vectors = vectors.astype(arr.dtype, copy=False)
    if return_info:
        return values, vectors, info
    return values, vectors
