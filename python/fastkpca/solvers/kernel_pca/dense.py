"""scikit-learn's eigensolvers on an explicitly centered kernel matrix: dense LAPACK (``scipy.linalg.eigh``
by index), ARPACK (``scipy.sparse.linalg.eigsh``) and the randomized one (sklearn.utils.extmath), as
KernelPCA's eigen_solver="dense" | "arpack" | "randomized" runs them, and the centering in place they need."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _native, _threads
from ... import _validation as v
from ...kernels import KernelCentering

__all__ = ["center_kernel", "top_eigenpairs", "SOLVERS"]

SOLVERS = ("dense", "arpack", "randomized")


def center_kernel(K: np.ndarray, *, threads: int) -> tuple[np.ndarray, KernelCentering, float]:
    """(H K H, the centering K defines, trace(H K H)), centered in place: K must be the fit's own (a
    C-contiguous float array the caller may overwrite; a user's precomputed kernel is copied before)."""
    trace_K = float(np.trace(K, dtype=np.float64))
    ok, column_means, grand_mean = _native.core.double_center_inplace(K, "kernel", 1.0,
                                                                       _threads.array_threads(threads, K.size))
    if not ok:
        raise ValueError("the kernel matrix contains NaN or infinity")
    # trace(H K H) = trace(K) − 1ᵀK1/N = trace(K) − N·m̄.
    return K, KernelCentering(column_means, grand_mean), trace_K - K.shape[0] * float(grand_mean)


def top_eigenpairs(Kc: np.ndarray, k: int, solver: str, *, tol: float = 0.0, maxiter: int | None = None,
                   iterated_power: int | str = "auto", random_state: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The top k eigenpairs of the symmetric Kc by scikit-learn's ``solver`` with KernelPCA's arguments
    (ARPACK's start uniform(-1, 1) from random_state; randomized: 'module' selection)."""
    n = Kc.shape[0]
    if solver == "dense":
        from ..dense.eigh import symmetric_eigh

        values, vectors = symmetric_eigh(Kc, subset_by_index=(n - k, n - 1))
        if values.shape[0] < k:
            # LAPACK's subset-by-index driver can return fewer pairs than asked for (none at all on a
            # matrix with a highly repeated eigenvalue); the full decomposition always returns n.
            values, vectors = symmetric_eigh(Kc)
            values, vectors = values[n - k:], vectors[:, n - k:]
        if values.shape[0] < k:
            raise RuntimeError(f"the dense eigensolver returned {values.shape[0]} of {k} pairs")
        return values, vectors
    rng = v.check_random_state(random_state)
    if solver == "arpack":
        from scipy.sparse.linalg import eigsh

        return eigsh(Kc, k, which="LA", tol=tol, maxiter=maxiter, v0=rng.uniform(-1, 1, n))
    from sklearn.utils.extmath import _randomized_eigsh

    return _randomized_eigsh(Kc, n_components=k, n_iter=iterated_power, random_state=rng, selection="module")
