"""Kernels evaluated in Python: a callable or one of scikit-learn's pairwise metrics that the native registry
does not hold (``"chi2"``, ``"additive_chi2"``), through ``sklearn.metrics.pairwise.pairwise_kernels``; and a
scikit-learn kernel object (``sklearn.gaussian_process.kernels``), through its own vectorised ``__call__``,
with its hyperparameters in log space. Both are evaluated block by block (kernel.py), never as one N×N
matrix unless a storage that holds it is planned."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _validation as v
from .differentiable import DifferentiableKernel
from .kernel import Kernel

__all__ = ["PairwiseKernel", "GramFunctionKernel", "ScikitLearnKernel", "ScikitLearnHyperparameters",
           "is_sklearn_kernel"]


def is_sklearn_kernel(obj) -> bool:
    """An instance of sklearn.gaussian_process.kernels.Kernel (recognised without importing scikit-learn
    when the object's class does not come from it)."""
    if not any(c.__module__.startswith("sklearn.") for c in type(obj).__mro__):
        return False
    from sklearn.gaussian_process.kernels import Kernel as SklearnKernel

    return isinstance(obj, SklearnKernel)


class ScikitLearnHyperparameters:
    """The hyperparameters of a kernel that holds a scikit-learn kernel object ``self.kernel``: its free ones'
    names, ``theta`` (log space) and ``bounds``, and ``with_theta``, the kernel of
    ``self.kernel.clone_with_theta(theta)`` (made by the class's ``with_object``).

    scikit-learn computes ``theta``, ``bounds`` and the names from the object's parameters every time they are
    read (``get_params`` of every node of the kernel's tree). An optimiser reads them at every evaluation, so
    the names and bounds, which a kernel's θ does not change, are read once per kernel and handed on by
    ``with_theta``; the θ a kernel was made with by ``with_theta`` is kept with it. (The object a kernel was made
    from is the estimator's, whose θ scikit-learn's optimiser sets: that kernel's ``theta`` reads the object.)"""

    kernel: Any
    #: The names of the free hyperparameters and their bounds, once read (shared by the kernels with_theta makes).
    _shape: tuple[tuple[str, ...], np.ndarray] | None = None
    #: The θ this kernel was made with by ``with_theta`` (None: the object's own).
    _theta: np.ndarray | None = None

    @property
    def label(self) -> str:  # the kernel class's
        raise NotImplementedError

    def with_object(self, kernel) -> Kernel:
        """This kind of kernel for another scikit-learn kernel object of the same form."""
        raise NotImplementedError

    def _names_and_bounds(self) -> tuple[tuple[str, ...], np.ndarray]:
        if self._shape is None:
            names: list[str] = []
            for h in self.kernel.hyperparameters:
                if not h.fixed:
                    names += [h.name] if h.n_elements == 1 else [f"{h.name}[{i}]" for i in range(h.n_elements)]
            bounds = np.asarray(self.kernel.bounds, dtype=np.float64).reshape(-1, 2)
            bounds.flags.writeable = False
            self._shape = (tuple(names), bounds)
        return self._shape

    @property
    def hyperparameters(self) -> tuple[str, ...]:
        return self._names_and_bounds()[0]

    @property
    def theta(self) -> np.ndarray:
        if self._theta is not None:
            return self._theta.copy()
        return np.asarray(self.kernel.theta, dtype=np.float64)

    @property
    def bounds(self) -> np.ndarray:
        return self._names_and_bounds()[1].copy()

    def _checked_theta(self, theta) -> np.ndarray:
        """θ as a float64 vector of this kernel's length (ValueError otherwise)."""
        theta = np.array(theta, dtype=np.float64).reshape(-1)
        size = self._names_and_bounds()[1].shape[0]
        if theta.shape[0] != size:
            raise ValueError(f"{self.label} has {size} free hyperparameters, got theta of length {theta.shape[0]}")
        return theta

    def _made_with(self, other, theta: np.ndarray):
        """``other`` (this kind of kernel at ``theta``) holding this kernel's names and bounds and that θ."""
        other._shape, other._theta = self._names_and_bounds(), theta
        return other

    def with_theta(self, theta) -> Kernel:
        theta = self._checked_theta(theta)
        return self._made_with(self.with_object(self.kernel.clone_with_theta(theta)), theta)


class PairwiseKernel(Kernel):
    """``K(X, Y) = pairwise_kernels(X, Y, metric, filter_params=True, **params)``: a callable of two rows, or a
    metric name scikit-learn evaluates. Dense or sparse samples, as scikit-learn takes them."""

    def __init__(self, metric: str | Callable, params: dict | None = None, n_jobs=None):
        super().__init__(v.n_threads(n_jobs))
        self.metric, self.params, self.n_jobs = metric, dict(params or {}), n_jobs

    @property
    def label(self) -> str:
        return f"kernel={self.metric!r}"

    def check_samples(self, X, name: str = "X"):
        if v.is_sparse(X):
            return X  # scikit-learn evaluates sparse rows itself
        return super().check_samples(X, name)

    def new_rows(self, X, Y, dtype=None):
        return X if v.is_sparse(X) else super().new_rows(X, Y, dtype)

    def cross(self, X, Y=None, out=None) -> np.ndarray:
        from sklearn.metrics.pairwise import pairwise_kernels

        return self._into(pairwise_kernels(X, Y, metric=self.metric, filter_params=True, n_jobs=self.n_jobs,
                                           **self.params), out)


class GramFunctionKernel(Kernel):
    """``K(X, Y) = f(X, Y)``: a callable of two sets of samples that returns their kernel matrix, as scikit-learn's
    support vector machines take a callable kernel. The samples are passed as given (arrays, or lists of
    strings the function reads); what it returns must be a finite n_X × n_Y array. New samples are evaluated
    against the whole training set (``reads_all_fitted``), as scikit-learn does."""

    reads_all_fitted = True

    def __init__(self, function: Callable, threads: int = 0):
        super().__init__(threads)
        self.function = function

    @property
    def label(self) -> str:
        return f"kernel={self.function!r}"

    def check_samples(self, X, name: str = "X"):
        return X

    def new_rows(self, X, Y, dtype=None):
        return X

    def fitted_in(self, Y, dtype):
        return Y

    def matrix_bytes(self, n: int, itemsize: int) -> int:
        return n * n * 8

    def cross(self, X, Y=None, out=None) -> np.ndarray:
        K = self.function(X, X if Y is None else Y)
        if v.is_sparse(K):
            K = K.toarray()
        K = np.asarray(K, dtype=np.float64)
        rows = _length(X)
        cols = rows if Y is None else _length(Y)
        if K.shape != (rows, cols):
            raise ValueError(f"{self.label} returned an array of shape {K.shape} for {rows} and {cols} samples: a "
                             f"kernel of two sets of samples returns their {rows}×{cols} matrix")
        v.check_finite(K, f"the kernel matrix of {self.label}")
        return self._into(K, out)


def _length(X) -> int:
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)


class ScikitLearnKernel(ScikitLearnHyperparameters, DifferentiableKernel):
    """A scikit-learn kernel object k (``sklearn.gaussian_process.kernels``): ``K(X, Y) = k(X, Y)`` in float64
    on dense samples, ``diagonal(X) = k.diag(X)``, and k's hyperparameters: ``theta`` (log space, the free
    ones), ``bounds``, ``with_theta`` (``k.clone_with_theta``)."""

    def __init__(self, kernel: Any, threads: int = 0):
        super().__init__(threads)
        self.kernel = kernel

    @property
    def label(self) -> str:
        return f"kernel={self.kernel!r}"

    def check_samples(self, X, name: str = "X"):
        if not self.kernel.requires_vector_input:
            return X  # structured samples (strings, sequences): the kernel reads them as they are
        return v.check_samples(X, name, np.float64)

    def new_rows(self, X, Y, dtype=None):
        return self.check_samples(X, "X")

    def fitted_in(self, Y, dtype):
        return Y

    def cross(self, X, Y=None, out=None) -> np.ndarray:
        return self._into(self.kernel(X) if Y is None else self.kernel(X, Y), out)

    def gradient_traces(self, X, W: np.ndarray) -> np.ndarray:
        """tr(W ∂K/∂θ_j) for every free hyperparameter, from the object's own gradient (an n × n × p array, as
        scikit-learn's likelihood computes it: the kernels evaluated natively never hold it).

        Parameters
        ----------
        X : array-like of shape (n, ...)
            The training samples.
        W : ndarray of shape (n, n)
            A symmetric weight matrix.

        Returns
        -------
        traces : ndarray of shape (len(theta),)
        """
        _, gradient = self.kernel(X, eval_gradient=True)
        return np.einsum("ij,jik->k", W, gradient)

    def diagonal(self, X) -> np.ndarray:
        return np.asarray(self.kernel.diag(X), dtype=np.float64)

    def with_object(self, kernel) -> ScikitLearnKernel:
        return ScikitLearnKernel(kernel, self.threads)
