"""What a solver may ask of its training samples: :class:`SolverSamples`, the solver-facing part of an engine's
samples (engines/base.py: ``Samples`` extends it with what only the estimators and engines use: the engine,
and the samples over the estimator's copy).

A solver sees the samples' shape and dtype, their rows (one by index, or streamed through ``reduce``/``map``), and
the kernel of them in the forms a solver multiplies by: an operator in a storage plan, the whole matrix where it
fits, a column source for randomly pivoted Cholesky, a fitted cross product for predictions, and the Gaussian
process's gradient traces; it binds a kernel to samples it made itself (a float32 copy), and reads the fitted copy
of them, the same samples in this process and the engine's figures. It never learns where the samples live (this
process, a cluster's workers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

if TYPE_CHECKING:
    from ..kernels.differentiable import DifferentiableKernel
    from ..kernels.kernel import Kernel
    from .operator import KernelOperator

__all__ = ["ColumnSource", "SolverSamples"]


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

    #: Whether :meth:`kernel_matrix` can give the whole matrix in this process (samples in its memory).
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

    def astype(self, dtype: Any) -> SolverSamples:
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

    def fitted(self, copy: bool = False) -> Any:
        """What the estimator keeps as ``X_fit_`` (``copy``: a copy where the samples are in this process's
        memory; samples kept elsewhere are never written to)."""

    def local(self) -> SolverSamples:
        """The same samples in this process (a fitted model pickled without its cluster)."""

    def info(self) -> dict:
        """The engine's figures for ``solver_info_``."""
