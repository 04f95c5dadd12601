"""KernelRidge: scikit-learn's kernel ridge regression, exact at any N, on fastkpca's kernels and operators."""

from __future__ import annotations

import numbers
import sys
import time
import warnings

import numpy as np
from scipy import linalg as sla
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from . import _dask, _registry, conjugate_gradients, linalg, low_rank, operators
from . import _validation as v
from ._sklearn_compat import validate_data
from .exceptions import ConvergenceWarning, SingularKernelWarning
from .kernels import NativeKernel, pairwise_kernels

__all__ = ["KernelRidge", "KernelRidgeCV"]

SOLVERS = ("auto", "cholesky", "cg", "nystrom")
#: Relative residual ‖(K + αI)β − y‖/‖y‖ the cg solver stops at when tol is None.
DEFAULT_TOL = 1e-8
#: Products by K the cg solver may spend when max_iter is None.
DEFAULT_MAX_ITER = 1000
#: solver="auto" solves up to this many samples by dense Cholesky (milliseconds to a second).
AUTO_CHOLESKY_BELOW = 3000
#: Rank of cg's preconditioner when preconditioner_rank is None (less if memory or N demand), for a stored
#: kernel and for one recomputed on every pass.
DEFAULT_PRECONDITIONER_RANK = 500
RECOMPUTED_PRECONDITIONER_RANK = 1000
#: Centres of solver="nystrom" when n_components is None (or all samples, if fewer).
DEFAULT_N_CENTRES = 1000
#: Largest piece of the cross kernel predict builds at once (also at most a quarter of the limit).
PREDICT_CHUNK_BYTES = 256 * 2**20


class KernelRidge(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression: a drop-in for sklearn.kernel_ridge.KernelRidge that is exact at any N.

    Solves ``(K + αI) β = y`` (with sample weights, ``(D K D + αI) z = D y`` and β = D z for D = diag(√w),
    scikit-learn's formulation) and predicts ``K(X_new, X) β``.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default=1
        Regularisation, >= 0; one per target, or one for all.
    kernel : str or callable, default="linear"
        A name of sklearn.metrics.pairwise (fastkpca's native kernels run natively), ``"precomputed"``
        (X is the kernel matrix, used in place), or a callable.
    gamma, degree, coef0, kernel_params :
        Kernel parameters, as scikit-learn's.
    solver : {"auto", "cholesky", "cg", "nystrom"}, default="auto"
        ``"cholesky"``: exact, dense: one N×N matrix (the kernel, factored in place; a precomputed kernel
        is copied once), O(N³) flops. ``"cg"``: the exact full-data system by conjugate gradients on a
        kernel operator in the storage the memory limit allows (full, packed, cached or matrix-free), one
        block product per iteration for all targets, preconditioned by a rank-r randomly pivoted Cholesky
        factor (see ``preconditioner_rank``); stops at relative residual ``tol``. ``"nystrom"``: the
        restricted problem on ``n_components`` centres (Falkon's): approximate, O(m²) memory, one
        streamed pass over X. ``"auto"``: cholesky up to 3000 samples (or with alpha = 0, if the kernel
        fits the memory limit), else cg.
    tol : float, default=None
        Relative residual of cg (None: 1e-8).
    max_iter : int, default=None
        Products by K cg may spend (None: 1000).
    memory_limit : int or str, default=None
        Bytes the fit may use beyond X and y, or a size such as ``"4GB"`` (None: 80% of the available
        memory); cg keeps as much of the kernel as fits and recomputes the rest; predict builds the cross
        kernel in bounded chunks.
    preconditioner_rank : int, default=None
        Rank r of cg's randomly pivoted Cholesky preconditioner; 0 for none. None: min(500, N − 1) and a
        quarter of the memory limit when the kernel is stored (full or packed); min(1000, N − 1) and 60% of
        the limit when it is recomputed on every pass (cached, matrix-free), where passes are dear.
    n_components : int, default=None
        Centres m of ``solver="nystrom"`` (None: min(1000, n_samples)).
    landmarks : {"rpcholesky", "uniform"} or array-like, default="rpcholesky"
        How ``solver="nystrom"`` chooses its centres (see fastkpca.Nystroem).
    random_state : int, RandomState instance or None, default=None
        Seeds the centres and the preconditioner's pivots.
    n_jobs : int, default=None
        Threads (see fastkpca.gram).
    verbose : int, default=0
        1: print each stage to stderr; 2: also every cg iteration.
    callback : callable, default=None
        ``callback(stage, info)`` for progress displays; stage "iteration" after every cg iteration with
        ``iterations``, ``converged`` (targets) and ``residual`` (the worst).

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        β; for ``solver="nystrom"`` one row per centre.
    X_fit_ : ndarray or sparse matrix
        The training data (or the precomputed kernel); for ``solver="nystrom"`` the centres.
    n_iter_ : int
        Products by K of cg (1 for the direct solvers, cholesky and nystrom).
    solver_info_ : dict
        ``solver`` and, for cg: ``iterations`` (products by K), ``residuals`` (relative, per target),
        ``converged``, ``preconditioner_rank``, ``storage``, ``kernel_bytes`` and seconds per stage.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import KernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 3)); y = np.sin(X[:, 0])
    >>> model = KernelRidge(alpha=0.1, kernel="rbf", solver="cg").fit(X, y)
    >>> bool(model.solver_info_["converged"])
    True
    """

    def __init__(self, alpha=1, *, kernel="linear", gamma=None, degree=3, coef0=1, kernel_params=None,
                 solver="auto", tol=None, max_iter=None, memory_limit=None, preconditioner_rank=None,
                 n_components=None, landmarks="rpcholesky", random_state=None, n_jobs=None, verbose=0,
                 callback=None):
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.memory_limit = memory_limit
        self.preconditioner_rank = preconditioner_rank
        self.n_components = n_components
        self.landmarks = landmarks
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    # ------------------------------------------------------------------------------------------ checks

    def _check_params(self):
        if not callable(self.kernel):
            if not isinstance(self.kernel, str):
                raise TypeError(f"kernel must be a string or a callable, got {self.kernel!r}")
        v.check_choice(self.solver, "solver", SOLVERS)
        if self.tol is not None:
            v.check_real(self.tol, "tol", minimum=0.0)
        if self.max_iter is not None:
            v.check_int(self.max_iter, "max_iter", minimum=1)
        if self.preconditioner_rank is not None:
            v.check_int(self.preconditioner_rank, "preconditioner_rank", minimum=0)
        if self.n_components is not None:
            v.check_int(self.n_components, "n_components", minimum=1)
        if isinstance(self.landmarks, str):
            v.check_choice(self.landmarks, "landmarks", low_rank.LANDMARK_METHODS)
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise TypeError(f"kernel_params must be a dict or None, got {self.kernel_params!r}")
        if not isinstance(self.verbose, numbers.Integral):
            raise TypeError(f"verbose must be an integer, got {self.verbose!r}")
        if self.callback is not None and not callable(self.callback):
            raise TypeError("callback must be callable or None")
        v.n_threads(self.n_jobs)
        return v.memory_limit(self.memory_limit)

    def _native_kernel(self, X):
        """NativeKernel for a native kernel name and dense data, else None (scikit-learn evaluates)."""
        if callable(self.kernel) or self.kernel not in _registry.NAMES:
            return None
        return NativeKernel.resolve(self.kernel, self.gamma, self.degree, self.coef0, X.shape[1], self.n_jobs)

    def _native_kernel_name(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel in _registry.NAMES

    def _get_kernel(self, X, Y=None):
        """K(X, Y) as scikit-learn's KernelRidge evaluates it (native kernels natively)."""
        if callable(self.kernel):
            params = self.kernel_params or {}
        else:
            params = {"gamma": self.gamma, "degree": self.degree, "coef0": self.coef0}
        return pairwise_kernels(X, Y, metric=self.kernel, filter_params=True, n_jobs=self.n_jobs, **params)

    def _report(self, stage, **info):
        if self.callback is not None:
            self.callback(stage, info)
        if self.verbose and (stage != "iteration" or self.verbose >= 2):
            figures = ", ".join(f"{k}={val:.3g}" if isinstance(val, float) else f"{k}={val}"
                                for k, val in info.items())
            print(f"[KernelRidge] {stage}: {figures}", file=sys.stderr, flush=True)

    # --------------------------------------------------------------------------------------------- fit

    def fit(self, X, y, sample_weight=None):
        """Fit kernel ridge regression.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, or the (n_samples, n_samples) kernel matrix with kernel="precomputed".
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets (finite).
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights.

        Returns
        -------
        self : KernelRidge
        """
        limit = self._check_params()
        if v.is_dask_array(X):
            return _dask.fit_kernel_ridge(self, X, y, sample_weight, limit)
        v.check_same_length(X, y)
        X, y = validate_data(self, X, y=y, accept_sparse=("csr", "csc"), multi_output=True, y_numeric=True,
                             dtype=[np.float64, np.float32])
        n = X.shape[0]
        ravel = y.ndim == 1
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        alphas = v.check_alphas(self.alpha, Y.shape[1])
        root_w = v.sample_weight_root(sample_weight, n)
        if self.kernel == "precomputed":
            v.check_square(X, "X (the precomputed kernel)")
        solver = self._choose_solver(n, alphas, limit, X)
        self._distributed = None
        start = time.perf_counter()
        if solver == "cholesky":
            dual, info = self._fit_cholesky(X, Y, alphas, root_w, limit)
            X_fit = X
        elif solver == "cg":
            dual, info = self._fit_cg(X, Y, alphas, root_w, limit)
            X_fit = X
        else:
            dual, info, X_fit = self._fit_nystrom(X, Y, alphas, root_w, limit)
        return self._fitted(dual, info, X_fit, solver, ravel, start)

    def _fitted(self, dual, info, X_fit, solver, ravel, start):
        """Set the fitted attributes from a solver's result (in process or on a Dask cluster)."""
        info.update(solver=solver, seconds=time.perf_counter() - start)
        self.solver_info_ = info
        self.n_iter_ = int(info.get("iterations", 1))
        self.dual_coef_ = dual.ravel() if ravel else dual
        self.X_fit_ = X_fit
        self._report("done", solver=solver, seconds=info["seconds"])
        return self

    def _choose_solver(self, n, alphas, limit, X):
        if self.solver != "auto":
            if self.solver == "nystrom" and (callable(self.kernel) or self.kernel not in _registry.NAMES):
                raise ValueError("solver='nystrom' needs one of fastkpca's native kernels "
                                 f"({', '.join(_registry.NAMES)}), got kernel={self.kernel!r}")
            return self.solver
        dense_bytes = n * n * 8
        if n <= AUTO_CHOLESKY_BELOW and dense_bytes <= limit:
            return "cholesky"
        if (alphas == 0).any() and dense_bytes <= limit:
            return "cholesky"  # a singular system needs the least-squares fallback, which needs the matrix
        return "cg"

    # ------------------------------------------------------------------------------------------- solvers

    def _owned_kernel(self, X, limit):
        """The training kernel as a float64 C-contiguous array this fit may overwrite (a copy of a
        precomputed one)."""
        n = X.shape[0]
        needed = n * n * 8
        what = ("solver='cholesky'" if self._native_kernel_name() or self.kernel == "precomputed"
                else f"kernel={self.kernel!r} (evaluated as a full matrix)")
        if needed > limit:
            raise MemoryError(f"{what} needs the {n}×{n} kernel matrix, {needed / 2**30:.2f} GiB, but the memory "
                              f"limit is {limit / 2**30:.2f} GiB" + ("; solver='cg' fits within any limit"
                                                                     if what.startswith("solver") else ""))
        v.check_memory(needed, f"the {n}×{n} kernel matrix of {what}")
        if self.kernel == "precomputed":
            K = v.as_float_array(X, "X (the precomputed kernel)", np.float64)
            v.check_finite(K, "X (the precomputed kernel)")
            return np.array(K, dtype=np.float64, order="C", copy=True)
        native = self._native_kernel(X)
        if native is not None:
            Xd = v.check_samples(X, "X", np.float64)
            return native.cross(Xd)
        K = np.asarray(self._get_kernel(X), dtype=np.float64)
        if not (K.flags.c_contiguous and K.flags.writeable):
            K = np.array(K, order="C")
        v.check_finite(K, "the kernel matrix")
        return K

    def _fit_cholesky(self, X, Y, alphas, root_w, limit):
        start = time.perf_counter()
        K = self._owned_kernel(X, limit)
        kernel_seconds = time.perf_counter() - start
        self._report("kernel", seconds=kernel_seconds, storage="full")
        start = time.perf_counter()
        if root_w is not None:
            K *= root_w[:, None]
            K *= root_w[None, :]
            Y = Y * root_w[:, None]
        dual, singular = _solve_dense_in_place(K, Y, alphas)
        if singular:
            warnings.warn("KernelRidge: K + alpha·I is singular (alpha = 0 with a rank-deficient kernel?); the "
                          "dual coefficients are a least-squares solution, as scikit-learn's fallback gives",
                          SingularKernelWarning, stacklevel=3)
        if root_w is not None:
            dual *= root_w[:, None]
        return dual, {"storage": "full", "kernel_bytes": K.nbytes, "singular": singular,
                      "stages": {"kernel": kernel_seconds, "solve": time.perf_counter() - start}}

    def _preconditioner_rank(self, n, limit, stored: bool):
        """The default rank: 500 and at most a quarter of the limit when the kernel is stored (a pass is a
        read of memory); when it must be recomputed (a pass costs N² kernel evaluations), iterations are
        dear and memory is better spent on the preconditioner than on a sliver of cached tiles: up to 1000
        and 60% of the limit (at N = 100,000 and 1 GiB: rank 335 took 53 passes of 14 s)."""
        if self.preconditioner_rank is not None:
            return min(self.preconditioner_rank, n)
        if stored:
            cap, share = DEFAULT_PRECONDITIONER_RANK, 0.25
        else:
            cap, share = RECOMPUTED_PRECONDITIONER_RANK, 0.6
        by_memory = int(share * limit) // (8 * n)
        return int(max(0, min(cap, n - 1, by_memory)))

    def _fit_cg(self, X, Y, alphas, root_w, limit):
        n, t = Y.shape
        threads = v.n_threads(self.n_jobs)
        stages = {}
        native = self._native_kernel(X) if self.kernel != "precomputed" else None
        stored = native is None or operators.plan_storage(
            n, X.shape[1], X.dtype.itemsize, block_size=max(t, 1), memory_limit=limit,
            other_bytes=8 * n * t * 8).storage in ("full", "packed")
        rank = self._preconditioner_rank(n, limit, stored)
        block = rpcholesky_block(n)
        # The factor, those buffers while it is built, and the r × r algebra.
        precond_bytes = 8 * n * rank + 3 * 8 * n * min(block, rank) + 8 * rank * rank * 3
        cg_bytes = 8 * n * t * 8 + linalg.pass_bytes(t, n)
        start = time.perf_counter()
        if native is not None:
            Xd = v.check_samples(X, "X", X.dtype)
            plan = operators.plan_storage(n, Xd.shape[1], Xd.dtype.itemsize, block_size=max(t, 1),
                                          memory_limit=limit, other_bytes=precond_bytes + cg_bytes)
            op = operators.build(Xd, native.name, native.gamma, native.degree, native.coef0, plan, threads)
            columns_of = (Xd, native)
        else:
            if self.kernel == "precomputed":  # used in place: no copy
                K = v.contiguous(v.as_float_array(X, "X (the precomputed kernel)"))
                v.check_finite(K, "X (the precomputed kernel)")
                held, reason = 0, "a precomputed kernel is used in place"
            else:
                K = self._owned_kernel(X, limit)
                held, reason = K.nbytes, "a callable or scikit-learn kernel is a full matrix"
            op = operators.from_matrix(K, operators.StoragePlan("full", 0, held, limit, reason), self.n_jobs)
            columns_of = (K, None)
        stages["kernel"] = time.perf_counter() - start
        self._report("kernel", seconds=stages["kernel"], storage=op.storage, kernel_bytes=op.nbytes)
        return self._solve_cg(op, columns_of, Y, alphas, root_w, limit, rank, block, stages)

    def _solve_cg(self, op, columns_of, Y, alphas, root_w, limit, rank, block, stages):
        """Preconditioned CG on the operator ``op`` (any storage, or distributed), the preconditioner a
        rank-``rank`` RPCholesky factor of the kernel whose columns ``columns_of`` gives (rpcholesky's X and
        kernel)."""
        threads = v.n_threads(self.n_jobs)
        start = time.perf_counter()
        # The dense algebra between the kernel passes (RPCholesky's updates, the preconditioner, CG's vector
        # operations) is small: on one BLAS thread. OpenBLAS's idle threads spin for a while after each call
        # and take cores from the next native pass (measured at N = 20,000: 4.2 -> 3.0 s of CG).
        with _one_blas_thread():
            precondition, rank_used = None, 0
            if rank > 0:
                factor = low_rank.rpcholesky(columns_of[0], rank, columns_of[1], random_state=self.random_state,
                                             block_size=block).factor
                if root_w is not None:
                    factor *= root_w[:, None]
                precondition = conjugate_gradients.LowRankPreconditioner(factor, alphas)
                rank_used = precondition.rank
            stages["preconditioner"] = time.perf_counter() - start
            self._report("preconditioner", seconds=stages["preconditioner"], rank=rank_used)

            native_op = op._native_operator

            def matmat(V):
                if root_w is None:
                    return native_op.matmat(np.asfortranarray(V), threads)
                return native_op.matmat(np.asfortranarray(V * root_w[:, None]), threads) * root_w[:, None]

            progress = None
            if self.callback is not None or self.verbose >= 2:
                def progress(iterations, converged, residual):
                    self._report("iteration", iterations=iterations, converged=converged, residual=residual)
            B = Y if root_w is None else Y * root_w[:, None]
            tol = DEFAULT_TOL if self.tol is None else self.tol
            maxiter = DEFAULT_MAX_ITER if self.max_iter is None else self.max_iter
            Z, info = conjugate_gradients.pcg(matmat, B, alphas, tol=tol, maxiter=maxiter, precondition=precondition,
                                              progress=progress)
        stages["solve"] = info["seconds"]
        if not info["converged"]:
            why = ("rounding does not allow a smaller residual for this system: lower tol's demand or raise alpha"
                   if info["stalled"] else "raise max_iter or the preconditioner's rank")
            warnings.warn(f"KernelRidge: conjugate gradients stopped after {info['iterations']} products by K "
                          f"with relative residual {info['residuals'].max():.2e} > tol={tol:g}; {why}",
                          ConvergenceWarning, stacklevel=3)
        dual = Z if root_w is None else Z * root_w[:, None]
        return dual, {"iterations": info["iterations"], "residuals": info["residuals"],
                      "residuals_are_true": info["residuals_are_true"], "converged": info["converged"],
                      "stalled": info["stalled"],
                      "column_iterations": info["column_iterations"], "tol": tol, "preconditioner_rank": rank_used,
                      "storage": op.storage, "kernel_bytes": op.plan.kernel_bytes if op.plan else op.nbytes,
                      "memory_limit": limit,
                      "storage_reason": op.plan.reason if op.plan else "", "stages": stages}

    def _fit_nystrom(self, X, Y, alphas, root_w, limit):
        """Falkon's restricted problem: β on m centres S minimising ‖W^½(K(X, S)β − y)‖² + α βᵀK(S, S)β.

        With T = K(S, S)^(-½) (truncated as in low_rank.nystrom_pca) and θ = T⁻¹β the normal equations are
        (Tᵀ Cᵀ W C T + αI) θ = Tᵀ Cᵀ W y: an m×m system from one streamed pass over X, solved for every
        alpha from one eigendecomposition.
        """
        Xd = X if isinstance(X, _dask.Samples) else v.check_samples(X, "X", X.dtype)
        n = Xd.shape[0]
        native = self._native_kernel(Xd)
        stages = {}
        start = time.perf_counter()
        m = min(DEFAULT_N_CENTRES, n) if self.n_components is None else self.n_components
        S, _, selection = low_rank.landmarks(Xd, self.landmarks, m, native, random_state=self.random_state,
                                             memory_limit=limit, name="n_components")
        m = S.shape[0]
        rows = low_rank.stream_rows(n, m, Xd.dtype.itemsize, limit, what=f"solver='nystrom' with {m} centres")
        stages["centres"] = time.perf_counter() - start
        start = time.perf_counter()
        T, rank = low_rank.landmark_whitening(S, native)
        gram, _, cross = low_rank.nystrom_moments(Xd, S, native, rows, targets=Y,
                                                  weights=None if root_w is None else root_w**2)
        stages["moments"] = time.perf_counter() - start
        start = time.perf_counter()
        A = T.T @ gram @ T
        values, Q = np.linalg.eigh((A + A.T) / 2)
        rhs = Q.T @ (T.T @ cross)
        denom = values[:, None] + alphas[None, :]
        tiny = max(float(values[-1]), 0.0) * rank * np.finfo(np.float64).eps if rank else 0.0
        singular = bool((denom <= tiny).any())
        theta = Q @ np.where(denom > tiny, rhs / np.where(denom > tiny, denom, 1.0), 0.0)
        if singular:
            warnings.warn("KernelRidge: the Nyström system is singular (alpha = 0?); its null directions get "
                          "zero coefficients (the least-squares solution)", SingularKernelWarning, stacklevel=3)
        dual = T @ theta
        stages["solve"] = time.perf_counter() - start
        return dual, {"n_components": m, "rank": rank, "landmarks": selection["method"],
                      "landmark_selection": selection, "chunk_rows": rows, "memory_limit": limit,
                      "singular": singular, "stages": stages}, S

    # ----------------------------------------------------------------------------------------- predict

    def predict(self, X):
        """Predict ``K(X, X_fit_) @ dual_coef_``. For fastkpca's native kernels the cross kernel is multiplied
        into the coefficients tile by tile and never stored; for the others it is built in chunks of at most
        256 MiB (and a quarter of the memory limit).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, or the (n_samples, n_samples_fitted) kernel with kernel="precomputed".

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        """
        check_is_fitted(self)
        if v.is_dask_array(X) or getattr(self, "_distributed", None) is not None:
            return _dask.apply_model(self, X, "predict")
        X = validate_data(self, X, accept_sparse=("csr", "csc"), reset=False, dtype=[np.float64, np.float32])
        dual = self.dual_coef_
        if self.kernel == "precomputed":
            return np.asarray(X @ dual)
        n_fit, m = self.X_fit_.shape[0], X.shape[0]
        if self._native_kernel_name() and not v.is_sparse(self.X_fit_):
            # float32 only if both sides are (scikit-learn's pairwise kernels upcast the same way)
            dtype = np.float32 if X.dtype == np.float32 and self.X_fit_.dtype == np.float32 else np.float64
            fit = v.check_samples(self.X_fit_, "X_fit_", dtype)
            native = self._native_kernel(fit)
            out = native.product(v.check_samples(X, "X", dtype), fit, np.reshape(dual, (n_fit, -1)))
            return out.ravel() if dual.ndim == 1 else out
        limit = v.memory_limit(self.memory_limit)
        rows = max(1, min(PREDICT_CHUNK_BYTES, limit // 4) // max(1, 8 * n_fit))
        out = None
        for start in range(0, m, rows):
            piece = self._get_kernel(X[start:start + rows], self.X_fit_) @ dual
            if out is None:
                out = np.empty((m, *piece.shape[1:]), dtype=np.result_type(piece.dtype, np.float64))
            out[start:start + rows] = piece
        return out

    def __getstate__(self):
        # A model fitted on a Dask cluster pickles as a local one (its training panels gathered).
        return _dask.picklable_state(super().__getstate__())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"pairwise": self.kernel == "precomputed"}


def rpcholesky_block(n: int) -> int:
    """RPCholesky's proposals per block for the preconditioner: its three n × block buffers stay within
    96 MiB."""
    return int(max(16, min(low_rank.RPCHOLESKY_BLOCK, (32 * 2**20) // (8 * n))))


def _one_blas_thread():
    """Limit NumPy's BLAS to one thread until ``.restore_original_limits()``."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas")


def _solve_dense_in_place(K, Y, alphas):
    """β with (K + α_j I) β_j = y_j, K overwritten by its Cholesky factors; one N×N array for every alpha.

    The factorisation writes one triangle (and the diagonal); the other keeps K, so each further alpha
    restores the factored triangle from it and the saved diagonal. A singular K + αI (alpha = 0 and a
    rank-deficient kernel) gets scikit-learn's fallback, a least-squares solution, and the flag.
    Returns (β, singular).
    """
    n = K.shape[0]
    diagonal = np.diagonal(K).copy()
    dual = np.empty_like(Y)
    singular = False
    A = K.T  # F-contiguous view of the C-ordered K: LAPACK factors it without a copy
    for index, alpha in enumerate(np.unique(alphas)):
        columns = np.flatnonzero(alphas == alpha)
        if index:
            _restore_factored(K, diagonal)
        K.flat[:: n + 1] = diagonal + alpha
        try:
            factor = sla.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
            dual[:, columns] = sla.cho_solve(factor, Y[:, columns], check_finite=False)
        except np.linalg.LinAlgError:
            singular = True
            _restore_factored(K, diagonal)
            K.flat[:: n + 1] = diagonal + alpha
            dual[:, columns] = sla.lstsq(K, Y[:, columns], check_finite=False)[0]
    return dual, singular


def _restore_factored(K, diagonal):
    """Copy K's upper triangle (in C order, the triangle LAPACK factored through the view K.T) back from
    its lower triangle, which the factorisation left untouched, and put the diagonal back."""
    n = K.shape[0]
    step = 512
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        K[:i0, i0:i1] = K[i0:i1, :i0].T  # columns i0:i1 above the diagonal block
        block = K[i0:i1, i0:i1]
        upper = np.triu_indices(i1 - i0, 1)
        block[upper] = block.T[upper]
    np.fill_diagonal(K, diagonal)


class KernelRidgeCV(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression with alpha (and optionally gamma) chosen by cross-validation, cheaply.

    Every alpha comes from one factorisation per kernel: with ``cv=None`` the leave-one-out error of every
    alpha from one eigendecomposition K = V Λ Vᵀ (the hat matrix is V Λ(Λ + α)⁻¹ Vᵀ, so the LOO
    residuals (y − ŷ)/(1 − h_ii) cost O(N²) per alpha); with ``cv=k`` each fold's training kernel is a
    block of the one kernel computed for that gamma, eigendecomposed once for all alphas. Kernels that do
    not fit the memory limit are cross-validated matrix-free: each fold's systems for all alphas come from
    one multi-shift conjugate gradients run (conjugate_gradients.cg_shifted), and the held-out predictions
    from K(X_val, X_train)·β tile by tile. The chosen model is then refitted on all the data by
    :class:`KernelRidge` (``solver="auto"``).

    Parameters
    ----------
    alphas : array-like of float > 0, default=(0.1, 1.0, 10.0)
    kernel : str, default="rbf"
        A native kernel name (or "precomputed" with cv=None or an int).
    gammas : array-like of float or None, default=None
        Kernel scales to try (None: the kernel's default gamma only).
    degree, coef0 : kernel parameters.
    cv : None or int >= 2, default=None
        None: efficient leave-one-out; k: k-fold (contiguous folds, as sklearn's KFold without shuffling).
    tol, max_iter : of the matrix-free multi-shift CG (defaults 1e-8 and 1000).
    memory_limit, n_jobs : as KernelRidge.

    Attributes
    ----------
    alpha_, gamma_ : the chosen values.
    best_score_ : float
        Mean squared validation error of the chosen pair (lower is better; scikit-learn's RidgeCV reports
        its negative).
    cv_results_ : dict of arrays
        ``alpha``, ``gamma``, ``mean_squared_error`` for every pair tried, and ``method`` ("loo-eigh",
        "kfold-eigh" or "kfold-multishift-cg").
    estimator_ : KernelRidge
        The refitted model; predict uses it.
    """

    def __init__(self, alphas=(0.1, 1.0, 10.0), *, kernel="rbf", gammas=None, degree=3, coef0=1, cv=None,
                 tol=None, max_iter=None, memory_limit=None, n_jobs=None):
        self.alphas = alphas
        self.kernel = kernel
        self.gammas = gammas
        self.degree = degree
        self.coef0 = coef0
        self.cv = cv
        self.tol = tol
        self.max_iter = max_iter
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs

    def _check(self):
        alphas = np.atleast_1d(np.asarray(self.alphas, dtype=np.float64))
        if alphas.ndim != 1 or alphas.size == 0 or not np.isfinite(alphas).all() or (alphas <= 0).any():
            raise ValueError(f"alphas must be a non-empty list of finite numbers > 0, got {self.alphas!r}")
        if self.gammas is None:
            gammas = [None]
        else:
            gammas = list(np.atleast_1d(np.asarray(self.gammas, dtype=np.float64)))
            if not gammas or not all(np.isfinite(g) and g > 0 for g in gammas):
                raise ValueError(f"gammas must be a non-empty list of finite numbers > 0, got {self.gammas!r}")
        if self.kernel != "precomputed":
            v.check_kernel(self.kernel)
        elif self.gammas is not None:
            raise ValueError("gammas cannot be searched with a precomputed kernel")
        if self.cv is not None:
            v.check_int(self.cv, "cv", minimum=2)
        return alphas, gammas, v.memory_limit(self.memory_limit)

    def fit(self, X, y, sample_weight=None):
        """Choose alpha (and gamma) and refit on all the data. sample_weight applies to the refit and to
        the validation errors' weights (the LOO and fold systems are solved unweighted)."""
        alphas, gammas, limit = self._check()
        X, y = validate_data(self, X, y=y, multi_output=True, y_numeric=True, dtype=[np.float64, np.float32])
        n = X.shape[0]
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        weights = None if sample_weight is None else v.sample_weight_root(sample_weight, n) ** 2
        if self.cv is not None and self.cv > n:
            raise ValueError(f"cv={self.cv} folds need at least {self.cv} samples, got {n}")
        rows = []
        method = None
        for gamma in gammas:
            kernel = None if self.kernel == "precomputed" else \
                NativeKernel.resolve(self.kernel, gamma, self.degree, self.coef0, X.shape[1], self.n_jobs)
            fits = self._dense_fits(n, limit)
            if self.cv is None:
                if not fits:
                    raise MemoryError(f"leave-one-out needs three {n}×{n} matrices ({3 * n * n * 8 / 2**30:.2f} GiB) "
                                      f"but the memory limit is {limit / 2**30:.2f} GiB; use cv=k (k-fold), which "
                                      "runs matrix-free")
                errors, method = self._loo(X, Y, kernel, alphas, weights), "loo-eigh"
            elif fits or kernel is None:
                errors, method = self._kfold_dense(X, Y, kernel, alphas, weights), "kfold-eigh"
            else:
                errors, method = self._kfold_krylov(X, Y, kernel, alphas, weights), "kfold-multishift-cg"
            used_gamma = np.nan if kernel is None else kernel.gamma
            rows += [(alpha, used_gamma, err) for alpha, err in zip(alphas, errors)]
        table = np.array(rows, dtype=np.float64)
        best = int(np.argmin(table[:, 2]))
        self.cv_results_ = {"alpha": table[:, 0], "gamma": table[:, 1], "mean_squared_error": table[:, 2],
                            "method": method}
        self.alpha_ = float(table[best, 0])
        self.gamma_ = None if np.isnan(table[best, 1]) else float(table[best, 1])
        self.best_score_ = float(table[best, 2])
        self.estimator_ = KernelRidge(alpha=self.alpha_, kernel=self.kernel, gamma=self.gamma_, degree=self.degree,
                                      coef0=self.coef0, memory_limit=self.memory_limit, n_jobs=self.n_jobs)
        self.estimator_.fit(X, y, sample_weight=sample_weight)
        self.dual_coef_ = self.estimator_.dual_coef_
        self.X_fit_ = self.estimator_.X_fit_
        return self

    @staticmethod
    def _dense_fits(n, limit):
        """Whether the eigendecomposition route fits: the kernel, its eigenvectors and eigh's workspace."""
        return n * n * 8 * 3 <= limit

    @staticmethod
    def _mse(residuals, weights):
        sq = residuals**2
        if weights is None:
            return float(sq.mean())
        return float((weights[:, None] * sq).sum() / (weights.sum() * sq.shape[1]))

    def _kernel_matrix(self, X, kernel, rows=None, cols=None):
        if kernel is None:  # precomputed
            K = np.asarray(X, dtype=np.float64)
            return K if rows is None else K[np.ix_(rows, cols)]
        A = X if rows is None else np.ascontiguousarray(X[rows])
        B = None if cols is None else np.ascontiguousarray(X[cols])
        return kernel.cross(A, B).astype(np.float64, copy=False)

    def _loo(self, X, Y, kernel, alphas, weights):
        """Leave-one-out errors of every alpha from one eigendecomposition: ŷ = H y with
        H = V Λ(Λ + α)⁻¹ Vᵀ, and the LOO residual of sample i is (y_i − ŷ_i)/(1 − H_ii)."""
        K = self._kernel_matrix(X, kernel)
        values, V = sla.eigh(K, overwrite_a=True, check_finite=False)
        values = np.maximum(values, 0.0)
        projected = V.T @ Y
        squares = V * V
        errors = []
        for alpha in alphas:
            shrink = values / (values + alpha)
            fitted = V @ (shrink[:, None] * projected)
            leverage = squares @ shrink
            errors.append(self._mse((Y - fitted) / (1 - leverage)[:, None], weights))
        return errors

    def _folds(self, n):
        bounds = np.linspace(0, n, self.cv + 1).astype(int)
        return [np.arange(bounds[f], bounds[f + 1]) for f in range(self.cv)]

    def _kfold_dense(self, X, Y, kernel, alphas, weights):
        """k-fold errors of every alpha: one kernel for this gamma; per fold one eigendecomposition of its
        training block."""
        n = Y.shape[0]
        K = self._kernel_matrix(X, kernel)
        residuals = np.empty((len(alphas), n, Y.shape[1]))
        for held in self._folds(n):
            train = np.setdiff1d(np.arange(n), held)
            values, V = sla.eigh(K[np.ix_(train, train)], check_finite=False)
            values = np.maximum(values, 0.0)
            projected = V.T @ Y[train]
            cross = K[np.ix_(held, train)] @ V
            for a, alpha in enumerate(alphas):
                residuals[a, held] = Y[held] - cross @ (projected / (values + alpha)[:, None])
        return [self._mse(residuals[a], weights) for a in range(len(alphas))]

    def _kfold_krylov(self, X, Y, kernel, alphas, weights):
        """k-fold errors matrix-free: per fold and target, one multi-shift CG run on the training rows'
        kernel operator gives β for every alpha; held-out predictions K(X_val, X_train)·β tile by tile."""
        n = Y.shape[0]
        threads = v.n_threads(self.n_jobs)
        tol = DEFAULT_TOL if self.tol is None else self.tol
        maxiter = DEFAULT_MAX_ITER if self.max_iter is None else self.max_iter
        limit = v.memory_limit(self.memory_limit)
        residuals = np.empty((len(alphas), n, Y.shape[1]))
        Xd = v.check_samples(X, "X", X.dtype)
        for held in self._folds(n):
            train = np.setdiff1d(np.arange(n), held)
            Xt = np.ascontiguousarray(Xd[train])
            plan = operators.plan_storage(train.size, Xd.shape[1], Xd.dtype.itemsize, block_size=1,
                                          memory_limit=limit, other_bytes=8 * train.size * (len(alphas) + 4))
            op = operators.build(Xt, kernel.name, kernel.gamma, kernel.degree, kernel.coef0, plan, threads)
            native = op._native_operator
            for j in range(Y.shape[1]):
                betas, info = conjugate_gradients.cg_shifted(
                    lambda V, native=native: native.matmat(np.asfortranarray(V), threads), Y[train, j], alphas,
                    tol=tol, maxiter=maxiter)
                if not info["converged"]:
                    warnings.warn(f"KernelRidgeCV: multi-shift CG stopped after {info['iterations']} products with "
                                  f"relative residual {info['residuals'].max():.2e} > tol={tol:g}",
                                  ConvergenceWarning, stacklevel=4)
                predictions = kernel.product(np.ascontiguousarray(Xd[held]), Xt, betas)
                residuals[:, held, j] = (Y[held, j][:, None] - predictions).T
        return [self._mse(residuals[a], weights) for a in range(len(alphas))]

    def predict(self, X):
        """Predictions of the refitted model."""
        check_is_fitted(self)
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags
