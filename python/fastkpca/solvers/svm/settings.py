"""How the native support vector machine solver runs (dual.py): the settings its callers set, in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["DualSettings"]


@dataclass
class DualSettings:
    """How the native solver runs: what its callers set (the estimators: ``tol``, ``max_iter``, ``shrinking``,
    ``threads``, ``progress``; the memory plan, plan.py: ``cache_bytes``; tests and benchmarks: ``working_set`` and
    ``solver``), passed to the core by name. The defaults are these, and nowhere else.

    Attributes
    ----------
    tol : float
        LIBSVM's stopping tolerance on the maximal violating pair's gap.
    max_iter : int
        SMO steps in all (-1: no limit).
    shrinking : bool
        LIBSVM's shrinking heuristic: rows whose variables are settled at a bound leave the column passes.
    cache_bytes : int
        The column cache's bytes (plan.py sizes it within the memory limit).
    working_set : int
        Variables of a batched solve's working set, at most (the cache bounds it too; at least four are taken).
    solver : {"auto", "whole", "batched"}
        The whole problem as one working set (LIBSVM's iteration on the whole kernel matrix, every column cached) or
        working sets of at most ``working_set`` variables; "auto": as solvers/choice.py's
        ``support_vector_machine`` picks (plan.py).
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
    solver: str = "auto"
    threads: int = 0
    progress: Callable | None = None
