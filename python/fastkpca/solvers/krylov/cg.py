"""Conjugate gradients for kernel systems (K + αI) x = b: preconditioned, many right-hand sides at once, and
many shifts α from one Krylov run.

:func:`pcg` solves one system per column of B, each with its own shift, with one product by K per
iteration for all the columns still running (a block product: the operator reads or recomputes its
kernel once for all of them). Each column keeps its own CG scalars, so columns converge independently and
leave the block when they reach ``tol``; nothing of block CG's rank-deficiency handling is needed. With
``record`` it keeps those scalars, Lanczos's tridiagonal matrices in other variables: the stochastic Lanczos
quadrature of the Gaussian process's log determinant (lanczos_cg.py) comes from the same run as its solves.

With ``fast_matmat``, the products of the iterations are by K̃, the same kernel evaluated in float32 (twice the
entries per SIMD vector as a float64 pass when the kernel is recomputed), and the solution is still the float64
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
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from ..low_rank import factor_t_product

__all__ = ["LowRankPreconditioner", "pcg", "pcg_bytes", "cg_shifted", "REFRESH", "PCG_BLOCKS"]

#: pcg with fast products: the factor by which the recurrence's residuals fall between true residuals.
REFRESH = 1e-2

#: n × c float64 blocks pcg holds at its peak on c columns, its right-hand sides B included: at the first
#: preconditioning inside the loop, B, R, X, P, the last Z, R's active columns and the preconditioner's
#: two (P⁻¹R and its low-rank correction).
PCG_BLOCKS = 9


def pcg_bytes(n: int, columns: int, rank: int = 0) -> int:
    """Memory :func:`pcg` holds on ``columns`` right-hand sides of length n, B included (PCG_BLOCKS), with a
    rank-``rank`` preconditioner's r × c coefficients; the operator's pass memory is the operator's
    (operators.pass_bytes)."""
    return 8 * columns * (PCG_BLOCKS * n + 3 * rank)


class LowRankPreconditioner:
    """P⁻¹ for the shifts ``alphas`` (one per column) from a low-rank factor F (n × r) of K.

    F is overwritten by U (its left singular vectors) to keep one n × r array. A float32 F (half the memory
    for the same rank) is applied in float32 with float64 sums over its row blocks: P⁻¹ is then applied to
    float32's accuracy rather than float64's, harmless to CG, whose residuals are the
    products' and which does not need the preconditioner exact, only fixed and positive definite to that
    accuracy (U's rounding ε₃₂ is far below (λ̂_r + α)/(λ̂_1 + α)).
    """

    def __init__(self, factor: np.ndarray, alphas: ArrayLike, complement: str = "residual") -> None:
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


def pcg(matmat: Callable[[np.ndarray], np.ndarray], B: np.ndarray, alphas: ArrayLike | None = None, *,
        tol: float | np.ndarray, maxiter: int,
        precondition: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        progress: Callable[[int, int, float], object] | None = None,
        fast_matmat: Callable[[np.ndarray], np.ndarray] | None = None, refresh: float = REFRESH,
        x0: np.ndarray | None = None, verify: bool = True, record: bool = False) -> tuple[np.ndarray, dict[str, Any]]:
    """Solve (K + α_j I) x_j = b_j for every column j of B by preconditioned CG.

    Parameters
    ----------
    matmat : callable
        ``matmat(V)`` = K V for an n × c float64 block.
    B : ndarray (n, t)
    alphas : array (t,) or None
        Shift of each column (None: none, the system is K x = b).
    tol : float or array (t,)
        Stop a column when ‖b − (K + αI)x‖ ≤ tol·‖b‖ (one tolerance, or one per column; the recurrence's
        residual; with ``verify`` the true residual is recomputed at the end with one more product, and the
        iteration resumes from it if rounding made the two drift apart by more than tol).
    maxiter : int
        Products by K at most, a start x0's included; with ``verify`` the last is kept for the final check, so
        the residuals reported are true ones whenever the iterations ran.
    precondition : callable or None
        ``precondition(R, columns)`` = P⁻¹ R for those columns.
    progress : callable or None
        ``progress(iterations, converged, worst_residual)`` after every iteration.
    fast_matmat : callable or None
        ``fast_matmat(V)`` = K̃ V, K̃ ≈ K (a float32 evaluation of the same kernel): the iterations take
        their products from it, and the residuals are made true again with ``matmat`` (see the module's
        documentation: reliable updates).
    refresh : float
        With ``fast_matmat``: recompute the true residuals each time the recurrence's have all fallen by this
        factor since the last true ones.
    x0 : ndarray (n, t) or None
        Starting guesses (a warm start: one product for the columns that are not zero).
    verify : bool
        Check the true residuals at the end (one product) and resume from them where they are above tol.
        Without, the residuals reported are the recurrence's.
    record : bool
        Keep each column's CG scalars (``steps``, ``ratios``, ``start_norms`` in ``info``), from which
        lanczos_cg.quadrature_log rebuilds Lanczos's tridiagonal matrix: only the first run's (a restart from
        the true residual begins another Krylov space), and only a column started at zero is a quadrature.

    Returns
    -------
    X : ndarray (n, t)
    info : dict
        ``iterations`` (products by K, fast or not), ``fast_products`` (those by K̃), ``residuals``
        (relative, per column), ``residuals_are_true`` (False without ``verify``, or where a recording run
        stopped: then they are the recurrence's), ``converged`` (every residual <= tol, the true ones with
        ``verify``), ``stalled`` (a restart from the true residual did not halve it: tol is below what
        rounding allows; with ``fast_matmat`` such a restart first drops K̃ and goes on with K),
        ``fast_dropped``, ``column_iterations``, ``seconds`` and ``residual_block`` (B − (K + αI)X, n × t,
        where the residuals are true; else None); with ``record``, ``steps`` and ``ratios``
        (per column: CG's step lengths a_j and direction ratios b_j) and ``start_norms`` (r₀ᵀP⁻¹r₀ per
        column).
        ``indefinite``: None, or the smallest finite curvature pᵀ(K + αI)p ≤ 0 met: K + αI is not positive
        definite. A solve goes on (the true residual judges its answer); a recording run stops there, not
        converged; with ``fast_matmat``, such a direction of K̃ makes CG go on with K instead.
        ``broken_down``: the columns whose curvature was zero or not finite, and those a recording run
        stopped, left where they were (not converged).
    """
    if fast_matmat is not None and (record or not verify):
        raise ValueError("pcg: fast_matmat needs verify=True and record=False (its reliable updates replace "
                         "the recurrence's residuals)")
    start = time.perf_counter()
    n, t = B.shape
    shifts = None if alphas is None else np.broadcast_to(np.asarray(alphas, dtype=np.float64), (t,))
    norms = np.linalg.norm(B, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    column_iterations = np.zeros(t, dtype=np.int64)
    products = 0
    limit = maxiter - 1 if verify else maxiter  # the iterations' products: the last is the final check's

    def apply(product: Callable[[np.ndarray], np.ndarray], V: np.ndarray,
              columns: np.ndarray) -> np.ndarray:  # (K + αI) V for those columns
        out = product(V)
        if shifts is not None:
            out += V * shifts[columns]
        return out

    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), (t,))
    R = B.astype(np.float64, copy=True)
    if x0 is None:
        X = np.zeros((n, t))
    else:
        X = np.array(x0, dtype=np.float64, copy=True)
        started = np.flatnonzero(np.any(X != 0, axis=0))  # only these columns need (K + αI)x₀
        if started.size:
            R[:, started] -= apply(matmat, np.ascontiguousarray(X[:, started]), started)
            products += 1
    residual = np.linalg.norm(R, axis=0) / safe
    steps: list[list[float]] = [[] for _ in range(t)]
    ratios: list[list[float]] = [[] for _ in range(t)]
    start_norms = np.zeros(t)
    first_run = True
    exact = True  # whether `residual` is a true residual (else the recurrence's)
    stalled = fast_dropped = broke = False  # broke: recording, K + αI showed it is not positive definite
    dead = np.zeros(t, dtype=bool)  # columns whose CG broke down (a zero or non-finite curvature)
    indefinite = None  # the smallest non-positive curvature met, if any
    best = np.inf
    fast_products = 0
    anchor = residual.copy()  # each column's last true residual
    while True:
        active = np.flatnonzero((residual > tol) & ~dead)
        if not active.size or products >= limit or stalled or broke:
            break
        exact = False
        Z = precondition(R[:, active], active) if precondition is not None else R[:, active].copy()
        P = Z
        rz = np.einsum("ij,ij->j", R[:, active], Z)
        if record and first_run:
            start_norms[active] = rz
        while products < limit:
            AP = apply(matmat if fast_matmat is None else fast_matmat, P, active)
            products += 1
            fast_products += fast_matmat is not None
            column_iterations[active] += 1
            curvature = np.einsum("ij,ij->j", P, AP)
            if not (curvature > 0).all():
                if fast_matmat is not None:
                    # K̃ + αI is not positive definite (α below K̃'s error): restart from the true residual with K.
                    fast_matmat, fast_dropped, best = None, True, np.inf
                    break
                # K + αI is not positive definite. CG's iterates stay those of the symmetric system while no
                # curvature is zero (the true residual still judges them), so a solve goes on; Lanczos's
                # quadrature of log is meaningless for every column, so a recording run stops; a column
                # whose curvature is zero or not finite has broken down and leaves the block.
                finite = curvature[np.isfinite(curvature) & ~(curvature > 0)]
                if finite.size:
                    indefinite = float(min(finite.min(), np.inf if indefinite is None else indefinite))
                if record:
                    broke, dead[active] = True, True
                    break
                failed = ~np.isfinite(curvature) | (curvature == 0)
                if failed.any():
                    dead[active[failed]] = True
                    ok = np.flatnonzero(~failed)
                    active, P, AP, rz, curvature = active[ok], P[:, ok], AP[:, ok], rz[ok], curvature[ok]
                    if not active.size:
                        break
            step = rz / curvature
            X[:, active] += P * step
            R[:, active] -= AP * step
            del AP  # not needed again: one n × c block less while the preconditioner runs
            residual[active] = np.linalg.norm(R[:, active], axis=0) / safe[active]
            if record and first_run:
                for c, a in zip(active, step):
                    steps[c].append(float(a))
            if (fast_matmat is not None and products < limit
                    and (residual[active] <= refresh * anchor[active]).all()):
                # Reliable update: the recurrence has drifted from b − (K + αI)x by K̃'s error times the
                # steps since the last true residual; replace it by the true one (one product by K), keep
                # the search directions. If the true residual has not halved since the last one, K̃'s error
                # is what is left: go on with K.
                R[:, active] = B[:, active] - apply(matmat, X[:, active], active)
                products += 1
                previous = anchor[active].max()
                residual[active] = anchor[active] = np.linalg.norm(R[:, active], axis=0) / safe[active]
                if residual[active].max() > 0.5 * previous:
                    fast_matmat, fast_dropped = None, True
            if progress is not None:
                progress(products, int(np.count_nonzero(residual <= tol)), float(residual.max()))
            keep = np.flatnonzero(residual[active] > tol[active])
            if not keep.size:
                break
            active, P, rz = active[keep], P[:, keep], rz[keep]
            Z = precondition(R[:, active], active) if precondition is not None else R[:, active].copy()
            rz_new = np.einsum("ij,ij->j", R[:, active], Z)
            ratio = rz_new / rz
            if record and first_run:
                for c, b in zip(active, ratio):
                    ratios[c].append(float(b))
            P *= ratio  # P is the active columns' copy (P[:, keep] above): updated in place
            P += Z
            del Z
            rz = rz_new
        first_run = False
        if not verify or broke:
            break
        # The true residual, with the product kept for it: the recurrence's R drifts from b − (K + αI)x. If
        # the drift took a column back above tol, CG resumes from the true residual while products are left.
        R = B - apply(matmat, X, np.arange(t))
        products += 1
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
            "converged": bool((exact or not verify) and not broke and (residual <= tol).all()),
            "residuals_are_true": exact, "indefinite": indefinite, "broken_down": np.flatnonzero(dead),
            "stalled": stalled, "fast_dropped": fast_dropped, "column_iterations": column_iterations,
            "seconds": time.perf_counter() - start, "residual_block": R if exact else None}
    if record:
        info.update(steps=steps, ratios=ratios, start_norms=start_norms)
    return X, info


def cg_shifted(matmat: Callable[..., np.ndarray], b: np.ndarray, shifts: ArrayLike, *, tol: float,
               maxiter: int) -> tuple[np.ndarray, dict[str, Any]]:
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
