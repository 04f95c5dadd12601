"""Kernel k-means: Lloyd's iterations in the feature space φ of a kernel, by one product of the kernel operator per
iteration, and greedy k-means++ seeding by kernel columns.

With weights w and clusters C_j of total weight W_j, the centroid of cluster j is μ_j = Σ_{i∈C_j} w_i φ(x_i) / W_j,
so μ_j = Φᵀz_j for the weight vector z_j (z_ij = w_i / W_j on the members, 0 elsewhere; Dhillon, Guan & Kulis
2004's weighted kernel k-means). For the n × k matrix Z of these vectors and P = K Z (one pass over the kernel),

    ‖φ(x_i) − μ_j‖² = K_ii − 2 P_ij + z_jᵀ P_j                     (the centroids' squared norms from the same P)
    ‖μ_j − μ'_j‖²   = z_jᵀ K z_j − 2 z_jᵀ K z'_j + z'_jᵀ K z'_j    (the centre shift, from this pass's P and the last)

so an iteration costs one kernel pass however the operator holds K (full, packed, cached, matrix-free, on a
cluster), and every start of ``n_init`` rides in the same pass as k more columns. The objective (inertia) is
Σ_i w_i ‖φ(x_i) − μ_{label(i)}‖². The iteration follows scikit-learn's Lloyd: assign, relocate empty clusters to
the points farthest from their centroids, recompute; stop when the assignment repeats or the centres' total
squared shift is at most ``tol`` times the data's weighted feature-space variance; the final labels are the
assignment to the final centroids.

The same iteration runs on the Nyström approximation K ≈ Φ̃Φ̃ᵀ (:class:`FeatureOperator`: an n × r feature
matrix, products Φ̃(Φ̃ᵀZ)), so the approximate solver differs from the exact one in its operator only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ...kernels.kernel import Kernel
    from ...operators.samples import ColumnSource

__all__ = ["FeatureOperator", "KMeansStart", "LloydResult", "kmeans_plus_plus", "random_centres", "lloyd",
           "working_bytes", "member_weights", "weight_matrix", "local_trials", "CentroidDistances", "NewDiagonal"]


@dataclass
class KMeansStart:
    """One start of Lloyd's iteration: the initial labels, the samples chosen as centres, and the kernel columns
    that seeding evaluated."""

    labels: np.ndarray
    centres: np.ndarray
    columns: int = 0


@dataclass
class LloydResult:
    """The best start's answer: labels, the weighted objective, the centroids' weight vectors Z (n × k) and their
    squared norms zⱼᵀKzⱼ, iterations of that start, and the figures of the whole run."""

    labels: np.ndarray
    inertia: float
    weights: np.ndarray
    norms: np.ndarray
    n_iter: int
    info: dict = field(default_factory=dict)


class FeatureOperator:
    """K ≈ F Fᵀ for an n × r feature matrix F (the Nyström features), stored in its own dtype (float32 halves it)
    and multiplied in float64 a chunk of rows at a time: products F(FᵀV), the diagonal the rows' squared norms,
    columns F F[index]ᵀ."""

    #: Rows of F converted to float64 at a time.
    CHUNK_ROWS = 16384

    #: The columns' dtype (they are multiplied in float64).
    dtype = np.dtype(np.float64)

    def __init__(self, F: np.ndarray) -> None:
        self.F = F
        self.shape = (F.shape[0], F.shape[0])

    def _chunks(self) -> Iterator[tuple[slice, np.ndarray]]:
        for start in range(0, self.F.shape[0], self.CHUNK_ROWS):
            yield slice(start, start + self.CHUNK_ROWS), np.asarray(self.F[start:start + self.CHUNK_ROWS],
                                                                     dtype=np.float64)

    def transpose_product(self, V: np.ndarray) -> np.ndarray:
        """Fᵀ V (r × b)."""
        out = np.zeros((self.F.shape[1], V.shape[1]))
        for rows, chunk in self._chunks():
            out += chunk.T @ V[rows]
        return out

    def __matmul__(self, V: np.ndarray) -> np.ndarray:
        V = np.asarray(V, dtype=np.float64)
        C = self.transpose_product(V)
        out = np.empty((self.F.shape[0], V.shape[1]))
        for rows, chunk in self._chunks():
            np.matmul(chunk, C, out=out[rows])
        return out

    def diagonal(self) -> np.ndarray:
        out = np.empty(self.F.shape[0])
        for rows, chunk in self._chunks():
            out[rows] = np.einsum("ij,ij->i", chunk, chunk)
        return out

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        G = np.asarray(self.F[index], dtype=np.float64)
        for rows, chunk in self._chunks():
            out[rows] = chunk @ G.T
        return out


def member_weights(labels: np.ndarray, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(z_i = w_i / W_{label(i)}: each sample's entry in its cluster's weight vector, 0 for a cluster of no
    weight; the clusters' weights W_j)."""
    totals = np.bincount(labels, weights=w, minlength=k)
    return w / np.where(totals > 0, totals, 1.0)[labels], totals


def weight_matrix(labels: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Z (n × k): z_ij = w_i / W_j for i in cluster j."""
    n = labels.shape[0]
    Z = np.zeros((n, k))
    Z[np.arange(n), labels] = member_weights(labels, w, k)[0]
    return Z


def local_trials(k: int) -> int:
    """k-means++'s candidates per centre: scikit-learn's 2 + ⌊ln k⌋."""
    return 2 + int(math.log(k))


def _squared_distances(diagonal: np.ndarray, C: np.ndarray, centre_diagonal: np.ndarray) -> np.ndarray:
    """‖φ(x_i) − φ(c)‖² = K_ii − 2 K_ic + K_cc for kernel columns C (n × c), in C's place, clipped at 0
    (rounding)."""
    C *= -2.0
    C += diagonal[:, None]
    C += centre_diagonal[None, :]
    np.maximum(C, 0.0, out=C)
    return C


def _columns(source: ColumnSource | FeatureOperator, index: np.ndarray, buffer: np.ndarray) -> np.ndarray:
    """The kernel columns ``index`` in float64 (``buffer``: n × len(index) in the source's dtype, overwritten; a
    float32 source's columns come back as a float64 copy)."""
    return np.asarray(source.columns(index, buffer), dtype=np.float64)


def _buffer(source: ColumnSource | FeatureOperator, n: int, width: int) -> np.ndarray:
    return np.empty((n, width), dtype=np.dtype(getattr(source, "dtype", np.float64)))


def kmeans_plus_plus(source: ColumnSource | FeatureOperator, diagonal: np.ndarray, w: np.ndarray, k: int,
                     rngs: list[np.random.RandomState], n_local_trials: int | None = None) -> list[KMeansStart]:
    """Greedy k-means++ in feature space (Arthur & Vassilvitskii 2007, with scikit-learn's greedy local trials:
    2 + ⌊ln k⌋ candidates per centre, drawn with probability ∝ w·D², the one that lowers the weighted potential
    most kept), one start per random state. Every candidate costs one kernel column. Returns each start's
    labels: every point's nearest chosen centre."""
    n = diagonal.shape[0]
    trials = local_trials(k) if n_local_trials is None else n_local_trials
    p = w / w.sum()
    out = []
    for rng in rngs:
        first = np.array([rng.choice(n, p=p)], dtype=np.int64)
        closest = _squared_distances(diagonal, _columns(source, first, _buffer(source, n, 1)), diagonal[first])[:, 0]
        labels = np.zeros(n, dtype=np.int64)
        centres = np.zeros(k, dtype=np.int64)
        centres[0] = first[0]
        C = _buffer(source, n, trials)
        for centre in range(1, k):
            cumulative = np.cumsum(w * closest)
            draws = rng.uniform(size=trials) * cumulative[-1]
            candidates = np.minimum(np.searchsorted(cumulative, draws), n - 1).astype(np.int64)
            D = _squared_distances(diagonal, _columns(source, candidates, C), diagonal[candidates])
            np.minimum(D, closest[:, None], out=D)  # each candidate's new distances to the nearest centre
            best = int(np.argmin(w @ D))
            nearer = D[:, best] < closest
            labels[nearer] = centre
            centres[centre] = candidates[best]
            closest = D[:, best].copy()
        out.append(KMeansStart(labels, centres, 1 + (k - 1) * trials))
    return out


def random_centres(source: ColumnSource | FeatureOperator, diagonal: np.ndarray, w: np.ndarray, k: int,
                   rngs: list[np.random.RandomState]) -> list[KMeansStart]:
    """k distinct points drawn with probability ∝ w as the centres (scikit-learn's ``init="random"``), one set per
    random state, their k kernel columns evaluated together; each start's labels are the nearest centres."""
    n = diagonal.shape[0]
    C = _buffer(source, n, k)
    out = []
    for rng in rngs:
        chosen = rng.choice(n, size=k, replace=False, p=w / w.sum()).astype(np.int64)
        D = _squared_distances(diagonal, _columns(source, chosen, C), diagonal[chosen])
        out.append(KMeansStart(np.argmin(D, axis=1).astype(np.int64), chosen, k))
    return out


def _relocate_empty(labels: np.ndarray, distance_to_own: np.ndarray, w: np.ndarray, k: int) -> int:
    """Clusters of no weight (empty, or of weightless members) take the points farthest from their own centroids
    (scikit-learn's rule), one each, never a point without weight nor one whose cluster it would leave without
    weight; ``labels`` is updated in place. Returns the clusters re-seeded."""
    totals = np.bincount(labels, weights=w, minlength=k)
    empty = np.flatnonzero(totals <= 0)
    if empty.size == 0:
        return 0
    moved = 0
    for i in np.argsort(-distance_to_own, kind="stable"):
        if moved == empty.size:
            break
        own = labels[i]
        if w[i] > 0 and totals[own] - w[i] > 0:
            totals[own] -= w[i]
            labels[i] = empty[moved]
            totals[empty[moved]] += w[i]
            moved += 1
    return moved


def working_bytes(n: int, k: int, starts: int) -> int:
    """Bytes :func:`lloyd` holds beside the operator: the pass's weights and its product (n × (k·starts + 1)
    each), a start's distances and their temporaries (3 n × k), each start's member weights, labels and the
    entries of the last pass's product the shift reads."""
    return 8 * n * (2 * (k * starts + 1) + 3 * k + 4 * starts + 4)


def lloyd(product: Callable[[np.ndarray], np.ndarray], diagonal: np.ndarray, w: np.ndarray, k: int,
          starts: list[np.ndarray], *, max_iter: int, tol: float, seeded: bool = False,
          progress: Callable[..., Any] | None = None) -> LloydResult:
    """Lloyd's iterations of every start side by side: each iteration one ``product`` of the kernel with the
    active starts' weight vectors (n × k·starts). ``tol`` is relative to the weighted feature-space variance
    Σ w_i K_ii / W − wᵀKw / W², whose product K w rides in the first pass as one more column.
    ``progress(iteration, labels, inertia, passes)`` after every pass (the first active start's assignment to the
    centroids of that pass, and its inertia). Returns the start of least inertia. ``seeded``: the starts' labels
    are already an assignment (to the seeds), so a first pass that repeats it has converged.

    A cluster of no weight has no centroid: no point is assigned to it, and it takes the point farthest from its
    centroid when the labels are next updated (:func:`_relocate_empty`).

    A weight vector z_j has one entry per member, so zⱼᵀKzⱼ = Σ_{i∈C_j} z_i P_ij and the shift's zⱼᵀK z'ⱼ =
    Σ_{i∈C_j} z_i P'_ij are sums over each cluster's members of one entry per row of this pass's product P and
    the last one's P' (of which only those entries are kept)."""
    n = diagonal.shape[0]
    rows = np.arange(n)
    total = float(w.sum())
    threshold = 0.0  # tol × the variance, known after the first pass
    count = len(starts)
    labels = [np.array(s, dtype=np.int64) for s in starts]  # the labels whose centroids the next pass computes
    # the last assignment step's labels (before relocations)
    assigned: list[Any] = [label.copy() for label in labels] if seeded else [None] * count
    converged = [False] * count
    previous: list[Any] = [None] * count  # (P'_{i,label(i)} for the labels of the next pass, norms) of the last pass
    done = [False] * count
    n_iter = [0] * count
    final: list[Any] = [None] * count
    reseeded = [0] * count
    passes = 0
    variance = 0.0
    while not all(done):
        active = [s for s in range(count) if not done[s]]
        first = passes == 0
        Z = np.zeros((n, k * len(active) + first))
        z, totals = {}, {}
        for a, s in enumerate(active):
            z[s], totals[s] = member_weights(labels[s], w, k)
            Z[rows, a * k + labels[s]] = z[s]
        if first:
            Z[:, -1] = w
        P = np.asarray(product(Z), dtype=np.float64)
        del Z
        passes += 1
        if first:
            variance = max(float(w @ diagonal) / total - float(w @ P[:, -1]) / total**2, 0.0)
            threshold = tol * variance
        for a, s in enumerate(active):
            Ps = P[:, a * k:(a + 1) * k]
            norms = np.bincount(labels[s], weights=z[s] * Ps[rows, labels[s]], minlength=k)
            norms[totals[s] <= 0] = np.inf  # no centroid
            D = Ps * -2.0
            D += norms[None, :]
            D += diagonal[:, None]
            n_iter[s] += 1
            nearest = np.argmin(D, axis=1)
            own = np.maximum(D[rows, nearest], 0.0)
            del D
            if previous[s] is not None:
                own_before, norms0 = previous[s]
                cross = np.bincount(labels[s], weights=z[s] * own_before, minlength=k)
                with np.errstate(invalid="ignore"):  # a centroid that appeared or vanished: no shift to compare
                    shift = float(np.sum(norms - 2.0 * cross + norms0))
                converged[s] = bool(np.isfinite(shift) and shift <= threshold)
            if not converged[s] and assigned[s] is not None and np.array_equal(nearest, assigned[s]):
                converged[s] = True
            stop = converged[s] or n_iter[s] >= max_iter
            if progress is not None and a == 0:
                progress(n_iter[s], nearest, float(w @ own), passes)
            if stop:
                final[s] = (nearest, float(w @ own), labels[s], norms)
                done[s] = True
                previous[s] = None
            else:
                assigned[s] = nearest
                new = nearest.copy()
                reseeded[s] += _relocate_empty(new, own, w, k)
                labels[s] = new
                previous[s] = (Ps[rows, new], norms)
        del P
    best = min(range(count), key=lambda s: final[s][1])
    nearest, inertia, centroid_labels, norms = final[best]
    info = {"passes": passes, "starts": count, "start_inertias": [float(f[1]) for f in final],
            "start_iterations": list(n_iter), "best_start": best, "empty_clusters_reseeded": int(reseeded[best]),
            "converged": converged[best], "variance": variance}
    return LloydResult(nearest, inertia, weight_matrix(centroid_labels, w, k), norms, n_iter[best], info)


class CentroidDistances:
    """A fitted row map: ``x ↦ −2 K(x, X)·Z + ‖μ‖²`` from the cross kernel's product (``correction`` of a
    fitted cross product): the squared feature-space distances to every centroid less k(x, x), which is the
    same for every centroid of a row (so its argmin is the nearest centroid); infinite for a cluster that has no
    centroid (no weight). Picklable."""

    def __init__(self, norms: np.ndarray) -> None:
        self.norms = np.asarray(norms, dtype=np.float64)

    def __call__(self, product: np.ndarray) -> np.ndarray:
        out = np.asarray(product, dtype=np.float64) * -2.0
        out += self.norms
        return out


class NewDiagonal:
    """A fitted row map: ``x ↦ k(x, x)`` for new samples, evaluated as the kernel evaluates them against the
    fitted samples (in the fitted samples' dtype). Picklable."""

    def __init__(self, kernel: Kernel, template: Any) -> None:
        # template: no rows of the fitted samples, in their format and dtype (what new rows are converted to)
        self.kernel, self.template = kernel, template

    def on_threads(self, threads: int) -> NewDiagonal:
        return NewDiagonal(self.kernel.on_threads(threads), self.template)

    def __call__(self, X: Any) -> np.ndarray:
        dtype = getattr(self.template, "dtype", None)
        rows = self.kernel.new_rows(X, self.template, dtype if dtype in (np.float32, np.float64) else None)
        return np.asarray(self.kernel.diagonal(rows), dtype=np.float64)
