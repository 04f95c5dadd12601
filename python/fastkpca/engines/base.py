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

from ..operators.samples import KernelSource, SolverSamples

__all__ = ["Engine", "Samples"]


class Samples(SolverSamples, KernelSource, Protocol):
    """Training samples where an engine keeps them; a row source (solvers/rows.py). What the solvers may ask of
    them is :class:`fastkpca.operators.samples.SolverSamples`; the kernel's forms an engine provides are
    :class:`~fastkpca.operators.samples.KernelSource` (``kernel_of`` reads them: inherit
    :class:`~fastkpca.operators.samples.KernelViews`); the members here are the estimators' and the engines'
    own."""

    @property
    def engine(self) -> Engine:
        """The engine that keeps them."""

    def local(self) -> Samples:
        """The same samples in this process (a fitted model pickled without its cluster)."""

    def info(self) -> dict:
        """The engine's figures for ``solver_info_``."""

    def over(self, X_fit: Any) -> Samples:
        """The same samples over the estimator's copy of what :meth:`fitted` gave (``X_train_``), so that a
        model holds them once."""


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
