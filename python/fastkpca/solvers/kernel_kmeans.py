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
from typing import Any, Callable

import numpy as np

__all__ = ["FeatureOperator", "KMeansStart", "LloydResult", "kmeans_plus_plus", "random_centres", "lloyd",
           "weight_matrix", "CentroidDistances", "NewDiagonal"]


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
    """K ≈ F Fᵀ for an n × r feature matrix F (the Nyström features): products F(FᵀV), the diagonal the rows'
    squared norms."""

    def __init__(self, F: np.ndarray):
        self.F = F
        self.shape = (F.shape[0], F.shape[0])

    def __matmul__(self, V: np.ndarray) -> np.ndarray:
        return self.F @ (self.F.T @ V)

    def diagonal(self) -> np.ndarray:
        return np.einsum("ij,ij->i", self.F, self.F)

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        out[...] = self.F @ self.F[index].T
        return out


def weight_matrix(labels: np.ndarray, w: np.ndarray, k: int) -> np.ndarray:
    """Z (n × k): z_ij = w_i / W_j for i in cluster j (a cluster of zero weight has z_j = 0)."""
    n = labels.shape[0]
    totals = np.bincount(labels, weights=w, minlength=k)
    Z = np.zeros((n, k))
    safe = np.where(totals > 0, totals, 1.0)
    Z[np.arange(n), labels] = w / safe[labels]
    return Z


def _squared_distances(diagonal: np.ndarray, C: np.ndarray, centre_diagonal: np.ndarray) -> np.ndarray:
    """‖φ(x_i) − φ(c)‖² = K_ii − 2 K_ic + K_cc for kernel columns C (n × c), clipped at 0 (rounding)."""
    D = diagonal[:, None] - 2.0 * C + centre_diagonal[None, :]
    np.maximum(D, 0.0, out=D)
    return D


def kmeans_plus_plus(source, diagonal: np.ndarray, w: np.ndarray, k: int, rngs: list[np.random.RandomState],
                     n_local_trials: int | None = None) -> list[KMeansStart]:
    """Greedy k-means++ in feature space (Arthur & Vassilvitskii 2007, with scikit-learn's greedy local trials:
    2 + ⌊ln k⌋ candidates per centre, drawn with probability ∝ w·D², the one that lowers the weighted potential
    most kept), one start per random state. Every candidate costs one kernel column, and the candidates of all
    starts are evaluated together. Returns each start's labels: every point's nearest chosen centre."""
    n = diagonal.shape[0]
    trials = 2 + int(math.log(k)) if n_local_trials is None else n_local_trials
    p = w / w.sum()
    starts = len(rngs)
    first = np.array([rng.choice(n, p=p) for rng in rngs], dtype=np.int64)
    C = np.empty((n, starts), dtype=np.float64)
    source.columns(first, C)
    closest = _squared_distances(diagonal, C, diagonal[first])  # n × starts
    labels = np.zeros((starts, n), dtype=np.int64)
    centres = np.zeros((starts, k), dtype=np.int64)
    centres[:, 0] = first
    columns = starts
    for centre in range(1, k):
        candidates = np.empty((starts, trials), dtype=np.int64)
        for s, rng in enumerate(rngs):
            cumulative = np.cumsum(w * closest[:, s])
            draws = rng.uniform(size=trials) * cumulative[-1]
            candidates[s] = np.minimum(np.searchsorted(cumulative, draws), n - 1)
        flat = candidates.ravel()
        C = np.empty((n, flat.shape[0]), dtype=np.float64)
        source.columns(flat, C)
        columns += flat.shape[0]
        D = _squared_distances(diagonal, C, diagonal[flat])
        for s in range(starts):
            block = D[:, s * trials:(s + 1) * trials]
            candidate_d = np.minimum(closest[:, s:s + 1], block)
            best = int(np.argmin(w @ candidate_d))
            nearer = block[:, best] < closest[:, s]
            labels[s, nearer] = centre
            centres[s, centre] = candidates[s, best]
            closest[:, s] = candidate_d[:, best]
    return [KMeansStart(labels[s], centres[s], columns // starts) for s in range(starts)]


def random_centres(source, diagonal: np.ndarray, w: np.ndarray, k: int,
                   rngs: list[np.random.RandomState]) -> list[KMeansStart]:
    """k distinct points drawn with probability ∝ w as the centres (scikit-learn's ``init="random"``), one set per
    random state, evaluated in one call for columns; each start's labels are the nearest centres."""
    n = diagonal.shape[0]
    chosen = np.concatenate([rng.choice(n, size=k, replace=False, p=w / w.sum()) for rng in rngs]).astype(np.int64)
    C = np.empty((n, chosen.shape[0]), dtype=np.float64)
    source.columns(chosen, C)
    D = _squared_distances(diagonal, C, diagonal[chosen])
    return [KMeansStart(np.argmin(D[:, s * k:(s + 1) * k], axis=1).astype(np.int64), chosen[s * k:(s + 1) * k], k)
            for s in range(len(rngs))]


def _relocate_empty(labels: np.ndarray, distance_to_own: np.ndarray, k: int) -> int:
    """Clusters left empty take the points farthest from their own centroids (scikit-learn's rule), one each,
    never the last member of a cluster; ``labels`` is updated in place. Returns the clusters re-seeded."""
    counts = np.bincount(labels, minlength=k)
    empty = np.flatnonzero(counts == 0)
    if empty.size == 0:
        return 0
    moved = 0
    for i in np.argsort(-distance_to_own, kind="stable"):
        if moved == empty.size:
            break
        if counts[labels[i]] > 1:
            counts[labels[i]] -= 1
            labels[i] = empty[moved]
            counts[empty[moved]] += 1
            moved += 1
    return moved


def lloyd(product: Callable[[np.ndarray], np.ndarray], diagonal: np.ndarray, w: np.ndarray, k: int,
          starts: list[np.ndarray], *, max_iter: int, tol: float,
          progress: Callable[..., Any] | None = None) -> LloydResult:
    """Lloyd's iterations of every start side by side: each iteration one ``product`` of the kernel with the
    active starts' weight vectors (n × k·starts). ``tol`` is relative to the weighted feature-space variance
    Σ w_i K_ii / W − wᵀKw / W², whose product K w rides in the first pass as one more column.
    ``progress(iteration, labels, inertia, passes)`` after every pass (the first active start's assignment to the
    centroids of that pass, and its inertia). Returns the start of least inertia."""
    n = diagonal.shape[0]
    total = float(w.sum())
    threshold = None
    count = len(starts)
    labels = [np.array(s, dtype=np.int64) for s in starts]
    assigned: list[Any] = [None] * count  # the last assignment step's labels (before relocations)
    previous: list[Any] = [None] * count  # (Z, P, norms) of the last pass
    done = [False] * count
    n_iter = [0] * count
    final: list[Any] = [None] * count
    reseeded = [0] * count
    passes = 0
    variance = 0.0
    while not all(done):
        active = [s for s in range(count) if not done[s]]
        blocks = [weight_matrix(labels[s], w, k) for s in active]
        if threshold is None:
            blocks.append(w[:, None])
        Z = np.concatenate(blocks, axis=1)
        P = np.asarray(product(Z), dtype=np.float64)
        passes += 1
        if threshold is None:
            variance = max(float(w @ diagonal) / total - float(w @ P[:, -1]) / total**2, 0.0)
            threshold = tol * variance
            Z, P = Z[:, :-1], P[:, :-1]
        for a, s in enumerate(active):
            cols = slice(a * k, (a + 1) * k)
            Zs, Ps = Z[:, cols], P[:, cols]
            norms = np.einsum("ij,ij->j", Zs, Ps)
            D = diagonal[:, None] - 2.0 * Ps + norms[None, :]
            n_iter[s] += 1
            nearest = np.argmin(D, axis=1)
            stop = n_iter[s] >= max_iter
            if previous[s] is not None:
                Z0, P0, norms0 = previous[s]
                shift = float(np.sum(norms - 2.0 * np.einsum("ij,ij->j", Zs, P0) + norms0))
                stop = stop or shift <= threshold
            if not stop and assigned[s] is not None and np.array_equal(nearest, assigned[s]):
                stop = True
            if stop:
                inertia = float(w @ np.maximum(D[np.arange(n), nearest], 0.0))
                final[s] = (nearest, inertia, Zs.copy(), norms)
                done[s] = True
            else:
                assigned[s] = nearest
                new = nearest.copy()
                reseeded[s] += _relocate_empty(new, D[np.arange(n), nearest], k)
                labels[s] = new
                previous[s] = (Zs, Ps, norms)
            if progress is not None and a == 0:
                lab = nearest
                progress(n_iter[s], lab, float(w @ np.maximum(D[np.arange(n), lab], 0.0)), passes)
    best = min(range(count), key=lambda s: final[s][1])
    nearest, inertia, Zbest, norms = final[best]
    info = {"passes": passes, "starts": count, "start_inertias": [float(f[1]) for f in final],
            "start_iterations": list(n_iter), "best_start": best, "empty_clusters_reseeded": int(reseeded[best]),
            "converged": bool(n_iter[best] < max_iter), "variance": variance}
    return LloydResult(nearest, inertia, Zbest, norms, n_iter[best], info)


class CentroidDistances:
    """A fitted row map: ``x ↦ −2 K(x, X)·Z + ‖μ‖²`` from the cross kernel's product (``correction`` of a
    fitted cross product): the squared feature-space distances to every centroid less k(x, x), which is the
    same for every centroid of a row (so its argmin is the nearest centroid). Picklable."""

    def __init__(self, norms: np.ndarray):
        self.norms = np.asarray(norms, dtype=np.float64)

    def __call__(self, product: np.ndarray) -> np.ndarray:
        out = np.asarray(product, dtype=np.float64) * -2.0
        out += self.norms
        return out


class NewDiagonal:
    """A fitted row map: ``x ↦ k(x, x)`` for new samples, evaluated as the kernel evaluates them against the
    fitted samples (in the fitted samples' dtype). Picklable."""

    def __init__(self, kernel, template):
        # template: no rows of the fitted samples, in their format and dtype (what new rows are converted to)
        self.kernel, self.template = kernel, template

    def on_threads(self, threads: int) -> NewDiagonal:
        return NewDiagonal(self.kernel.on_threads(threads), self.template)

    def __call__(self, X) -> np.ndarray:
        dtype = getattr(self.template, "dtype", None)
        rows = self.kernel.new_rows(X, self.template, dtype if dtype in (np.float32, np.float64) else None)
        return np.asarray(self.kernel.diagonal(rows), dtype=np.float64)
