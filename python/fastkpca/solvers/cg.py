"""Conjugate gradients for kernel systems (K + αI) x = b: preconditioned, many right-hand sides at once, and
many shifts α from one Krylov run.

:func:`pcg` solves one system per column of B, each with its own shift, with one product by K per
iteration for all the columns still running (a block product: the operator reads or recomputes its
kernel once for all of them). Each column keeps its own CG scalars, so columns converge independently and
leave the block when they reach ``tol``; nothing of block CG's rank-deficiency handling is needed.

With ``fast_matmat``, the products of the iterations are by K̃, the same kernel evaluated in float32 (about
twice the rate of a float64 pass when the kernel is recomputed), and the solution is still the float64
system's: X accumulates in float64, and each time the recurrence's residuals have fallen by ``refresh`` the
true residuals b − (K + αI)x replace them (one product by K), the search directions kept — the reliable
updates of Sleijpen and van der Vorst (1996), as mixed-precision CG on GPUs uses them (Clark et al. 2010).
Between two updates the recurrence drifts from the truth by about ‖K̃ − K‖/α times the residual at the last
update, so the iterations converge as in float64 while that ratio is small (rbf on N = 100,000 samples:
entries' errors ~1e-8, ‖K̃ − K‖ ~ 1e-5 against α = 1e-3). A system where it is not (α below K̃'s error)
shows as a restart that does not halve the true residual: CG then goes on with K alone.

:class:`LowRankPreconditioner` comes from a low-rank factor F of K (randomly pivoted Cholesky, see
low_rank.py). With F = U Σ Vᵀ and λ̂ = Σ² the eigenvalues of F Fᵀ,

    P = U (Λ̂ + α) Uᵀ + (λ̂_r + α)(I − U Uᵀ),        P⁻¹ = U [(Λ̂ + α)⁻¹ − (λ̂_r + α)⁻¹] Uᵀ + (λ̂_r + α)⁻¹ I,

the Woodbury form of (F Fᵀ + αI)⁻¹ with the part of the space F does not reach scaled by λ̂_r + α
instead of α (Frangella, Tropp and Udell 2023, "Randomized Nyström preconditioning"; Díaz, Epperly,
Frangella, Tropp and Webber 2023 for the RPCholesky factor). Plain Woodbury (``complement="alpha"``)
leaves K's unexplained spectrum at (λ + α)/α, thousands for a small α and a kernel whose residual is a
flat bulk (rbf kernels in high dimension are ≈ c·I plus a low-rank part), where the scaled form leaves
(λ + α)/(λ̂_r + α) ≤ about 1. bench/kernel_ridge.py measures the iterations of both.

:func:`cg_shifted` is multi-shift CG (Frommer 2003): the Krylov space of K + αI does not depend on α, so
one run of CG on the smallest shift gives, by scalar recurrences, the iterates for every shift, at the
cost of one product per iteration in total. It cannot be preconditioned (a preconditioner breaks the
shift invariance), so it pays off when many shifts are wanted.
"""

from __future__ import annotations

import time

import numpy as np

from .low_rank import factor_t_product

__all__ = ["LowRankPreconditioner", "pcg", "cg_shifted", "REFRESH"]

#: pcg with fast products: the factor by which the recurrence's residuals fall between true residuals.
REFRESH = 1e-2


class LowRankPreconditioner:
    """P⁻¹ for the shifts ``alphas`` (one per column) from a low-rank factor F (n × r) of K.

    F is overwritten by U (its left singular vectors) to keep one n × r array. A float32 F (half the memory
    for the same rank) is applied in float32 with float64 sums over its row blocks: P⁻¹ is then applied to
    about 1e-6 relative (measured at n = 100,000, r = 1,600), harmless to CG, whose residuals are the
    products' and which does not need the preconditioner exact, only fixed and positive definite to that
    accuracy (U's rounding ε₃₂ is far below (λ̂_r + α)/(λ̂_1 + α)).
    """

    def __init__(self, factor: np.ndarray, alphas, complement: str = "residual"):
        gram = factor_t_product(factor, factor)  # FᵀF = V Σ² Vᵀ
        values, V = np.linalg.eigh(gram)
        values, V = values[::-1], V[:, ::-1]  # descending
        keep = values > max(values[0], 0.0) * factor.shape[0] * np.finfo(np.float64).eps if values.size else []
        values, V = values[keep], V[:, keep]
        # U = F V Σ⁻¹, computed into F's memory in row blocks (n × r of scratch would double the memory).
        r = values.shape[0]
        scale = np.ascontiguousarray(V / np.sqrt(values))
        rows = max(1, (64 * 2**20) // max(1, 8 * factor.shape[1]))  # a float32 block is converted: 8 bytes
        for start in range(0, factor.shape[0], rows):
            block = factor[start:start + rows]
            block[:, :r] = block @ scale
        self.U = factor[:, :r]  # rows strided by F's width when r < its rank: BLAS reads it in place
        self.values = np.ascontiguousarray(values)  # λ̂, descending
        self.alphas = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
        floor = self.values[-1] if (complement == "residual" and r) else 0.0
        self.outside = 1.0 / (floor + self.alphas)                              # (λ̂_r + α)⁻¹ per column
        self.inside = 1.0 / (self.values[:, None] + self.alphas[None, :]) - self.outside  # r × columns

    @property
    def rank(self) -> int:
        return self.U.shape[1]

    def __call__(self, R: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """P⁻¹ R for the given columns (indices into the alphas)."""
        coef = factor_t_product(self.U, R, float32_products=True)
        coef *= self.inside[:, columns]
        Z = R * self.outside[columns]
        Z += self.U @ (coef if self.U.dtype == np.float64 else coef.astype(np.float32))
        return Z


def pcg(matmat, B: np.ndarray, alphas, *, tol: float, maxiter: int, precondition=None, progress=None,
        fast_matmat=None, refresh: float = REFRESH):
    """Solve (K + α_j I) x_j = b_j for every column j of B by preconditioned CG.

    Parameters
    ----------
    matmat : callable
        ``matmat(V)`` = K V for an n × c float64 block.
    fast_matmat : callable or None
        ``fast_matmat(V)`` = K̃ V, K̃ ≈ K (a float32 evaluation of the same kernel): the iterations take
        their products from it, and the residuals are made true again with ``matmat`` (see the module's
        documentation: reliable updates).
    refresh : float
        With ``fast_matmat``: recompute the true residuals each time the recurrence's have all fallen by this
        factor since the last true ones.
    B : ndarray (n, t)
    alphas : array (t,)
        Shift of each column.
    tol : float
        Stop a column when ‖b − (K + αI)x‖ ≤ tol·‖b‖ (the recurrence's residual; the true residual is
        recomputed at the end with one more product, and the iteration resumes from it if rounding made
        the two drift apart by more than tol).
    maxiter : int
        Products by K at most (the final check included).
    precondition : callable or None
        ``precondition(R, columns)`` = P⁻¹ R for those columns.
    progress : callable or None
        ``progress(iterations, converged, worst_residual)`` after every iteration.

    Returns
    -------
    X : ndarray (n, t)
    info : dict
        ``iterations`` (products by K, fast or not), ``fast_products`` (those by K̃), ``residuals``
        (relative, per column), ``residuals_are_true``
        (False only when maxiter stopped the iteration before the final check: then they are the
        recurrence's), ``converged`` (every true residual <= tol), ``stalled`` (a restart from the true
        residual did not halve it: tol is below what rounding allows; with ``fast_matmat`` such a restart
        first drops K̃ and goes on with K), ``fast_dropped``, ``column_iterations`` and ``seconds``.
    """
    start = time.perf_counter()
    n, t = B.shape
    alphas = np.broadcast_to(np.asarray(alphas, dtype=np.float64), (t,))
    norms = np.linalg.norm(B, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    X = np.zeros((n, t))
    column_iterations = np.zeros(t, dtype=np.int64)
    products = 0
    R = B.astype(np.float64, copy=True)
    residual = np.linalg.norm(R, axis=0) / safe
    exact = True  # whether `residual` is a true residual (else the recurrence's)
    stalled = fast_dropped = False
    best = np.inf
    fast_products = 0
    anchor = residual.copy()  # each column's last true residual
    while True:
        active = np.flatnonzero(residual > tol)
        if not active.size or products >= maxiter or stalled:
            break
        exact = False
        Z = precondition(R[:, active], active) if precondition is not None else R[:, active].copy()
        P = Z
        rz = np.einsum("ij,ij->j", R[:, active], Z)
        while products < maxiter:
            AP = (matmat if fast_matmat is None else fast_matmat)(P)
            AP += P * alphas[active]
            products += 1
            fast_products += fast_matmat is not None
            column_iterations[active] += 1
            curvature = np.einsum("ij,ij->j", P, AP)
            if fast_matmat is not None and not (curvature > 0).all():
                # K̃ + αI is not positive definite (α below K̃'s error): restart from the true residual with K.
                fast_matmat, fast_dropped, best = None, True, np.inf
                break
            step = rz / curvature
            X[:, active] += P * step
            R[:, active] -= AP * step
            residual[active] = np.linalg.norm(R[:, active], axis=0) / safe[active]
            if (fast_matmat is not None and products < maxiter
                    and (residual[active] <= refresh * anchor[active]).all()):
                # Reliable update: the recurrence has drifted from b − (K + αI)x by K̃'s error times the
                # steps since the last true residual; replace it by the true one (one product by K), keep
                # the search directions. If the true residual has not halved since the last one, K̃'s error
                # is what is left: go on with K.
                R[:, active] = B[:, active] - matmat(X[:, active]) - X[:, active] * alphas[active]
                products += 1
                previous = anchor[active].max()
                residual[active] = anchor[active] = np.linalg.norm(R[:, active], axis=0) / safe[active]
                if residual[active].max() > 0.5 * previous:
                    fast_matmat, fast_dropped = None, True
            if progress is not None:
                progress(products, int(np.count_nonzero(residual <= tol)), float(residual.max()))
            keep = np.flatnonzero(residual[active] > tol)
            if not keep.size:
                break
            active, P, rz = active[keep], P[:, keep], rz[keep]
            Z = precondition(R[:, active], active) if precondition is not None else R[:, active].copy()
            rz_new = np.einsum("ij,ij->j", R[:, active], Z)
            P = Z + P * (rz_new / rz)
            rz = rz_new
        if products >= maxiter:
            break
        # The true residual, with one more product: the recurrence's R drifts from b − (K + αI)x. If the
        # drift took a column back above tol, CG resumes from the true residual.
        AX = matmat(X)
        products += 1
        R = B - AX - X * alphas
        residual = np.linalg.norm(R, axis=0) / safe
        anchor = residual.copy()
        exact = True
        # Rounding bounds the attainable residual (about ε·κ, or K̃'s error over α): a restart that does not
        # halve the worst true residual means tol is below it; with K̃, go on with K.
        worst = float(residual.max())
        stalled = worst > 0.5 * best
        best = min(best, worst)
        if stalled and fast_matmat is not None:
            fast_matmat, stalled, fast_dropped, best = None, False, True, worst
    info = {"iterations": products, "fast_products": fast_products, "residuals": residual,
            "converged": bool(exact and (residual <= tol).all()), "residuals_are_true": exact, "stalled": stalled,
            "fast_dropped": fast_dropped, "column_iterations": column_iterations,
            "seconds": time.perf_counter() - start}
    return X, info


def cg_shifted(matmat, b: np.ndarray, shifts, *, tol: float, maxiter: int):
    """Solve (K + σ_i I) x_i = b for every shift σ_i >= 0 from one unpreconditioned CG run (Frommer 2003).

    CG on the smallest shift σ₀ builds the Krylov space; the solution for another shift σ has a residual
    collinear with σ₀'s, r_σ = ζ_σ r₀, with ζ, the step and the direction updated by scalar recurrences.
    Converges when the hardest system (the smallest shift) does.

    Returns (X of shape (n, len(shifts)), info with ``iterations``, ``residuals`` (relative, per shift,
    from the recurrence) and ``converged``).
    """
    shifts = np.asarray(shifts, dtype=np.float64)
    order = np.argsort(shifts)
    sigma = shifts[order]
    s0 = sigma[0]
    delta = sigma - s0                        # the other systems are (A₀ + δ I) with A₀ = K + σ₀ I
    n = b.shape[0]
    bnorm = float(np.linalg.norm(b))
    X = np.zeros((n, sigma.size))
    if bnorm == 0:
        return X, {"iterations": 0, "residuals": np.zeros(sigma.size), "converged": True}
    r = b.astype(np.float64, copy=True)
    P = np.repeat(r[:, None], sigma.size, axis=1)  # search directions, one per shift
    zeta, zeta_old = np.ones(sigma.size), np.ones(sigma.size)
    alpha_old, beta = 1.0, 0.0
    rr = float(r @ r)
    residuals = np.ones(sigma.size)
    iterations = 0
    while iterations < maxiter:
        Ap = matmat(np.ascontiguousarray(P[:, :1]))[:, 0] + s0 * P[:, 0]
        iterations += 1
        alpha = rr / float(P[:, 0] @ Ap)
        # Frommer's recurrences for the shifted systems (A₀ + δI): ζ_{k+1} from ζ_k, ζ_{k-1}.
        denom = alpha * beta * (zeta_old - zeta) + zeta_old * alpha_old * (1 + alpha * delta)
        zeta_new = zeta * zeta_old * alpha_old / np.where(denom != 0, denom, 1)
        alpha_s = alpha * zeta_new / np.where(zeta != 0, zeta, 1)
        X += P * alpha_s
        r -= alpha * Ap
        rr_new = float(r @ r)
        residuals = np.abs(zeta_new) * np.sqrt(rr_new) / bnorm
        if residuals.max() <= tol:
            zeta_old, zeta = zeta, zeta_new
            break
        beta = rr_new / rr
        beta_s = beta * (zeta_new / np.where(zeta != 0, zeta, 1)) ** 2
        P[:, 0] = r + beta * P[:, 0]
        P[:, 1:] = zeta_new[1:] * r[:, None] + beta_s[1:] * P[:, 1:]
        zeta_old, zeta = zeta, zeta_new
        alpha_old, rr = alpha, rr_new
    out = np.empty_like(X)
    out[:, order] = X
    res = np.empty_like(residuals)
    res[order] = residuals
    return out, {"iterations": iterations, "residuals": res, "converged": bool(res.max() <= tol)}
