"""KernelPCA: scikit-learn's estimator on fastkpca's native kernels and block Lanczos solver."""

from __future__ import annotations

import functools
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

from . import _dask, _native, _registry, linalg, low_rank, operators
from . import _validation as v
from ._eigenvalues import check_psd_eigenvalues
from ._sklearn_compat import validate_data
from .exceptions import ConvergenceWarning
from .kernels import NativeKernel, gram

__all__ = ["KernelPCA"]


def _center_product(W, ones_M, shift):
    """center(K)·M from W = K·[M, 1/N]: K M − r (1ᵀM) − 1 (μᵀM) + m̄ 1 (1ᵀM), r = W's last column."""
    k = ones_M.shape[0]
    return W[:, :k] - W[:, k:] * ones_M - shift

_KERNELS = (*_registry.NAMES, "precomputed")
_SOLVERS = ("auto", "dense", "arpack", "randomized", "lanczos", "nystrom")
#: Landmarks of eigen_solver="nystrom" when n_landmarks is None (or all samples, if fewer).
DEFAULT_N_LANDMARKS = 1000
# Below this many samples a dense LAPACK solve is as fast as anything and exactly scikit-learn's path.
_DENSE_BELOW = 200
#: Largest piece of a cross kernel that transform builds at once (also at most a quarter of the limit).
TRANSFORM_CHUNK_BYTES = 256 * 2**20


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
    eigen_solver : {"auto", "lanczos", "dense", "arpack", "randomized", "nystrom"}, default="auto"
        ``"lanczos"``: fastkpca's block Lanczos on the implicitly centered kernel; ``"dense"``,
        ``"arpack"``, ``"randomized"``: scikit-learn's solvers on the centered kernel. ``"auto"``: dense
        when there are at most 200 samples or all components are wanted, else lanczos (or
        scikit-learn's rule if a precomputed kernel is not symmetric). ``"nystrom"``: approximate kernel
        PCA of the Nyström approximation on ``n_landmarks`` landmarks (see Notes), for N beyond what
        exact passes afford; native kernels only.
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
        packed, else the tiles that fit with the rest recomputed on every pass, else nothing: matrix-free),
        so any number of samples can be fitted; ``solver_info_`` says what was chosen and why. transform
        builds the cross kernel in chunks of at most 256 MiB (and a quarter of the limit).
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
    feature_names_in_ : ndarray of shape (n_features_in_,)

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
        memory_limit=None,
        n_landmarks=None,
        landmarks="rpcholesky",
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
        self.memory_limit = memory_limit
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks

    # ----------------------------------------------------------------------------------------- checks

    def _check_params(self):
        if not callable(self.kernel):
            v.check_choice(self.kernel, "kernel", _KERNELS)
        v.check_choice(self.eigen_solver, "eigen_solver", _SOLVERS)
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
            raise TypeError(f"kernel_params must be a dict or None, got {self.kernel_params!r}")
        v.n_threads(self.n_jobs)
        if not isinstance(self.verbose, numbers.Integral):
            raise TypeError(f"verbose must be an integer, got {self.verbose!r}")
        if self.callback is not None and not callable(self.callback):
            raise TypeError("callback must be callable or None")
        if self.fit_inverse_transform and self.kernel == "precomputed":
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
        if self.n_landmarks is not None:
            v.check_int(self.n_landmarks, "n_landmarks", minimum=1)
        if isinstance(self.landmarks, str):
            v.check_choice(self.landmarks, "landmarks", low_rank.LANDMARK_METHODS)
        if self.eigen_solver == "nystrom" and (callable(self.kernel) or self.kernel == "precomputed"):
            raise ValueError("eigen_solver='nystrom' needs one of fastkpca's native kernels "
                             f"({', '.join(_registry.NAMES)}), got kernel={self.kernel!r}")
        return v.memory_limit(self.memory_limit)

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

    def _precomputed(self, X):
        """(K, symmetric, max |K - Kᵀ|): the user's precomputed kernel, C-contiguous, checked finite."""
        K = v.as_float_array(X, "X (the precomputed kernel)")  # sparse kernels are densified
        v.check_square(K, "X (the precomputed kernel)")
        K = v.contiguous(K)  # read in place by the operator: aligned, C-ordered
        finite, _, asym = _native.core.scan_square(K, True, v.n_threads(self.n_jobs))
        if not finite:
            raise ValueError("the kernel matrix contains NaN or infinity")
        return K, asym == 0, asym

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
        limit = self._check_params()
        if v.is_dask_array(X):
            return _dask.fit_kernel_pca(self, X, limit)
        nystrom = self.eigen_solver == "nystrom"
        # The Nyström fit keeps only its landmarks: no copy of X is needed.
        X = validate_data(self, X, accept_sparse="csr", copy=self.copy_X and not nystrom,
                          dtype=[np.float64, np.float32])
        self.gamma_ = 1 / X.shape[1] if self.gamma is None else self.gamma
        n = X.shape[0]
        n_components = self._n_components(n)
        self._nystrom = self._distributed = None
        if nystrom:
            return self._fit_nystrom(X, n_components, limit)
        K, symmetric, asym = (self._precomputed(X) if self.kernel == "precomputed" else (None, True, 0.0))
        solver = self._choose_solver(n, n_components, symmetric)
        if solver == "lanczos" and not symmetric:
            raise ValueError(
                f"eigen_solver='lanczos' needs a symmetric kernel; the precomputed kernel has "
                f"max |K - K.T| = {asym:.3g}"
            )
        start = time.perf_counter()
        if solver == "lanczos":
            op = self._training_operator(X, K, n_components, limit)
            self._report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage=op.storage,
                         kernel_bytes=op.nbytes)
            values, vectors = self._fit_operator(op, n_components, limit)
        else:
            owned = K is None
            needed = n * n * (X.dtype.itemsize if owned else 8)  # the kernel, or the copy centered in place
            if needed > limit:
                raise MemoryError(
                    f"eigen_solver={solver!r} needs the whole {n}×{n} kernel matrix, {needed / 2**30:.2f} GiB, but the "
                    f"memory limit is {limit / 2**30:.2f} GiB; eigen_solver='lanczos' fits within any limit"
                )
            if owned:
                v.check_memory(needed, f"the {n}×{n} kernel matrix of eigen_solver={solver!r}")
                K = self._get_kernel(X)
            self._report("kernel", seconds=time.perf_counter() - start, n_samples=n, storage="full",
                         kernel_bytes=K.nbytes)
            values, vectors = self._fit_centered_dense(K, owned, solver, n_components)
        self._finish_eigenpairs(values, vectors)
        if self.fit_inverse_transform:
            self._fit_inverse_transform(self.eigenvectors_ * np.sqrt(self.eigenvalues_), X)
        self.X_fit_ = X
        return self

    # ------------------------------------------------------------------------------------- nystrom

    def _nystrom_landmarks(self, X, kernel, n_components, limit):
        """(landmarks m×d, their row indices or None, selection info)."""
        m = min(DEFAULT_N_LANDMARKS, X.shape[0]) if self.n_landmarks is None else self.n_landmarks
        S, index, info = low_rank.landmarks(X, self.landmarks, m, kernel, random_state=self.random_state,
                                            memory_limit=limit, name="n_landmarks")
        m = S.shape[0]
        if index is None and self.n_landmarks is not None and self.n_landmarks != m:
            raise ValueError(f"n_landmarks={self.n_landmarks} but {m} landmarks were given")
        if self.n_components is not None and n_components > m:
            raise ValueError(f"n_components={n_components} is larger than n_landmarks={m}: the Nyström "
                             "approximation has rank at most n_landmarks")
        return S, index, info

    def _fit_nystrom(self, X, n_components, limit):
        """Approximate kernel PCA on the Nyström approximation (low_rank.nystrom_pca), streamed over X (an
        array, or distributed _dask.Samples)."""
        if not isinstance(X, _dask.Samples):
            X = v.check_samples(X, "X", X.dtype)
        n = X.shape[0]
        kernel = NativeKernel.resolve(self.kernel, self.gamma_, self.degree, self.coef0, X.shape[1], self.n_jobs)
        start = time.perf_counter()
        S, index, selection = self._nystrom_landmarks(X, kernel, n_components, limit)
        if self.n_components is None:  # every component of the rank-m approximation
            n_components = S.shape[0]
        self._report("landmarks", seconds=time.perf_counter() - start, n_landmarks=S.shape[0],
                     method=selection["method"])
        m = S.shape[0]
        rows = low_rank.stream_rows(n, m, X.dtype.itemsize, limit, extra_bytes=2 * n * n_components * 8,
                                    what=f"eigen_solver='nystrom' with {m} landmarks")
        pca = low_rank.nystrom_pca(X, S, kernel, n_components, rows)
        start = time.perf_counter()
        k_found = pca.eigenvalues.shape[0]
        values = np.zeros(n_components)
        values[:k_found] = pca.eigenvalues
        values = check_psd_eigenvalues(values)
        P = np.zeros((m, n_components))
        P[:, :k_found] = pca.projection
        offset = np.zeros(n_components)
        offset[:k_found] = pca.offset
        scores = low_rank.nystrom_project(X, S, kernel, P, offset, rows)
        # scikit-learn's sign convention on the eigenvectors, carried over to the projection.
        signs = linalg.column_signs(scores)
        scores *= signs
        P *= signs
        offset *= signs
        if self.remove_zero_eig or self.n_components is None:
            keep = values > 0
            values, scores, P, offset = values[keep], scores[:, keep], P[:, keep], offset[keep]
        root = np.sqrt(values)
        scores /= np.where(root > 0, root, 1)
        self.eigenvalues_ = values.astype(X.dtype)
        self.eigenvectors_ = scores.astype(X.dtype, copy=False)
        seconds = dict(pca.seconds, landmarks=selection["seconds"], scores=time.perf_counter() - start)
        self._nystrom = (kernel, P, offset)
        self._total_variance = pca.total_variance
        self.landmarks_ = S
        self.landmark_indices_ = index
        self.X_fit_ = S
        self.solver_info_ = {"solver": "nystrom", "landmarks": selection["method"], "n_landmarks": m,
                             "rank": pca.rank, "chunk_rows": rows, "memory_limit": limit,
                             "landmark_selection": selection, "seconds": seconds}
        self._report("done", solver="nystrom", seconds=sum(seconds.values()), n_landmarks=m, rank=pca.rank)
        if self.fit_inverse_transform:
            # The pre-image map is learnt on the landmarks alone (an m×m ridge problem).
            self._fit_inverse_transform(self.transform(S), S)
        return self

    def _n_components(self, n):
        """Components computed for n samples: all of them when n_components is None."""
        return n if self.n_components is None else min(n, self.n_components)

    def _choose_solver(self, n, n_components, symmetric):
        if self.eigen_solver != "auto":
            return self.eigen_solver
        if not symmetric:  # scikit-learn's rule: its solvers read a non-symmetric kernel as it does
            return "arpack" if n > _DENSE_BELOW and n_components < 10 else "dense"
        if n <= _DENSE_BELOW or self.n_components is None:
            return "dense"
        return "lanczos"

    def _training_operator(self, X, K, n_components, limit):
        """The training kernel as an operator the lanczos solver reads: the user's precomputed kernel in
        place, a callable kernel's full matrix, or a native kernel in the storage the memory limit allows
        (operators.plan_storage)."""
        threads = v.n_threads(self.n_jobs)
        if K is not None or callable(self.kernel):
            if K is None:
                v.check_memory(X.shape[0] ** 2 * X.dtype.itemsize, "the kernel matrix of a callable kernel")
                K = np.ascontiguousarray(self._get_kernel(X))
            plan = operators.StoragePlan("full", 0, K.nbytes, limit, "a precomputed or callable kernel is a "
                                         "full matrix")
            return operators.from_matrix(K, plan, self.n_jobs)
        X = v.check_samples(X, "X", X.dtype)  # sparse data is densified (after a memory check)
        n = X.shape[0]
        widest = linalg.default_block_size(n_components, n, compute_bound=True)
        plan = operators.plan_storage(
            n, X.shape[1], X.dtype.itemsize, block_size=linalg.default_block_size(n_components, n),
            memory_limit=limit, other_bytes=linalg.solver_bytes(n_components, widest, n),
        )
        return operators.build(X, self.kernel, self.gamma_, self.degree, self.coef0, plan, threads)

    def _fit_operator(self, op, n_components, limit):
        """(values, vectors) of H K H by block Lanczos on the implicitly centered operator: K is never
        rewritten, and its row sums (the centering means) come with the first pass."""
        n = op.shape[0]
        threads = v.n_threads(self.n_jobs)
        # Implicit centering: nothing to do before solving; the means come with the first pass.
        self._report("center", seconds=0.0, implicit=True)
        progress = None
        if self.callback is not None or self.verbose >= 2:
            progress = lambda figures: self._report("pass", **figures)  # noqa: E731
        values, vectors, info = linalg.solve(
            op.centered()._native_operator, n_components, tol=self.tol or None, maxiter=self.max_iter,
            block_size=None, random_state=self.random_state, threads=threads, progress=progress,
        )
        if not info["converged"]:
            warnings.warn(f"KernelPCA: the lanczos solver stopped after {info['n_passes']} passes before "
                          "every component converged", ConvergenceWarning, stacklevel=3)
        sums = op.row_sums()
        if not np.isfinite(sums).all():
            raise ValueError("the kernel matrix contains NaN or infinity (or its sums overflow)")
        self.K_fit_rows_ = sums / n
        self.K_fit_all_ = float(sums.sum()) / (float(n) * float(n))
        # trace(H K H) = trace(K) - sum(K)/N = trace(K) - N·m.
        self._total_variance = op.trace() - n * self.K_fit_all_
        info.update(solver="lanczos", storage=op.storage, storage_reason=op.plan.reason if op.plan else "",
                    kernel_bytes=op.nbytes, memory_limit=limit)
        self.solver_info_ = info
        self._report("done", solver="lanczos", storage=op.storage, seconds=info["solve_seconds"],
                     passes=info["n_passes"], block_size=info["block_size"])
        dtype = op.storage_dtype
        return values.astype(dtype, copy=False), vectors.astype(dtype, copy=False)

    def _fit_centered_dense(self, K, owned, solver, n_components):
        """(values, vectors) from scikit-learn's dense, arpack or randomized solver on K centered in place (a
        copy of a precomputed kernel, so the user's array is never changed)."""
        threads = v.n_threads(self.n_jobs)
        start = time.perf_counter()
        trace_K = float(np.trace(K, dtype=np.float64))
        if not owned:
            v.check_memory(K.nbytes, "a copy of the precomputed kernel to center")
            K = np.array(K, order="C", copy=True)
        ok, col_mean, grand_mean = _native.core.double_center_inplace(K, "kernel", 1.0, threads)
        if not ok:
            raise ValueError("the kernel matrix contains NaN or infinity")
        self._report("center", seconds=time.perf_counter() - start, implicit=False)
        start = time.perf_counter()
        values, vectors = self._sklearn_solver(solver, K, n_components)
        seconds = time.perf_counter() - start
        self.solver_info_ = {"method": solver, "solver": solver, "storage": "full", "kernel_bytes": K.nbytes,
                             "solve_seconds": seconds}
        self._report("done", solver=solver, seconds=seconds)
        self.K_fit_rows_ = np.asarray(col_mean, dtype=np.float64)
        self.K_fit_all_ = float(grand_mean)
        self._total_variance = trace_K - K.shape[0] * self.K_fit_all_
        return values, vectors

    def _finish_eigenpairs(self, values, vectors):
        """scikit-learn's post-processing: PSD check, sign convention, descending order, zero removal."""
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
            values, vectors = sla.eigh(Kc, subset_by_index=(n - n_components, n - 1))
            if values.shape[0] < n_components:
                # LAPACK's subset-by-index driver can return fewer pairs than asked for (none at all on a
                # matrix with a highly repeated eigenvalue); the full decomposition always returns n.
                values, vectors = sla.eigh(Kc)
                values, vectors = values[n - n_components:], vectors[:, n - n_components:]
            if values.shape[0] < n_components:
                raise RuntimeError(f"the dense eigensolver returned {values.shape[0]} of {n_components} pairs")
            return values, vectors
        rng = v.check_random_state(self.random_state)
        if solver == "arpack":
            v0 = rng.uniform(-1, 1, n)
            return arpack_eigsh(Kc, n_components, which="LA", tol=self.tol, maxiter=self.max_iter, v0=v0)
        from sklearn.utils.extmath import _randomized_eigsh

        return _randomized_eigsh(Kc, n_components=n_components, n_iter=self.iterated_power,
                                 random_state=rng, selection="module")

    def _fit_inverse_transform(self, X_transformed, X):
        """The pre-image map: kernel ridge regression from the scores back to X, (K(Z, Z) + αI) β = X, by
        fastkpca.KernelRidge (dense Cholesky for small N, conjugate gradients on a kernel operator within
        the memory limit for large N: no O(N³) solve, no second N×N matrix)."""
        if hasattr(X, "tocsr"):
            raise NotImplementedError("Inverse transform not implemented for sparse matrices!")
        from .kernel_ridge import KernelRidge

        ridge = KernelRidge(alpha=self.alpha, kernel=self.kernel, gamma=self.gamma_, degree=self.degree,
                            coef0=self.coef0, kernel_params=self.kernel_params if callable(self.kernel) else None,
                            memory_limit=self.memory_limit, n_jobs=self.n_jobs, random_state=self.random_state)
        ridge.fit(X_transformed, X)
        self.dual_coef_ = ridge.dual_coef_.astype(np.result_type(X.dtype, np.float32), copy=False)
        self.inverse_solver_info_ = ridge.solver_info_
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
        self.fit(X, **params)  # fits the inverse transform too, when asked
        Z = self.eigenvectors_ * np.sqrt(self.eigenvalues_)
        return _dask.as_dask(Z, X) if v.is_dask_array(X) else Z

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
        if v.is_dask_array(X) or getattr(self, "_distributed", None) is not None:
            return _dask.apply_model(self, X, "transform")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=[np.float64, np.float32])
        if getattr(self, "_nystrom", None) is not None:
            kernel, P, offset = self._nystrom
            X = v.check_samples(X, "X", self.landmarks_.dtype)
            rows = low_rank.chunk_rows(self.landmarks_.shape[0], X.dtype.itemsize, v.memory_limit(self.memory_limit))
            return low_rank.nystrom_project(X, self.landmarks_, kernel, P, offset, rows).astype(X.dtype, copy=False)
        return self._centered_cross_kernel_times(X, self._projection())

    def _projection(self):
        """M with transform(X) = center(K(X, X_fit_))·M: the eigenvectors over √λ (0 for λ = 0)."""
        non_zeros = np.flatnonzero(self.eigenvalues_)
        scaled = np.zeros_like(self.eigenvectors_)
        scaled[:, non_zeros] = self.eigenvectors_[:, non_zeros] / np.sqrt(self.eigenvalues_[non_zeros])
        return scaled

    def _transform_chunk_rows(self, n_fit, itemsize):
        """Rows of X_new per piece of the cross kernel: at most TRANSFORM_CHUNK_BYTES and a quarter of the
        memory limit."""
        limit = v.memory_limit(self.memory_limit)
        chunk_bytes = min(TRANSFORM_CHUNK_BYTES, limit // 4)
        return max(1, chunk_bytes // max(1, n_fit * itemsize))

    def _centered_cross_kernel_times(self, X, M):
        """center(K(X, X_fit_)) @ M, with the cross kernel built and centered in row chunks: a new row's
        kernel, its centering (against the training means and its own row mean) and its product depend
        on that row alone, so the chunks give what one piece would."""
        if isinstance(self.kernel, str) and self.kernel in _registry.NAMES and not v.is_sparse(self.X_fit_):
            return self._centered_cross_product(X, M)
        n_fit = self.eigenvectors_.shape[0]
        m = X.shape[0]
        itemsize = 8 if self.kernel == "precomputed" else np.dtype(X.dtype).itemsize
        rows = self._transform_chunk_rows(n_fit, itemsize)
        out = None
        threads = v.n_threads(self.n_jobs)
        for start in range(0, m, rows):
            part = X[start:start + rows]
            if self.kernel == "precomputed":
                K = np.array(v.as_float_array(part, "X (the precomputed kernel)"), order="C")
            else:
                K = self._get_kernel(part, self.X_fit_)
                if not (isinstance(K, np.ndarray) and K.flags.c_contiguous and K.flags.writeable):
                    K = np.array(K, order="C")
            # Out-of-sample centering in place on the freshly built piece: no copy of it.
            _native.core.center_cross_inplace(K, self.K_fit_rows_, self.K_fit_all_, threads)
            product = K @ M
            if out is None:
                out = np.empty((m, M.shape[1]), dtype=product.dtype)
            out[start:start + rows] = product
        return out

    def _centered_cross_product(self, X, M):
        """center(K(X, X_fit_)) @ M for a native kernel without building the cross kernel: one tile-by-tile
        product with [M, 1/N] (cross_product.hpp) gives K·M and the new rows' kernel means r, and

            center(K) M = K M − r (1ᵀM) − 1 (μᵀM) + m̄ 1 (1ᵀM),

        μ the training kernel's column means and m̄ their mean (the centering of K_c[i, j] = K[i, j] − r_i
        − μ_j + m̄, applied to the product instead of to every entry)."""
        fit = v.check_samples(self.X_fit_, "X_fit_", self.X_fit_.dtype)
        X = v.check_samples(X, "X", fit.dtype)
        kernel = NativeKernel.resolve(self.kernel, self.gamma_, self.degree, self.coef0, fit.shape[1], self.n_jobs)
        V, centering = self._cross_centering(M)
        return centering(kernel.product(X, fit, V)).astype(M.dtype, copy=False)

    def _cross_centering(self, M):
        """(V = [M, 1/N], f) such that f(K(X, X_fit_)·V) = center(K(X, X_fit_))·M row by row (see
        _centered_cross_product); f is picklable, for the Dask engine's tasks."""
        n_fit, k = M.shape
        V = np.empty((n_fit, k + 1))
        V[:, :k] = M
        V[:, k] = 1.0 / n_fit
        ones_M = V[:, :k].sum(axis=0)
        shift = self.K_fit_rows_ @ V[:, :k] - self.K_fit_all_ * ones_M
        return V, functools.partial(_center_product, ones_M=ones_M, shift=shift)

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

    def __getstate__(self):
        # A model fitted on a Dask cluster pickles as a local one (its training panels gathered).
        return _dask.picklable_state(super().__getstate__())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32], "pairwise": self.kernel == "precomputed"}
