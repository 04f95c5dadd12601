"""The storage planner: which storage mode holds an n-sample kernel within a memory limit, and the memory a
pass takes. Every size here comes from the core's packed layout (packed.hpp, exposed by the bindings:
TILE, PASS_BLOCKS, packed_prefix_size), so Python and C++ cannot disagree on it.

``"full"``
    the N×N matrix (N²·itemsize bytes); the fastest pass for wide blocks.
``"packed"``
    its lower triangle in TILE×TILE tiles (about N²/2·itemsize bytes); a pass reads each tile once for
    both halves, so it reads half as much.
``"cached"``
    the tiles of the packed form that fit the memory limit are kept; the others are recomputed from X on
    every pass.
``"matrix_free"``
    no kernel entries are kept: every pass recomputes each lower tile from X and multiplies it into the
    block while it is in cache. Memory O(N·(d + b)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import _native

if TYPE_CHECKING:
    from ..kernels.kernel import Kernel

__all__ = ["StoragePlan", "plan_storage", "plan_for", "sample_bytes", "working_copies_bytes", "pass_bytes",
           "packed_bytes", "STORAGES",
           "PACKED_MAX_BLOCK"]

STORAGES = ("auto", "full", "packed", "cached", "matrix_free")
#: Memory kept free of the plan for the interpreter, temporaries and rounding in the estimates.
PLAN_SLACK_BYTES = 64 * 2**20
#: Largest block for which a pass over the packed (one-triangle) kernel was measured as fast as one over the
#: full matrix; for wider blocks the full matrix's pass is the faster.
PACKED_MAX_BLOCK = 24


@dataclass(frozen=True)
class StoragePlan:
    """How a kernel is held: its storage mode, the tile rows of the packed form kept (packed: all,
    matrix_free: 0), the bytes of kernel entries held, what the memory limit left for them and why."""

    storage: str
    cached_tile_rows: int
    kernel_bytes: int
    budget_bytes: int
    reason: str

    @property
    def stored(self) -> bool:
        """Whether every entry is held (a pass reads memory rather than evaluating the kernel)."""
        return self.storage in ("full", "packed")


def tile() -> int:
    return int(_native.core.TILE)


def tiles(n: int) -> int:
    """Tiles per side of an n×n kernel."""
    return -(-n // tile())


def packed_bytes(tile_rows: int, itemsize: int) -> int:
    """Bytes of the packed form's first ``tile_rows`` tile rows."""
    return int(_native.core.packed_prefix_size(tile_rows)) * itemsize


#: Copies of dense samples a native kernel term keeps: its row-major copy and the micro-kernel's two packed
#: operands.
DENSE_COPIES = 3


def fixed_bytes(n: int, n_features: int, itemsize: int, samples: int | None = None) -> int:
    """What a plan sets aside whatever the storage: the working copies of X (``samples`` bytes of them when
    given, else dense ones: :func:`working_copies_bytes`) and its row norms, and the slack."""
    return (DENSE_COPIES * n * n_features * itemsize if samples is None else samples) + 16 * n + PLAN_SLACK_BYTES


def working_copies_bytes(X: Any) -> int:
    """Bytes of the copies of the samples X the core keeps for a kernel term (operators' ``nbytes`` less the
    norms): dense, its own row-major copy and the two packed operands of the micro-kernel (three of X's
    size); sparse, its CSR rows once (:func:`sample_bytes`)."""
    return sample_bytes(X) if hasattr(X, "nnz") else DENSE_COPIES * sample_bytes(X)


def sample_bytes(X: Any) -> int:
    """Bytes of the samples X as the core holds them: the dense rows, or a CSR matrix's values, column indices
    (int32) and row pointers (int64), with a thread's scatter array over the columns (sparse kernels)."""
    if hasattr(X, "nnz"):
        return int(X.nnz) * (X.dtype.itemsize + 4) + 8 * (X.shape[0] + 1) + 4 * int(X.shape[1])
    return int(X.shape[0]) * int(X.shape[1]) * X.dtype.itemsize


def pass_bytes(b: int, n: int) -> int:
    """Working memory of one product of a one-triangle operator (packed, cached, matrix-free) with a block of
    b vectors: the block and its product padded to whole tiles and to ldv columns (b plus the column of
    ones of the first pass, rounded up to 8), and the mirrored contributions each of the PASS_BLOCKS fixed
    row blocks collects for the rows before it (kernel_block.hpp); plus the centered copy of the block
    and its product."""
    T, blocks = tile(), int(_native.core.PASS_BLOCKS)
    nt = tiles(n)
    ldv = -(-(b + 1) // 8) * 8
    earlier_rows = sum(round(nt * math.sqrt(p / blocks)) * T for p in range(blocks))
    return 8 * ((2 * nt * T + earlier_rows) * ldv + 3 * n * b)


def plan_storage(n: int, n_features: int, itemsize: int, *, block_size: int, memory_limit: int,
                 other_bytes: int = 0, storage: str = "auto", samples: int | None = None) -> StoragePlan:
    """The storage of an n-sample kernel within ``memory_limit`` bytes, ``other_bytes`` of which are taken
    by the rest of the computation (the solver's basis, say).

    The cost model: a stored pass reads the kernel from memory, a recomputed one evaluates it (GEMM + exp
    per entry: more work than reading it), so the fastest mode that fits wins. Full beats packed only for blocks
    wider than PACKED_MAX_BLOCK; otherwise packed (half the memory, half the reads). When the packed
    triangle does not fit, as many of its tile rows as fit are cached and the rest recomputed; with no
    room for one tile row, matrix-free. ``samples``: bytes of the samples when they are not n × n_features
    dense values (sparse samples, several kernel terms: :func:`working_copies_bytes`).
    """
    T = tile()
    nt = tiles(n)
    fixed = other_bytes + fixed_bytes(n, n_features, itemsize, samples)
    budget = memory_limit - fixed
    if budget < 0:
        raise MemoryError(
            f"the {n}-sample kernel's solver and working copies need {fixed / 2**30:.2f} GiB even matrix-free, "
            f"but the memory limit is {memory_limit / 2**30:.2f} GiB"
        )
    full = n * n * itemsize
    packed = packed_bytes(nt, itemsize)
    mib = 2**20
    if storage == "full" or (storage == "auto" and block_size > PACKED_MAX_BLOCK and full <= budget):
        if full > budget:
            raise MemoryError(f"storage='full' needs {full / 2**30:.2f} GiB for the {n}×{n} kernel, but the memory "
                              f"limit leaves {max(budget, 0) / 2**30:.2f} GiB")
        return StoragePlan("full", nt, full, budget, f"the full matrix ({full // mib} MiB) fits and a pass with a "
                           f"block of {block_size} runs faster over it than over the packed triangle")
    if storage == "packed" or (storage == "auto" and packed <= budget):
        if packed > budget:
            raise MemoryError(f"storage='packed' needs {packed / 2**30:.2f} GiB for the {n}×{n} kernel's lower "
                              f"triangle, but the memory limit leaves {max(budget, 0) / 2**30:.2f} GiB")
        return StoragePlan("packed", nt, packed, budget,
                           f"the packed lower triangle ({packed // mib} MiB) fits in the {max(budget, 0) // mib} "
                           "MiB the memory limit leaves for the kernel")
    rows = 0
    if storage in ("auto", "cached"):
        # The largest prefix of tile rows that fits: rows(rows+1)/2·T²·itemsize <= budget.
        rows = int(((1 + 8 * max(budget, 0) / (T * T * itemsize)) ** 0.5 - 1) / 2)
        while rows > 0 and packed_bytes(rows, itemsize) > budget:
            rows -= 1
        rows = min(rows, nt)
    if rows > 0:
        kept = packed_bytes(rows, itemsize)
        return StoragePlan("cached", rows, kept, budget,
                           f"the packed triangle ({packed // mib} MiB) does not fit in the {max(budget, 0) // mib} "
                           f"MiB left for the kernel: {rows} of {nt} tile rows ({kept / packed:.0%} of the "
                           "entries) are kept, the rest recomputed on every pass")
    return StoragePlan("matrix_free", 0, 0, budget,
                       "requested" if storage == "matrix_free" else
                       f"not even one tile row fits in the {max(budget, 0) // mib} MiB left for the kernel: "
                       "every pass recomputes the kernel")


def plan_for(kernel: Kernel, X: Any, *, block_size: int, memory_limit: int, other_bytes: int = 0,
             storage: str = "auto") -> StoragePlan:
    """The storage of the kernel of samples X (validated, in this process) within ``memory_limit``.

    A native kernel: :func:`plan_storage`. A kernel that exists only as its matrix (precomputed: read in
    place; a graph affinity): that matrix. A kernel evaluated in Python (a callable, a scikit-learn kernel
    object, a registered kind): its matrix if it fits ("full"), else its row blocks recomputed on every
    pass ("matrix_free").
    """
    n, itemsize = X.shape[0], X.dtype.itemsize
    if kernel.native:
        return plan_storage(n, X.shape[1], itemsize, block_size=block_size, memory_limit=memory_limit,
                            other_bytes=other_bytes, storage=storage, samples=working_copies_bytes(X) * kernel.copies)
    matrix = kernel.matrix_bytes(n, itemsize)
    budget = memory_limit - other_bytes - PLAN_SLACK_BYTES
    mib = 2**20
    if not kernel.blocks or (storage in ("auto", "full") and matrix <= budget):
        if storage not in ("auto", "full"):
            raise ValueError(f"storage={storage!r} is not available for {kernel.label}: it exists only as its matrix "
                             "('full')")
        if matrix > max(budget, 0):
            raise MemoryError(f"{kernel.label} needs its {n}×{n} matrix ({matrix / 2**30:.2f} GiB), but the memory "
                              f"limit leaves {max(budget, 0) / 2**30:.2f} GiB")
        return StoragePlan("full", 0, matrix, budget, f"{kernel.label}: its matrix, read in place" if not matrix else
                           f"{kernel.label}: its matrix ({matrix // mib} MiB) fits")
    if storage not in ("auto", "matrix_free", "cached"):
        raise MemoryError(f"storage={storage!r} needs {matrix / 2**30:.2f} GiB for the {n}×{n} matrix of "
                          f"{kernel.label}, but the memory limit leaves {max(budget, 0) / 2**30:.2f} GiB")
    return StoragePlan("matrix_free", 0, 0, budget,
                       f"{kernel.label} is evaluated in Python: its row blocks are recomputed on every pass")
