"""Kernel operators: "multiply by K" without holding K, or holding as much of it as memory allows.

:func:`kernel_operator` returns a :class:`KernelOperator`, a ``scipy.sparse.linalg.LinearOperator`` whose
products run in the native core, with the kernel matrix held in the storage mode the memory limit allows
(storage.py: full, packed, cached or matrix-free). Packed, cached and matrix-free operators multiply by the
same tiles in the same order, so they give the same products bit for bit. The same class wraps a
precomputed matrix (:func:`from_matrix`) and an operator whose products come from Python
(:func:`python_operator`: an engine's distributed kernel, say), so the solvers see one kind of object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from scipy.sparse.linalg import LinearOperator

from .. import _native, _threads
from .. import _validation as v
from ..kernels import Kernel, NativeKernel, registry
from ..kernels.kernel import chunk_rows
from .storage import STORAGES, StoragePlan, pass_bytes, plan_for

if TYPE_CHECKING:
    from .._core import Operator as NativeOperator

__all__ = ["KernelOperator", "kernel_operator", "from_matrix", "build", "python_operator", "sparse_operator"]

class KernelOperator(LinearOperator):
    """A symmetric kernel matrix (or a centered, shifted or normalised view of one) as a SciPy LinearOperator.

    Products ``K @ V`` run in the native core on ``n_jobs`` threads and return float64 (float32 kernels
    are stored or evaluated in float32 and accumulated in float64; a solver with a loose tolerance may
    multiply them in float32, see :func:`fastkpca.operators.products_for`). SciPy's ``eigsh``, ``cg``, ``lobpcg``
    and any code that takes a LinearOperator accept it; :func:`fastkpca.eigsh` runs it natively. Used as a
    context manager, it releases what it holds on exit (kept tiles, on a cluster too).

    Attributes
    ----------
    storage : str
        "full", "packed", "cached", "matrix_free", or what a Python-side operator calls itself.
    nbytes : int
        Bytes the operator holds (kernel entries and the working copy of X).
    storage_dtype : numpy.dtype
        The type the kernel entries are stored or evaluated in.
    plan : StoragePlan or None
        Why this storage was chosen.
    native : the core's operator, which the solvers multiply by.

    Notes
    -----
    Made by :func:`fastkpca.kernel_operator` (and the estimators); the constructor's arguments are the
    engine's, not an interface.
    """

    def __init__(self, native: NativeOperator, *, n_jobs: int | None = None, plan: StoragePlan | None = None,
                 keep: np.ndarray | None = None, release: Callable[[], object] | None = None,
                 details: Callable[[], dict] | None = None, storage_dtype: DTypeLike | None = None,
                 diagonal: Callable[[], ArrayLike] | None = None, matrix: Any = None) -> None:
        super().__init__(dtype=np.dtype(np.float64), shape=(native.n, native.n))
        self.native = native
        self._storage_dtype = storage_dtype  # for a Python-side operator: the dtype its kernel is evaluated in
        self._threads = v.n_threads(n_jobs)
        self.plan = plan
        self._keep = keep  # arrays the native operator reads in place
        self._release = release  # frees what the operator holds elsewhere (an engine's kept tiles)
        self._details = details  # figures of the engine behind it, for solver_info_
        self._diagonal = diagonal  # K's diagonal, computed on demand
        #: The kernel matrix itself when the operator holds one (dense or sparse), else None.
        self.matrix = matrix

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def storage(self) -> str:
        return self.native.storage

    @property
    def nbytes(self) -> int:
        return int(self.native.nbytes) + (self._keep.nbytes if self._keep is not None else 0)

    @property
    def kernel_bytes(self) -> int:
        """Bytes of kernel entries held (as planned)."""
        return self.plan.kernel_bytes if self.plan is not None else self.nbytes

    @property
    def storage_dtype(self) -> np.dtype:
        if self._storage_dtype is not None:
            return np.dtype(self._storage_dtype)
        return np.dtype(np.float32 if self.native.scalar_bytes == 4 else np.float64)

    def _matmat(self, X: np.ndarray) -> np.ndarray:
        X = np.asfortranarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != self.shape[1]:
            raise ValueError(f"dimension mismatch: operator is {self.shape}, operand {X.shape}")
        return self.native.matmat(X, self._threads)

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self._matmat(np.asarray(x).reshape(-1, 1)).reshape(-1)

    def _adjoint(self) -> KernelOperator:
        return self

    def _transpose(self) -> KernelOperator:
        return self

    def row_sums(self) -> np.ndarray:
        """K·1 (= the column sums): computed once, and free after the first product of a tiled operator."""
        return self.native.row_sums(self._threads)

    def trace(self) -> float:
        """trace(K)."""
        return float(self.native.trace(self._threads))

    def diagonal(self) -> np.ndarray:
        """K's diagonal in float64 (of the stored or evaluated kernel, not of a view)."""
        if self._diagonal is None:
            raise ValueError(f"the diagonal of {self!r} is not known to fastkpca")
        return np.asarray(self._diagonal(), dtype=np.float64)

    def _view(self, native: NativeOperator) -> KernelOperator:
        return KernelOperator(native, n_jobs=self._threads or None, plan=self.plan, keep=self._keep,
                              release=self._release, details=self._details, storage_dtype=self._storage_dtype)

    def centered(self) -> KernelOperator:
        """H·K·H with H = I − 11ᵀ/N, applied implicitly (no rewrite, O(N·b) extra per product)."""
        return self._view(self.native.centered())

    def shifted(self, alpha: float) -> KernelOperator:
        """K + alpha·I, applied implicitly.

        Parameters
        ----------
        alpha : float
            The shift.

        Returns
        -------
        op : KernelOperator
            A view over the same kernel.
        """
        return self._view(self.native.shifted(v.check_real(alpha, "alpha")))

    def normalized(self, scale: ArrayLike, diagonal: ArrayLike) -> KernelOperator:
        """S·(K − diag(diagonal))·S with S = diag(scale), applied implicitly (O(N·b) extra per product): with
        ``diagonal`` K's diagonal and ``scale`` the inverse square roots of the degrees K·1 − diagonal, the
        normalised affinity of spectral embedding. Its trace is taken as 0 (``diagonal`` must be K's).

        Parameters
        ----------
        scale : array-like of shape (n,)
            The diagonal of S.
        diagonal : array-like of shape (n,)
            K's diagonal, subtracted before scaling.

        Returns
        -------
        op : KernelOperator
            A view over the same kernel.
        """
        n = self.shape[0]
        scale = np.ascontiguousarray(scale, dtype=np.float64)
        diagonal = np.ascontiguousarray(diagonal, dtype=np.float64)
        if scale.shape != (n,) or diagonal.shape != (n,):
            raise ValueError(f"scale and diagonal must have shape ({n},); got {scale.shape} and {diagonal.shape}")
        return self._view(self.native.normalized(scale, diagonal))

    def info(self) -> dict:
        """What the operator holds and why, and its engine's figures: for an estimator's ``solver_info_``."""
        plan = self.plan
        out = {"storage": self.storage, "storage_reason": plan.reason if plan else "",
               "kernel_bytes": self.kernel_bytes}
        if self._details is not None:
            out.update(self._details())
        return out

    def release(self) -> None:
        """Free what the operator holds outside this process's arrays (idempotent)."""
        if self._release is not None:
            self._release()

    def __enter__(self) -> KernelOperator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return (f"<{self.shape[0]}×{self.shape[1]} KernelOperator, storage={self.storage!r}, "
                f"{self.storage_dtype.name}, {self.nbytes / 2**20:.1f} MiB>")


def _pass_jobs(n_jobs: int | None, seconds: float) -> int | None:
    """The n_jobs an operator keeps for its passes (row sums, trace, products) whose one pass takes ``seconds``
    on one thread: 1 where the thread rule (_threads.py) gives the default team's small work one thread, else
    n_jobs as given. A solver's own rule (block Lanczos's, per block of vectors) can only narrow it further."""
    threads = _threads.pass_threads(v.n_threads(n_jobs), seconds)
    return threads if threads > 0 else None


def from_matrix(K: Any, plan: StoragePlan | None = None, n_jobs: int | None = None) -> KernelOperator:
    """The full storage over a symmetric K, read in place (and kept alive): a C-contiguous, aligned
    float32/float64 array, or a SciPy sparse matrix (:func:`sparse_operator`)."""
    if v.is_sparse(K):
        return sparse_operator(K, n_jobs, plan)
    return KernelOperator(_native.core.dense_operator(K), n_jobs=_pass_jobs(n_jobs, _threads.array_seconds(K.size)),
                          plan=plan, keep=K, diagonal=lambda: np.diagonal(K).copy(), matrix=K)


def build(X: Any, kernel: Kernel, plan: StoragePlan, n_jobs: int | None = None, *,
          zero_diagonal: bool = False) -> KernelOperator:
    """The operator of the kernel of validated samples X (as the kernel's check_samples left them) held as
    ``plan`` says (storage.plan_for): a native kernel's tiles (packed, cached, matrix-free) or Gram matrix;
    a precomputed kernel in place; another kernel's matrix, or its row blocks recomputed on every pass.

    ``zero_diagonal``: the kernel without its diagonal (an affinity, whose graph ignores self-loops), made so
    where the operator evaluates the kernel; a matrix that is the user's, or the only form of its kernel (a
    graph, kept as the fit's affinity_matrix_), keeps its diagonal. Either way ``diagonal()`` is the diagonal
    of what the operator multiplies by.
    """
    if plan.storage == "full":
        K, owned = kernel.matrix(X)
        if zero_diagonal and owned and kernel.blocks and isinstance(K, np.ndarray):
            np.fill_diagonal(K, 0)
        return from_matrix(K, plan, n_jobs)
    if not kernel.native:
        return _blocks_operator(X, kernel, plan, n_jobs, zero_diagonal)
    features = X.shape[1] if len(X.shape) > 1 else 0
    n_jobs = _pass_jobs(n_jobs, _threads.kernel_seconds(float(X.shape[0]) ** 2, features))
    native = kernel.native_operator(X, plan.cached_tile_rows, v.n_threads(n_jobs), zero_diagonal)
    diagonal = (lambda: np.zeros(X.shape[0])) if zero_diagonal else (lambda: kernel.diagonal(X))
    return KernelOperator(native, n_jobs=n_jobs, plan=plan, diagonal=diagonal)


def _blocks_operator(X: Any, kernel: Kernel, plan: StoragePlan, n_jobs: int | None = None,
                     zero_diagonal: bool = False) -> KernelOperator:
    """K·V of a kernel evaluated in Python, its row blocks K(X_I, X) recomputed on every pass (at most
    CROSS_KERNEL_CHUNK_BYTES of them, and a quarter of the plan's budget, at a time): no N×N array."""
    n = X.shape[0]
    diagonal = np.zeros(n) if zero_diagonal else kernel.diagonal(X)
    rows = chunk_rows(n, plan.budget_bytes)

    def matmat(V: np.ndarray) -> np.ndarray:
        out = np.empty((n, V.shape[1]))
        for start in range(0, n, rows):
            block = np.asarray(kernel.cross(X[start:start + rows], X), dtype=np.float64)
            if zero_diagonal:
                block[np.arange(block.shape[0]), start + np.arange(block.shape[0])] = 0.0
            out[start:start + block.shape[0]] = block @ V
        return out

    return python_operator(matmat, n, storage="matrix_free", trace=float(np.sum(diagonal)),
                           kernel_entries=float(n) * n, plan=plan, n_jobs=n_jobs,
                           details=lambda: {"block_rows": rows}, storage_dtype=np.float64, diagonal=lambda: diagonal)


def python_operator(matmat: Callable[[np.ndarray], np.ndarray], n: int, *, storage: str = "python",
                    trace: float | None = None, kernel_entries: float = 0.0, bytes_read: float = 0.0,
                    row_sums: Callable[[], np.ndarray] | None = None, plan: StoragePlan | None = None,
                    n_jobs: int | None = None, release: Callable[[], object] | None = None,
                    details: Callable[[], dict] | None = None, storage_dtype: DTypeLike | None = None,
                    diagonal: Callable[[], ArrayLike] | None = None, matrix: Any = None) -> KernelOperator:
    """An operator whose products are ``matmat(V)`` (n × b float64 in and out), run by the native solvers
    like any other. What it knows of itself comes with it: its storage name, trace(K), the cost of a pass
    (kernel entries evaluated, bytes of stored matrix read: the solvers choose their block width from it),
    a ``row_sums()`` callable, a ``release()`` callable, a ``details()`` callable of figures and the dtype
    its kernel is evaluated in."""
    native = _native.core.python_operator(matmat, int(n), storage=storage, trace=trace,
                                          kernel_entries=float(kernel_entries), bytes_read=float(bytes_read),
                                          row_sums=row_sums)
    return KernelOperator(native, n_jobs=n_jobs, plan=plan, release=release, details=details,
                          storage_dtype=storage_dtype, diagonal=diagonal, matrix=matrix)


def sparse_operator(A: Any, n_jobs: int | None = None, plan: StoragePlan | None = None) -> KernelOperator:
    """A symmetric SciPy sparse matrix as an operator (storage "sparse"): its products are SciPy's CSR
    products, its row sums and trace computed once from the stored entries."""
    A = A.tocsr()
    n = A.shape[0]
    sums = np.asarray(A.sum(axis=1), dtype=np.float64).reshape(-1)
    trace = float(A.diagonal().sum())

    def matmat(V: np.ndarray) -> np.ndarray:
        return np.asarray(A @ V, dtype=np.float64)

    return python_operator(matmat, n, storage="sparse", trace=trace, bytes_read=float(A.data.nbytes + A.indices.nbytes),
                           row_sums=lambda: sums, n_jobs=n_jobs, storage_dtype=A.dtype, plan=plan,
                           diagonal=A.diagonal, matrix=A)


def kernel_operator(X: ArrayLike, *, kernel: str = "rbf", gamma: float | None = None, degree: float = 3,
                    coef0: float = 1.0, storage: str = "auto", memory_limit: int | str | None = None,
                    block_size: int = 8, n_jobs: int | None = None) -> KernelOperator:
    """The kernel matrix ``K[i, j] = k(X[i], X[j])`` as an operator, held within a memory limit.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Samples; float32 data gives a float32 kernel (products still return float64). A sparse matrix is
        evaluated from its sparse rows (never densified).
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
    registry.check_kernel(kernel)
    storage = v.check_choice(storage, "storage", STORAGES)
    samples: Any = X if v.is_sparse(X) else v.check_samples(X, "X")
    native = NativeKernel.resolve(kernel, gamma, degree, coef0, samples.shape[1], n_jobs)
    samples = native.check_samples(samples)
    limit = v.memory_limit(memory_limit)
    block_size = v.check_int(block_size, "block_size", minimum=1)
    plan = plan_for(native, samples, block_size=block_size, memory_limit=limit,
                    other_bytes=pass_bytes(block_size, samples.shape[0]), storage=storage)
    return build(samples, native, plan, n_jobs)
