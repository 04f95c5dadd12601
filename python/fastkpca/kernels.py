"""Kernel (Gram) matrices: :func:`gram` and scikit-learn's :func:`pairwise_kernels` interface."""

from __future__ import annotations

import numpy as np

from . import _native, _registry
from . import _validation as v

__all__ = ["gram", "pairwise_kernels"]


def gram(X, Y=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0, n_jobs=None):
    """Kernel matrix ``K[i, j] = k(X[i], Y[j])``, computed in parallel tiles.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
        Samples. Lists, DataFrames, sparse matrices and any memory layout are accepted; data that is not
        already a C-contiguous float32/float64 array is converted once.
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
    kernel = v.check_kernel(kernel)
    dtype = v.common_dtype(X, Y)
    X = v.check_samples(X, "X", dtype)
    if Y is not None:
        Y = v.check_samples(Y, "Y", dtype)
        if Y.shape[1] != X.shape[1]:
            raise ValueError(
                f"X and Y have different numbers of features: X has {X.shape[1]}, Y has {Y.shape[1]}"
            )
    gamma, degree, coef0 = v.kernel_params(kernel, gamma, degree, coef0, X.shape[1])
    threads = v.n_threads(n_jobs)
    n_y = X.shape[0] if Y is None else Y.shape[0]
    out = v.empty((X.shape[0], n_y), dtype, f"the {X.shape[0]}×{n_y} {np.dtype(dtype).name} kernel matrix")
    _native.core.gram_into(X, Y, kernel, gamma, degree, coef0, out, threads)
    return out


# sklearn.metrics.pairwise.pairwise_kernels metric names served natively (every name and alias of the
# core's registry) -> (kernel, the keyword arguments scikit-learn's function for it accepts).
_NATIVE_METRICS = {
    name: (spec.name, spec.parameters or ("dense_output",)) for name, spec in _registry.NAMES.items()
}


def pairwise_kernels(X, Y=None, metric="linear", *, filter_params=False, n_jobs=None, **kwds):
    """Kernel between arrays, with the signature and semantics of sklearn.metrics.pairwise.pairwise_kernels.

    The metrics ``"linear"``, ``"poly"``/``"polynomial"``, ``"rbf"``, ``"laplacian"``, ``"sigmoid"`` and
    ``"cosine"`` run on fastkpca's native :func:`gram`; anything else (``"precomputed"``, ``"chi2"``,
    ``"additive_chi2"``, callables) is passed to scikit-learn's implementation unchanged.

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
    params = dict(_registry.PARAMETER_DEFAULTS)
    params.update(kwds)
    return gram(X, Y, kernel=kernel, n_jobs=n_jobs, **params)


class NativeKernel:
    """One native kernel with its parameters resolved: what the low-rank and streamed code paths evaluate.

    ``cross(X, Y)`` is ``K(X, Y)``; for rbf it is computed after shifting both sides by Y's column means, so
    a chunk of X's rows gets exactly the rows the whole X would: streamed results do not depend on the
    chunking. ``diagonal(X)`` is ``k(x_i, x_i)``. Arrays must be validated, C-contiguous and of one dtype.
    """

    __slots__ = ("name", "gamma", "degree", "coef0", "threads")

    def __init__(self, name: str, gamma: float, degree: float, coef0: float, threads: int):
        self.name, self.gamma, self.degree, self.coef0, self.threads = name, gamma, degree, coef0, threads

    @classmethod
    def resolve(cls, kernel, gamma, degree, coef0, n_features: int, n_jobs=None) -> NativeKernel:
        """Validated kernel name and parameters (gamma None -> 1 / n_features; scikit-learn's defaults)."""
        name = v.check_kernel(kernel)
        gamma, degree, coef0 = v.kernel_params(name, gamma, degree, coef0, n_features)
        return cls(name, gamma, degree, coef0, v.n_threads(n_jobs))

    def cross(self, X: np.ndarray, Y: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
        n_y = X.shape[0] if Y is None else Y.shape[0]
        if out is None:
            out = v.empty((X.shape[0], n_y), X.dtype, f"a {X.shape[0]}×{n_y} kernel block")
        _native.core.gram_into(X, Y, self.name, self.gamma, self.degree, self.coef0, out, self.threads)
        return out

    def product(self, X: np.ndarray, Y: np.ndarray, V: np.ndarray, out: np.ndarray | None = None,
                rows: int = 65536) -> np.ndarray:
        """``K(X, Y) @ V`` in float64, tile by tile: the cross kernel is never stored (cross_product.hpp).

        X goes to the core ``rows`` rows at a time, which bounds the core's padded working copy of the
        output; the result does not depend on ``rows``.
        """
        V = np.ascontiguousarray(V, dtype=np.float64)
        if out is None:
            out = v.empty((X.shape[0], V.shape[1]), np.float64, f"a {X.shape[0]}×{V.shape[1]} product")
        for start in range(0, X.shape[0], rows):
            part = X[start:start + rows]
            _native.core.cross_product_into(part, Y, self.name, self.gamma, self.degree, self.coef0, V,
                                            out[start:start + part.shape[0]], self.threads)
        return out

    def diagonal(self, X: np.ndarray) -> np.ndarray:
        out = np.empty(X.shape[0], dtype=X.dtype)
        _native.core.kernel_diagonal_into(X, self.name, self.gamma, self.degree, self.coef0, out, self.threads)
        return out

    def __repr__(self):
        return f"NativeKernel({self.name!r}, gamma={self.gamma}, degree={self.degree}, coef0={self.coef0})"
