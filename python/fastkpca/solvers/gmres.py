"""Right-preconditioned GMRES that also returns a companion product of its solution.

:func:`gmres` solves A x = b for a non-symmetric A given by ``operator(u) = (A u, G u)``, where G is any linear
map the operator computes on its way to A u (for A = I + W K: G u = K u, the one product by the kernel an
iteration costs). With right preconditioning x = x₀ + M y, each iteration j applies the operator to u_j = M v_j
(v_j the Arnoldi basis of A M's Krylov space from r₀ = b − A x₀) and keeps u_j and G u_j, so the solution
x = x₀ + Σ c_j u_j comes with G x = G x₀ + Σ c_j G u_j: no further product. (Saad and Schultz 1986; the
right-preconditioned form minimises the true residual ‖b − A x‖, Saad 2003, §9.3.2.)

The Arnoldi vectors are orthogonalised by modified Gram–Schmidt, twice (one pass loses orthogonality when the
residual falls by more than about 1e-8); the least-squares problem is solved by Givens rotations, which give the
residual norm at every iteration. The residual vector itself is V_{k+1}(β e₁ − H y): a restart needs no product.
"""

from __future__ import annotations

import numpy as np

__all__ = ["gmres", "gmres_bytes"]


def gmres_bytes(n: int, maxiter: int) -> int:
    """The basis V (n × (maxiter + 1)), the preconditioned vectors U and their companion products G U (n ×
    maxiter each), float64."""
    return 8 * n * (3 * maxiter + 1)


def gmres(operator, b: np.ndarray, *, precondition, tol: float, maxiter: int, x0: np.ndarray | None = None,
          residual0: np.ndarray | None = None, companion0: np.ndarray | None = None, restarts: int = 0):
    """Solve A x = b (vectors of length n) by right-preconditioned GMRES (module documentation).

    Parameters
    ----------
    operator : callable
        ``operator(u)`` = (A u, G u).
    b : ndarray (n,)
    precondition : callable
        ``precondition(v)`` = M v, M ≈ A⁻¹.
    tol : float
        Stop when ‖b − A x‖ ≤ tol·‖b − A x₀‖ (relative to the start's residual: an inexact Newton step's forcing
        term).
    maxiter : int
        Products (iterations) per cycle at most.
    x0, residual0, companion0 : ndarray (n,) or None
        A start x₀ with its residual b − A x₀ and G x₀ (all three, or none: x₀ = 0).
    restarts : int
        Cycles after the first, each from the last one's solution.

    Returns
    -------
    x, G x : ndarray (n,)
    info : dict
        ``iterations`` (products), ``residual`` (‖b − A x‖ / ‖b − A x₀‖), ``converged``.
    """
    n = b.shape[0]
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=np.float64, copy=True)
    gx = np.zeros(n) if companion0 is None else np.array(companion0, dtype=np.float64, copy=True)
    r = np.array(b if residual0 is None else residual0, dtype=np.float64, copy=True)
    start_norm = float(np.linalg.norm(r))
    products, norm = 0, start_norm
    if start_norm == 0.0 or maxiter < 1:
        return x, gx, {"iterations": 0, "residual": 0.0 if start_norm == 0.0 else 1.0,
                       "converged": start_norm == 0.0}
    target = tol * start_norm
    for _ in range(restarts + 1):
        beta = float(np.linalg.norm(r))
        if beta <= target:
            break
        V = np.empty((n, maxiter + 1))
        U = np.empty((n, maxiter))
        GU = np.empty((n, maxiter))
        H = np.zeros((maxiter + 1, maxiter))
        cs, sn = np.zeros(maxiter), np.zeros(maxiter)
        g = np.zeros(maxiter + 1)
        g[0] = beta
        V[:, 0] = r / beta
        k = 0
        for j in range(maxiter):
            U[:, j] = precondition(V[:, j])
            w, GU[:, j] = operator(U[:, j])
            products += 1
            for _pass in range(2):  # modified Gram–Schmidt, twice
                for i in range(j + 1):
                    h = float(V[:, i] @ w)
                    H[i, j] += h
                    w -= h * V[:, i]
            H[j + 1, j] = float(np.linalg.norm(w))
            breakdown = H[j + 1, j] <= 1e-14 * max(1.0, abs(H[j, j]))
            V[:, j + 1] = 0.0 if breakdown else w / H[j + 1, j]
            for i in range(j):  # the earlier rotations on the new column
                H[i, j], H[i + 1, j] = cs[i] * H[i, j] + sn[i] * H[i + 1, j], -sn[i] * H[i, j] + cs[i] * H[i + 1, j]
            radius = float(np.hypot(H[j, j], H[j + 1, j]))
            cs[j], sn[j] = (1.0, 0.0) if radius == 0.0 else (H[j, j] / radius, H[j + 1, j] / radius)
            H[j, j], H[j + 1, j] = radius, 0.0
            g[j + 1], g[j] = -sn[j] * g[j], cs[j] * g[j]
            k = j + 1
            norm = abs(float(g[j + 1]))
            if norm <= target or breakdown:
                break
        y = np.zeros(k)
        for i in range(k - 1, -1, -1):  # back substitution on the rotated (upper triangular) H
            if H[i, i] != 0.0:
                y[i] = (g[i] - H[i, i + 1:k] @ y[i + 1:k]) / H[i, i]
        x += U[:, :k] @ y
        gx += GU[:, :k] @ y
        # the residual b − A x = V_{k+1}(β e₁ − H y) in the unrotated basis: the rotations' last vector times the
        # remaining residual
        e = np.zeros(k + 1)
        e[k] = g[k]
        for i in range(k - 1, -1, -1):  # undo the rotations: Qᵀ applied to g's tail
            e[i], e[i + 1] = cs[i] * e[i] - sn[i] * e[i + 1], sn[i] * e[i] + cs[i] * e[i + 1]
        r = V[:, :k + 1] @ e
        if norm <= target:
            break
    return x, gx, {"iterations": products, "residual": norm / start_norm, "converged": norm <= target}
