"""SpectralClustering: k-means (or discretisation, or QR) on the spectral embedding of an affinity that a
kernel affinity never builds; scikit-learn's drop-in."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from sklearn.base import ClusterMixin

from .. import kernels
from .. import _validation as v
from .spectral import AFFINITIES, SpectralFit
from ._base import parameter_defaults
from .solver_settings import DEPRECATED, Nystrom

__all__ = ["SpectralClustering", "spectral_clustering", "assign_labels"]

_ASSIGN = ("kmeans", "discretize", "cluster_qr")
# scikit-learn's pairwise kernels that are not native: evaluated by scikit-learn.
_SKLEARN_KERNELS = ("chi2", "additive_chi2")
_CONSTRAINTS = {
    "n_clusters": v.integer(1), "n_components": v.integer(1, none=True),
    "random_state": v.anything, "n_init": v.integer(1), "gamma": v.real(0.0),
    "affinity": kernels.constraint(*AFFINITIES, *_SKLEARN_KERNELS),
    "n_neighbors": v.integer(1), "eigen_tol": v.anything, "assign_labels": v.choice(*_ASSIGN),
    "degree": v.real(0.0), "coef0": v.real(), "kernel_params": v.optional_dict, "n_jobs": v.jobs,
    "verbose": v.anything, "memory_limit": v.anything,
}


def assign_labels(maps: np.ndarray, n_clusters: int, method: str, random_state, n_init: int, verbose) -> np.ndarray:
    """Labels from the embedding, by scikit-learn's k_means, discretize or cluster_qr."""
    from sklearn.cluster import k_means
    from sklearn.cluster._spectral import cluster_qr, discretize

    if verbose:
        print(f"Computing label assignment using {method}")
    if method == "kmeans":
        return k_means(maps, n_clusters, random_state=random_state, n_init=n_init, verbose=verbose)[1]
    if method == "cluster_qr":
        return cluster_qr(maps)
    return discretize(maps, random_state=random_state)


@parameter_defaults
class SpectralClustering(ClusterMixin, SpectralFit):
    """Spectral clustering, a drop-in for sklearn.cluster.SpectralClustering whose kernel affinities are
    never built (scikit-learn's default, rbf, is a dense N×N matrix factorised by LU).

    Parameters
    ----------
    n_clusters : int, default=8
    eigen_solver : {None, "auto", "lanczos", "dense", "nystrom", "arpack", "lobpcg", "amg"} or Nystrom, \
default=None
        ``"lanczos"``: fastkpca's block Lanczos on the normalised affinity; ``"dense"``: LAPACK's eigensolver on
        it as a matrix; None/"auto": the cheaper of the two by the library's cost model (dense for a few hundred
        samples); ``"nystrom"`` or :class:`fastkpca.Nystrom` (with its ``n_landmarks`` and ``landmarks``): the
        approximate embedding on the landmarks (native kernels); the others: scikit-learn's solver on the
        materialised affinity.
    n_components : int, default=None
        Eigenvectors of the embedding (None: n_clusters).
    random_state : int, RandomState instance or None, default=None
        Seeds the solver's random start and then the label assignment, from one RandomState as in
        scikit-learn.
    n_init : int, default=10
        k-means runs.
    gamma : float, default=1.0
        Kernel coefficient of the rbf, laplacian, poly, sigmoid and chi2 affinities (scikit-learn's default:
        1.0, not 1 / n_features).
    affinity : str, callable or kernel object, default="rbf"
        A native kernel's name (never built: an operator within ``memory_limit``, on dense or sparse X),
        ``"chi2"`` or ``"additive_chi2"`` (evaluated by scikit-learn), ``"nearest_neighbors"``,
        ``"precomputed"``, ``"precomputed_nearest_neighbors"``, a callable of two rows, or a scikit-learn
        kernel object.
    n_neighbors : int, default=10
    eigen_tol : float or "auto", default="auto"
    assign_labels : {"kmeans", "discretize", "cluster_qr"}, default="kmeans"
    degree, coef0 : float, default=3, 1
    kernel_params : dict, default=None
        Parameters of a callable affinity.
    n_jobs : int, default=None
    verbose : bool or int, default=False
        Prints the label assignment's progress (scikit-learn's), and the fit's stages as
        :func:`fastkpca.progress` does.
    memory_limit : int or str, default=None
        As in :class:`fastkpca.SpectralEmbedding`.
    n_landmarks, landmarks : deprecated
        Settings of ``eigen_solver=Nystrom(n_landmarks=..., landmarks=...)`` now. Given here, they still apply
        (with a FutureWarning) until the next minor release.
    callback : deprecated
        Progress is reported inside ``with fastkpca.progress(callback=...):``. Given here, it still applies
        (with a FutureWarning) until the next minor release.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    affinity_matrix_ : array-like of shape (n_samples, n_samples)
        The affinity; for a kernel affinity built on first access (after a memory check), never by fit.
    embedding_ : ndarray of shape (n_samples, n_components)
        The spectral embedding the labels were assigned from.
    solver_info_ : dict
        What the solver did (see :class:`fastkpca.SpectralEmbedding`).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import SpectralClustering
    >>> X = np.r_[np.zeros((50, 2)), np.ones((50, 2)) * 5] + np.random.default_rng(0).normal(0, .1, (100, 2))
    >>> labels = SpectralClustering(n_clusters=2, random_state=0).fit_predict(X)
    >>> len(set(labels[:50])), len(set(labels[50:])), bool(labels[0] != labels[-1])
    (1, 1, True)
    """

    _CONSTRAINTS = _CONSTRAINTS
    _DEPRECATED_PROGRESS = ("callback",)
    _DROP_FIRST = False
    _CALLABLE_IS_PAIRWISE = True

    def __init__(self, n_clusters: int = 8, *, eigen_solver: str | Nystrom | None = None,
                 n_components: int | None = None,
                 random_state: int | np.random.RandomState | None = None, n_init: int = 10, gamma: float = 1.0,
                 affinity: str | Callable[..., Any] | Any = "rbf", n_neighbors: int = 10,
                 eigen_tol: float | str = "auto", assign_labels: str = "kmeans", degree: float = 3, coef0: float = 1,
                 kernel_params: dict | None = None, n_jobs: int | None = None, verbose: bool | int = False,
                 memory_limit: int | str | None = None, n_landmarks: Any = DEPRECATED, landmarks: Any = DEPRECATED,
                 callback: Any = DEPRECATED):
        self.n_clusters = n_clusters
        self.eigen_solver = eigen_solver
        self.n_components = n_components
        self.random_state = random_state
        self.n_init = n_init
        self.gamma = gamma
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.eigen_tol = eigen_tol
        self.assign_labels = assign_labels
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.memory_limit = memory_limit
        self.n_landmarks = n_landmarks
        self.landmarks = landmarks
        self.callback = callback

    def _embedding_size(self) -> int:
        return self.n_clusters if self.n_components is None else self.n_components

    def _kernel_params(self) -> dict | None:
        return self.kernel_params

    def _check_fit(self, n: int, d: int) -> None:
        if self.n_clusters > n:
            raise ValueError(f"n_clusters={self.n_clusters} is larger than the number of samples, {n}")
        if n == d and not kernels.takes_matrix(self.affinity):
            warnings.warn("The spectral clustering API has changed. ``fit``now constructs an affinity matrix from "
                          "data. To use a custom affinity matrix, set ``affinity=precomputed``.", stacklevel=3)

    def _after_embedding(self, random_state) -> None:
        self.labels_ = assign_labels(self.embedding_, self.n_clusters, self.assign_labels, random_state, self.n_init,
                                     self.verbose)

    def fit_predict(self, X, y=None):
        """Fit and return the cluster labels (NumPy, whatever X's kind).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array}
        y : ignored

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.fit(X).labels_


def spectral_clustering(affinity: Any, *, n_clusters: int = 8, n_components: int | None = None,
                        eigen_solver: str | None = None, random_state: int | np.random.RandomState | None = None,
                        n_init: int = 10, eigen_tol: float | str = "auto", assign_labels: str = "kmeans",
                        verbose: bool = False) -> np.ndarray:
    """Spectral clustering of a precomputed affinity; scikit-learn's ``sklearn.cluster.spectral_clustering``
    on fastkpca's solver.

    Parameters
    ----------
    affinity : {array-like, sparse matrix} of shape (n_samples, n_samples)
        Symmetric, non-negative affinity.
    n_clusters : int, default=8
    n_components : int, default=None
    eigen_solver : {None, "lanczos", "dense", "arpack", "lobpcg", "amg"}, default=None
    random_state : int, RandomState instance or None, default=None
    n_init : int, default=10
    eigen_tol : float or "auto", default="auto"
    assign_labels : {"kmeans", "discretize", "cluster_qr"}, default="kmeans"
    verbose : bool, default=False

    Returns
    -------
    labels : ndarray of shape (n_samples,)
    """
    return SpectralClustering(n_clusters=n_clusters, n_components=n_components, eigen_solver=eigen_solver,
                              random_state=random_state, n_init=n_init, affinity="precomputed", eigen_tol=eigen_tol,
                              assign_labels=assign_labels, verbose=verbose).fit(affinity).labels_
