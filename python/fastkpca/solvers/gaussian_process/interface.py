"""What a Gaussian process solver is: the one interface every solver of the family implements, the regression's
and the Laplace classification's, exact and iterative as peers, and the regression likelihood written once on
top of it.

Every solver answers the hyperparameters' optimiser (optimiser.py), which runs the same loop for every model
and never asks which solver it has: where to start (``start``: the kernel's θ, or a fit on a subset of the
samples, subset_start.py), what to minimise (``objective``: the negative log likelihood itself, or values
integrated from its gradient where the solver's value and gradient are separate estimates, objective.py), how
L-BFGS-B should see it (``per_sample_objective``, ``stop_gain``, ``abnormal_restarts``), and when the optimum
found is the answer (``settle``). Beside that, each model asks its own questions of the same solver object.

Regression (:class:`RegressionSolver`: exact.py, iterative.py). A solver answers questions about one system,
K̂ = K(θ) + diag(a): the kernel matrix of the training samples at the hyperparameters θ of the kernel it is
handed, plus a diagonal ``a`` fixed when the solver is made (the noise ``alpha``). Its central operation, as
GPyTorch's ``inv_quad_logdet``, is

    quad_k = y_kᵀ K̂⁻¹ y_k (one per column of Y),   logdet = log det K̂,
    and, asked for it, ∇_θ [w_q Σ_k quad_k + w_l logdet] = Σ_j tr((−w_q A Aᵀ + w_l K̂⁻¹) ∂K/∂θ_j) e_j,

A = K̂⁻¹Y, for the weights (w_q, w_l) the caller's objective puts on the two: the exact solver reads K̂⁻¹ from
its factor, the iterative one estimates the trace with probes. Beside it: the final solve for the posterior
mean's coefficients (which fixes the state the predictions use), the predictive variances and covariance.

Laplace classification (:class:`LaplaceSolver`: laplace_exact.py, laplace_iterative.py). The approximation
(laplace.py) solves with B = I + W^½ K W^½ at the posterior mode, W > 0 diagonal (the likelihood's curvature
there): a solver finds the mode by Newton's iteration and returns the approximate log marginal likelihood and
its gradient (``evaluate``), the mode at the fitted θ (``fit_final``) and the latent mean and variance at new
points. Since B = W^½ (K + W⁻¹) W^½, B's solves are the regression's for the noise W⁻¹, and the iterative
Laplace solver's trace estimate is the regression's with its control variate (laplace_iterative.py); the
exact one factors B itself, whose eigenvalues lie in [1, 1 + λ_max(K)/4] whatever K's conditioning.

Which solver a fit uses is decided once by the library's cost model (solvers/choice.py, through this package's
make_solver and make_laplace_solver); the estimator calls the interface and never asks which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from .objective import Objective

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel
    from .laplace import LaplaceMode

__all__ = ["InvQuadLogdet", "GaussianProcessSolver", "RegressionSolver", "LaplaceSolver", "log_marginal_likelihood",
           "likelihood_value"]

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class InvQuadLogdet:
    """A solver's answer at one θ (see the module's documentation)."""

    #: yᵀK̂⁻¹y per column of Y (None where K̂ was found not positive definite).
    quad: np.ndarray | None
    #: log det K̂ (exact, or an estimate).
    logdet: float
    #: K̂⁻¹Y, n × t (to the solver's working accuracy).
    solution: np.ndarray | None
    #: ∇_θ [w_q Σ quad + w_l logdet], or None when not asked for.
    gradient: np.ndarray | None = None
    #: The standard error of logdet (0.0 where it is exact).
    standard_error: float = 0.0
    #: The gradient's standard errors (None: exact, or not asked for: IterativeSolver.with_probes).
    gradient_standard_error: np.ndarray | None = None

    @property
    def positive_definite(self) -> bool:
        return self.quad is not None


class GaussianProcessSolver(Protocol):
    """What every Gaussian process solver answers the optimiser (optimiser.py), whatever the model."""

    #: "cholesky" or "cg": what ``solver_info_["solver"]`` reports.
    name: str
    #: Whether L-BFGS-B should work on the likelihood per sample (optimiser.py says why).
    per_sample_objective: bool
    #: L-BFGS-B stops where two iterations in a row after the first each gain less than this in the objective
    #: per sample (gain_stop.py; None: scipy's own tests only).
    stop_gain: float | None
    #: L-BFGS-B runs again from where its line search ended ABNORMAL at most this many times (0: the optimiser's
    #: result as scikit-learn checks it).
    abnormal_restarts: int

    def start(self, theta: np.ndarray, fit_subset: Callable[[np.ndarray, str], tuple[np.ndarray, dict]], size: int,
              random_state: Any) -> tuple[np.ndarray, dict | None]:
        """θ for the optimiser to start from, and what was done for it (None: nothing): ``theta`` (the
        kernel's), or the θ of ``fit_subset(index, solver)``, a fit on the samples ``index`` drawn from
        ``random_state`` by the solver named (subset_start.py), where an evaluation costs much more than that
        fit's (the iterative solvers)."""

    def objective(self, func: Callable[..., Any]) -> Objective:
        """What the optimiser minimises for ``func`` (the negative log marginal likelihood): ``func`` itself, or
        a value integrated from its gradient where the solver's value and gradient are separate estimates
        (objective.py)."""

    def settle(self, optimum: tuple,
               minimise: Callable[[np.ndarray], tuple[np.ndarray, float, Callable[[np.ndarray], np.ndarray] | None]],
               func: Callable[..., Any], bounds: np.ndarray) -> tuple[np.ndarray, float, dict | None]:
        """(θ, the objective's value there, what was done: None for nothing) once the solver trusts the optimum
        the optimiser found. ``optimum`` is (θ, value, the optimiser's inverse Hessian there as a function of a
        vector, or None), as ``minimise(start)`` (the optimiser from a θ) returns them; ``func(θ, eval_gradient)``
        is the objective itself (the negative log likelihood) and ``bounds`` θ's. The exact solvers return the
        optimum as it is; the iterative regression solver refines its estimate until the optimum stops moving."""

    def fitted_attributes(self) -> dict:
        """Attributes the solver leaves on the fitted estimator (scikit-learn's names)."""

    def info(self) -> dict:
        """How the solver's work went, for ``solver_info_``."""


class RegressionSolver(GaussianProcessSolver, Protocol):
    """A Gaussian process regression's solver (the module's documentation says what it computes)."""

    def inv_quad_logdet(self, kernel: DifferentiableKernel, Y: np.ndarray, eval_gradient: bool, *, quad_weight: float,
                        logdet_weight: float) -> InvQuadLogdet:
        """yᵀK̂⁻¹y per column, log det K̂ and, with ``eval_gradient``, the gradient of the weighted sum, for the
        kernel (a kernels.DifferentiableKernel holding the θ to evaluate)."""

    def solve(self, kernel: DifferentiableKernel, Y: np.ndarray) -> np.ndarray:
        """K̂⁻¹Y to the solver's final accuracy (LinAlgError where K̂ is not positive definite); the solver keeps
        what its predictions need."""

    #: Whether :meth:`solved_inv_quad_logdet` answers: the solver holds the likelihood's terms exactly from what
    #: its last :meth:`solve` kept (the exact solver's factor and α).
    likelihood_from_solve: bool

    def solved_inv_quad_logdet(self, Y: np.ndarray) -> InvQuadLogdet:
        """The likelihood's terms (no gradient) at the kernel of the last :meth:`solve`, without evaluating them
        again (only where ``likelihood_from_solve``)."""

    def variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """k(x, x) − k*ᵀK̂⁻¹k* for every new point (after :meth:`solve`)."""

    def mean_and_variance(self, kernel: DifferentiableKernel, X_new: Any,
                          mean_map: Callable[[Any], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(the posterior mean K(X*, X)·K̂⁻¹Y, n_new × t; :meth:`variance`) after :meth:`solve`: ``mean_map`` is the
        fitted row map of the mean (engines/base.py), which a solver may use or replace by its own evaluation."""

    def covariance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """K(X*, X*) − K*ᵀK̂⁻¹K* (after :meth:`solve`)."""

    def localised(self) -> RegressionSolver:
        """The same state over the samples brought into this process (for pickling a model fitted elsewhere)."""


class LaplaceSolver(GaussianProcessSolver, Protocol):
    """A binary Gaussian process classification's solver by the Laplace approximation (laplace.py)."""

    def evaluate(self, kernel: DifferentiableKernel, start: tuple, max_iter: int,
                 eval_gradient: bool) -> tuple[float, np.ndarray | None, LaplaceMode]:
        """(log q(y | θ), its gradient with ``eval_gradient`` else None, the mode: laplace.LaplaceMode) for the
        kernel (a kernels.DifferentiableKernel holding θ), Newton's iteration from ``start``: ("f", f0), scikit-learn's
        iteration from f0 (laplace.posterior_mode), or ("settled", f0 or None), laplace.settled_mode's."""

    def fit_final(self, kernel: DifferentiableKernel, start: tuple, max_iter: int) -> LaplaceMode:
        """The mode (laplace.LaplaceMode) at the fitted kernel; the solver keeps what the predictions need."""

    def latent_mean(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """The latent function's posterior mean at new points (after :meth:`fit_final`)."""

    def latent_variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """The latent function's posterior variance at new points (after :meth:`fit_final`)."""


def log_marginal_likelihood(solver: RegressionSolver, kernel: DifferentiableKernel, Y: np.ndarray, eval_gradient: bool,
                            with_gradient_error: bool = False
                            ) -> (tuple[float, np.ndarray | None, float]
                                  | tuple[float, np.ndarray | None, float, np.ndarray | None]):
    """(log p(Y | θ), its gradient or None, the value's standard error[, the gradient's standard errors or None
    with ``with_gradient_error``]) of the regression with targets Y
    (n × t, one GP per column sharing K̂):

        log p(Y | θ) = Σ_k [−½ y_kᵀK̂⁻¹y_k − ½ log det K̂ − (n/2) log 2π],

    whose gradient is the solver's for the weights (−½, −t/2). A K̂ that is not positive definite gives −inf
    (and a zero gradient), as scikit-learn's likelihood does."""
    t = Y.shape[1]
    answer = solver.inv_quad_logdet(kernel, Y, eval_gradient, quad_weight=-0.5, logdet_weight=-0.5 * t)
    if not answer.positive_definite:
        return (-np.inf, None, 0.0, None) if with_gradient_error else (-np.inf, None, 0.0)
    value = likelihood_value(answer, Y.shape[0])
    if with_gradient_error:
        return value, answer.gradient, t * 0.5 * answer.standard_error, answer.gradient_standard_error
    return value, answer.gradient, t * 0.5 * answer.standard_error


def likelihood_value(answer: InvQuadLogdet, n: int) -> np.float64:
    """log p(Y | θ) of n samples from a solver's positive definite answer (its quad and logdet)."""
    assert answer.quad is not None
    # scikit-learn's order of the sums, output by output
    dims = -0.5 * answer.quad
    dims -= 0.5 * answer.logdet
    dims -= n / 2 * _LOG_2PI
    return dims.sum(axis=-1)  # a NumPy float64, as scikit-learn's (a Python float would take float32 arithmetic)
