"""Gaussian process solvers: one interface (interface.py), implemented by the exact solver (exact.py: one
Cholesky factor) and the iterative one (iterative.py: preconditioned CG, stochastic Lanczos quadrature and
probes, with its preconditioner.py, control_variate.py and rank.py), chosen once per fit by the library's cost
model (solvers/choice.py); what the optimiser minimises on either (objective.py)."""

from .. import choice as _choice
from .exact import ExactSolver
from .interface import GaussianProcessSolver, InvQuadLogdet, log_marginal_likelihood
from .iterative import IterativeSettings, IterativeSolver
from .objective import Objective, restart_thetas
from .rank import DEFAULT_RANK

__all__ = ["ExactSolver", "GaussianProcessSolver", "InvQuadLogdet", "IterativeSettings", "IterativeSolver", "Objective",
           "log_marginal_likelihood", "make_solver", "restart_thetas"]


def make_solver(requested: str, samples, Y, noise, settings: IterativeSettings, *, memory_limit: int, n_jobs=None,
                random_state=None, copies: int = 1) -> tuple[GaussianProcessSolver, dict]:
    """(the solver for this fit, how it was chosen: ``solver_info_["choice"]``): ``requested`` is "cholesky", "cg"
    or "auto", decided by the library's cost model (solvers/choice.py)."""
    n = Y.shape[0]
    features = samples.shape[1] if len(samples.shape) > 1 else 1  # structured samples: one
    choice = _choice.gaussian_process_regression(requested, n=n, d=features, columns=Y.shape[1] + settings.probes,
                                                 rank=settings.rank or DEFAULT_RANK,
                                                 exact_possible=bool(samples.holds_matrix), memory_limit=memory_limit)
    if choice.picked == "cholesky":
        return ExactSolver(samples, noise, memory_limit=memory_limit), choice.as_dict()
    return IterativeSolver(samples, Y, noise, settings, memory_limit=memory_limit, n_jobs=n_jobs,
                           random_state=random_state, copies=copies), choice.as_dict()
