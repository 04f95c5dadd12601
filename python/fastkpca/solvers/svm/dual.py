"""LIBSVM's five formulations as duals of the native solver, and their solutions as decision functions.

Every formulation is  min ½ αᵀQα + pᵀα  s.t.  yᵀα = Δ, 0 <= α_t <= C_t,  Q_tu = y_t y_u K(x_{s(t)}, x_{s(u)})
(the ν-formulations with one more equality per sign of y), over variables t standing for samples s(t):

- C-SVC: one variable per sample, y = ±1, p = -1, C_t = C·w_t·(class weight), α = 0 at the start; the decision
  function's coefficients are y_t α_t.
- ν-SVC: p = 0, C_t = w_t, and α starts with ν·Σw/2 spread over each class in order (LIBSVM's feasible start);
  the solver's r rescales the solution (coefficients y_t α_t / r, ρ / r).
- one-class: y = +1, p = 0, C_t = w_t, α starts with ν·Σw spread over the samples in order.
- ε-SVR: two variables per sample (y = +1 and -1), p = ε ∓ z_i for targets z, C_t = C·w_t; coefficients
  α_i - α*_i.
- ν-SVR: the same with p = ∓z_i and α starting at min(C·w_i, what is left of C·ν·Σw/2) for both variables,
  solved as a ν problem.

The intercept is -ρ (LIBSVM's ``rho``). Facts from LIBSVM 3.10 as scikit-learn ships it (its sample weights
scale C_t; samples of weight <= 0 are dropped before the solve, by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ... import _native

__all__ = ["FORMULATIONS", "DualSettings", "DualSolution", "solve", "solve_planned"]

FORMULATIONS = ("c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr")


@dataclass
class DualSettings:
    """How the native solver runs (solvers/svm/plan.py sizes the cache).

    Attributes
    ----------
    tol : float
        LIBSVM's stopping tolerance on the maximal violating pair's gap.
    max_iter : int
        SMO steps in all (-1: no limit).
    shrinking : bool
        LIBSVM's shrinking heuristic.
    cache_bytes : int
        The column cache's bytes.
    working_set : int
        Variables of a working set (at most; the cache bounds it too).
    whole_below : int
        Problems of at most this many variables are one working set when the cache holds them.
    threads : int
        OpenMP threads (0: the default).
    progress : callable or None
        Called with the solver's figures after every outer step.
    """

    tol: float = 1e-3
    max_iter: int = -1
    shrinking: bool = True
    cache_bytes: int = 200 * 2**20
    working_set: int = 256
    whole_below: int = 4096
    local_ratio: float = 0.1
    local_steps: float = 20.0
    shrink_fraction: float = 0.5
    early_rebuild: bool = False
    fresh_share: float = 0.5
    threads: int = 0
    progress: Callable | None = None


@dataclass
class DualSolution:
    """A solved dual as a decision function ``f(x) = Σ_i coef_i k(x_i, x) - rho`` over the problem's samples.

    Attributes
    ----------
    coef : ndarray of shape (n_samples,)
        One coefficient per sample of the problem (in the order given); support vectors are the nonzero ones.
    rho : float
    stats : dict
        The solver's figures: ``iterations`` (SMO steps), ``status`` (1: max_iter reached), ``gap``,
        ``outer_steps``, ``columns`` (kernel columns evaluated), ``obj``, seconds per stage, ...
    """

    coef: np.ndarray
    rho: float
    stats: dict = field(default_factory=dict)

    @property
    def iterations(self) -> int:
        return int(self.stats["iterations"])

    @property
    def status(self) -> int:
        return int(self.stats["status"])


def _greedy(total: float, upper: np.ndarray) -> np.ndarray:
    """min(upper_i, what is left of `total`) in order: LIBSVM's feasible start of the ν-problems."""
    before = np.concatenate(([0.0], np.cumsum(upper)[:-1]))
    return np.clip(total - before, 0.0, upper)


def solve(columns, formulation: str, samples: np.ndarray, settings: DualSettings, *, y: np.ndarray | None = None,
          upper: np.ndarray, nu: float | None = None, epsilon: float | None = None,
          targets: np.ndarray | None = None) -> DualSolution:
    """Solve one of LIBSVM's formulations on the kernel columns of ``samples``.

    Parameters
    ----------
    columns : the core's SvmKernelColumns
        The kernel over every sample the problem may name.
    formulation : {"c_svc", "nu_svc", "one_class", "epsilon_svr", "nu_svr"}
    samples : ndarray of int64
        The problem's samples (indices into ``columns``), in LIBSVM's order (a pair's first class, then its
        second).
    settings : DualSettings
    y : ndarray of ±1, optional
        The classes (classification).
    upper : ndarray of float
        Per sample: C·weight (C-SVC: times its class's weight; ν-SVC and one-class: the weight).
    nu, epsilon : float
    targets : ndarray of float, optional
        Regression targets.

    Returns
    -------
    solution : DualSolution
    """
    samples = np.ascontiguousarray(samples, dtype=np.int64)
    upper = np.ascontiguousarray(upper, dtype=np.float64)
    n = samples.shape[0]
    if formulation in ("c_svc", "nu_svc"):
        sign = np.ascontiguousarray(y, dtype=np.int8)
        if formulation == "c_svc":
            p, alpha = -np.ones(n), np.zeros(n)
        else:
            total = nu * upper.sum() / 2
            alpha = np.zeros(n)
            for cls in (1, -1):
                mask = sign == cls
                alpha[mask] = _greedy(total, upper[mask])
            p = np.zeros(n)
        var_samples = samples
    elif formulation == "one_class":
        sign = np.ones(n, dtype=np.int8)
        p = np.zeros(n)
        alpha = _greedy(nu * upper.sum(), upper)
        var_samples = samples
    elif formulation in ("epsilon_svr", "nu_svr"):
        z = np.asarray(targets, dtype=np.float64)
        sign = np.concatenate((np.ones(n, dtype=np.int8), -np.ones(n, dtype=np.int8)))
        var_samples = np.concatenate((samples, samples))
        if formulation == "epsilon_svr":
            eps = float(epsilon if epsilon is not None else 0.0)
            p = np.concatenate((eps - z, eps + z))
            alpha = np.zeros(2 * n)
        else:
            p = np.concatenate((-z, z))
            half = _greedy(nu * upper.sum() / 2, upper)
            alpha = np.concatenate((half, half))
        upper = np.concatenate((upper, upper))
    else:
        raise ValueError(f"unknown formulation {formulation!r}")
    nu_problem = formulation in ("nu_svc", "nu_svr")
    stats = _native.core.svm_solve(columns, var_samples, sign, np.ascontiguousarray(p), upper, alpha, nu_problem,
                                   float(settings.tol), int(settings.max_iter), bool(settings.shrinking),
                                   int(settings.working_set), int(settings.whole_below), float(settings.cache_bytes),
                                   float(settings.local_ratio), float(settings.local_steps),
                                   float(settings.shrink_fraction), bool(settings.early_rebuild),
                                   float(settings.fresh_share), int(settings.threads), settings.progress)
    rho = float(stats["rho"])
    stats["columns_dtype"] = columns.dtype
    if formulation == "c_svc":
        coef = alpha * sign
    elif formulation == "nu_svc":
        r = float(stats["r"])
        if not r > 0:
            raise ValueError("specified nu is infeasible: the solver's scale r is not positive")
        coef = alpha * sign / r
        rho /= r
        stats["obj"] = float(stats["obj"]) / (r * r)
    elif formulation == "one_class":
        coef = alpha
    else:
        coef = alpha[:n] - alpha[n:]
        if formulation == "nu_svr":
            stats["epsilon"] = -float(stats["r"])
    return DualSolution(coef=coef, rho=rho, stats=stats)


def solve_planned(sources, formulation: str, samples: np.ndarray, settings: DualSettings, memory_limit: int,
                  cache_size: float | None, **problem) -> DualSolution:
    """:func:`solve` on the columns of ``sources`` (fitted.ColumnSources) its size calls for, with the column cache
    sized for it within ``memory_limit`` (plan.planned)."""
    from . import plan

    variables = samples.shape[0] * (2 if formulation in ("epsilon_svr", "nu_svr") else 1)
    columns, settings = plan.planned(sources, settings, samples.shape[0], variables, memory_limit, cache_size)
    return solve(columns, formulation, samples, settings, **problem)
