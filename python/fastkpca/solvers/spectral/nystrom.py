"""Approximate spectral embedding through the Nyström factor (Fowlkes, Belongie, Chung and Malik 2004), for
sample counts beyond what exact passes afford.

With S the m landmarks, C = K(X, S) and T the whitening of W = K(S, S) (low_rank.whitening: T Tᵀ = W⁺), the
kernel is replaced by K̃ = Φ Φᵀ, Φ = C T. Then

- degrees: d̂ = K̃·1 − a = Φ (Φᵀ 1) − a, with Φᵀ 1 = Tᵀ (Cᵀ 1) = Tᵀ K(S, X)·1 (a the kernel's diagonal, as the
  exact embedding ignores self-loops): a pass of N·m kernel evaluations for Cᵀ1, then one of N·m for d̂;
- the normalised affinity D̂^(-1/2) K̃ D̂^(-1/2) = Φ̃ Φ̃ᵀ with Φ̃ = D̂^(-1/2) Φ, whose top eigenvectors are
  u = Φ̃ q / √σ for the eigenpairs (σ, q) of the r×r matrix Φ̃ᵀ Φ̃ = Tᵀ (Cᵀ D̂⁻¹ C) T: a pass with N·m² flops
  (nystrom_moments with weights 1/d̂);
- the embedding u / √d̂ = D̂⁻¹ C (T Q Σ^(-1/2)): a pass of N·m kernel evaluations.

The term −D̂^(-1/2) diag(a) D̂^(-1/2) of the exact normalised affinity is left out: it is diagonal, of size
a/d̂ (1/d̂ for rbf: O(1/N) of the eigenvalues near 1), and not low-rank. Memory O(m² + N·k); the N×m
features are never stored. Rows with d̂ <= 0 (possible: K̃ is only approximately non-negative) are
treated as isolated nodes (degree taken as 1, weight 0) and counted in ``solver_info_``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dense.eigh import symmetric_eigh
from ..low_rank import (NystromProjection, landmark_whitening, landmarks, nystrom_moments,
                        stream_rows)
from ..rows import as_rows
from .embedding import finish, degrees as exact_degrees

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples

__all__ = ["nystrom_embedding"]


class _ColumnSums:
    """One chunk's K(S, chunk)·1 (m,), in float64: the landmarks' kernel sums over the samples."""

    def __init__(self, S: np.ndarray, kernel: Kernel) -> None:
        self.S, self.kernel = S, kernel

    def on_threads(self, threads: int) -> _ColumnSums:
        return _ColumnSums(self.S, self.kernel.on_threads(threads))

    def __call__(self, X: Any) -> np.ndarray:
        X = self.kernel.new_rows(X, self.S, self.S.dtype)
        return self.kernel.product(self.S, X, np.ones((X.shape[0], 1))).reshape(-1)


def nystrom_embedding(samples: SolverSamples, kernel: Kernel, n_components: int, *, drop_first: bool,
                      n_landmarks: int | None, landmarks_spec: Any, random_state: Any,
                      memory_limit: int) -> tuple[np.ndarray, dict]:
    """(embedding, solver_info) of the normalised Nyström affinity on ``n_landmarks`` landmarks chosen by
    ``landmarks_spec`` ("rpcholesky", "uniform" or the points); four streamed passes over an engine's
    samples (engines/base.py: a row source with the kernel's diagonal)."""
    seconds = {}
    start = time.perf_counter()
    n = samples.shape[0]
    k = n_components + 1 if drop_first else n_components
    S, index, selection = landmarks(samples, landmarks_spec, n_landmarks, kernel, random_state=random_state,
                                    memory_limit=memory_limit, name="n_landmarks")
    m = S.shape[0]
    if k > m:
        raise ValueError(f"n_components={n_components}{' (+1 for drop_first)' if drop_first else ''} is larger "
                         f"than n_landmarks={m}: the Nyström affinity has rank at most n_landmarks")
    seconds["landmarks"] = time.perf_counter() - start
    rows = stream_rows(n, m, samples.dtype.itemsize, memory_limit, extra_bytes=8 * n * (k + 4),
                       what=f"eigen_solver='nystrom' with {m} landmarks")
    source = as_rows(samples)
    start = time.perf_counter()
    T, rank = landmark_whitening(S, kernel)
    sums = source.reduce(_ColumnSums(S, kernel), rows=rows)                  # Cᵀ1
    P = (T @ (T.T @ sums))[:, None]                                          # W⁺ Cᵀ 1
    row_sums = source.map(NystromProjection(S, kernel, P, None), rows=rows).reshape(-1)   # K̃·1
    diagonal = np.asarray(samples.kernel_of(kernel).columns().diagonal(), dtype=np.float64)
    positive = row_sums - diagonal > 0
    deg = exact_degrees(np.where(positive, row_sums, diagonal), diagonal)  # d̂ <= 0: isolated
    seconds["degrees"] = time.perf_counter() - start
    start = time.perf_counter()
    weights = np.where(deg.isolated, 0.0, 1.0 / np.where(deg.isolated, 1.0, deg.degrees))
    gram, _ = nystrom_moments(source, S, kernel, rows, weights=weights)
    G = T.T @ gram @ T
    G = (G + G.T) / 2
    k_eff = min(k, rank)
    values, Q = symmetric_eigh(G, subset_by_index=(rank - k_eff, rank - 1))
    values, Q = values[::-1], Q[:, ::-1]
    seconds["moments"] = time.perf_counter() - start
    start = time.perf_counter()
    root = np.sqrt(np.maximum(values, 0))
    P = T @ (Q / np.where(root > 0, root, 1.0))
    U = source.map(NystromProjection(S, kernel, P, None), rows=rows)         # C T Q Σ^(-1/2)
    U *= weights[:, None]                                                    # D̂⁻¹: D̂^(-1/2) of Φ̃, then / √d̂
    vectors = np.zeros((n, k))
    vectors[:, :k_eff] = U
    embedding = finish(vectors, None, drop_first, n_components)  # U already carries the division by √d̂
    seconds["embedding"] = time.perf_counter() - start
    info = {"solver": "nystrom", "landmarks": selection["method"], "n_landmarks": m, "rank": rank,
            "chunk_rows": rows, "memory_limit": memory_limit, "landmark_selection": selection,
            "laplacian_eigenvalues": 1.0 - values, "n_isolated": deg.n_isolated, "seconds": seconds,
            "landmark_indices": index}
    return embedding, info
