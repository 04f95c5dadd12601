"""The memory plan of an iterative Gaussian process solver, the regression's (iterative.py) and the Laplace
approximation's (laplace_iterative.py): what an evaluation holds beside the kernel, the preconditioner's rank
within the memory limit (one rank rule), and the kernel's storage in what is left.

An evaluation holds, for CG on ``columns`` right-hand sides and a preconditioner of rank r:

    pcg's blocks                          cg.pcg_bytes(n, columns, r)
    ``vectors`` n × columns arrays        beside them (the probes, their solutions, a warm start, ...)
    the kernel pass's working memory      operators.pass_bytes(columns, n)
    the preconditioner's factors          ``entry_bytes`` · n r (at their peak: F in float64, a float32 copy,
                                          the Laplace approximation's S F)
    the factor products' scratch          low_rank.factor_products_bytes: per thread of the team
    the control variate's pass            control_variate.control_variate_bytes(n, r)
    RPCholesky's blocks                   low_rank.rpcholesky_bytes(n, PRECONDITIONER_BLOCK)

within the room the memory limit leaves beside the samples' working copies (one per radial term of the kernel)
and the operators' plan slack (operators.storage.fixed_bytes). The kernel's storage (packed, cached tiles or
matrix-free: operators.storage) takes what is left, less HEADROOM_SHARE of the limit where that leaves it room
for a pass: what these estimates do not count, the allocator's retained blocks of a fit's many n × columns
arrays, small arrays and the interpreter's growth (a fit that counted none of it peaked at its limit:
bench/gaussian_process_classification.py --scale).

The rank rule: the rank asked for (at most n − 1); else rank.DEFAULT_RANK at most, within rank.rank_bound (half
the limit for the factors), the factors and the control variate within half the room and everything within
the room. A rank search (rank.py) may grow it up to the largest rank whose evaluation fits the room.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ...operators.storage import DENSE_COPIES, fixed_bytes, pass_bytes
from ..krylov.cg import pcg_bytes
from ..low_rank import factor_products_bytes, rpcholesky_bytes
from .control_variate import control_variate_bytes
from .preconditioner import PRECONDITIONER_BLOCK
from .rank import preconditioner_rank, rank_bound

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.samples import SolverSamples

__all__ = ["HEADROOM_SHARE", "IterativeMemory", "PlannedMemory", "largest"]

#: The share of the memory limit the kernel's storage leaves free beside the estimates (module documentation).
HEADROOM_SHARE = 0.05


def largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest value in [low, high] for which ``fits`` holds (``fits`` monotone: true up to some value;
    ``low`` when none does), by bisection."""
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


class PlannedMemory:
    """A solver whose memory limit is its memory plan's (``self.memory``, an :class:`IterativeMemory`): the
    regression's and the classifier's iterative solvers."""

    memory: IterativeMemory

    @property
    def limit(self) -> int:
        """The memory limit (the memory plan's)."""
        return self.memory.limit

    @limit.setter
    def limit(self, limit: int) -> None:
        self.memory.limit = limit


class IterativeMemory:
    """The plan of one fit (module documentation).

    Parameters
    ----------
    samples : an engine's Samples (engines/base.py), or (n, d) where only sizes are asked for
    limit : int
        The memory limit.
    entry_bytes : int
        Bytes per entry of the preconditioner's n × r factors at their peak.
    vectors : int
        n × columns arrays an evaluation holds beside pcg's blocks.
    control_variate : bool
        Whether an evaluation takes the control variate's pass.
    factor_itemsize : int
        Bytes per entry of the stored factor F (the products with it convert a float32 F block by block).
    copies : int
        The kernel's working copies of the samples (kernels.Kernel.copies).
    storage : str
        The kernel's storage asked for (operators.storage: "auto" plans it).
    threads : int
        The fit's threads (0: the default team): the factor products hold their scratch on each.
    """

    def __init__(self, samples: SolverSamples | tuple[int, ...], limit: int, *, entry_bytes: int, vectors: int,
                 control_variate: bool, factor_itemsize: int = 8, copies: int = 1, storage: str = "auto",
                 threads: int = 0) -> None:
        shape = samples if isinstance(samples, tuple) else samples.shape
        self.samples = None if isinstance(samples, tuple) else samples
        self.n, self.d = int(shape[0]), int(shape[1]) if len(shape) > 1 else 1
        self.limit, self.entry_bytes, self.vectors = limit, entry_bytes, vectors
        self.control_variate, self.copies, self.storage = control_variate, copies, storage
        self.factor_itemsize, self.threads = factor_itemsize, threads

    @property
    def fixed(self) -> int:
        """What the plan sets aside beside the room: the samples' working copies and the slack."""
        n, d = self.n, self.d
        return fixed_bytes(n, d, 8, samples=DENSE_COPIES * n * d * 8 * self.copies)

    @property
    def room(self) -> int:
        """What the memory limit leaves beside the samples' working copies (dense ones, ``copies`` of them) and
        the plan's slack."""
        return self.limit - self.fixed

    def rank_bytes(self, rank: int) -> int:
        """The preconditioner's factors of that rank at their peak, the products' scratch on the team's threads
        and the control variate's pass."""
        return (self.entry_bytes * self.n * rank + factor_products_bytes(rank, self.factor_itemsize, self.threads)
                + (control_variate_bytes(self.n, rank) if self.control_variate else 0))

    def working_bytes(self, rank: int, columns: int) -> int:
        """What an evaluation holds beside the kernel's storage: CG on ``columns`` right-hand sides with a
        preconditioner of rank ``rank`` (module documentation)."""
        n = self.n
        return (pcg_bytes(n, columns, rank) + self.vectors * 8 * n * columns + pass_bytes(columns, n)
                + self.rank_bytes(rank) + rpcholesky_bytes(n, min(PRECONDITIONER_BLOCK, max(rank, 1))))

    def planned_rank(self, requested: int | None, columns: int) -> int:
        """The preconditioner's rank by the rule of the module's documentation, for CG on ``columns`` right-hand
        sides."""
        start = preconditioner_rank(requested, self.n, 8, self.limit, entry_bytes=self.entry_bytes)
        room = self.room
        if requested is None:  # half the room holds the factors and the control variate, the blocks beside them
            start = largest(0, start, lambda rank: (self.rank_bytes(rank) <= room // 2
                                                    and self.working_bytes(rank, columns) <= room))
        return start

    def needed_bytes(self, rank: int, columns: int) -> int:
        """What a fit at that rank needs of the memory limit: its evaluations and what the plan sets aside."""
        return self.working_bytes(rank, columns) + self.fixed

    def start_rank(self, requested: int | None, columns: int, what: str) -> int:
        """:meth:`planned_rank`, or MemoryError (saying ``what`` needs it, and at which rank) where even that
        does not fit."""
        start = self.planned_rank(requested, columns)
        v.check_within(self.needed_bytes(start, columns), self.limit,
                       f"{what} ({columns} columns, preconditioner of rank {start})")
        return start

    def rank_ceiling(self, requested: int | None, start: int, columns: int) -> int:
        """The largest rank a rank search may grow to from ``start``: within rank.rank_bound and the room."""
        bound = rank_bound(requested, self.n, 8, self.limit, entry_bytes=self.entry_bytes)
        return largest(start, max(start, bound), lambda rank: self.working_bytes(rank, columns) <= self.room)

    def kernel_plan(self, kernel: DifferentiableKernel, columns: int, other_bytes: int) -> Any:
        """The kernel's storage (operators.StoragePlan) for passes on ``columns`` vectors beside ``other_bytes``,
        leaving HEADROOM_SHARE of the limit free where the storage would take it; MemoryError where even
        matrix-free it does not fit."""
        samples = self.samples
        assert samples is not None

        def planned(headroom: int) -> Any:
            return samples.kernel_of(kernel).plan(block_size=columns, memory_limit=self.limit,
                                                  other_bytes=other_bytes + headroom, storage=self.storage)

        try:
            return planned(int(HEADROOM_SHARE * self.limit))
        except MemoryError:  # the headroom only ever takes cached tiles, never the room a pass needs
            return planned(0)

    def held(self, plan: Any) -> float:
        """The share of the kernel's entries ``plan`` holds in memory."""
        assert self.samples is not None
        n = self.n
        return min(1.0, plan.kernel_bytes / (np.dtype(self.samples.dtype).itemsize * n * (n + 1) / 2))
