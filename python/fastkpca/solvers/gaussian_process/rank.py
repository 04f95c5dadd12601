"""The rank of a Gaussian process's preconditioner under solver="cg": bounded by the memory limit, and chosen
within the bound from the iterations the fit's first likelihood evaluations take.

The work of one evaluation, in flops, for n samples of d features, t CG columns (targets and probes), rank r and
I block iterations:

    building P          W_P(r) ≈ n r (2d + c) + q n r²        (r kernel columns; RPCholesky's updates, Fᵀ D⁻¹ F:
                                                            q = 4, and 6 more for the gradient's control
                                                            variate, control_variate.py)
    one CG iteration    W_I(r) ≈ (1 − h) n² (2d + c) + 2 n² t + 4 n r t
                        (evaluating the kernel's entries not held; the product; P⁻¹ on t columns)

with c ≈ KERNEL_ENTRY_FLOPS for a kernel entry beyond its distance and h the share of the kernel's entries the
operator's plan holds in memory. The search runs only while h ≤ HELD_AT_MOST: a larger factor takes memory
the plan would hold tiles in, a trade the model leaves out. More rank buys fewer iterations while P
captures more of K's spectrum above the noise. CG's iterations grow as the square root of the preconditioned
condition number, and that falls at least as 1/r where the kernel's eigenvalues decay
(bench/gaussian_process.py --cg-products measures it), so the search assumes
I(2r) ≈ I(r)/√2, the cautious end. After an evaluation at rank r with I iterations it doubles r when the model
says W_P(2r) + (I/√2) W_I(2r) < W_P(r) + I W_I(r), halves it when W_P(r/2) + √2 I W_I(r/2) is below that, and
keeps going in the direction it took while the observed work falls; the first move that does not pay is undone
and the rank is frozen, as it is after SEARCH_EVALUATIONS evaluations. Everything it reads is a count, not a
time, so a fit is reproducible from its random_state.

Why only the first evaluations: the probes and pivots are drawn once per fit, so the optimiser sees one
surrogate of the likelihood; a new rank gives a new preconditioner and so a new surrogate (its expectation is
the same, its error another draw). The first evaluations are where L-BFGS-B takes its large steps, and where
the line search is least thrown by such a change.
"""

from __future__ import annotations

import math

from ...operators.storage import PLAN_SLACK_BYTES

__all__ = ["DEFAULT_RANK", "HELD_AT_MOST", "RankSearch", "factor_bytes_per_entry", "preconditioner_rank", "rank_bound"]

#: The rank a fit starts from. RPCholesky's O(n r²) is paid on every evaluation, but the products it saves cost
#: more (bench/gaussian_process.py --cg-products measures both).
DEFAULT_RANK = 1024
#: The search's bounds (the memory limit may bound it lower).
MAX_RANK = 4 * DEFAULT_RANK
MIN_RANK = 64
#: Evaluations after which the rank is frozen.
SEARCH_EVALUATIONS = 6
#: Flops of a kernel entry beyond its distance (an exponential, a few scalings): the model's c.
KERNEL_ENTRY_FLOPS = 20
#: The largest share of the kernel's entries held in memory at which the rank is searched.
HELD_AT_MOST = 0.5


def factor_bytes_per_entry(itemsize: int) -> int:
    """Bytes per entry of the preconditioner's n × r factor at its peak: RPCholesky builds it in float64 (a
    float32 build's residual columns carry errors of ~ε₃₂ times the signal, above a small noise), and a float32
    factor is a copy made beside it."""
    return 8 + (itemsize if itemsize != 8 else 0)


def rank_bound(requested: int | None, n: int, itemsize: int, memory_limit: int, *,
               entry_bytes: int | None = None) -> int:
    """The largest rank a fit may use: the rank asked for (at most n − 1), or at most MAX_RANK, n − 1 and
    half the memory limit beyond the operator plan's slack (cg recomputes the kernel on every product past a
    few thousand samples: memory buys more as preconditioner rank than as a sliver of cached tiles, as for
    kernel ridge's cg). The factors take ``entry_bytes`` per entry (default: one factor stored with
    ``itemsize``, factor_bytes_per_entry)."""
    if requested is not None:
        return int(min(requested, max(n - 1, 0)))
    entry = factor_bytes_per_entry(itemsize) if entry_bytes is None else entry_bytes
    budget = max(0, memory_limit - PLAN_SLACK_BYTES) // 2
    return int(max(0, min(MAX_RANK, n - 1, budget // max(1, entry * n))))


def preconditioner_rank(requested: int | None, n: int, itemsize: int, memory_limit: int, *,
                        entry_bytes: int | None = None) -> int:
    """The rank a fit starts from: the rank asked for (at most n − 1), or DEFAULT_RANK within rank_bound."""
    bound = rank_bound(requested, n, itemsize, memory_limit, entry_bytes=entry_bytes)
    return bound if requested is not None else min(DEFAULT_RANK, bound)


def preconditioner_flops(n: int, d: int, rank: int, squares: float = 4.0) -> float:
    """W_P(r): building P of rank r (and whatever else costs ``squares`` · n r²; module documentation)."""
    return n * rank * (2.0 * d + KERNEL_ENTRY_FLOPS) + squares * n * rank * rank


def iteration_flops(n: int, d: int, columns: int, rank: int, held: float = 0.0) -> float:
    """W_I(r): one block iteration of CG on ``columns`` columns, a share ``held`` of the kernel's entries held
    in memory (module documentation)."""
    return n * n * ((1.0 - held) * (2.0 * d + KERNEL_ENTRY_FLOPS) + 2.0 * columns) + 4.0 * n * rank * columns


class RankSearch:
    """The preconditioner's rank through one fit (module documentation).

    Parameters
    ----------
    start, bound : int
        The first evaluation's rank and the most the search may use (``preconditioner_rank``, ``rank_bound``).
    n, d, columns : int
        Samples, features and CG columns: the work model's sizes.
    fixed : bool
        Keep ``start`` throughout (a rank the user asked for).
    squares : float
        The model's q: flops per n r² of an evaluation's work on the factor.
    """

    def __init__(self, start: int, bound: int, *, n: int, d: int, columns: int, fixed: bool = False,
                 squares: float = 4.0):
        self.rank, self.bound = int(start), int(bound)
        self.n, self.d, self.columns, self.squares = n, max(int(d), 1), columns, squares
        self.frozen = fixed or self.rank == 0
        self.direction = 0  # +1 doubling, −1 halving, 0 not moved yet
        self.history: list[tuple[int, int]] = []  # (rank, iterations) of every evaluation observed
        self.held = 0.0  # the share of the kernel's entries the last evaluation's plan held
        self._last: tuple[int, float] | None = None  # (rank, work) of the evaluation before the last move

    def work(self, rank: int, iterations: float) -> float:
        return preconditioner_flops(self.n, self.d, rank, self.squares) + iterations * iteration_flops(
            self.n, self.d, self.columns, rank, self.held)

    def _candidate(self, direction: int) -> int:
        if direction > 0:
            return min(2 * self.rank, self.bound)
        return max(self.rank // 2, min(MIN_RANK, self.rank))

    def _predicted(self, rank: int, iterations: int) -> float:
        return self.work(rank, iterations * math.sqrt(self.rank / rank))

    def observe(self, iterations: int, *, held: float = 0.0) -> int:
        """Record an evaluation's block iterations at the current rank and the share of the kernel's entries
        its plan held; returns the next evaluation's rank (frozen once more than HELD_AT_MOST was held)."""
        self.history.append((self.rank, int(iterations)))
        self.held = float(held)
        self.frozen = self.frozen or self.held > HELD_AT_MOST
        if self.frozen:
            return self.rank
        work = self.work(self.rank, iterations)
        if self._last is not None and work >= self._last[1]:  # the last move did not pay: undo it, stop
            self.rank, self.frozen = self._last[0], True
            return self.rank
        if len(self.history) >= SEARCH_EVALUATIONS:
            self.frozen = True
            return self.rank
        directions = [self.direction] if self.direction else [1, -1]
        for direction in directions:
            candidate = self._candidate(direction)
            if candidate != self.rank and self._predicted(candidate, iterations) < work:
                self._last, self.direction, self.rank = (self.rank, work), direction, candidate
                return self.rank
        self.frozen = True
        return self.rank
