"""The native kind: one of the registry's kernels with its parameters resolved, evaluated by the native core
on dense or sparse (CSR) samples: kernel blocks, diagonals, and products K(X, Y)·V that never store K."""

from __future__ import annotations

import math

import numpy as np

from .. import _native
from .. import _validation as v
from . import registry
from .kernel import Kernel

__all__ = ["NativeKernel", "features", "native_operand"]

#: Log-space bounds of gamma as a hyperparameter (scikit-learn's default bounds of a length scale, 1e-5 to
#: 1e5, mapped through gamma = 1/(2ℓ²)).
_GAMMA_BOUNDS = (math.log(0.5e-10), math.log(0.5e10))


def features(X) -> int:
    """The features an entry of X's rows evaluates: its columns, or for CSR rows the values a row stores on average
    (the thread rule's depth of an entry, fastkpca/_threads.py)."""
    if v.is_sparse(X):
        return int(min(X.shape[1], math.ceil(X.nnz / max(X.shape[0], 1))))
    return int(X.shape[1])


def native_operand(X):
    """X as the core's sparse entry points take it: (indptr int64, indices int32, data, n_columns) for a
    canonical CSR matrix (v.check_sparse_samples), or X itself when dense."""
    if not v.is_sparse(X):
        return X
    return (np.asarray(X.indptr, dtype=np.int64), np.asarray(X.indices, dtype=np.int32), X.data, int(X.shape[1]))


class NativeKernel(Kernel):
    """A native kernel with resolved parameters.

    ``cross(X, Y)`` is ``K(X, Y)``; on dense data rbf is computed after shifting both sides by Y's column
    means, so a chunk of X's rows gets exactly the rows the whole X would: streamed results do not depend on
    the chunking. On sparse data (CSR) every entry comes from sparse inner products and the rows' norms
    (scikit-learn's sparse path computes the same), X never densified. ``diagonal(X)`` is ``k(x_i, x_i)``.
    """

    native = True
    distributed = True
    float32_columns = True

    def __init__(self, name: str, gamma: float, degree: float, coef0: float, threads: int = 0):
        super().__init__(threads)
        self.name, self.gamma, self.degree, self.coef0 = name, gamma, degree, coef0

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

    @property
    def label(self) -> str:
        return f"kernel={self.name!r}"

    def block_tiles(self, a, b=None, zero_diagonal: bool = False) -> np.ndarray:
        return _native.core.kernel_block_tiles(a, b, *self.params, 1, zero_diagonal)

    def block_product(self, a, b, kept, va, vb, zero_diagonal: bool = False) -> tuple:
        # One work unit on one thread: the transposed side needs one buffer of b's rows, not sixteen.
        return _native.core.kernel_block_product(a, b, *self.params, kept, va, vb, 1, 1, zero_diagonal)

    @property
    def unit_diagonal(self) -> bool:
        return registry.KERNELS[self.name].unit_diagonal

    # -------------------------------------------------------------------------------------- samples

    def check_samples(self, X, name: str = "X"):
        X = v.check_sparse_samples(X, name) if v.is_sparse(X) else super().check_samples(X, name)
        self.check_dtype(X.dtype)
        return X

    def check_dtype(self, dtype) -> None:
        """ValueError naming gamma when it overflows ``dtype``: the core scales in the samples' dtype, where such
        a gamma is inf and 0·gamma NaN (linear and cosine ignore gamma)."""
        if self.name not in ("linear", "cosine") and self.gamma > float(np.finfo(dtype).max):
            raise ValueError(f"gamma={self.gamma:g} overflows {np.dtype(dtype).name}, the samples' dtype: pass "
                             "float64 samples or a smaller gamma")

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        return n * n * itemsize

    def new_rows(self, X, Y, dtype=None):
        """New rows in the fitted samples' format: CSR against sparse samples (a dense X made sparse), dense
        against dense ones (a sparse X densified: its rows × features fit, since the fit's did)."""
        dtype = dtype or (X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        if v.is_sparse(Y):
            from scipy import sparse

            return v.check_sparse_samples(X if v.is_sparse(X) else sparse.csr_matrix(np.asarray(X)), "X", dtype)
        return v.check_samples(X, "X", dtype)

    # ------------------------------------------------------------------------------------- evaluation

    @staticmethod
    def _pair(X, Y):
        """X and Y in one format for the core: both dense, or both CSR (a dense side made sparse)."""
        if Y is None or v.is_sparse(X) == v.is_sparse(Y):
            return X, Y
        from scipy import sparse

        if v.is_sparse(X):
            return X, v.check_sparse_samples(sparse.csr_matrix(Y), "Y", X.dtype)
        return v.check_sparse_samples(sparse.csr_matrix(X), "X", Y.dtype), Y

    def cross(self, X, Y=None, out: np.ndarray | None = None) -> np.ndarray:
        X, Y = self._pair(X, Y)
        n_y = X.shape[0] if Y is None else Y.shape[0]
        if out is None:
            out = v.empty((X.shape[0], n_y), X.dtype, f"a {X.shape[0]}×{n_y} kernel block")
        threads = self.pass_threads(out.size, features(X))
        if v.is_sparse(X):
            _native.core.sparse_gram_into(native_operand(X), None if Y is None else native_operand(Y), *self.params,
                                          out, threads)
        else:
            _native.core.gram_into(X, Y, *self.params, out, threads)
        return out

    def product(self, X, Y, V: np.ndarray, memory_limit: int | None = None, out: np.ndarray | None = None,
                rows: int = 65536) -> np.ndarray:
        """``K(X, Y) @ V`` in float64, tile by tile: the cross kernel is never stored.

        X goes to the core ``rows`` rows at a time, which bounds the core's padded working copy of the
        output; the result does not depend on ``rows``.
        """
        X, Y = self._pair(X, Y)
        V = np.ascontiguousarray(V, dtype=np.float64)
        if out is None:
            out = v.empty((X.shape[0], V.shape[1]), np.float64, f"a {X.shape[0]}×{V.shape[1]} product")
        sparse = v.is_sparse(X)
        Y_operand = native_operand(Y)
        for start in range(0, X.shape[0], rows):
            part = X[start:start + rows]
            target = out[start:start + part.shape[0]]
            threads = self.pass_threads(part.shape[0] * Y.shape[0], features(Y) + 2 * V.shape[1])
            if sparse:
                _native.core.sparse_cross_product_into(native_operand(part), Y_operand, *self.params, V, target,
                                                       threads)
            else:
                _native.core.cross_product_into(part, Y, *self.params, V, target, threads)
        return out

    def diagonal(self, X) -> np.ndarray:
        out = np.empty(X.shape[0], dtype=X.dtype)
        threads = self.pass_threads(X.shape[0], features(X))
        if v.is_sparse(X):
            _native.core.sparse_kernel_diagonal_into(native_operand(X), *self.params, out, threads)
        else:
            _native.core.kernel_diagonal_into(X, *self.params, out, threads)
        return out

    def matrix(self, X):
        return self.cross(X), True

    def column_source(self, X, memory_limit: int | None = None, fast: bool = False):
        """Each working set's columns evaluated by the fused micro-kernel against the solver's rows, prepared
        once (dense), or from the sparse rows (CSR); X is read in place, or with ``fast`` a float32 copy of a
        dense float64 X (the sparse rows' products run in float64 whatever their dtype)."""
        if v.is_sparse(X):
            return _native.core.svm_sparse_columns(native_operand(X), *self.params,
                                                   self.pass_threads(X.shape[0], features(X)))
        if fast and X.dtype == np.float64 and (self.name in ("linear", "cosine")
                                                or self.gamma <= float(np.finfo(np.float32).max)):
            if memory_limit is not None:
                v.check_within(X.size * 4, memory_limit, f"a float32 copy of the {X.shape[0]}×{X.shape[1]} samples")
            X = v.contiguous(X.astype(np.float32))
        return _native.core.svm_dense_columns(X, *self.params, self.pass_threads(X.shape[0], X.shape[1]))

    def native_operator(self, X, cached_tile_rows: int, threads: int, zero_diagonal: bool = False):
        if v.is_sparse(X):
            return _native.core.sparse_kernel_operator(native_operand(X), *self.params, cached_tile_rows, threads,
                                                       zero_diagonal)
        return _native.core.kernel_operator(X, *self.params, cached_tile_rows, threads, zero_diagonal)

    # ------------------------------------------------------------------------------ hyperparameters

    @property
    def hyperparameters(self) -> tuple[str, ...]:
        return ("gamma",) if "gamma" in registry.KERNELS[self.name].parameters else ()

    @property
    def theta(self) -> np.ndarray:
        return np.log([self.gamma]) if self.hyperparameters else np.empty(0)

    @property
    def bounds(self) -> np.ndarray:
        return np.array([_GAMMA_BOUNDS]) if self.hyperparameters else np.empty((0, 2))

    def with_theta(self, theta) -> NativeKernel:
        theta = np.asarray(theta, dtype=np.float64).reshape(-1)
        if theta.shape[0] != len(self.hyperparameters):
            raise ValueError(f"{self.label} has {len(self.hyperparameters)} hyperparameter(s), got theta of length "
                             f"{theta.shape[0]}")
        if not theta.shape[0]:
            return self
        return NativeKernel(self.name, float(np.exp(theta[0])), self.degree, self.coef0, self.threads)

    def __repr__(self):
        return f"NativeKernel({self.name!r}, gamma={self.gamma}, degree={self.degree}, coef0={self.coef0})"
