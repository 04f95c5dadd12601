"""The memory a support vector machine's solve takes, checked against the memory limit before anything is allocated,
and its column cache sized from what is left.

A solve over l variables and n rows holds: its working copy of the rows (the column source's ``session_bytes``:
the prepared operand of dense rows, about (2d + 4)·n values), about 160 bytes a variable (α, the gradient, the
bounds, the linear term, indices, in the core and in Python), the working set's q × q block, 64 MB for the
passes' temporaries, and the column cache (float, n entries a
column). The cache takes ``cache_size`` megabytes (LIBSVM's parameter) or, when that is None, every column of a
problem small enough to be taken whole (WHOLE_BELOW variables), else room for REUSE working sets of columns.
Either way within what the memory limit leaves, at least four columns (a working set needs them), and never
more than the n columns of the whole problem. A larger cache does not pay on the machines this was measured on:
touching fresh memory costs 0.5-1 s a GB, against about 1 ns to evaluate a float32 kernel entry again (issue's
data, N = 20,000, medians of 7 alternated solves: 0.51 s with 3 working sets of columns (61 MB), 0.56 s with
LIBSVM's default 200 MB; at 50,000: 2.63 s with 100 MB, 2.85 s with 200 MB, 2.61 s with 400 MB).
"""

from __future__ import annotations

import dataclasses

from ... import _validation as v

__all__ = ["VARIABLE_BYTES", "MIN_COLUMNS", "cache_bytes", "whole_problem", "planned"]

#: Bytes a solve keeps per variable: the core's (α, the gradient, bounds, linear term, signs, indices, scores:
#: about 100) and the Python layer's arrays of the problem (about 60).
VARIABLE_BYTES = 160
#: Bytes set aside for the passes' temporaries (a product's gathered rows, the threads' tiles) and the allocator.
SLACK = 64 * 2**20
#: The fewest kernel columns a cache holds (a working set of ν-problems needs four).
MIN_COLUMNS = 4
#: cache_size=None: the default cache of a batched problem holds this many working sets of columns.
REUSE = 3


def whole_problem(variables: int, rows: int, cache: int, whole_below: int) -> bool:
    """Whether the solver takes the whole problem as its one working set (the core's rule): few enough variables,
    and a cache that holds every column."""
    return variables <= whole_below and cache >= 4 * rows * rows


def cache_bytes(columns, rows: int, variables: int, working_set: int, memory_limit: int,
                cache_size: float | None, solves: int = 1, held: int = 0, whole_below: int = 4096) -> int:
    """Bytes of each of ``solves`` concurrent solves' column cache.

    Parameters
    ----------
    columns : the core's SvmKernelColumns
    rows : int
        Rows of the largest problem (its samples).
    variables : int
        Its variables.
    working_set : int
        Variables a working set holds at most.
    memory_limit : int
        Bytes every solve together may use.
    cache_size : float or None
        Megabytes asked for (LIBSVM's ``cache_size``); None: the default above.
    solves : int
        Solves run side by side, sharing the limit.
    held : int
        Bytes already held for all of them (a float32 copy of the samples).
    whole_below : int
        Problems of at most this many variables are taken whole when every column fits.

    Returns
    -------
    nbytes : int

    Raises
    ------
    MemoryError
        When the limit cannot hold even the smallest cache beside the solve's fixed memory, with the bytes it
        needs.
    """
    column = 4 * max(rows, 1)
    q = variables if variables <= whole_below else min(working_set, variables)  # the block a step solves
    fixed = int(columns.session_bytes(rows)) + VARIABLE_BYTES * variables + 4 * q * q + 48 * q + SLACK
    least = fixed + MIN_COLUMNS * column
    room = (memory_limit - held) // max(solves, 1) - fixed
    if room < MIN_COLUMNS * column:
        v.check_within(least * max(solves, 1) + held, memory_limit,
                       f"a support vector machine's solve over {rows} samples", "give it a larger memory_limit")
    room = max(room, MIN_COLUMNS * column)
    if cache_size is None:
        wanted = column * rows if variables <= whole_below else REUSE * q * column
    else:
        wanted = int(cache_size * 2**20)
    wanted = max(wanted, MIN_COLUMNS * column)
    return int(min(wanted, room, column * max(rows, MIN_COLUMNS)))


def planned(sources, settings, rows: int, variables: int, memory_limit: int, cache_size: float | None,
            solves: int = 1):
    """(columns, settings) of problems of up to ``rows`` samples and ``variables`` variables, ``solves`` side by
    side: the cache sized, and the columns the largest reads (fitted.ColumnSources: exact for a problem the solver
    takes whole, fast otherwise; a smaller one asks ``sources.for_problem``)."""
    cache = cache_bytes(sources.exact, rows, variables, settings.working_set, memory_limit, cache_size, solves,
                        whole_below=settings.whole_below)
    if whole_problem(variables, rows, cache, settings.whole_below):
        return sources.exact, dataclasses.replace(settings, cache_bytes=cache)
    fast = sources.fast
    cache = cache_bytes(fast, rows, variables, settings.working_set, memory_limit, cache_size, solves, sources.held,
                        settings.whole_below)
    return fast, dataclasses.replace(settings, cache_bytes=cache)
