"""KernelPCA: scikit-learn's estimator on fastkpca's native kernels and block Lanczos solver."""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np
from scipy import linalg as sla
from scipy.sparse.linalg import eigsh as arpack_eigsh
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from . import _native
from . import _validation as v
from . import linalg
from ._eigenvalues import check_psd_eigenvalues
from ._sklearn_compat import validate_data
from .exceptions import ConvergenceWarning
from .kernels import _gram_packed, gram

__all__ = ["KernelPCA"]

_KERNELS = ("linear", "poly", "rbf", "laplacian", "sigmoid", "cosine", "precomputed")
_SOLVERS = ("auto", "dense", "arpack", "randomized", "lanczos")
# Below this many samples a dense LAPACK solve is as fast as anything and exactly scikit-learn's path.
_DENSE_BELOW = 200


class KernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel principal component analysis, a drop-in for sklearn.decomposition.KernelPCA.

    Same constructor, attributes and methods as scikit-learn's KernelPCA (>= 1.5), computed with fastkpca's
    multithreaded kernels and block Lanczos eigensolver: ``eigen_solver="auto"`` never runs a full dense
    eigendecomposition when ``n_components`` is much smaller than the number of samples.

    Parameters
    ----------
    n_components : int, default=None
        Number of components. ``None`` keeps all non-zero components (a full decomposition).
    kernel : {"linear", "poly", "rbf", "laplacian", "sigmoid", "cosine", "precomputed"} or callable, \
default="linear"
        Kernel; ``"laplacian"`` is an extra over scikit-learn. A callable gets two rows and returns a float.
    gamma : float, default=None
        Kernel coefficient of rbf, laplacian, poly and sigmoid; ``None`` means ``1 / n_features``.
    degree : float, default=3
        Degree of the poly kernel.
    coef0 : float, default=1
        Independent term of the poly and sigmoid kernels.
    kernel_params : dict, default=None
        Parameters for a callable kernel.
    alpha : float, default=1.0
        Ridge parameter of the inverse transform (``fit_inverse_transform=True``).
    fit_inverse_transform : bool, default=False
        Learn the pre-image map (kernel ridge from the scores back to the input space).
    eigen_solver : {"auto", "lanczos", "dense", "arpack", "randomized"}, default="auto"
        ``"lanczos"``: fastkpca's block Lanczos on the implicitly centered kernel; ``"dense"``,
        ``"arpack"``, ``"randomized"``: scikit-learn's solvers on the centered kernel. ``"auto"``: dense
        when there are at most 200 samples or all components are wanted, else lanczos (or
        scikit-learn's rule if a precomputed kernel is not symmetric).
    tol : float, default=0
        Convergence tolerance: ARPACK's, or for lanczos the relative residual ‖Kv − λv‖/λ₁ (0 means
        fastkpca's default, 1e-10).
    max_iter : int, default=None
        Iteration limit of arpack, or the pass limit of lanczos.
    iterated_power : int >= 0 or "auto", default="auto"
        Power iterations of the randomized solver.
    remove_zero_eig : bool, default=False
        Drop components with zero eigenvalue (always done when n_components is None).
    random_state : int, RandomState instance or None, default=None
        Seed of arpack's, randomized's and lanczos's random starts.
    copy_X : bool, default=True
        Keep a copy of X in ``X_fit_`` (otherwise a reference).
    n_jobs : int, default=None
        Threads for the kernel and the solver (see fastkpca.gram).
    verbose : int, default=0
        1: print the time of each stage to stderr; 2: also the solver's progress after every pass.
    callback : callable, default=None
        Called as ``callback(stage, info)`` with stage in ``"kernel"``, ``"center"``, ``"pass"``,
        ``"done"`` and a dict of figures; for progress displays.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues of the centered kernel matrix, descending.
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Eigenvectors, each signed so its largest-magnitude entry is positive.
    explained_variance_ : ndarray of shape (n_components,)
        Variance of each kernel principal component, ``eigenvalues_ / n_samples``.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``eigenvalues_ / trace(H K H)``: the share of the total variance in feature space.
    dual_coef_ : ndarray of shape (n_samples, n_features)
        Inverse transform matrix (only with fit_inverse_transform).
    X_transformed_fit_ : ndarray of shape (n_samples, n_components)
        Projection of the training data (only with fit_inverse_transform).
    X_fit_ : ndarray of shape (n_samples, n_features)
        Training data (or the precomputed kernel).
    gamma_ : float
        The gamma used.
    solver_info_ : dict
        What the eigensolver did (solver, passes over K for lanczos, time per stage).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Notes
    -----
    The scores of the training samples are ``U Λ^½`` (U the eigenvectors, Λ the eigenvalues of H K H).
    A new sample x is projected by centering its kernel row against the training kernel's column means
    and multiplying by ``U Λ^(-½)``: for a training sample this gives back ``U Λ^½`` because
    ``(H K H) U Λ^(-½) = U Λ^½``. Components with λ = 0 project to 0.

    Peak memory of ``fit`` is one N×N kernel in the input's float type plus O(N·(d + k)).

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import KernelPCA
    >>> X = np.random.default_rng(0).standard_normal((300, 5))
    >>> Z = KernelPCA(n_components=2, kernel="rbf", random_state=0).fit_transform(X)
    >>> Z.shape
    (300, 2)
    """

    def __init__(
        self,
        n_components=None,
        *,
        kernel="linear",
        gamma=None,
        degree=3,
        coef0=1,
        kernel_params=None,
        alpha=1.0,
        fit_inverse_transform=False,
        eigen_solver="auto",
        tol=0,
        max_iter=None,
        iterated_power="auto",
        remove_zero_eig=False,
        random_state=None,
        copy_X=True,
        n_jobs=None,
        verbose=0,
        callback=None,
    ):
        self.n_components = n_components
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.fit_inverse_transform = fit_inverse_transform
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.iterated_power = iterated_power
        self.remove_zero_eig = remove_zero_eig
        self.random_state = random_state
        self.copy_X = copy_X
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    # ----------------------------------------------------------------------------------------- checks

    def _check_params(self):
        if not (callable(self.kernel) or (isinstance(self.kernel, str) and self.kernel in _KERNELS)):
            raise ValueError(f"kernel must be one of {', '.join(_KERNELS)} or a callable, got {self.kernel!r}")
        if self.eigen_solver not in _SOLVERS:
            raise ValueError(f"eigen_solver must be one of {', '.join(_SOLVERS)}, got {self.eigen_solver!r}")
        if self.n_components is not None:
            v.check_int(self.n_components, "n_components", minimum=1)
        v.check_real(self.gamma, "gamma", minimum=0.0, allow_none=True)
        v.check_real(self.degree, "degree", minimum=0.0)
        v.check_real(self.coef0, "coef0")
        v.check_real(self.alpha, "alpha", minimum=0.0)
        v.check_real(self.tol, "tol", minimum=0.0)
        if self.max_iter is not None:
            v.check_int(self.max_iter, "max_iter", minimum=1)
        if self.iterated_power != "auto":
            v.check_int(self.iterated_power, "iterated_power", minimum=0)
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise ValueError(f"kernel_params must be a dict or None, got {self.kernel_params!r}")
        v.n_threads(self.n_jobs)
        if not isinstance(self.verbose, numbers.Integral):
            raise ValueError(f"verbose must be an integer, got {self.verbose!r}")
        if self.callback is not None and not callable(self.callback):
            raise ValueError("callback must be callable or None")
        if self.fit_inverse_transform and self.kernel == "precomputed":
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")

    # ------------------------------------------------------------------------------------ reporting

    def _report(self, stage, **info):
        if self.callback is not None:
            self.callback(stage, info)
        if self.verbose and (stage != "pass" or self.verbose >= 2):
            figures = ", ".join(f"{k}={val:.3g}" if isinstance(val, float) else f"{k}={val}"
                                for k, val in info.items())
            print(f"[KernelPCA] {stage}: {figures}", file=sys.stderr, flush=True)

    # -------------------------------------------------------------------------------------- kernels

    def _get_kernel(self, X, Y=None):
        if callable(self.kernel):
            from sklearn.metrics.pairwise import pairwise_kernels

            return pairwise_kernels(X, Y, metric=self.kernel, filter_params=True, n_jobs=self.n_jobs,
                                    **(self.kernel_params or {}))
        return gram(X, Y, kernel=self.kernel, gamma=self.gamma_, degree=self.degree, coef0=self.coef0,
                    n_jobs=self.n_jobs)

    def _training_kernel(self, X):
        """(K, owned): the training kernel, and whether this estimator owns it (may overwrite it).

        When the block Lanczos solver will only read it, a native kernel is built in packed lower-tile form
        (1-D, half the memory and half the traffic per pass; see ``_packs_kernel``)."""
        if self._packs_kernel(X.shape[0]):
            return _gram_packed(X, kernel=self.kernel, gamma=self.gamma_, degree=self.degree, coef0=self.coef0,
                                n_jobs=self.n_jobs)[0], True
        if self.kernel != "precomputed":
            return self._get_kernel(X), True
        K = v.as_float_array(X, "X (the precomputed kernel)")  # sparse kernels are densified
        v.check_square(K, "X (the precomputed kernel)")
        return np.ascontiguousarray(K), False

    # ------------------------------------------------------------------------------------------ fit

    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, or the kernel matrix (n_samples, n_samples) when kernel="precomputed".
        y : ignored

        Returns
        -------
        self : KernelPCA
        """
        self._check_params()
        X = validate_data(self, X, accept_sparse="csr", copy=self.copy_X, dtype=[np.float64, np.float32])
        self.gamma_ = 1 / X.shape[1] if self.gamma is None else self.gamma
        start = time.perf_counter()
        K, owned = self._training_kernel(X)
        self._report("kernel", seconds=time.perf_counter() - start, n_samples=X.shape[0], packed=K.ndim == 1)
        self._fit_kernel(K, owned, X.shape[0])
        if self.fit_inverse_transform:
            self._fit_inverse_transform(self.eigenvectors_ * np.sqrt(self.eigenvalues_), X)
        self.X_fit_ = X
        return self

    def _n_components(self, n):
        """Components computed for n samples: all of them when n_components is None."""
        return n if self.n_components is None else min(n, self.n_components)

    def _packs_kernel(self, n):
        """Whether fit keeps the kernel packed: a native kernel (symmetric by construction), solved by block
        Lanczos with a block no wider than linalg.PACKED_MAX_BLOCK (wider blocks pass faster over the full
        matrix)."""
        if callable(self.kernel) or self.kernel == "precomputed":
            return False
        n_components = self._n_components(n)
        return (self._choose_solver(n, n_components, True) == "lanczos"
                and linalg.default_block_size(n_components, n) <= linalg.PACKED_MAX_BLOCK)

    def _choose_solver(self, n, n_components, symmetric):
        if self.eigen_solver != "auto":
            return self.eigen_solver
        if not symmetric:  # scikit-learn's rule: its solvers read a non-symmetric kernel as it does
            return "arpack" if n > _DENSE_BELOW and n_components < 10 else "dense"
        if n <= _DENSE_BELOW or self.n_components is None:
            return "dense"
        return "lanczos"

    def _fit_kernel(self, K, owned, n):
        """Eigenpairs of H K H. Overwrites K only if ``owned``; never makes a second N×N array
        for lanczos (implicit centering) and at most one copy of a precomputed kernel otherwise.
        A 1-D K is an n×n kernel in packed form (see ``_training_kernel``), solved by lanczos."""
        packed_n = n if K.ndim == 1 else None
        n_components = self._n_components(n)
        threads = v.n_threads(self.n_jobs)
        symmetric, asym = True, 0.0  # gram builds exactly symmetric kernels
        if self.kernel == "precomputed":
            finite, _, asym = _native.core.scan_square(K, True, threads)
            if not finite:
                raise ValueError("the kernel matrix contains NaN or infinity")
            symmetric = asym == 0
        solver = self._choose_solver(n, n_components, symmetric)
        if solver == "lanczos" and not symmetric:
            raise ValueError(
                f"eigen_solver='lanczos' needs a symmetric kernel; the precomputed kernel has "
                f"max |K - K.T| = {asym:.3g}"
            )
        start = time.perf_counter()
        if solver == "lanczos":
            # H K H is applied implicitly inside the solver: K is only read, never rewritten.
            if packed_n is None:
                trace_K = float(np.trace(K, dtype=np.float64))
                col_mean, grand_mean = _native.core.kernel_means(K, threads)
            else:
                col_mean, grand_mean, trace_K = _native.core.packed_means(K, packed_n, threads)
            if not (np.isfinite(grand_mean) and np.isfinite(col_mean).all()):  # the one read of K before solving
                raise ValueError("the kernel matrix contains NaN or infinity (or its sums overflow)")
            self._report("center", seconds=time.perf_counter() - start, implicit=True)
            progress = None
            if self.callback is not None or self.verbose >= 2:
                progress = lambda passes, converged: self._report("pass", passes=passes, converged=converged)  # noqa: E731
            start = time.perf_counter()
            values, vectors, info = linalg.solve(
                K, n_components, centered=True, tol=self.tol or None, maxiter=self.max_iter, block_size=None,
                random_state=self.random_state, threads=threads, progress=progress, packed_n=packed_n,
            )
            if not info["converged"]:
                warnings.warn(f"KernelPCA: the lanczos solver stopped after {info['n_passes']} passes before "
                              "every component converged", ConvergenceWarning, stacklevel=3)
            values = values.astype(K.dtype, copy=False)
            vectors = vectors.astype(K.dtype, copy=False)
        else:
            trace_K = float(np.trace(K, dtype=np.float64))
            if not owned:
                K = np.array(K, order="C", copy=True)
            ok, col_mean, grand_mean = _native.core.double_center_inplace(K, "kernel", 1.0, threads)
            if not ok:
                raise ValueError("the kernel matrix contains NaN or infinity")
            self._report("center", seconds=time.perf_counter() - start, implicit=False)
            start = time.perf_counter()
            values, vectors = self._sklearn_solver(solver, K, n_components)
            info = {"method": solver}
        info["solver"] = solver
        info["solve_seconds"] = time.perf_counter() - start
        self.solver_info_ = info
        self._report("done", solver=solver, seconds=info["solve_seconds"],
                     **({"passes": info["n_passes"]} if "n_passes" in info else {}))
        self.K_fit_rows_ = np.asarray(col_mean, dtype=np.float64)
        self.K_fit_all_ = float(grand_mean)
        # trace(H K H) = trace(K) - sum(K)/N = trace(K) - N·m.
        self._total_variance = trace_K - n * self.K_fit_all_

        values = check_psd_eigenvalues(values)
        vectors = linalg._sign_flip(np.array(vectors, copy=True))
        order = values.argsort()[::-1]
        values, vectors = values[order], vectors[:, order]
        if self.remove_zero_eig or self.n_components is None:
            keep = values > 0
            values, vectors = values[keep], vectors[:, keep]
        self.eigenvalues_ = values
        self.eigenvectors_ = vectors

    def _sklearn_solver(self, solver, Kc, n_components):
        """scikit-learn's dense / arpack / randomized solvers on the explicitly centered kernel."""
        n = Kc.shape[0]
        if solver == "dense":
            return sla.eigh(Kc, subset_by_index=(n - n_components, n - 1))
        rng = v.check_random_state(self.random_state)
        if solver == "arpack":
            v0 = rng.uniform(-1, 1, n)
            return arpack_eigsh(Kc, n_components, which="LA", tol=self.tol, maxiter=self.max_iter, v0=v0)
        from sklearn.utils.extmath import _randomized_eigsh

        return _randomized_eigsh(Kc, n_components=n_components, n_iter=self.iterated_power,
                                 random_state=rng, selection="module")

    def _fit_inverse_transform(self, X_transformed, X):
        if hasattr(X, "tocsr"):
            raise NotImplementedError("Inverse transform not implemented for sparse matrices!")
        n = X_transformed.shape[0]
        K = self._get_kernel(X_transformed)
        K.flat[:: n + 1] += self.alpha
        self.dual_coef_ = sla.solve(K, X, assume_a="pos", overwrite_a=True)
        self.X_transformed_fit_ = X_transformed

    def fit_transform(self, X, y=None, **params):
        """Fit the model and return the kernel principal components of X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``eigenvectors_ * sqrt(eigenvalues_)``.
        """
        self.fit(X, **params)
        X_transformed = self.eigenvectors_ * np.sqrt(self.eigenvalues_)
        if self.fit_inverse_transform:
            self._fit_inverse_transform(X_transformed, X)
        return X_transformed

    def transform(self, X):
        """Project X on the kernel principal components.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=[np.float64, np.float32])
        if self.kernel == "precomputed":
            K = np.array(v.as_float_array(X, "X (the precomputed kernel)"), order="C")
        else:
            K = self._get_kernel(X, self.X_fit_)
            if not (isinstance(K, np.ndarray) and K.flags.c_contiguous and K.flags.writeable):
                K = np.array(K, order="C")
        # Out-of-sample centering in place on the freshly built cross kernel: no copy of it.
        _native.core.center_cross_inplace(K, self.K_fit_rows_, self.K_fit_all_, v.n_threads(self.n_jobs))
        non_zeros = np.flatnonzero(self.eigenvalues_)
        scaled = np.zeros_like(self.eigenvectors_)
        scaled[:, non_zeros] = self.eigenvectors_[:, non_zeros] / np.sqrt(self.eigenvalues_[non_zeros])
        return K @ scaled

    def inverse_transform(self, X):
        """Map scores back to the input space (pre-image by kernel ridge, Bakır et al. 2004).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        if not self.fit_inverse_transform:
            raise NotFittedError(
                "The fit_inverse_transform parameter was not set to True when instantiating and hence "
                "the inverse transform is not available."
            )
        K = self._get_kernel(X, self.X_transformed_fit_)
        return K @ self.dual_coef_

    # --------------------------------------------------------------------------------- attributes

    @property
    def explained_variance_(self):
        check_is_fitted(self)
        return self.eigenvalues_ / self.eigenvectors_.shape[0]

    @property
    def explained_variance_ratio_(self):
        check_is_fitted(self)
        total = self._total_variance
        return self.eigenvalues_ / total if total > 0 else np.zeros_like(self.eigenvalues_)

    @property
    def _n_features_out(self):
        return self.eigenvalues_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32], "pairwise": self.kernel == "precomputed"}
