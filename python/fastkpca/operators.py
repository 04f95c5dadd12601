"""Kernel operators: "multiply by K" without holding K, or holding as much of it as memory allows.

:func:`kernel_operator` returns a :class:`KernelOperator`, a ``scipy.sparse.linalg.LinearOperator`` whose
products run in the native core, with the kernel matrix held in one of four storage modes:

``"full"``
    the N×N matrix (N²·itemsize bytes); the fastest pass for wide blocks.
``"packed"``
    its lower triangle in 256×256 tiles (about N²/2·itemsize bytes); a pass reads each tile once for both
    halves, so it reads half as much.
``"cached"``
    the tiles of the packed form that fit the memory limit are kept; the others are recomputed from X on
    every pass.
``"matrix_free"``
    no kernel entries are kept: every pass recomputes each lower tile from X and multiplies it into the
    block while it is in cache. Memory O(N·(d + b)).

Packed, cached and matrix-free operators multiply by the same tiles in the same order, so they give the
same products bit for bit. ``storage="auto"`` picks the fastest mode that fits the memory limit
(:func:`plan_storage`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import LinearOperator

from . import _native
from . import _validation as v
from . import linalg

__all__ = ["KernelOperator", "kernel_operator", "plan_storage", "STORAGES"]

STORAGES = ("auto", "full", "packed", "cached", "matrix_free")
#: Memory kept free of the plan for the interpreter, temporaries and rounding in the estimates.
PLAN_SLACK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class StoragePlan:
    storage: str
    cached_tile_rows: int  # tile rows of the packed form kept (packed: all; matrix_free: 0)
    kernel_bytes: int  # bytes of kernel entries held
    budget_bytes: int  # what the memory limit left for them
    reason: str


def fixed_bytes(n: int, n_features: int, itemsize: int) -> int:
    """What a plan sets aside whatever the storage: the working copy of X and its row norms, and the slack."""
    return 2 * n * n_features * itemsize + 16 * n + PLAN_SLACK_BYTES


def _packed_bytes(tile_rows: int, itemsize: int) -> int:
    return int(_native.core.packed_prefix_size(tile_rows)) * itemsize


def plan_storage(n: int, n_features: int, itemsize: int, *, block_size: int, memory_limit: int,
                 other_bytes: int = 0, storage: str = "auto") -> StoragePlan:
    """The storage of an n-sample kernel within ``memory_limit`` bytes, ``other_bytes`` of which are taken
    by the rest of the computation (the solver's basis, say).

    The cost model: a stored pass reads the kernel from memory, a recomputed one evaluates it (GEMM + exp
    per entry: several times slower), so the fastest mode that fits wins. Full beats packed only for blocks
    wider than linalg.PACKED_MAX_BLOCK; otherwise packed (half the memory, half the reads). When the packed
    triangle does not fit, as many of its tile rows as fit are cached and the rest recomputed; with no
    room for one tile row, matrix-free.
    """
    T = int(_native.core.TILE)
    nt = -(-n // T)
    fixed = other_bytes + fixed_bytes(n, n_features, itemsize)
    budget = memory_limit - fixed
    if budget < 0:
        raise MemoryError(
            f"the {n}-sample kernel's solver and working copies need {fixed / 2**30:.2f} GiB even matrix-free, "
            f"but the memory limit is {memory_limit / 2**30:.2f} GiB"
        )
    full = n * n * itemsize
    packed = _packed_bytes(nt, itemsize)
    mib = 2**20
    if storage == "full" or (storage == "auto" and block_size > linalg.PACKED_MAX_BLOCK and full <= budget):
        if full > budget:
            raise MemoryError(f"storage='full' needs {full / 2**30:.2f} GiB for the {n}×{n} kernel, but the memory "
                              f"limit leaves {max(budget, 0) / 2**30:.2f} GiB")
        return StoragePlan("full", nt, full, budget, f"the full matrix ({full // mib} MiB) fits and a pass with a "
                           f"block of {block_size} runs faster over it than over the packed triangle")
    if storage == "packed" or (storage == "auto" and packed <= budget):
        if packed > budget:
            raise MemoryError(f"storage='packed' needs {packed / 2**30:.2f} GiB for the {n}×{n} kernel's lower "
                              f"triangle, but the memory limit leaves {max(budget, 0) / 2**30:.2f} GiB")
        return StoragePlan("packed", nt, packed, budget,
                           f"the packed lower triangle ({packed // mib} MiB) fits in the {max(budget, 0) // mib} "
                           "MiB the memory limit leaves for the kernel")
    rows = 0
    if storage in ("auto", "cached"):
        # The largest prefix of tile rows that fits: rows(rows+1)/2·T²·itemsize <= budget.
        rows = int(((1 + 8 * max(budget, 0) / (T * T * itemsize)) ** 0.5 - 1) / 2)
        while rows > 0 and _packed_bytes(rows, itemsize) > budget:
            rows -= 1
        rows = min(rows, nt)
    if rows > 0:
        kept = _packed_bytes(rows, itemsize)
        return StoragePlan("cached", rows, kept, budget,
                           f"the packed triangle ({packed // mib} MiB) does not fit in the {max(budget, 0) // mib} "
                           f"MiB left for the kernel: {rows} of {nt} tile rows ({kept / packed:.0%} of the "
                           "entries) are kept, the rest recomputed on every pass")
    return StoragePlan("matrix_free", 0, 0, budget,
                       "requested" if storage == "matrix_free" else
                       f"not even one tile row fits in the {max(budget, 0) // mib} MiB left for the kernel: "
                       "every pass recomputes the kernel")


class KernelOperator(LinearOperator):
    """A symmetric kernel matrix (or a centered or shifted view of one) as a SciPy LinearOperator.

    Products ``K @ V`` run in the native core on ``n_jobs`` threads and return float64 (float32 kernels
    are stored or evaluated in float32 and accumulated in float64). SciPy's ``eigsh``, ``cg``, ``lobpcg``
    and any code that takes a LinearOperator accept it; :func:`fastkpca.eigsh` runs it natively.

    Attributes
    ----------
    storage : str
        "full", "packed", "cached" or "matrix_free".
    nbytes : int
        Bytes the operator holds (kernel entries and the working copy of X).
    storage_dtype : numpy.dtype
        The type the kernel entries are stored or evaluated in.
    plan : StoragePlan or None
        Why this storage was chosen (for operators made by :func:`kernel_operator`).
    """

    def __init__(self, native, *, n_jobs=None, plan=None, _keep=None):
        super().__init__(dtype=np.dtype(np.float64), shape=(native.n, native.n))
        self._native_operator = native
        self._threads = v.n_threads(n_jobs)
        self.plan = plan
        self._keep = _keep  # arrays the native operator reads in place

    @property
    def storage(self) -> str:
        return self._native_operator.storage

    @property
    def nbytes(self) -> int:
        return int(self._native_operator.nbytes) + (self._keep.nbytes if self._keep is not None else 0)

    @property
    def storage_dtype(self) -> np.dtype:
        return np.dtype(np.float32 if self._native_operator.scalar_bytes == 4 else np.float64)

    def _matmat(self, X):
        X = np.asfortranarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != self.shape[1]:
            raise ValueError(f"dimension mismatch: operator is {self.shape}, operand {X.shape}")
        return self._native_operator.matmat(X, self._threads)

    def _matvec(self, x):
        return self._matmat(np.asarray(x).reshape(-1, 1)).reshape(-1)

    def _adjoint(self):
        return self

    def _transpose(self):
        return self

    def row_sums(self) -> np.ndarray:
        """K·1 (= the column sums): computed once, and free after the first product of a tiled operator."""
        return self._native_operator.row_sums(self._threads)

    def trace(self) -> float:
        """trace(K)."""
        return float(self._native_operator.trace(self._threads))

    def centered(self) -> KernelOperator:
        """H·K·H with H = I − 11ᵀ/N, applied implicitly (no rewrite, O(N·b) extra per product)."""
        return KernelOperator(self._native_operator.centered(), n_jobs=self._threads or None, plan=self.plan,
                              _keep=self._keep)

    def shifted(self, alpha: float) -> KernelOperator:
        """K + alpha·I."""
        alpha = v.check_real(alpha, "alpha")
        return KernelOperator(self._native_operator.shifted(alpha), n_jobs=self._threads or None, plan=self.plan,
                              _keep=self._keep)

    def __repr__(self):
        return (f"<{self.shape[0]}×{self.shape[1]} KernelOperator, storage={self.storage!r}, "
                f"{self.storage_dtype.name}, {self.nbytes / 2**20:.1f} MiB>")


def from_matrix(K: np.ndarray, plan: StoragePlan | None = None, n_jobs=None) -> KernelOperator:
    """The full storage over a symmetric, C-contiguous float32/float64 K, read in place (and kept alive)."""
    return KernelOperator(_native.core.dense_operator(K), n_jobs=n_jobs, plan=plan, _keep=K)


def build(X: np.ndarray, kernel: str, gamma: float, degree: float, coef0: float, plan: StoragePlan,
          threads: int) -> KernelOperator:
    """The operator of a validated X (C-contiguous float32/float64) with the given plan."""
    n_jobs = threads or None
    if plan.storage == "full":
        from .kernels import gram

        return from_matrix(gram(X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0, n_jobs=n_jobs), plan, n_jobs)
    native = _native.core.kernel_operator(X, kernel, gamma, degree, coef0, plan.cached_tile_rows, threads)
    return KernelOperator(native, n_jobs=n_jobs, plan=plan)


def kernel_operator(X, *, kernel="rbf", gamma=None, degree=3, coef0=1.0, storage="auto", memory_limit=None,
                    block_size=8, n_jobs=None) -> KernelOperator:
    """The kernel matrix ``K[i, j] = k(X[i], X[j])`` as an operator, held within a memory limit.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Samples; float32 data gives a float32 kernel (products still return float64).
    kernel : str, default="rbf"
        A native kernel: "linear", "poly"/"polynomial", "rbf", "laplacian", "sigmoid" or "cosine".
    gamma, degree, coef0 : float
        Kernel parameters, as in :func:`fastkpca.gram` (gamma None means 1 / n_features).
    storage : {"auto", "full", "packed", "cached", "matrix_free"}, default="auto"
        How the kernel is held (see the module's documentation). "auto" picks the fastest mode that fits
        the memory limit; an explicit "full" or "packed" that does not fit raises MemoryError.
    memory_limit : int or str, default=None
        Bytes the operator may hold, with the working memory of a product with ``block_size`` vectors, or a
        size such as "4GB"; None means 80% of the available memory.
    block_size : int, default=8
        The block width the products will mostly have (it decides between full and packed storage).
    n_jobs : int, default=None
        Threads for building the operator and for its products.

    Returns
    -------
    KernelOperator
        A ``scipy.sparse.linalg.LinearOperator``.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> from scipy.sparse.linalg import eigsh
    >>> X = np.random.default_rng(0).standard_normal((500, 3))
    >>> K = fastkpca.kernel_operator(X, kernel="rbf", gamma=0.5, storage="matrix_free")
    >>> K.storage, K.shape
    ('matrix_free', (500, 500))
    >>> np.allclose(K @ np.ones(500), fastkpca.gram(X, kernel="rbf", gamma=0.5).sum(axis=1))
    True
    """
    kernel = v.check_kernel(kernel)
    storage = v.check_choice(storage, "storage", STORAGES)
    X = v.check_samples(X, "X")
    gamma, degree, coef0 = v.kernel_params(kernel, gamma, degree, coef0, X.shape[1])
    limit = v.memory_limit(memory_limit)
    block_size = v.check_int(block_size, "block_size", minimum=1)
    threads = v.n_threads(n_jobs)
    plan = plan_storage(X.shape[0], X.shape[1], X.dtype.itemsize, block_size=block_size, memory_limit=limit,
                        other_bytes=linalg.pass_bytes(block_size, X.shape[0]), storage=storage)
    return build(X, kernel, gamma, degree, coef0, plan, threads)
