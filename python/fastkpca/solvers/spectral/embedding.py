"""Spectral embedding of an affinity operator: the graph Laplacian's bottom eigenvectors as the top
eigenvectors of a view of the affinity, never a Laplacian matrix.

What is computed (scikit-learn's ``spectral_embedding`` with SciPy's ``csgraph.laplacian``, exactly):
with A the symmetric non-negative affinity, a its diagonal (ignored, as the graph Laplacian ignores
self-loops) and d = A·1 − a the degrees,

- ``norm_laplacian=True``: L = I − D^(-1/2) (A − diag a) D^(-1/2), its diagonal set to 1 (scikit-learn sets
  the diagonal of the normalised Laplacian to 1, also for an isolated node, a row with d = 0, whose degree
  is taken as 1). The bottom eigenvectors of L are the top ones of M = S (A − diag a) S, S = diag(s),
  s = d^(-1/2) (1 where d = 0): the operator view ``normalized(s, a)``, whose eigenvalues lie in [−1, 1] and
  whose top ones crowd at 1, one per well-separated cluster. The embedding is x / √d (x / 1 for an isolated
  node): scikit-learn's ``embedding / dd``.
- ``norm_laplacian=False``: L = D − (A − diag a). Its bottom eigenvectors are the top ones of
  c·I − L = (A − diag a) − D + c·I with c = 2·max d (the view ``normalized(1, a + d − c)``; by
  Gershgorin L's eigenvalues lie in [0, 2·max d], so the view is positive semi-definite and the solver's
  relative tolerance is relative to c). The embedding is x itself.

Then every row of the embedding (one per eigenvector, in order of ascending Laplacian eigenvalue) is signed
so that its largest-magnitude entry is positive, and ``drop_first`` drops the first (for a connected graph
the constant vector times √d). The eigenpairs come from the block Lanczos solver (solvers/krylov/lanczos.py) on
the view (which solves small problems densely itself).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..krylov import lanczos
from .start import partition_start

if TYPE_CHECKING:
    from ...operators.operator import KernelOperator

__all__ = ["Degrees", "degrees", "laplacian_view", "finish", "embed", "DEFAULT_TOL"]

#: Relative residual of every returned pair: ‖Mx − θx‖ ≤ tol·|θ₁|, θ₁ = 1 for the normalised affinity of a
#: graph with an edge. An eigenvector whose eigenvalue is separated from the others by a gap g is then
#: within an angle of about tol/g of the exact one; a tighter tolerance costs more passes where the gap
#: after the last wanted eigenvalue is small.
DEFAULT_TOL = 1e-8


@dataclass
class Degrees:
    """d = A·1 − a (a the diagonal), the square roots scikit-learn divides by (``dd``: 1 at an isolated
    node), and which nodes are isolated."""

    degrees: np.ndarray
    diagonal: np.ndarray
    root: np.ndarray
    isolated: np.ndarray

    @property
    def n_isolated(self) -> int:
        return int(self.isolated.sum())


def degrees(row_sums: np.ndarray, diagonal: np.ndarray) -> Degrees:
    """The degrees of the graph whose edge weights are A's off-diagonal entries. Negative or non-finite
    degrees (an affinity with negative entries, NaN or infinity) raise ValueError; rounding may leave a
    degree of a few ulps of the row sum below 0, which is taken as 0 (isolated)."""
    row_sums = np.asarray(row_sums, dtype=np.float64)
    diagonal = np.asarray(diagonal, dtype=np.float64)
    d = row_sums - diagonal
    if not np.isfinite(d).all():
        raise ValueError("affinity: the affinity contains NaN or infinity (or its row sums overflow)")
    noise = 64 * np.finfo(np.float64).eps * np.abs(row_sums).max(initial=0.0)
    if (d < -noise).any():
        i = int(np.argmin(d))
        raise ValueError(f"affinity: a spectral embedding needs non-negative affinities; row {i} has degree "
                         f"{d[i]:.6g} (the sum of its off-diagonal entries)")
    d = np.maximum(d, 0.0)
    isolated = d <= noise
    d[isolated] = 0.0
    root = np.where(isolated, 1.0, np.sqrt(d))
    return Degrees(d, diagonal, root, isolated)


def laplacian_view(op: KernelOperator, deg: Degrees, norm_laplacian: bool) -> tuple[KernelOperator, float]:
    """The operator whose top eigenvectors are the Laplacian's bottom ones (see the module's
    documentation), and the shift c with L's eigenvalues = c − θ."""
    if norm_laplacian:
        return op.normalized(1.0 / deg.root, deg.diagonal), 1.0
    c = 2.0 * float(deg.degrees.max(initial=0.0)) or 1.0
    return op.normalized(np.ones_like(deg.degrees), deg.diagonal + deg.degrees - c), c


def finish(vectors: np.ndarray, root: np.ndarray | None, drop_first: bool, n_components: int) -> np.ndarray:
    """scikit-learn's post-processing: divide by ``root`` (√d for the normalised Laplacian; None: no
    division), sign each eigenvector so that its largest entry is positive, drop the first when asked;
    returns (n_samples, n_components)."""
    embedding = vectors.T.copy()  # one row per eigenvector, ascending Laplacian eigenvalue
    if root is not None:
        embedding /= root
    rows = np.arange(embedding.shape[0])
    signs = np.sign(embedding[rows, np.argmax(np.abs(embedding), axis=1)])
    embedding *= np.where(signs == 0, 1.0, signs)[:, None]
    start = 1 if drop_first else 0
    return np.ascontiguousarray(embedding[start:start + n_components].T)


def embed(op: KernelOperator, deg: Degrees, n_components: int, *, norm_laplacian: bool = True,
          drop_first: bool = True, tol: float | None = None, maxiter: int | None = None, block_size: int | None = None,
          random_state: Any = None, threads: int = 1, progress: Callable[..., Any] | None = None,
          partition: Callable[[int], np.ndarray | None] | None = None) -> tuple[np.ndarray, dict]:
    """(embedding, info) of an affinity operator ``op`` (a KernelOperator: any storage, a sparse or a
    Python-side operator) with its degrees, by block Lanczos on its Laplacian view. ``info`` holds the
    solver's figures (passes, residuals, block width, ...) and the Laplacian's eigenvalues.

    ``partition(groups)``, when given, returns labels of the samples (or None) from which the solver's
    start block is made (start.py: √d times the groups' indicators), for at most as many groups
    as the block has columns and pairs are wanted."""
    k = n_components + 1 if drop_first else n_components
    view, shift = laplacian_view(op, deg, norm_laplacian)
    b = lanczos.block_size_for(view, k) if block_size is None else block_size
    start, began = None, time.perf_counter()
    if partition is not None and not lanczos.solves_densely(k, b, deg.root.shape[0]):
        labels = partition(min(k, b))
        if labels is not None:
            start = partition_start(labels, deg.root if norm_laplacian else None)
    seconds = time.perf_counter() - began
    values, vectors, info = lanczos.solve(view, k, tol=DEFAULT_TOL if tol is None else tol, maxiter=maxiter,
                                          block_size=b, random_state=random_state, threads=threads,
                                          progress=progress, start=start)
    info["start"] = "random" if start is None else f"partition into {start.shape[1]} groups"
    info["start_seconds"] = seconds
    info["laplacian_eigenvalues"] = shift - values
    info["n_isolated"] = deg.n_isolated
    return finish(vectors, deg.root if norm_laplacian else None, drop_first, n_components), info
