"""A start block for the spectral solve: √d times the indicator vectors of a k-means partition of the
samples.

Why. For an affinity whose graph falls into c nearly disconnected clusters, the top c eigenvectors of the
normalised affinity M = D^(-1/2) A D^(-1/2) are, to within the weight of the edges between the clusters,
D^(1/2)·1_C for the clusters C: M·D^(1/2)·1_C = D^(-1/2)·A·1_C, which is D^(1/2)·1_C on C and the cut
weights elsewhere (the near-null vectors of the Laplacian that aggregation-based multigrid builds its
coarse spaces from). A Krylov method started from random vectors has to discover that structure by
diffusion, one pass at a time, and the more passes the smaller the gap after the wanted eigenvalues; from
the indicators of the clusters it starts in the wanted subspace (bench/spectral.py reports the passes).

How. k-means (scikit-learn's, one initialisation) on a uniform subsample of at most SUBSAMPLE_ROWS rows
gives the centres; every sample is assigned to its nearest centre in one streamed map over the samples
(so a Dask engine's samples stay on their workers). The start is only a start: the solver's result is the
same to within its tolerance whatever the partition, and a partition that does not follow the affinity's
clusters (k-means on two moons, say) is a start like random vectors. For the unnormalised Laplacian D − A the
near-null vectors are the indicators themselves.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _validation as v
from ..rows import as_rows

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples

__all__ = ["KMeansPartition", "NearestCentre", "partition_of", "partition_start", "SUBSAMPLE_ROWS", "MIN_ROWS"]

#: Rows of the uniform subsample k-means runs on.
SUBSAMPLE_ROWS = 20_000
#: Below this many samples no partition is made (a few passes cost less than k-means).
MIN_ROWS = 2_000
#: Rows per chunk of the assignment to the nearest centre.
_ASSIGN_ROWS = 65_536


class NearestCentre:
    """The index of each row's nearest centre (Euclidean), for one chunk of samples (dense or sparse)."""

    def __init__(self, centres: np.ndarray) -> None:
        self.centres = np.asarray(centres, dtype=np.float64)
        self.norms = np.einsum("ij,ij->i", self.centres, self.centres)

    def __call__(self, X: Any) -> np.ndarray:
        # argmin_c ‖x − c‖² = argmin_c ‖c‖² − 2 x·c, without the N×c distances' ‖x‖² term
        scores = np.asarray(X @ self.centres.T, dtype=np.float64)
        return np.argmin(self.norms[None, :] - 2.0 * scores, axis=1).astype(np.int64)


class KMeansPartition:
    """``partition(groups)``: the labels (n,) of a k-means partition of the samples (an array or an engine's
    row source) into at most ``groups`` groups; seeded once, so a fit is reproducible."""

    def __init__(self, samples: SolverSamples | np.ndarray, seed: int) -> None:
        self.samples, self.seed = samples, int(seed)

    def __call__(self, groups: int) -> np.ndarray | None:
        from sklearn.cluster import KMeans

        source = as_rows(self.samples)
        n = source.shape[0]
        if n < MIN_ROWS or groups < 2:
            return None
        rng = np.random.RandomState(self.seed)
        index = np.sort(rng.choice(n, size=min(n, SUBSAMPLE_ROWS), replace=False))
        sub = source.rows(index)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # fewer distinct points than groups: fewer groups, said below
            km = KMeans(groups, n_init=1, max_iter=50, random_state=self.seed).fit(sub)
        centres = np.unique(km.cluster_centers_, axis=0)
        return source.map(NearestCentre(centres), rows=_ASSIGN_ROWS)


def partition_of(samples: SolverSamples | None, kernel: Kernel | None, seed: int) -> KMeansPartition | None:
    """The k-means partition of an affinity's samples when they are points its kernel is evaluated between
    (a kernel affinity); None for the rows of a matrix or for a graph (the solver starts from random vectors)."""
    if samples is None or kernel is None or not kernel.blocks:
        return None
    return KMeansPartition(samples, seed)


def partition_start(labels: np.ndarray, root: np.ndarray | None) -> np.ndarray:
    """(n, groups) orthonormal columns root·1_g / ‖root·1_g‖ for the non-empty groups g of ``labels``
    (root None: the indicators themselves), disjoint supports, hence orthogonal."""
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.shape[0]
    groups = np.unique(labels)
    start = v.empty((n, groups.shape[0]), np.float64, f"the solver's {n}×{groups.shape[0]} start block")
    start[:] = 0.0
    start[np.arange(n), np.searchsorted(groups, labels)] = 1.0 if root is None else root
    norms = np.linalg.norm(start, axis=0)
    return start[:, norms > 0] / norms[norms > 0]
