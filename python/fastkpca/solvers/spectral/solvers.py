"""The spectral estimators' eigensolvers as peers behind one interface, picked once per fit by the library's cost
model (solvers/choice.py): each returns the embedding of an affinity of the samples (embedding.py says exactly
what is computed), its figures and the affinity matrix it held, so the estimators never ask which one ran.

- :class:`LanczosEmbedding`: block Lanczos on the Laplacian view of the affinity's operator (any storage),
  started from a k-means partition of the samples where the affinity is a kernel (start.py);
- :class:`DenseEmbedding`: LAPACK's symmetric eigensolver on the same view made an n × n matrix (few samples);
- :class:`ScikitLearnEmbedding`: scikit-learn's "arpack", "lobpcg" or "amg" on the materialised affinity;
- :class:`NystromEmbedding`: the embedding of the normalised Nyström affinity on landmarks (nystrom.py):
  approximate.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from sklearn.manifold import _spectral_embedding as _sk_embedding

from ...exceptions import ConvergenceWarning
from .. import choice
from . import embedding
from .affinity import Affinity, affinity_of, warn_if_disconnected
from .nystrom import nystrom_embedding
from .start import partition_of

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples
    from ..rows import ArrayRows

__all__ = ["LanczosEmbedding", "DenseEmbedding", "ScikitLearnEmbedding", "NystromEmbedding", "make_solver",
           "SKLEARN_SOLVERS", "SOLVERS", "MATRIX_SOLVERS"]

#: scikit-learn's own solvers, run on the materialised affinity when asked for by name.
SKLEARN_SOLVERS = ("arpack", "lobpcg", "amg")
#: Every solver's name, and those that solve a given affinity matrix (the Nyström one needs samples).
SOLVERS = ("auto", "lanczos", "dense", "nystrom", *SKLEARN_SOLVERS)
MATRIX_SOLVERS = ("auto", "lanczos", "dense", *SKLEARN_SOLVERS)
# scikit-learn's implementation, kept before patch_sklearn replaces the module's names with ours (the public
# function calls the private one through the module, which would then be ours again).
_SKLEARN_SPECTRAL_EMBEDDING = getattr(_sk_embedding, "_spectral_embedding", _sk_embedding.spectral_embedding)


def _report_nothing(stage: str, **info: Any) -> None:
    return None


def _tol(eigen_tol: float | str) -> float | None:
    return None if isinstance(eigen_tol, str) and eigen_tol == "auto" else float(eigen_tol)


def _check_size(n: int, n_components: int, drop_first: bool) -> int:
    k = n_components + 1 if drop_first else n_components
    if k > n:
        raise ValueError(f"n_components={n_components}{' (+1 for drop_first)' if drop_first else ''} is larger "
                         f"than the number of samples, {n}")
    return k


class _OnAnAffinity:
    """A solver of an affinity's operator: the samples' affinity planned within the memory limit, then
    :meth:`solve` on it."""

    name = ""

    def embed(self, samples: SolverSamples, kernel: Kernel, n_components: int, *, random_state: Any,
              eigen_tol: float | str, memory_limit: int, n_jobs: int | None, drop_first: bool,
              progress: Callable[..., Any] | None = None, report: Callable[..., None] = _report_nothing,
              dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict, Any]:
        """(embedding, figures, the affinity matrix held or None) of the affinity ``kernel`` of ``samples``."""
        start = time.perf_counter()
        with affinity_of(samples, kernel, n_components + drop_first, memory_limit, n_jobs) as affinity:
            report("affinity", seconds=time.perf_counter() - start, storage=affinity.op.storage)
            E, info = self.solve(affinity, n_components, random_state=random_state, eigen_tol=eigen_tol,
                                 memory_limit=memory_limit, drop_first=drop_first, progress=progress, dtype=dtype)
            return E, info, affinity.retained()

    def solve(self, affinity: Affinity, n_components: int, *, random_state: Any, eigen_tol: float | str,
              memory_limit: int, drop_first: bool = True, norm_laplacian: bool = True,
              progress: Callable[..., Any] | None = None, dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict]:
        raise NotImplementedError


class LanczosEmbedding(_OnAnAffinity):
    """Block Lanczos on the Laplacian view of the affinity's operator (see the module)."""

    name = "lanczos"

    def solve(self, affinity: Affinity, n_components: int, *, random_state: Any, eigen_tol: float | str,
              memory_limit: int, drop_first: bool = True, norm_laplacian: bool = True,
              progress: Callable[..., Any] | None = None, dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict]:
        _check_size(affinity.op.shape[0], n_components, drop_first)
        warn_if_disconnected(affinity)
        # A kernel affinity's samples give the solver its start: a k-means partition (start.py).
        partition = partition_of(affinity.samples, affinity.kernel, random_state.randint(np.iinfo(np.int32).max))
        E, info = embedding.embed(affinity.op, affinity.degrees, n_components, norm_laplacian=norm_laplacian,
                                  drop_first=drop_first, tol=_tol(eigen_tol), random_state=random_state,
                                  threads=affinity.op.threads, progress=progress, partition=partition)
        if not info["converged"]:
            warnings.warn(f"spectral embedding: the lanczos solver stopped after {info['n_passes']} passes before "
                          "every eigenvector converged", ConvergenceWarning, stacklevel=4)
        return E.astype(dtype, copy=False), {**info, **affinity.op.info()}


class DenseEmbedding(_OnAnAffinity):
    """LAPACK's symmetric eigensolver (dense.eigh.symmetric_eigh, by index) on the Laplacian view of the
    affinity (embedding.py) made an n × n matrix (:func:`laplacian_matrix`). The same pairs as the Lanczos
    solver's, exact, for problems whose matrix is small (a few hundred samples): one LAPACK call instead of
    passes and Rayleigh–Ritz steps."""

    name = "dense"

    def solve(self, affinity: Affinity, n_components: int, *, random_state: Any, eigen_tol: float | str,
              memory_limit: int, drop_first: bool = True, norm_laplacian: bool = True,
              progress: Callable[..., Any] | None = None, dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict]:
        from ..dense.eigh import symmetric_eigh

        n = affinity.op.shape[0]
        k = _check_size(n, n_components, drop_first)
        warn_if_disconnected(affinity)
        deg = affinity.degrees
        A = affinity.dense("eigen_solver='dense'", memory_limit)
        start = time.perf_counter()
        M, shift = laplacian_matrix(A, deg, norm_laplacian)
        values, vectors = symmetric_eigh(M, subset_by_index=(n - k, n - 1), overwrite_a=True)
        if values.shape[0] < k:  # the subset driver may return fewer: the whole decomposition never does
            values, vectors = symmetric_eigh(laplacian_matrix(A, deg, norm_laplacian)[0], overwrite_a=True)
            values, vectors = values[n - k:], vectors[:, n - k:]
        values, vectors = values[::-1], vectors[:, ::-1]  # descending θ: ascending Laplacian eigenvalues
        E = embedding.finish(vectors, deg.root if norm_laplacian else None, drop_first, n_components)
        info = {"method": "dense", "solve_seconds": time.perf_counter() - start, "converged": True,
                "laplacian_eigenvalues": shift - values, "n_isolated": deg.n_isolated, "storage": "full"}
        return E.astype(dtype, copy=False), info


def laplacian_matrix(A: Any, deg: embedding.Degrees, norm_laplacian: bool) -> tuple[np.ndarray, float]:
    """(the matrix whose top eigenvectors are the Laplacian's bottom ones, the shift c with the Laplacian's
    eigenvalues c − θ): embedding.laplacian_view's operator as a Fortran-ordered array, A₀ the affinity without
    its diagonal (the graph ignores self-loops): S A₀ S with S = diag(1/√d) (c = 1), or A₀ − D + c·I with
    c = 2·max d."""
    M = np.array(A.toarray() if hasattr(A, "toarray") else A, dtype=np.float64, order="F", copy=True)
    np.fill_diagonal(M, 0.0)
    if norm_laplacian:
        scale = 1.0 / deg.root
        M *= scale[:, None]
        M *= scale[None, :]
        return M, 1.0
    shift = 2.0 * float(deg.degrees.max(initial=0.0)) or 1.0
    M[np.diag_indices(M.shape[0])] += shift - deg.degrees
    return M, shift


class ScikitLearnEmbedding(_OnAnAffinity):
    """scikit-learn's solver ``name`` on the materialised affinity (checked against the memory limit)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def solve(self, affinity: Affinity, n_components: int, *, random_state: Any, eigen_tol: float | str,
              memory_limit: int, drop_first: bool = True, norm_laplacian: bool = True,
              progress: Callable[..., Any] | None = None, dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict]:
        _check_size(affinity.op.shape[0], n_components, drop_first)
        warn_if_disconnected(affinity)
        A = affinity.dense(f"eigen_solver={self.name!r}", memory_limit)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Graph is not fully connected")  # warned above
            E = _SKLEARN_SPECTRAL_EMBEDDING(A, n_components=n_components, eigen_solver=self.name,
                                            random_state=random_state, eigen_tol=eigen_tol,
                                            norm_laplacian=norm_laplacian, drop_first=drop_first)
        return E, {"solve_seconds": time.perf_counter() - start}


class NystromEmbedding:
    """The embedding of the normalised Nyström affinity on landmarks (nystrom.py), streamed over the
    samples wherever the engine keeps them."""

    name = "nystrom"

    def __init__(self, n_landmarks: int | None, landmarks: Any) -> None:
        self.n_landmarks, self.landmarks = n_landmarks, landmarks

    def embed(self, samples: SolverSamples, kernel: Kernel, n_components: int, *, random_state: Any,
              eigen_tol: float | str, memory_limit: int, n_jobs: int | None, drop_first: bool,
              progress: Callable[..., Any] | None = None, report: Callable[..., None] = _report_nothing,
              dtype: DTypeLike = np.float64) -> tuple[np.ndarray, dict, Any]:
        kernel = kernel.between_samples("use eigen_solver='nystrom'")
        E, info = nystrom_embedding(samples, kernel, n_components, drop_first=drop_first, n_landmarks=self.n_landmarks,
                                    landmarks_spec=self.landmarks, random_state=random_state,
                                    memory_limit=memory_limit)
        return E.astype(dtype, copy=False), info, None


def make_solver(requested: str | None, samples: SolverSamples | ArrayRows, kernel: Kernel, k: int, *,
                memory_limit: int, n_landmarks: int | None = None, landmarks: Any = "rpcholesky") -> tuple[Any, dict]:
    """(the solver of this fit, how it was chosen: ``solver_info_["choice"]``) for ``requested`` (None, "auto"
    or a solver's name), the affinity ``kernel`` of ``samples`` (an engine's, or solvers/rows.py's ArrayRows) and
    an embedding of ``k`` vectors, by the library's cost model (solvers/choice.py)."""
    n = samples.shape[0]
    picked = choice.spectral(requested, n=n, d=choice.evaluated_features(kernel, samples), k=k,
                             memory_limit=memory_limit, matrix_possible=bool(getattr(samples, "holds_matrix", True)))
    name = picked.picked
    solver = (LanczosEmbedding() if name == LanczosEmbedding.name
              else DenseEmbedding() if name == DenseEmbedding.name
              else NystromEmbedding(n_landmarks, landmarks) if name == NystromEmbedding.name
              else ScikitLearnEmbedding(name))
    return solver, picked.as_dict()
