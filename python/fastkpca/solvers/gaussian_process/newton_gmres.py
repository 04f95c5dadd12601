"""A Newton step of the Laplace approximation by products with K only: a = (I + W K)⁻¹ b and K a by GMRES.

Newton's step (laplace.py) is a = (I + W K)⁻¹ b, f = K a. Solved as it stands by GMRES (solvers/gmres.py),
right-preconditioned by

    M = (I + W K̃)⁻¹ = I − S P⁻¹ S K̃,    K̃ = F Fᵀ + diag(D) ≈ K,    P = I + S K̃ S = (S F)(S F)ᵀ + diag(1 + W D)

(S = W^½; P⁻¹ by Woodbury: preconditioner.NystromDiagonalPreconditioner), each iteration is one product
u ↦ K u and K a is the same combination of those products: nothing before the solve and nothing after it.
Where K̃ explains K, a step takes one or two products. Algorithm 3.1's form b − S B⁻¹ S K b takes two
products and a solve with B (a Cholesky factor of B, n³/3 flops, or a CG run). The steps are inexact Newton
steps (Dembo, Eisenstat and Steihaug 1982): the residual b − (I + W K)a falls by the forcing term ``tol``
from the start's, and Newton's next step corrects what is left, so the iteration converges to the same mode.
"""

from __future__ import annotations

import numpy as np

from ..gmres import gmres, gmres_bytes
from .preconditioner import NystromDiagonalPreconditioner

__all__ = ["NEWTON_GMRES_ITERATIONS", "NEWTON_GMRES_RESTARTS", "newton_gmres_bytes", "newton_gmres_step",
           "RESIDUAL_TRACE", "RANK_STEP", "sufficient_rank"]

#: GMRES's products per cycle, and cycles after the first, in a Newton step.
NEWTON_GMRES_ITERATIONS = 20
NEWTON_GMRES_RESTARTS = 4

#: A factor's default rank stops where ¼ tr(K − F Fᵀ) falls below this (sufficient_rank) ...
RESIDUAL_TRACE = 0.1
#: ... in steps of this many pivots.
RANK_STEP = 64


def newton_gmres_bytes(n: int) -> int:
    """GMRES's vectors for a step on n samples."""
    return gmres_bytes(n, NEWTON_GMRES_ITERATIONS)


def sufficient_rank(F: np.ndarray, d: np.ndarray) -> int:
    """The fewest leading pivots of the factor K ≈ F Fᵀ + diag(d) (in RPCholesky's order each prefix is the
    Nyström factor on its pivots) whose residual E = K − F_k F_kᵀ has ¼ tr E ≤ RESIDUAL_TRACE, a multiple of
    RANK_STEP, else all. W ≤ ¼, so ‖S E S‖ ≤ tr(S E S) ≤ ¼ tr E: past it, P = I + S K̃ S leaves B P⁻¹ within
    RESIDUAL_TRACE of I. Every pivot beyond costs O(n r) in each product with the factor and O(n r²) in each
    preconditioner (once per Newton step): at N = 50,000 and θ at the bench's optimum (C ≈ 5,500), 256 pivots
    left ¼ tr E = 3.3, 512 left 0.04, 1,024 left 3e-4 (measured), and at N = 20,000 576 pivots in place of
    384 took as many GMRES iterations. tr E = Σ d + Σ_{j ≥ k} ‖F_j‖²: d's white noise, if any, counts too."""
    r = F.shape[1]
    tail = np.cumsum(np.einsum("ij,ij->j", F, F)[::-1])[::-1]  # Σ_{j ≥ k} ‖F_j‖² for k = 0 … r − 1
    base = float(np.sum(d))
    for k in range(RANK_STEP, r, RANK_STEP):
        if 0.25 * (base + float(tail[k])) <= RESIDUAL_TRACE:
            return k
    return r


def newton_gmres_step(kernel_times, W_sr: np.ndarray, b: np.ndarray, start: tuple | None, *, F: np.ndarray,
                      d: np.ndarray, pre: NystromDiagonalPreconditioner, tol: float) -> tuple:
    """(a, K a, GMRES's info) with (I + W K) a = b to ``tol`` relative to the start's residual (module
    documentation); ``kernel_times(u)`` = K u, ``start`` = (a₀, K a₀) or None (zero), ``pre`` = P for this W
    (P = (S F)(S F)ᵀ + diag(1 + W d))."""
    W = W_sr**2

    def operator(u):
        Ku = kernel_times(u)
        return u + W * Ku, Ku

    def precondition(v):
        Kv = d * v
        if F.shape[1]:
            Kv += F @ (F.T @ v)
        return v - W_sr * pre.solve((W_sr * Kv)[:, None])[:, 0]

    given = {} if start is None else {"x0": start[0], "companion0": start[1],
                                      "residual0": b - start[0] - W * start[1]}
    return gmres(operator, np.asarray(b, dtype=np.float64), precondition=precondition, tol=tol,
                 maxiter=NEWTON_GMRES_ITERATIONS, restarts=NEWTON_GMRES_RESTARTS, **given)
