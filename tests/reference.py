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
