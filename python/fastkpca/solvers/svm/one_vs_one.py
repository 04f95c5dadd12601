"""A multi-class fit as its class pairs' binary problems (LIBSVM's one-vs-one), all over one kernel column source
of the whole training set, and LIBSVM's packed layout of their coefficients.

Pair (i, j), i < j, in the order (0, 1), (0, 2), …, (1, 2), …: class i's samples (in their order) with y = +1,
then class j's with y = -1. Every pair reads the one column source of the training rows (its kernel is a
submatrix of theirs). Scheduling: pairs of fewer than ``PARALLEL_BELOW`` variables run side by side, one thread
each, sharing the memory limit; larger pairs one after the other with every thread inside the solve (its column
passes). Each solve keeps its own column cache: on these machines a column costs several times more to keep in
fresh memory than to evaluate again, so one cache shared across pairs (columns over every row, held from pair to
pair) was not built.

Packed layout (scikit-learn's ``dual_coef_``): the support vectors are every sample with a nonzero coefficient
in some pair, by class and, within a class, in training order; for pair (i, j) the coefficients of class i's
support vectors sit in row j - 1, those of class j's in row i.
"""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable

import numpy as np

from ... import _validation as v
from . import plan
from .dual import DualSolution, solve
from .formulation import Formulation
from .settings import DualSettings

if TYPE_CHECKING:
    from .fitted import ColumnSources

__all__ = ["PairModel", "Pairs", "pairs_of", "largest", "pack", "pair_weights", "votes", "ovr_decision",
           "decision_shape", "labels", "inlier"]

#: Pairs with fewer variables than this run side by side, one thread each.
PARALLEL_BELOW = 4000


@dataclasses.dataclass
class PairModel:
    """One pair's binary problem and its solution: ``samples`` (class i's, then class j's; indices into the
    training rows) and their coefficients in ``solution``."""

    i: int
    j: int
    samples: np.ndarray
    solution: DualSolution


def pairs_of(n_classes: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]


class Pairs:
    """A multi-class problem's class pairs over one kernel column source of every training row.

    Parameters
    ----------
    sources : fitted.ColumnSources
        The kernel columns over the training rows.
    labels : ndarray of int
        The class index of every training row; -1 for a row left out (weight <= 0).
    n_classes : int
    formulation : formulation.Formulation
        C-SVC's or ν-SVC's.
    upper : ndarray
        Per row: its bound C_t (``formulation.bounds``).
    """

    def __init__(self, sources: ColumnSources, labels: np.ndarray, n_classes: int, formulation: Formulation, *,
                 upper: np.ndarray) -> None:
        self.sources, self.labels, self.n_classes, self.formulation = sources, labels, n_classes, formulation
        members = [np.flatnonzero(labels == c) for c in range(n_classes)]
        self.tasks = []
        for i, j in pairs_of(n_classes):
            samples = np.concatenate((members[i], members[j]))
            y = np.concatenate((np.ones(members[i].size, np.int8), -np.ones(members[j].size, np.int8)))
            self.tasks.append((i, j, samples, y, upper[samples]))
        self.side_by_side = 1

    def _planned(self, settings: DualSettings, memory_limit: int, cache_size: float | None, solves: int,
                 rows: int) -> DualSettings:
        """The settings (the cache sized) for pairs of up to ``rows`` samples, ``solves`` side by side; each pair
        then chooses whole or batched for its own size within that cache (``sources.choice``)."""
        return plan.planned(self.sources, settings, rows, self.formulation.variables(rows), memory_limit, cache_size,
                            solves)[0]

    def fit(self, settings: DualSettings, memory_limit: int, cache_size: float | None,
            parallel_below: int = PARALLEL_BELOW) -> list[PairModel]:
        """Every pair's solution, in LIBSVM's order: pairs of fewer than ``parallel_below`` variables side by side
        (one thread each, the memory limit shared: as many side by side as it holds), then the others one by one
        with every thread."""
        threads = settings.threads if settings.threads > 0 else v.cpu_count()
        small = [k for k, t in enumerate(self.tasks) if t[2].size < parallel_below]
        results: list[PairModel | None] = [None] * len(self.tasks)
        workers = min(threads, len(small)) if threads > 1 and len(small) > 1 else 1
        rows = max((self.tasks[k][2].size for k in small), default=0)
        while workers > 1:
            try:
                shared = self._planned(settings, memory_limit, cache_size, workers, rows)
                break
            except MemoryError:
                workers -= 1
        self.side_by_side = workers
        if workers > 1:
            self._side_by_side(small, dataclasses.replace(shared, threads=1, progress=None), workers, results,
                               memory_limit)
        rest = [k for k in range(len(self.tasks)) if results[k] is None]
        if rest:
            alone = self._planned(settings, memory_limit, cache_size, 1, max(self.tasks[k][2].size for k in rest))
            for k in rest:
                results[k] = self._solve(self.tasks[k], alone, memory_limit, 1)
        return [r for r in results if r is not None]

    def _side_by_side(self, small: list[int], settings: DualSettings, workers: int, results: list,
                      memory_limit: int) -> None:
        """The small pairs on `workers` threads. Only the main thread sees Ctrl-C: the workers' solves stop at their
        next step once it is raised (their progress hook raises), and the pairs not started are cancelled."""
        stop = threading.Event()

        def halt(_figures: dict) -> None:
            if stop.is_set():
                raise KeyboardInterrupt

        watched = dataclasses.replace(settings, progress=halt)
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            for k, model in zip(small, pool.map(lambda k: self._solve(self.tasks[k], watched, memory_limit, workers),
                                                small)):
                results[k] = model
        except BaseException:
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def _solve(self, task: tuple[int, int, np.ndarray, np.ndarray, np.ndarray], settings: DualSettings,
               memory_limit: int, solves: int) -> PairModel:
        """One pair's solution; whole or batched chosen for its size within the cache ``settings`` planned (its
        record in the solution's ``stats["choice"]``)."""
        i, j, samples, y, bounds = task
        made = self.sources.choice(settings, samples.size, self.formulation.variables(samples.size), memory_limit,
                                   solves)
        return PairModel(i, j, samples, solve(self.sources.columns(made), self.formulation, samples, settings, y=y,
                                              upper=bounds, choice=made))

    def platt(self, settings: DualSettings, memory_limit: int, cache_size: float | None, seeds: Callable[[], int]
              ) -> tuple[np.ndarray, np.ndarray]:
        """Every pair's Platt sigmoid (A, B) from its 5-fold cross-validated decision values (LIBSVM's procedure;
        one seed per pair from ``seeds()``: probability.seed_source)."""
        from . import probability

        planned = self._planned(settings, memory_limit, cache_size, 1, max(t[2].size for t in self.tasks))
        prob_a, prob_b = [], []
        for _, _, samples, y, bounds in self.tasks:
            seed = seeds()
            # the folds' permutation from its own generator (PCG64: microseconds to seed, a RandomState 0.1 ms)
            decisions = probability.cross_validated_decisions(self.sources, self.formulation, samples, y, bounds,
                                                              planned, np.random.default_rng(seed), memory_limit)
            a, b = probability.sigmoid_fit(decisions, y > 0)
            prob_a.append(a)
            prob_b.append(b)
        return np.array(prob_a), np.array(prob_b)


def largest(pairs: list[PairModel]) -> PairModel:
    """The pair of the most samples (the first of them): the problem the memory plan sized the cache for."""
    return max(pairs, key=lambda pair: pair.samples.size)


def pack(pairs: list[PairModel], labels: np.ndarray, n_classes: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LIBSVM's layout of the pairs' solutions.

    Returns
    -------
    support : ndarray of int
        The support vectors' rows, by class then in training order.
    n_support : ndarray of int32 of shape (n_classes,)
    dual_coef : ndarray of shape (n_classes - 1, n_SV)
    rho : ndarray of shape (n_pairs,)
    """
    n = labels.shape[0]
    nonzero = np.zeros(n, dtype=bool)
    for pair in pairs:
        nonzero[pair.samples[pair.solution.coef != 0]] = True
    support = np.concatenate([np.flatnonzero(nonzero & (labels == c)) for c in range(n_classes)]).astype(np.int64)
    n_support = np.array([np.count_nonzero(nonzero & (labels == c)) for c in range(n_classes)], dtype=np.int32)
    position = np.full(n, -1, dtype=np.int64)
    position[support] = np.arange(support.size)
    dual_coef = np.zeros((max(n_classes - 1, 1), support.size))
    for pair in pairs:
        coef = np.zeros(n)
        coef[pair.samples] = pair.solution.coef
        of_i = support[labels[support] == pair.i]
        of_j = support[labels[support] == pair.j]
        dual_coef[pair.j - 1, position[of_i]] = coef[of_i]
        dual_coef[pair.i, position[of_j]] = coef[of_j]
    rho = np.array([pair.solution.rho for pair in pairs])
    return support, n_support, dual_coef, rho


def pair_weights(dual_coef: np.ndarray, n_support: np.ndarray) -> np.ndarray:
    """The coefficients of every pair's decision function over the support vectors: (n_SV, n_pairs), pair (i, j)
    nonzero only on classes i and j (the inverse of :func:`pack`'s layout)."""
    n_classes = n_support.shape[0]
    start = np.concatenate(([0], np.cumsum(n_support)))
    pairs = pairs_of(n_classes)
    V = np.zeros((dual_coef.shape[1], len(pairs)))
    for p, (i, j) in enumerate(pairs):
        V[start[i]:start[i + 1], p] = dual_coef[j - 1, start[i]:start[i + 1]]
        V[start[j]:start[j + 1], p] = dual_coef[i, start[j]:start[j + 1]]
    return V


def votes(decisions: np.ndarray, n_classes: int) -> np.ndarray:
    """LIBSVM's prediction: each pair votes for its first class where its decision value is > 0, else for its
    second; the class with the most votes, ties to the lower index."""
    count = np.zeros((decisions.shape[0], n_classes), dtype=np.intp)
    rows = np.arange(decisions.shape[0])
    for p, (i, j) in enumerate(pairs_of(n_classes)):
        first = decisions[:, p] > 0
        count[rows[first], i] += 1
        count[rows[~first], j] += 1
    return np.argmax(count, axis=1)


def ovr_decision(decisions: np.ndarray, n_classes: int) -> np.ndarray:
    """scikit-learn's one-vs-rest shape of one-vs-one decision values: each class's votes plus its summed
    confidences squashed into (-1/3, 1/3), so that they only break ties between equal votes."""
    n = decisions.shape[0]
    count = np.zeros((n, n_classes))
    confidence = np.zeros((n, n_classes))
    for p, (i, j) in enumerate(pairs_of(n_classes)):
        count[:, i] += decisions[:, p] >= 0  # scikit-learn's vote at exactly 0 (LIBSVM's goes to j)
        count[:, j] += decisions[:, p] < 0
        confidence[:, i] += decisions[:, p]
        confidence[:, j] -= decisions[:, p]
    return count + confidence / (3 * (np.abs(confidence) + 1))


# What a fitted model's row map finishes its decision values with (picklable, as functools.partial of these).

def decision_shape(decisions: np.ndarray, n_classes: int, shape: str) -> np.ndarray:
    """scikit-learn's ``decision_function``: for two classes one value per sample, positive for the second class;
    else every pair's values ("ovo") or their one-vs-rest shape ("ovr")."""
    if n_classes == 2:
        return -decisions.ravel()
    return ovr_decision(decisions, n_classes) if shape == "ovr" else decisions


def labels(decisions: np.ndarray, classes: np.ndarray, break_ties: bool, shape: str) -> np.ndarray:
    """The predicted classes: LIBSVM's vote, or with ``break_ties`` (one-vs-rest, more than two classes) the largest
    one-vs-rest value."""
    k = classes.shape[0]
    if break_ties and shape == "ovr" and k > 2:
        index = np.argmax(ovr_decision(decisions, k), axis=1)
    else:
        index = votes(decisions, k)
    return classes.take(np.asarray(index, dtype=np.intp))


def inlier(decisions: np.ndarray) -> np.ndarray:
    """A one-class model's prediction: +1 where the decision value is positive, else -1."""
    return np.where(decisions.ravel() > 0, 1, -1).astype(np.intp)
