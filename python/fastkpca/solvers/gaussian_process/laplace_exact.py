"""The exact Laplace approximation: Newton's iteration and the likelihood's gradient (laplace.py) from Cholesky
factors of B = I + S K S, in two n × n arrays.

One array holds K(θ) through the evaluation; the other holds B, then its factor L (LAPACK potrf, in place), at
every Newton step, and after the last one B⁻¹ (potri, in place over L), whose diagonal gives s₂ and whose
products give u = s₂ − S B⁻¹ S K s₂, and finally the gradient's weights Ω = ½(a aᵀ − S B⁻¹ S) + ½(u vᵀ + v uᵀ),
formed in place; the kernel reads Ω tile by tile and returns every tr(Ω ∂K/∂θ_j) (kernels.Kernel.
gradient_traces). Memory 2n²·8 bytes; flops n³/3 per Newton step and 2n³/3 for the inverse (scikit-learn's
gradient adds two n³ solves, an n × n × p array and 2pn² per θ_j on top).
"""

from __future__ import annotations

import numpy as np

from ... import _native
from ... import _validation as v
from .exact import factor, posterior_variance
from .laplace import LaplaceMode, mode_from, second_term, update_by_solve

__all__ = ["ExactLaplace"]

def _symmetric_times(K: np.ndarray, x: np.ndarray) -> np.ndarray:
    """K x for a symmetric C-ordered K by SciPy's BLAS, the library of the factorisations between these
    products: NumPy's OpenBLAS is another library with its own threads, which spin after each call and took
    40% from the next factor on two cores (0.075 s against 0.045 for n = 2,000, measured)."""
    from scipy.linalg import blas

    return blas.dsymv(1.0, K.T, x, lower=1)


class _CholeskyNewton:
    """laplace.NewtonSystem on K held whole: B formed into ``buffer`` and factored there at every step."""

    def __init__(self, K: np.ndarray, buffer: np.ndarray, threads: int):
        self.K, self.buffer, self.threads = K, buffer, threads
        self.L: np.ndarray | None = None

    def kernel_times(self, x: np.ndarray) -> np.ndarray:
        return _symmetric_times(self.K, x)

    def prepare(self, W_sr: np.ndarray) -> None:
        _native.core.laplace_system_into(self.K, np.ascontiguousarray(W_sr), self.buffer, self.threads)
        self.L = factor(self.buffer, 0.0)  # potrf in place

    def solve(self, r: np.ndarray) -> np.ndarray:
        from scipy.linalg import lapack

        x, info = lapack.dpotrs(self.L, r, lower=1)
        if info != 0:  # pragma: no cover - an argument LAPACK refuses
            raise ValueError(f"dpotrs: illegal value in argument {-info}")
        return x

    def newton_update(self, W_sr: np.ndarray, b: np.ndarray, current: tuple | None) -> tuple:
        return update_by_solve(self, W_sr, b)

    def half_logdet(self) -> float:
        assert self.L is not None
        return float(np.log(np.diag(self.L)).sum())


class ExactLaplace:
    """The binary Laplace approximation by Cholesky factors (module documentation) for one set of training
    samples and labels; after :meth:`fit_final` it keeps the factor of B at the fitted θ for the predictions.

    Parameters
    ----------
    X : ndarray (n, d) or list of objects
        Training samples (as the kernel reads them).
    y : ndarray (n,)
        Labels, 0 or 1 (float64).
    memory_limit : int
    """

    name = "cholesky"

    def __init__(self, X, y: np.ndarray, *, memory_limit: int):
        self.X, self.y, self.limit = X, y, memory_limit
        self.L: np.ndarray | None = None
        self.pi: np.ndarray | None = None
        self.W_sr: np.ndarray | None = None
        self._held: tuple[np.ndarray, np.ndarray] | None = None

    def _arrays(self, kernel) -> tuple[np.ndarray, np.ndarray]:
        """(K(X, X) in float64, an n × n array for B), after the memory check. Until :meth:`fit_final` the two
        arrays are kept from one evaluation to the next: fresh ones cost the first touch of their pages every
        time (this machine charges 1–2 s per GB: 0.6 s of an evaluation at n = 5,000)."""
        n = self.y.shape[0]
        if self._held is None:
            kept = 0 if self.L is None else 1  # a fitted model's L beside them
            v.check_within((2 + kept) * n * n * 8, self.limit, f"the exact Laplace approximation with {n} samples "
                           f"(solver='cholesky': two {n}×{n} matrices" + (" beside L_)" if kept else ")"))
            arrays = (np.empty((n, n)), np.empty((n, n)))
            if self.L is None:  # fitting: kept for the next evaluation (not beside a fitted model's L)
                self._held = arrays
        else:
            arrays = self._held
        K, B = arrays
        kernel.cross(self.X, out=K)
        return K, B

    def evaluate(self, kernel, start: tuple, max_iter: int,
                 eval_gradient: bool) -> tuple[float, np.ndarray | None, LaplaceMode]:
        """(log q(y | θ), its gradient with ``eval_gradient`` else None, the mode) for the kernel (a
        kernels.Kernel holding θ); ``start`` is ("f", f0): scikit-learn's iteration from f0
        (laplace.posterior_mode), or ("settled", f0 or None): laplace.settled_mode's."""
        from scipy.linalg import blas, lapack

        from ..lapack_threads import interruptible

        K, buffer = self._arrays(kernel)
        system = _CholeskyNewton(K, buffer, kernel.threads)
        mode = mode_from(system, self.y, start, max_iter)
        if not eval_gradient:
            return mode.log_marginal_likelihood, None, mode
        L = system.L
        assert L is not None
        _, info = interruptible(lapack.dpotri, L, lower=1, overwrite_c=1, flops=2 * L.shape[0] ** 3 / 3)
        if info != 0:  # pragma: no cover - a factor with a zero diagonal entry cannot come from potrf
            raise np.linalg.LinAlgError(f"dpotri: info {info}")
        S = mode.W_sr
        s2, residual = second_term(mode, np.diag(L).copy(), self.y)
        # u = (I − R K) s₂, R = S B⁻¹ S: B⁻¹ is in L's lower triangle (Fortran order)
        u = s2 - S * blas.dsymv(1.0, L, S * _symmetric_times(K, s2), lower=1)
        omega = buffer  # Ω in place over B⁻¹ (the upper triangle of the row-major array)
        _native.core.laplace_weights_in_place(omega, np.ascontiguousarray(S), mode.a, u, residual, kernel.threads)
        gradient = np.asarray(kernel.gradient_traces(self.X, omega), dtype=np.float64)
        return mode.log_marginal_likelihood, gradient, mode

    def fit_final(self, kernel, start: tuple, max_iter: int) -> LaplaceMode:
        """The mode at the fitted kernel; the factor of its B kept for :meth:`latent_variance` (as ``L_``)."""
        K, buffer = self._arrays(kernel)
        system = _CholeskyNewton(K, buffer, kernel.threads)
        mode = mode_from(system, self.y, start, max_iter)
        self.L, self.pi, self.W_sr = system.L, mode.pi, mode.W_sr
        self._held = None  # K goes; the other array is L now
        return mode

    def latent_mean(self, kernel, X_new) -> np.ndarray:
        """K(X_new, X)·(y − π) (Algorithm 3.2, line 4)."""
        assert self.pi is not None
        return np.asarray(kernel.product(X_new, self.X, self.y - self.pi), dtype=np.float64)

    def latent_variance(self, kernel, X_new) -> np.ndarray:
        """k(x, x) − ‖L⁻¹ S k*‖² (Algorithm 3.2, lines 5–6), in chunks of new points within the memory limit."""
        assert self.L is not None and self.W_sr is not None
        return posterior_variance(kernel, X_new, self.X, self.L, self.limit, scale=self.W_sr)

    def fitted_attributes(self) -> dict:
        return {"L_": self.L, "W_sr_": self.W_sr, "pi_": self.pi}

    def info(self) -> dict:
        return {}
