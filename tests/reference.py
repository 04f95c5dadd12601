"""Pure-NumPy reference implementations, written from the formulas (the tests' oracle)."""

from __future__ import annotations

import numpy as np


def sq_distances(X, Y):
    """Exact squared Euclidean distances by explicit differences (no expansion, no cancellation)."""
    def block(Xb, Y):
        diff = Xb[:, None, :] - Y[None, :, :]
        return np.einsum("ijk,ijk->ij", diff, diff)

    return _by_row_blocks(block, X, Y)


def l1_distances(X, Y):
    return _by_row_blocks(lambda Xb, Y: np.abs(Xb[:, None, :] - Y[None, :, :]).sum(axis=2), X, Y)


def _by_row_blocks(f, X, Y):
    """f(X[rows], Y) stacked over blocks of X's rows, each block's differences 2²² doubles (32 MiB) or one row's."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    rows = max(1, 2**22 // max(1, Y.shape[0] * X.shape[1]))
    out = np.empty((X.shape[0], Y.shape[0]))
    for start in range(0, X.shape[0], rows):
        out[start:start + rows] = f(X[start:start + rows], Y)
    return out


def unit_rows(X):
    """Rows scaled to unit Euclidean norm (zero rows stay zero), without under- or overflow."""
    scale = np.abs(X).max(axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    Xs = X / scale
    norms = np.linalg.norm(Xs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return Xs / norms


def kernel(X, Y=None, kernel="linear", gamma=None, degree=3, coef0=1.0):
    """K[i, j] = k(X[i], Y[j]) in float64."""
    X = np.asarray(X, dtype=np.float64)
    Y = X if Y is None else np.asarray(Y, dtype=np.float64)
    if gamma is None:
        gamma = 1.0 / X.shape[1]
    dot = X @ Y.T
    if kernel == "linear":
        return dot
    if kernel in ("poly", "polynomial"):
        return (gamma * dot + coef0) ** degree
    if kernel == "sigmoid":
        return np.tanh(gamma * dot + coef0)
    if kernel == "rbf":
        return np.exp(-gamma * sq_distances(X, Y))
    if kernel == "laplacian":
        return np.exp(-gamma * l1_distances(X, Y))
    if kernel in ("matern12", "matern32", "matern52"):  # of r = √gamma |x - y| (scikit-learn's Matern, ℓ = 1/√gamma)
        s = np.sqrt({"matern12": 1.0, "matern32": 3.0, "matern52": 5.0}[kernel] * gamma * sq_distances(X, Y))
        if kernel == "matern12":
            return np.exp(-s)
        if kernel == "matern32":
            return (1 + s) * np.exp(-s)
        return (1 + s + s**2 / 3) * np.exp(-s)
    if kernel == "cosine":
        return unit_rows(X) @ unit_rows(Y).T
    raise ValueError(kernel)


def centering_matrix(n):
    return np.eye(n) - np.full((n, n), 1.0 / n)


def double_center(K):
    """H K H with an explicit centering matrix."""
    H = centering_matrix(K.shape[0])
    return H @ np.asarray(K, dtype=np.float64) @ H


def kernel_kmeans(K, labels, k, w=None, max_iter=300, tol=1e-4):
    """Weighted kernel k-means (Dhillon, Guan & Kulis 2004) on the whole kernel matrix K, as scikit-learn's Lloyd:
    assign to the nearest centroid (a cluster of no weight has none), move the point farthest from its centroid
    into each cluster of no weight (never a weightless point, nor one whose cluster it would leave weightless),
    recompute; stop when the assignment repeats or the centroids' total squared shift is at most
    tol × the weighted feature-space variance, then assign to the final centroids. Returns (the labels after every
    iteration, the final inertia)."""
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    W = w.sum()
    variance = w @ np.diag(K) / W - w @ K @ w / W**2
    labels = np.asarray(labels).copy()
    history, previous_centroids, previous_present, last_assigned = [], None, None, None

    def cluster_weights(lab):
        return np.array([w[lab == j].sum() for j in range(k)])

    def centroid_weights(lab):
        Z = np.zeros((n, k))
        for j in range(k):
            members = lab == j
            if w[members].sum() > 0:
                Z[members, j] = w[members] / w[members].sum()
        return Z

    for iteration in range(max_iter):
        Z = centroid_weights(labels)
        present = cluster_weights(labels) > 0
        # squared distance of every point to every centroid, from K itself; none to a cluster without one
        D = np.diag(K)[:, None] - 2 * K @ Z + np.diag(Z.T @ K @ Z)[None, :]
        D[:, ~present] = np.inf
        nearest = D.argmin(axis=1)
        history.append(nearest)
        stop = iteration + 1 >= max_iter
        if previous_centroids is not None and (present == previous_present).all() and present.all():
            delta = Z - previous_centroids
            stop = stop or np.trace(delta.T @ K @ delta) <= tol * variance
        if not stop and last_assigned is not None and (nearest == last_assigned).all():
            stop = True
        if stop:
            return history, float(w @ np.maximum(D[np.arange(n), nearest], 0))
        last_assigned = nearest
        labels = nearest.copy()
        own = D[np.arange(n), nearest]
        totals = cluster_weights(labels)
        empty = list(np.flatnonzero(totals <= 0))
        for i in np.argsort(-own, kind="stable"):
            if not empty:
                break
            if w[i] > 0 and totals[labels[i]] - w[i] > 0:
                totals[labels[i]] -= w[i]
                labels[i] = empty.pop(0)
                totals[labels[i]] += w[i]
        previous_centroids, previous_present = Z, present
    raise AssertionError("unreachable")


def kernel_kmeans_objective(K, labels, w=None):
    """Σ_j [Σ_{i∈C_j} w_i K_ii − (Σ_{i,l∈C_j} w_i w_l K_il) / W_j]: the weighted kernel k-means objective of labels."""
    K = np.asarray(K, dtype=np.float64)
    w = np.ones(K.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    total = 0.0
    for j in np.unique(labels):
        m = labels == j
        wm = w[m]
        total += wm @ np.diag(K)[m] - wm @ K[np.ix_(m, m)] @ wm / wm.sum()
    return float(total)
