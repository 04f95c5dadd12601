"""Kernel ridge regression's three solvers as peers behind one interface, picked once per fit by the library's
cost model (solvers/choice.py): the estimator hands them the samples, the kernel and the targets, and keeps what
they return — the dual coefficients, the points a prediction multiplies them with, and the fit's figures —
without asking which one it got.

- :class:`CholeskyRidge`: the kernel matrix factored in place (systems.solve_cholesky);
- :class:`ConjugateGradientRidge`: preconditioned CG on the kernel operator the engine plans within the memory
  limit (systems.solve_cg), in mixed precision beside a float32 operator where that pays;
- :class:`NystromRidge`: Falkon's restricted problem on landmarks (systems.solve_nystrom), approximate.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import choice, low_rank
from . import systems

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples

__all__ = ["RidgeSettings", "RidgeFit", "make_solver", "CholeskyRidge", "ConjugateGradientRidge", "NystromRidge"]


@dataclass(frozen=True)
class RidgeSettings:
    """What the estimator's parameters ask of the solvers (KernelRidge's documentation says what each means)."""

    #: Bytes the fit may use (parsed).
    limit: int
    #: The estimator's memory_limit as given (an engine's plan reads it in its own terms: per worker on Dask).
    memory_limit: Any = None
    tol: float | None = None
    max_iter: int | None = None
    preconditioner_rank: int | None = None
    preconditioner_dtype: str = "auto"
    precision: str = "auto"
    n_landmarks: int | None = None
    landmarks: Any = "rpcholesky"
    random_state: Any = None
    n_jobs: int | None = None


@dataclass
class RidgeFit:
    """A solver's answer: β, the points K(·, centres) is evaluated at for a prediction, the row map of a
    prediction, and the fit's figures (``solver_info_``)."""

    dual: np.ndarray
    centres: Any
    predict_map: Any
    info: dict


def _report_nothing(stage: str, **info: Any) -> None:
    return None


class CholeskyRidge:
    """The exact dense solve: one n × n float64 matrix, the kernel factored in place."""

    name = "cholesky"

    def __init__(self, settings: RidgeSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, Y: np.ndarray, alphas: np.ndarray,
            root_w: np.ndarray | None, *, first: Callable[[np.ndarray], np.ndarray] | None = None,
            report: Callable[..., None] = _report_nothing, progress: Callable[..., Any] | None = None) -> RidgeFit:
        limit = self.settings.limit
        start = time.perf_counter()
        K = samples.kernel_of(kernel).matrix(what="solver='cholesky'", memory_limit=limit, writable=True,
                                             dtype=np.float64, hint="solver='cg' fits within any limit")
        stages = {"kernel": time.perf_counter() - start}
        report("kernel", seconds=stages["kernel"], storage="full")
        start = time.perf_counter()
        dual, singular = systems.solve_cholesky(K, Y, alphas, root_w)
        stages["solve"] = time.perf_counter() - start
        info = {"storage": "full", "kernel_bytes": K.nbytes, "singular": singular, "stages": stages}
        return RidgeFit(dual, samples.fitted(), samples.kernel_of(kernel).cross_product(dual, first, promote=True,
                                                                                        memory_limit=limit), info)


class ConjugateGradientRidge:
    """Preconditioned CG on the kernel operator the engine plans within the memory limit (and, in mixed
    precision, the float32 one beside it)."""

    name = "cg"

    def __init__(self, settings: RidgeSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, Y: np.ndarray, alphas: np.ndarray,
            root_w: np.ndarray | None, *, first: Callable[[np.ndarray], np.ndarray] | None = None,
            report: Callable[..., None] = _report_nothing, progress: Callable[..., Any] | None = None) -> RidgeFit:
        s = self.settings
        n, t = Y.shape
        start = time.perf_counter()
        block = max(t, 1)
        K = samples.kernel_of(kernel)
        probe = K.plan(block_size=block, memory_limit=s.memory_limit, other_bytes=8 * n * t * 8)
        mixed = systems.wants_fast_products(s.precision, samples, kernel, probe)
        # The preconditioner's share is of what the two operators' fixed parts leave; where the rest could
        # cache only a sliver of the kernel, of what the operators' and cg's working memory leave.
        room = s.limit - (systems.mixed_bytes(n, samples.shape[1]) if mixed else 0)
        budget = {"kernel_itemsize": 4 if mixed else 8, "working": systems.cg_working_bytes(samples, t, mixed)}
        columns = K.columns()
        factor_dtype = systems.preconditioner_dtype(s.preconditioner_dtype, s.preconditioner_rank, n, room,
                                                    probe.stored, alphas, columns, **budget)
        rank = systems.preconditioner_rank(s.preconditioner_rank, n, room, probe.stored, factor_dtype.itemsize,
                                           **budget)
        other = systems.cg_bytes(n, t, rank, factor_dtype.itemsize, samples.dtype.itemsize)
        fast = fast_plan = None
        if mixed:
            fast = K.in_precision(np.float32)
            try:
                plan, fast_plan = systems.mixed_plans(K, fast, samples.shape, block_size=block,
                                                      memory_limit=s.memory_limit, other_bytes=other)
            except MemoryError as error:
                raise MemoryError(f"CG(precision={s.precision!r}) keeps a float32 copy of X and its operator "
                                  f"beside the float64 one, which do not fit: {error}") from None
        else:
            plan = K.plan(block_size=block, memory_limit=s.memory_limit, other_bytes=other)
        with K.operator(plan, s.n_jobs) as op, \
                (fast.operator(fast_plan, s.n_jobs) if fast is not None and fast_plan
                 else contextlib.nullcontext()) as fast_op:
            stages = {"kernel": time.perf_counter() - start}
            report("kernel", seconds=stages["kernel"], storage=op.storage, kernel_bytes=op.kernel_bytes)
            dual, info = systems.solve_cg(op, columns, Y, alphas, root_w, rank=rank, tol=s.tol, maxiter=s.max_iter,
                                          random_state=s.random_state, progress=progress, report=report,
                                          fast_op=fast_op, factor_dtype=factor_dtype)
            info.update(op.info(), memory_limit=s.limit)
            if fast_op is not None:
                info.update(fast_storage=fast_op.storage, fast_kernel_bytes=fast_op.kernel_bytes)
        info["stages"] = {**stages, **info["stages"]}
        return RidgeFit(dual, samples.fitted(), K.cross_product(dual, first, promote=True, memory_limit=s.limit),
                        info)


class NystromRidge:
    """Falkon's restricted problem on m landmarks (systems.solve_nystrom), streamed over the samples wherever the
    engine keeps them: approximate, so taken only when asked for."""

    name = "nystrom"

    def __init__(self, settings: RidgeSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, Y: np.ndarray, alphas: np.ndarray,
            root_w: np.ndarray | None, *, first: Callable[[np.ndarray], np.ndarray] | None = None,
            report: Callable[..., None] = _report_nothing, progress: Callable[..., Any] | None = None) -> RidgeFit:
        s = self.settings
        kernel = kernel.between_samples("use solver='nystrom'")
        n = samples.shape[0]
        start = time.perf_counter()
        S, _, selection = low_rank.landmarks(samples, s.landmarks, s.n_landmarks, kernel, random_state=s.random_state,
                                             memory_limit=s.limit, name="n_landmarks")
        m = S.shape[0]
        rows = low_rank.stream_rows(n, m, samples.dtype.itemsize, s.limit,
                                    what=f"solver='nystrom' with {m} landmarks")
        seconds = time.perf_counter() - start
        dual, info = systems.solve_nystrom(samples, S, kernel, Y, alphas, root_w, rows=rows)
        info["stages"] = {"landmarks": seconds, **info["stages"]}
        info.update(n_landmarks=m, landmarks=selection["method"], landmark_selection=selection, chunk_rows=rows,
                    memory_limit=s.limit)
        return RidgeFit(dual, S, kernel.cross_product(S, dual, first, promote=True), info)


_SOLVERS: dict[str, Callable[[RidgeSettings], Any]] = {
    "cholesky": CholeskyRidge, "cg": ConjugateGradientRidge, "nystrom": NystromRidge}


def make_solver(requested: str, samples: SolverSamples, kernel: Kernel, Y: np.ndarray, alphas: np.ndarray,
                settings: RidgeSettings) -> tuple[CholeskyRidge | ConjugateGradientRidge | NystromRidge, dict]:
    """(the solver of this fit, how it was chosen: ``solver_info_["choice"]``) for ``requested`` ("auto" or a
    solver's name), by the library's cost model (solvers/choice.py)."""
    n, d = samples.shape
    picked = choice.kernel_ridge(requested, n=n, d=choice.evaluated_features(kernel, samples), targets=Y.shape[1],
                                 singular=bool((alphas == 0).any()), rank=systems.DEFAULT_PRECONDITIONER_RANK,
                                 memory_limit=settings.limit, matrix_possible=bool(samples.holds_matrix))
    return _SOLVERS[picked.picked](settings), picked.as_dict()
