"""The Dask engine: kernel passes, streamed low-rank passes and chunked predictions on a dask.distributed
cluster. Imported only when an estimator is given a dask array (dask is an optional extra).

Exact solvers (KernelPCA's block Lanczos, KernelRidge's conjugate gradients) run on the driver, natively,
through a Python-side operator (``_core.python_operator``) whose every product with K is one distributed
computation (:class:`DistributedKernel`):

- X is cut into row panels X_0 … X_{P−1} of :func:`panel_rows` rows, a function of N alone, so the result
  does not depend on the cluster; the panels are persisted on the workers.
- Each pair I >= J of panels is one task: the block K_IJ = k(X_I, X_J) gives both K_IJ·V_J (rows I) and
  K_IJᵀ·V_I (rows J), each tile evaluated once (kernel_block.hpp); a diagonal pair uses the symmetric
  pass. A distributed pass evaluates N²/2 kernel entries, as a single-machine matrix-free pass does.
- Panel I's rows of K·V are the sum of its P contributions in the fixed order J = 0 … P−1, by one task.
  Every work unit and every sum is fixed, so the products are the same bit for bit on any number of
  workers or threads.
- Pairs whose tiles fit the workers' memory keep them there (futures held by the driver); the others are
  recomputed on every pass. Kept and recomputed tiles are the same numbers, so caching never changes a
  result either.

Worker failure: every piece of data a pass reads is a task with lineage (the panels of X from the user's
graph, the kept tiles from the panels, the block V from a task that carries it), so Dask recomputes what
a lost worker held and retries its tasks; the pass returns the same numbers.

Low-rank fits (Nyström) stream over the panels as map/reduce: one task per panel computes its moments,
and a fixed binary tree sums them. Predictions of a dask array are dask arrays, one task per chunk.
"""

from __future__ import annotations

import math
import time

import numpy as np

from . import _native
from . import _validation as v
from .kernels import NativeKernel

#: Panels per pass at most (the tasks of a pass grow as P²/2), and the rows a panel aims at.
MAX_PANELS = 64
TARGET_PANEL_ROWS = 6144
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


def panel_rows(n: int) -> int:
    """Rows per panel: about TARGET_PANEL_ROWS, at most MAX_PANELS panels, a multiple of the 256-row tile,
    and equal panels (but the last). A function of n alone."""
    tile = int(_native.core.TILE)
    panels = min(MAX_PANELS, max(1, round(n / TARGET_PANEL_ROWS)))
    rows = -(-n // panels)
    return int(-(-rows // tile) * tile)


def one_thread(kernel: NativeKernel) -> NativeKernel:
    """The kernel as a task evaluates it: on one thread (a worker runs as many tasks at once as it has
    threads)."""
    return NativeKernel(kernel.name, kernel.gamma, kernel.degree, kernel.coef0, 1)


# ----------------------------------------------------------------------------------- worker functions
# Module-level functions, so the workers import them from fastkpca (which must be installed there).

def _check_panel(panel: np.ndarray, where) -> np.ndarray:
    """A panel of X, checked finite on the worker that holds it (the one pass over the values)."""
    panel = np.ascontiguousarray(panel)
    if not np.isfinite(panel).all():
        what = "NaN" if np.isnan(panel).any() else "infinity"
        where = f"panel {where}" if isinstance(where, int) else where
        raise ValueError(f"X contains {what} (in rows of {where}); fastkpca needs finite values")
    return panel


def _panels_of(a, b, kernel):
    return _native.core.kernel_block_panels(a, b, kernel.name, kernel.gamma, kernel.degree, kernel.coef0, 1)


def _pair_product(a, b, kernel, panels, va, vb):
    """(K_ab·v_b, K_abᵀ·v_a, seconds) for a cross pair; (K_aa·v_a, None, seconds) for a diagonal one."""
    start = time.perf_counter()
    # One work unit on one thread: the transposed side needs one buffer of b's rows, not sixteen.
    wa, wb = _native.core.kernel_block_product(a, b, kernel.name, kernel.gamma, kernel.degree, kernel.coef0,
                                               panels, va, vb, 1, 1)
    return wa, wb, time.perf_counter() - start


def _panel_sum(parts, sides):
    """(Σ_j parts[j][sides[j]] in the order given (the fixed order of a pass), task seconds): the seconds of
    the pairs this sum takes their row side from (each pair is counted by one sum), and its own."""
    start = time.perf_counter()
    total = np.array(parts[0][sides[0]], copy=True)
    for part, side in zip(parts[1:], sides[1:]):
        total += part[side]
    return total, sum(p[2] for p, side in zip(parts, sides) if side == 0) + time.perf_counter() - start


def _carried(block):
    return block


def _diagonal_sum(panel, kernel):
    return float(kernel.diagonal(panel).sum(dtype=np.float64))


def _cross_columns(panel, S, kernel):
    return kernel.cross(panel, S)


def _moments(panel, S, kernel, weights, targets):
    """(CᵀWC, CᵀW1, CᵀWY or None) of one panel, C = K(panel, S) (low_rank.nystrom_moments's chunk step)."""
    from . import low_rank

    return low_rank.nystrom_moments(panel, S, kernel, panel.shape[0], weights=weights, targets=targets)


def _add_moments(a, b):
    return tuple(None if x is None else x + y for x, y in zip(a, b))


def _cross_product_block(block, fit_panels, kernel, coefficients, correction, dtype):
    """Σ_J K(block, X_J)·V_J in the order J = 0 … P−1 (both sides in ``dtype``), then
    ``correction(block's result)`` if given."""
    block = _check_panel(np.asarray(block, dtype=dtype), "of the new data")
    out = None
    for panel, V in zip(fit_panels, coefficients):
        part = kernel.product(block, np.ascontiguousarray(panel, dtype=dtype), V)
        out = part if out is None else out + part
    return out if correction is None else correction(out)


# ------------------------------------------------------------------------------------------- samples

class Samples:
    """A validated dask array of samples cut into panels, persisted on the workers, and its panels'
    futures in row order."""

    def __init__(self, client, X):
        dask, da, distributed = dask_modules()
        X = v.check_dask_samples(X, "X")
        self.n, self.d = (int(s) for s in X.shape)
        self.dtype = np.dtype(X.dtype)
        rows = panel_rows(self.n)
        X = X.rechunk({0: rows, 1: -1})
        self.client = client
        self.offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
        blocks = X.to_delayed().ravel().tolist()
        # One task per panel: contiguous, finite (ValueError from the worker otherwise).
        self.futures = client.compute([dask.delayed(_check_panel, pure=True)(block, i)
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
    def panels(self) -> int:
        return len(self.futures)

    def sizes(self):
        return np.diff(self.offsets)

    def rows(self, index: np.ndarray) -> np.ndarray:
        """X[index] on the driver (index: int array, any order)."""
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

    @property
    def shape(self):
        return (self.n, self.d)

    def info(self) -> dict:
        return {"engine": "dask", "n_workers": len(self.client.nthreads()), "panels": self.panels,
                "panel_rows": int(self.sizes().max())}

    def carry(self, V: np.ndarray):
        """Futures of V's row panels, each from a task that carries its panel: a task has lineage, so a lost
        worker's copy is recomputed (scattered data would be lost with it)."""
        V = np.asarray(V)
        return [self.client.submit(_carried, np.ascontiguousarray(V[self.offsets[p]:self.offsets[p + 1]]), pure=False)
                for p in range(self.panels)]

    def map_panels(self, func, *args):
        """[func(panel_p, *args) for p] on the workers, gathered in panel order."""
        return self.client.gather([self.client.submit(func, f, *args, pure=False) for f in self.futures])


def _rows_of(panel, local):
    return np.ascontiguousarray(panel[local])



# -------------------------------------------------------------------------------- distributed kernel

class DistributedKernel:
    """K = k(X, X) of persisted :class:`Samples` as a distributed operator: ``matmat(V)`` is one pass.

    Parameters
    ----------
    samples : Samples
    kernel : NativeKernel
    worker_bytes : int or None
        Kernel tiles each worker may keep (None: DEFAULT_WORKER_SHARE of its memory limit), less X and
        its share of a pass's blocks. Pairs are kept, in a fixed order, each on the worker with the most
        room left, while one has room for it.
    block_size : int
        The widest block the solver will multiply (for the memory a pass needs on a worker).
    """

    def __init__(self, samples: Samples, kernel: NativeKernel, *, worker_bytes=None, block_size: int = 32):
        self.samples = samples
        self.client = samples.client
        self.kernel = one_thread(kernel)
        self.n = samples.n
        P = samples.panels
        self.pairs = [(i, j) for i in range(P) for j in range(i + 1)]
        sizes = samples.sizes()
        itemsize = samples.dtype.itemsize
        tile = int(_native.core.TILE)

        def tiles(r):
            return -(-int(r) // tile)

        def pair_bytes(i, j):
            ti, tj = tiles(sizes[i]), tiles(sizes[j])
            return (ti * (ti + 1) // 2 if i == j else ti * tj) * tile * tile * itemsize

        try:
            workers = self.client.scheduler_info(n_workers=-1)["workers"]
        except TypeError:  # distributed before 2025: every worker is listed
            workers = self.client.scheduler_info()["workers"]
        self.n_workers = len(workers)
        self.worker_threads = sum(int(w.get("nthreads", 1)) for w in workers.values())
        pass_bytes = 4 * self.n * block_size * 8  # V and W of a pass, and the pairs' contributions in flight
        room = {}
        for address, w in sorted(workers.items()):
            limit = int(w.get("memory_limit") or 0)
            own = v.memory_limit(worker_bytes) if worker_bytes is not None else int(DEFAULT_WORKER_SHARE * limit)
            if limit:
                own = min(own, limit)
            room[address] = max(0, own - samples.n * samples.d * itemsize - pass_bytes // max(1, self.n_workers))
        # In a fixed order, each pair is kept on the worker with the most room left, if it fits there; its
        # tasks then run there (if that worker is lost, another recomputes the tiles).
        placed = {}
        for i, j in self.pairs:
            size = pair_bytes(i, j)
            address = max(room, key=lambda a: room[a]) if room else None
            if address is not None and size <= room[address]:
                placed[(i, j)] = (address, size)
                room[address] -= size
        self.kept_bytes = sum(size for _, size in placed.values())
        self.budget_bytes = self.kept_bytes + sum(room.values())
        self.total_bytes = sum(pair_bytes(i, j) for i, j in self.pairs)
        f = samples.futures
        self.panels = {(i, j): self.client.submit(_panels_of, f[i], None if i == j else f[j], self.kernel, pure=False,
                                                  workers=[address], allow_other_workers=True)
                       for (i, j), (address, _) in placed.items()}
        if self.panels:
            dask_modules()[2].wait(list(self.panels.values()))
        self.passes = []  # per pass: seconds, task seconds, bytes to and from the driver
        self._row_sums = None

    @property
    def storage(self) -> str:
        if len(self.panels) == len(self.pairs):
            return "distributed_packed"
        return "distributed_cached" if self.panels else "distributed_matrix_free"

    def matmat(self, V: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        client, f, offsets = self.client, self.samples.futures, self.samples.offsets
        b = V.shape[1]
        with_ones = self._row_sums is None
        if with_ones:  # the row sums (the centering means) ride along with the first pass: a column of ones
            V = np.concatenate([V, np.ones((self.n, 1))], axis=1)
        V = np.ascontiguousarray(V, dtype=np.float64)
        P = self.samples.panels
        # The block goes out as tasks that carry it, not as scattered data: a task has lineage, so a lost
        # worker's copy is recomputed (scattered data would be lost with it).
        parts = self.samples.carry(V)
        products = {}
        for i, j in self.pairs:
            products[(i, j)] = client.submit(
                _pair_product, f[i], None if i == j else f[j], self.kernel, self.panels.get((i, j)), parts[i],
                None if i == j else parts[j], pure=False, priority=(i - j))
        sums = []
        for p in range(P):
            # Row panel p: K_pJ·V_J from pairs (p, J), J <= p, and K_Jpᵀ·V_J from pairs (J, p), J > p.
            inputs = [products[(p, j)] if j <= p else products[(j, p)] for j in range(P)]
            sides = [0 if j <= p else 1 for j in range(P)]
            sums.append(client.submit(_panel_sum, inputs, sides, pure=False))
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
        return self._row_sums

    def diagonal_sum(self) -> float:
        """trace(K), summed over the panels in order."""
        return float(math.fsum(self.samples.map_panels(_diagonal_sum, self.kernel)))

    def operator(self, threads: int):
        """The kernel as a KernelOperator whose products are this object's passes: the native solvers run
        on it as on any storage.

        Its pass cost says N(N+1)/2 kernel entries whatever is kept, so the solvers choose the wide block of
        recomputed tiles: a distributed pass pays scheduling and moving the block once per pass, which a
        wide block amortises too, and the block width, hence the result, then does not depend on how much
        memory the cluster has."""
        from . import operators

        native = _native.core.python_operator(self.matmat, self.n, storage=self.storage, trace=self.diagonal_sum(),
                                              kernel_entries=self.n * (self.n + 1) / 2, bytes_read=0.0,
                                              row_sums=self.row_sums)
        mib = 2**20
        reason = (f"{len(self.panels)} of {len(self.pairs)} panel pairs ({self.kept_bytes // mib} of "
                  f"{self.total_bytes // mib} MiB of tiles) kept in the memory of {self.n_workers} workers "
                  f"({self.budget_bytes // mib} MiB allowed for them), the rest recomputed on every pass")
        plan = operators.StoragePlan(self.storage, 0, self.kept_bytes, self.budget_bytes, reason)
        return operators.KernelOperator(native, n_jobs=threads or None, plan=plan, _keep=None)

    def info(self) -> dict:
        """What the passes cost: per pass its seconds, the task seconds (kernel work on the workers) and the
        bytes to and from the driver."""
        seconds = [p["seconds"] for p in self.passes]
        return {"engine": "dask", "n_workers": self.n_workers, "worker_threads": self.worker_threads,
                "panels": self.samples.panels, "panel_rows": int(self.samples.sizes().max()),
                "pair_tasks": len(self.pairs), "kept_pairs": len(self.panels), "kept_bytes": self.kept_bytes,
                "distributed_passes": len(self.passes), "pass_seconds": seconds,
                "task_seconds": [p["task_seconds"] for p in self.passes],
                "driver_bytes_per_pass": self.passes[-1]["driver_bytes"] if self.passes else 0}

    def release(self):
        """Drop the kept tiles (the workers free them)."""
        for fut in self.panels.values():
            fut.release()
        self.panels = {}


# -------------------------------------------------------------------------------- streamed low rank

def _tree_sum(client, futures, add):
    """Σ of the futures' values by a fixed binary tree over their order (the same sums on any cluster)."""
    while len(futures) > 1:
        paired = [client.submit(add, futures[i], futures[i + 1], pure=False) for i in range(0, len(futures) - 1, 2)]
        if len(futures) % 2:
            paired.append(futures[-1])
        futures = paired
    return futures[0].result()


def nystrom_moments(samples: Samples, S: np.ndarray, kernel: NativeKernel, *, weights=None, targets=None):
    """low_rank.nystrom_moments over distributed samples: one task per panel, a fixed tree of sums."""
    client, offsets = samples.client, samples.offsets
    kernel = one_thread(kernel)
    S_future = client.submit(_carried, S, pure=False)

    def piece(a, p):
        return None if a is None else np.ascontiguousarray(a[offsets[p]:offsets[p + 1]])

    parts = [client.submit(_moments, f, S_future, kernel, piece(weights, p), piece(targets, p), pure=False)
             for p, f in enumerate(samples.futures)]
    total = _tree_sum(client, parts, _add_moments)
    return total[:2] if targets is None else total


def _project(panel, S, kernel, P, offset):
    from . import low_rank

    return low_rank.nystrom_project(panel, S, kernel, P, offset, panel.shape[0])


def nystrom_project(samples: Samples, S, kernel, P, offset) -> np.ndarray:
    """K(X, S)·P − offset for distributed samples, gathered on the driver in row order."""
    client = samples.client
    carried = [client.submit(_carried, a, pure=False) for a in (S, P)]
    kernel = one_thread(kernel)
    parts = client.gather([client.submit(_project, f, carried[0], kernel, carried[1], offset, pure=False)
                           for f in samples.futures])
    return np.concatenate(parts, axis=0)


class DistributedColumns:
    """The diagonal and columns K(X, X_S) of distributed samples, for randomly pivoted Cholesky
    (low_rank.rpcholesky): each call is one task per panel, gathered on the driver."""

    def __init__(self, samples: Samples, kernel: NativeKernel):
        self.samples, self.kernel = samples, one_thread(kernel)
        self.n, self.dtype = samples.n, samples.dtype

    def diagonal(self) -> np.ndarray:
        return np.concatenate(self.samples.map_panels(_panel_diagonal, self.kernel))

    def columns(self, index, out):
        S = self.samples.rows(index)
        parts = self.samples.map_panels(_cross_columns, S, self.kernel)
        np.concatenate(parts, axis=0, out=out)
        return out


def _panel_diagonal(panel, kernel):
    return kernel.diagonal(panel)


# ------------------------------------------------------------------------------ products with new rows

class CrossProduct:
    """K(X_new, X_fit)·V, optionally followed by a row-wise correction, for a model fitted on distributed
    samples: V's panels stay on the workers for the model's life, and every chunk of X_new is one task
    that sums its products with the fit panels in panel order."""

    def __init__(self, samples: Samples, kernel: NativeKernel, V: np.ndarray, correction=None):
        self.samples, self.kernel, self.correction = samples, one_thread(kernel), correction
        self.width = V.shape[1]
        self.coefficients = samples.carry(np.ascontiguousarray(V, dtype=np.float64))

    def __call__(self, X, dtype):
        """A dask array (chunks of X's rows) for a dask X; a NumPy array, computed on the cluster, for a
        NumPy X. The kernel is evaluated in ``dtype``."""
        import dask

        _, da, _ = dask_modules()
        local = not v.is_dask_array(X)
        if local:
            X = da.from_array(X, chunks=(panel_rows(X.shape[0]), X.shape[1]))
        blocks = X.to_delayed().ravel().tolist()
        pieces = [da.from_delayed(dask.delayed(_cross_product_block, pure=True)(
                      block, self.samples.futures, self.kernel, self.coefficients, self.correction, dtype),
                      shape=(int(r), self.width), dtype=np.float64)
                  for block, r in zip(blocks, X.chunks[0])]
        out = da.concatenate(pieces, axis=0)
        return out.compute() if local else out


# -------------------------------------------------------------------------------------- estimators

def local_array(X, name: str = "X") -> np.ndarray:
    """A dask array computed into this process (no distributed Client: the fit runs here, natively), after
    checking that it fits in memory."""
    X = v.check_dask_samples(X, name)
    v.check_memory(int(X.shape[0]) * int(X.shape[1]) * X.dtype.itemsize, f"computing the dask array {name} locally")
    return np.asarray(X.compute())


def fitted_features(est, d: int) -> None:
    """n_features_in_ for a fit on a dask array (which has no column names), as validate_data sets it."""
    est.n_features_in_ = d
    if hasattr(est, "feature_names_in_"):
        del est.feature_names_in_


def samples_or_local(X):
    """Samples on the cluster of the current Client, or, without one, X computed into this process."""
    client = current_client()
    return local_array(X) if client is None else Samples(client, X)


def local_targets(y, name: str = "y"):
    """Targets or weights (NumPy, lists or dask arrays) on the driver, as NumPy."""
    if y is None or np.isscalar(y):
        return y
    if v.is_dask_array(y):
        if any(math.isnan(c) for c in y.chunks[0]):
            raise ValueError(f"{name} is a dask array with unknown chunk sizes; call {name}.compute_chunk_sizes() "
                             "first")
        y = y.compute()
    return y


def fit_kernel_pca(est, X, limit):
    """KernelPCA.fit for a dask array X: exact block Lanczos on the distributed kernel, or the Nyström
    approximation streamed over the panels."""
    client = current_client()
    if client is None:
        return est.fit(local_array(X))
    from . import linalg

    v.check_native_kernel(est.kernel, "KernelPCA with a dask array X")
    if est.eigen_solver not in ("auto", "lanczos", "nystrom"):
        raise ValueError(f"eigen_solver={est.eigen_solver!r} needs the whole kernel matrix in one process; with a "
                         "dask array X use 'auto' or 'lanczos' (exact) or 'nystrom'")
    if est.n_components is None and est.eigen_solver != "nystrom":
        raise ValueError("n_components must be given with a dask array X (all N components would need the dense "
                         "N×N eigendecomposition); or use eigen_solver='nystrom'")
    if est.fit_inverse_transform:
        raise ValueError("fit_inverse_transform=True is not available with a dask array X")
    samples = Samples(client, X)
    n, d = samples.shape
    fitted_features(est, d)
    est.gamma_ = 1 / d if est.gamma is None else est.gamma
    n_components = est._n_components(n)
    est._nystrom = est._distributed = None
    if est.eigen_solver == "nystrom":
        est._fit_nystrom(samples, n_components, limit)
        est.solver_info_.update(samples.info())
        return est
    threads = v.n_threads(est.n_jobs)
    kernel = NativeKernel.resolve(est.kernel, est.gamma_, est.degree, est.coef0, d)
    start = time.perf_counter()
    dist = DistributedKernel(samples, kernel, worker_bytes=est.memory_limit,
                             block_size=linalg.default_block_size(n_components, n, compute_bound=True))
    try:
        op = dist.operator(threads)
        est._report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage=op.storage,
                    kernel_bytes=dist.kept_bytes)
        values, vectors = est._fit_operator(op, n_components, limit)
    finally:
        dist.release()  # the kept tiles serve the passes only
    est._finish_eigenpairs(values.astype(samples.dtype), vectors.astype(samples.dtype))
    est.solver_info_.update(dist.info())
    est.solver_info_["kernel_bytes"] = dist.kept_bytes
    est.X_fit_ = samples.array
    V, centering = est._cross_centering(est._projection())
    est._distributed = CrossProduct(samples, kernel, V, centering)
    return est


def fit_kernel_ridge(est, X, y, sample_weight, limit):
    """KernelRidge.fit for a dask array X: conjugate gradients on the distributed kernel (solver "auto" or
    "cg"), or the Nyström solver streamed over the panels."""
    client = current_client()
    X = v.check_dask_samples(X, "X")
    y = local_targets(y, "y")
    sample_weight = local_targets(sample_weight, "sample_weight")
    if client is None:
        return est.fit(local_array(X), y, sample_weight)
    v.check_native_kernel(est.kernel, "KernelRidge with a dask array X")
    if est.solver not in ("auto", "cg", "nystrom"):
        raise ValueError(f"solver={est.solver!r} needs the whole kernel matrix in one process; with a dask array X "
                         "use 'auto' or 'cg' (exact) or 'nystrom'")
    v.check_same_length(X, y)
    samples = Samples(client, X)
    n, d = samples.shape
    Y = v.check_targets(y, n)
    ravel = np.ndim(y) == 1
    alphas = v.check_alphas(est.alpha, Y.shape[1])
    root_w = v.sample_weight_root(sample_weight, n)
    fitted_features(est, d)
    est._distributed = None
    start = time.perf_counter()
    kernel = NativeKernel.resolve(est.kernel, est.gamma, est.degree, est.coef0, d)
    if est.solver == "nystrom":
        dual, info, X_fit = est._fit_nystrom(samples, Y, alphas, root_w, limit)
        info.update(samples.info())
        solver = "nystrom"
    else:
        solver = "cg"
        threads = v.n_threads(est.n_jobs)
        dist = DistributedKernel(samples, kernel, worker_bytes=est.memory_limit, block_size=Y.shape[1])
        try:
            op = dist.operator(threads)
            stages = {"kernel": time.perf_counter() - start}
            est._report("kernel", seconds=stages["kernel"], storage=op.storage, kernel_bytes=dist.kept_bytes)
            # The rank of recomputed storage whatever is kept, so the fit does not depend on the cluster's memory.
            rank = est._preconditioner_rank(n, limit, stored=False)
            from .kernel_ridge import rpcholesky_block

            dual, info = est._solve_cg(op, (DistributedColumns(samples, kernel), None), Y, alphas, root_w, limit,
                                       rank, rpcholesky_block(n), stages)
        finally:
            dist.release()  # the kept tiles serve the passes only
        info.update(dist.info())
        X_fit = samples.array
        est._distributed = CrossProduct(samples, kernel, dual)
    return est._fitted(dual, info, X_fit, solver, ravel, start)


def picklable_state(state: dict) -> dict:
    """An estimator's state for pickling: a model fitted on the cluster becomes a local one (its training
    panels gathered into X_fit_; transform and predict then run in the unpickling process), since what
    lives on the cluster cannot outlive the client."""
    if state.get("_distributed") is None:
        return state
    state = dict(state)
    state["X_fit_"] = np.asarray(state["X_fit_"].compute())
    state["_distributed"] = None
    return state


def as_dask(Z: np.ndarray, X):
    """A NumPy result for the rows of the dask array X, as a dask array chunked like X's rows."""
    _, da, _ = dask_modules()
    return da.from_array(Z, chunks=(X.chunks[0],) + tuple((s,) for s in Z.shape[1:]))


def apply_model(est, X, method: str):
    """``est.transform`` / ``est.predict`` of X for a model fitted on the cluster (its products with the
    training panels run there), or of a dask X for a model fitted in this process (one task per chunk, the
    model shipped with the graph). A dask X gives a dask array, a NumPy X a NumPy array."""
    product = getattr(est, "_distributed", None)
    d = est.n_features_in_
    if product is not None:
        X = v.check_dask_samples(X, "X") if v.is_dask_array(X) else v.check_samples(X, "X")
        if X.shape[1] != d:
            raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting {d} features as "
                             "input")
        fit = product.samples.dtype
        # As in this process: KernelPCA evaluates in the fit's dtype, KernelRidge in float32 only when both
        # sides are float32.
        dtype = fit if method == "transform" else np.result_type(X.dtype, fit)
        out = product(X, dtype)
        if method == "predict" and np.ndim(est.dual_coef_) == 1:
            out = out[:, 0]
        return out.astype(est.eigenvectors_.dtype) if method == "transform" else out
    X = v.check_dask_samples(X, "X")
    if X.shape[1] != d:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting {d} features as input")
    func = getattr(est, method)
    meta = func(np.zeros((1, d), dtype=X.dtype))
    if meta.ndim == 1:
        return X.map_blocks(func, dtype=meta.dtype, chunks=(X.chunks[0],), drop_axis=1)
    return X.map_blocks(func, dtype=meta.dtype, chunks=(X.chunks[0], (meta.shape[1],)))
