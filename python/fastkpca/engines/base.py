"""What an engine is: the two protocols the estimators talk to.

An :class:`Engine` is where the work of a fit runs. It is chosen once, from the input, by
:func:`fastkpca.engines.select`, and it:

- owns the training samples: :meth:`Engine.fit_samples` validates X (and y) and returns :class:`Samples`,
  the rows where the engine keeps them (this process's memory, a cluster's workers, ...);
- takes the fit's kernel for them (:meth:`Samples.bind`: a kind it cannot evaluate where the samples live
  is refused there, naming it), makes its operator (:meth:`Samples.plan`, :meth:`Samples.kernel_operator`),
  its whole matrix where a solver needs one (:meth:`Samples.kernel_matrix`) and the column source randomly
  pivoted Cholesky reads (:meth:`Samples.columns`);
- runs streamed map/reduce passes over their rows (:meth:`Samples.reduce`, :meth:`Samples.map`: the
  Nyström moments and projections; samples are row sources, solvers/rows.py);
- runs the Gaussian process likelihood's gradient passes (:meth:`Samples.gradient_traces`);
- computes the fitted cross products of transform and predict (:meth:`Samples.cross_product`), and
  applies a fitted row map to new data of its own kind (:meth:`Engine.apply`);
- turns a fitted model into one that lives in this process, for pickling (:meth:`Engine.localise`).

A row map is a picklable callable ``f(X_chunk) -> ndarray`` of an array of rows in this process, whose
result for a row depends on that row alone (kernels.KernelProduct, solvers.low_rank.NystromProjection,
...); it may also be an engine's own object that :meth:`Engine.apply` of that engine recognises.

An estimator reaches an engine through :func:`fastkpca.engines.select` only, and talks to it through these
two protocols: it never names an engine or its samples' type.

Adding an engine is one module with a class that implements both protocols, registered with
:func:`fastkpca.engines.register`; no estimator changes.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import numpy as np

__all__ = ["Engine", "Samples"]


class Samples(Protocol):
    """Training samples where an engine keeps them; a row source (solvers/rows.py)."""

    #: Whether :meth:`kernel_matrix` can give the whole matrix in this process (samples in its memory).
    holds_matrix: bool

    @property
    def engine(self) -> Engine:
        """The engine that keeps them."""

    @property
    def shape(self) -> tuple[int, int]:
        """(samples, features)."""

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the values."""

    @property
    def values_per_row(self) -> float:
        """Values a row stores: its columns when dense, the mean stored entries when sparse (what a kernel
        entry's cost scales with: solvers/choice.py)."""

    def bind(self, kernel) -> Any:
        """The kernel (kernels.Kernel) this fit uses on these samples: the kind's own checks of the samples
        run here (a precomputed kernel must be square, ...), a kind may hand over to another for them, and a
        kind this engine cannot evaluate where it keeps the samples raises ValueError naming it."""

    def rows(self, index: np.ndarray) -> np.ndarray:
        """The rows ``index`` in this process, in that order."""

    def reduce(self, func: Callable, *args, row_args=(), rows: int) -> Any:
        """Σ func(chunk, *args, *pieces) over the rows in a fixed order (see solvers/rows.py)."""

    def map(self, func: Callable, *args, rows: int) -> np.ndarray:
        """func(chunk, *args) for every chunk of rows, concatenated in this process in row order."""

    def plan(self, kernel, *, block_size: int, memory_limit, other_bytes: int, storage: str = "auto"):
        """The operators.StoragePlan of the kernel of these samples: ``memory_limit`` is the estimator's
        parameter as given (None, bytes or a size), which each engine reads its own way."""

    def kernel_operator(self, kernel, plan, n_jobs=None, *, zero_diagonal: bool = False):
        """The kernel matrix of these samples as an operators.KernelOperator held as ``plan`` says; a
        context manager that releases what it holds on exit. ``zero_diagonal``: without its diagonal where
        the engine evaluates the kernel (an affinity; see operators.build)."""

    def astype(self, dtype) -> Samples:
        """These samples cast to ``dtype``, a copy kept where these are: the kernel evaluated in another
        precision (kernel ridge's cg takes its iterations' products from a float32 evaluation)."""

    def kernel_matrix(self, kernel, *, what: str, memory_limit: int, writable: bool = False, hint: str = "",
                      dtype=None) -> Any:
        """The whole kernel matrix in this process (after a memory check; ``writable``: a dense array the caller
        may overwrite, copied when it is the user's; ``dtype``: the samples cast to it first), or
        ValueError/MemoryError saying that ``what`` needs it (``hint``: what fits instead)."""

    def columns(self, kernel):
        """The kernel's diagonal and columns as a column source (``n``, ``dtype``, ``diagonal()``,
        ``columns(index, out)``)."""

    def cross_product(self, kernel, V: np.ndarray, correction=None, *, promote: bool = False, out_dtype=None,
                      memory_limit=None):
        """The fitted row map ``x ↦ correction(K(x, X)·V)`` (see kernels.CrossProduct)."""

    def fitted(self, copy: bool = False) -> Any:
        """What the estimator keeps as ``X_fit_`` (``copy``: a copy where the samples are in this process's
        memory, for an estimator's ``copy_X_train``; samples kept elsewhere are never written to)."""

    def gradient_traces(self, kernel, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """The kernel's tr(W ∂K/∂θ_j) for W = ½(A Bᵀ + B Aᵀ) (A, B: n × m here), by passes over the pairs of
        rows where the samples are (kernels.Kernel.gradient_traces_low_rank, traces_from)."""

    def local(self) -> Samples:
        """The same samples in this process (a fitted model pickled without its cluster)."""

    def over(self, X_fit) -> Samples:
        """The same samples over the estimator's copy of what :meth:`fitted` gave (``X_train_``), so that a
        model holds them once."""

    def info(self) -> dict:
        """The engine's figures for ``solver_info_``."""


class Engine(Protocol):
    """Where the work of a fit runs (see the module's documentation)."""

    name: str

    def accepts(self, X) -> bool:
        """Whether X is data of this engine's kind."""

    def fit_samples(self, estimator, X, y=None, *, targets=False, accept_sparse=False, copy=False,
                    vector_input=True) -> tuple[Samples, Any]:
        """(samples, y) for a fit: X validated and, with ``targets``, y too (required: numeric, finite, as many
        rows; NumPy here), the estimator's ``n_features_in_`` (and ``feature_names_in_``) set as
        scikit-learn's validate_data does. ``vector_input=False``: the samples are objects a kernel object
        reads (strings, sequences), kept as given. The samples may belong to another engine (a dask array
        with no cluster is fitted here)."""

    def new_samples(self, estimator, X, *, accept_sparse=False, vector_input=True) -> Any:
        """New data for transform or predict, validated against the fitted estimator, of this engine's kind."""

    def apply(self, rowmap: Callable, X) -> Any:
        """``rowmap`` applied to the rows of X (this engine's kind), the result of the same kind."""

    def wrap(self, Z: np.ndarray, X) -> Any:
        """A result computed here for the rows of X, as X's kind."""

    def gather(self, a, name: str) -> Any:
        """A row-aligned array (targets, weights) of this engine's kind as NumPy here (None stays None)."""

    def localise(self, state: dict) -> dict:
        """A fitted estimator's ``__dict__`` with everything that lives outside this process brought here."""
