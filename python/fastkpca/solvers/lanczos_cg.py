"""Preconditioned conjugate gradients that also return Lanczos's tridiagonal matrices, and stochastic Lanczos
quadrature (SLQ) from them: GPyTorch's modified batched CG (Gardner et al. 2018) on a CPU.

PCG on K̂x = b with preconditioner P is the Lanczos process on Â = P^-½ K̂ P^-½ started at P^-½ r₀, written
with other variables: with CG's step lengths a_j and direction ratios b_j = (r_{j+1}ᵀz_{j+1})/(r_jᵀz_j),
Lanczos's tridiagonal T has

    T_00 = 1/a_0,   T_jj = 1/a_j + b_{j-1}/a_{j-1},   T_{j,j+1} = √b_j / a_j

(Saad, "Iterative Methods for Sparse Linear Systems", §6.7.3). For a start x₀ = 0 and b = z,
‖P^-½ z‖² e₁ᵀ log(T) e₁ is the Gauss quadrature of (P^-½z)ᵀ log(Â) (P^-½z); with z ~ N(0, P), P^-½z is
standard normal and its mean over probes estimates tr log Â = log det K̂ − log det P (Ubaru, Chen and Saad 2017).

Every column runs its own CG (its own scalars) and leaves the block when ‖b − K̂x‖ ≤ tol‖b‖ by the
recurrence's residual; one product by K̂ per iteration serves all the columns still running.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["lanczos_pcg", "quadrature_log"]


def lanczos_pcg(matmat, B: np.ndarray, precondition, *, tol: float, maxiter: int, X0: np.ndarray | None = None):
    """Solve K̂ x_j = b_j for every column of B by preconditioned CG, keeping each column's CG scalars.

    Parameters
    ----------
    matmat : callable
        ``matmat(V)`` = K̂ V for an n × c float64 block.
    B : ndarray (n, m)
    precondition : callable
        ``precondition(R)`` = P⁻¹ R.
    tol : float
        A column stops when its relative residual (the recurrence's) is at most tol.
    maxiter : int
        Iterations at most (products by K̂, besides the one a start X0 costs). np.linalg.LinAlgError when a
        direction of non-positive curvature shows K̂ is not positive definite.
    X0 : ndarray (n, m) or None
        Starting guesses (a warm start; columns whose quadrature is wanted must start at 0).

    Returns
    -------
    X : ndarray (n, m)
    info : dict
        ``products`` (block products by K̂), ``iterations`` per column, ``residuals`` (relative, the
        recurrence's), ``converged``, ``steps`` and ``ratios`` (per column: CG's a_j and b_j), ``start_norms``
        (r₀ᵀP⁻¹r₀ per column) and ``seconds``.
    """
    start = time.perf_counter()
    n, m = B.shape
    norms = np.linalg.norm(B, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    products = 0
    if X0 is None:
        X = np.zeros((n, m))
        R = np.array(B, dtype=np.float64, copy=True)
    else:
        X = np.array(X0, dtype=np.float64, copy=True)
        R = np.array(B, dtype=np.float64, copy=True)
        started = np.flatnonzero(np.any(X != 0, axis=0))  # only these columns need K̂x₀
        if started.size:
            R[:, started] -= matmat(np.ascontiguousarray(X[:, started]))
            products += 1
    Z = precondition(R)
    rz = np.einsum("ij,ij->j", R, Z)
    start_norms = rz.copy()
    P = Z
    residual = np.linalg.norm(R, axis=0) / safe
    steps: list[list[float]] = [[] for _ in range(m)]
    ratios: list[list[float]] = [[] for _ in range(m)]
    iterations = np.zeros(m, dtype=np.int64)
    active = np.flatnonzero(residual > tol)
    budget = maxiter + products
    while active.size and products < budget:
        Pa = P[:, active]
        AP = matmat(Pa)
        products += 1
        iterations[active] += 1
        curvature = np.einsum("ij,ij->j", Pa, AP)
        if not (curvature > 0).all():
            raise np.linalg.LinAlgError("the matrix is not positive definite: CG met a direction of curvature "
                                        f"{curvature.min():.3g}")
        step = rz[active] / curvature
        X[:, active] += Pa * step
        R[:, active] -= AP * step
        residual[active] = np.linalg.norm(R[:, active], axis=0) / safe[active]
        Za = precondition(R[:, active])
        rz_new = np.einsum("ij,ij->j", R[:, active], Za)
        ratio = rz_new / rz[active]
        for c, a, b in zip(active, step, ratio):
            steps[c].append(float(a))
            ratios[c].append(float(b))
        P[:, active] = Za + Pa * ratio
        rz[active] = rz_new
        active = active[residual[active] > tol]
    info = {"products": products, "iterations": iterations, "residuals": residual,
            "converged": bool((residual <= tol).all()), "steps": steps, "ratios": ratios,
            "start_norms": start_norms, "seconds": time.perf_counter() - start}
    return X, info


def quadrature_log(steps, ratios) -> float:
    """e₁ᵀ log(T) e₁ for Lanczos's T from one column's CG step lengths and ratios (module documentation): the
    Gauss quadrature nodes are T's eigenvalues, the weights the squared first entries of its eigenvectors."""
    from scipy.linalg import eigh_tridiagonal

    a = np.asarray(steps, dtype=np.float64)
    b = np.asarray(ratios, dtype=np.float64)[:a.size]
    if a.size == 0:
        return 0.0
    diagonal = 1.0 / a
    diagonal[1:] += b[:-1] / a[:-1]
    off = np.sqrt(b[:-1]) / a[:-1]
    nodes, vectors = eigh_tridiagonal(diagonal, off)
    return float(np.sum(vectors[0] ** 2 * np.log(np.maximum(nodes, np.finfo(np.float64).tiny))))
