"""The exact Gaussian process solver: everything from one Cholesky factor of the n × n kernel matrix.

With K̂ = K + diag(a) = L Lᵀ (a: the system's diagonal, the regression's noise ``alpha``) and Y (n × t),

    quad_k = y_kᵀ α_k,  α = K̂⁻¹ Y,   log det K̂ = 2 Σ_i log L_ii,
    ∇_θ [w_q Σ_k quad_k + w_l log det K̂]_j = tr((−w_q α αᵀ + w_l K̂⁻¹) ∂K/∂θ_j),

the interface's inv_quad_logdet (interface.py); the regression's weights (−½, −t/2) give scikit-learn's formulas
(Rasmussen and Williams, eqs. 2.30 and 5.9). One n × n array holds K̂, then its factor (LAPACK's potrf, in
place), then K̂⁻¹ (its potri, in place over the factor; both by blocks that Ctrl-C stops: dense/factorisations.py),
then the weights W = −w_q α αᵀ + w_l K̂⁻¹; the traces tr(W ∂K/∂θ_j) come from the kernel
(kernels.DifferentiableKernel.gradient_traces), which reads W tile by tile and never holds ∂K/∂θ_j.
Memory: n²·8 bytes and O(n·(d + t)); flops: n³/3 for the factor, 2n³/3 for the inverse.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Callable, overload

import numpy as np

from ... import _native, _threads
from ... import _validation as v
from ..dense.factorisations import cholesky_in_place, cholesky_inverse_in_place, solve_with_factor, zero_strict_upper
from ..dense.threads import blocked_threads, small_algebra_threads, solve_lower_triangular
from .objective import Objective
from .interface import InvQuadLogdet

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.samples import SolverSamples

__all__ = ["ExactOptimisation", "ExactSolver", "factor", "weights_in_place", "posterior_variance",
           "posterior_covariance"]

def factor(K: np.ndarray, noise: float | np.ndarray, clean: bool = False) -> np.ndarray:
    """The lower Cholesky factor L of K + diag(noise), computed in place: K (C-contiguous, symmetric, float64,
    the caller's to overwrite) becomes Lᵀ; L, returned, is its Fortran-ordered view, its strict upper triangle
    still K's, or with ``clean`` zero (scipy.linalg.cholesky's lower factor: a factor kept as ``L_``; the solves
    and the inverse read the lower triangle only). np.linalg.LinAlgError if K + diag(noise) is not positive
    definite. By blocks that Ctrl-C stops (dense/factorisations.py)."""
    K.flat[::K.shape[0] + 1] += noise  # the diagonal
    L = K.T  # Fortran-ordered: factored in place
    with blocked_threads(K.shape[0]):
        info = cholesky_in_place(L)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if clean:
        zero_strict_upper(L)
    return L


def weights_in_place(K: np.ndarray, A: np.ndarray, outer_weight: float, inverse_weight: float,
                     threads: int = 0) -> np.ndarray:
    """W = outer_weight · A Aᵀ + inverse_weight · K̂⁻¹, whole and symmetric, in K's memory, where K holds K̂⁻¹ in
    its upper triangle (row-major; the lower triangle of the Fortran-ordered factor that potri wrote): one native
    pass over K's tiles (cpp/include/fastkpca/gp_weights.hpp), on ``threads`` (0: the default team, or one thread
    for a small K: _threads.array_threads)."""
    A = np.ascontiguousarray(A, dtype=np.float64).reshape(K.shape[0], -1)
    _native.core.gp_weights_in_place(K, A, float(outer_weight), float(inverse_weight),
                                     _threads.array_threads(threads, K.size))
    return K


def _terms(L: np.ndarray, Y: np.ndarray, alpha: np.ndarray) -> InvQuadLogdet:
    """yᵀK̂⁻¹y per column and log det K̂ from the factor L and α = K̂⁻¹Y."""
    return InvQuadLogdet(np.einsum("ik,ik->k", Y, alpha), 2.0 * np.log(np.diag(L)).sum(), alpha)


def _test_chunks(n_train: int, n_test: int, memory_limit: int) -> int:
    """Test points per chunk of the cross kernel and its triangular solve (two n_train × chunk arrays)."""
    return int(max(1, min(n_test, (memory_limit // 4) // max(1, 16 * n_train))))


def prediction_threads(n_train: int, n_new: int) -> AbstractContextManager[None]:
    """The BLAS threads of a prediction's triangular solves (n_train² flops a new point): one thread where that
    is small algebra (lapack's BLAS_TEAM_MIN_SECONDS), every thread above. Alone, a second thread would read L
    faster (the solve of 1,000 rows against 10 points is bound by memory bandwidth: 0.41 ms on one thread, 0.32
    on two); beside another process's work its threads wait a scheduler's slice for a core (8 ms where the solve
    takes 0.2)."""
    return small_algebra_threads(float(n_train) ** 2 * n_new)


@overload
def posterior_variance(kernel: DifferentiableKernel, X_new: Any, X_train: Any, L: np.ndarray, memory_limit: int,
                       scale: np.ndarray | None = None, mean_weights: None = None) -> np.ndarray: ...


@overload
def posterior_variance(kernel: DifferentiableKernel, X_new: Any, X_train: Any, L: np.ndarray, memory_limit: int,
                       scale: np.ndarray | None = None, *,
                       mean_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


def posterior_variance(kernel: DifferentiableKernel, X_new: Any, X_train: Any, L: np.ndarray, memory_limit: int,
                       scale: np.ndarray | None = None,
                       mean_weights: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """k(x, x) − v·v with v = L⁻¹ S K(X_train, x) for every new point (S = diag(scale), None: I), in chunks of
    new points that fit a quarter of the memory limit (scikit-learn's formula, without its n_train × n_new
    array). With ``mean_weights`` A (n_train × t), (K(x, X_train)·A, the variances) from the same chunks of the
    cross kernel: the posterior mean and variance by one evaluation of it."""
    n_new = X_new.shape[0]
    rows = _test_chunks(L.shape[0], n_new, memory_limit)
    out = kernel.diagonal(X_new).astype(np.float64)
    mean = None if mean_weights is None else np.empty((n_new, mean_weights.shape[1]))
    for start in range(0, n_new, rows):
        part = X_new[start:start + rows]
        Kt = kernel.cross(part, X_train).T
        if mean is not None:
            mean[start:start + part.shape[0]] = Kt.T @ mean_weights
        if scale is not None:
            Kt = Kt * scale[:, None]
        V = solve_lower_triangular(L, Kt, overwrite_b=True)
        out[start:start + part.shape[0]] -= np.einsum("ij,ij->j", V, V)
    return out if mean is None else (mean, out)


def posterior_covariance(kernel: DifferentiableKernel, X_new: Any, X_train: Any, L: np.ndarray,
                         memory_limit: int) -> np.ndarray:
    """K(X_new, X_new) − Vᵀ V, V = L⁻¹ K(X_train, X_new) (scikit-learn's formula), after a memory check."""
    n_new, n_train = X_new.shape[0], L.shape[0]
    v.check_within(8 * n_new * (2 * n_train + n_new), memory_limit,
                   f"the posterior covariance of {n_new} points (a {n_train}×{n_new} solve)")
    V = solve_lower_triangular(L, kernel.cross(X_new, X_train).T, overwrite_b=True)
    return kernel.cross(X_new) - V.T @ V


class ExactOptimisation:
    """How an exact solver's likelihood meets the optimiser (the regression's and the Laplace
    approximation's): from the kernel's θ, as it is, the optimum as found."""

    #: No probes: the likelihood is exact, its standard error 0 (refined_estimate.py).
    probes = 0

    def with_probes(self, probes: int) -> ExactOptimisation:
        """Itself: an exact likelihood needs no probes (refined_estimate.py)."""
        return self

    def start(self, theta: np.ndarray, fit_subset: Callable[[np.ndarray, str], tuple[np.ndarray, dict]], size: int,
              random_state: Any) -> tuple[np.ndarray, dict | None]:
        """The optimiser starts from the kernel's θ: an exact evaluation costs what an exact fit on a subset's
        would, relative to the whole fit."""
        return theta, None

    def objective(self, func: Callable[..., Any]) -> Objective:
        """The likelihood as it is: exact values and their gradient."""
        return Objective(func, integrate=False)

    def settle(self, optimum: tuple,
               minimise: Callable[[np.ndarray], tuple[np.ndarray, float, Callable[[np.ndarray], np.ndarray] | None]],
               func: Callable[..., Any], bounds: np.ndarray) -> tuple[np.ndarray, float, dict | None]:
        """The optimum as found: the likelihood is exact, nothing to settle."""
        return optimum[0], optimum[1], None


class ExactSolver(ExactOptimisation):
    """The interface's exact solver (interface.py): one n × n array per evaluation, the factor kept after
    :meth:`solve` for the predictions and as ``L_``.

    Parameters
    ----------
    samples : an engine's Samples (engines/base.py)
        Training samples; the exact solver needs them in this process (a cluster's engine says why not).
    noise : float or ndarray (n,)
        The system's diagonal (the regression's ``alpha``).
    memory_limit : int
    """

    name = "cholesky"
    likelihood_from_solve = True
    per_sample_objective = False
    stop_gain: float | None = None
    abnormal_restarts = 0

    def __init__(self, samples: SolverSamples, noise: float | np.ndarray, *, memory_limit: int) -> None:
        self.samples, self.noise, self.limit = samples, noise, memory_limit
        self.X = samples.fitted()
        self.L: np.ndarray | None = None
        self.alpha: np.ndarray | None = None  # K̂⁻¹Y of the final solve

    def _matrix(self, kernel: DifferentiableKernel) -> np.ndarray:
        """K(X, X) in float64, the caller's to overwrite, after the memory check."""
        n = self.samples.shape[0]
        what = f"the exact Gaussian process with {n} samples (solver='cholesky': one {n}×{n} matrix)"
        v.check_within(n * n * 8, self.limit, what)
        if not self.samples.holds_matrix:  # samples on a cluster: the engine says why not, and what to do
            self.samples.kernel_of(kernel).matrix(what=what, memory_limit=self.limit)
        K, _ = kernel.matrix(self.X)
        return np.array(K, dtype=np.float64, order="C", copy=True) if K.dtype != np.float64 else K

    def inv_quad_logdet(self, kernel: DifferentiableKernel, Y: np.ndarray, eval_gradient: bool, *, quad_weight: float,
                        logdet_weight: float) -> InvQuadLogdet:
        with small_algebra_threads(float(self.X.shape[0]) ** 3 / 3):  # the products beside the factorisations
            return self._inv_quad_logdet(kernel, Y, eval_gradient, quad_weight, logdet_weight)

    def _inv_quad_logdet(self, kernel: DifferentiableKernel, Y: np.ndarray, eval_gradient: bool, quad_weight: float,
                         logdet_weight: float) -> InvQuadLogdet:
        K = self._matrix(kernel)
        try:
            L = factor(K, self.noise)
        except np.linalg.LinAlgError:
            return InvQuadLogdet(None, math.nan, None)
        alpha = solve_with_factor(L, Y)
        terms = _terms(L, Y, alpha)
        if not eval_gradient:
            return terms
        # K̂⁻¹ in the factor's triangle
        with blocked_threads(L.shape[0]):
            info = cholesky_inverse_in_place(L)
        if info != 0:  # pragma: no cover - a factor with a zero diagonal entry cannot come from potrf
            raise np.linalg.LinAlgError(f"dpotri: info {info}")
        W = weights_in_place(K, alpha, -quad_weight, logdet_weight, kernel.threads)
        gradient = np.asarray(kernel.gradient_traces(self.X, W), dtype=np.float64)
        return InvQuadLogdet(terms.quad, terms.logdet, alpha, gradient)

    def solve(self, kernel: DifferentiableKernel, Y: np.ndarray) -> np.ndarray:
        self.L = factor(self._matrix(kernel), self.noise, clean=True)
        self.alpha = solve_with_factor(self.L, Y)
        return self.alpha

    def solved_inv_quad_logdet(self, Y: np.ndarray) -> InvQuadLogdet:
        """The terms at the kernel of the last :meth:`solve`, from its factor and α (:func:`_terms`, as
        :meth:`inv_quad_logdet` forms them), without factoring K̂ a second time."""
        assert self.L is not None and self.alpha is not None
        return _terms(self.L, Y, self.alpha)

    def variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        assert self.L is not None
        with self._prediction_threads(X_new):
            return posterior_variance(kernel, X_new, self.X, self.L, self.limit)

    def mean_and_variance(self, kernel: DifferentiableKernel, X_new: Any,
                          mean_map: Callable[[Any], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The posterior mean K(x, X)·α and the variances from one evaluation of the cross kernel (scikit-learn's
        K_trans), chunk by chunk."""
        assert self.L is not None and self.alpha is not None
        with self._prediction_threads(X_new):
            return posterior_variance(kernel, X_new, self.X, self.L, self.limit, mean_weights=self.alpha)

    def covariance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        assert self.L is not None
        with self._prediction_threads(X_new):
            return posterior_covariance(kernel, X_new, self.X, self.L, self.limit)

    def _prediction_threads(self, X_new: Any) -> AbstractContextManager[None]:
        assert self.L is not None
        return prediction_threads(self.L.shape[0], X_new.shape[0])

    def fitted_attributes(self) -> dict:
        return {"L_": self.L}

    def info(self) -> dict:
        return {}

    def localised(self) -> ExactSolver:
        return self
