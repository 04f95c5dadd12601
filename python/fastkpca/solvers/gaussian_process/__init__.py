"""Gaussian process solvers: one interface (interface.py), implemented by the exact solver (exact.py: one
Cholesky factor) and the iterative one (iterative.py: preconditioned CG, stochastic Lanczos quadrature and
probes, with its preconditioner.py, control_variate.py and rank.py), chosen once per fit (choice.py); what the
optimiser minimises on either (objective.py)."""

from .choice import exact_fits, prefers_cg
from .exact import ExactSolver
from .interface import GaussianProcessSolver, InvQuadLogdet, log_marginal_likelihood
from .iterative import IterativeSettings, IterativeSolver
from .objective import Objective, restart_thetas

__all__ = ["ExactSolver", "GaussianProcessSolver", "InvQuadLogdet", "IterativeSettings", "IterativeSolver", "Objective",
           "exact_fits", "log_marginal_likelihood", "make_solver", "prefers_cg", "restart_thetas"]


def make_solver(requested: str, samples, Y, noise, settings: IterativeSettings, *, memory_limit: int, n_jobs=None,
                random_state=None, copies: int = 1) -> tuple[GaussianProcessSolver, dict]:
    """(the solver for this fit, how it was chosen): ``requested`` is "cholesky", "cg" or "auto" (the exact
    solver while its n × n array fits the limit where the samples are and the cost model does not favour cg:
    choice.py)."""
    n = Y.shape[0]
    choice: dict = {"requested": requested}
    name = requested
    if requested == "auto":
        name = "cg"
        if exact_fits(n, samples, memory_limit):
            features = samples.shape[1] if len(samples.shape) > 1 else 1  # structured samples: one
            cheaper, seconds = prefers_cg(n, features, Y.shape[1] + settings.probes)
            choice["model_seconds"] = seconds
            name = "cg" if cheaper else "cholesky"
        else:
            choice["reason"] = "the exact solver's n × n array does not fit memory_limit where the samples are"
    if name == "cholesky":
        return ExactSolver(samples, noise, memory_limit=memory_limit), choice
    return IterativeSolver(samples, Y, noise, settings, memory_limit=memory_limit, n_jobs=n_jobs,
                           random_state=random_state, copies=copies), choice
