"""Kernel (Gram) matrices: :func:`gram` and scikit-learn's :func:`pairwise_kernels` interface, on the native
kernels (dense or sparse samples)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike

from .. import _validation as v
from . import registry
from .native import NativeKernel

__all__ = ["gram", "pairwise_kernels", "fitted_pairwise_kernels"]


def gram(X: ArrayLike, Y: ArrayLike | None = None, *, kernel: str = "linear", gamma: float | None = None,
         degree: float = 3, coef0: float = 1.0, n_jobs: int | None = None) -> np.ndarray:
    """Kernel matrix ``K[i, j] = k(X[i], Y[j])``, computed in parallel tiles.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples_X, n_features)
        Samples. Lists, DataFrames and any memory layout are accepted; data that is not already a
        C-contiguous float32/float64 array is converted once. Sparse matrices stay sparse: every entry
        comes from sparse inner products and the rows' norms (as scikit-learn's sparse path computes
        them), and if either of X and Y is sparse both are evaluated as CSR.
    Y : array-like of shape (n_samples_Y, n_features), default=None
        Second set of samples; ``None`` means ``Y = X``, and then only one triangle is computed: the
        result is exactly symmetric, with an exact unit diagonal for ``"rbf"`` and ``"laplacian"``.
    kernel : {"linear", "poly", "polynomial", "rbf", "laplacian", "sigmoid", "cosine"}, default="linear"
        ``linear``: x·y; ``poly``: (gamma x·y + coef0)^degree; ``rbf``: exp(-gamma ‖x-y‖²);
        ``laplacian``: exp(-gamma ‖x-y‖₁); ``sigmoid``: tanh(gamma x·y + coef0); ``cosine``:
        x·y / (‖x‖ ‖y‖), 0 for zero rows. Formulas and defaults of sklearn.metrics.pairwise.
    gamma : float >= 0, default=None
        Kernel scale; ``None`` means ``1 / n_features``. Ignored by linear and cosine.
    degree : float >= 0, default=3
        Degree of the polynomial kernel.
    coef0 : float, default=1.0
        Offset of the polynomial and sigmoid kernels.
    n_jobs : int, default=None
        Threads. ``None``: OpenMP's default (``OMP_NUM_THREADS``, limits set by threadpoolctl); ``-1``: all
        cores; ``k >= 1``: k threads. Results do not depend on the thread count (bit for bit).

    Returns
    -------
    K : ndarray of shape (n_samples_X, n_samples_Y)
        float32 if X and Y are both float32, float64 otherwise.

    Raises
    ------
    ValueError
        NaN/inf in the data, empty or non-2-D input, mismatched feature counts, bad parameters.
    TypeError
        complex, object or string data.
    MemoryError
        The output does not fit in the available memory (raised before allocating).

    Notes
    -----
    ``rbf`` uses the expansion ‖x‖² + ‖y‖² − 2x·y (a GEMM per tile) after shifting the data by the
    column means of X, which distances do not notice but which keeps float32 accurate for data far from
    the origin; rounding below zero is clipped.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> X = np.array([[0.0, 1.0], [1.0, 1.0]])
    >>> fastkpca.gram(X, kernel="rbf", gamma=0.5)
    array([[1.        , 0.60653066],
           [0.60653066, 1.        ]])
    """
    kernel = registry.check_kernel(kernel)
    dtype = v.common_dtype(X, Y)
    sparse = v.is_sparse(X) or v.is_sparse(Y)
    A = _samples(X, "X", dtype, sparse)
    B = None if Y is None else _samples(Y, "Y", dtype, sparse)
    if B is not None and B.shape[1] != A.shape[1]:
        raise ValueError(f"X and Y have different numbers of features: X has {A.shape[1]}, Y has {B.shape[1]}")
    native = NativeKernel.resolve(kernel, gamma, degree, coef0, A.shape[1], n_jobs)
    native.check_dtype(dtype)
    n_y = A.shape[0] if B is None else B.shape[0]
    out = v.empty((A.shape[0], n_y), dtype, f"the {A.shape[0]}×{n_y} {np.dtype(dtype).name} kernel matrix")
    return native.cross(A, B, out=out)


def _samples(X, name: str, dtype, sparse: bool) -> Any:
    """Validated samples: canonical CSR when ``sparse`` (a dense side made sparse), else dense."""
    if not sparse:
        return v.check_samples(X, name, dtype)
    if not v.is_sparse(X):
        from scipy import sparse as sp

        X = sp.csr_matrix(v.check_samples(X, name, dtype))
    return v.check_sparse_samples(X, name, dtype)


# sklearn.metrics.pairwise.pairwise_kernels metric names served natively (every name and alias of the
# core's registry) -> (kernel, the keyword arguments scikit-learn's function for it accepts).
_NATIVE_METRICS = {
    name: (spec.name, spec.parameters or ("dense_output",)) for name, spec in registry.NAMES.items()
}


def pairwise_kernels(X: ArrayLike, Y: ArrayLike | None = None, metric: str | Callable[..., float] = "linear", *,
                     filter_params: bool = False, n_jobs: int | None = None, **kwds: Any) -> np.ndarray:
    """Kernel between arrays, with the signature and semantics of sklearn.metrics.pairwise.pairwise_kernels.

    The metrics ``"linear"``, ``"poly"``/``"polynomial"``, ``"rbf"``, ``"laplacian"``, ``"sigmoid"`` and
    ``"cosine"`` run on fastkpca's native :func:`gram` (dense or sparse X and Y); anything else
    (``"precomputed"``, ``"chi2"``, ``"additive_chi2"``, callables) is passed to scikit-learn's
    implementation unchanged.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
    Y : array-like of shape (n_samples_Y, n_features), default=None
    metric : str or callable, default="linear"
    filter_params : bool, default=False
        Drop keyword arguments the kernel does not take instead of raising TypeError.
    n_jobs : int, default=None
        Threads, as in :func:`gram`.
    **kwds
        Kernel parameters (gamma, degree, coef0).

    Returns
    -------
    K : ndarray of shape (n_samples_X, n_samples_Y)

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> fastkpca.pairwise_kernels(np.eye(2), metric="poly", degree=2, gamma=1.0, coef0=0.0)
    array([[1., 0.],
           [0., 1.]])
    """
    if not (isinstance(metric, str) and metric in _NATIVE_METRICS):
        from sklearn.metrics import pairwise as skp

        return skp.pairwise_kernels(X, Y, metric=metric, filter_params=filter_params, n_jobs=n_jobs, **kwds)
    kernel, accepted = _NATIVE_METRICS[metric]
    if filter_params:
        kwds = {k: val for k, val in kwds.items() if k in accepted}
    unknown = set(kwds) - set(accepted)
    if unknown:
        raise TypeError(f"{metric} kernel got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    kwds.pop("dense_output", None)
    params: dict[str, Any] = {**registry.PARAMETER_DEFAULTS, **kwds}
    return gram(X, Y, kernel=kernel, n_jobs=n_jobs, **params)


def fitted_pairwise_kernels(X, Y, kernel, *, gamma, degree, coef0, kernel_params, n_jobs=None) -> np.ndarray:
    """A fitted estimator's kernel between X and Y as scikit-learn's estimators evaluate it (KernelPCA's
    ``_get_kernel``): :func:`pairwise_kernels` with ``kernel_params`` for a callable, else with the resolved
    ``gamma``, ``degree`` and ``coef0`` (those the kernel does not take left out)."""
    if callable(kernel) and not isinstance(kernel, str):
        params = kernel_params or {}
    else:
        params = {"gamma": gamma, "degree": degree, "coef0": coef0}
    return pairwise_kernels(X, Y, metric=kernel, filter_params=True, n_jobs=n_jobs, **params)

