"""Affinities of spectral embedding and clustering that are matrices built from all the samples at once,
not kernels of pairs: scikit-learn's k-nearest-neighbour connectivity graph (of the samples, or of a
precomputed distance matrix) and SpectralEmbedding's callable affinity (a function of X). Each is a kernel
kind whose only evaluation is :meth:`matrix`, checked as a precomputed affinity is (non-negative,
symmetric)."""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from .. import _validation as v
from .kernel import Kernel
from .precomputed import PrecomputedAffinity

__all__ = ["NeighborsGraph", "AffinityFunction"]


class _MatrixOnly(Kernel):
    """A kernel that exists only as the matrix of all the samples."""

    blocks = False

    def check_samples(self, X, name: str = "X"):
        return X

    def cross(self, X, Y=None, out=None):
        raise ValueError(f"{self.label} is a matrix of the training samples: it has no kernel between other samples")

    def diagonal(self, X) -> np.ndarray:
        return np.asarray(self.matrix(X)[0].diagonal(), dtype=np.float64)

    def columns(self, X):
        raise ValueError(f"{self.label} has no kernel columns: use a kernel affinity for a Nyström solver")

    def between_samples(self, what: str) -> Kernel:
        raise ValueError(f"Cannot {what} with {self.label}.")

    def checked(self, A):
        return PrecomputedAffinity(self.threads, f"the affinity matrix of {self.label}").check_samples(A)


class NeighborsGraph(_MatrixOnly):
    """scikit-learn's k-nearest-neighbour connectivity (each point its own first neighbour, or the precomputed
    distances' neighbours), symmetrised as (C + Cᵀ)/2: a sparse CSR affinity. On sparse samples scikit-learn
    falls back to the rbf affinity with a warning (``sparse_fallback``); so does this kind."""

    def __init__(self, n_neighbors: int, precomputed: bool, n_jobs=None, sparse_fallback: Kernel | None = None):
        super().__init__(v.n_threads(n_jobs))
        self.n_neighbors, self.precomputed_distances, self.n_jobs = n_neighbors, precomputed, n_jobs
        self.sparse_fallback = sparse_fallback

    @property
    def label(self) -> str:
        return f"affinity={'precomputed_nearest_neighbors' if self.precomputed_distances else 'nearest_neighbors'!r}"

    def for_samples(self, X) -> Kernel:
        if v.is_sparse(X) and not self.precomputed_distances and self.sparse_fallback is not None:
            warnings.warn("Nearest neighbors affinity currently does not support sparse input, falling back to rbf "
                          "affinity", stacklevel=5)
            return self.sparse_fallback
        return self

    def check_samples(self, X, name: str = "X"):
        if self.precomputed_distances:
            v.check_square(X, "X (the precomputed distances)")
        return X

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        return 4 * n * self.n_neighbors * 12  # C, its transpose, their sum: CSR entries of 12 bytes

    def matrix(self, X):
        from sklearn.neighbors import NearestNeighbors, kneighbors_graph

        if self.precomputed_distances:
            C = NearestNeighbors(n_neighbors=self.n_neighbors, n_jobs=self.n_jobs, metric="precomputed").fit(X) \
                .kneighbors_graph(X=X, mode="connectivity")
        else:
            C = kneighbors_graph(X, self.n_neighbors, include_self=True, n_jobs=self.n_jobs)
        return self.checked((0.5 * (C + C.T)).tocsr()), True


class AffinityFunction(_MatrixOnly):
    """SpectralEmbedding's callable affinity: ``affinity(X)`` returns the N×N affinity (dense or sparse)."""

    def __init__(self, func: Callable, n_jobs=None):
        super().__init__(v.n_threads(n_jobs))
        self.func = func

    @property
    def label(self) -> str:
        return f"affinity={self.func!r}"

    def matrix(self, X):
        return self.checked(self.func(X)), True
