"""Which kind of kernel an estimator's ``kernel`` (or ``affinity``) parameter names: the one place that
decides it. Estimators pass their parameters as given to :func:`make` (or :func:`make_affinity`) and hold
the :class:`~fastkpca.kernels.kernel.Kernel` it returns; they validate the parameter with
:func:`constraint` and set their ``pairwise`` tag from :func:`takes_matrix`.

The kinds, asked in this order: a :class:`~fastkpca.kernels.kernel.Kernel` itself (already resolved); those
added with :func:`register` (newest first); ``"precomputed"``; the
native registry's names; a scikit-learn kernel object; any other string (one of scikit-learn's pairwise
metrics, evaluated by scikit-learn) or callable (a kernel of two rows, as scikit-learn's
``pairwise_kernels`` takes it). Adding a kind is one class and one :func:`register` call; no estimator
changes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _validation as v
from . import registry
from .differentiable import DifferentiableKernel
from .gaussian_process import GaussianProcessKernel, terms_of
from .graphs import AffinityFunction, NeighborsGraph
from .kernel import Kernel
from .native import NativeKernel
from .precomputed import PrecomputedAffinity, PrecomputedKernel
from .python_kernels import GramFunctionKernel, PairwiseKernel, ScikitLearnKernel, is_sklearn_kernel

__all__ = ["make", "make_affinity", "register", "unregister", "constraint", "takes_matrix", "takes_vectors", "gamma_of",
           "differentiable", "GRAPHS", "KERNEL_NAMES", "AFFINITY_NAMES"]

#: Affinities that are graphs of the samples rather than kernels (spectral estimators only).
GRAPHS = ("nearest_neighbors", "precomputed_nearest_neighbors")
#: The kernel names fastkpca evaluates itself: the native registry's (aliases included) and "precomputed".
KERNEL_NAMES = (*registry.NAMES, "precomputed")
#: The affinity names of the spectral estimators: the kernel names and the graphs.
AFFINITY_NAMES = (*KERNEL_NAMES, *GRAPHS)

#: (accepts(spec) -> bool, make(spec, **parameters) -> Kernel), newest first.
_registered: list[tuple[Callable[[Any], bool], Callable[..., Kernel]]] = []


def register(accepts: Callable[[Any], bool], make_kernel: Callable[..., Kernel]) -> None:
    """Add a kernel kind: every estimator then takes the specs it accepts as its ``kernel``.

    Parameters
    ----------
    accepts : callable
        ``accepts(spec) -> bool``: whether the estimator's ``kernel`` (or ``affinity``) is of this kind.
    make_kernel : callable
        ``make_kernel(spec, gamma=..., degree=..., coef0=..., kernel_params=..., n_features=..., n_jobs=...)``
        returns the :class:`~fastkpca.kernels.Kernel`. Kinds registered later are asked first.

    Examples
    --------
    >>> from fastkpca import kernels
    >>> def accepts(spec):
    ...     return spec == "my_rbf"
    >>> kernels.register(accepts, lambda spec, **params: kernels.make("rbf", **params))
    >>> kernels.make("my_rbf", gamma=0.5, n_features=3).gamma
    0.5
    >>> kernels.unregister(accepts)
    """
    _registered.insert(0, (accepts, make_kernel))


def unregister(accepts: Callable[[Any], bool]) -> None:
    """Remove the kinds registered with this ``accepts`` (:func:`register`).

    Parameters
    ----------
    accepts : callable
        The function given to :func:`register`.

    Examples
    --------
    >>> from fastkpca import kernels
    >>> def accepts(spec):
    ...     return spec == "my_rbf"
    >>> kernels.register(accepts, lambda spec, **params: kernels.make("rbf", **params))
    >>> kernels.unregister(accepts)
    """
    _registered[:] = [entry for entry in _registered if entry[0] is not accepts]


def _registered_kind(spec):
    for accepts, make_kernel in _registered:
        if accepts(spec):
            return make_kernel
    return None


def make(spec, *, gamma=None, degree=3, coef0=1, kernel_params: dict | None = None, n_features: int,
         n_jobs=None, named_given_to: str | None = None, callable_of_sets: bool = False) -> Kernel:
    """The kernel an estimator's parameters describe (scikit-learn's rules: gamma, degree and coef0 for
    named kernels, gamma None meaning 1 / n_features for the native ones; ``kernel_params`` for a
    callable). ``named_given_to``: the estimator's name when the user gave it gamma, degree or coef0, which
    it refuses for a callable or precomputed kernel (scikit-learn's Nystroem does). ``callable_of_sets``: a
    callable is a function of two sets of samples returning their kernel matrix (scikit-learn's support
    vector machines), not of two rows."""
    if named_given_to and (callable(spec) or (isinstance(spec, str) and spec == "precomputed")):
        raise ValueError(f"Don't pass gamma, coef0 or degree to {named_given_to} if using a callable or precomputed "
                         "kernel")
    if isinstance(spec, Kernel):  # a kernel object of fastkpca's own: already resolved
        return spec
    maker = _registered_kind(spec)
    if maker is not None:
        return maker(spec, gamma=gamma, degree=degree, coef0=coef0, kernel_params=kernel_params,
                     n_features=n_features, n_jobs=n_jobs)
    if isinstance(spec, str):
        if spec == "precomputed":
            return PrecomputedKernel(v.n_threads(n_jobs))
        if registry.is_native(spec):
            return NativeKernel.resolve(spec, gamma, 3 if degree is None else degree, 1 if coef0 is None else coef0,
                                        n_features, n_jobs)
        named = {key: value for key, value in (("gamma", gamma), ("degree", degree), ("coef0", coef0))
                 if value is not None}
        return PairwiseKernel(spec, {**named, **(kernel_params or {})}, n_jobs)
    if is_sklearn_kernel(spec):
        terms = terms_of(spec)  # the forms Gaussian process users fit are evaluated natively
        if terms is not None:
            return GaussianProcessKernel(spec, terms, v.n_threads(n_jobs))
        return ScikitLearnKernel(spec, v.n_threads(n_jobs))
    if callable(spec):
        if callable_of_sets:
            return GramFunctionKernel(spec, v.n_threads(n_jobs))
        return PairwiseKernel(spec, kernel_params, n_jobs)
    raise TypeError(f"kernel must be a kernel name, 'precomputed', a callable or a kernel object, got {spec!r}")


def make_affinity(spec, *, gamma=None, degree=3, coef0=1, kernel_params: dict | None = None, n_neighbors: int,
                  callable_is_pairwise: bool, n_features: int, n_jobs=None) -> Kernel:
    """The affinity a spectral estimator's ``affinity`` names: a precomputed affinity, a k-nearest-neighbour
    graph (of the samples, or of precomputed distances), a function of X (SpectralEmbedding's callable),
    or a kernel as :func:`make` makes it (SpectralClustering's callable is a kernel of two rows)."""
    if _registered_kind(spec) is None:
        if isinstance(spec, str) and spec == "precomputed":
            return PrecomputedAffinity(v.n_threads(n_jobs))
        if isinstance(spec, str) and spec in GRAPHS:
            fallback = NativeKernel.resolve("rbf", gamma, degree, coef0, n_features, n_jobs)
            return NeighborsGraph(n_neighbors, spec == GRAPHS[1], n_jobs, sparse_fallback=fallback)
        if callable(spec) and not callable_is_pairwise and not is_sklearn_kernel(spec):
            return AffinityFunction(spec, n_jobs)
    return make(spec, gamma=gamma, degree=degree, coef0=coef0, kernel_params=kernel_params, n_features=n_features,
                n_jobs=n_jobs)


def takes_matrix(spec) -> bool:
    """Whether an estimator given ``spec`` takes a square matrix as X (scikit-learn's ``pairwise`` tag):
    ``"precomputed"`` kernels and affinities, precomputed distances."""
    return isinstance(spec, str) and spec in ("precomputed", "precomputed_nearest_neighbors")


def gamma_of(kernel: Kernel) -> float | None:
    """The scale ``gamma`` of a kernel whose kind has one among its hyperparameters (what KernelRidgeCV searches: a
    native kernel's, or a registered kind's that names one), else None."""
    if isinstance(kernel, NativeKernel):
        return float(kernel.gamma) if kernel.hyperparameters else None
    names = tuple(getattr(kernel, "hyperparameters", ()))
    return float(np.exp(np.asarray(kernel.theta)[names.index("gamma")])) if "gamma" in names else None  # type: ignore[attr-defined]


def differentiable(kernel: Kernel, what: str) -> DifferentiableKernel:
    """``kernel`` as the Gaussian processes take it, a kernel with hyperparameters and gradients, or TypeError
    naming its kind (a kind registered for scikit-learn's kernel objects that does not extend DifferentiableKernel).
    """
    if not isinstance(kernel, DifferentiableKernel):
        raise TypeError(f"{what} needs a kernel with hyperparameters and their gradients (a subclass of "
                        f"fastkpca.kernels.DifferentiableKernel); {kernel.label} is a {type(kernel).__name__}")
    return kernel


def takes_vectors(spec, *, callable_of_sets: bool = False) -> bool:
    """Whether an estimator given ``spec`` validates its samples as numeric vectors: not for a callable of two sets
    of samples (``callable_of_sets``: scikit-learn's support vector machines pass it X as given) nor for a
    scikit-learn kernel object that reads structured samples (``requires_vector_input`` False)."""
    if isinstance(spec, Kernel) or _registered_kind(spec) is not None or isinstance(spec, str):
        return True
    if is_sklearn_kernel(spec):
        return bool(spec.requires_vector_input)
    return not (callable(spec) and callable_of_sets)


def constraint(*names: str):
    """The parameter constraint of a ``kernel``/``affinity``: one of ``names``, a callable, a scikit-learn kernel
    object, or a spec a registered kind accepts (the check runs when the estimator validates its
    parameters)."""

    def check(value, name):
        if isinstance(value, Kernel) or _registered_kind(value) is not None or callable(value):
            return
        if not isinstance(value, str):
            raise TypeError(f"{name} must be one of {', '.join(map(repr, names))}, a callable or a kernel object, got "
                            f"{value!r}")
        v.check_choice(value, name, names)

    return check
