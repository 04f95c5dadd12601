"""The memory a support vector machine's solve takes, checked against the memory limit before anything is allocated,
and its column cache sized from what is left.

A solve over l variables and n rows holds: its working copy of the rows (the column source's ``session_bytes``:
the prepared operand of dense rows, about (2d + 4)·n values), about 80 bytes a variable (α, the gradient, the
bounds, the linear term, indices), the working set's q × q block, and the column cache (float, n entries a
column). The cache takes ``cache_size`` (LIBSVM's parameter, megabytes) or, when that is None, what the memory
limit leaves; it always holds at least four columns (the working set needs them) and is never larger than the
n columns of the whole problem.
"""

from __future__ import annotations

from ... import _validation as v

__all__ = ["VARIABLE_BYTES", "MIN_COLUMNS", "cache_bytes"]

#: Bytes the solver keeps per variable.
VARIABLE_BYTES = 80
#: The fewest kernel columns a cache holds (a working set of ν-problems needs four).
MIN_COLUMNS = 4


def cache_bytes(columns, rows: int, variables: int, working_set: int, memory_limit: int,
                cache_size: float | None, solves: int = 1) -> int:
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
        Megabytes asked for (LIBSVM's ``cache_size``); None: what the limit leaves.
    solves : int
        Solves run side by side, sharing the limit.

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
    q = min(working_set, variables)
    fixed = int(columns.session_bytes(rows)) + VARIABLE_BYTES * variables + 4 * q * q + 48 * q
    least = fixed + MIN_COLUMNS * column
    room = memory_limit // max(solves, 1) - fixed
    if room < MIN_COLUMNS * column:
        v.check_within(least * max(solves, 1), memory_limit, f"a support vector machine's solve over {rows} samples",
                       "give it a larger memory_limit")
    room = max(room, MIN_COLUMNS * column)
    wanted = room if cache_size is None else max(int(cache_size * 2**20), MIN_COLUMNS * column)
    return int(min(wanted, room, column * max(rows, MIN_COLUMNS)))
