"""Spectral embedding and spectral clustering: scikit-learn's drop-ins on fastkpca's operators and block
Lanczos solver (solvers/spectral/embedding.py says exactly what is computed). :class:`SpectralFit` is what both
estimators share: the fit of an affinity's embedding, with hooks for what differs."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator

from .. import engines, kernels
from .._sklearn_compat import check_is_fitted
from .. import _validation as v
from ..solvers.spectral import solvers as spectral_solvers
from ..solvers.spectral.affinity import matrix_affinity
from ..solvers.rows import ArrayRows
from . import solver_settings
from ._base import EngineFitted, Reporting, parameter_defaults, warn_deprecated_progress
from .solver_settings import DEPRECATED, Nystrom

__all__ = ["SpectralEmbedding", "SpectralFit", "spectral_embedding", "SOLVERS"]

SOLVERS = spectral_solvers.SOLVERS
#: eigen_solver of SpectralEmbedding and SpectralClustering: a name (or None), or Nystrom with its settings, and
#: the keywords they replace.
_EIGEN_SOLVER = solver_settings.SolverFamily(
    "eigen_solver", (None, *SOLVERS), reads={Nystrom: frozenset({"n_landmarks", "landmarks"})},
    deprecated={"n_landmarks": ((Nystrom,), "n_landmarks"), "landmarks": ((Nystrom,), "landmarks")})


def _tol(eigen_tol):
    if isinstance(eigen_tol, str) and eigen_tol == "auto":
        return None
    return v.check_real(eigen_tol, "eigen_tol", minimum=0)


def spectral_embedding(adjacency: Any, *, n_components: int = 8, eigen_solver: str | None = None,
                       random_state: int | np.random.RandomState | None = None, eigen_tol: float | str = "auto",
                       norm_laplacian: bool = True, drop_first: bool = True, n_jobs: int | None = None) -> np.ndarray:
    """Project the sample on the first eigenvectors of the graph Laplacian; scikit-learn's
    ``sklearn.manifold.spectral_embedding`` on fastkpca's block Lanczos solver.

    Parameters
    ----------
    adjacency : {array-like, sparse matrix} of shape (n_samples, n_samples)
        The symmetric, non-negative affinity (adjacency) matrix of the graph; its diagonal is ignored.
    n_components : int, default=8
        Dimension of the projection subspace.
    eigen_solver : {None, "lanczos", "dense", "arpack", "lobpcg", "amg"}, default=None
        ``"lanczos"``: fastkpca's block Lanczos on the normalised affinity (no Laplacian copy, no factorisation);
        ``"dense"``: LAPACK's eigensolver on the normalised affinity as a matrix; None: the cheaper of the two by
        the library's cost model (dense for a few hundred samples); the others run scikit-learn's solver of that
        name.
    random_state : int, RandomState instance or None, default=None
        Seed of the solver's random start.
    eigen_tol : float or "auto", default="auto"
        Relative residual of every eigenpair (``"auto"``: 1e-8 for lanczos; scikit-learn's default for its
        own solvers).
    norm_laplacian : bool, default=True
        Use the symmetric normalised Laplacian.
    drop_first : bool, default=True
        Drop the first eigenvector (constant for a connected graph).
    n_jobs : int, default=None
        Threads of the products.

    Returns
    -------
    embedding : ndarray of shape (n_samples, n_components)

    Notes
    -----
    With d = A·1 − diag(A) the degrees (the graph ignores self-loops), the embedding's columns are the
    eigenvectors of the Laplacian L = I − D^(-1/2) (A − diag A) D^(-1/2) (``norm_laplacian``; an isolated node
    has its degree taken as 1) or L = D − (A − diag A), for its smallest eigenvalues in ascending order,
    divided by √d (normalised only), each signed so that its largest-magnitude entry is positive; see
    :mod:`fastkpca.solvers.spectral.embedding`.
    """
    v.choice(*spectral_solvers.MATRIX_SOLVERS, none=True)(eigen_solver, "eigen_solver")
    _tol(eigen_tol)
    n_components = v.check_int(n_components, "n_components", minimum=1)
    kernel = kernels.make_affinity("precomputed", n_neighbors=0, callable_is_pairwise=False, n_features=0,
                                   n_jobs=n_jobs)
    A = kernel.check_samples(adjacency, "adjacency")
    dtype = np.float32 if A.dtype == np.float32 else np.float64
    limit = v.memory_limit(None)
    solver, _ = spectral_solvers.make_solver(eigen_solver, ArrayRows(A), kernel, n_components, memory_limit=limit)
    with matrix_affinity(A, n_jobs) as affinity:
        E, _ = solver.solve(affinity, n_components, random_state=v.check_random_state(random_state),
                            eigen_tol=eigen_tol, memory_limit=limit, norm_laplacian=bool(norm_laplacian),
                            drop_first=bool(drop_first), dtype=dtype)
    return E


#: The affinities both estimators name: the native kernels, "precomputed" and the graphs.
AFFINITIES = kernels.AFFINITY_NAMES


class SpectralFit(Reporting, EngineFitted, BaseEstimator):
    """What SpectralEmbedding and SpectralClustering share: the fit of the spectral embedding of an affinity
    of X, and ``affinity_matrix_``. The estimators differ only in these hooks:

    - ``_CONSTRAINTS``: the parameter table; ``_DEPRECATED_PROGRESS``: its deprecated progress keywords;
      ``_DROP_FIRST``: whether the first eigenvector is dropped;
      ``_CALLABLE_IS_PAIRWISE``: a callable affinity is a kernel of two rows (SpectralClustering) or a
      function of X returning the affinity (SpectralEmbedding);
    - ``_embedding_size()``: the eigenvectors of the embedding; ``_neighbors(n)``: the neighbours of a k-NN
      graph; ``_kernel_params()``: a callable kernel's parameters;
    - ``_check_fit(n, d)``: checks of the samples beyond the shared ones; ``_after_embedding(rng)``: what
      comes after the embedding (the labels).
    """

    _CONSTRAINTS: dict = {}
    #: The progress keywords deprecated on the estimator (warn_deprecated_progress).
    _DEPRECATED_PROGRESS: tuple[str, ...] = ("verbose", "callback")
    _DROP_FIRST = True
    _CALLABLE_IS_PAIRWISE = False

    def _embedding_size(self) -> int:
        return self.n_components

    def _neighbors(self, n: int) -> int:
        return self.n_neighbors

    def _kernel_params(self) -> dict | None:
        return None

    def _check_fit(self, n: int, d: int) -> None:
        """Further checks of the samples (n rows, d columns)."""

    def _after_embedding(self, random_state) -> None:
        """What the estimator computes from ``embedding_``."""

    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features) or (n_samples, n_samples)
            Training data, or the affinity (``"precomputed"``) or distances (``"precomputed_nearest_neighbors"``).
        y : ignored

        Returns
        -------
        self : estimator
        """
        v.check_params(self, self._CONSTRAINTS)
        asked = solver_settings.resolve(self, _EIGEN_SOLVER)
        warn_deprecated_progress(self, self._DEPRECATED_PROGRESS)
        _tol(self.eigen_tol)
        if isinstance(X, np.matrix):
            raise TypeError("np.matrix is not supported. Please convert to a numpy array with np.asarray.")
        random_state = v.check_random_state(self.random_state)
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr")
        n, d = samples.shape
        if n < 2:
            raise ValueError(f"Found array with {n} sample(s) while a minimum of 2 is required.")
        self._check_fit(n, d)
        self._engine = samples.engine
        k = self._embedding_size()
        if k > n:
            raise ValueError(f"n_components={k} is larger than the number of samples, {n}")
        self.n_neighbors_ = self._neighbors(n)
        self.gamma_ = 1.0 / d if self.gamma is None else self.gamma
        kernel = samples.bind(kernels.make_affinity(
            self.affinity, gamma=self.gamma_, degree=self.degree, coef0=self.coef0, kernel_params=self._kernel_params(),
            n_neighbors=self.n_neighbors_, callable_is_pairwise=self._CALLABLE_IS_PAIRWISE, n_features=d,
            n_jobs=self.n_jobs))
        self.embedding_, self.solver_info_ = self._embed(samples, kernel, k, random_state, asked)
        self._after_embedding(random_state)
        return self

    def _embed(self, samples, kernel, k, random_state, asked: solver_settings.Resolved):
        """(embedding, solver_info) by the solver ``asked`` for, or the one the library's cost model picks
        (solvers/spectral/solvers.py)."""
        start = time.perf_counter()
        dtype = np.float32 if samples.dtype == np.float32 else np.float64
        limit = v.memory_limit(self.memory_limit)
        solver, choice = spectral_solvers.make_solver(asked.name, samples, kernel, k + self._DROP_FIRST,
                                                      memory_limit=limit, **asked.settings)
        progress = (lambda figures: self._report("pass", **figures)) if self._wants_progress() else None
        E, info, retained = solver.embed(samples, kernel, k, random_state=random_state, eigen_tol=self.eigen_tol,
                                         memory_limit=limit, n_jobs=self.n_jobs, drop_first=self._DROP_FIRST,
                                         progress=progress, report=self._report, dtype=dtype)
        self._fitted_affinity = (kernel, retained, samples.fitted())
        self._report("done", solver=solver.name, seconds=time.perf_counter() - start, passes=info.get("n_passes"))
        return E, {**samples.info(), **info, "solver": solver.name, "choice": choice}

    @property
    def affinity_matrix_(self):
        """The affinity the fit used: the matrix it held (a graph, a precomputed affinity), or, for a kernel
        affinity, the kernel of the training data built now (after a memory check): the fit never builds it."""
        check_is_fitted(self, "embedding_")
        kernel, matrix, X = self._fitted_affinity
        if matrix is not None:
            return matrix
        X = kernel.check_samples(self._engine.gather(X, "X"))  # the training data here, wherever they were fitted
        n = X.shape[0]
        v.check_memory(n * n * X.dtype.itemsize, f"affinity_matrix_ (the {n}×{n} kernel)")
        return kernel.cross(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = kernels.takes_matrix(self.affinity)
        return tags


_CONSTRAINTS = {
    "n_components": v.integer(1), "affinity": kernels.constraint(*AFFINITIES),
    "gamma": v.real(0.0, none=True), "degree": v.real(0.0), "coef0": v.real(),
    "random_state": v.anything, "eigen_tol": v.anything,
    "n_neighbors": v.integer(1, none=True), "n_jobs": v.jobs, "memory_limit": v.anything,
}


@parameter_defaults
class SpectralEmbedding(SpectralFit):
    """Spectral embedding for non-linear dimensionality reduction; a drop-in for
    sklearn.manifold.SpectralEmbedding whose kernel affinities are never built.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedded space.
    affinity : {"nearest_neighbors", "rbf", "laplacian", "poly", "linear", "sigmoid", "cosine", \
"precomputed", "precomputed_nearest_neighbors"}, callable or kernel object, default="nearest_neighbors"
        A native kernel's name: the kernel operator of X (dense or sparse), held within ``memory_limit``
        (full, packed, cached or matrix-free) and never built as an N×N affinity. ``"nearest_neighbors"``:
        the sparse symmetric k-NN connectivity graph (on sparse X: rbf, with a warning, as scikit-learn
        does); ``"precomputed"``: X is the affinity (dense or sparse); ``"precomputed_nearest_neighbors"``:
        X is a precomputed distance matrix whose k-NN graph is used; a callable gets X and returns the
        affinity; a scikit-learn kernel object is evaluated as a kernel.
    gamma : float, default=None
        Kernel coefficient of the kernel affinities (None: 1 / n_features).
    random_state : int, RandomState instance or None, default=None
    eigen_solver : {None, "auto", "lanczos", "dense", "nystrom", "arpack", "lobpcg", "amg"} or Nystrom, \
default=None
        ``"lanczos"``: block Lanczos on the normalised affinity; ``"dense"``: LAPACK's eigensolver on it as a
        matrix; None/"auto": the cheaper of the two by the library's cost model (dense for a few hundred
        samples, ``solver_info_["choice"]``); ``"nystrom"`` or :class:`fastkpca.Nystrom` (with its
        ``n_landmarks`` and ``landmarks``; drawn with this estimator's ``random_state``): the approximate
        embedding on the landmarks (native kernels; see :mod:`fastkpca.solvers.spectral.nystrom`); the
        others: scikit-learn's solver on the materialised affinity.
    eigen_tol : float or "auto", default="auto"
        Relative residual of the eigenpairs (``"auto"``: 1e-8 for lanczos, relative to the top eigenvalue, 1).
    n_neighbors : int, default=None
        Neighbours of the k-NN graph (None: max(n_samples / 10, 1)).
    n_jobs : int, default=None
        Threads.
    degree, coef0 : float, default=3, 1
        Parameters of the poly and sigmoid affinities.
    memory_limit : int or str, default=None
        Bytes a kernel affinity's operator may hold (see :class:`fastkpca.KernelPCA`).
    n_landmarks, landmarks : deprecated
        Settings of ``eigen_solver=Nystrom(n_landmarks=..., landmarks=...)`` now. Given here, they still apply
        (with a FutureWarning) until the next minor release.
    verbose, callback : deprecated
        Progress is reported inside ``with fastkpca.progress(verbose=..., callback=...):`` (stages as in
        :class:`fastkpca.KernelPCA`). Given here, they still apply (with a FutureWarning) until the next minor
        release.

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
    affinity_matrix_ : ndarray or sparse matrix of shape (n_samples, n_samples)
        The affinity; for a kernel affinity built on first access (after a memory check), never by fit.
    n_neighbors_ : int
        Neighbours used (nearest-neighbour affinities).
    gamma_ : float
        The gamma used (kernel affinities).
    solver_info_ : dict
        What the solver did: ``solver``, ``storage``, ``n_passes``, ``residual_norms``, ``block_size``,
        ``laplacian_eigenvalues``, ``n_isolated`` (isolated nodes: zero-degree rows, degree taken as 1, as
        scikit-learn does; their rows of the embedding are 0 unless the graph has fewer components than
        wanted eigenvectors) and timings.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import SpectralEmbedding
    >>> X = np.random.default_rng(0).standard_normal((500, 4))
    >>> SpectralEmbedding(n_components=2, affinity="rbf", random_state=0).fit_transform(X).shape
    (500, 2)
    """

    _CONSTRAINTS = _CONSTRAINTS

    def __init__(self, n_components: int = 2, *, affinity: str | Callable[..., Any] | Any = "nearest_neighbors",
                 gamma: float | None = None, random_state: int | np.random.RandomState | None = None,
                 eigen_solver: str | Nystrom | None = None, eigen_tol: float | str = "auto",
                 n_neighbors: int | None = None, n_jobs: int | None = None, degree: float = 3, coef0: float = 1,
                 memory_limit: int | str | None = None, n_landmarks: Any = DEPRECATED, landmarks: Any = DEPRECATED,
                 verbose: Any = DEPRECATED, callback: Any = DEPRECATED):
        self.n_components = n_components
        self.affinity = affinity
        self.gamma = gamma
        self.random_state = random_state
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.n_neighbors = n_neighbors
        self.n_jobs = n_jobs
        self.degree = degree
        self.coef0 = coef0
        self.memory_limit = memory_limit
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.verbose = verbose
        self.callback = callback

    def _neighbors(self, n: int) -> int:
        return max(int(n / 10), 1) if self.n_neighbors is None else self.n_neighbors

    def fit_transform(self, X, y=None):
        """Fit the model from data in X and return the embedding.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        X_new : ndarray (a dask array for a dask X) of shape (n_samples, n_components)
        """
        self.fit(X)
        return engines.select(X).wrap(self.embedding_, X)
