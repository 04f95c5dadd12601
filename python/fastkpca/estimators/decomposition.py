"""KernelPCA: scikit-learn's estimator on fastkpca's native kernels and block Lanczos solver."""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .. import engines, kernels
from .. import _validation as v
from ..exceptions import ConvergenceWarning
from ..kernels import KernelCentering
from ..solvers import dense, lanczos, low_rank
from ..solvers.eigenvalues import finish_eigenpairs, projection
from ._base import EngineFitted, Reporting

__all__ = ["KernelPCA"]

_KERNELS = kernels.KERNEL_NAMES
_SOLVERS = ("auto", "lanczos", *dense.SOLVERS, "nystrom")
# Below this many samples a dense LAPACK solve is as fast as anything and exactly scikit-learn's path.
_DENSE_BELOW = 200
_CONSTRAINTS = {
    "n_components": v.integer(1, none=True), "kernel": kernels.constraint(*_KERNELS),
    "gamma": v.real(0.0, none=True), "degree": v.real(0.0), "coef0": v.real(), "kernel_params": v.optional_dict,
    "alpha": v.real(0.0), "fit_inverse_transform": v.anything, "eigen_solver": v.choice(*_SOLVERS),
    "tol": v.real(0.0), "max_iter": v.integer(1, none=True),
    "iterated_power": v.choice("auto", other=v.integer(0)), "remove_zero_eig": v.anything,
    "random_state": v.anything, "copy_X": v.anything, "n_jobs": v.jobs, "verbose": v.integer(), "callback":
    v.optional_callable, "memory_limit": v.anything, "n_landmarks": v.integer(1, none=True),
    "landmarks": v.choice(*low_rank.LANDMARK_METHODS, other=v.anything),
}


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
    eigen_solver : {"auto", "lanczos", "dense", "arpack", "randomized", "nystrom"}, default="auto"
        ``"lanczos"``: fastkpca's block Lanczos on the implicitly centered kernel; ``"dense"``,
        ``"arpack"``, ``"randomized"``: scikit-learn's solvers on the centered kernel. ``"auto"``: dense
        when there are at most 200 samples or all components are wanted, else lanczos (or
        scikit-learn's rule if a precomputed kernel is not symmetric). ``"nystrom"``: approximate kernel
        PCA of the Nyström approximation on ``n_landmarks`` landmarks (see Notes), for N beyond what
        exact passes afford (not with a precomputed kernel).
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
        ``"done"`` and a dict of figures; for progress displays. After every pass of the lanczos solver
        ``info`` has ``passes``, ``converged``, ``residual``, ``seconds``, ``seconds_per_pass`` and
        ``eta_seconds`` (an estimate of the time left, None until two residuals are known).
    memory_limit : int or str, default=None
        Bytes the fit may use beyond X, or a size such as ``"4GB"``; None means 80% of the memory
        available. With the lanczos solver the kernel is held in the fastest storage that fits (full or
        packed, else the tiles that fit with the rest recomputed on every pass, else nothing: matrix-free;
        a kernel evaluated in Python: its matrix, else its row blocks on every pass), so any number of
        samples can be fitted; ``solver_info_`` says what was chosen and why. transform multiplies the cross
        kernel of a native kernel into the projection tile by tile (never stored); other kernels build it
        in chunks of at most 256 MiB (and a quarter of the limit). With a dask array X: the bytes of kernel
        tiles each worker may keep (default 40% of its memory limit).
    n_landmarks : int, default=None
        Landmarks m of ``eigen_solver="nystrom"``: ``n_components <= m <= n_samples``. None means
        min(1000, n_samples).
    landmarks : {"rpcholesky", "uniform"} or array-like of shape (m, n_features), default="rpcholesky"
        How ``eigen_solver="nystrom"`` chooses its landmarks: randomly pivoted Cholesky (each landmark
        drawn with probability proportional to what the previous ones leave unexplained; on more than
        ~33,000 samples per 1000 landmarks, among a uniform subsample of that many rows), uniformly at
        random (scikit-learn's Nystroem), or the given points.

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
        What the eigensolver did: ``solver``; for lanczos also ``storage`` (full, packed, cached or
        matrix_free), ``storage_reason``, ``kernel_bytes`` (bytes of kernel held), ``memory_limit``,
        ``block_size``, ``n_passes``, ``seconds_per_pass``, ``residual_norms`` and the time of each stage;
        for nystrom ``landmarks``, ``n_landmarks``, ``rank`` (directions of the landmark kernel kept),
        ``chunk_rows``, ``landmark_selection`` (for rpcholesky: rows searched, kernel columns evaluated,
        residual trace fraction) and ``seconds`` per stage.
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
                 alpha: float = 1.0, fit_inverse_transform: bool = False, eigen_solver: str = "auto", tol: float = 0,
                 max_iter: int | None = None, iterated_power: int | str = "auto", remove_zero_eig: bool = False,
                 random_state: int | np.random.RandomState | None = None, copy_X: bool = True,
                 n_jobs: int | None = None, verbose: int = 0, callback: Callable[[str, dict], Any] | None = None,
                 memory_limit: int | str | None = None, n_landmarks: int | None = None,
                 landmarks: str | Any = "rpcholesky"):
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
        self.memory_limit = memory_limit
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks

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
        limit = v.memory_limit(self.memory_limit)
        nystrom = self.eigen_solver == "nystrom"
        # The Nyström fit keeps only its landmarks: no copy of X is needed.
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr", copy=self.copy_X and not nystrom)
        self._engine = samples.engine
        n, d = samples.shape
        self.gamma_ = 1 / d if self.gamma is None else self.gamma
        kernel = samples.bind(kernels.make(self.kernel, gamma=self.gamma_, degree=self.degree, coef0=self.coef0,
                                           kernel_params=self.kernel_params, n_features=d, n_jobs=self.n_jobs))
        pre_image = kernel.between_samples("fit_inverse_transform") if self.fit_inverse_transform else None
        n_components = n if self.n_components is None else min(n, self.n_components)
        if nystrom:
            S = self._fit_nystrom(samples, kernel.between_samples("use eigen_solver='nystrom'"), n_components, limit)
            scores, targets = self.transform(S), S  # the pre-image map is learnt on the landmarks alone
        else:
            values, vectors, centering = self._fit_exact(samples, kernel, n_components, limit)
            self.K_fit_rows_, self.K_fit_all_ = centering.column_means, centering.grand_mean
            self.eigenvalues_, self.eigenvectors_ = finish_eigenpairs(values, vectors,
                                                                      self.remove_zero_eig or self.n_components is None)
            M = projection(self.eigenvalues_, self.eigenvectors_)
            V, correction = centering.product_correction(M)
            self._transform_map = samples.cross_product(kernel, V, correction, out_dtype=M.dtype, memory_limit=limit)
            self.X_fit_ = samples.fitted()
            if pre_image is not None:
                scores = self.eigenvectors_ * np.sqrt(self.eigenvalues_)
                targets = v.as_float_array(samples.engine.gather(self.X_fit_, "X"), "X")  # the ridge's targets
        if pre_image is not None:
            self._fit_inverse_transform(scores, targets, pre_image)
        return self

    def _fit_exact(self, samples, kernel, n_components, limit):
        """(values, vectors, centering) of H K H, by block Lanczos on a kernel operator or by one of
        scikit-learn's solvers on the explicitly centered matrix."""
        n = samples.shape[0]
        solver = self._choose_solver(n, n_components, kernel.symmetric)
        if solver == "lanczos" and not kernel.symmetric:
            raise ValueError(f"eigen_solver='lanczos' needs a symmetric kernel; {kernel.label} has max |K - K.T| = "
                             f"{kernel.asymmetry:.3g}")
        start = time.perf_counter()
        if solver == "lanczos":
            block, working = lanczos.memory_needs(n_components, n)
            plan = samples.plan(kernel, block_size=block, memory_limit=self.memory_limit, other_bytes=working)
            with samples.kernel_operator(kernel, plan, self.n_jobs) as op:
                self._report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage=op.storage,
                             kernel_bytes=op.kernel_bytes)
                return self._solve_lanczos(op, n_components, limit)
        what = f"eigen_solver={solver!r}" + (" (n_components=None: all components need the dense N×N "
                                             "eigendecomposition)" if self.n_components is None else "")
        K = samples.kernel_matrix(kernel, what=what, memory_limit=limit, writable=True,
                                  hint="eigen_solver='lanczos' fits within any limit")
        self._report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage="full", kernel_bytes=K.nbytes)
        start = time.perf_counter()
        Kc, centering, self._total_variance = dense.center_kernel(K, threads=v.n_threads(self.n_jobs))
        self._report("center", seconds=time.perf_counter() - start, implicit=False)
        start = time.perf_counter()
        values, vectors = dense.top_eigenpairs(Kc, n_components, solver, tol=self.tol, maxiter=self.max_iter,
                                               iterated_power=self.iterated_power, random_state=self.random_state)
        seconds = time.perf_counter() - start
        self.solver_info_ = {"method": solver, "solver": solver, "storage": "full", "kernel_bytes": Kc.nbytes,
                             "solve_seconds": seconds}
        self._report("done", solver=solver, seconds=seconds)
        return values, vectors, centering

    def _choose_solver(self, n, n_components, symmetric):
        if self.eigen_solver != "auto":
            return self.eigen_solver
        if not symmetric:  # scikit-learn's rule: its solvers read a non-symmetric kernel as it does
            return "arpack" if n > _DENSE_BELOW and n_components < 10 else "dense"
        if n <= _DENSE_BELOW or self.n_components is None:
            return "dense"
        return "lanczos"

    def _solve_lanczos(self, op, n_components, limit):
        """(values, vectors, centering) of H K H by block Lanczos on the implicitly centered operator: K is
        never rewritten, and its row sums (the centering means) come with the first pass."""
        self._report("center", seconds=0.0, implicit=True)
        progress = (lambda figures: self._report("pass", **figures)) if self._wants_progress() else None
        values, vectors, info = lanczos.solve(op.centered(), n_components, tol=self.tol or None, maxiter=self.max_iter,
                                              block_size=None, random_state=self.random_state, threads=op.threads,
                                              progress=progress)
        if not info["converged"]:
            warnings.warn(f"KernelPCA: the lanczos solver stopped after {info['n_passes']} passes before every "
                          "component converged", ConvergenceWarning, stacklevel=4)
        sums = op.row_sums()
        if not np.isfinite(sums).all():
            raise ValueError("the kernel matrix contains NaN or infinity (or its sums overflow)")
        centering = KernelCentering.from_row_sums(sums)
        self._total_variance = op.trace() - op.shape[0] * centering.grand_mean  # trace(HKH) = trace(K) − N·m̄
        self.solver_info_ = {**info, "solver": "lanczos", "memory_limit": limit, **op.info()}
        self._report("done", solver="lanczos", storage=op.storage, seconds=info["solve_seconds"],
                     passes=info["n_passes"], block_size=info["block_size"])
        dtype = op.storage_dtype
        return values.astype(dtype, copy=False), vectors.astype(dtype, copy=False), centering

    def _fit_inverse_transform(self, X_transformed, X, kernel):
        """The pre-image map: kernel ridge regression from the scores back to X, (K(Z, Z) + αI) β = X, by
        fastkpca.KernelRidge with the fit's kernel (dense Cholesky for small N, conjugate gradients on a kernel
        operator within the memory limit for large N: no O(N³) solve, no second N×N matrix)."""
        from .kernel_ridge import KernelRidge

        ridge = KernelRidge(alpha=self.alpha, kernel=kernel, memory_limit=self.memory_limit, n_jobs=self.n_jobs,
                            random_state=self.random_state).fit(X_transformed, X)
        self._pre_image = ridge
        self.dual_coef_ = ridge.dual_coef_.astype(np.result_type(X.dtype, np.float32), copy=False)
        self.inverse_solver_info_ = ridge.solver_info_
        self.X_transformed_fit_ = X_transformed

    # ------------------------------------------------------------------------------------- nystrom

    def _fit_nystrom(self, samples, kernel, n_components, limit):
        """Approximate kernel PCA on the Nyström approximation (low_rank.nystrom_pca), streamed over the
        samples wherever the engine keeps them; returns the landmarks."""
        n = samples.shape[0]
        start = time.perf_counter()
        m = min(low_rank.DEFAULT_N_LANDMARKS, n) if self.n_landmarks is None else self.n_landmarks
        S, index, selection = low_rank.landmarks(samples, self.landmarks, m, kernel, random_state=self.random_state,
                                                 memory_limit=limit, name="n_landmarks")
        m = S.shape[0]
        if index is None and self.n_landmarks is not None and self.n_landmarks != m:
            raise ValueError(f"n_landmarks={self.n_landmarks} but {m} landmarks were given")
        if self.n_components is None:  # every component of the rank-m approximation
            n_components = m
        elif n_components > m:
            raise ValueError(f"n_components={n_components} is larger than n_landmarks={m}: the Nyström "
                             "approximation has rank at most n_landmarks")
        self._report("landmarks", seconds=time.perf_counter() - start, n_landmarks=m, method=selection["method"])
        rows = low_rank.stream_rows(n, m, samples.dtype.itemsize, limit, extra_bytes=2 * n * n_components * 8,
                                    what=f"eigen_solver='nystrom' with {m} landmarks")
        pca = low_rank.nystrom_kernel_pca(samples, S, kernel, n_components, rows,
                                          remove_zero=self.remove_zero_eig or self.n_components is None)
        self.eigenvalues_, self.eigenvectors_, self._transform_map = pca.eigenvalues, pca.eigenvectors, pca.projection
        self._total_variance = pca.total_variance
        self.landmarks_ = self.X_fit_ = S
        self.landmark_indices_ = index
        seconds = dict(pca.seconds, landmarks=selection["seconds"])
        self.solver_info_ = {"solver": "nystrom", "landmarks": selection["method"], "n_landmarks": m,
                             "rank": pca.rank, "chunk_rows": rows, "memory_limit": limit,
                             "landmark_selection": selection, "seconds": seconds, **samples.info()}
        self._report("done", solver="nystrom", seconds=sum(seconds.values()), n_landmarks=m, rank=pca.rank)
        return S

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
