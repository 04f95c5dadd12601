"""The exact Laplace approximation: Newton's iteration and the likelihood's gradient (laplace.py) from Cholesky
factors of B = I + S K S, in two n × n arrays.

One array holds K(θ) through the evaluation; the other holds B, then its factor L (LAPACK potrf, in place), at
every Newton step, and after the last one B⁻¹ (potri, in place over L), whose diagonal gives s₂ and whose
products give u = s₂ − S B⁻¹ S K s₂, and finally the gradient's weights Ω = ½(a aᵀ − S B⁻¹ S) + ½(u vᵀ + v uᵀ),
formed in place; the kernel reads Ω tile by tile and returns every tr(Ω ∂K/∂θ_j) (kernels.DifferentiableKernel.
gradient_traces). Memory 2n²·8 bytes; flops n³/3 per Newton step and 2n³/3 for the inverse (scikit-learn's
gradient adds two n³ solves, an n × n × p array and 2pn² per θ_j on top). A fit's Newton steps may go by
preconditioned CG on products with the held K instead (newton_cg.py, n² flops a product), B then factored once per
evaluation, at the mode: the library's cost model decides which is cheaper for n (solvers/choice.py,
laplace_newton_steps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _native, _threads
from .. import choice as _choice
from ... import _validation as v
from ..dense.factorisations import cholesky_solve, zero_strict_upper
from .exact import ExactOptimisation, factor, posterior_variance, prediction_threads
from .laplace import LaplaceMode, mode_from, second_term, update_by_solve
from .newton_cg import newton_cg_update, step_preconditioner, sufficient_rank
from .preconditioner import NystromDiagonalPreconditioner

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel

#: A Newton step by CG stops with its residual fallen by this from the step's gradient (inexact Newton).
NEWTON_FORCING = 1e-3
#: ... preconditioned by a Nyström factor of K of at most this rank (RPCholesky on the held K;
#: newton_cg.sufficient_rank may take fewer): the cost model's (solvers/choice.py).
NYSTROM_RANK = _choice.LAPLACE_NYSTROM_RANK

__all__ = ["ExactLaplace"]

def _symmetric_times(K: np.ndarray, x: np.ndarray) -> np.ndarray:
    """K x for a symmetric C-ordered K by SciPy's BLAS, the library of the factorisations between these
    products: NumPy's OpenBLAS is another library with its own threads, which spin after each call and held
    the cores the next factor needed (measured on a 2-core machine)."""
    from scipy.linalg import blas

    return blas.dsymv(1.0, K.T, x, lower=1)


class _CholeskyNewton:
    """laplace.NewtonSystem on K held whole: B formed into ``buffer`` and factored there when a solve or log det B
    is asked for. With a Nyström factor (F, d) of K, Newton's steps go by CG instead (newton_cg.py:
    products by the held K, n² flops each, against potrf's n³/3), and B is factored once, at the mode; a step
    whose CG does not converge is taken by the factor."""

    def __init__(self, K: np.ndarray, buffer: np.ndarray, threads: int, nystrom: tuple | None = None,
                 guess: np.ndarray | None = None) -> None:
        self.K, self.buffer, self.threads, self.nystrom, self.guess = K, buffer, threads, nystrom, guess
        self.L: np.ndarray | None = None
        self.W_sr = np.zeros(K.shape[0])
        self.pre: NystromDiagonalPreconditioner | None = None
        self.figures = {"cg_steps": 0, "cg_products": 0, "factored_steps": 0}

    def kernel_times(self, x: np.ndarray) -> np.ndarray:
        return _symmetric_times(self.K, x)

    def prepare(self, W_sr: np.ndarray) -> None:
        self.W_sr, self.L = W_sr, None
        if self.nystrom is not None:
            F, d = self.nystrom
            self.pre = step_preconditioner(W_sr, F, d, threads=self.threads)

    def factored(self) -> np.ndarray:
        """The Cholesky factor of B for the W prepared (potrf in place in the buffer, once per W)."""
        if self.L is None:
            _native.core.laplace_system_into(self.K, np.ascontiguousarray(self.W_sr), self.buffer,
                                             _threads.array_threads(self.threads, self.K.size))
            self.L = factor(self.buffer, 0.0)
        return self.L

    def solve(self, r: np.ndarray) -> np.ndarray:
        return cholesky_solve(self.factored(), r)

    def newton_update(self, W_sr: np.ndarray, b: np.ndarray, current: tuple | None) -> tuple:
        if self.nystrom is None or self.pre is None:
            self.figures["factored_steps"] += 1
            return update_by_solve(self, W_sr, b)
        a, Ka, info = newton_cg_update(self.kernel_times, W_sr, b, current, pre=self.pre, forcing=NEWTON_FORCING,
                                       guess=self.guess)
        self.figures["cg_products"] += info["iterations"]
        if not info["converged"]:
            self.figures["factored_steps"] += 1
            return update_by_solve(self, W_sr, b)
        self.figures["cg_steps"] += 1
        return a, Ka

    def half_logdet(self) -> float:
        return float(np.log(np.diag(self.factored())).sum())


class ExactLaplace(ExactOptimisation):
    """The binary Laplace approximation by Cholesky factors (module documentation) for one set of training
    samples and labels; after :meth:`fit_final` it keeps the factor of B at the fitted θ for the predictions.

    Parameters
    ----------
    X : ndarray (n, d) or list of objects
        Training samples (as the kernel reads them).
    y : ndarray (n,)
        Labels, 0 or 1 (float64).
    memory_limit : int
    newton_steps : {"auto", "factor", "cg"}
        How a fit's Newton steps go (laplace_newton_steps of solvers/choice.py; scikit-learn's iteration, from
        ``log_marginal_likelihood``, factors B at every step).
    """

    name = "cholesky"
    per_sample_objective = False
    stop_gain: float | None = None
    abnormal_restarts = 0

    def __init__(self, X: Any, y: np.ndarray, *, memory_limit: int, newton_steps: str = "auto") -> None:
        self.X, self.y, self.limit = X, y, memory_limit
        #: How a fit's Newton steps go: "factor" or "cg" (the cost model's pick for "auto": solvers/choice.py)
        self.steps = _choice.laplace_newton_steps(y.shape[0], newton_steps)
        self.L: np.ndarray | None = None
        self.pi: np.ndarray | None = None
        self.W_sr: np.ndarray | None = None
        self._held: tuple[np.ndarray, np.ndarray] | None = None
        self.last_a: np.ndarray | None = None  # the last mode's a: the next evaluation's first guess
        self.figures = {"cg_steps": 0, "cg_products": 0, "factored_steps": 0}

    def _arrays(self, kernel: DifferentiableKernel) -> tuple[np.ndarray, np.ndarray]:
        """(K(X, X) in float64, an n × n array for B), after the memory check. Until :meth:`fit_final` the two
        arrays are kept from one evaluation to the next: fresh ones cost the first touch of their pages every
        time (a page's first touch costs the kernel's zeroing of it: a large share of an evaluation at a few
        thousand samples)."""
        n = self.y.shape[0]
        if self._held is None:
            kept = 0 if self.L is None else 1  # a fitted model's L beside them
            # the two arrays, the Newton steps' Nyström factor (its factor, S F and RPCholesky's columns)
            v.check_within(_choice.laplace_exact_bytes(n) + kept * n * n * 8, self.limit,
                           f"the exact Laplace approximation with {n} samples (solver='cholesky': two {n}×{n} "
                           "matrices" + (" beside L_)" if kept else ")"))
            arrays = (np.empty((n, n)), np.empty((n, n)))
            if self.L is None:  # fitting: kept for the next evaluation (not beside a fitted model's L)
                self._held = arrays
        else:
            arrays = self._held
        K, B = arrays
        kernel.cross(self.X, out=K)
        return K, B

    def _system(self, K: np.ndarray, buffer: np.ndarray, threads: int, start: tuple) -> _CholeskyNewton:
        """Newton's system on the held K: steps by CG for settled_mode's iteration where the cost model picked
        them, by the factor of B otherwise (scikit-learn's iteration, whose every step asks for log det B
        anyway)."""
        n = K.shape[0]
        if start[0] != "settled" or self.steps.picked == "factor":
            return _CholeskyNewton(K, buffer, threads)
        from ..low_rank import rpcholesky

        low_rank = rpcholesky(K, min(NYSTROM_RANK, n), None, random_state=0, threads=threads)
        F = low_rank.factor
        diagonal = np.diag(K)
        d = np.maximum(diagonal - np.einsum("ij,ij->i", F, F), 0.0)
        rank = sufficient_rank(F, d)
        if rank < F.shape[1]:
            F = np.ascontiguousarray(F[:, :rank])
            d = np.maximum(diagonal - np.einsum("ij,ij->i", F, F), 0.0)
        return _CholeskyNewton(K, buffer, threads, nystrom=(F, d), guess=self.last_a)

    def _mode(self, system: _CholeskyNewton, start: tuple, max_iter: int) -> LaplaceMode:
        mode = mode_from(system, self.y, start, max_iter)
        self.last_a = mode.a
        for key, count in system.figures.items():
            self.figures[key] += count
        return mode

    def evaluate(self, kernel: DifferentiableKernel, start: tuple, max_iter: int,
                 eval_gradient: bool) -> tuple[float, np.ndarray | None, LaplaceMode]:
        """(log q(y | θ), its gradient with ``eval_gradient`` else None, the mode) for the kernel (a
        kernels.Kernel holding θ); ``start`` is ("f", f0): scikit-learn's iteration from f0
        (laplace.posterior_mode), or ("settled", f0 or None): laplace.settled_mode's."""
        from scipy.linalg import blas

        from ..dense.factorisations import cholesky_inverse_in_place
        from ..dense.threads import blocked_threads

        K, buffer = self._arrays(kernel)
        system = self._system(K, buffer, kernel.threads, start)
        mode = self._mode(system, start, max_iter)
        if not eval_gradient:
            return mode.log_marginal_likelihood, None, mode
        L = system.factored()
        with blocked_threads(L.shape[0]):
            info = cholesky_inverse_in_place(L)
        if info != 0:  # pragma: no cover - a factor with a zero diagonal entry cannot come from potrf
            raise np.linalg.LinAlgError(f"dpotri: info {info}")
        S = mode.W_sr
        s2, residual = second_term(mode, np.diag(L).copy(), self.y)
        # u = (I − R K) s₂, R = S B⁻¹ S: B⁻¹ is in L's lower triangle (Fortran order)
        u = s2 - S * blas.dsymv(1.0, L, S * _symmetric_times(K, s2), lower=1)
        omega = buffer  # Ω in place over B⁻¹ (the upper triangle of the row-major array)
        _native.core.laplace_weights_in_place(omega, np.ascontiguousarray(S), mode.a, u, residual,
                                                  _threads.array_threads(kernel.threads, omega.size))
        gradient = np.asarray(kernel.gradient_traces(self.X, omega), dtype=np.float64)
        return mode.log_marginal_likelihood, gradient, mode

    def fit_final(self, kernel: DifferentiableKernel, start: tuple, max_iter: int) -> LaplaceMode:
        """The mode at the fitted kernel; the factor of its B kept for :meth:`latent_variance` (as ``L_``)."""
        K, buffer = self._arrays(kernel)
        system = self._system(K, buffer, kernel.threads, start)
        mode = self._mode(system, start, max_iter)
        self.L, self.pi, self.W_sr = system.factored(), mode.pi, mode.W_sr
        zero_strict_upper(self.L)  # kept as L_: scikit-learn's lower factor (the Newton steps read one triangle)
        self._held = None  # K goes; the other array is L now
        return mode

    def latent_mean(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """K(X_new, X)·(y − π) (Algorithm 3.2, line 4)."""
        assert self.pi is not None
        return np.asarray(kernel.product(X_new, self.X, self.y - self.pi), dtype=np.float64)

    def latent_variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """k(x, x) − ‖L⁻¹ S k*‖² (Algorithm 3.2, lines 5–6), in chunks of new points within the memory limit."""
        assert self.L is not None and self.W_sr is not None
        with prediction_threads(self.L.shape[0], X_new.shape[0]):
            return posterior_variance(kernel, X_new, self.X, self.L, self.limit, scale=self.W_sr)

    def fitted_attributes(self) -> dict:
        return {"L_": self.L, "W_sr_": self.W_sr, "pi_": self.pi}

    def info(self) -> dict:
        return {"newton": {**self.figures, "choice": self.steps.as_dict()}}
