"""The in-process engine: the samples are an array in this process's memory, the kernel operator is held
in the storage the memory limit allows (full, packed, cached or matrix-free), and the streamed passes run
over chunks of rows here."""

from __future__ import annotations

import numpy as np

from .. import _validation as v
from ..kernels import KernelColumns, KernelProduct
from ..operators import storage as _storage
from ..solvers.rows import ArrayRows

__all__ = ["LocalEngine", "LocalSamples", "LOCAL"]

_FLOATS = [np.float64, np.float32]


class LocalSamples(ArrayRows):
    """Validated samples (dense or sparse) in this process's memory."""

    def __init__(self, X, engine: LocalEngine):
        super().__init__(X)
        self.engine = engine
        self._dense = None

    def local(self, what: str):
        return self.X

    def dense(self) -> np.ndarray:
        """X as the native core reads it: C-contiguous and aligned (sparse data densified, once, after a
        memory check)."""
        if self._dense is None:
            self._dense = v.check_samples(self.X, "X", self.X.dtype)
        return self._dense

    def plan(self, kernel, *, block_size: int, memory_limit, other_bytes: int, storage: str = "auto"):
        n, d = self.X.shape
        return _storage.plan_storage(n, d, self.X.dtype.itemsize, block_size=block_size,
                                     memory_limit=v.memory_limit(memory_limit), other_bytes=other_bytes,
                                     storage=storage)

    def kernel_operator(self, kernel, plan, n_jobs=None):
        from ..operators import build  # SciPy's LinearOperator, only where an operator is made

        return build(self.dense(), kernel, plan, n_jobs)

    def columns(self, kernel):
        return KernelColumns(self.dense(), kernel)

    def cross_product(self, kernel, V, correction=None, *, promote=False, out_dtype=None):
        return KernelProduct(self.dense(), kernel, V, correction, promote=promote, out_dtype=out_dtype)

    def fitted(self):
        return self.X

    def info(self) -> dict:
        return {}


class LocalEngine:
    """The in-process engine (see engines/base.py for the protocol)."""

    name = "local"

    def accepts(self, X) -> bool:
        return True

    def fit_samples(self, estimator, X, y=None, *, targets=False, accept_sparse=False, copy=False):
        from .._sklearn_compat import validate_data  # scikit-learn only where an estimator runs

        if not targets:
            return LocalSamples(validate_data(estimator, X, accept_sparse=accept_sparse, copy=copy, dtype=_FLOATS),
                                self), None
        v.check_same_length(X, y)
        X, y = validate_data(estimator, X, y=y, accept_sparse=accept_sparse, copy=copy, multi_output=True,
                             y_numeric=True, dtype=_FLOATS)
        return LocalSamples(X, self), y

    def new_samples(self, estimator, X, *, accept_sparse=False):
        from .._sklearn_compat import validate_data

        return validate_data(estimator, X, accept_sparse=accept_sparse, reset=False, dtype=_FLOATS)

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
