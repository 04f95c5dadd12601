"""The affinity of spectral embedding and clustering, as an operator with its degrees.

The affinity is a kernel (kernels.Kernel, any kind) of an engine's samples: its operator is held by their
engine in the storage the memory limit allows (a native kernel's tiles, full, packed, cached or
matrix-free, on a cluster too: an rbf affinity is never built), a precomputed affinity is read in place,
and a graph (the k-nearest-neighbour connectivity) is its sparse matrix. The degrees come from the
operator's row sums less its diagonal. The estimators see one kind of object whatever the affinity is.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...operators import from_matrix
from ..krylov import lanczos
from .embedding import Degrees, degrees

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.operator import KernelOperator
    from ...operators.samples import SolverSamples

__all__ = ["Affinity", "affinity_of", "matrix_affinity", "warn_if_disconnected"]


@dataclass
class Affinity:
    """An affinity operator and its degrees; the kernel and samples it came from (None for a matrix given
    directly)."""

    op: KernelOperator
    degrees: Degrees
    kernel: Any = None
    samples: Any = None

    @property
    def matrix(self) -> Any:
        """The affinity as a matrix when the operator holds one (dense or sparse), else None."""
        return self.op.matrix

    def retained(self) -> Any:
        """What a fitted estimator keeps of the affinity (``affinity_matrix_``): the matrix of an affinity its
        kernel cannot rebuild from the samples (a graph, a precomputed matrix), else None (a kernel affinity is
        rebuilt on access and never held after the fit)."""
        if self.kernel is not None and self.kernel.blocks:
            return None
        return self.matrix

    def dense(self, what: str, memory_limit: int) -> Any:
        """The affinity as a matrix: the one held, or the kernel's matrix built now (a memory check first;
        ValueError where the engine cannot build it here)."""
        if self.matrix is not None:
            return self.matrix
        return self.samples.kernel_of(self.kernel).matrix(what=what, memory_limit=memory_limit)

    def __enter__(self) -> Affinity:
        return self

    def __exit__(self, *exc: object) -> None:
        self.op.release()


def affinity_of(samples: SolverSamples, kernel: Kernel, k: int, memory_limit: Any, n_jobs: int | None) -> Affinity:
    """The affinity ``kernel`` of an engine's samples (engines/base.py), planned by their engine for the top k
    pairs within the memory limit, and its degrees.

    The operator is the kernel without its diagonal wherever the engine evaluates the kernel: the degrees are
    then its row sums, not the difference of two row sums dominated by the diagonal (an rbf affinity of
    distant points has k(x, x) = 1 and off-diagonal entries near 1e-15, whose sum the difference would lose
    to rounding, and the normalised operator with it)."""
    n = samples.shape[0]
    block, working = lanczos.memory_needs(k, n)
    plan = samples.kernel_of(kernel).plan(block_size=block, memory_limit=memory_limit, other_bytes=working + 4 * 8 * n)
    op: KernelOperator = samples.kernel_of(kernel).operator(plan, n_jobs, zero_diagonal=True)
    try:
        deg = degrees(op.row_sums(), op.diagonal())
    except BaseException:
        op.release()
        raise
    return Affinity(op, deg, kernel, samples)


def matrix_affinity(A: Any, n_jobs: int | None = None) -> Affinity:
    """An affinity matrix (checked as kernels.PrecomputedAffinity checks one) as an operator read in place."""
    op = from_matrix(A, None, n_jobs)
    return Affinity(op, degrees(op.row_sums(), op.diagonal()))


def graph_is_connected(affinity: Affinity) -> bool:
    """Whether the graph of the affinity's off-diagonal entries is connected: scikit-learn's test for a
    matrix (connected components of a sparse graph, a breadth-first search over a dense one); for a kernel
    operator (all of whose entries are positive unless they underflow), whether no node is isolated."""
    if affinity.matrix is None:
        return affinity.degrees.n_isolated == 0
    return matrix_graph_is_connected(affinity.matrix)


#: Rows of a dense affinity read at once by :func:`matrix_graph_is_connected`'s search.
_SEARCH_ROWS = 256


def matrix_graph_is_connected(A: Any) -> bool:
    """Whether every node of the graph of A's nonzero entries is reached from node 0 along its rows: for a
    sparse A, its weakly connected components (SciPy's); for a dense one, a breadth-first search whose
    frontier's rows are read a block at a time (each row once: O(n²) time, O(n) memory beside A)."""
    from scipy import sparse

    if sparse.issparse(A):
        from scipy.sparse.csgraph import connected_components

        return bool(connected_components(sparse.csr_matrix(A), directed=True, connection="weak")[0] == 1)
    n = A.shape[0]
    reached = np.zeros(n, dtype=bool)
    reached[0] = True
    frontier = np.array([0])
    while frontier.size:
        found = np.zeros(n, dtype=bool)
        for start in range(0, frontier.size, _SEARCH_ROWS):
            found |= (A[frontier[start:start + _SEARCH_ROWS]] != 0).any(axis=0)
        frontier = np.flatnonzero(found & ~reached)
        reached[frontier] = True
    return bool(reached.all())


def warn_if_disconnected(affinity: Affinity) -> None:
    if not graph_is_connected(affinity):
        warnings.warn("Graph is not fully connected, spectral embedding may not work as expected.",
                      UserWarning, stacklevel=4)
