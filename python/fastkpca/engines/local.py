"""The in-process engine: the samples are an array in this process's memory (dense, or a CSR matrix that the
native kernels evaluate from its sparse rows), the kernel operator is held in the storage the memory limit
allows (full, packed, cached or matrix-free), and the streamed passes run over chunks of rows here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import _validation as v
from ..kernels import Kernel
from ..operators import storage as _storage
from ..operators.samples import KernelViews
from ..solvers.rows import ArrayRows

if TYPE_CHECKING:
    from .base import Engine, Samples

__all__ = ["LocalEngine", "LocalSamples", "LOCAL"]

_FLOATS = [np.float64, np.float32]


class LocalSamples(KernelViews, ArrayRows):
    """Validated samples (dense or sparse) in this process's memory."""

    holds_matrix = True

    def __init__(self, X, engine: LocalEngine):
        super().__init__(X)
        self.engine = engine

    def bind(self, kernel: Kernel) -> Kernel:
        kernel = kernel.for_samples(self.X)
        self.X = kernel.check_samples(self.X)
        return kernel

    def plan(self, kernel, *, block_size: int, memory_limit, other_bytes: int, storage: str = "auto"):
        return _storage.plan_for(kernel, self.X, block_size=block_size, memory_limit=v.memory_limit(memory_limit),
                                 other_bytes=other_bytes, storage=storage)

    def kernel_operator(self, kernel, plan, n_jobs=None, *, zero_diagonal: bool = False):
        from ..operators import build  # SciPy's LinearOperator, only where an operator is made

        return build(self.X, kernel, plan, n_jobs, zero_diagonal=zero_diagonal)

    def astype(self, dtype):
        return LocalSamples(self.X.astype(dtype), self.engine)

    def kernel_matrix(self, kernel, *, what: str, memory_limit: int, writable: bool = False, hint: str = "",
                      dtype=None):
        n = self.X.shape[0]
        X = self.X if dtype is None or self.X.dtype == dtype else self.X.astype(dtype)
        itemsize = X.dtype.itemsize if X.dtype in (np.float32, np.float64) else 8
        v.check_within(kernel.matrix_bytes(n, itemsize), memory_limit, f"{what} with the whole {n}×{n} kernel matrix",
                       hint)
        K, owned = kernel.matrix(X)
        owned = owned or X is not self.X  # a cast precomputed matrix is a copy already
        if not writable or (owned and isinstance(K, np.ndarray) and K.flags.c_contiguous and K.flags.writeable):
            return K
        # The user's matrix (a precomputed kernel) or a sparse one: the caller writes a copy.
        v.check_within(n * n * itemsize, memory_limit, f"{what} with a copy of the {n}×{n} kernel matrix", hint)
        return v.contiguous(K.toarray() if v.is_sparse(K) else np.array(K, order="C", copy=True))

    def columns(self, kernel):
        return kernel.columns(self.X)

    def cross_product(self, kernel, V, correction=None, *, promote=False, out_dtype=None, memory_limit=None):
        return kernel.cross_product(self.X, V, correction, promote=promote, out_dtype=out_dtype,
                                    memory_limit=memory_limit)

    def fitted(self, copy=False):
        return np.copy(self.X) if copy else self.X

    def gradient_traces(self, kernel, A, B):
        return kernel.gradient_traces_low_rank(self.X, A, B)

    def local(self):
        return self

    def over(self, X_fit):
        return self if X_fit is self.X else LocalSamples(X_fit, self.engine)

    def info(self) -> dict:
        return {}


class LocalEngine:
    """The in-process engine (see engines/base.py for the protocol)."""

    name = "local"

    def accepts(self, X) -> bool:
        return True

    def fit_samples(self, estimator, X, y=None, *, targets=False, accept_sparse=False, copy=False, vector_input=True):
        from .._sklearn_compat import validate_data  # scikit-learn only where an estimator runs

        # Samples that are not vectors (strings, sequences, a stack of matrices: what a kernel object or a callable of
        # two sets reads) stay as given.
        arrays = {"dtype": _FLOATS} if vector_input else {"dtype": None, "ensure_2d": False, "allow_nd": True}
        if not targets:
            return LocalSamples(validate_data(estimator, X, accept_sparse=accept_sparse, copy=copy, **arrays),
                                self), None
        v.check_same_length(X, y)
        X, y = validate_data(estimator, X, y=y, accept_sparse=accept_sparse, copy=copy, multi_output=True,
                             y_numeric=True, **arrays)
        return LocalSamples(X, self), y

    def new_samples(self, estimator, X, *, accept_sparse=False, vector_input=True):
        from .._sklearn_compat import validate_data

        arrays = {"dtype": _FLOATS} if vector_input else {"dtype": None, "ensure_2d": False, "allow_nd": True}
        return validate_data(estimator, X, accept_sparse=accept_sparse, reset=False, **arrays)

    def samples(self, X) -> LocalSamples:
        """Samples already validated (a fitted model's, brought here)."""
        return LocalSamples(X, self)

    def apply(self, rowmap, X):
        return rowmap(X)

    def wrap(self, Z, X):
        return Z

    def gather(self, a, name: str):
        return a

    def localise(self, state: dict) -> dict:
        return state

    def __reduce__(self):
        return (_local, ())


def _local():
    return LOCAL


#: The one in-process engine.
LOCAL = LocalEngine()


if TYPE_CHECKING:  # mypy checks the engine and its samples against the protocols (engines/base.py)
    _engine: Engine = LOCAL

    def _samples(samples: LocalSamples) -> Samples:
        return samples
