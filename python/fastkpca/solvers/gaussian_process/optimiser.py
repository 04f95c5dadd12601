"""The hyperparameters' optimiser, written once for every Gaussian process model and solver: scikit-learn's
search, on what the solver has the optimiser see.

From the solver's start (the kernel's θ, or a subset fit's: subset_start.py), L-BFGS-B (or the user's
callable optimizer) minimises the negative log marginal likelihood as the solver presents it (its
``objective``: the value itself, or integrated from the gradient, objective.py); then again from
``restarts`` starts drawn uniformly within the (log) bounds; the best optimum is kept and the solver settles
it (its ``settle``: the iterative regression solver refines its estimate there). The loop asks the solver how
L-BFGS-B should see the objective, never which solver it is:

- ``per_sample_objective``: the likelihood divided by n. L-BFGS-B's first trial point is θ − ∇f projected on
  the bounds; for a sum over n samples that is a corner of the box, which costs an exact solver one factor
  like any θ but an iterative one hundreds of products at large n. Per sample it is a step of the gradient's
  own size. gtol / n keeps scipy's test on the summed gradient, and the quasi-Newton steps after the first do
  not depend on the scale; ftol's test, relative to max(|f|, 1), is looser per sample only where |f| < 1, a
  likelihood below one nat per sample in magnitude.
- ``stop_gain``: a stop where the iterations have stopped gaining (gain_stop.py).
- ``abnormal_restarts``: where L-BFGS-B's line search ends ABNORMAL (the integrated values are a path's, not a
  function's), it starts again from where it stopped, with the integration begun there, at most this many
  times; a ConvergenceWarning where it still does.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...exceptions import ConvergenceWarning
from .gain_stop import GainStop
from .objective import Objective, restart_thetas

if TYPE_CHECKING:
    from .interface import GaussianProcessSolver

__all__ = ["Optimum", "optimise", "minimise_once"]


@dataclass
class Optimum:
    """What the optimiser found: θ, the objective's value there (the negative log likelihood, the solver's own
    value) and how it went."""

    theta: np.ndarray
    value: float
    #: The solver's start (subset_start.py's record; None where it started from the kernel's θ).
    start: dict | None
    #: The solver's settling (None where it did nothing).
    settle: dict | None
    #: L-BFGS-B's runs again after an ABNORMAL line search.
    restarts: int


def minimise_once(func: Callable[..., Any], theta: np.ndarray, bounds: np.ndarray, *, solver: GaussianProcessSolver,
                  optimizer: str | Callable[..., Any], samples: int) -> tuple[np.ndarray, float, bool]:
    """(θ, value, whether L-BFGS-B's line search ended ABNORMAL where the solver restarts it) of one run of the
    optimizer on ``func`` (an Objective, or any ``func(θ, eval_gradient)``) from ``theta``; with L-BFGS-B its
    inverse Hessian at the optimum goes to ``func.inverse_hessian`` (an Objective's)."""
    if optimizer == "fmin_l_bfgs_b":
        import scipy.optimize
        from sklearn.utils.optimize import _check_optimize_result

        per = samples if solver.per_sample_objective else 1
        stop = GainStop(solver.stop_gain) if solver.stop_gain is not None else None

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            value, gradient = func(theta)
            if stop is not None:
                stop.record(theta, value / per)
            return value / per, gradient / per

        options = {} if per == 1 else {"gtol": 1e-5 / per}  # scikit-learn's call for an exact solver
        try:
            result = scipy.optimize.minimize(objective, theta, method="L-BFGS-B", jac=True, bounds=bounds,
                                             options=options, callback=stop)
        except StopIteration:  # scipy before 1.11 passes the callback's StopIteration on
            result = None
        if stop is not None and stop.stopped:  # the gain's rule (gain_stop.py): the last iterate
            assert stop.last is not None
            return stop.last[0], stop.last[1] * per, False
        assert result is not None
        abnormal = solver.abnormal_restarts > 0 and "ABNORMAL" in str(result.message)
        if not abnormal:
            _check_optimize_result("lbfgs", result)
        if isinstance(func, Objective):  # its curvature pairs, for the solver's settling: they approximate the
            # per-sample objective's inverse Hessian, n times the sum's
            func.inverse_hessian = lambda v, h=result.hess_inv: h.matvec(np.asarray(v) / per)
        return result.x, result.fun * per, abnormal
    if callable(optimizer):
        theta, value = optimizer(func, theta, bounds=bounds)
        return theta, value, False
    raise ValueError(f"Unknown optimizer {optimizer}.")


def optimise(func: Callable[..., Any], theta: np.ndarray, bounds: np.ndarray, *, solver: GaussianProcessSolver,
             optimizer: str | Callable[..., Any], samples: int, restarts: int, random_state: Any,
             fit_subset: Callable[[np.ndarray, str], tuple[np.ndarray, dict]], subset_size: int) -> Optimum:
    """The hyperparameters (module documentation) minimising ``func(θ, eval_gradient)``, the negative log
    marginal likelihood, from ``theta`` within ``bounds`` (log space), for ``samples`` training samples:
    ``optimizer`` ("fmin_l_bfgs_b" or a callable), ``restarts`` further starts and the subset start
    (``fit_subset``, ``subset_size``: subset_start.py, with the default optimizer only) drawn from
    ``random_state``, the solver's interface (interface.GaussianProcessSolver) for the rest."""
    count = {"restarts": 0}

    def minimise(start: np.ndarray) -> tuple[np.ndarray, float, Callable[[np.ndarray], np.ndarray] | None]:
        """(the optimum from ``start``, the solver's value there, the optimiser's inverse Hessian there or None)
        on what the solver has the optimiser see, run again from where an ABNORMAL line search ended."""
        for _ in range(1 + solver.abnormal_restarts):
            objective = solver.objective(func)
            theta, value, abnormal = minimise_once(objective, start, bounds, solver=solver, optimizer=optimizer,
                                                   samples=samples)
            if not abnormal:
                break
            start = theta
            count["restarts"] += 1
        else:
            warnings.warn(f"Gaussian process: L-BFGS-B's line search ended ABNORMAL {solver.abnormal_restarts + 1} "
                          f"times in a row on the {solver.name} solver's estimate; the fit keeps where it stopped "
                          "(raise n_probes)", ConvergenceWarning, stacklevel=5)
        return theta, objective.optimum_value(theta, value), objective.inverse_hessian

    start = None
    if optimizer == "fmin_l_bfgs_b":
        theta, start = solver.start(theta, fit_subset, subset_size, random_state)
    optima = [minimise(theta)]
    optima += [minimise(draw) for draw in restart_thetas(bounds, restarts, random_state)]
    best = int(np.argmin([value for _, value, _ in optima]))
    theta, value, settled = solver.settle(optima[best], minimise, func, bounds)
    return Optimum(np.asarray(theta), value, start, settled, count["restarts"])
