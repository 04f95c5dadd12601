"""The precomputed kind: the samples are the kernel matrix itself (scikit-learn's ``kernel="precomputed"``),
dense or sparse, read in place and never changed; new samples are the rows of their cross kernel with the
training samples. Its affinity variant is a graph's weights (spectral embedding): non-negative, and
symmetrised when its asymmetry is rounding."""

from __future__ import annotations

import numpy as np

from .. import _native, _threads
from .. import _validation as v
from .kernel import Kernel

__all__ = ["PrecomputedKernel", "PrecomputedAffinity", "ASYMMETRY_RTOL"]

#: Relative asymmetry of a precomputed affinity read as rounding (symmetrised); above it ValueError.
ASYMMETRY_RTOL = 1e-10


def _sparse_asymmetry(A) -> float:
    return float(abs(A - A.T).max()) if A.nnz else 0.0


class PrecomputedKernel(Kernel):
    """X is K: ``cross(X, Y)`` is X itself (the rows of K(x, Y) the caller computed; scikit-learn's
    pairwise_kernels with metric="precomputed"), checked to have one column per row of Y.

    :meth:`check_samples` establishes what the layers below read: square, finite, C-contiguous and aligned
    (dense) or CSR (sparse), and records whether it is exactly symmetric (``symmetric``; the Lanczos
    solver needs it).
    """

    precomputed = True
    blocks = False

    def __init__(self, threads: int = 0, name: str = "X (the precomputed kernel)"):
        super().__init__(threads)
        self.name = name

    @property
    def label(self) -> str:
        return "kernel='precomputed'"

    def check_samples(self, X, name: str | None = None):
        name = name or self.name
        if v.is_sparse(X):
            from scipy import sparse

            K = sparse.csr_matrix(X)
            if K.dtype not in (np.float32, np.float64):
                K = K.astype(np.float64)
            v.check_square(K, name)
            if not np.isfinite(K.data).all():
                raise ValueError(f"{name} contains NaN or infinity")
            self.asymmetry = _sparse_asymmetry(K)
            self.symmetric = self.asymmetry == 0
            return K
        K = v.contiguous(v.as_float_array(X, name))
        v.check_square(K, name)
        finite, _, asym = _native.core.scan_square(K, True, _threads.array_threads(self.threads, K.size))
        if not finite:
            raise ValueError(f"{name} contains NaN or infinity")
        self.asymmetry = float(asym)
        self.symmetric = asym == 0
        return K

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        return 0  # read in place

    def new_rows(self, X, Y, dtype=None):
        if X.shape[1] != Y.shape[0]:
            raise ValueError(f"Precomputed metric requires shape (n_queries, n_indexed). Got {X.shape} for "
                             f"{Y.shape[0]} indexed.")
        if v.is_sparse(X):
            return X
        return v.contiguous(v.as_float_array(X, "X (the precomputed kernel)"))

    def fitted_in(self, Y, dtype):
        return Y  # only its shape is read

    def cross(self, X, Y=None, out=None):
        if Y is not None and X.shape[1] != Y.shape[0]:
            raise ValueError(f"Precomputed metric requires shape (n_queries, n_indexed). Got {X.shape} for "
                             f"{Y.shape[0]} indexed.")
        return self._into(X.toarray() if v.is_sparse(X) else X, out) if out is not None else X

    def diagonal(self, X) -> np.ndarray:
        return np.asarray(X.diagonal(), dtype=np.float64)

    def matrix(self, X):
        return X, False

    def columns(self, X):
        return MatrixColumns(X)

    def product(self, X, Y, V, memory_limit=None):
        return np.asarray(X @ np.asarray(V, dtype=np.float64), dtype=np.float64)

    def between_samples(self, what: str) -> Kernel:
        raise ValueError(f"Cannot {what} with a precomputed kernel.")


class PrecomputedAffinity(PrecomputedKernel):
    """A precomputed affinity (a graph's edge weights): square, finite, non-negative and symmetric, where an
    asymmetry within ASYMMETRY_RTOL of its largest entry is rounding and is averaged away (scikit-learn
    warns and symmetrises any asymmetry, which hides a wrong input); its diagonal is ignored by the
    Laplacian. A copy is made only to symmetrise. np.matrix raises TypeError as scikit-learn does."""

    def __init__(self, threads: int = 0, name: str = "X (the affinity)"):
        super().__init__(threads, name)

    @property
    def label(self) -> str:
        return "affinity='precomputed'"

    def check_samples(self, X, name: str | None = None):
        name = name or self.name
        if isinstance(X, np.matrix):
            raise TypeError("np.matrix is not supported. Please convert to a numpy array with np.asarray. For more "
                            "information see: https://numpy.org/doc/stable/reference/generated/numpy.matrix.html")
        A = super().check_samples(X, name)
        values = A.data if v.is_sparse(A) else A
        low = float(values.min()) if values.size else 0.0
        if low < 0:
            raise ValueError(f"{name} has negative entries (min {low:.6g}): a spectral embedding needs non-negative "
                             "affinities")
        if self.symmetric:
            return A
        top = float(np.abs(values).max(initial=0.0))
        if self.asymmetry > ASYMMETRY_RTOL * top:
            raise ValueError(f"{name} must be symmetric; max |A - A.T| = {self.asymmetry:.3g}")
        self.symmetric, self.asymmetry = True, 0.0
        if v.is_sparse(A):
            return ((A + A.T) * 0.5).tocsr()
        return v.contiguous((A + A.T) * A.dtype.type(0.5))

    def between_samples(self, what: str) -> Kernel:
        raise ValueError(f"Cannot {what} with a precomputed affinity.")


class MatrixColumns:
    """The diagonal and columns of an explicit kernel matrix (dense or sparse), as a column source."""

    def __init__(self, K):
        self.K, self.n = K, K.shape[0]
        self.dtype = np.dtype(K.dtype)

    def diagonal(self) -> np.ndarray:
        return np.asarray(self.K.diagonal()).copy()

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        if v.is_sparse(self.K):
            out[...] = self.K[:, index].toarray()
            return out
        return np.take(self.K, index, axis=1, out=out)
