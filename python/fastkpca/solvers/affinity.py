"""The affinity of spectral embedding and clustering, as an operator with its degrees.

An affinity given by a native kernel's name is never built: it is the kernel operator of the samples, held
by their engine in the storage the memory limit allows (full, packed, cached or matrix-free, on a cluster
too), and its degrees come from the operator's row sums less its diagonal. Every other affinity is a
matrix in this process: a precomputed one (dense or sparse), a k-nearest-neighbour graph (sparse,
symmetrised as scikit-learn does: (C + Cᵀ)/2), or the values of a callable or of one of scikit-learn's
pairwise kernels (dense, after a memory check). The estimators see one kind of object either way.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .. import _native
from .. import _validation as v
from ..kernels import NativeKernel
from ..operators import from_matrix, sparse_operator
from ..solvers import lanczos
from ..solvers.spectral import Degrees, degrees

__all__ = ["GRAPHS", "Affinity", "kernel_affinity", "matrix_affinity", "check_affinity_matrix"]

GRAPHS = ("nearest_neighbors", "precomputed_nearest_neighbors")
#: Relative asymmetry of a precomputed affinity read as rounding (symmetrised); above it ValueError.
ASYMMETRY_RTOL = 1e-10


@dataclass
class Affinity:
    """An affinity operator, its degrees, and the matrix itself where it was materialised (else None)."""

    op: object
    degrees: Degrees
    matrix: object = None
    kernel: NativeKernel | None = None
    samples: object = None  # a kernel affinity's samples

    def dense(self, what: str):
        """The affinity as a matrix: the one given, or a kernel affinity built now (memory checked)."""
        if self.matrix is not None:
            return self.matrix
        X = self.samples.local(what)
        n = X.shape[0]
        v.check_memory(n * n * X.dtype.itemsize, f"{what} (the {n}×{n} kernel affinity)")
        return self.kernel.cross(v.check_samples(X, "X"))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.op.release()


def kernel_affinity(samples, kernel: NativeKernel, k: int, memory_limit, n_jobs) -> Affinity:
    """The kernel operator of the samples, planned by their engine for the top k pairs within the limit."""
    n = samples.shape[0]
    block, working = lanczos.memory_needs(k, n)
    plan = samples.plan(kernel, block_size=block, memory_limit=memory_limit, other_bytes=working + 4 * 8 * n)
    op = samples.kernel_operator(kernel, plan, n_jobs)
    try:
        diagonal = samples.columns(kernel).diagonal()
        deg = degrees(op.row_sums(), diagonal)
    except BaseException:
        op.release()
        raise
    return Affinity(op, deg, None, kernel, samples)


def check_affinity_matrix(A, name: str = "affinity", n_jobs=None):
    """A precomputed affinity checked and made ready for the core: square, finite, non-negative and
    symmetric (an asymmetry within ASYMMETRY_RTOL of its largest entry is rounding and is averaged away;
    scikit-learn warns and symmetrises any asymmetry, which hides a wrong input). Dense: C-contiguous
    float32/float64; sparse: CSR. np.matrix raises TypeError as scikit-learn does."""
    if isinstance(A, np.matrix):
        raise TypeError("np.matrix is not supported. Please convert to a numpy array with np.asarray. For "
                        "more information see: https://numpy.org/doc/stable/reference/generated/numpy.matrix.html")
    if v.is_sparse(A):
        from scipy import sparse

        A = sparse.csr_matrix(A)
        if A.dtype not in (np.float32, np.float64):
            A = A.astype(np.float64)
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
            raise ValueError(f"{name} must be a non-empty square matrix, got shape {A.shape}")
        if not np.isfinite(A.data).all():
            raise ValueError(f"{name} contains NaN or infinity")
        if A.nnz and A.data.min() < 0:
            raise ValueError(f"{name} has negative entries (min {A.data.min():.6g}): a spectral embedding needs "
                             "non-negative affinities")
        top = float(np.abs(A.data).max(initial=0.0))
        asym = float(abs(A - A.T).max()) if A.nnz else 0.0
        if asym > ASYMMETRY_RTOL * top:
            raise ValueError(f"{name} must be symmetric; max |A - A.T| = {asym:.3g}")
        if asym:
            A = ((A + A.T) * 0.5).tocsr()
        return A
    A = v.contiguous(v.as_float_array(A, name))
    v.check_square(A, name)
    finite, top, asym = _native.core.scan_square(A, True, v.n_threads(n_jobs))
    if not finite:
        raise ValueError(f"{name} contains NaN or infinity")
    if A.min() < 0:
        raise ValueError(f"{name} has negative entries (min {A.min():.6g}): a spectral embedding needs "
                         "non-negative affinities")
    if asym > ASYMMETRY_RTOL * top:
        raise ValueError(f"{name} must be symmetric; max |A - A.T| = {asym:.3g}")
    if asym:
        A = v.contiguous((A + A.T) * A.dtype.type(0.5))
    return A


def matrix_affinity(A, n_jobs=None) -> Affinity:
    """An affinity matrix already checked by :func:`check_affinity_matrix`, as an operator read in place."""
    if v.is_sparse(A):
        op = sparse_operator(A, n_jobs)
        diagonal = A.diagonal().astype(np.float64)
    else:
        op = from_matrix(A, None, n_jobs)
        diagonal = np.diagonal(A).astype(np.float64)
    return Affinity(op, degrees(op.row_sums(), diagonal), A)


def graph_is_connected(affinity: Affinity) -> bool:
    """Whether the graph of the affinity's off-diagonal entries is connected: scikit-learn's test for a
    matrix (connected components of a sparse graph, a breadth-first search over a dense one); for a kernel
    operator (all of whose entries are positive unless they underflow), whether no node is isolated."""
    if affinity.matrix is None:
        return affinity.degrees.n_isolated == 0
    from sklearn.manifold._spectral_embedding import _graph_is_connected

    return bool(_graph_is_connected(affinity.matrix))


def warn_if_disconnected(affinity: Affinity) -> None:
    if not graph_is_connected(affinity):
        warnings.warn("Graph is not fully connected, spectral embedding may not work as expected.",
                      UserWarning, stacklevel=4)


def knn_graph(X, n_neighbors: int, precomputed: bool, n_jobs=None):
    """scikit-learn's k-nearest-neighbour connectivity (each point its own first neighbour, or the
    precomputed distances' neighbours), symmetrised as (C + Cᵀ)/2: sparse CSR."""
    from sklearn.neighbors import NearestNeighbors, kneighbors_graph

    if precomputed:
        C = NearestNeighbors(n_neighbors=n_neighbors, n_jobs=n_jobs, metric="precomputed").fit(X) \
            .kneighbors_graph(X=X, mode="connectivity")
    else:
        C = kneighbors_graph(X, n_neighbors, include_self=True, n_jobs=n_jobs)
    return (0.5 * (C + C.T)).tocsr()


def pairwise_affinity(X, metric, params: dict, n_jobs=None) -> np.ndarray:
    """The dense affinity of a callable or of a scikit-learn pairwise kernel not native here, after a
    memory check."""
    from sklearn.metrics.pairwise import pairwise_kernels

    n = X.shape[0]
    v.check_memory(2 * n * n * 8, f"the {n}×{n} affinity of {getattr(metric, '__name__', metric)!r}")
    return pairwise_kernels(X, metric=metric, filter_params=True, n_jobs=n_jobs, **params)
