"""The preconditioner as a control variate of the likelihood gradient's trace estimate.

The gradient needs t_j = tr(K̂⁻¹ ∂K̂_j) for every hyperparameter. From p probes z ~ N(0, P), w = P⁻¹z and
u = K̂⁻¹z, Hutchinson's estimate (1/p) Σ wᵀ∂K̂_j u has expectation t_j, and so has

    t̂_j = (1/p) Σ wᵀ∂K̂_j u + tr(Ŵ ∂P̃_j),    Ŵ = P⁻¹ − (1/p) Σ w wᵀ,

for any symmetric ∂P̃_j, since E[w wᵀ] = P⁻¹ P P⁻¹ = P⁻¹ (Wenger et al. 2022, "Preconditioning for Scalable
Gaussian Process Hyperparameter Optimization", who take ∂P̃_j = ∂P/∂θ_j). With that choice the two random
terms cancel as P approaches K̂: what is left to chance is the part of the trace the preconditioner does not
explain. This module computes tr(Ŵ ∂P̃_j) exactly, without any n × n array.

P = Q + diag(K̂ − Q) with Q = F Fᵀ = K_nS K_SS⁻¹ K_Sn, S the pivots of the randomly pivoted Cholesky factor F
(preconditioner.py), K the noise-free kernel. Its derivative with the pivots held fixed:

    ∂Q = E W + Wᵀ Eᵀ,    W = K_SS⁻¹ K_Sn,    E = ∂K_nS − ½ Wᵀ ∂K_SS,
    ∂P̃ = ∂Q − diag(∂Q) + diag(∂K̂)                        (P keeps K̂'s diagonal).

With Δ = diag(Ŵ) and N = (Ŵ − diag Δ) Wᵀ (n × r),

    tr(Ŵ ∂P̃) = 2 Σ N ∘ ∂K_nS − Σ (W N) ∘ ∂K_SS + Σ_k Δ_k ∂K̂_kk,

the first two by the kernel's cross-block gradient traces (kernels.DifferentiableKernel.cross_gradient_traces), the last
by its diagonal's (diagonal_gradient_traces). Every piece of N is local to a row: F_S F_Sᵀ = K_SS for F's
rows at the pivots, so Wᵀ = F F_S⁻¹; with C = I + FᵀD⁻¹F (the preconditioner's Woodbury matrix),
FᵀD⁻¹Wᵀ = (C − I) F_S⁻¹ and therefore P⁻¹Wᵀ = D⁻¹ F C⁻¹ F_S⁻¹; diag(P⁻¹)_i = 1/d_i − F_i C⁻¹ F_iᵀ / d_i². So

    N_i = (F_i C⁻¹/d_i − Δ_i F_i) F_S⁻¹ − Ω_i (W Ω)ᵀ / p,    W Ω = F_S⁻ᵀ Fᵀ Ω,    Ω = [w_1 … w_p],

one pass over row chunks wherever the samples are, O(n·r²) flops and O(chunk·r) memory, plus the cross
block's kernel pass O(n·r·d). Whatever ∂P̃ is (float32 F, rounding in F_S⁻¹), t̂ stays unbiased: only its
variance depends on how well ∂P̃ follows ∂K̂.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .preconditioner import NystromDiagonalPreconditioner
from ..dense.threads import interruptible
from ..low_rank import factor_product, factor_t_product, team_size
from ..dense.subnormals import flush_subnormals

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.samples import SolverSamples

__all__ = ["control_variate_traces", "control_variate_bytes", "CONTROL_VARIATE_ROWS", "CONTROL_VARIATE_SQUARES"]

#: Rows per chunk of the pass at most (N's chunk is rows × r).
CONTROL_VARIATE_ROWS = 2048
#: Flops of a chunk's three rows × r × r products at most (about a second on one core): Ctrl-C is seen
#: between chunks.
CHUNK_FLOPS = 2e10


def control_variate_rows(rank: int) -> int:
    """Rows per chunk of the pass: CONTROL_VARIATE_ROWS, fewer where the rank makes a chunk's products long."""
    return int(max(64, min(CONTROL_VARIATE_ROWS, CHUNK_FLOPS // (6 * max(rank, 1) ** 2))))

#: Its flops are CONTROL_VARIATE_SQUARES · n · r² (three n × r × r products: F C⁻¹, T F_S⁻¹, Fᵀ T). Four would
#: do: T F_S⁻¹ is a triangular product (r² per row), and Fᵀ T = I − C⁻¹ − Fᵀ diag(Δ) F since Fᵀ D⁻¹ F = C − I,
#: a symmetric update (two, over the rows of either sign of Δ). Tried with OpenBLAS's dtrmm and dsyrk: slower
#: (dtrmm runs at about gemm's time for half the flops, and the split update's row copies outweigh its
#: saving), so the three general products stay.
CONTROL_VARIATE_SQUARES = 6


def control_variate_bytes(n: int, rank: int) -> int:
    """The pass's memory at its peak: four chunk × r arrays (F's rows in float64, F C⁻¹, T, N) and six r × r
    (F_S, F_S⁻¹, C⁻¹, Fᵀ T twice while summed, W N)."""
    return 8 * (4 * min(n, CONTROL_VARIATE_ROWS) * rank + 6 * rank * rank)


def _chunk_terms(X: Any, kernel: DifferentiableKernel, pivots_X: Any, inverse_C: np.ndarray, inverse_FS: np.ndarray,
                 omega_weights: np.ndarray, p: int, F: np.ndarray, Omega: np.ndarray,
                 inverse_d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chunk's share: (2 Σ N ∘ ∂K(X_c, X_S) + Σ_c Δ_k ∂K̂_kk per hyperparameter, F_cᵀ T_c) with
    N_c = T_c F_S⁻¹ − Ω_c (WΩ)ᵀ/p and T_c = F_c C⁻¹/d − Δ_c F_c (the module's documentation).

    The three chunk × r × r products run on the core's team where the kernel's has two threads or more (the
    native factor products; BLAS stays on one thread beside the core's passes: dense/threads.py), else on BLAS's
    one thread, the faster for one (docs/user_guide/threads.md times both)."""
    probes_square = np.einsum("ij,ij->i", Omega, Omega) / p
    if F.shape[1] == 0:
        return kernel.diagonal_gradient_traces(X, inverse_d - probes_square), np.zeros((0, 0))
    team = team_size(kernel.threads) > 1
    if not team:
        F = F.astype(np.float64, copy=False)
    FC = factor_product(F, inverse_C, team=team, threads=kernel.threads)
    delta = inverse_d - inverse_d**2 * np.einsum("ij,ij->i", FC, F) - probes_square
    traces = kernel.diagonal_gradient_traces(X, delta)
    T = FC * inverse_d[:, None] - F * delta[:, None]
    N = factor_product(T, inverse_FS, team=team, threads=kernel.threads)
    N -= Omega @ (omega_weights.T / p)
    return (traces + 2.0 * kernel.cross_gradient_traces(X, pivots_X, N),
            factor_t_product(F, T, team=team, threads=kernel.threads))


def control_variate_traces(kernel: DifferentiableKernel, samples: SolverSamples, pre: NystromDiagonalPreconditioner,
                           Omega: np.ndarray) -> np.ndarray:
    """tr(Ŵ ∂P̃_j) for every hyperparameter θ_j of ``kernel`` (a kernels.DifferentiableKernel with
    ``cross_gradients``), for the preconditioner ``pre`` of ``samples`` (an engine's) and Ω = P⁻¹Z (n × p): what
    t̂_j adds to Hutchinson's estimate (module documentation)."""
    from scipy.linalg import cho_solve, solve_triangular

    p, r = Omega.shape[1], pre.rank
    if pre.pivots.shape[0] != r:
        raise ValueError(f"the control variate needs the factor's {r} pivots, the preconditioner has "
                         f"{pre.pivots.shape[0]}")
    FS = pre.F[pre.pivots].astype(np.float64)  # lower triangular (pivots in their order: low_rank.LowRankFactor)
    # row-major: the chunks' products read them as the core's C operand
    inverse_FS = np.ascontiguousarray(flush_subnormals(interruptible(
        solve_triangular, FS, np.eye(r), lower=True, check_finite=False, flops=r**3 / 3))) if r else FS
    del FS
    inverse_C = (np.ascontiguousarray(flush_subnormals(interruptible(
        cho_solve, (pre.L, True), np.eye(r), check_finite=False, flops=2 * r**3 / 3))) if r else np.zeros((0, 0)))
    Omega_F = factor_t_product(pre.F, Omega, team=True, threads=pre.threads)  # Fᵀ Ω, r × p
    omega_weights = inverse_FS.T @ Omega_F  # W Ω
    pivots_X = samples.rows(pre.pivots)
    traces, FT = samples.reduce(_chunk_terms, kernel, pivots_X, inverse_C, inverse_FS, omega_weights, p,
                                row_args=(pre.F, Omega, pre.inverse_d), rows=control_variate_rows(r))
    if r == 0:
        return traces
    # W N = F_S⁻ᵀ Fᵀ N with Fᵀ N = (Fᵀ T) F_S⁻¹ − (Fᵀ Ω)(W Ω)ᵀ / p
    WN = inverse_FS.T @ (FT @ inverse_FS - Omega_F @ (omega_weights.T / p))
    return traces - kernel.cross_gradient_traces(pivots_X, pivots_X, WN)
