"""What a Gaussian process solver is: the one interface the exact (exact.py) and the iterative (iterative.py)
solver implement as peers, and the regression likelihood written once on top of it.

A solver answers questions about one system, K̂ = K(θ) + diag(a): the kernel matrix of the training samples at
the hyperparameters θ of the kernel it is handed, plus a diagonal ``a`` fixed when the solver is made (the
regression's noise ``alpha``). Its central operation, as GPyTorch's ``inv_quad_logdet``, is

    quad_k = y_kᵀ K̂⁻¹ y_k (one per column of Y),   logdet = log det K̂,
    and, asked for it, ∇_θ [w_q Σ_k quad_k + w_l logdet] = Σ_j tr((−w_q A Aᵀ + w_l K̂⁻¹) ∂K/∂θ_j) e_j,

A = K̂⁻¹Y, for the weights (w_q, w_l) the caller's objective puts on the two: the exact solver reads K̂⁻¹ from
its factor, the iterative one estimates the trace with probes. Beside it: the final solve for the posterior
mean's coefficients (which fixes the state the predictions use), the predictive variances and covariance, the
fitted attributes the solver leaves on the estimator (the exact one's ``L_``) and ``info()``.

The Laplace approximation of Gaussian process classification solves with B = I + W^½ K W^½ (W > 0 diagonal,
the likelihood's curvature at the mode). Since B = W^½ (K + W⁻¹) W^½, its solves are W^-½ (K + W⁻¹)⁻¹ W^-½ and
log det B = log det(K + W⁻¹) + Σ log W_ii: a system of this form with ``a`` = W⁻¹, one more the solvers answer.

Which solver a fit uses is decided once (choice.py); the estimator calls the interface and never asks which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .objective import Objective

__all__ = ["InvQuadLogdet", "GaussianProcessSolver", "log_marginal_likelihood"]

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

    @property
    def positive_definite(self) -> bool:
        return self.quad is not None


class GaussianProcessSolver(Protocol):
    """The methods every Gaussian process solver has (the module's documentation says what they compute)."""

    #: "cholesky" or "cg": what ``solver_info_["solver"]`` reports.
    name: str
    #: Whether L-BFGS-B should work on the likelihood per sample (the estimator's optimizer says why).
    per_sample_objective: bool

    def inv_quad_logdet(self, kernel, Y: np.ndarray, eval_gradient: bool, *, quad_weight: float,
                        logdet_weight: float) -> InvQuadLogdet:
        """yᵀK̂⁻¹y per column, log det K̂ and, with ``eval_gradient``, the gradient of the weighted sum, for the
        kernel (a kernels.Kernel holding the θ to evaluate)."""

    def start(self, theta: np.ndarray, fit_subset, size: int, random_state) -> tuple[np.ndarray, dict | None]:
        """θ for the optimiser to start from, and what was done for it (None: nothing): ``theta`` (the
        kernel's), or the θ of ``fit_subset(index)``, an exact fit on ``size`` samples drawn from
        ``random_state``, where an evaluation costs much more than that fit's (the iterative solver)."""

    def objective(self, func) -> Objective:
        """What the optimiser minimises for ``func`` (the negative log marginal likelihood): ``func`` itself, or
        a value integrated from its gradient where the solver's value and gradient are separate estimates
        (objective.py)."""

    def settle(self, optimum: tuple, minimise, func, bounds) -> tuple[np.ndarray, float, dict | None]:
        """(θ, the objective's value there, what was done: None for nothing) once the solver trusts the optimum
        the optimiser found. ``optimum`` is (θ, value, the optimiser's inverse Hessian there as a function of a
        vector, or None), as ``minimise(start)`` (the optimiser from a θ) returns them; ``func(θ, eval_gradient)``
        is the objective itself (the negative log likelihood) and ``bounds`` θ's. The exact solver returns the
        optimum as it is; the iterative one refines its estimate until the optimum stops moving."""

    def solve(self, kernel, Y: np.ndarray) -> np.ndarray:
        """K̂⁻¹Y to the solver's final accuracy (LinAlgError where K̂ is not positive definite); the solver keeps
        what its predictions need."""

    def variance(self, kernel, X_new) -> np.ndarray:
        """k(x, x) − k*ᵀK̂⁻¹k* for every new point (after :meth:`solve`)."""

    def covariance(self, kernel, X_new) -> np.ndarray:
        """K(X*, X*) − K*ᵀK̂⁻¹K* (after :meth:`solve`)."""

    def fitted_attributes(self) -> dict:
        """Attributes the solver leaves on the fitted estimator (scikit-learn's names)."""

    def info(self) -> dict:
        """How the solver's work went, for ``solver_info_``."""

    def localised(self) -> GaussianProcessSolver:
        """The same state over the samples brought into this process (for pickling a model fitted elsewhere)."""


def log_marginal_likelihood(solver: GaussianProcessSolver, kernel, Y: np.ndarray, eval_gradient: bool):
    """(log p(Y | θ), its gradient or None, the value's standard error) of the regression with targets Y
    (n × t, one GP per column sharing K̂):

        log p(Y | θ) = Σ_k [−½ y_kᵀK̂⁻¹y_k − ½ log det K̂ − (n/2) log 2π],

    whose gradient is the solver's for the weights (−½, −t/2). A K̂ that is not positive definite gives −inf
    (and a zero gradient), as scikit-learn's likelihood does."""
    n, t = Y.shape
    answer = solver.inv_quad_logdet(kernel, Y, eval_gradient, quad_weight=-0.5, logdet_weight=-0.5 * t)
    if not answer.positive_definite:
        return -np.inf, None, 0.0
    assert answer.quad is not None
    # scikit-learn's order of the sums, output by output
    dims = -0.5 * answer.quad
    dims -= 0.5 * answer.logdet
    dims -= n / 2 * _LOG_2PI
    value = dims.sum(axis=-1)  # a NumPy float64, as scikit-learn's (a Python float would take float32 arithmetic)
    return value, answer.gradient, t * 0.5 * answer.standard_error
