"""One solve of a support vector machine's dual by the native core: a formulation's dual (formulation.py) on the
kernel columns of its samples, the whole problem as one working set or working sets (the choice: plan.py, by
solvers/choice.py), and the solution as a decision function.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _threads
from ... import _validation as v
from .formulation import Formulation
from .settings import DualSettings

if TYPE_CHECKING:
    from ..choice import Choice
    from .plan import ColumnsInTwoPrecisions, SvmColumns

__all__ = ["DualSettings", "DualSolution", "solve", "solve_planned"]


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
        ``outer_steps``, ``columns`` (kernel columns evaluated), ``obj``, seconds per stage, ``choice`` (whole or
        batched, with each one's predicted seconds and bytes), ...
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


def solve(columns: SvmColumns, formulation: Formulation, samples: np.ndarray, settings: DualSettings, *,
          upper: np.ndarray, y: np.ndarray | None = None, targets: np.ndarray | None = None,
          choice: Choice | None = None) -> DualSolution:
    """Solve a formulation's dual on the kernel columns of ``samples``.

    Parameters
    ----------
    columns : the core's SvmKernelColumns
        The kernel over every sample the problem may name.
    formulation : formulation.Formulation
    samples : ndarray of int64
        The problem's samples (indices into ``columns``), in LIBSVM's order (a pair's first class, then its
        second).
    settings : DualSettings
    upper : ndarray of float
        Per sample: its bound C_t (``formulation.bounds`` of its weight).
    y : ndarray of ±1, optional
        The classes (classification).
    targets : ndarray of float, optional
        Regression targets.
    choice : solvers.choice.Choice, optional
        Whole or batched (plan.choice); None: chosen here for these columns and ``settings.cache_bytes``, within the
        default memory limit.

    Returns
    -------
    solution : DualSolution
        ``stats["choice"]`` is the choice's record (Choice.as_dict()).
    """
    from . import plan

    samples = np.ascontiguousarray(samples, dtype=np.int64)
    upper = np.ascontiguousarray(upper, dtype=np.float64)
    if choice is None:
        choice = plan.choice(plan.Columns(columns), settings, samples.shape[0], formulation.variables(samples.shape[0]),
                             v.memory_limit(None), settings.cache_bytes)
    dual = formulation.dual(samples, upper, y=y, targets=targets)
    # the thread rule (fastkpca/_threads.py) on the columns of the whole problem: the least a solve evaluates. Its
    # length beyond that is not known, so it is never a short call: the team it starts is the default whatever
    # else runs (a spinning BLAS thread costs it at most BLAS_SPIN_SECONDS; a cut team, half of every iteration)
    threads = _threads.pass_threads(settings.threads,
                                    _threads.kernel_seconds(float(samples.shape[0]) ** 2, int(columns.features)),
                                    starts=math.inf)
    stats = formulation.native_solve()(
        columns, dual.samples, dual.sign, np.ascontiguousarray(dual.p), dual.upper, dual.alpha, tol=float(settings.tol),
        max_iter=int(settings.max_iter), shrinking=bool(settings.shrinking), whole=plan.takes_whole(choice),
        working_set=int(settings.working_set), cache_bytes=float(settings.cache_bytes),
        n_threads=int(threads), progress=settings.progress)
    stats["columns_dtype"] = columns.dtype
    stats["choice"] = choice.as_dict()
    coef, rho = formulation.solution(dual, stats)
    return DualSolution(coef=coef, rho=rho, stats=stats)


def solve_planned(sources: ColumnsInTwoPrecisions, formulation: Formulation, samples: np.ndarray,
                  settings: DualSettings, memory_limit: int, cache_size: float | None, **problem: Any) -> DualSolution:
    """:func:`solve` on the columns of ``sources`` (fitted.ColumnSources) the choice of whole or batched calls for,
    with the column cache sized for it within ``memory_limit`` (plan.planned)."""
    from . import plan

    n = samples.shape[0]
    settings, choice = plan.planned(sources, settings, n, formulation.variables(n), memory_limit, cache_size)
    return solve(sources.columns(choice), formulation, samples, settings, choice=choice, **problem)
