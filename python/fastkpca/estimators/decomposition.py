"""KernelPCA: scikit-learn's estimator on fastkpca's native kernels and block Lanczos solver."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import NotFittedError

from .. import engines, kernels
from .._sklearn_compat import check_is_fitted
from .. import _validation as v
from ..solvers.kernel_pca import dense, solvers as kernel_pca_solvers
from . import solver_settings
from ._base import EngineFitted, Reporting, parameter_defaults, warn_deprecated_progress
from .solver_settings import DEPRECATED, Nystrom

__all__ = ["KernelPCA"]

_KERNELS = kernels.KERNEL_NAMES
_SOLVERS = ("auto", "lanczos", *dense.SOLVERS, "nystrom")
_CONSTRAINTS = {
    "n_components": v.integer(1, none=True), "kernel": kernels.constraint(*_KERNELS),
    "gamma": v.real(0.0, none=True), "degree": v.real(0.0), "coef0": v.real(), "kernel_params": v.optional_dict,
    "alpha": v.real(0.0), "fit_inverse_transform": v.anything,
    "tol": v.real(0.0), "max_iter": v.integer(1, none=True),
    "iterated_power": v.choice("auto", other=v.integer(0)), "remove_zero_eig": v.anything,
    "random_state": v.anything, "copy_X": v.anything, "n_jobs": v.jobs, "memory_limit": v.anything,
}
#: eigen_solver: a name, or Nystrom with its settings, and the keywords they replace.
_EIGEN_SOLVER = solver_settings.SolverFamily(
    "eigen_solver", _SOLVERS, reads={Nystrom: frozenset({"n_landmarks", "landmarks"})},
    deprecated={"n_landmarks": ((Nystrom,), "n_landmarks"), "landmarks": ((Nystrom,), "landmarks")})


@parameter_defaults
class KernelPCA(Reporting, EngineFitted, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel principal component analysis, a drop-in for sklearn.decomposition.KernelPCA.

    Same constructor, attributes and methods as scikit-learn's KernelPCA (>= 1.5), computed with fastkpca's
    multithreaded kernels and block Lanczos eigensolver: ``eigen_solver="auto"`` never runs a full dense
    eigendecomposition when ``n_components`` is much smaller than the number of samples.

    Parameters
    ----------
    n_components : int, default=None
        Number of components. ``None`` keeps all non-zero components (a full decomposition).
    kernel : {"linear", "poly", "rbf", "laplacian", "sigmoid", "cosine", "precomputed"}, callable or kernel \
object, default="linear"
        Kernel; ``"laplacian"`` is an extra over scikit-learn. A callable gets two rows and returns a float;
        a scikit-learn kernel object (``sklearn.gaussian_process.kernels``) is evaluated by its own
        vectorised ``__call__``. Native kernels take sparse X from its sparse rows (never densified).
    gamma : float, default=None
        Kernel coefficient of rbf, the Matern kernels, laplacian, poly and sigmoid; ``None`` means
        ``1 / n_features``.
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
    eigen_solver : {"auto", "lanczos", "dense", "arpack", "randomized", "nystrom"} or Nystrom, default="auto"
        ``"lanczos"``: fastkpca's block Lanczos on the implicitly centered kernel; ``"dense"``,
        ``"arpack"``, ``"randomized"``: scikit-learn's solvers on the centered kernel. ``"auto"``: the exact
        solver the library's cost model (fastkpca.solvers.choice) predicts fastest among those that fit the
        memory limit: dense for few samples or when all components are wanted, else lanczos (dense or
        arpack for a precomputed kernel that is not symmetric, which lanczos cannot solve);
        ``solver_info_["choice"]`` records the prediction. ``"nystrom"`` or :class:`fastkpca.Nystrom` (with
        its ``n_landmarks`` m, ``n_components <= m <= n_samples``, and its ``landmarks``; the landmarks are
        drawn with this estimator's ``random_state``): approximate kernel PCA of the Nyström approximation on
        m landmarks (see Notes), for N beyond what exact passes afford (not with a precomputed kernel).
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
    memory_limit : int or str, default=None
        Bytes the fit may use beyond X, or a size such as ``"4GB"``; None means 80% of the memory
        available. With the lanczos solver the kernel is held in the fastest storage that fits (full or
        packed, else the tiles that fit with the rest recomputed on every pass, else nothing: matrix-free;
        a kernel evaluated in Python: its matrix, else its row blocks on every pass), so any number of
        samples can be fitted; ``solver_info_`` says what was chosen and why. transform multiplies the cross
        kernel of a native kernel into the projection tile by tile (never stored); other kernels build it
        in chunks of at most 256 MiB (and a quarter of the limit). With a dask array X: the bytes of kernel
        tiles each worker may keep (default 40% of its memory limit).
    n_landmarks, landmarks : deprecated
        Settings of ``eigen_solver=Nystrom(n_landmarks=..., landmarks=...)`` now. Given here, they still apply
        (with a FutureWarning) until the next minor release.
    verbose, callback : deprecated
        Progress is reported inside ``with fastkpca.progress(verbose=..., callback=...):``: stages
        ``"kernel"``, ``"center"``, ``"pass"``, ``"done"``; after every pass of the lanczos solver the figures
        are ``passes``, ``converged``, ``residual``, ``seconds``, ``seconds_per_pass`` and ``eta_seconds`` (an
        estimate of the time left, None until two residuals are known). Given here, they still apply (with a
        FutureWarning) until the next minor release.

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
        Training data (or the precomputed kernel); with ``eigen_solver="nystrom"`` the landmarks, all that
        transform needs (X itself is not kept).
    landmarks_ : ndarray of shape (n_landmarks, n_features)
        The landmarks (``eigen_solver="nystrom"`` only).
    landmark_indices_ : ndarray of shape (n_landmarks,) or None
        Their rows in the training data (None for user-given landmarks).
    gamma_ : float
        The gamma used.
    solver_info_ : dict
        What the eigensolver did: ``solver``, ``choice`` (how it was chosen: fastkpca.solvers.choice); for
        lanczos also ``storage`` (full, packed, cached or matrix_free), ``storage_reason``, ``kernel_bytes``
        (bytes of kernel held), ``memory_limit``, ``block_size``, ``n_passes``, ``seconds_per_pass``,
        ``residual_norms`` and the time of each stage; for nystrom ``landmarks``, ``n_landmarks``, ``rank``
        (directions of the landmark kernel kept), ``chunk_rows``, ``landmark_selection`` (for rpcholesky: rows
        searched, kernel columns evaluated, residual trace fraction) and ``seconds`` per stage.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Notes
    -----
    The scores of the training samples are ``U Λ^½`` (U the eigenvectors, Λ the eigenvalues of H K H).
    A new sample x is projected by centering its kernel row against the training kernel's column means
    and multiplying by ``U Λ^(-½)``: for a training sample this gives back ``U Λ^½`` because
    ``(H K H) U Λ^(-½) = U Λ^½``. Components with λ = 0 project to 0.

    Peak memory of ``fit`` with the lanczos solver is what ``solver_info_["kernel_bytes"]`` says (at most
    the memory limit) plus O(N·(d + k)); the other solvers hold one N×N kernel.

    ``eigen_solver="nystrom"`` replaces K by ``K̃ = C W⁺ Cᵀ`` (C = K(X, S), W = K(S, S), S the landmarks),
    i.e. by the linear kernel of the features φ(x) = W^(-½) k(S, x), and centers in that feature space:
    the eigenpairs come from the m×m matrix of the centered features' second moments, accumulated in one
    pass over X in chunks; a second pass gives the scores. Memory O(m² + N·k), never the N×m features;
    N·m kernel evaluations and N·m² flops per fit. The result approximates exact kernel PCA (error
    decreasing with m; see bench/low_rank.py), it does not equal it.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import KernelPCA
    >>> X = np.random.default_rng(0).standard_normal((300, 5))
    >>> Z = KernelPCA(n_components=2, kernel="rbf", random_state=0).fit_transform(X)
    >>> Z.shape
    (300, 2)
    """

    def __init__(self, n_components: int | None = None, *, kernel: str | Callable[..., Any] | Any = "linear",
                 gamma: float | None = None, degree: float = 3, coef0: float = 1, kernel_params: dict | None = None,
                 alpha: float = 1.0, fit_inverse_transform: bool = False, eigen_solver: str | Nystrom = "auto",
                 tol: float = 0, max_iter: int | None = None, iterated_power: int | str = "auto",
                 remove_zero_eig: bool = False, random_state: int | np.random.RandomState | None = None,
                 copy_X: bool = True, n_jobs: int | None = None, memory_limit: int | str | None = None,
                 n_landmarks: Any = DEPRECATED, landmarks: Any = DEPRECATED, verbose: Any = DEPRECATED,
                 callback: Any = DEPRECATED):
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
        self.memory_limit = memory_limit
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.verbose = verbose
        self.callback = callback

    # ------------------------------------------------------------------------------------------ fit

    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data, or the kernel matrix (n_samples, n_samples) when kernel="precomputed".
        y : ignored

        Returns
        -------
        self : KernelPCA
        """
        v.check_params(self, _CONSTRAINTS)
        asked = solver_settings.resolve(self, _EIGEN_SOLVER)
        warn_deprecated_progress(self)
        limit = v.memory_limit(self.memory_limit)
        # A fit that keeps only its landmarks needs no copy of X.
        copy = self.copy_X and kernel_pca_solvers.keeps_samples(asked.name)
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr", copy=copy)
        self._engine = samples.engine
        n, d = samples.shape
        self.gamma_ = 1 / d if self.gamma is None else self.gamma
        kernel = samples.bind(kernels.make(self.kernel, gamma=self.gamma_, degree=self.degree, coef0=self.coef0,
                                           kernel_params=self.kernel_params, n_features=d, n_jobs=self.n_jobs))
        pre_image = kernel.between_samples("fit_inverse_transform") if self.fit_inverse_transform else None
        n_components = n if self.n_components is None else min(n, self.n_components)
        settings = kernel_pca_solvers.PcaSettings(
            limit=limit, memory_limit=self.memory_limit, all_components=self.n_components is None,
            remove_zero=self.remove_zero_eig or self.n_components is None, tol=self.tol, max_iter=self.max_iter,
            iterated_power=self.iterated_power, n_jobs=self.n_jobs,
            random_state=self.random_state, **asked.settings)
        solver, choice = kernel_pca_solvers.make_solver(asked.name, samples, kernel, n_components, settings)
        progress = (lambda figures: self._report("pass", **figures)) if self._wants_progress() else None
        fit = solver.fit(samples, kernel, n_components, report=self._report, progress=progress)
        self.eigenvalues_, self.eigenvectors_, self._transform_map = fit.eigenvalues, fit.eigenvectors, \
            fit.transform_map
        self.X_fit_, self._total_variance = fit.centres, fit.total_variance
        self.solver_info_ = {**samples.info(), **fit.info, "solver": solver.name, "choice": choice}
        for name, value in fit.attributes.items():  # the centering's means, or the landmarks
            setattr(self, name, value)
        if "K_fit_rows_" in fit.attributes:  # scikit-learn's fitted centerer, which subclasses and callers read
            from .preprocessing import KernelCenterer

            self._centerer = KernelCenterer._from_means(fit.attributes["K_fit_rows_"], fit.attributes["K_fit_all_"])
        if pre_image is not None:
            scores, X_fit = fit.pre_image_pairs(self.transform)
            self._fit_inverse_transform(scores, v.as_float_array(self._engine.gather(X_fit, "X"), "X"), pre_image)
        return self

    def _fit_inverse_transform(self, X_transformed, X, kernel):
        """The pre-image map: kernel ridge regression from the scores back to X, (K(Z, Z) + αI) β = X, by
        fastkpca.KernelRidge with the fit's kernel (dense Cholesky for small N, conjugate gradients on a kernel
        operator within the memory limit for large N: no O(N³) solve, no second N×N matrix)."""
        from .kernel_ridge import KernelRidge

        ridge = KernelRidge(alpha=self.alpha, kernel=kernel, memory_limit=self.memory_limit, n_jobs=self.n_jobs)
        ridge._fit(X_transformed, X, None, solver_settings.Resolved("auto", {"random_state": self.random_state}))
        self._pre_image = ridge
        self.dual_coef_ = ridge.dual_coef_.astype(np.result_type(X.dtype, np.float32), copy=False)
        self.inverse_solver_info_ = ridge.solver_info_
        self.X_transformed_fit_ = X_transformed

    # ------------------------------------------------------------------------------------ transform

    def fit_transform(self, X, y=None, **params):
        """Fit the model and return the kernel principal components of X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
        y : ignored
        **params : dict
            Passed to :meth:`fit` (scikit-learn's signature; fit takes none).

        Returns
        -------
        X_new : ndarray (a dask array for a dask X) of shape (n_samples, n_components)
            ``eigenvectors_ * sqrt(eigenvalues_)``.
        """
        self.fit(X, **params)  # fits the inverse transform too, when asked
        return engines.select(X).wrap(self.eigenvectors_ * np.sqrt(self.eigenvalues_), X)

    def transform(self, X):
        """Project X on the kernel principal components.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray (a dask array for a dask X) of shape (n_samples, n_components)
        """
        return self._apply_fitted(getattr(self, "_transform_map", None), X, accept_sparse="csr")

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
        check_is_fitted(self)
        return self._pre_image.predict(X).astype(self.dual_coef_.dtype, copy=False)

    def _get_kernel(self, X, Y=None):
        """The fitted kernel between X and Y (Y None: X), as scikit-learn's KernelPCA._get_kernel gives it: its
        pairwise_kernels with ``gamma_``, ``degree`` and ``coef0`` (a callable with ``kernel_params``); native
        kernels evaluated by fastkpca."""
        return kernels.fitted_pairwise_kernels(X, Y, self.kernel, gamma=getattr(self, "gamma_", self.gamma),
                                               degree=self.degree, coef0=self.coef0,
                                               kernel_params=self.kernel_params, n_jobs=self.n_jobs)

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
        tags.input_tags.pairwise = kernels.takes_matrix(self.kernel)
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32], "pairwise": kernels.takes_matrix(self.kernel)}
