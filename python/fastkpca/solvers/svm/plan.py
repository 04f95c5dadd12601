"""The memory a support vector machine's solve takes, checked against the memory limit before anything is allocated;
whether it takes the whole problem as one working set or working sets (solvers/choice.py's
``support_vector_machine`` decides, from the bytes reckoned here); and its column cache, sized from what is left.

A solve over l variables and n rows holds: its working copy of the rows (the column source's ``session_bytes``:
the prepared operand of dense rows, about (2d + 4)·n values), about 184 bytes a variable (α, the gradient, the
bounds, the linear term, indices, shrinking's record of its drops, in the core and in Python), the working set's
q × q block (q = l for the whole problem), 64 MB for the passes' temporaries, and the column cache (float, n
entries a column). The whole problem as one working set needs every column in the cache, so it is possible only
where ``cache_size`` (LIBSVM's parameter, megabytes) allows them all and the memory limit holds them. A batched
solve's cache takes ``cache_size`` megabytes or, when that is None, room for REUSE working sets of columns: a larger
cache does not pay where touching fresh memory costs more than evaluating a float32 kernel entry again. Either way
within what the memory limit leaves, at least four columns (a working set needs them), and never more than the n
columns of the whole problem.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

from ... import _validation as v
from .. import choice as _choice

if TYPE_CHECKING:
    from .settings import DualSettings

__all__ = ["VARIABLE_BYTES", "MIN_COLUMNS", "fixed_bytes", "cache_bytes", "choice", "Columns", "takes_whole",
           "planned"]

#: Bytes a solve keeps per variable: the core's (α, the gradient, bounds, linear term, signs, indices, scores:
#: about 100; shrinking's record of the variables each drop kept and their α then, and of the samples it dropped:
#: at most 24, the kept variables halving from drop to drop) and the Python layer's arrays of the problem (about 60).
VARIABLE_BYTES = 184
#: Bytes set aside for the passes' temporaries (a product's gathered rows, the threads' tiles) and the allocator.
SLACK = 64 * 2**20
#: The fewest kernel columns a cache holds (a working set of ν-problems needs four).
MIN_COLUMNS = 4
#: cache_size=None: the default cache of a batched problem holds this many working sets of columns.
REUSE = 3


class SvmColumns(Protocol):
    """The core's SvmKernelColumns (kernels.Kernel.column_source) as the Python layer reads them."""

    @property
    def dtype(self) -> str:
        """The dtype the columns are evaluated in ("float64" or "float32")."""

    @property
    def features(self) -> float:
        """The values an entry's rows hold (0: read from a matrix), for the thread rule's work."""

    def session_bytes(self, rows: int) -> int:
        """Bytes of a solve's working copy of ``rows`` rows."""


class Sources(Protocol):
    """What :func:`choice` reads of its sources: fitted.ColumnSources, or one source as :class:`Columns`."""

    @property
    def held(self) -> int:
        """Bytes of the float32 copy the fast columns read (0 where they are the exact ones)."""

    def session_bytes(self, rows: int, whole: bool) -> int:
        """Bytes of a solve's working copy of ``rows`` rows, for the whole problem or working sets."""


class ColumnsInTwoPrecisions(Sources, Protocol):
    """What :func:`planned` and dual.solve_planned read of their sources (fitted.ColumnSources): the columns in the
    samples' precision and the fast ones, and which of them a choice reads."""

    @property
    def exact(self) -> SvmColumns:
        """The columns in the samples' own precision (a whole problem's)."""

    @property
    def fast(self) -> SvmColumns:
        """The columns a batched solve reads (float32 where the kernel allows; else the exact ones)."""

    def columns(self, choice: _choice.Choice) -> SvmColumns:
        """The columns the choice's solve reads."""

def _column(rows: int) -> int:
    """Bytes of one cached column (float entries over the rows)."""
    return 4 * max(rows, 1)


def _every_column(rows: int) -> int:
    """Bytes of a cache of every column of a problem of ``rows`` samples (at least MIN_COLUMNS columns)."""
    return _column(rows) * max(rows, MIN_COLUMNS)


def fixed_bytes(session: int, variables: int, q: int) -> int:
    """Bytes a solve holds besides its column cache: the rows' working copy (``session`` bytes), the variables'
    arrays, the q × q block of its working set and the slack."""
    return int(session) + VARIABLE_BYTES * variables + 4 * q * q + 48 * q + SLACK


def _block(settings: DualSettings, variables: int, whole: bool) -> int:
    """q: the variables of a working set."""
    return variables if whole else min(settings.working_set, variables)


def _wanted(rows: int, q: int, cache_size: float | None, whole: bool) -> int:
    """The cache asked for: ``cache_size`` megabytes, else every column (the whole problem) or REUSE working sets of
    columns; at least MIN_COLUMNS columns."""
    if cache_size is None:
        wanted = _every_column(rows) if whole else REUSE * q * _column(rows)
    else:
        wanted = int(cache_size * 2**20)
    return max(wanted, MIN_COLUMNS * _column(rows))


def cache_bytes(columns: SvmColumns, rows: int, variables: int, q: int, memory_limit: int, cache_size: float | None, *,
                whole: bool, solves: int = 1, held: int = 0) -> int:
    """Bytes of each of ``solves`` concurrent solves' column cache.

    Parameters
    ----------
    columns : the core's SvmKernelColumns
    rows : int
        Rows of the largest problem (its samples).
    variables : int
        Its variables.
    q : int
        Variables of its working set (all of them for the whole problem).
    memory_limit : int
        Bytes every solve together may use.
    cache_size : float or None
        Megabytes asked for (LIBSVM's ``cache_size``); None: the default above.
    whole : bool
        Whether the solve takes the whole problem as one working set (the default cache: every column).
    solves : int
        Solves run side by side, sharing the limit.
    held : int
        Bytes already held for all of them (a float32 copy of the samples).

    Returns
    -------
    nbytes : int

    Raises
    ------
    MemoryError
        When the limit cannot hold even the smallest cache beside the solve's fixed memory, with the bytes it
        needs.
    """
    column = _column(rows)
    fixed = fixed_bytes(columns.session_bytes(rows), variables, q)
    room = (memory_limit - held) // max(solves, 1) - fixed
    if room < MIN_COLUMNS * column:
        v.check_within((fixed + MIN_COLUMNS * column) * max(solves, 1) + held, memory_limit,
                       f"a support vector machine's solve over {rows} samples", "give it a larger memory_limit")
    room = max(room, MIN_COLUMNS * column)
    return int(min(_wanted(rows, q, cache_size, whole), room, _every_column(rows)))


def choice(sources: Sources, settings: DualSettings, rows: int, variables: int, memory_limit: int,
           cache_limit: float | None, solves: int = 1) -> _choice.Choice:
    """Whole or batched for a problem of ``rows`` samples and ``variables`` variables, ``solves`` side by side within
    ``memory_limit`` (solvers/choice.py's ``support_vector_machine``, asked for ``settings.solver``).

    The whole problem reads the exact columns and holds every column; a batched solve reads the fast ones (beside
    ``sources.held`` bytes of their float32 copy) and a cache of REUSE working sets of columns (or ``cache_limit``),
    within what the limit leaves (``sources``: fitted.ColumnSources, or one source as :class:`Columns`).
    ``cache_limit`` is the most bytes the cache may take: ``cache_size`` megabytes when planning, the cache already
    planned when a smaller problem shares it; None: no bound but the limit.
    """
    share = memory_limit // max(solves, 1)
    whole_bytes = fixed_bytes(sources.session_bytes(rows, whole=True), variables, variables) + _every_column(rows)
    q = _block(settings, variables, False)
    fixed = fixed_bytes(sources.session_bytes(rows, whole=False), variables, q)
    held = sources.held
    room = max((memory_limit - held) // max(solves, 1) - fixed, MIN_COLUMNS * _column(rows))
    cache = min(_wanted(rows, q, None if cache_limit is None else cache_limit / 2**20, False), room,
                _every_column(rows))
    return _choice.support_vector_machine(
        settings.solver, variables=variables, whole_bytes=whole_bytes,
        batched_bytes=held // max(solves, 1) + fixed + cache,
        every_column_cached=cache_limit is None or cache_limit >= 4 * rows * rows, memory_limit=share)


class Columns:
    """One column source as :func:`choice` reads sources: the same columns for the whole problem and working sets,
    no copy held."""

    held = 0

    def __init__(self, columns: SvmColumns) -> None:
        self.columns = columns

    def session_bytes(self, rows: int, whole: bool) -> int:
        return int(self.columns.session_bytes(rows))


def takes_whole(made: _choice.Choice) -> bool:
    """Whether a choice takes the whole problem as one working set."""
    return made.picked == "whole"


def planned(sources: ColumnsInTwoPrecisions, settings: DualSettings, rows: int, variables: int, memory_limit: int,
            cache_size: float | None, solves: int = 1) -> tuple[DualSettings, _choice.Choice]:
    """(settings, choice) for problems of up to ``rows`` samples and ``variables`` variables, ``solves`` side by
    side (fitted.ColumnSources ``sources``): whole or batched chosen for the largest, and the cache sized for it. A
    smaller problem that shares the cache makes its own choice (:func:`choice` with the cache planned here)."""
    made = choice(sources, settings, rows, variables, memory_limit, None if cache_size is None else cache_size * 2**20,
                  solves)
    whole = takes_whole(made)
    if whole:
        # The whole problem has no smaller cache to fall back on: where the limit cannot hold it (asked for by name,
        # or the batched solve needing more still), the MemoryError names its size.
        needs = next(c.bytes for c in made.candidates if c.name == made.picked)
        if needs > made.memory_limit:
            v.check_within(needs * max(solves, 1), memory_limit, f"a support vector machine's solve over {rows} "
                           "samples as one working set", "give it a larger memory_limit")
    columns, held = (sources.exact, 0) if whole else (sources.fast, sources.held)
    cache = cache_bytes(columns, rows, variables, _block(settings, variables, whole), memory_limit, cache_size,
                        whole=whole, solves=solves, held=held)
    return dataclasses.replace(settings, cache_bytes=cache), made
