"""Row sources: samples the streamed passes of the low-rank algebra run over, wherever they are.

A row source has ``shape``, ``dtype`` and three methods:

- ``rows(index)``: the rows ``index`` in this process, in that order (C-contiguous; sparse stays sparse);
- ``reduce(func, *args, row_args=(), rows)``: the sum of ``func(chunk, *args, *pieces)`` over chunks of
  rows in a fixed order, ``pieces`` the chunk's rows of each array in ``row_args`` (None stays None);
  ``func`` returns an array or a tuple of arrays (or None), summed entrywise;
- ``map(func, *args, rows)``: ``func(chunk, *args)`` (an array of the chunk's rows) for every chunk, in row
  order, concatenated here.

:class:`ArrayRows` is the source of an array in memory, in chunks of ``rows`` rows. An engine's samples
(engines/) are row sources too: a cluster's run one task per block of rows. Chunk boundaries change the
rounding of a sum, never its value beyond that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import _validation as v

if TYPE_CHECKING:
    from ..operators.samples import SolverSamples

__all__ = ["ArrayRows", "as_rows", "add"]


def add(a: Any, b: Any) -> Any:
    """Entrywise sum of two results of a reduce's function (arrays, tuples of arrays, None)."""
    if a is None:
        return b
    if isinstance(a, tuple):
        return tuple(add(x, y) for x, y in zip(a, b))
    return a + b


class ArrayRows:
    """The rows of an array in this process (dense or sparse), as a row source."""

    def __init__(self, X: Any) -> None:
        self.X = X

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape

    @property
    def dtype(self) -> np.dtype:
        return self.X.dtype

    @property
    def values_per_row(self) -> float:
        """Values a row stores: its columns when dense, the mean stored entries when sparse."""
        n, d = self.X.shape
        return self.X.nnz / max(n, 1) if hasattr(self.X, "nnz") else d

    def rows(self, index: np.ndarray | None = None) -> Any:
        if index is None:
            return self.X
        rows = self.X[index]
        return v.contiguous(rows) if isinstance(rows, np.ndarray) else rows  # sparse rows stay sparse

    def reduce(self, func: Callable[..., Any], *args: Any, row_args: tuple = (), rows: int) -> Any:
        total = None
        for start in range(0, self.X.shape[0], rows):
            stop = min(start + rows, self.X.shape[0])
            pieces = [None if a is None else a[start:stop] for a in row_args]
            total = add(total, func(self.X[start:stop], *args, *pieces))
        return total

    def map(self, func: Callable[..., Any], *args: Any, rows: int) -> np.ndarray:
        out: np.ndarray | None = None
        for start in range(0, self.X.shape[0], rows):
            part = func(self.X[start:start + rows], *args)
            if out is None:
                out = v.empty((self.X.shape[0], *part.shape[1:]), part.dtype,
                              f"a {self.X.shape[0]}×{part.shape[1] if part.ndim > 1 else 1} result")
            out[start:start + part.shape[0]] = part
        assert out is not None  # at least one row
        return out


def as_rows(X: np.ndarray | SolverSamples | ArrayRows) -> SolverSamples | ArrayRows:
    """A row source: ``X`` itself when it is one, else the rows of the array ``X``."""
    return ArrayRows(X) if isinstance(X, np.ndarray) or not hasattr(X, "reduce") else X
