"""A Newton step of the Laplace approximation by products with K only: a = (I + W K)⁻¹ b and K a.

Newton's step (laplace.py) is a = (I + W K)⁻¹ b, f = K a. From an iterate a₀ with K a₀ known, the step's
gradient is g = b − (I + W K) a₀ (no product), and the correction δa = (I + W K)⁻¹ g is found by CG on

    B = I + S K S,    S = W^½,

symmetric positive definite with eigenvalues in [1, 1 + λ_max/4], preconditioned by P = I + S K̃ S =
(S F)(S F)ᵀ + diag(1 + W D) for a Nyström factor K̃ = F Fᵀ + diag(D) of K (preconditioner.NystromDiagonalPreconditioner,
Woodbury). Each CG iteration's product is q = K (S p), and K δa is accumulated from the q's: no product after
the solve. Two forms of the right-hand side:

    scaled:     δa = S x,        B x = S⁻¹ g      (S (B x) = (I + W K) S x)
    product:    δa = g − S x,    B x = S K g      (one product more, for K g)

Both are CG on the same B with the same P, so they take the same iterations in exact arithmetic; the scaled
form saves a product a step. It needs S⁻¹ g well scaled: where W_i underflows (π_i rounds to 0 or 1 beyond
|f_i| ≈ 37) or falls by orders within a step, g_i / S_i can exceed the other rows' entries by orders, and CG's
inner products, which it would dominate, lose the other rows to rounding. Near a mode g_i is of order W_i
(b_i − a_i is the change of y − π + W f, which is W-sized where π saturates), so S⁻¹ g is of order S; the
product form is kept for the steps where max|g_i / S_i| > SCALE_GUARD · max|g_i|, mostly a fit's first steps.

Where K̃ explains K, P⁻¹B is within ‖S(K − K̃)S‖ of I and CG needs one or two iterations: one or two products
a step, against Algorithm 3.1's two products, a solve with B and (CG's) a check of its residual. The steps are
inexact Newton steps (Dembo, Eisenstat and Steihaug 1982): CG stops when the step's own residual
(I + W K) δa − g, which is S times CG's residual in either form, is the forcing term ``tol`` times ‖g‖, and
Newton's next step corrects what is left, so the iteration converges to the same mode.

GMRES on (I + W K) a = b itself, right-preconditioned by (I + W K̃)⁻¹, also needs no product for K g, but that
matrix is S⁻¹ B P⁻¹ S, as far from normal as S's range (1e-5 to ½ at a large amplitude): at a hundred
thousand samples it took several times the iterations a step that CG on B, whose residual is S-scaled,
takes.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .preconditioner import NystromDiagonalPreconditioner

__all__ = ["NEWTON_CG_ITERATIONS", "newton_cg_step", "newton_cg_update", "step_gradient", "step_preconditioner",
           "RESIDUAL_TRACE", "RANK_STEP", "sufficient_rank"]

#: CG's iterations in a Newton step at most (where the factor explains K, one or two do).
NEWTON_CG_ITERATIONS = 100
#: ... and the smallest residual it asks for, relative to its start's (rounding's floor is near 1e-13).
RESIDUAL_FLOOR = 1e-10
#: The scaled form's right-hand side S⁻¹ g is used where its largest entry is at most this times g's (module
#: documentation): CG's inner products then keep every row to 1e-8 of rounding.
SCALE_GUARD = 1e4

#: A factor's default rank stops where ¼ tr(K − F Fᵀ) falls below this (sufficient_rank) ...
RESIDUAL_TRACE = 1e-3
#: ... in steps of this many pivots.
RANK_STEP = 64


def sufficient_rank(F: np.ndarray, d: np.ndarray) -> int:
    """The fewest leading pivots of the factor K ≈ F Fᵀ + diag(d) (in RPCholesky's order each prefix is the
    Nyström factor on its pivots) whose residual E = K − F_k F_kᵀ has ¼ tr E ≤ RESIDUAL_TRACE, a multiple of
    RANK_STEP, else all. W ≤ ¼, so ‖S E S‖ ≤ tr(S E S) ≤ ¼ tr E: past it, P = I + S K̃ S leaves B P⁻¹ within
    RESIDUAL_TRACE of I. A pivot costs O(n r) in each product with the factor and O(n r²) in each
    preconditioner (once per Newton step), far less than the product by K that a CG iteration more costs (at
    a hundred thousand samples near the optimum, a few hundred pivots take ¼ tr E below RESIDUAL_TRACE).
    tr E = Σ d + Σ_{j ≥ k} ‖F_j‖²: d's white noise, if any, counts too."""
    r = F.shape[1]
    tail = np.cumsum(np.einsum("ij,ij->j", F, F)[::-1])[::-1]  # Σ_{j ≥ k} ‖F_j‖² for k = 0 … r − 1
    base = float(np.sum(d))
    for k in range(RANK_STEP, r, RANK_STEP):
        if 0.25 * (base + float(tail[k])) <= RESIDUAL_TRACE:
            return k
    return r


def step_preconditioner(W_sr: np.ndarray, F: np.ndarray, d: np.ndarray,
                        threads: int = 0) -> NystromDiagonalPreconditioner:
    """P = I + S K̃ S = (S F)(S F)ᵀ + diag(1 + W d) for this W, K̃ = F Fᵀ + diag(d) (``threads``: its products')."""
    return NystromDiagonalPreconditioner(W_sr[:, None] * F, 1.0 + W_sr**2 * d, threads=threads)


def newton_cg_update(kernel_times: Callable[[np.ndarray], np.ndarray], W_sr: np.ndarray, b: np.ndarray,
                     current: tuple | None, *,
                     pre: NystromDiagonalPreconditioner, forcing: float, guess: np.ndarray | None = None) -> tuple:
    """A Newton step (:func:`newton_cg_step`) to the forcing term ``forcing``: from ``current`` = (a₀, K a₀);
    without it from ``guess`` (the last mode's a, one product for its K a: a θ nearby has its mode nearby),
    else from zero, where the step's gradient is b itself and the forcing term is squared."""
    tol, extra = forcing, 0
    if current is None and guess is not None and guess.shape == b.shape:
        current, extra = (guess, kernel_times(guess)), 1
    elif current is None:
        tol = forcing**2
    a, Ka, info = newton_cg_step(kernel_times, W_sr, b, current, pre=pre, tol=tol)
    info["iterations"] += extra
    return a, Ka, info


def newton_cg_step(kernel_times: Callable[[np.ndarray], np.ndarray], W_sr: np.ndarray, b: np.ndarray,
                   start: tuple | None, *,
                   pre: NystromDiagonalPreconditioner, tol: float, maxiter: int | None = None) -> tuple:
    """(a, K a, info) with (I + W K) a = b (module documentation): from ``start`` = (a₀, K a₀), or zero;
    ``kernel_times(u)`` = K u; ``pre`` = P for this W; CG until the step's residual ‖(I + W K) δa − g‖ is
    ``tol`` times ‖g‖ (the forcing term in a's own scale; not relative to CG's right-hand side, which K's
    amplitude makes larger than g by orders in the product form), at most ``maxiter`` iterations (None:
    NEWTON_CG_ITERATIONS), and never below RESIDUAL_FLOOR of the start's. ``info``: ``iterations`` (products
    by K, K g's included), ``residual`` (relative to ‖g‖), ``converged``, ``form`` ("scaled" or "product")."""
    n = b.shape[0]
    S = W_sr
    maxiter = NEWTON_CG_ITERATIONS if maxiter is None else maxiter
    a0, Ka0 = (np.zeros(n), np.zeros(n)) if start is None else start
    g = step_gradient(S, b, start)
    gradient_norm = float(np.linalg.norm(g))
    scaled = _scaled_gradient(g, S)
    products = 0
    if scaled is not None:
        r = scaled
    else:
        Kg = kernel_times(g)
        products += 1
        r = S * Kg
    # CG's residual r is B x's; the step's is S r (both forms): it stops on ‖S r‖
    norm = float(np.linalg.norm(S * r))
    target = max(tol * gradient_norm, RESIDUAL_FLOOR * norm)
    x, KSx = np.zeros(n), np.zeros(n)
    if norm > target:
        z = pre.solve(r[:, None])[:, 0]
        p, rz = z, float(r @ z)
        iterations = 0
        while iterations < maxiter:
            q = kernel_times(S * p)
            iterations += 1
            Bp = p + S * q
            alpha = rz / float(p @ Bp)
            x += alpha * p
            KSx += alpha * q
            r -= alpha * Bp
            norm = float(np.linalg.norm(S * r))
            if norm <= target:
                break
            z = pre.solve(r[:, None])[:, 0]
            rz_new = float(r @ z)
            p = z + (rz_new / rz) * p
            rz = rz_new
        products += iterations
    info = {"iterations": products, "residual": norm / gradient_norm if gradient_norm else 0.0,
            "converged": norm <= target, "form": "product" if scaled is None else "scaled"}
    if scaled is not None:
        return a0 + S * x, Ka0 + KSx, info
    return a0 + (g - S * x), Ka0 + (Kg - KSx), info


def step_gradient(W_sr: np.ndarray, b: np.ndarray, current: tuple | None) -> np.ndarray:
    """g = b − (I + W K) a₀, the Newton step's gradient from ``current`` = (a₀, K a₀) (b itself from zero): no
    product."""
    if current is None:
        return np.asarray(b, dtype=np.float64)
    a0, Ka0 = current
    return b - a0 - W_sr**2 * Ka0


def _scaled_gradient(g: np.ndarray, S: np.ndarray) -> np.ndarray | None:
    """S⁻¹ g (0 where g_i = 0), or None where it is not well scaled: an entry beyond SCALE_GUARD·max|g|, or
    g_i ≠ 0 where S_i = 0 (module documentation)."""
    largest = float(np.max(np.abs(g), initial=0.0))
    if largest == 0.0:
        return np.zeros_like(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(g == 0.0, 0.0, g / S)
    if not np.all(np.isfinite(scaled)) or float(np.max(np.abs(scaled))) > SCALE_GUARD * largest:
        return None
    return scaled
