"""Nystroem: scikit-learn's Nyström feature map on fastkpca's native kernels, with better landmarks."""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS

from .. import engines, kernels
from .. import _validation as v
from ..solvers.dense.eigh import symmetric_eigh
from ..solvers.dense.threads import interruptible
from ..kernels import Kernel
from ..solvers import low_rank
from ._base import EngineFitted, parameter_defaults

__all__ = ["Nystroem"]

#: scikit-learn's kernel names (its pairwise kernels and "precomputed") and fastkpca's native ones.
_KERNELS = tuple(dict.fromkeys((*kernels.KERNEL_NAMES, *PAIRWISE_KERNEL_FUNCTIONS)))
# scikit-learn clamps the landmark kernel's singular values at this before inverting their square roots.
_SINGULAR_VALUE_FLOOR = 1e-12


@parameter_defaults
class Nystroem(EngineFitted, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Approximate a kernel map by the Nyström method: a drop-in for sklearn.kernel_approximation.Nystroem.

    Features ``φ(x) = W^(-½) k(S, x)`` from m landmarks S (W = K(S, S)), so that ``φ(x)·φ(y)``
    approximates k(x, y): ``Φ Φᵀ = K(X, S) W⁺ K(S, X)``. The constructor, attributes and results are
    scikit-learn's (for the same ``random_state``, the same landmarks and features); the native kernels
    are evaluated by fastkpca's multithreaded tiles and ``transform`` streams the kernel in chunks.

    Parameters
    ----------
    kernel : str, callable or kernel object, default="rbf"
        A kernel name of sklearn.metrics.pairwise (``"linear"``, ``"poly"``, ``"rbf"``, ``"laplacian"``,
        ``"sigmoid"``, ``"cosine"`` run natively, on dense or sparse X; ``"chi2"``, ``"additive_chi2"``,
        ``"precomputed"`` and callables through scikit-learn), or a scikit-learn kernel object.
    gamma, coef0, degree : float, default=None
        Kernel parameters (None: the kernel's default). Not allowed with callable or precomputed kernels.
    kernel_params : dict, default=None
        Further kernel parameters (for callables).
    n_components : int, default=100
        Landmarks m, i.e. features. With ``landmarks="uniform"`` more than n_samples is reduced to
        n_samples with a warning (scikit-learn's behaviour); with ``"rpcholesky"`` it is an error.
    random_state : int, RandomState instance or None, default=None
        Seed of the landmark choice.
    n_jobs : int, default=None
        Threads of the native kernels.
    landmarks : {"uniform", "rpcholesky"} or array-like of shape (m, n_features), default="uniform"
        ``"uniform"``: m training samples drawn uniformly (scikit-learn's draw). ``"rpcholesky"``:
        randomly pivoted Cholesky, each landmark drawn with probability proportional to the residual
        kernel's diagonal, so regions already explained (and repeated points) are not drawn again and small
        clusters are not missed. An array: these m points (n_components is then ignored;
        ``component_indices_`` is None).
    memory_limit : int or str, default=None
        Bytes ``fit`` and ``transform`` may use beyond X and the result (None: 80% of the available
        memory): bounds the chunks of the cross kernel and RPCholesky's search.

    Attributes
    ----------
    components_ : ndarray of shape (m, n_features)
        The landmarks.
    component_indices_ : ndarray of shape (m,) or None
        Their rows in the training data (None for given landmarks).
    normalization_ : ndarray of shape (m, m)
        ``W^(-½)`` as scikit-learn defines it: from W's singular values clamped at 1e-12.
    landmark_info_ : dict
        How the landmarks were chosen (method, seconds; for rpcholesky the rows searched, kernel columns
        evaluated and the residual trace fraction).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import Nystroem
    >>> X = np.random.default_rng(0).standard_normal((500, 4))
    >>> Nystroem(n_components=50, landmarks="rpcholesky", random_state=0).fit_transform(X).shape
    (500, 50)
    """

    def __init__(self, kernel: str | Callable[..., Any] | Any = "rbf", *, gamma: float | None = None,
                 coef0: float | None = None, degree: float | None = None, kernel_params: dict | None = None,
                 n_components: int = 100, random_state: int | np.random.RandomState | None = None,
                 n_jobs: int | None = None, landmarks: str | Any = "uniform", memory_limit: int | str | None = None):
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.kernel_params = kernel_params
        self.n_components = n_components
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.landmarks = landmarks
        self.memory_limit = memory_limit

    def _kernel(self, n_features: int) -> Kernel:
        """The kernel by scikit-learn's rule: kernel_params plus the non-None gamma/coef0/degree, which callable
        and precomputed kernels refuse."""
        named = {name: getattr(self, name) for name in ("gamma", "coef0", "degree") if getattr(self, name) is not None}
        params = {**(self.kernel_params or {}), **named}
        return kernels.make(self.kernel, gamma=params.get("gamma"), degree=params.get("degree"),
                            coef0=params.get("coef0"), kernel_params=self.kernel_params, n_features=n_features,
                            n_jobs=self.n_jobs, named_given_to="Nystroem" if named else None)

    # --------------------------------------------------------------------------------------------- fit

    def fit(self, X, y=None):
        """Choose the landmarks and compute the normalization.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : Nystroem
        """
        kernels.constraint(*_KERNELS)(self.kernel, "kernel")
        v.check_int(self.n_components, "n_components", minimum=1)
        v.choice(*low_rank.LANDMARK_METHODS, other=v.anything)(self.landmarks, "landmarks")
        v.optional_dict(self.kernel_params, "kernel_params")
        v.n_threads(self.n_jobs)
        limit = v.memory_limit(self.memory_limit)
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr")
        self._engine = samples.engine
        n, d = samples.shape
        kernel = samples.bind(self._kernel(d))
        start = time.perf_counter()
        if isinstance(self.landmarks, str) and self.landmarks == "uniform":
            m = self.n_components
            if m > n:  # scikit-learn's behaviour, which its tests rely on
                warnings.warn("n_components > n_samples. This is not possible.\nn_components was set to "
                              "n_samples, which results in inefficient evaluation of the full kernel.",
                              stacklevel=2)
                m = n
            # scikit-learn's draw
            index, info = low_rank.select_landmarks(samples, m, "uniform", kernel, random_state=self.random_state,
                                                    memory_limit=limit)
            basis = kernel.check_samples(samples.rows(index))
        else:
            basis, index, info = low_rank.landmarks(samples, self.landmarks, self.n_components, kernel,
                                                    random_state=self.random_state, memory_limit=limit,
                                                    name="n_components")
        W = np.asarray(kernel.cross(basis))
        self.normalization_ = _inverse_sqrt(W)
        self.components_ = basis
        self.component_indices_ = index
        self.landmark_info_ = dict(info, seconds=time.perf_counter() - start)
        self._n_features_out = basis.shape[0]
        self._feature_map = _NystromFeatures(basis, self.normalization_, kernel, limit)
        return self

    def transform(self, X):
        """Nyström features of X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        X_transformed : ndarray (a dask array for a dask X) of shape (n_samples, n_components)
        """
        return self._apply_fitted(getattr(self, "_feature_map", None), X, accept_sparse="csr")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags


class _NystromFeatures:
    """transform's row map: x ↦ K(x, S)·normalizationᵀ, in x's dtype: the cross kernel built in chunks
    (low_rank.chunk_rows) into one buffer by the kernel (natively for native kernels, on dense or sparse
    rows), each multiplied by the normalization into one preallocated result. Picklable."""

    def __init__(self, basis, normalization, kernel: Kernel, memory_limit):
        self.basis, self.normalization, self.kernel, self.memory_limit = basis, normalization, kernel, memory_limit

    def on_threads(self, threads: int):
        return _NystromFeatures(self.basis, self.normalization, self.kernel.on_threads(threads), self.memory_limit)

    def __call__(self, X) -> np.ndarray:
        dtype = np.dtype(X.dtype if X.dtype in (np.float32, np.float64) else np.float64)
        X = self.kernel.new_rows(X, self.basis, dtype)
        basis = self.basis if self.basis.dtype == dtype else self.basis.astype(dtype)
        n, m = X.shape[0], self.normalization.shape[0]
        rows = low_rank.chunk_rows(basis.shape[0], dtype.itemsize, self.memory_limit)
        out = v.empty((n, m), dtype, f"the {n}×{m} Nyström features")
        weights = np.ascontiguousarray(self.normalization.T, dtype=dtype)
        buf = np.empty((min(rows, n), basis.shape[0]), dtype)
        for start in range(0, n, rows):
            part = X[start:start + rows]
            C = self.kernel.cross(part, basis, out=buf[:part.shape[0]])
            interruptible(np.matmul, C, weights, out=out[start:start + part.shape[0]],  # Ctrl-C within it
                          flops=2.0 * part.shape[0] * C.shape[1] * m)
        return out


def _inverse_sqrt(W: np.ndarray) -> np.ndarray:
    """scikit-learn's normalization ``U diag(1/√max(s, 1e-12)) V`` from W = U diag(s) V.

    For a symmetric W (the native kernels' are exactly symmetric) it comes from the eigendecomposition
    W = E Λ Eᵀ, fewer flops than an SVD (one set of vectors): s = |λ| and V = sign(λ)·Eᵀ, so the result is
    ``E diag(sign(λ)/√max(|λ|, 1e-12)) Eᵀ`` (a zero eigenvalue counts as positive).

    Ctrl-C is answered within each piece: the eigendecomposition stops between its stages, and each of the
    m × m products (and the SVD) runs as one interruptible call, so an interrupt leaves at most one piece running
    in the background (and the interpreter's exit waits for no more than that piece).
    """
    dtype = W.dtype if W.dtype in (np.float32, np.float64) else np.float64
    flops = 2.0 * W.shape[0] ** 3
    if W.ndim == 2 and W.shape[0] == W.shape[1] and np.array_equal(W, W.T):
        values, vectors = symmetric_eigh(W.astype(dtype, copy=False))
        scale = np.where(values < 0, -1.0, 1.0) / np.sqrt(np.maximum(np.abs(values), _SINGULAR_VALUE_FLOOR))
        return interruptible(np.matmul, vectors * scale.astype(dtype), vectors.T, flops=flops).astype(dtype, copy=False)
    U, s, Vt = interruptible(np.linalg.svd, W.astype(dtype, copy=False), flops=6 * flops)
    return interruptible(np.matmul, U / np.sqrt(np.maximum(s, _SINGULAR_VALUE_FLOOR)).astype(dtype), Vt,
                         flops=flops).astype(dtype, copy=False)
