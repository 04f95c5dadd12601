"""A stochastic likelihood refined until its standard error is within a tolerance.

solver="cg" estimates log det K̂ (and the Laplace approximation's log det B) by stochastic Lanczos quadrature on
p random probes: the mean of p independent per-probe estimates, whose spread gives the estimate's standard error
σ/√p (σ: one probe's standard deviation, from the probes' sample standard deviation). σ is set by the spectrum
the preconditioner leaves: with K̂ ≈ P, tr log(P⁻¹K̂) has σ² = 2‖log(P⁻¹ᐟ²K̂P⁻¹ᐟ²)‖²_F for Gaussian probes
(Hutchinson's variance; random signs give at most that), a sum over the kernel's eigenvalues above the noise
that the preconditioner's rank does not capture. Data whose kernel has many such eigenvalues (short length
scales, small noise: a high effective rank) give a large σ; there the exact solver's one factorisation may
cost less than the probes a tight estimate needs.

A fit evaluates the likelihood dozens of times with the probes it holds (its optimiser sees one smooth
estimate; the settling of ``theta_tol`` multiplies them at the end). A likelihood a user asks for at some θ is
a figure to compare (two kernels, two θ): :func:`refine` evaluates it with the fit's probes, then, while the
standard error is above ``rtol``·|value|, with more (those held and new ones: p·(error/target)², at least
twice and at most REFINE_FACTOR times as many, at most REFINE_MOST_PROBES and what the memory limit holds),
on a copy of the solver (the fitted one keeps its probes, so the same θ gives the same value again). Where it
stops short it says so with a ConvergenceWarning.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol

import numpy as np

from ...exceptions import ConvergenceWarning

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["LikelihoodEstimate", "refine", "REFINE_ROUNDS", "REFINE_FACTOR", "REFINE_MOST_PROBES", "GRADIENT_GROUPS",
           "probe_groups", "batch_standard_error"]

#: At most this many rounds of more probes.
REFINE_ROUNDS = 4
#: A round multiplies the probes by at most this.
REFINE_FACTOR = 8
#: The most probes a refined estimate takes (beside the memory limit's bound).
REFINE_MOST_PROBES = 2048
#: The gradient's standard error, where a user's likelihood asks for the gradient: batch means of this many
#: groups of the probes, the gradient from each group alone (one more gradient pass each).
GRADIENT_GROUPS = 4


def probe_groups(probes: int, groups: int) -> list:
    """Column ranges of ``groups`` groups of the probes, of sizes within one of each other (views of the probes'
    blocks, no copies); none below two groups or two probes."""
    if groups < 2 or probes < 2:
        return []
    return [slice(int(g[0]), int(g[-1]) + 1) for g in np.array_split(np.arange(probes), min(groups, probes))]


def batch_standard_error(estimates: ArrayLike) -> np.ndarray:
    """The standard error of the mean of the groups' estimates (one row a group), by batch means."""
    estimates = np.asarray(estimates, dtype=np.float64)
    return estimates.std(axis=0, ddof=1) / math.sqrt(estimates.shape[0])


@dataclass
class LikelihoodEstimate:
    """A likelihood (and gradient) with its standard error, and how it was reached."""

    value: float
    gradient: np.ndarray | None
    #: The value's standard error (0.0 for the exact solver).
    standard_error: float
    #: The gradient's standard errors, one per log-hyperparameter (None: not asked for, or exact).
    gradient_standard_error: np.ndarray | None
    #: The probes of the last evaluation (0 for the exact solver).
    probes: int
    #: The tolerance on standard_error / |value| (None: not refined).
    rtol: float | None
    #: Whether standard_error / |value| ≤ rtol (True for the exact solver).
    reached: bool
    #: One entry per evaluation: probes, value, standard error.
    rounds: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"value": float(self.value), "standard_error": float(self.standard_error),
                "relative_standard_error": (float(self.standard_error / abs(self.value))
                                            if np.isfinite(self.value) and self.value else math.nan),
                "gradient_standard_error": self.gradient_standard_error, "probes": self.probes, "rtol": self.rtol,
                "reached": self.reached, "rounds": list(self.rounds)}


class ProbedSolver(Protocol):
    """What :func:`refine` asks of a solver whose estimate has a standard error (an iterative one: its ``probes``
    above 0); an exact solver, whose error is 0, is only evaluated."""

    def most_probes(self, wanted: int) -> int:
        """Up to ``wanted`` probes, as many as the memory limit holds."""

    def with_probes(self, probes: int) -> ProbedSolver:
        """A copy holding ``probes`` probes."""


def refine(solver: ProbedSolver, evaluate: Callable[[ProbedSolver], tuple], rtol: float | None, *,
           what: str = "the log marginal likelihood", stacklevel: int = 3) -> LikelihoodEstimate:
    """``evaluate(solver)`` → (value, gradient or None, standard error, gradient's standard errors or None),
    repeated on copies of ``solver`` with more probes until the standard error is within ``rtol``·|value| (the
    module's rule; ``rtol`` None: once). A solver without probes (``probes`` 0: exact) is evaluated once."""
    value, gradient, error, gradient_error = evaluate(solver)
    probes = int(getattr(solver, "probes", 0))
    rounds = [{"probes": probes, "value": float(value), "standard_error": float(error)}]

    def within(value: float, error: float) -> bool:
        return error == 0.0 or not np.isfinite(value) or rtol is None or error <= rtol * abs(value)

    current = solver
    for _ in range(REFINE_ROUNDS):
        if within(value, error):
            break
        target = rtol * abs(value)
        wanted = probes * min(REFINE_FACTOR, max(2.0, 1.1 * (error / target) ** 2))
        more = current.most_probes(min(REFINE_MOST_PROBES, int(math.ceil(wanted))))
        if more <= probes:
            break
        current = current.with_probes(more)
        value, gradient, error, gradient_error = evaluate(current)
        probes = more
        rounds.append({"probes": probes, "value": float(value), "standard_error": float(error)})
    reached = within(value, error)
    if not reached:
        warnings.warn(f"{what} is a stochastic estimate whose standard error, {error:.3g} "
                      f"({error / abs(value):.2e} of its value), is above the tolerance {rtol:g} after {probes} "
                      f"probes (at most {REFINE_MOST_PROBES}, within the memory limit): it may be off by a few "
                      f"standard errors. solver='cholesky' computes it exactly.", ConvergenceWarning,
                      stacklevel=stacklevel)
    return LikelihoodEstimate(value, gradient, float(error), gradient_error, probes, rtol, reached, rounds)
