"""What a support vector machine needs of its samples and kernel, by the kernel object (the estimators never ask its
kind): the training samples brought into this process as the core's column source, scikit-learn's gamma, and the
fitted model's support set — what new samples are evaluated against.

Decision values for new samples are K(X, SV)·V for every pair's (or the one model's) coefficients V at once,
by the kernel's fused cross product, tile by tile, never holding the n × n_SV cross kernel. What a model keeps
depends on the kernel: the support vectors' rows; nothing but the training size for a precomputed kernel (new
rows are the cross kernel itself: their support columns are read); every training sample for a function of two
sets of samples (scikit-learn evaluates it against the whole training set, and a function may rely on that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ...kernels import takes_matrix
from . import plan

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples
    from ..choice import Choice
    from .settings import DualSettings
    from .plan import SvmColumns

__all__ = ["ColumnSources", "gamma_of", "check_training", "SupportSet", "DecisionMap", "dense"]


def dense(a: Any) -> np.ndarray:
    """A dense copy of a sparse coefficient matrix, or the array itself."""
    return np.asarray(a.toarray() if v.is_sparse(a) else a)


def _training(samples: SolverSamples) -> Any:
    """The training samples as an array (or what a kernel of two sets reads) in this process."""
    return samples.local().fitted()


def check_training(spec: object, samples: SolverSamples) -> None:
    """scikit-learn's refusal of a sparse precomputed kernel (its support vector machines read dense ones)."""
    if takes_matrix(spec) and v.is_sparse(_training(samples)):
        raise TypeError("Sparse precomputed kernels are not supported.")


def gamma_of(spec: object, gamma: float | str, samples: SolverSamples) -> float:
    """scikit-learn's gamma: "scale" is 1 / (n_features · Var(X)) (1 when X is constant), "auto" 1 / n_features, a
    number itself; 0 (unused) for a precomputed kernel or a callable."""
    if takes_matrix(spec) or callable(spec):
        return 0.0
    X = _training(samples)
    d = X.shape[1]
    if not isinstance(gamma, str):
        return float(gamma)
    if gamma == "auto":
        return 1.0 / d
    with np.errstate(over="ignore", invalid="ignore"):
        if v.is_sparse(X):
            variance = float(X.multiply(X).mean() - X.mean() ** 2)
        else:
            variance = _variance(X)
    if not np.isfinite(variance):
        # LIBSVM would go on with gamma = 0 and squared norms that overflow, and fail on the coefficients.
        raise ValueError("The dual coefficients or intercepts are not finite: X.var() overflows float64, so "
                         "gamma='scale' cannot be computed. The input data may contain large values and need to be "
                         "preprocessed.")
    return 1.0 / (d * variance) if variance != 0 else 1.0


def _variance(X: np.ndarray, rows: int = 65536) -> float:
    """The variance of every entry of a dense X, in float64, chunk by chunk (no float64 copy of X): the mean first,
    then the mean square deviation from it."""
    n = X.shape[0]
    total = 0.0
    for start in range(0, n, rows):
        total += float(np.sum(X[start:start + rows], dtype=np.float64))
    mean = total / X.size
    squares = 0.0
    for start in range(0, n, rows):
        part = np.asarray(X[start:start + rows], dtype=np.float64) - mean
        squares += float(np.einsum("ij,ij->", part, part))
    return squares / X.size


class ColumnSources:
    """The core's kernel columns of the training samples (brought into this process), in two precisions: ``exact``
    (the samples' dtype) and ``fast`` (float64 samples of a native kernel evaluated in float32, from a copy made on
    first use). A problem the solver takes whole (LIBSVM's iteration on the whole matrix) reads the exact columns;
    a batched one the fast columns: the columns are kept in float32 either way, as LIBSVM keeps them, and a
    float32 evaluation is about twice the rate.

    Parameters
    ----------
    kernel : fastkpca.kernels.Kernel
    samples : engines' Samples
    memory_limit : int
    """

    _exact: SvmColumns | None
    _fast: SvmColumns | None

    def __init__(self, kernel: Kernel, samples: SolverSamples, memory_limit: int) -> None:
        self.kernel, self.memory_limit = kernel, memory_limit
        self._X = _training(samples)
        self._exact = self._fast = None

    @property
    def exact(self) -> SvmColumns:
        if self._exact is None:
            self._exact = self.kernel.column_source(self._X, memory_limit=self.memory_limit)
        return self._exact

    @property
    def copies(self) -> bool:
        """Whether the fast columns are another source (a float32 copy of dense float64 samples of a kernel that
        evaluates its columns in float32), not the exact one."""
        return (self.kernel.float32_columns and not v.is_sparse(self._X)
                and getattr(self._X, "dtype", None) == np.float64)

    @property
    def fast(self) -> SvmColumns:
        if not self.copies:
            return self.exact
        if self._fast is None:
            self._fast = self.kernel.column_source(self._X, memory_limit=self.memory_limit, fast=True)
        return self._fast

    @property
    def held(self) -> int:
        """Bytes of the float32 copy the fast columns read (0 where they are the exact ones)."""
        return int(self._X.size) * 4 if self.copies else 0

    def columns(self, choice: Choice) -> SvmColumns:
        """The columns a solve reads: the exact ones for the whole problem as one working set, else the fast ones
        (``choice``: plan.choice's)."""
        return self.exact if plan.takes_whole(choice) else self.fast

    def session_bytes(self, rows: int, whole: bool) -> int:
        """Bytes of a solve's working copy of ``rows`` rows: the exact columns' for the whole problem, else the fast
        ones' (from the exact ones' before the float32 copy is made: its prepared rows take half the bytes)."""
        if whole or not self.copies:
            return int(self.exact.session_bytes(rows))
        if self._fast is not None:
            return int(self._fast.session_bytes(rows))
        return int(self.exact.session_bytes(rows)) // 2

    def choice(self, settings: DualSettings, rows: int, variables: int, memory_limit: int, solves: int = 1) -> Choice:
        """plan.choice for a problem of ``rows`` samples and ``variables`` variables that shares the cache planned in
        ``settings``, ``solves`` side by side within ``memory_limit``."""
        return plan.choice(self, settings, rows, variables, memory_limit, settings.cache_bytes, solves)


class SupportSet:
    """The samples a fitted model evaluates its kernel against.

    Parameters
    ----------
    kernel : fastkpca.kernels.Kernel
    samples : engines' Samples
        The training samples.
    support : ndarray of int
        The support vectors' training rows.
    """

    def __init__(self, kernel: Kernel, samples: SolverSamples, support: np.ndarray) -> None:
        X = _training(samples)
        self.kernel = kernel
        self.n_fit = X.shape[0] if hasattr(X, "shape") else len(X)
        self.sparse = v.is_sparse(X) and not kernel.precomputed and not kernel.reads_all_fitted
        self.all_fitted = bool(kernel.reads_all_fitted)
        if kernel.precomputed:
            self.samples = None
        elif self.all_fitted:
            self.samples = X
        else:
            self.samples = _rows(X, support)

    @classmethod
    def of_vectors(cls, kernel: Kernel, vectors: Any, n_fit: int, model: str) -> SupportSet:
        """The support set of a model given by its support vectors rather than its training samples (the fitted
        attributes of a model written, not fitted): the kernel (for a precomputed one, the vectors are none:
        the caller gives the kernel's rows) and the ``n_fit`` training samples; ValueError for a kernel that reads
        every training sample, which such a model does not hold."""
        out = cls.__new__(cls)
        if kernel.precomputed:
            out.kernel, out.samples = kernel, None
        else:
            out.kernel = kernel.for_samples(vectors)
            out.samples = out.kernel.check_samples(vectors)
        if out.kernel.reads_all_fitted:
            raise ValueError(f"this {model}'s kernel reads every training sample, which a model rebuilt from its "
                             "fitted attributes does not hold: fit it")
        out.n_fit, out.all_fitted = int(n_fit), False
        out.sparse = out.samples is not None and v.is_sparse(out.samples)
        return out

    @property
    def vectors(self) -> Any:
        """scikit-learn's ``support_vectors_``: the support vectors' rows (none without feature vectors)."""
        if self.samples is None or self.all_fitted:
            return np.empty((0, 0))
        return self.samples

    def layout(self, coef: np.ndarray) -> Any:
        """Coefficients as scikit-learn keeps them: CSR for a model of sparse samples."""
        if not self.sparse:
            return coef
        from scipy import sparse

        return sparse.csr_matrix(coef)

    def check_new(self, X: Any, model: str) -> Any:
        """New samples (validated) as :meth:`products` reads them: CSR for a sparse model, and a sparse X refused by a
        dense one."""
        if self.kernel.precomputed or self.all_fitted:
            return X
        if self.sparse:
            from scipy import sparse

            return v.check_sparse_samples(X if v.is_sparse(X) else sparse.csr_matrix(X), "X")
        if v.is_sparse(X):
            raise ValueError(f"cannot use sparse input in {model!r} trained on dense data")
        return X

    def products(self, X: Any, support: np.ndarray, V: np.ndarray, memory_limit: int | None = None) -> np.ndarray:
        """K(X, SV)·V, shape (n, V.shape[1]).

        Parameters
        ----------
        X : array-like or sparse matrix
            New samples (:meth:`check_new`), or for a precomputed kernel their rows against the training samples.
        support : ndarray of int
            The support vectors' training rows.
        V : ndarray of shape (n_SV, k)
        memory_limit : int, default=None
            Bytes that bound the chunks of a kernel evaluated in Python.
        """
        V = np.ascontiguousarray(V, dtype=np.float64)
        n = X.shape[0] if hasattr(X, "shape") else len(X)
        if self.kernel.precomputed:
            if X.shape[1] != self.n_fit:
                raise ValueError(f"X.shape[1] = {X.shape[1]} should be equal to {self.n_fit}, the number of samples at "
                                 "training time")
            if not support.size:
                return np.zeros((n, V.shape[1]))
            K = X[:, support]
            return np.asarray(K @ V if v.is_sparse(K) else np.asarray(K, dtype=np.float64) @ V, dtype=np.float64)
        if V.shape[0] == 0:
            return np.zeros((n, V.shape[1]))
        if self.all_fitted:
            full = np.zeros((self.n_fit, V.shape[1]))
            full[support] = V
            V = full
        return np.asarray(self.kernel.cross_product(self.samples, V, promote=True, memory_limit=memory_limit)(X))

    def primal(self, W: np.ndarray) -> Any:
        """The primal weights W·SV of a linear kernel (scikit-learn's ``coef_``): sparse for a sparse model.

        Raises
        ------
        AttributeError
            For any other kernel.
        """
        if getattr(self.kernel, "name", None) != "linear" or not self.kernel.native:
            raise AttributeError("coef_ is only available when using a linear kernel")
        coef = W @ self.samples
        if self.sparse:
            from scipy import sparse

            return sparse.csr_matrix(coef)
        return np.asarray(coef)


class DecisionMap:
    """The fitted row map x ↦ finish(K(x, SV)·V + intercept) (picklable, so an engine can apply it to its chunks;
    ``finish``, a picklable function of the decision values, or None)."""

    def __init__(self, support_set: SupportSet, support: np.ndarray, V: np.ndarray, intercept: np.ndarray,
                 model: str, memory_limit: int | None = None,
                 finish: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.support_set, self.support, self.V, self.intercept = support_set, support, V, intercept
        self.model, self.memory_limit, self.finish = model, memory_limit, finish

    def __call__(self, X: Any) -> np.ndarray:
        X = self.support_set.check_new(X, self.model)
        values = self.support_set.products(X, self.support, self.V, self.memory_limit) + self.intercept
        return values if self.finish is None else self.finish(values)


def _rows(X: Any, support: np.ndarray) -> Any:
    """Rows ``support`` of X: an array (CSR for sparse X), or an object array of what a list holds."""
    if v.is_sparse(X):
        from scipy import sparse

        return sparse.csr_matrix(X[support])
    if isinstance(X, np.ndarray):
        return X[support]
    out = np.empty(len(support), dtype=object)
    for k, i in enumerate(support):
        out[k] = X[int(i)]
    return out
