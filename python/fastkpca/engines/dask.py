"""The Dask engine: kernel passes, streamed low-rank passes and products with new rows on a
dask.distributed cluster. :func:`fastkpca.engines.select` imports this module only when a dask array
arrives, and this module imports dask only then (dask is an optional extra).

Exact solvers (block Lanczos, conjugate gradients) run in this process, natively, on a Python-side
operator (operators.python_operator) whose every product with K is one distributed computation
(:class:`DistributedKernel`):

- X is cut into row blocks X_0 … X_{P−1} of :func:`block_rows` rows, a function of N alone, so the result
  does not depend on the cluster; the blocks are persisted on the workers.
- Each pair I >= J of row blocks is one task: the kernel block K_IJ = k(X_I, X_J) gives both K_IJ·V_J
  (rows I) and K_IJᵀ·V_I (rows J), each tile evaluated once (kernel_block.hpp); a diagonal pair uses the
  symmetric pass. A distributed pass evaluates N²/2 kernel entries, as a single-machine matrix-free pass
  does.
- Row block I of K·V is the sum of its P contributions in the fixed order J = 0 … P−1, by one task.
  Every work unit and every sum is fixed, so the products are the same bit for bit on any number of
  workers or threads.
- The tiles of pairs that fit the workers' memory are kept there (futures held by this process); the
  others are recomputed on every pass. Kept and recomputed tiles are the same numbers, so keeping never
  changes a result either.

Worker failure: every piece of data a pass reads is a task with lineage (the row blocks from the user's
graph, the kept tiles from the row blocks, the block V from a task that carries it), so Dask recomputes
what a lost worker held and retries its tasks; the pass returns the same numbers.

Streamed passes (Nyström) are map/reduce over the row blocks: one task per block, and a fixed binary tree
of sums. New rows of a dask array are one task per chunk.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import _validation as v
from ..kernels import Kernel
from ..kernels.gaussian_process import low_rank_weight_sums
from ..operators import StoragePlan
from ..operators.samples import KernelViews
from ..solvers.rows import add
from .local import LOCAL

__all__ = ["DaskEngine", "DaskSamples", "DistributedKernel", "block_rows"]

#: Row blocks of X at most (the tasks of a pass grow as P²/2), and the rows a block aims at.
MAX_BLOCKS = 64
TARGET_BLOCK_ROWS = 6144
#: Share of each worker's memory limit a fit may fill with kept kernel tiles, when memory_limit is None.
DEFAULT_WORKER_SHARE = 0.4


def dask_modules():
    """(dask, dask.array, distributed or None); ImportError naming the extra when dask is missing."""
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - the caller passed a dask array, so dask is importable
        raise ImportError('dask arrays need dask: pip install "fastkpca[dask]"') from exc
    try:
        import distributed
    except ImportError:
        distributed = None
    return dask, da, distributed


def current_client():
    """The dask.distributed Client this process uses by default, or None."""
    _, _, distributed = dask_modules()
    if distributed is None:
        return None
    try:
        return distributed.default_client()
    except ValueError:
        return None


def is_dask_array(x) -> bool:
    """A dask.array.Array, recognised without importing dask."""
    return type(x).__module__.startswith("dask.array") and hasattr(x, "chunks") and hasattr(x, "dask")


def check_dask_samples(x, name: str, dtype=None):
    """A dask array of samples, as this engine reads it: 2-D, real, float32/float64 (integers become float64),
    with known chunk sizes and all columns in one chunk (split columns are rechunked: a kernel entry needs
    whole rows). Its values are checked finite by the tasks that persist its row blocks (_check_block):
    checking here would compute the array once more."""
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D dask array (samples × features), got {x.ndim}-D with shape "
                         f"{x.shape}")
    if any(math.isnan(c) for c in x.chunks[0]) or any(math.isnan(c) for c in x.chunks[1]):
        raise ValueError(f"{name} is a dask array with unknown chunk sizes (NaN in {name}.chunks); call "
                         f"{name}.compute_chunk_sizes() first, or build it with known sizes")
    kind = x.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} is complex ({x.dtype}); fastkpca works on real data")
    if kind not in "biuf":
        raise TypeError(f"{name} has dtype {x.dtype}; expected numbers")
    if x.shape[0] == 0:
        raise ValueError(f"{name} has 0 samples (shape {x.shape}); at least 1 is required")
    if x.shape[1] == 0:
        raise ValueError(f"{name} has 0 features (shape {x.shape}); at least 1 is required")
    if dtype is None:  # as the estimators' NumPy path: float32 stays, anything else becomes float64
        dtype = np.float32 if x.dtype == np.float32 else np.float64
    if x.dtype != dtype:
        x = x.astype(dtype)
    if len(x.chunks[1]) > 1:
        x = x.rechunk({1: -1})
    return x


def block_rows(n: int) -> int:
    """Rows per row block: about TARGET_BLOCK_ROWS, at most MAX_BLOCKS blocks, a multiple of the core's
    tile, and equal blocks (but the last). A function of n alone."""
    tile = int(_native.core.TILE)
    blocks = min(MAX_BLOCKS, max(1, round(n / TARGET_BLOCK_ROWS)))
    rows = -(-n // blocks)
    return int(-(-rows // tile) * tile)


def _on_one_thread(func):
    """A task's function evaluated on one thread: a worker runs as many tasks at once as it has threads."""
    return func.on_threads(1) if hasattr(func, "on_threads") else func


# ----------------------------------------------------------------------------------- worker functions
# Module-level functions, so the workers import them from fastkpca (which must be installed there).

def _check_block(block: np.ndarray, where) -> np.ndarray:
    """A row block of X, checked finite on the worker that holds it (the one pass over the values)."""
    block = v.contiguous(block)
    if not np.isfinite(block).all():
        what = "NaN" if np.isnan(block).any() else "infinity"
        where = f"row block {where}" if isinstance(where, int) else where
        raise ValueError(f"X contains {what} (in rows of {where}); fastkpca needs finite values")
    return block


def _kept_tiles(a, b, kernel, zero_diagonal=False):
    return kernel.block_tiles(a, b, zero_diagonal)


def _pair_product(a, b, kernel, tiles, va, vb, zero_diagonal=False):
    """(K_ab·v_b, K_abᵀ·v_a, seconds) for a cross pair; (K_aa·v_a, None, seconds) for a diagonal one (without
    the diagonal of K with ``zero_diagonal``)."""
    start = time.perf_counter()
    wa, wb = kernel.block_product(a, b, tiles, va, vb, zero_diagonal)
    return wa, wb, time.perf_counter() - start


def _ordered_sum(parts, sides, first: int = 0) -> np.ndarray:
    """Σ_j parts[j][first + sides[j]] in the order given: a row block's shares of a pass's pairs, summed in
    the pass's fixed order."""
    total = np.array(parts[0][first + sides[0]], copy=True)
    for part, side in zip(parts[1:], sides[1:]):
        total += part[first + side]
    return total


def _block_sum(parts, sides):
    """(Σ_j parts[j][sides[j]] in the order given (the fixed order of a pass), task seconds): the seconds of
    the pairs this sum takes their row side from (each pair is counted by one sum), and its own."""
    start = time.perf_counter()
    total = _ordered_sum(parts, sides)
    return total, sum(p[2] for p, side in zip(parts, sides) if side == 0) + time.perf_counter() - start


def _gradient_pair(a, b, ka, kb, kind, scale, shift, want_ard):
    """One pair of row blocks of a gradient pass (kernels.GaussianProcessKernel.traces_from): the samples
    scaled and centred, W's block from the factors ka = (A_a, B_a), kb = (A_b, B_b) (None: a diagonal pair).
    (Σ W∘κ, Σ W∘G r² over the pair, both mirrored blocks of a cross pair counted, the pair's share of
    M·[𝟙, X̃] for a's rows, for b's rows or None)."""
    xa = v.contiguous(a * scale - shift)
    if b is None:
        sk, sr, mv = _native.core.gp_gradient_pass_low_rank(xa, ka[0], ka[1], kind, want_ard, 1)
        return sk, sr, mv, None
    xb = v.contiguous(b * scale - shift)
    sk, sr, mv = _native.core.gp_gradient_cross_pass_low_rank(xa, xb, ka[0], ka[1], kb[0], kb[1], kind, want_ard)
    rows = xa.shape[0]
    return 2.0 * sk, 2.0 * sr, None if mv is None else mv[:rows], None if mv is None else mv[rows:]


def _gradient_block(parts, sides, block, scale, shift, want_ard):
    """Row block p of a gradient pass: (the sums of the pairs it takes its row side from, each pair counted
    by one block, and the block's ARD moments from Σ_J of its shares of M·[𝟙, X̃] in the fixed order J)."""
    sk = sum(p[0] for p, side in zip(parts, sides) if side == 0)
    sr = sum(p[1] for p, side in zip(parts, sides) if side == 0)
    if not want_ard:
        return sk, sr, None
    from ..kernels.gaussian_process import ard_moments

    return sk, sr, ard_moments(v.contiguous(block * scale - shift), _ordered_sum(parts, sides, first=2))


def _column_sums(block):
    return block.sum(axis=0, dtype=np.float64)


def _carried(value):
    return value


def _diagonal_sum(block, kernel):
    return float(kernel.diagonal(block).sum(dtype=np.float64))


def _diagonal(block, kernel):
    return kernel.diagonal(block)


def _cross_columns(block, S, kernel):
    return kernel.cross(block, S)


def _rows_of(block, local):
    return v.contiguous(block[local])


def _apply(block, func, *args):
    return func(block, *args)


def _cross_product_block(block, fit_blocks, kernel, coefficients, promote, fit_dtype):
    """Σ_J K(block, X_J)·V_J in the order J = 0 … P−1: a chunk of new rows against a model fitted on the
    cluster (the kernel evaluated in the dtype kernels.KernelProduct chooses)."""
    dtype = fit_dtype if not promote else np.result_type(block.dtype, fit_dtype, np.float32)
    block = _check_block(np.asarray(block, dtype=dtype), "the new data")
    out = None
    for fit, V in zip(fit_blocks, coefficients):
        part = kernel.product(block, v.contiguous(np.asarray(fit, dtype=dtype)), V)
        out = part if out is None else out + part
    return out


def _finish(out, correction, out_dtype):
    out = out if correction is None else correction(out)
    return out if out_dtype is None else out.astype(out_dtype, copy=False)


def _map_rows(X, func):
    """func over the row chunks of the dask array X, a dask array (func's result for a row depends on that
    row alone; 1-D or 2-D)."""
    meta = func(np.zeros((1, X.shape[1]), dtype=X.dtype))
    if meta.ndim == 1:
        return X.map_blocks(func, dtype=meta.dtype, chunks=(X.chunks[0],), drop_axis=1)
    return X.map_blocks(func, dtype=meta.dtype, chunks=(X.chunks[0], (meta.shape[1],)))


# ------------------------------------------------------------------------------------------- samples

class DaskSamples(KernelViews):
    """A validated dask array of samples cut into row blocks, persisted on the workers: the row source and
    kernel source of a fit on the cluster (engines/base.py's Samples)."""

    holds_matrix = False

    def __init__(self, engine: DaskEngine, client, X):
        dask, da, distributed = dask_modules()
        self.engine = engine
        self._mean: np.ndarray | None = None  # the column means (a gradient pass centres the samples)
        self._local: Any = None
        X = check_dask_samples(X, "X")
        self.n, self.d = (int(s) for s in X.shape)
        self.dtype = np.dtype(X.dtype)
        X = X.rechunk({0: block_rows(self.n), 1: -1})
        self.client = client
        self.offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
        blocks = X.to_delayed().ravel().tolist()
        # One task per row block: contiguous, finite (ValueError from the worker otherwise).
        self.futures = client.compute([dask.delayed(_check_block, pure=True)(block, i)
                                       for i, block in enumerate(blocks)])
        self.array = da.concatenate([da.from_delayed(f, shape=(int(s), self.d), dtype=self.dtype)
                                     for f, s in zip(self.futures, X.chunks[0])])
        # Wait for them (without fetching them): a NaN, or a graph that cannot be computed, fails here and not
        # in the solver.
        distributed.wait(self.futures)
        for f in self.futures:
            if f.status == "error":
                f.result()

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.d)

    @property
    def values_per_row(self) -> float:
        return self.d  # dense row blocks

    @property
    def blocks(self) -> int:
        return len(self.futures)

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def bind(self, kernel):
        """Only fastkpca's native kernels run on the workers: any other kind is refused here, naming it."""
        if not kernel.distributed:
            raise ValueError(f"{kernel.label} cannot be evaluated on a Dask cluster: only fastkpca's native kernels "
                             "run on its workers; compute X first (X.compute()) to fit it in this process")
        return kernel

    def astype(self, dtype):
        return DaskSamples(self.engine, self.client, self.array.astype(dtype))

    def kernel_matrix(self, kernel, *, what: str, memory_limit: int, writable: bool = False, hint: str = "",
                      dtype=None):
        raise ValueError(f"{what} needs the whole {self.n}×{self.n} kernel matrix in this process, but X is a dask "
                         "array on a cluster; fit it with an exact iterative or Nyström solver, or compute X first")

    def rows(self, index) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        v.check_memory(index.shape[0] * self.d * self.dtype.itemsize, f"gathering {index.shape[0]} rows of X")
        order = np.argsort(index, kind="stable")
        sorted_index = index[order]
        out = np.empty((index.shape[0], self.d), dtype=self.dtype)
        which = np.searchsorted(self.offsets, sorted_index, side="right") - 1
        futures = []
        for p in np.unique(which):
            local = sorted_index[which == p] - self.offsets[p]
            futures.append(self.client.submit(_rows_of, self.futures[p], local, pure=False))
        done = 0
        for part in self.client.gather(futures):
            out[order[done:done + part.shape[0]]] = part
            done += part.shape[0]
        return out

    def carry(self, V: np.ndarray):
        """Futures of V's row blocks, each from a task that carries it: a task has lineage, so a lost
        worker's copy is recomputed (scattered data would be lost with it)."""
        V = np.asarray(V)
        return [self.client.submit(_carried, v.contiguous(V[self.offsets[p]:self.offsets[p + 1]]), pure=False)
                for p in range(self.blocks)]

    def _each_block(self, func, *args):
        """Futures of func(block_p, *args) for every row block p, in order."""
        carried = [self.client.submit(_carried, a, pure=False) if isinstance(a, np.ndarray) else a for a in args]
        return [self.client.submit(_apply, f, func, *carried, pure=False) for f in self.futures]

    def map(self, func, *args, rows=None) -> np.ndarray:
        """func(block, *args) on the workers (one thread each), gathered here in row order."""
        return np.concatenate(self.client.gather(self._each_block(_on_one_thread(func), *args)), axis=0)

    def reduce(self, func, *args, row_args=(), rows=None):
        """Σ func(block, *args, *pieces) over the row blocks by a fixed binary tree (the same sums on any
        cluster)."""
        func = _on_one_thread(func)
        carried = [self.client.submit(_carried, a, pure=False) if isinstance(a, np.ndarray) else a for a in args]
        parts = []
        for p, f in enumerate(self.futures):
            pieces = [None if a is None else v.contiguous(a[self.offsets[p]:self.offsets[p + 1]]) for a in row_args]
            parts.append(self.client.submit(_apply, f, func, *carried, *pieces, pure=False))
        while len(parts) > 1:
            paired = [self.client.submit(add, parts[i], parts[i + 1], pure=False) for i in range(0, len(parts) - 1, 2)]
            if len(parts) % 2:
                paired.append(parts[-1])
            parts = paired
        return parts[0].result()

    def plan(self, kernel, *, block_size: int, memory_limit, other_bytes: int = 0, storage: str = "auto"):
        """Which pairs of row blocks keep their tiles on which worker, within ``memory_limit`` bytes per
        worker (None: DEFAULT_WORKER_SHARE of each worker's own limit), less X and its share of a pass's
        blocks. In a fixed order, each pair is kept on the worker with the most room left, if it fits there
        (its tasks then run there; if that worker is lost, another recomputes the tiles)."""
        if storage not in ("auto", "cached", "matrix_free"):
            raise ValueError(f"storage={storage!r} is not available for a dask array X (its kernel lives on the "
                             "workers: 'auto', 'cached' or 'matrix_free')")
        return DistributedPlan.place(self, block_size, memory_limit, keep=storage != "matrix_free")

    def kernel_operator(self, kernel, plan, n_jobs=None, *, zero_diagonal: bool = False):
        return DistributedKernel(self, kernel, plan, zero_diagonal).operator(n_jobs)

    def columns(self, kernel):
        return DistributedColumns(self, kernel)

    def cross_product(self, kernel, V, correction=None, *, promote=False, out_dtype=None, memory_limit=None):
        return DaskKernelProduct(self, kernel, V, correction, promote=promote, out_dtype=out_dtype)

    def fitted(self, copy=False):
        return self.array  # never written to where it is kept: nothing to copy

    def gradient_traces(self, kernel, A, B):
        """The kernel's gradient traces by distributed passes: per radial term, one task per pair of row blocks
        (the native pass over W's block, W = ½(A Bᵀ + B Aᵀ) formed tile by tile from the factors' row blocks)
        and one per row block summing its shares in the fixed order; the sums over pairs and blocks are
        taken here in order, so the result does not depend on the cluster."""
        A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
        factors = [self.client.submit(_carried, (v.contiguous(A[lo:hi]), v.contiguous(B[lo:hi])), pure=False)
                   for lo, hi in zip(self.offsets[:-1], self.offsets[1:])]
        if self._mean is None:
            self._mean = self.reduce(_column_sums, rows=None) / self.n
        f, P = self.futures, self.blocks

        def radial_pass(kind, scale, want_ard):
            shift = self._mean * scale
            pairs = {(i, j): self.client.submit(_gradient_pair, f[i], None if i == j else f[j], factors[i],
                                                None if i == j else factors[j], kind, scale, shift, want_ard,
                                                pure=False, priority=i - j)
                     for i in range(P) for j in range(i + 1)}
            blocks = []
            for p in range(P):
                inputs = [pairs[(p, j)] if j <= p else pairs[(j, p)] for j in range(P)]
                sides = [0 if j <= p else 1 for j in range(P)]
                blocks.append(self.client.submit(_gradient_block, inputs, sides, f[p], scale, shift, want_ard,
                                                 pure=False))
            results = self.client.gather(blocks)
            moments = sum(r[2] for r in results) if want_ard else None  # in row-block order
            return math.fsum(r[0] for r in results), math.fsum(r[1] for r in results), moments

        return kernel.traces_from(radial_pass, *low_rank_weight_sums(A, B))

    def over(self, X_fit):
        return self

    def local(self):
        """The samples gathered into this process (after a memory check), as the in-process engine's; once."""
        if self._local is None:
            v.check_memory(self.n * self.d * self.dtype.itemsize, "gathering the dask array X into this process")
            self._local = LOCAL.samples(np.asarray(self.array.compute()))
        return self._local

    def info(self) -> dict:
        return {"engine": "dask", "n_workers": len(self.client.nthreads()), "row_blocks": self.blocks,
                "block_rows": int(self.sizes().max())}


# -------------------------------------------------------------------------------- distributed kernel

@dataclass(frozen=True)
class DistributedPlan(StoragePlan):
    """A StoragePlan whose kept tiles live on the workers: ``placed`` maps a pair (I, J) of row blocks to
    (worker address, bytes)."""

    placed: dict = field(default_factory=dict)
    pairs: int = 0

    @classmethod
    def place(cls, samples: DaskSamples, block_size: int, memory_limit, keep: bool = True) -> DistributedPlan:
        """The plan within ``memory_limit`` per worker (None: DEFAULT_WORKER_SHARE of its own); ``keep`` False:
        no tiles kept (matrix-free)."""
        P = samples.blocks
        pairs = [(i, j) for i in range(P) for j in range(i + 1)]
        sizes = samples.sizes()
        itemsize = samples.dtype.itemsize

        def pair_bytes(i, j):
            return int(_native.core.kernel_block_elements(int(sizes[i]), int(sizes[j]), i == j)) * itemsize

        try:
            workers = samples.client.scheduler_info(n_workers=-1)["workers"]
        except TypeError:  # distributed before 2025: every worker is listed
            workers = samples.client.scheduler_info()["workers"]
        pass_bytes = 4 * samples.n * block_size * 8  # V and W of a pass, and the pairs' contributions in flight
        room = {}
        for address, w in sorted(workers.items()):
            limit = int(w.get("memory_limit") or 0)
            if memory_limit is None and limit:
                own = int(DEFAULT_WORKER_SHARE * limit)
            elif memory_limit is None:
                own = 0
            else:
                own = v.memory_limit(memory_limit)
            if limit:
                own = min(own, limit)
            room[address] = max(0, own - samples.n * samples.d * itemsize - pass_bytes // max(1, len(workers))) \
                if keep else 0
        placed = {}
        for i, j in pairs:
            size = pair_bytes(i, j)
            address = max(room, key=lambda a: room[a]) if room else None
            if address is not None and size <= room[address]:
                placed[(i, j)] = (address, size)
                room[address] -= size
        kept = sum(size for _, size in placed.values())
        budget = kept + sum(room.values())
        total = sum(pair_bytes(i, j) for i, j in pairs)
        storage = ("distributed_packed" if len(placed) == len(pairs) else
                   "distributed_cached" if placed else "distributed_matrix_free")
        mib = 2**20
        reason = (f"{len(placed)} of {len(pairs)} pairs of row blocks ({kept // mib} of {total // mib} MiB of tiles) "
                  f"kept in the memory of {len(workers)} workers ({budget // mib} MiB allowed for them), the rest "
                  "recomputed on every pass")
        return cls(storage, 0, kept, budget, reason, placed=placed, pairs=len(pairs))


class DistributedKernel:
    """K = k(X, X) of persisted :class:`DaskSamples` as a distributed operator: ``matmat(V)`` is one pass,
    the tiles of the pairs ``plan`` places kept on their workers."""

    def __init__(self, samples: DaskSamples, kernel: Kernel, plan: DistributedPlan, zero_diagonal: bool = False):
        self.samples, self.plan, self.zero_diagonal = samples, plan, zero_diagonal
        self.client = samples.client
        self.kernel = kernel.on_threads(1)
        self.n = samples.n
        P = samples.blocks
        self.pairs = [(i, j) for i in range(P) for j in range(i + 1)]
        workers = self.client.nthreads()
        self.n_workers = len(workers)
        self.worker_threads = sum(workers.values())
        f = samples.futures
        self.kept = {(i, j): self.client.submit(_kept_tiles, f[i], None if i == j else f[j], self.kernel,
                                                zero_diagonal, pure=False, workers=[address], allow_other_workers=True)
                     for (i, j), (address, _) in plan.placed.items()}
        if self.kept:
            dask_modules()[2].wait(list(self.kept.values()))
        self.passes: list[dict] = []  # per pass: seconds, task seconds, bytes to and from this process
        self._row_sums: np.ndarray | None = None

    @property
    def storage(self) -> str:
        return self.plan.storage

    def matmat(self, V: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        client, f, offsets = self.client, self.samples.futures, self.samples.offsets
        b = V.shape[1]
        with_ones = self._row_sums is None
        if with_ones:  # the row sums (the centering means) ride along with the first pass: a column of ones
            V = np.concatenate([V, np.ones((self.n, 1))], axis=1)
        V = np.ascontiguousarray(V, dtype=np.float64)
        P = self.samples.blocks
        # The block goes out as tasks that carry it, not as scattered data: a task has lineage, so a lost
        # worker's copy is recomputed (scattered data would be lost with it).
        parts = self.samples.carry(V)
        products = {}
        for i, j in self.pairs:
            products[(i, j)] = client.submit(
                _pair_product, f[i], None if i == j else f[j], self.kernel, self.kept.get((i, j)), parts[i],
                None if i == j else parts[j], self.zero_diagonal, pure=False, priority=(i - j))
        sums = []
        for p in range(P):
            # Row block p: K_pJ·V_J from pairs (p, J), J <= p, and K_Jpᵀ·V_J from pairs (J, p), J > p.
            inputs = [products[(p, j)] if j <= p else products[(j, p)] for j in range(P)]
            sides = [0 if j <= p else 1 for j in range(P)]
            sums.append(client.submit(_block_sum, inputs, sides, pure=False))
        results = client.gather(sums)
        W = np.empty((self.n, V.shape[1]), order="F")
        task_seconds = 0.0
        for p, (block, seconds) in enumerate(results):
            W[offsets[p]:offsets[p + 1]] = block
            task_seconds += seconds
        self.passes.append({"seconds": time.perf_counter() - start, "task_seconds": task_seconds,
                            "driver_bytes": 2 * V.nbytes})
        if with_ones:
            self._row_sums = np.array(W[:, b])
            W = W[:, :b]
        return W

    def row_sums(self) -> np.ndarray:
        """K·1: from the first pass, or from a pass with ones if there was none."""
        if self._row_sums is None:
            self.matmat(np.zeros((self.n, 0)))
        assert self._row_sums is not None  # the pass above found them
        return self._row_sums

    def diagonal_sum(self) -> float:
        """trace(K), summed over the row blocks in order."""
        if self.zero_diagonal:
            return 0.0
        return float(math.fsum(self.samples.client.gather(self.samples._each_block(_diagonal_sum, self.kernel))))

    def diagonal(self) -> np.ndarray:
        """The diagonal of what the passes multiply by."""
        return np.zeros(self.n) if self.zero_diagonal else self.samples.map(_diagonal, self.kernel)

    def operator(self, n_jobs=None):
        """The kernel as a KernelOperator whose products are this object's passes: the native solvers run
        on it as on any storage.

        Its pass cost says N(N+1)/2 kernel entries whatever is kept, so the solvers choose the wide block of
        recomputed tiles: a distributed pass pays scheduling and moving the block once per pass, which a
        wide block amortises too, and the block width, hence the result, then does not depend on how much
        memory the cluster has."""
        from ..operators import python_operator  # SciPy's LinearOperator: in this process, not on the workers

        return python_operator(self.matmat, self.n, storage=self.storage, trace=self.diagonal_sum(),
                               kernel_entries=self.n * (self.n + 1) / 2, row_sums=self.row_sums, plan=self.plan,
                               n_jobs=n_jobs, release=self.release, details=self.info,
                               storage_dtype=self.samples.dtype, diagonal=self.diagonal)

    def info(self) -> dict:
        """What the passes cost: per pass its seconds, the task seconds (kernel work on the workers) and the
        bytes to and from this process."""
        seconds = [p["seconds"] for p in self.passes]
        return {**self.samples.info(), "worker_threads": self.worker_threads, "pair_tasks": len(self.pairs),
                "kept_pairs": len(self.plan.placed), "kept_bytes": self.plan.kernel_bytes,
                "distributed_passes": len(self.passes), "pass_seconds": seconds,
                "task_seconds": [p["task_seconds"] for p in self.passes],
                "driver_bytes_per_pass": self.passes[-1]["driver_bytes"] if self.passes else 0}

    def release(self):
        """Drop the kept tiles (the workers free them)."""
        for fut in self.kept.values():
            fut.release()
        self.kept = {}


class DistributedColumns:
    """The diagonal and columns K(X, X_S) of distributed samples, for randomly pivoted Cholesky
    (solvers.low_rank.rpcholesky): each call is one task per row block, gathered here."""

    def __init__(self, samples: DaskSamples, kernel: Kernel):
        self.samples, self.kernel = samples, kernel.on_threads(1)
        self.n, self.dtype = samples.n, samples.dtype

    def diagonal(self) -> np.ndarray:
        return self.samples.map(_diagonal, self.kernel)

    def columns(self, index, out):
        S = self.samples.rows(index)
        parts = self.samples.client.gather(self.samples._each_block(_cross_columns, S, self.kernel))
        np.concatenate(parts, axis=0, out=out)
        return out


# ------------------------------------------------------------------------------ products with new rows

class DaskKernelProduct:
    """The fitted row map ``x ↦ correction(K(x, X_fit)·V)`` of a model fitted on the cluster: V's row blocks
    stay on the workers for the model's life, and every chunk of new rows is one task that sums its
    products with the fit's row blocks in order. :meth:`localised` is the same map over X_fit gathered here
    (a kernels.KernelProduct), for a model pickled with it."""

    def __init__(self, samples: DaskSamples, kernel: Kernel, V: np.ndarray, correction=None, *,
                 promote=False, out_dtype=None):
        self.samples, self.kernel, self.correction = samples, kernel.on_threads(1), correction
        self.promote, self.out_dtype = promote, out_dtype
        self.V = np.ascontiguousarray(V, dtype=np.float64)
        self.coefficients = samples.carry(self.V)
        self._threads = kernel.threads

    @property
    def width(self) -> int:
        return self.V.shape[1]

    def on_dask(self, X):
        """A dask array of the rows of the dask array X (one task per chunk)."""
        import dask

        _, da, _ = dask_modules()
        blocks = X.to_delayed().ravel().tolist()
        pieces = [da.from_delayed(dask.delayed(_cross_product_block, pure=True)(
                      block, self.samples.futures, self.kernel, self.coefficients, self.promote, self.samples.dtype),
                      shape=(int(r), self.width), dtype=np.float64)
                  for block, r in zip(blocks, X.chunks[0])]
        out = da.concatenate(pieces, axis=0)
        if self.correction is None and self.out_dtype is None:
            return out
        return _map_rows(out, functools.partial(_finish, correction=self.correction, out_dtype=self.out_dtype))

    def __call__(self, X) -> np.ndarray:
        """The rows of a NumPy X, computed on the cluster."""
        _, da, _ = dask_modules()
        return self.on_dask(da.from_array(X, chunks=(block_rows(X.shape[0]), X.shape[1]))).compute()

    def localised(self):
        return self.kernel.on_threads(self._threads).cross_product(
            np.asarray(self.samples.array.compute()), self.V, self.correction, promote=self.promote,
            out_dtype=self.out_dtype)


# ------------------------------------------------------------------------------------------- engine

class DaskEngine:
    """The Dask engine (see engines/base.py for the protocol). Without a dask.distributed Client, a dask
    array is computed into this process (after a memory check) and fitted there."""

    name = "dask"

    def accepts(self, X) -> bool:
        return is_dask_array(X)

    def gather(self, a, name: str):
        if not is_dask_array(a):
            return a
        if any(math.isnan(c) for c in a.chunks[0]):
            raise ValueError(f"{name} is a dask array with unknown chunk sizes; call {name}.compute_chunk_sizes() "
                             "first")
        return a.compute()

    def fit_samples(self, estimator, X, y=None, *, targets=False, accept_sparse=False, copy=False, vector_input=True):
        X = check_dask_samples(X, "X")
        y = self.gather(y, "y")
        client = current_client()
        if client is None:
            v.check_memory(int(X.shape[0]) * int(X.shape[1]) * X.dtype.itemsize, "computing the dask array X here")
            return LOCAL.fit_samples(estimator, np.asarray(X.compute()), y, targets=targets,
                                     accept_sparse=accept_sparse, vector_input=vector_input)
        if targets:
            v.check_same_length(X, y)
            y = v.check_targets(y, int(X.shape[0]))
        samples = DaskSamples(self, client, X)
        # n_features_in_ as validate_data sets it (a dask array has no column names).
        estimator.n_features_in_ = samples.d
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        return samples, y

    def new_samples(self, estimator, X, *, accept_sparse=False, vector_input=True):
        X = check_dask_samples(X, "X")
        d = estimator.n_features_in_
        if X.shape[1] != d:
            raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting {d} features "
                             "as input")
        return X

    def apply(self, rowmap, X):
        if isinstance(rowmap, DaskKernelProduct):
            return rowmap.on_dask(X)
        return _map_rows(X, rowmap)

    def wrap(self, Z, X):
        _, da, _ = dask_modules()
        return da.from_array(Z, chunks=(X.chunks[0],) + tuple((s,) for s in Z.shape[1:]))

    def localise(self, state: dict) -> dict:
        """X_fit_ gathered here, the fitted products over it made local, and the in-process engine."""
        out = {}
        for key, value in state.items():
            if isinstance(value, DaskSamples):
                value = value.local()
            elif hasattr(value, "localised"):  # a fitted row map or solver state over the cluster's samples
                value = value.localised()
            elif is_dask_array(value):
                value = np.asarray(value.compute())
            elif value is self:
                value = LOCAL
            out[key] = value
        return out


if TYPE_CHECKING:  # mypy checks the engine and its samples against the protocols (engines/base.py)
    from .base import Engine, Samples

    def _engine(engine: DaskEngine) -> Engine:
        return engine

    def _samples(samples: DaskSamples) -> Samples:
        return samples
