"""What a solver may ask of its training samples: :class:`SolverSamples`, the solver-facing part of an engine's
samples (engines/base.py: ``Samples`` extends it with what only the estimators and engines use: the engine,
the samples over the estimator's copy, and the kernel's forms an engine provides, :class:`KernelSource`).

A solver sees the samples' shape and dtype and the values a row stores, their rows (one by index, or streamed
through ``reduce``/``map``), and the kernel of them, :meth:`SolverSamples.kernel_of`: a
:class:`KernelOfSamples`, the kernel matrix of these samples in the forms a solver multiplies by (an operator in
a storage plan, the whole matrix where it fits, a column source for randomly pivoted Cholesky, a fitted cross
product for predictions, the Gaussian process's gradient traces, the same kernel in another precision). It
reads whether the whole matrix can be had here, the fitted copy of the samples and the same samples in this process.
It never learns where the samples live (this process, a cluster's workers); the engine's figures for
``solver_info_`` are the estimators' to read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, cast

import numpy as np

if TYPE_CHECKING:
    from ..kernels.differentiable import DifferentiableKernel
    from ..kernels.kernel import Kernel
    from .operator import KernelOperator

__all__ = ["ColumnSource", "SolverSamples", "KernelSource", "KernelOfSamples", "KernelViews"]


class ColumnSource(Protocol):
    """A kernel's diagonal and columns, evaluated on demand: what randomly pivoted Cholesky reads
    (solvers/low_rank.py; kernels.KernelColumns in this process)."""

    n: int
    dtype: np.dtype

    def diagonal(self) -> np.ndarray:
        """The kernel's diagonal, n entries."""

    def columns(self, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        """K(X, X_index) written into ``out`` (n × len(index)) and returned."""


class SolverSamples(Protocol):
    """Training samples as a solver sees them (see the module's documentation)."""

    #: Whether ``kernel_of(kernel).matrix`` can give the whole matrix in this process (samples in its memory).
    holds_matrix: bool

    @property
    def shape(self) -> tuple[int, ...]:
        """(samples, features); (samples,) for structured samples that a kernel object reads."""

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values."""

    @property
    def values_per_row(self) -> float:
        """Values a row stores: its columns when dense, the mean stored entries when sparse (what a kernel
        entry's cost scales with: solvers/choice.py)."""

    def rows(self, index: np.ndarray) -> Any:
        """The rows ``index`` in this process, in that order."""

    def reduce(self, func: Callable[..., Any], *args: Any, row_args: tuple = (), rows: int) -> Any:
        """Σ func(chunk, *args, *pieces) over the rows in a fixed order (see solvers/rows.py)."""

    def map(self, func: Callable[..., Any], *args: Any, rows: int) -> np.ndarray:
        """func(chunk, *args) for every chunk of rows, concatenated in this process in row order."""

    def kernel_of(self, kernel: Kernel) -> KernelOfSamples:
        """The kernel matrix of these samples under ``kernel`` (bound to them by the estimator), in the forms a
        solver multiplies by."""

    def fitted(self, copy: bool = False) -> Any:
        """What the estimator keeps as ``X_fit_`` (``copy``: a copy where the samples are in this process's
        memory; samples kept elsewhere are never written to)."""

    def local(self) -> SolverSamples:
        """The same samples in this process (a fitted model pickled without its cluster)."""


class KernelSource(Protocol):
    """The kernel's forms an engine's samples provide (each taking the kernel): what :class:`KernelOfSamples`
    reads. Engines implement these; solvers call them through ``samples.kernel_of(kernel)``."""

    def plan(self, kernel: Kernel, *, block_size: int, memory_limit: Any, other_bytes: int,
             storage: str = "auto") -> Any:
        """The storage plan of the kernel of these samples (operators.StoragePlan in this process, an engine's own
        plan elsewhere): ``memory_limit`` is the estimator's parameter as given (None, bytes or a size), which each
        engine reads its own way."""

    def kernel_operator(self, kernel: Kernel, plan: Any, n_jobs: int | None = None, *,
                        zero_diagonal: bool = False) -> KernelOperator:
        """The kernel matrix of these samples as an operator held as ``plan`` says, its own context manager: it
        releases what it holds on exit (or by ``release()``). ``zero_diagonal``: without its diagonal where the
        engine evaluates the kernel (an affinity; see operators.build)."""

    def astype(self, dtype: Any) -> KernelSource:
        """These samples cast to ``dtype``, a copy kept where these are (the kernel evaluated in another
        precision)."""

    def bind(self, kernel: Any) -> Kernel:
        """The kernel this fit uses on these samples (a kernels.Kernel, or what kernels.make takes): the kind's own
        checks of the samples run here, and a kind the engine cannot evaluate where it keeps them raises
        ValueError naming it."""

    def kernel_matrix(self, kernel: Kernel, *, what: str, memory_limit: int, writable: bool = False, hint: str = "",
                      dtype: Any = None) -> Any:
        """The whole kernel matrix in this process (after a memory check; ``writable``: a dense array the caller
        may overwrite, copied when it is the user's; ``dtype``: the samples cast to it first), or
        ValueError/MemoryError saying that ``what`` needs it (``hint``: what fits instead)."""

    def columns(self, kernel: Kernel) -> ColumnSource:
        """The kernel's diagonal and columns as a column source."""

    def cross_product(self, kernel: Kernel, V: np.ndarray, correction: Callable[..., Any] | None = None, *,
                      promote: bool = False, out_dtype: Any = None, memory_limit: int | None = None) -> Any:
        """The fitted row map ``x ↦ correction(K(x, X)·V)`` (see kernels.CrossProduct)."""

    def gradient_traces(self, kernel: DifferentiableKernel, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The kernel's tr(W ∂K/∂θ_j) for W = ½(A Bᵀ + B Aᵀ) (A, B: n × m here), by passes over the pairs of
        rows where the samples are (kernels.DifferentiableKernel.gradient_traces_low_rank, traces_from)."""


class KernelOfSamples:
    """The kernel matrix K of an engine's samples under one kernel, in the forms a solver multiplies by; each
    form is the engine's (:class:`KernelSource`), so a solver never learns where the samples live."""

    def __init__(self, samples: KernelSource, kernel: Kernel) -> None:
        self.samples = samples
        self.kernel = kernel

    def plan(self, *, block_size: int, memory_limit: Any, other_bytes: int, storage: str = "auto") -> Any:
        """The storage plan of K within ``memory_limit`` (the estimator's parameter as given) beside
        ``other_bytes`` and blocks of ``block_size`` vectors."""
        return self.samples.plan(self.kernel, block_size=block_size, memory_limit=memory_limit,
                                 other_bytes=other_bytes, storage=storage)

    def operator(self, plan: Any, n_jobs: int | None = None, *, zero_diagonal: bool = False) -> KernelOperator:
        """K as an operator held as ``plan`` says (its own context manager; ``zero_diagonal``: K − diag K)."""
        return self.samples.kernel_operator(self.kernel, plan, n_jobs, zero_diagonal=zero_diagonal)

    def matrix(self, *, what: str, memory_limit: int, writable: bool = False, hint: str = "",
               dtype: Any = None) -> Any:
        """The whole of K in this process, or ValueError/MemoryError saying that ``what`` needs it."""
        return self.samples.kernel_matrix(self.kernel, what=what, memory_limit=memory_limit, writable=writable,
                                          hint=hint, dtype=dtype)

    def columns(self) -> ColumnSource:
        """K's diagonal and columns, evaluated on demand."""
        return self.samples.columns(self.kernel)

    def cross_product(self, V: np.ndarray, correction: Callable[..., Any] | None = None, *, promote: bool = False,
                      out_dtype: Any = None, memory_limit: int | None = None) -> Any:
        """The fitted row map ``x ↦ correction(K(x, X)·V)``."""
        return self.samples.cross_product(self.kernel, V, correction, promote=promote, out_dtype=out_dtype,
                                          memory_limit=memory_limit)

    def gradient_traces(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """tr(W ∂K/∂θ_j) for W = ½(A Bᵀ + B Aᵀ), one per hyperparameter (a DifferentiableKernel's)."""
        return self.samples.gradient_traces(cast("DifferentiableKernel", self.kernel), A, B)

    def in_precision(self, dtype: Any) -> KernelOfSamples:
        """The same kernel of the samples cast to ``dtype`` (a copy kept where the samples are)."""
        samples = self.samples.astype(dtype)
        return KernelOfSamples(samples, samples.bind(self.kernel))


class KernelViews:
    """``kernel_of`` for an engine's samples class that provides the :class:`KernelSource` forms."""

    def kernel_of(self: Any, kernel: Kernel) -> KernelOfSamples:
        return KernelOfSamples(self, kernel)
