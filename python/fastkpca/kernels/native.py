"""One native kernel with its parameters resolved, and what the layers above evaluate through it: kernel
blocks, diagonals, products K(X, Y)·V that never store K, the columns randomly pivoted Cholesky reads, and
the fitted products of transform and predict."""

from __future__ import annotations

import numpy as np

from .. import _native
from .. import _validation as v
from . import registry

__all__ = ["NativeKernel", "KernelColumns", "MatrixColumns", "KernelProduct"]


class NativeKernel:
    """A native kernel with resolved parameters.

    ``cross(X, Y)`` is ``K(X, Y)``; for rbf it is computed after shifting both sides by Y's column means, so
    a chunk of X's rows gets exactly the rows the whole X would: streamed results do not depend on the
    chunking. ``diagonal(X)`` is ``k(x_i, x_i)``. Arrays must be validated, C-contiguous and of one dtype.
    """

    __slots__ = ("name", "gamma", "degree", "coef0", "threads")

    def __init__(self, name: str, gamma: float, degree: float, coef0: float, threads: int):
        self.name, self.gamma, self.degree, self.coef0, self.threads = name, gamma, degree, coef0, threads

    @classmethod
    def resolve(cls, kernel, gamma, degree, coef0, n_features: int, n_jobs=None) -> NativeKernel:
        """Validated kernel name and parameters (gamma None -> 1 / n_features; scikit-learn's defaults)."""
        name = registry.check_kernel(kernel)
        gamma, degree, coef0 = registry.kernel_params(name, gamma, degree, coef0, n_features)
        return cls(name, gamma, degree, coef0, v.n_threads(n_jobs))

    @property
    def params(self) -> tuple:
        """(name, gamma, degree, coef0), as the core's functions take them."""
        return self.name, self.gamma, self.degree, self.coef0

    def on_threads(self, threads: int) -> NativeKernel:
        """The same kernel evaluated on ``threads`` threads (1 in a task that shares a worker's cores)."""
        return NativeKernel(self.name, self.gamma, self.degree, self.coef0, threads)

    @property
    def unit_diagonal(self) -> bool:
        return registry.KERNELS[self.name].unit_diagonal

    def cross(self, X: np.ndarray, Y: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        n_y = X.shape[0] if Y is None else Y.shape[0]
        if out is None:
            out = v.empty((X.shape[0], n_y), X.dtype, f"a {X.shape[0]}×{n_y} kernel block")
        _native.core.gram_into(X, Y, *self.params, out, self.threads)
        return out

    def product(self, X: np.ndarray, Y: np.ndarray, V: np.ndarray, out: np.ndarray | None = None,
                rows: int = 65536) -> np.ndarray:
        """``K(X, Y) @ V`` in float64, tile by tile: the cross kernel is never stored.

        X goes to the core ``rows`` rows at a time, which bounds the core's padded working copy of the
        output; the result does not depend on ``rows``.
        """
        V = np.ascontiguousarray(V, dtype=np.float64)
        if out is None:
            out = v.empty((X.shape[0], V.shape[1]), np.float64, f"a {X.shape[0]}×{V.shape[1]} product")
        for start in range(0, X.shape[0], rows):
            part = X[start:start + rows]
            _native.core.cross_product_into(part, Y, *self.params, V, out[start:start + part.shape[0]], self.threads)
        return out

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0], dtype=X.dtype)
        _native.core.kernel_diagonal_into(X, *self.params, out, self.threads)
        return out

    def __repr__(self):
        return f"NativeKernel({self.name!r}, gamma={self.gamma}, degree={self.degree}, coef0={self.coef0})"


class KernelColumns:
    """The diagonal and columns K(X, X_S) of a native kernel, evaluated on demand: what randomly pivoted
    Cholesky reads (solvers/low_rank.py's column source)."""

    def __init__(self, X: np.ndarray, kernel: NativeKernel):
        self.X, self.kernel, self.n, self.dtype = X, kernel, X.shape[0], X.dtype

    def diagonal(self) -> np.ndarray:
        return self.kernel.diagonal(self.X)

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        return self.kernel.cross(self.X, np.ascontiguousarray(self.X[index]), out=out)


class MatrixColumns:
    """The diagonal and columns of an explicit (precomputed) kernel matrix, as a column source."""

    def __init__(self, K: np.ndarray):
        self.K, self.n, self.dtype = K, K.shape[0], K.dtype

    def diagonal(self) -> np.ndarray:
        return np.diagonal(self.K).copy()

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        return np.take(self.K, index, axis=1, out=out)


class KernelProduct:
    """A fitted product for new rows: ``x ↦ correction(K(x, Y)·V)``, the cross kernel multiplied into V
    tile by tile and never stored. Picklable, so an engine can ship it with a task.

    The kernel is evaluated in Y's dtype (``promote=False``: KernelPCA's transform), or in float32 only when
    both sides are float32 (``promote=True``: scikit-learn's pairwise kernels upcast that way, and
    KernelRidge's predictions follow them). ``correction`` (a picklable function of the product, or None)
    finishes each row block; the result is cast to ``out_dtype`` when given.
    """

    def __init__(self, Y: np.ndarray, kernel: NativeKernel, V: np.ndarray, correction=None, *,
                 promote: bool = False, out_dtype=None):
        self.Y, self.kernel, self.correction = Y, kernel, correction
        self.V = np.ascontiguousarray(V, dtype=np.float64)
        self.promote, self.out_dtype = promote, out_dtype

    @property
    def width(self) -> int:
        return self.V.shape[1]

    def on_threads(self, threads: int) -> KernelProduct:
        """The same map evaluated on ``threads`` threads (an engine's tasks share their worker's cores)."""
        return KernelProduct(self.Y, self.kernel.on_threads(threads), self.V, self.correction, promote=self.promote,
                             out_dtype=self.out_dtype)

    def __call__(self, X) -> np.ndarray:
        dtype = self.Y.dtype if not self.promote else np.result_type(X.dtype, self.Y.dtype, np.float32)
        Y = v.check_samples(self.Y, "X_fit_", dtype)
        out = self.kernel.product(v.check_samples(X, "X", dtype), Y, self.V)
        if self.correction is not None:
            out = self.correction(out)
        return out if self.out_dtype is None else out.astype(self.out_dtype, copy=False)
