"""The preconditioner of a Gaussian process's kernel matrix K̂ = K + diag(noise): a randomly pivoted Cholesky
factor of the noise-free kernel plus a diagonal,

    P = F Fᵀ + D,    D = noise + white + diag(K₀ − F Fᵀ)    (K₀: the kernel without its white noise),

so that P has K̂'s diagonal (the residual's diagonal kept, as FITC keeps it: Snelson and Ghahramani 2006) and is
positive definite whatever the rank. With C = I_r + Fᵀ D⁻¹ F = L_C L_Cᵀ (Woodbury),

    P⁻¹ V = D⁻¹V − D⁻¹F C⁻¹ Fᵀ D⁻¹V,    log det P = Σ log D_ii + 2 Σ log (L_C)_ii,

and z = M ξ with M Mᵀ = P (:meth:`NystromDiagonalPreconditioner.sample`) and ξ of covariance I has
covariance P: the probes of stochastic Lanczos quadrature (iterative.py). Everything costs O(n·r)
per column and O(n·r²) to build.

F may be stored in float32 (half the memory once built; RPCholesky builds it in float64): the products with it
are then taken in float64 chunk by chunk, so P is exactly F Fᵀ + D for the stored F, and its log det is that P's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..dense.factorisations import cholesky_factor, cholesky_solve
from ..dense.threads import interruptible, solve_lower_triangular
from ..low_rank import factor_gram, factor_product, factor_t_product, rpcholesky
from ..dense.subnormals import flush_subnormals

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.samples import ColumnSource, SolverSamples

__all__ = ["NystromDiagonalPreconditioner", "build_preconditioner", "PRECONDITIONER_BLOCK"]



class NystromDiagonalPreconditioner:
    """P = F Fᵀ + diag(d) and what CG and SLQ need of it (see the module's documentation).

    Parameters
    ----------
    factor : ndarray of shape (n, r), float32 or float64
        F (kept, not copied).
    diagonal : ndarray of shape (n,)
        d, positive.
    pivots : ndarray of shape (r,), optional
        The samples whose kernel columns span F (F Fᵀ = K_nS K_SS⁻¹ K_Sn; the control variate's derivative,
        control_variate.py, holds them fixed).
    """

    def __init__(self, factor: np.ndarray, diagonal: np.ndarray, pivots: np.ndarray | None = None,
                 threads: int = 0) -> None:
        self.F, self.d, self.threads = factor, np.asarray(diagonal, dtype=np.float64), threads
        self.pivots = np.zeros(0, dtype=np.int64) if pivots is None else np.asarray(pivots, dtype=np.int64)
        self.inverse_d = 1.0 / self.d
        r = factor.shape[1]
        C = factor_gram(factor, self.inverse_d, threads)  # Fᵀ D⁻¹ F in float64
        C[np.diag_indices(r)] += 1.0
        # LAPACK's layout: the solves copy no r × r
        self.L = cholesky_factor(C) if r else C
        self.logdet = float(np.log(self.d).sum() + 2.0 * np.log(np.diag(self.L)).sum())

    @property
    def rank(self) -> int:
        return self.F.shape[1]

    @property
    def nbytes(self) -> int:
        return self.F.nbytes + self.d.nbytes * 2 + self.L.nbytes

    def _ft(self, V: np.ndarray) -> np.ndarray:
        """Fᵀ V in float64."""
        return factor_t_product(self.F, V, team=V.ndim == 2 and V.shape[1] > 1, threads=self.threads)

    def _f(self, C: np.ndarray) -> np.ndarray:
        """F C in float64."""
        return factor_product(self.F, C, team=C.ndim == 2 and C.shape[1] > 1, threads=self.threads)

    def _small_solve(self, B: np.ndarray) -> np.ndarray:
        return cholesky_solve(self.L, B)

    def solve(self, V: np.ndarray) -> np.ndarray:
        """P⁻¹ V for an n × c block (Woodbury)."""
        Vd = V * self.inverse_d[:, None]
        if not self.rank:
            return Vd
        correction = self._f(self._small_solve(self._ft(Vd)))
        correction *= self.inverse_d[:, None]
        Vd -= correction
        return Vd

    def __call__(self, R: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
        """P⁻¹ R: cg.pcg's ``precondition`` (the same P for every column)."""
        return self.solve(R)

    def multiply(self, V: np.ndarray) -> np.ndarray:
        """P V."""
        out = V * self.d[:, None]
        if self.rank:
            out += self._f(self._ft(V))
        return out

    def sample(self, Xi: np.ndarray) -> np.ndarray:
        """M Ξ for a factor M of P (M Mᵀ = P): probes of covariance P from columns Ξ of covariance I (random
        signs: Hutchinson's estimator with them has no variance from the diagonal).

        M = D^½ (I + G Gᵀ)^½ with G = D^-½ F; from GᵀG = FᵀD⁻¹F = V Λ Vᵀ,
        (I + G Gᵀ)^½ = I + G V diag(((1 + λ)^½ − 1)/λ) Vᵀ Gᵀ, so M Ξ = D^½ Ξ + F V diag(…) Vᵀ Fᵀ D^-½ Ξ."""
        root = np.sqrt(self.d)[:, None]
        Z = Xi * root
        if self.rank:
            values, V = interruptible(_spectrum_of_gram, self.L, flops=12.0 * self.rank**3)
            values = np.maximum(values, 0.0)
            scale = np.where(values > 0, (np.sqrt(1.0 + values) - 1.0) / np.where(values > 0, values, 1.0), 0.5)
            Z += self._f(V @ (scale[:, None] * (V.T @ self._ft(Xi / root))))
        return Z


def _spectrum_of_gram(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The eigendecomposition of GᵀG = L Lᵀ − I (L: the factor of I + GᵀG)."""
    return np.linalg.eigh(L @ L.T - np.eye(L.shape[0]))


def _diagonals(rows: Any, kernel: DifferentiableKernel) -> np.ndarray:
    """[signal diagonal, diagonal] of the rows: one pass over the samples gives both."""
    return np.column_stack([kernel.signal_diagonal(rows), kernel.diagonal(rows)]).astype(np.float64)


class _SignalColumns:
    """A column source of the kernel (solvers/low_rank.py's) with the noise-free diagonal: its columns
    K(X, X_S) are cross blocks already (no white noise), its diagonal is replaced."""

    def __init__(self, source: ColumnSource, signal: np.ndarray) -> None:
        self.source, self.signal, self.n, self.dtype = source, signal, source.n, np.dtype(np.float64)

    def diagonal(self) -> np.ndarray:
        return self.signal

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        return self.source.columns(index, out)


#: RPCholesky's proposals per block for the preconditioner.
PRECONDITIONER_BLOCK = 64


def _on_pivots(source: ColumnSource, pivots: np.ndarray) -> np.ndarray | None:
    """The Nyström factor on fixed pivots S, F = K(X, X_S) L⁻ᵀ with L Lᵀ = K(X_S, X_S) (F_S = L, lower
    triangular, as RPCholesky's); None where K(X_S, X_S) is not numerically positive definite at this θ."""
    n, r = source.n, pivots.shape[0]
    columns = source.columns(pivots, np.empty((n, r)))
    try:
        L = cholesky_factor(columns[pivots])
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.diag(L) > 1e-7 * np.sqrt(max(float(np.max(np.diag(columns[pivots]))), 1e-300))):
        return None  # a pivot the others (nearly) explain: its column of F is rounding
    # Fᵀ = L⁻¹ K(X_S, X), in place in the columns' memory (their transpose is Fortran-ordered); subnormals
    # flushed as RPCholesky's are (products over them crawl)
    return flush_subnormals(solve_lower_triangular(L, columns.T, overwrite_b=True).T)


def kernel_factor(kernel: DifferentiableKernel, samples: SolverSamples, rank: int, *, seed: int,
                  dtype: DTypeLike = np.float64, block_size: int = PRECONDITIONER_BLOCK,
                  pivots: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(F, D, pivots) with K ≈ F Fᵀ + diag(D) for the kernel ``kernel`` (a kernels.Kernel) of ``samples`` (an
    engine's, engines/base.py): RPCholesky of rank ``rank`` (fewer when the kernel is exhausted; 0: F empty, D
    K's diagonal), seeded with ``seed``; or, with ``pivots``, the Nyström factor on those samples (RPCholesky's
    where they do not give a positive definite K(X_S, X_S) at this θ). D is the residual diagonal, clipped at
    zero, plus the kernel's white noise."""
    n = samples.shape[0]
    signal, diagonal = (np.ascontiguousarray(c) for c in samples.map(_diagonals, kernel, rows=n).T)
    residual = signal
    factor = np.zeros((n, 0), dtype=dtype)
    if rank > 0:
        source: Any = _SignalColumns(samples.kernel_of(kernel).columns(), signal)
        F = None if pivots is None or not pivots.size else _on_pivots(source, pivots)
        if F is None:
            low_rank = rpcholesky(source, min(rank, n), None, random_state=seed, block_size=min(block_size, rank),
                                  threads=kernel.threads)
            F, pivots = low_rank.factor, low_rank.pivots
        residual = signal - np.einsum("ij,ij->i", F, F)
        factor = F if dtype == np.float64 else flush_subnormals(F.astype(dtype))
    else:
        pivots = None
    return factor, np.maximum(residual, 0.0) + diagonal - signal, pivots


def build_preconditioner(kernel: DifferentiableKernel, samples: SolverSamples, noise: float | np.ndarray, rank: int,
                         *, seed: int, dtype: DTypeLike = np.float64,
                         block_size: int = PRECONDITIONER_BLOCK,
                         pivots: np.ndarray | None = None) -> NystromDiagonalPreconditioner:
    """P = F Fᵀ + D + diag(noise) for the kernel ``kernel`` of ``samples`` and the noise (scalar or per
    sample), F and D from :func:`kernel_factor`. Fixed pivots make P, and so the likelihood's estimate, a
    smooth function of θ: RPCholesky draws its pivots from θ's residual diagonal, and a neighbouring θ may draw
    others, moving the estimate by its error's size."""
    factor, d, pivots = kernel_factor(kernel, samples, rank, seed=seed, dtype=dtype, block_size=block_size,
                                      pivots=pivots)
    return NystromDiagonalPreconditioner(factor, d + noise, pivots, kernel.threads)
