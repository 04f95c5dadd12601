"""Gaussian process solvers: one interface (interface.py) for every model, implemented for the regression by the
exact solver (exact.py: one Cholesky factor) and the iterative one (iterative.py: preconditioned CG, stochastic
Lanczos quadrature and probes, with its preconditioner.py, control_variate.py and rank.py), and for the Laplace
approximation of classification (laplace.py) by its exact (laplace_exact.py) and iterative
(laplace_iterative.py) solvers; the iterative ones share one memory plan (memory.py), and their likelihoods, asked
for at a θ, are refined to a standard error (refined_estimate.py). The optimiser loop with
its restarts (optimiser.py), the subset start (subset_start.py) and what the optimiser minimises (objective.py)
are written once for all of them. Which solver a fit uses is chosen once per fit by the library's cost model
(solvers/choice.py): :func:`make_solver` for the regression, :func:`make_laplace_solver` for a binary
classifier."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ... import _validation as v
from .. import choice as _choice
from .exact import ExactSolver
from .interface import (GaussianProcessSolver, InvQuadLogdet, LaplaceSolver, RegressionSolver, likelihood_value,
                        log_marginal_likelihood)
from .iterative import IterativeSettings, IterativeSolver
from .laplace_exact import ExactLaplace
from .laplace_iterative import IterativeLaplace, LaplaceSettings, laplace_memory
from .objective import Objective, restart_thetas
from .optimiser import Optimum, optimise
from .rank import DEFAULT_RANK
from .refined_estimate import LikelihoodEstimate, refine

if TYPE_CHECKING:
    import numpy as np

    from ...operators.samples import SolverSamples

__all__ = ["ExactLaplace", "ExactSolver", "GaussianProcessSolver", "InvQuadLogdet", "IterativeLaplace",
           "IterativeSettings", "IterativeSolver", "LaplaceSettings", "LaplaceSolver", "LikelihoodEstimate",
           "Objective", "Optimum",
           "RegressionSolver", "laplace_bytes", "laplace_choice", "likelihood_value", "log_marginal_likelihood",
           "make_laplace_solver",
           "make_solver", "optimise", "refine", "restart_thetas"]


def make_solver(requested: str, samples: SolverSamples, Y: np.ndarray, noise: float | np.ndarray,
                settings: IterativeSettings, *, memory_limit: int, n_jobs: int | None = None, random_state: Any = None,
                copies: int = 1, gradient: bool = True) -> tuple[RegressionSolver, dict]:
    """(the solver for this fit, how it was chosen: ``solver_info_["choice"]``): ``requested`` is "cholesky", "cg"
    or "auto", decided by the library's cost model (solvers/choice.py) for evaluations with the likelihood's
    gradient, or, without ``gradient``, for a fit at the kernel's θ."""
    n = Y.shape[0]
    features = samples.shape[1] if len(samples.shape) > 1 else 1  # structured samples: one
    choice = _choice.gaussian_process_regression(requested, n=n, d=features, columns=Y.shape[1] + settings.probes,
                                                 rank=settings.rank or DEFAULT_RANK,
                                                 exact_possible=bool(samples.holds_matrix), memory_limit=memory_limit,
                                                 gradient=gradient, targets=Y.shape[1])
    if choice.picked == "cholesky":
        return ExactSolver(samples, noise, memory_limit=memory_limit), choice.as_dict()
    return IterativeSolver(samples, Y, noise, settings, memory_limit=memory_limit, n_jobs=n_jobs,
                           random_state=random_state, copies=copies), choice.as_dict()


def laplace_choice(requested: str, n: int, features: int, settings: LaplaceSettings, *, memory_limit: int,
                   copies: int = 1, threads: int = 0) -> _choice.Choice:
    """The cost model's solver for a binary classifier's Laplace approximation on ``n`` samples of ``features``
    (solvers/choice.py): "cholesky", "cg" or, for "auto", the cheaper that fits ``memory_limit`` on ``threads``
    (0: the default team)."""
    memory = laplace_memory((n, features), settings, memory_limit, copies, threads)
    rank = memory.planned_rank(settings.rank, settings.probes)
    return _choice.gaussian_process_classification(requested, n=n, d=features, probes=settings.probes, rank=rank,
                                                   cg_bytes=memory.needed_bytes(rank, settings.probes),
                                                   memory_limit=memory_limit)


def laplace_bytes(requested: str, n: int, features: int, settings: LaplaceSettings, *, memory_limit: int,
                  copies: int = 1, threads: int = 0) -> int:
    """The bytes the solver :func:`laplace_choice` picks needs of the memory limit (the cost model's)."""
    choice = laplace_choice(requested, n, features, settings, memory_limit=memory_limit, copies=copies,
                            threads=threads)
    return next(candidate.bytes for candidate in choice.candidates if candidate.name == choice.picked)


def make_laplace_solver(requested: str, X: Any, y: np.ndarray, settings: LaplaceSettings, *,
                        samples: Callable[[], SolverSamples], memory_limit: int, n_jobs: int | None = None,
                        random_state: Any = None, copies: int = 1) -> tuple[LaplaceSolver, dict]:
    """(the Laplace solver of a binary classifier's fit, how it was chosen: ``solver_info_["choice"]``) for the
    training samples ``X`` (as the kernel reads them) and labels ``y`` (0 or 1, float64); ``samples()`` gives
    the engine's samples, which the iterative solver works on."""
    n = y.shape[0]
    features = X.shape[1] if getattr(X, "ndim", 1) > 1 else 1  # structured samples: one
    choice = laplace_choice(requested, n, features, settings, memory_limit=memory_limit, copies=copies,
                            threads=v.n_threads(n_jobs))
    if choice.picked == "cholesky":
        return ExactLaplace(X, y, memory_limit=memory_limit), choice.as_dict()
    return IterativeLaplace(samples(), y, settings, memory_limit=memory_limit, n_jobs=n_jobs,
                            random_state=random_state, copies=copies), choice.as_dict()
