"""KernelRidge: scikit-learn's kernel ridge regression, exact at any N, on fastkpca's kernels and operators;
KernelRidgeCV: alpha (and gamma) chosen by cross-validation from one factorisation per kernel."""

from __future__ import annotations

import operator
import time
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, MultiOutputMixin, RegressorMixin
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS

from .. import engines, kernels
from .._sklearn_compat import check_is_fitted
from .. import _validation as v
from ..solvers.ridge import cv as ridge_cv, solvers as ridge_solvers
from . import solver_settings
from ._base import EngineFitted, KernelInputTags, Reporting, parameter_defaults, warn_deprecated_progress
from .solver_settings import CG, DEPRECATED, Nystrom

__all__ = ["KernelRidge", "KernelRidgeCV"]

SOLVERS = ("auto", "cholesky", "cg", "nystrom")
#: The solver parameter: a name, CG or Nystrom with the settings KernelRidge reads, and the keywords they replace.
_SOLVER = solver_settings.SolverFamily(
    "solver", SOLVERS,
    reads={CG: frozenset({"tol", "max_iter", "preconditioner_rank", "preconditioner_dtype", "precision",
                          "random_state"}),
           Nystrom: frozenset({"n_landmarks", "landmarks", "random_state"})},
    deprecated={"tol": ((CG,), "tol"), "max_iter": ((CG,), "max_iter"),
                "preconditioner_rank": ((CG,), "preconditioner_rank"),
                "preconditioner_dtype": ((CG,), "preconditioner_dtype"), "cg_precision": ((CG,), "precision"),
                "n_landmarks": ((Nystrom,), "n_landmarks"), "landmarks": ((Nystrom,), "landmarks"),
                "random_state": ((CG, Nystrom), "random_state")})
#: The first column of a product with a 1-D dual_coef_ (picklable, for an engine's tasks).
_FIRST_COLUMN = operator.itemgetter((slice(None), 0))
#: scikit-learn's kernel names (its pairwise kernels and "precomputed") and fastkpca's native ones.
_KERNELS = tuple(dict.fromkeys((*kernels.KERNEL_NAMES, *PAIRWISE_KERNEL_FUNCTIONS)))
_CONSTRAINTS = {
    "kernel": kernels.constraint(*_KERNELS), "kernel_params": v.optional_dict, "n_jobs": v.jobs,
}


@parameter_defaults
class KernelRidge(Reporting, EngineFitted, KernelInputTags, MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression: a drop-in for sklearn.kernel_ridge.KernelRidge that is exact at any N.

    Solves ``(K + αI) β = y`` (with sample weights, ``(D K D + αI) z = D y`` and β = D z for D = diag(√w),
    scikit-learn's formulation) and predicts ``K(X_new, X) β``.

    Parameters
    ----------
    alpha : float or array-like of shape (n_targets,), default=1
        Regularisation, >= 0; one per target, or one for all.
    kernel : str, callable or kernel object, default="linear"
        A name of sklearn.metrics.pairwise (fastkpca's native kernels run natively, also on sparse X, from
        its sparse rows), ``"precomputed"`` (X is the kernel matrix, used in place), a callable of two rows,
        or a scikit-learn kernel object (``sklearn.gaussian_process.kernels``, evaluated by its own
        ``__call__``).
    gamma, degree, coef0, kernel_params :
        Kernel parameters, as scikit-learn's.
    solver : {"auto", "cholesky", "cg", "nystrom"}, CG or Nystrom, default="auto"
        ``"cholesky"``: exact, dense: one N×N matrix (the kernel, factored in place; a precomputed kernel
        is copied once), O(N³) flops. ``"cg"`` or :class:`fastkpca.CG` (with its settings): the exact
        full-data system by conjugate gradients on a kernel operator in the storage the memory limit allows
        (full, packed, cached or matrix-free), one block product per iteration for all targets, preconditioned
        by a randomly pivoted Cholesky factor; stops at relative residual ``tol`` (default 1e-8) within
        ``max_iter`` products. ``"nystrom"`` or :class:`fastkpca.Nystrom`: the restricted problem on
        ``n_landmarks`` landmarks (Falkon's; default min(1000, n_samples)): approximate, O(m²) memory, one
        streamed pass over X. ``"auto"``: cholesky or cg (at its defaults), whichever the library's cost model
        (fastkpca.solvers.choice) predicts faster among those that fit the memory limit (cholesky at small N,
        and with alpha = 0 wherever the kernel fits, since a singular system needs its least-squares fallback);
        ``solver_info_["choice"]`` records the prediction. CG's settings here: ``tol``, ``max_iter``,
        ``random_state`` (the preconditioner's pivots), ``preconditioner_rank`` (0 for none; None: min(500, N − 1)
        and a quarter of the memory limit when the kernel is stored, full or packed; min(1000, N − 1) and 60% of
        the limit when it is recomputed on every pass, cached or matrix-free, where passes are dear, and 90% of
        what cg's working memory leaves when the rest could cache under a tenth of the kernel; twice the cap and
        the rank the memory allows with a float32 factor), ``preconditioner_dtype`` (``"auto"``: float32 where
        the memory limit holds a float64 factor below the default rank and the factor's rounding is far below
        alpha, float32's ε times the kernel's largest diagonal entry at most a thousandth of the smallest alpha;
        a float32 entry takes half the memory, so the default's cap doubles, and so does the rank the limit
        allows, less what mixed precision's copies take from it) and ``precision`` (``"mixed"``: the
        iterations' products by the kernel evaluated in float32, twice the SIMD lanes of a float64 evaluation,
        the residuals made true in float64 each time they have fallen 100-fold, so that the result meets ``tol``
        for the float64 system, and if float32 cannot get there the iteration goes on in float64; native
        kernels on float64 samples only; ``"auto"``: mixed when the kernel is recomputed on every pass and
        mixed is available). Nystrom's: ``n_landmarks``, ``landmarks`` (see fastkpca.Nystroem) and
        ``random_state``.
    memory_limit : int or str, default=None
        Bytes the fit may use beyond X and y, or a size such as ``"4GB"`` (None: 80% of the available
        memory); cg keeps as much of the kernel as fits and recomputes the rest. predict multiplies the
        cross kernel of a native kernel into the coefficients tile by tile (never stored); other kernels
        build it in chunks of at most 256 MiB (and a quarter of the limit). With a dask array X: the bytes
        of kernel tiles each worker may keep (default 40% of its memory limit).
    n_jobs : int, default=None
        Threads (see fastkpca.gram).
    tol, max_iter, preconditioner_rank, preconditioner_dtype, cg_precision, n_landmarks, landmarks, \
random_state : deprecated
        Settings of the solver object now: ``solver=CG(tol=..., max_iter=..., preconditioner_rank=...,
        preconditioner_dtype=..., precision=..., random_state=...)`` or ``solver=Nystrom(n_landmarks=...,
        landmarks=..., random_state=...)``. Given here, they still apply (with a FutureWarning) until the next
        minor release.
    verbose, callback : deprecated
        Progress is reported inside ``with fastkpca.progress(verbose=..., callback=...):`` (stage
        ``"iteration"`` after every cg iteration with ``iterations``, ``converged`` (targets) and ``residual``,
        the worst). Given here, they still apply (with a FutureWarning) until the next minor release.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,) or (n_samples, n_targets)
        β; for ``solver="nystrom"`` one row per landmark.
    X_fit_ : ndarray or sparse matrix
        The training data (or the precomputed kernel); for ``solver="nystrom"`` the landmarks.
    n_iter_ : int
        Products by K of cg (1 for the direct solvers, cholesky and nystrom).
    solver_info_ : dict
        ``solver``, ``choice`` (the solver asked for, the one picked and why, and every candidate's predicted
        seconds and bytes: fastkpca.solvers.choice) and, for cg: ``iterations`` (products by K),
        ``residuals`` (relative, per target), ``converged``, ``preconditioner_rank``, ``storage``,
        ``kernel_bytes``, seconds per stage and, with mixed precision, ``fast_products`` (those in float32),
        ``fast_dropped`` (float32 could not reach tol) and ``fast_storage``.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import CG, KernelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((500, 3)); y = np.sin(X[:, 0])
    >>> model = KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-10)).fit(X, y)
    >>> bool(model.solver_info_["converged"])
    True
    """

    def __init__(self, alpha: float | Any = 1, *, kernel: str | Callable[..., Any] | Any = "linear",
                 gamma: float | None = None, degree: float = 3, coef0: float = 1, kernel_params: dict | None = None,
                 solver: str | CG | Nystrom = "auto", memory_limit: int | str | None = None,
                 n_jobs: int | None = None, tol: Any = DEPRECATED, max_iter: Any = DEPRECATED,
                 preconditioner_rank: Any = DEPRECATED, preconditioner_dtype: Any = DEPRECATED,
                 cg_precision: Any = DEPRECATED, n_landmarks: Any = DEPRECATED, landmarks: Any = DEPRECATED,
                 random_state: Any = DEPRECATED, verbose: Any = DEPRECATED, callback: Any = DEPRECATED):
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.solver = solver
        self.memory_limit = memory_limit
        self.n_jobs = n_jobs
        self.tol = tol
        self.max_iter = max_iter
        self.preconditioner_rank = preconditioner_rank
        self.preconditioner_dtype = preconditioner_dtype
        self.cg_precision = cg_precision
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    # --------------------------------------------------------------------------------------------- fit

    def fit(self, X, y, sample_weight=None):
        """Fit kernel ridge regression.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data, or the (n_samples, n_samples) kernel matrix with kernel="precomputed".
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets (finite).
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights.

        Returns
        -------
        self : KernelRidge
        """
        v.check_params(self, _CONSTRAINTS)
        asked = solver_settings.resolve(self, _SOLVER)
        warn_deprecated_progress(self)
        return self._fit(X, y, sample_weight, asked)

    def _fit(self, X, y, sample_weight, asked: solver_settings.Resolved) -> KernelRidge:
        """fit with the solver and settings ``asked`` (KernelPCA's pre-image passes its random_state to "auto")."""
        limit = v.memory_limit(self.memory_limit)
        engine = engines.select(X)
        samples, y = engine.fit_samples(self, X, y, targets=True, accept_sparse=("csr", "csc"))
        self._engine = samples.engine
        n, d = samples.shape
        kernel = samples.bind(kernels.make(self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                                           kernel_params=self.kernel_params, n_features=d, n_jobs=self.n_jobs))
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        alphas = v.check_alphas(self.alpha, Y.shape[1])
        root_w = v.sample_weight_root(engine.gather(sample_weight, "sample_weight"), n)
        settings = ridge_solvers.RidgeSettings(limit=limit, memory_limit=self.memory_limit, n_jobs=self.n_jobs,
                                               **asked.settings)
        assert asked.name is not None  # KernelRidge's solver is never None
        solver, choice = ridge_solvers.make_solver(asked.name, samples, kernel, Y, alphas, settings)
        progress = None
        if self._wants_progress():
            def progress(iterations, converged, residual):
                self._report("iteration", iterations=iterations, converged=converged, residual=residual)
        start = time.perf_counter()
        fit = solver.fit(samples, kernel, Y, alphas, root_w, first=_FIRST_COLUMN if y.ndim == 1 else None,
                         report=self._report, progress=progress)
        self.X_fit_, self._predict_map = fit.centres, fit.predict_map
        self.solver_info_ = {**samples.info(), **fit.info, "solver": solver.name, "choice": choice,
                             "seconds": time.perf_counter() - start}
        self.n_iter_ = int(fit.info.get("iterations", 1))
        self.dual_coef_ = fit.dual.ravel() if y.ndim == 1 else fit.dual
        self._report("done", solver=solver.name, seconds=self.solver_info_["seconds"])
        return self

    # ----------------------------------------------------------------------------------------- predict

    def predict(self, X):
        """Predict ``K(X, X_fit_) @ dual_coef_``. For fastkpca's native kernels the cross kernel is multiplied
        into the coefficients tile by tile and never stored; for the others it is built in chunks of at most
        256 MiB (and a quarter of the memory limit).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Samples, or the (n_samples, n_samples_fitted) kernel with kernel="precomputed".

        Returns
        -------
        y : ndarray (a dask array for a dask X) of shape (n_samples,) or (n_samples, n_targets)
        """
        return self._apply_fitted(getattr(self, "_predict_map", None), X, accept_sparse=("csr", "csc"))


@parameter_defaults
class KernelRidgeCV(MultiOutputMixin, RegressorMixin, BaseEstimator):
    """Kernel ridge regression with alpha (and optionally gamma) chosen by cross-validation, cheaply.

    Every alpha comes from one factorisation per kernel: with ``cv=None`` the leave-one-out error of every
    alpha from one eigendecomposition K = V Λ Vᵀ (the hat matrix is V Λ(Λ + α)⁻¹ Vᵀ, so the LOO
    residuals (y − ŷ)/(1 − h_ii) cost O(N²) per alpha); with ``cv=k`` each fold's training kernel is a
    block of the one kernel computed for that gamma, eigendecomposed once for all alphas. Kernels that do
    not fit the memory limit are cross-validated matrix-free: each fold's systems for all alphas come from
    one multi-shift conjugate gradients run (solvers/krylov/cg.py: cg_shifted), and the held-out predictions
    from K(X_val, X_train)·β tile by tile. The chosen model is then refitted on all the data by
    :class:`KernelRidge` (``solver="auto"``).

    Parameters
    ----------
    alphas : array-like of float > 0, default=(0.1, 1.0, 10.0)
    kernel : str, callable or kernel object, default="rbf"
        A native kernel name, ``"precomputed"``, or another kernel (evaluated as a matrix; cross-validated
        matrix-free only for native kernels).
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
    solver_info_ : dict
        ``method`` and ``choice``: how the library's cost model picked it (fastkpca.solvers.choice), for the last
        kernel tried.
    estimator_ : KernelRidge
        The refitted model; predict uses it.
    """

    def __init__(self, alphas: Any = (0.1, 1.0, 10.0), *, kernel: str | Any = "rbf", gammas: Any = None,
                 degree: float = 3, coef0: float = 1, cv: int | None = None, tol: float | None = None,
                 max_iter: int | None = None, memory_limit: int | str | None = None, n_jobs: int | None = None):
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
        kernels.constraint(*kernels.KERNEL_NAMES)(self.kernel, "kernel")
        if self.cv is not None:
            v.check_int(self.cv, "cv", minimum=2)
        return alphas, gammas, v.memory_limit(self.memory_limit)

    def fit(self, X, y, sample_weight=None):
        """Choose alpha (and gamma) and refit on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples) if precomputed
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the refit and of the validation errors (the leave-one-out and fold systems are
            solved unweighted).

        Returns
        -------
        self : KernelRidgeCV
            The fitted estimator.
        """
        alphas, gammas, limit = self._check()
        samples, y = engines.select(X).fit_samples(self, X, y, targets=True, accept_sparse="csr")
        n, d = samples.shape
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        weights = None if sample_weight is None else v.sample_weight_root(sample_weight, n) ** 2
        if self.cv is not None and self.cv > n:
            raise ValueError(f"cv={self.cv} folds need at least {self.cv} samples, got {n}")
        rows, method, choice = [], "", {}
        for gamma in gammas:
            kernel = samples.bind(kernels.make(self.kernel, gamma=gamma, degree=self.degree, coef0=self.coef0,
                                               n_features=d, n_jobs=self.n_jobs))
            scale = kernels.gamma_of(kernel)
            if gamma is not None and scale is None:
                raise ValueError(f"gammas cannot be searched with {kernel.label}: it has no gamma")
            errors, method, choice = ridge_cv.cross_validate(samples, kernel, Y, alphas, self.cv, weights,
                                                     tol=self.tol, maxiter=self.max_iter, memory_limit=limit,
                                                     n_jobs=self.n_jobs)
            rows += [(alpha, np.nan if scale is None else scale, err) for alpha, err in zip(alphas, errors)]
        table = np.array(rows, dtype=np.float64)
        best = int(np.argmin(table[:, 2]))
        self.cv_results_ = {"alpha": table[:, 0], "gamma": table[:, 1], "mean_squared_error": table[:, 2],
                            "method": method}
        self.solver_info_ = {"method": method, "choice": choice}
        self.alpha_ = float(table[best, 0])
        self.gamma_ = None if np.isnan(table[best, 1]) else float(table[best, 1])
        self.best_score_ = float(table[best, 2])
        self.estimator_ = KernelRidge(alpha=self.alpha_, kernel=self.kernel, gamma=self.gamma_, degree=self.degree,
                                      coef0=self.coef0, memory_limit=self.memory_limit, n_jobs=self.n_jobs)
        self.estimator_.fit(X, y, sample_weight=sample_weight)
        self.dual_coef_ = self.estimator_.dual_coef_
        self.X_fit_ = self.estimator_.X_fit_
        return self

    def predict(self, X):
        """Predictions of the refitted model.

        Parameters
        ----------
        X : array-like of shape (n_new, n_features)
            New samples.

        Returns
        -------
        y : ndarray of shape (n_new,) or (n_new, n_targets)
            ``estimator_.predict(X)``.
        """
        check_is_fitted(self)
        return self.estimator_.predict(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = kernels.takes_matrix(self.kernel)
        return tags
