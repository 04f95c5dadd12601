"""Kernel PCA's eigensolvers as peers behind one interface, picked once per fit by the library's cost model
(solvers/choice.py). Each returns the same answer, a :class:`PcaFit` — the top eigenpairs of the centered kernel
H K H (H = I − 11ᵀ/n), the map that projects new points on them and what the estimator keeps — so the estimator
never asks which one ran.

- :class:`LanczosPca`: block Lanczos (krylov/lanczos.py) on the implicitly centered kernel operator, in the storage the
  memory limit allows: K is never rewritten, and the centering's row sums come with the first pass;
- :class:`DensePca`: the explicitly centered n × n matrix by LAPACK's eigh, ARPACK or the randomized solver
  (dense.py: scikit-learn's solvers and arguments);
- :class:`NystromPca`: kernel PCA of the Nyström approximation on landmarks (low_rank.nystrom_kernel_pca):
  approximate, streamed over the samples, keeps only the landmarks.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ...exceptions import ConvergenceWarning
from ...kernels import KernelCentering
from .. import choice, low_rank
from ..krylov import lanczos
from ..krylov.eigenvalues import finish_eigenpairs, projection
from . import dense

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples

__all__ = ["PcaSettings", "PcaFit", "make_solver", "keeps_samples", "LanczosPca", "DensePca", "NystromPca"]


@dataclass(frozen=True)
class PcaSettings:
    """What KernelPCA's parameters ask of the solvers (its documentation says what each means)."""

    #: Bytes the fit may use (parsed), and the estimator's memory_limit as given (an engine's plan reads it).
    limit: int
    memory_limit: Any = None
    #: n_components is None: every component (a full decomposition).
    all_components: bool = False
    #: Drop zero eigenvalues (remove_zero_eig, or all components asked for).
    remove_zero: bool = False
    tol: float = 0.0
    max_iter: int | None = None
    iterated_power: Any = "auto"
    random_state: Any = None
    n_jobs: int | None = None
    n_landmarks: int | None = None
    landmarks: Any = "rpcholesky"


@dataclass
class PcaFit:
    """A solver's answer (the estimator's fitted attributes)."""

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    #: The row map of transform: new points' scores.
    transform_map: Any
    #: X_fit_: the training samples, or the landmarks.
    centres: Any
    #: trace(H K H), for explained_variance_ratio_.
    total_variance: float
    info: dict
    #: The solver's own fitted attributes: the centering's column means and grand mean (``K_fit_rows_``,
    #: ``K_fit_all_``, KernelCenterer's) where the kernel was centered exactly; the landmarks and their rows in
    #: X (``landmarks_``, ``landmark_indices_``) for the Nyström fit.
    attributes: dict
    #: (scores, targets) the pre-image map is learnt from, given the estimator's transform: a function.
    pre_image_pairs: Callable[[Callable], tuple] | None = None


def _report_nothing(stage: str, **info: Any) -> None:
    return None


def _exact_fit(samples: SolverSamples, kernel: Kernel, values: np.ndarray, vectors: np.ndarray,
               centering: KernelCentering, total_variance: float, info: dict, settings: PcaSettings) -> PcaFit:
    """The fit of an exact solver from its eigenpairs of H K H: the pairs finished as scikit-learn does (sorted,
    signs fixed, zeros dropped where asked), and transform's map: the centered cross kernel times V Λ^(-½)."""
    values, vectors = finish_eigenpairs(values, vectors, settings.remove_zero)
    M = projection(values, vectors)
    V, correction = centering.product_correction(M)
    transform_map = samples.kernel_of(kernel).cross_product(V, correction, out_dtype=M.dtype,
                                                            memory_limit=settings.limit)
    X_fit = samples.fitted()

    def pre_image_pairs(transform: Callable[..., Any]) -> tuple[np.ndarray, Any]:
        return vectors * np.sqrt(values), X_fit  # the samples as the engine keeps them: the estimator gathers them

    attributes = {"K_fit_rows_": centering.column_means, "K_fit_all_": centering.grand_mean}
    return PcaFit(values, vectors, transform_map, X_fit, total_variance, info, attributes, pre_image_pairs)


class LanczosPca:
    """Block Lanczos on the implicitly centered kernel operator (see the module)."""

    name = "lanczos"

    def __init__(self, settings: PcaSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, k: int, *, report: Callable[..., None] = _report_nothing,
            progress: Callable[..., Any] | None = None) -> PcaFit:
        s = self.settings
        n = samples.shape[0]
        if not kernel.symmetric:
            raise ValueError(f"eigen_solver='lanczos' needs a symmetric kernel; {kernel.label} has max |K - K.T| = "
                             f"{kernel.asymmetry:.3g}")
        start = time.perf_counter()
        block, working = lanczos.memory_needs(k, n)
        plan = samples.kernel_of(kernel).plan(block_size=block, memory_limit=s.memory_limit, other_bytes=working)
        with samples.kernel_of(kernel).operator(plan, s.n_jobs) as op:
            report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage=op.storage,
                   kernel_bytes=op.kernel_bytes)
            report("center", seconds=0.0, implicit=True)
            values, vectors, info = lanczos.solve(op.centered(), k, tol=s.tol or None, maxiter=s.max_iter,
                                                  block_size=None, random_state=s.random_state, threads=op.threads,
                                                  progress=progress)
            if not info["converged"]:
                warnings.warn(f"KernelPCA: the lanczos solver stopped after {info['n_passes']} passes before every "
                              "component converged", ConvergenceWarning, stacklevel=4)
            sums = op.row_sums()
            if not np.isfinite(sums).all():
                raise ValueError("the kernel matrix contains NaN or infinity (or its sums overflow)")
            centering = KernelCentering.from_row_sums(sums)
            total = op.trace() - op.shape[0] * centering.grand_mean  # trace(HKH) = trace(K) − N·m̄
            info = {**info, "memory_limit": s.limit, **op.info()}
            report("done", solver="lanczos", storage=op.storage, seconds=info["solve_seconds"],
                   passes=info["n_passes"], block_size=info["block_size"])
            dtype = op.storage_dtype
        return _exact_fit(samples, kernel, values.astype(dtype, copy=False), vectors.astype(dtype, copy=False),
                          centering, total, info, s)


class DensePca:
    """One of scikit-learn's solvers on the explicitly centered n × n kernel matrix (dense.py)."""

    def __init__(self, settings: PcaSettings, name: str) -> None:
        self.settings = settings
        self.name = name

    def fit(self, samples: SolverSamples, kernel: Kernel, k: int, *, report: Callable[..., None] = _report_nothing,
            progress: Callable[..., Any] | None = None) -> PcaFit:
        s = self.settings
        n = samples.shape[0]
        start = time.perf_counter()
        what = f"eigen_solver={self.name!r}" + (" (n_components=None: all components need the dense N×N "
                                                "eigendecomposition)" if s.all_components else "")
        K = samples.kernel_of(kernel).matrix(what=what, memory_limit=s.limit, writable=True,
                                             hint="eigen_solver='lanczos' fits within any limit")
        report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage="full", kernel_bytes=K.nbytes)
        start = time.perf_counter()
        Kc, centering, total = dense.center_kernel(K, threads=v.n_threads(s.n_jobs))
        report("center", seconds=time.perf_counter() - start, implicit=False)
        start = time.perf_counter()
        values, vectors = dense.top_eigenpairs(Kc, k, self.name, tol=s.tol, maxiter=s.max_iter,
                                               iterated_power=s.iterated_power, random_state=s.random_state)
        seconds = time.perf_counter() - start
        info = {"method": self.name, "storage": "full", "kernel_bytes": Kc.nbytes, "solve_seconds": seconds}
        report("done", solver=self.name, seconds=seconds)
        return _exact_fit(samples, kernel, values, vectors, centering, total, info, s)


class NystromPca:
    """Kernel PCA of the Nyström approximation on landmarks, streamed over the samples wherever the engine keeps
    them (low_rank.nystrom_kernel_pca); X itself is not kept, only the landmarks."""

    name = "nystrom"

    def __init__(self, settings: PcaSettings) -> None:
        self.settings = settings

    def fit(self, samples: SolverSamples, kernel: Kernel, k: int, *, report: Callable[..., None] = _report_nothing,
            progress: Callable[..., Any] | None = None) -> PcaFit:
        s = self.settings
        kernel = kernel.between_samples("use eigen_solver='nystrom'")
        n = samples.shape[0]
        start = time.perf_counter()
        S, index, selection = low_rank.landmarks(samples, s.landmarks, s.n_landmarks, kernel,
                                                 random_state=s.random_state, memory_limit=s.limit,
                                                 name="n_landmarks")
        m = S.shape[0]
        if index is None and s.n_landmarks is not None and s.n_landmarks != m:
            raise ValueError(f"n_landmarks={s.n_landmarks} but {m} landmarks were given")
        if s.all_components:  # every component of the rank-m approximation
            k = m
        elif k > m:
            raise ValueError(f"n_components={k} is larger than n_landmarks={m}: the Nyström "
                             "approximation has rank at most n_landmarks")
        report("landmarks", seconds=time.perf_counter() - start, n_landmarks=m, method=selection["method"])
        rows = low_rank.stream_rows(n, m, samples.dtype.itemsize, s.limit, extra_bytes=2 * n * k * 8,
                                    what=f"eigen_solver='nystrom' with {m} landmarks")
        pca = low_rank.nystrom_kernel_pca(samples, S, kernel, k, rows, remove_zero=s.remove_zero)
        seconds = dict(pca.seconds, landmarks=selection["seconds"])
        info = {"landmarks": selection["method"], "n_landmarks": m, "rank": pca.rank, "chunk_rows": rows,
                "memory_limit": s.limit, "landmark_selection": selection, "seconds": seconds}
        report("done", solver="nystrom", seconds=sum(seconds.values()), n_landmarks=m, rank=pca.rank)

        def pre_image_pairs(transform: Callable[..., Any]
                            ) -> tuple[np.ndarray, np.ndarray]:  # the pre-image map is learnt on the landmarks alone
            return transform(S), S

        return PcaFit(pca.eigenvalues, pca.eigenvectors, pca.projection, S, pca.total_variance, info,
                      {"landmarks_": S, "landmark_indices_": index}, pre_image_pairs)


def keeps_samples(requested: str) -> bool:
    """Whether a fit by ``requested`` keeps the training samples (for copy_X): every solver but the Nyström one,
    which keeps its landmarks (and is taken only when asked for by name)."""
    return requested != NystromPca.name


def make_solver(requested: str, samples: SolverSamples, kernel: Kernel, k: int, settings: PcaSettings
                ) -> tuple[LanczosPca | DensePca | NystromPca, dict]:
    """(the solver of this fit, how it was chosen: ``solver_info_["choice"]``) for ``requested`` ("auto" or a
    solver's name) and the top ``k`` pairs, by the library's cost model (solvers/choice.py)."""
    n, d = samples.shape
    picked = choice.kernel_pca(requested, n=n, d=choice.evaluated_features(kernel, samples), k=k,
                               symmetric=bool(kernel.symmetric), all_components=settings.all_components,
                               memory_limit=settings.limit, matrix_possible=bool(samples.holds_matrix))
    name = picked.picked
    solver = (LanczosPca(settings) if name == LanczosPca.name else NystromPca(settings) if name == NystromPca.name
              else DensePca(settings, name))
    return solver, picked.as_dict()
