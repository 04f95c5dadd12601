"""Spectral embedding and spectral clustering: scikit-learn's drop-ins on fastkpca's operators and block
Lanczos solver (solvers/spectral.py says exactly what is computed)."""

from __future__ import annotations

import time
from typing import Any
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.manifold import _spectral_embedding as _sk_embedding

from .. import engines
from .. import _validation as v
from ..exceptions import ConvergenceWarning
from ..kernels import NativeKernel, registry
from ..solvers import low_rank, spectral
from ..solvers.spectral_nystrom import nystrom_embedding
from ..solvers.spectral_start import KMeansPartition
from . import _affinity as aff
from ._base import EngineFitted, Reporting

__all__ = ["SpectralEmbedding", "spectral_embedding", "embed_affinity", "AffinityFitted", "SOLVERS",
           "SKLEARN_SOLVERS"]

#: scikit-learn's own solvers, run on the materialised affinity when asked for by name.
SKLEARN_SOLVERS = ("arpack", "lobpcg", "amg")
SOLVERS = ("auto", "lanczos", "nystrom", *SKLEARN_SOLVERS)
# scikit-learn's implementation, kept before patch_sklearn replaces the module's names with ours (the public
# function calls the private one through the module, which would then be ours again).
_SKLEARN_SPECTRAL_EMBEDDING = getattr(_sk_embedding, "_spectral_embedding", _sk_embedding.spectral_embedding)


def _tol(eigen_tol):
    if isinstance(eigen_tol, str) and eigen_tol == "auto":
        return None
    return v.check_real(eigen_tol, "eigen_tol", minimum=0)


def embed_affinity(affinity: aff.Affinity, n_components: int, *, eigen_solver, random_state, eigen_tol,
                   norm_laplacian=True, drop_first=True, threads=1, progress=None, dtype=np.float64):
    """(embedding, solver_info) of an affinity (estimators/_affinity.py) by the named solver: block Lanczos
    on the Laplacian view (any storage), or scikit-learn's solver on the materialised matrix."""
    solver = "lanczos" if eigen_solver in (None, "auto") else eigen_solver
    n = affinity.op.shape[0]
    k = n_components + 1 if drop_first else n_components
    if k > n:
        raise ValueError(f"n_components={n_components}{' (+1 for drop_first)' if drop_first else ''} is larger "
                         f"than the number of samples, {n}")
    aff.warn_if_disconnected(affinity)
    if solver in SKLEARN_SOLVERS:
        A = affinity.dense(f"eigen_solver={solver!r}")  # scikit-learn's solvers need the matrix
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Graph is not fully connected")  # warned above
            E = _SKLEARN_SPECTRAL_EMBEDDING(A, n_components=n_components, eigen_solver=solver,
                                            random_state=random_state, eigen_tol=eigen_tol,
                                            norm_laplacian=norm_laplacian, drop_first=drop_first)
        return E, {"solver": solver, "solve_seconds": time.perf_counter() - start}
    # A kernel affinity's samples give the solver its start: a k-means partition (solvers/spectral_start.py).
    partition = None if affinity.samples is None else KMeansPartition(affinity.samples,
                                                                      random_state.randint(np.iinfo(np.int32).max))
    E, info = spectral.embed(affinity.op, affinity.degrees, n_components, norm_laplacian=norm_laplacian,
                             drop_first=drop_first, tol=_tol(eigen_tol), random_state=random_state,
                             threads=affinity.op.threads, progress=progress, partition=partition)
    if not info["converged"]:
        warnings.warn(f"spectral embedding: the lanczos solver stopped after {info['n_passes']} passes before "
                      "every eigenvector converged", ConvergenceWarning, stacklevel=3)
    info = {**info, "solver": "lanczos", **affinity.op.info()}
    return E.astype(dtype, copy=False), info


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
    eigen_solver : {None, "lanczos", "arpack", "lobpcg", "amg"}, default=None
        None and ``"lanczos"``: fastkpca's block Lanczos on the normalised affinity (no Laplacian copy, no
        factorisation); the others run scikit-learn's solver of that name.
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
    :mod:`fastkpca.solvers.spectral`.
    """
    solver = v.check_choice("auto" if eigen_solver is None else eigen_solver, "eigen_solver",
                            SOLVERS[:2] + SKLEARN_SOLVERS)
    n_components = v.check_int(n_components, "n_components", minimum=1)
    A = aff.check_affinity_matrix(adjacency, "adjacency", n_jobs)
    dtype = np.float32 if A.dtype == np.float32 else np.float64
    with aff.matrix_affinity(A, n_jobs) as affinity:
        E, _ = embed_affinity(affinity, n_components, eigen_solver=solver,
                              random_state=v.check_random_state(random_state), eigen_tol=eigen_tol,
                              norm_laplacian=bool(norm_laplacian), drop_first=bool(drop_first), dtype=dtype)
    return E


_AFFINITIES = (*registry.NAMES, "precomputed", *aff.GRAPHS)
_CONSTRAINTS = {
    "n_components": v.integer(1), "affinity": v.choice(*_AFFINITIES, callable_ok=True),
    "gamma": v.real(0.0, none=True), "degree": v.real(0.0), "coef0": v.real(),
    "random_state": v.anything, "eigen_solver": v.choice(*SOLVERS, none=True), "eigen_tol": v.anything,
    "n_neighbors": v.integer(1, none=True), "n_jobs": v.jobs, "memory_limit": v.anything,
    "n_landmarks": v.integer(1, none=True), "landmarks": v.choice(*low_rank.LANDMARK_METHODS, other=v.anything),
    "verbose": v.integer(), "callback": v.optional_callable,
}


class AffinityFitted:
    """What the spectral estimators share: ``affinity_matrix_`` (the matrix the fit used, or a kernel
    affinity built on access) and their input tags."""

    @property
    def affinity_matrix_(self):
        return materialised_affinity(self)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.affinity in ("precomputed", "precomputed_nearest_neighbors")
        return tags


class SpectralEmbedding(Reporting, EngineFitted, AffinityFitted, BaseEstimator):
    """Spectral embedding for non-linear dimensionality reduction; a drop-in for
    sklearn.manifold.SpectralEmbedding whose kernel affinities are never built.

    Parameters
    ----------
    n_components : int, default=2
        Dimension of the embedded space.
    affinity : {"nearest_neighbors", "rbf", "laplacian", "poly", "linear", "sigmoid", "cosine", \
"precomputed", "precomputed_nearest_neighbors"} or callable, default="nearest_neighbors"
        A native kernel's name: the kernel operator of X, held within ``memory_limit`` (full, packed, cached
        or matrix-free) and never built as an N×N affinity. ``"nearest_neighbors"``: the sparse symmetric
        k-NN connectivity graph; ``"precomputed"``: X is the affinity (dense or sparse);
        ``"precomputed_nearest_neighbors"``: X is a precomputed distance matrix whose k-NN graph is used; a
        callable gets X and returns the affinity.
    gamma : float, default=None
        Kernel coefficient of the kernel affinities (None: 1 / n_features).
    random_state : int, RandomState instance or None, default=None
    eigen_solver : {None, "auto", "lanczos", "nystrom", "arpack", "lobpcg", "amg"}, default=None
        None/"auto"/"lanczos": block Lanczos on the normalised affinity; ``"nystrom"``: the approximate
        embedding on ``n_landmarks`` landmarks (native kernels; see :mod:`fastkpca.solvers.spectral_nystrom`);
        the others: scikit-learn's solver on the materialised affinity.
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
    n_landmarks : int, default=None
        Landmarks of ``eigen_solver="nystrom"`` (None: min(1000, n_samples)).
    landmarks : {"rpcholesky", "uniform"} or array-like, default="rpcholesky"
        How the Nyström landmarks are chosen.
    verbose : int, default=0
    callback : callable, default=None
        ``callback(stage, info)`` as in :class:`fastkpca.KernelPCA`.

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

    def __init__(self, n_components=2, *, affinity="nearest_neighbors", gamma=None, random_state=None,
                 eigen_solver=None, eigen_tol="auto", n_neighbors=None, n_jobs=None, degree=3, coef0=1,
                 memory_limit=None, n_landmarks=None, landmarks="rpcholesky", verbose=0, callback=None):
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

    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data, or the affinity (distance) matrix for ``"precomputed"``
            (``"precomputed_nearest_neighbors"``).
        y : ignored

        Returns
        -------
        self : SpectralEmbedding
        """
        v.check_params(self, _CONSTRAINTS)
        _tol(self.eigen_tol)
        random_state = v.check_random_state(self.random_state)
        samples, _ = engines.select(X).fit_samples(self, X, accept_sparse="csr")
        if samples.shape[0] < 2:
            raise ValueError(f"Found array with {samples.shape[0]} sample(s) while a minimum of 2 is required.")
        self._engine = samples.engine
        self.embedding_, self.solver_info_ = fit_embedding(self, samples, self.n_components, random_state,
                                                           drop_first=True)
        return self

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



def affinity_of(est, samples, k: int) -> aff.Affinity:
    """The affinity an estimator's parameters name, over its validated samples (an engine's)."""
    affinity, n = est.affinity, samples.shape[0]
    if affinity == "nearest_neighbors" and v.is_sparse(samples.local("affinity='nearest_neighbors'")):
        warnings.warn("Nearest neighbors affinity currently does not support sparse input, falling back to "
                      "rbf affinity", stacklevel=3)
        affinity = "rbf"
    if registry.is_native(affinity):
        kernel = native_kernel(est, affinity, samples)
        return aff.kernel_affinity(samples, kernel, k, v.memory_limit(est.memory_limit), est.n_jobs)
    X = samples.local(f"affinity={affinity!r}")
    if affinity in aff.GRAPHS:
        default = getattr(est, "_default_neighbors", lambda n: max(int(n / 10), 1))
        est.n_neighbors_ = default(n) if est.n_neighbors is None else est.n_neighbors
        if affinity == "precomputed_nearest_neighbors":
            v.check_square(X, "X (the precomputed distances)")
        A = aff.knn_graph(X, est.n_neighbors_, affinity == "precomputed_nearest_neighbors", est.n_jobs)
    elif affinity == "precomputed":
        A = X
    else:
        A = callable_affinity(est, X)
    A = aff.check_affinity_matrix(A, "the affinity matrix" if affinity != "precomputed" else "X (the affinity)",
                                  est.n_jobs)
    est._fitted_affinity = (affinity, A, None)
    return aff.matrix_affinity(A, est.n_jobs)


def native_kernel(est, affinity: str, samples) -> NativeKernel:
    """The native kernel an estimator's affinity names (``gamma_`` set; None means 1 / n_features), and
    what ``affinity_matrix_`` will need to build it."""
    d = samples.shape[1]
    est.gamma_ = 1.0 / d if est.gamma is None else est.gamma
    kernel = NativeKernel.resolve(affinity, est.gamma_, est.degree, est.coef0, d, est.n_jobs)
    est._fitted_affinity = (affinity, kernel, samples.fitted())
    return kernel


def callable_affinity(est, X):
    """SpectralEmbedding's callable gets X; SpectralClustering's is a pairwise kernel (or names one of
    scikit-learn's), as in scikit-learn."""
    if callable(est.affinity) and not hasattr(est, "kernel_params"):
        return est.affinity(X)
    params = dict(est.kernel_params or {}) if getattr(est, "kernel_params", None) else {}
    if not callable(est.affinity):
        params.update(gamma=est.gamma, degree=est.degree, coef0=est.coef0)
    return aff.pairwise_affinity(X, est.affinity, params, est.n_jobs)


def fit_embedding(est, samples, n_components, random_state, *, drop_first):
    """(embedding, solver_info) of an estimator's affinity over its samples, by its solver."""
    start = time.perf_counter()
    dtype = np.float32 if samples.dtype == np.float32 else np.float64
    if est.eigen_solver == "nystrom":
        registry.check_native_kernel(est.affinity, "eigen_solver='nystrom'")
        kernel = native_kernel(est, est.affinity, samples)
        result = nystrom_embedding(samples, kernel, n_components, drop_first=drop_first,
                                   n_landmarks=est.n_landmarks, landmarks_spec=est.landmarks, random_state=random_state,
                                   memory_limit=v.memory_limit(est.memory_limit))
        est._report("done", solver="nystrom", seconds=time.perf_counter() - start)
        return result[0].astype(dtype, copy=False), result[1]
    with affinity_of(est, samples, n_components + drop_first) as affinity:
        est._report("affinity", seconds=time.perf_counter() - start, storage=affinity.op.storage)
        progress = (lambda figures: est._report("pass", **figures)) if est._wants_progress() else None
        E, info = embed_affinity(affinity, n_components, eigen_solver=est.eigen_solver, random_state=random_state,
                                 eigen_tol=est.eigen_tol, drop_first=drop_first, progress=progress, dtype=dtype)
    est._report("done", solver=info["solver"], seconds=time.perf_counter() - start, passes=info.get("n_passes"))
    return E, info


def materialised_affinity(est):
    """``affinity_matrix_``: the matrix the fit used, or, for a kernel affinity, the kernel of the training
    data built now (after a memory check): the fit never builds it."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "embedding_" if hasattr(est, "embedding_") else "labels_")
    name, what, X = est._fitted_affinity
    if not isinstance(what, NativeKernel):
        return what
    X = v.check_samples(est._engine.gather(X, "X"), "X")  # the training data here, wherever they were fitted
    v.check_memory(X.shape[0] ** 2 * X.dtype.itemsize, f"affinity_matrix_ (the {X.shape[0]}×{X.shape[0]} kernel)")
    return what.cross(X)
