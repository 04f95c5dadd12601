"""Kernel k-means' two solvers as peers behind one interface, picked once per fit by the library's cost model
(solvers/choice.py): the estimator hands them the samples, the kernel and the weights, and keeps what they return
— the labels, the objective, the row maps of predict and transform, and the fit's figures — without asking which
one it got. Both run the same seeding and Lloyd iteration (lloyd.py) on different operators:

- :class:`ExactKernelKMeans`: the kernel operator the engine plans within the memory limit (full, packed, cached,
  matrix-free, or a cluster's), one pass per iteration;
- :class:`NystromKernelKMeans`: rank-r Nyström features on RPCholesky landmarks (approximate), the iteration on
  the n × r features.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ...operators.storage import pass_bytes
from .. import choice, low_rank
from .lloyd import (CentroidDistances, FeatureOperator, NewDiagonal, kmeans_plus_plus, lloyd, local_trials,
                    random_centres, working_bytes)

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import ColumnSource, SolverSamples
    from .lloyd import LloydResult

__all__ = ["KMeansSettings", "KMeansFit", "make_solver", "ExactKernelKMeans", "NystromKernelKMeans"]


@dataclass(frozen=True)
class KMeansSettings:
    """What the estimator's parameters ask of the solvers (KernelKMeans's documentation says what each means)."""

    n_clusters: int
    #: "k-means++", "random", or the initial labels (validated).
    init: Any
    n_init: int
    max_iter: int
    tol: float
    #: Bytes the fit may use (parsed).
    limit: int
    #: The estimator's memory_limit as given (an engine's plan reads it in its own terms).
    memory_limit: Any = None
    #: Rank of the Nyström features (None: choice.KMEANS_NYSTROM_RANK, or every sample if fewer).
    n_components: int | None = None
    random_state: Any = None
    n_jobs: int | None = None


@dataclass
class KMeansFit:
    """A solver's answer: labels, inertia, iterations, the row maps of a prediction (``x ↦ −2 K(x, ·)·Z + ‖μ‖²``:
    the squared distances to the centroids less k(x, x)) and of k(x, x) (transform's), and the figures."""

    labels: np.ndarray
    inertia: float
    n_iter: int
    distances_map: Any
    diagonal_map: Any
    info: dict


def _report_nothing(stage: str, **info: Any) -> None:
    return None


def _starts(source: ColumnSource | FeatureOperator, diagonal: np.ndarray, w: np.ndarray, s: KMeansSettings
            ) -> tuple[list[np.ndarray], int]:
    """The initial labels of every start, and the kernel columns their seeding evaluated."""
    if not isinstance(s.init, str):
        return [np.asarray(s.init, dtype=np.int64)], 0
    rng = v.check_random_state(s.random_state)
    rngs = [np.random.RandomState(seed) for seed in rng.randint(np.iinfo(np.int32).max, size=s.n_init)]
    seed = kmeans_plus_plus if s.init == "k-means++" else random_centres
    starts = seed(source, diagonal, w, s.n_clusters, rngs)
    return [start.labels for start in starts], sum(start.columns for start in starts)


def _cluster(product: Callable[[np.ndarray], np.ndarray], source: ColumnSource | FeatureOperator,
             diagonal: np.ndarray, w: np.ndarray, s: KMeansSettings, report: Callable[..., None],
             progress: Callable[..., Any] | None) -> LloydResult:
    start = time.perf_counter()
    starts, columns = _starts(source, diagonal, w, s)
    seeding = time.perf_counter() - start
    report("init", seconds=seeding, starts=len(starts), kernel_columns=columns)
    start = time.perf_counter()
    result = lloyd(product, diagonal, w, s.n_clusters, starts, max_iter=s.max_iter, tol=s.tol,
                   seeded=isinstance(s.init, str), progress=progress)
    result.info.update(init_kernel_columns=columns, seconds={"init": seeding, "lloyd": time.perf_counter() - start})
    return result


def _start_count(settings: KMeansSettings) -> int:
    return settings.n_init if isinstance(settings.init, str) else 1


def seeding_bytes(n: int, k: int) -> int:
    """The seeding's kernel columns of one start (k-means++'s trials, or random's k centres) and their sums."""
    return 8 * n * (max(k, local_trials(k)) + 3)


def exact_bytes(n: int, k: int, starts: int) -> int:
    """What the exact solver holds beside the kernel operator's plan: the iteration's arrays, the pass's working
    memory (operators.pass_bytes) and the seeding's columns."""
    return working_bytes(n, k, starts) + pass_bytes(k * starts + 1, n) + seeding_bytes(n, k)


def nystrom_bytes(n: int, k: int, starts: int, rank: int) -> int:
    """The Nyström solver's: the n × rank float32 features, the iteration's arrays, the seeding's columns and the
    products' float64 chunks."""
    chunk = min(n, FeatureOperator.CHUNK_ROWS)
    return 4 * n * rank + working_bytes(n, k, starts) + seeding_bytes(n, k) + 2 * 8 * chunk * rank


class ExactKernelKMeans:
    """Kernel k-means on the kernel operator itself: one pass per iteration in the storage the limit allows."""

    name = "exact"

    def __init__(self, settings: KMeansSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, w: np.ndarray, *,
            report: Callable[..., None] = _report_nothing, progress: Callable[..., Any] | None = None) -> KMeansFit:
        s = self.settings
        n = samples.shape[0]
        columns = s.n_clusters * _start_count(s)
        start = time.perf_counter()
        plan = samples.kernel_of(kernel).plan(block_size=columns + 1, memory_limit=s.memory_limit,
                                              other_bytes=exact_bytes(n, s.n_clusters, _start_count(s)))
        source = samples.kernel_of(kernel).columns()
        diagonal = np.asarray(source.diagonal(), dtype=np.float64)
        with samples.kernel_of(kernel).operator(plan, s.n_jobs) as op:
            report("kernel", seconds=time.perf_counter() - start, storage=op.storage, kernel_bytes=op.kernel_bytes)
            result = _cluster(op.matmat, source, diagonal, w, s, report, progress)
            info = {**result.info, **op.info(), "memory_limit": s.limit}
        template = samples.rows(np.zeros(0, dtype=np.int64))
        distances = samples.kernel_of(kernel).cross_product(result.weights, CentroidDistances(result.norms),
                                                            memory_limit=s.limit)
        diagonal_map = None if kernel.precomputed else NewDiagonal(kernel, template)
        return KMeansFit(result.labels, result.inertia, result.n_iter, distances, diagonal_map, info)


class _FeatureNorms:
    """A fitted row map: ``x ↦ ‖φ̃(x)‖²`` for the Nyström features φ̃(x) = K(x, S)·T (k(x, x) of the
    approximation). Picklable."""

    def __init__(self, projection: low_rank.NystromProjection) -> None:
        self.projection = projection

    def on_threads(self, threads: int) -> _FeatureNorms:
        return _FeatureNorms(self.projection.on_threads(threads))

    def __call__(self, X: Any) -> np.ndarray:
        F = self.projection(X)
        return np.einsum("ij,ij->i", F, F)


class NystromKernelKMeans:
    """Kernel k-means on rank-r Nyström features Φ̃ = K(X, S)·T of RPCholesky landmarks S (K ≈ Φ̃Φ̃ᵀ): one
    streamed n × m pass for the features, then every iteration by the features alone. Approximate."""

    name = "nystrom"

    def __init__(self, settings: KMeansSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, w: np.ndarray, *,
            report: Callable[..., None] = _report_nothing, progress: Callable[..., Any] | None = None) -> KMeansFit:
        s = self.settings
        n = samples.shape[0]
        kernel = kernel.between_samples("use solver='nystrom'")
        m = min(n, s.n_components or choice.KMEANS_NYSTROM_RANK)
        needed = nystrom_bytes(n, s.n_clusters, _start_count(s), m)
        start = time.perf_counter()
        v.check_within(needed, s.limit,
                       f"solver='nystrom' with {m} landmarks ({n}×{m} float32 features and the iteration's arrays)")
        S, _, selection = low_rank.landmarks(samples, "rpcholesky", m, kernel, random_state=s.random_state,
                                             memory_limit=s.limit, name="n_components")
        T, rank = low_rank.landmark_whitening(S, kernel)
        rows = low_rank.stream_rows(n, m, samples.dtype.itemsize, s.limit, extra_bytes=needed,
                                    what=f"solver='nystrom' with {m} landmarks")
        # float32 features: their rounding (a relative 6e-8) is far below the approximation's own error
        F = low_rank.nystrom_project(samples, S, kernel, T, None, rows, out_dtype=np.float32)
        features = time.perf_counter() - start
        report("features", seconds=features, n_components=m, rank=rank)
        op = FeatureOperator(F)
        result = _cluster(op.__matmul__, op, op.diagonal(), w, s, report, progress)
        centroids = op.transpose_product(result.weights)  # r × k: the centroids in the features' coordinates
        distances = kernel.cross_product(S, T @ centroids, CentroidDistances(result.norms), memory_limit=s.limit)
        info = {**result.info, "n_components": m, "rank": rank, "landmark_selection": selection,
                "memory_limit": s.limit, "storage": "nystrom_features", "kernel_bytes": F.nbytes,
                "planned_bytes": needed}
        info["seconds"] = {"features": features, **info["seconds"]}
        return KMeansFit(result.labels, result.inertia, result.n_iter, distances,
                         _FeatureNorms(low_rank.NystromProjection(S, kernel, T, None)), info)


_SOLVERS: dict[str, type[ExactKernelKMeans] | type[NystromKernelKMeans]] = {
    "exact": ExactKernelKMeans, "nystrom": NystromKernelKMeans}


def make_solver(requested: str, samples: SolverSamples, kernel: Kernel, settings: KMeansSettings
                ) -> tuple[ExactKernelKMeans | NystromKernelKMeans, dict]:
    """(the solver of this fit, how it was chosen: ``solver_info_["choice"]``) for ``requested`` ("auto" or a
    solver's name), by the library's cost model (solvers/choice.py)."""
    n = samples.shape[0]
    k, starts = settings.n_clusters, _start_count(settings)
    rank = min(n, settings.n_components or choice.KMEANS_NYSTROM_RANK)
    picked = choice.kernel_kmeans(requested, n=n, d=choice.evaluated_features(kernel, samples), columns=k * starts,
                                  rank=rank, exact_bytes=exact_bytes(n, k, starts),
                                  nystrom_bytes=nystrom_bytes(n, k, starts, rank), memory_limit=settings.limit,
                                  approximable=not kernel.precomputed)
    return _SOLVERS[picked.picked](settings), picked.as_dict()
