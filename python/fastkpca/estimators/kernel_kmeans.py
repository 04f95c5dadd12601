"""KernelKMeans: k-means in the feature space of a kernel, exact at any N by one kernel pass per iteration."""

from __future__ import annotations

import numbers
import time
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.metrics.pairwise import PAIRWISE_KERNEL_FUNCTIONS

from .. import engines, kernels
from .._sklearn_compat import check_is_fitted
from .. import _validation as v
from ..solvers.kernel_kmeans import solvers as kernel_kmeans_solvers
from ._base import EngineFitted, KernelInputTags, Reporting, parameter_defaults

__all__ = ["KernelKMeans"]

SOLVERS = ("auto", "exact", "nystrom")
INITS = ("k-means++", "random")
#: n_init="auto": the starts of each seeding (they share the passes; more k-means++ starts than scikit-learn's
#: one because a start costs k more columns of each pass, not a run of its own).
AUTO_STARTS = {"k-means++": 4, "random": 10}
_KERNELS = tuple(dict.fromkeys((*kernels.KERNEL_NAMES, *PAIRWISE_KERNEL_FUNCTIONS)))
_CONSTRAINTS = {
    "n_clusters": v.integer(1), "kernel": kernels.constraint(*_KERNELS), "gamma": v.real(0.0, none=True),
    "degree": v.real(0.0), "coef0": v.real(), "kernel_params": v.optional_dict,
    "init": v.choice(*INITS, other=v.anything), "n_init": v.choice("auto", other=v.integer(1)),
    "max_iter": v.integer(1), "tol": v.real(0.0), "solver": v.choice(*SOLVERS),
    "n_components": v.integer(1, none=True), "random_state": v.anything, "n_jobs": v.jobs,
    "verbose": v.integer(), "callback": v.optional_callable,
}


@parameter_defaults
class KernelKMeans(Reporting, EngineFitted, KernelInputTags, ClusterMixin, TransformerMixin, BaseEstimator):
    """Kernel k-means: k-means in the feature space φ that a kernel induces, with scikit-learn's conventions.

    Each Lloyd iteration is one product of the kernel with the n × k matrix of the clusters' weight vectors
    (the centroid of a cluster is the weighted mean of its points' φ), on the kernel operator that the memory
    limit allows (full, packed, cached or matrix-free): no n × n array beyond what ``memory_limit`` allows, and
    every start of ``n_init`` rides in the same pass. With ``sample_weight``, weighted kernel k-means (Dhillon,
    Guan & Kulis 2004).

    Parameters
    ----------
    n_clusters : int, default=8
    kernel : str, callable or kernel object, default="rbf"
        A name of sklearn.metrics.pairwise (fastkpca's native kernels run natively, also on sparse X),
        ``"precomputed"`` (X is the kernel matrix), a callable of two rows, or a scikit-learn kernel object.
    gamma, degree, coef0, kernel_params :
        Kernel parameters, as scikit-learn's (gamma None: 1 / n_features).
    init : {"k-means++", "random"} or array-like of shape (n_samples,), default="k-means++"
        ``"k-means++"``: greedy k-means++ in feature space (2 + ⌊ln k⌋ candidates per centre, each one kernel
        column, as scikit-learn's KMeans); ``"random"``: k samples drawn with probability ∝ weight; an array:
        the initial label of every sample (integers in [0, n_clusters)).
    n_init : "auto" or int, default="auto"
        Starts, run side by side in the same passes; the one of least inertia is kept. ``"auto"``: 4 for
        ``"k-means++"`` (scikit-learn's KMeans takes 1, since each of its starts is a whole run; here a start adds
        k columns to the passes, not passes), 10 for ``"random"``, 1 for initial labels.
    max_iter : int, default=300
        Lloyd iterations (kernel passes) per start.
    tol : float, default=1e-4
        Convergence: the centroids' total squared shift in an iteration at most ``tol`` times the data's weighted
        variance in feature space (Σ wᵢ k(xᵢ, xᵢ)/W − wᵀKw/W²; for the linear kernel that is n_features times
        KMeans's scale, the mean variance per feature). An iteration that leaves the labels as they were also
        ends the fit.
    solver : {"auto", "exact", "nystrom"}, default="auto"
        ``"exact"``: the iterations on the kernel itself. ``"nystrom"``: on rank-``n_components`` Nyström
        features of randomly pivoted Cholesky landmarks (approximate; the iterations then cost O(n·r·k)).
        ``"auto"``: exact, unless the library's cost model (fastkpca.solvers.choice) predicts it longer than
        ten minutes or it does not fit the memory limit; ``solver_info_["choice"]`` records the prediction.
    n_components : int, default=None
        Landmarks of ``solver="nystrom"`` (None: 200, or every sample if fewer).
    memory_limit : int or str, default=None
        Bytes the fit may use beyond X, or a size such as ``"1GB"`` (None: 80% of the available memory); the
        kernel is kept where it fits and recomputed where not. With a dask array X: the bytes of kernel tiles
        each worker may keep.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation and the Nyström landmarks.
    n_jobs : int, default=None
        Threads (see fastkpca.gram).
    verbose : int, default=0
        1: print each stage to stderr; 2: also every iteration.
    callback : callable, default=None
        ``callback(stage, info)``; stage ``"iteration"`` after every pass with ``iteration``, ``labels`` (the
        first running start's assignment to that pass's centroids), ``inertia`` and ``passes``.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    inertia_ : float
        Σᵢ wᵢ ‖φ(xᵢ) − μ_{labels_ᵢ}‖², the weighted kernel k-means objective of ``labels_`` against the fitted
        centroids (of the Nyström features for ``solver="nystrom"``).
    n_iter_ : int
        Iterations of the start kept.
    solver_info_ : dict
        ``solver``, ``choice`` (fastkpca.solvers.choice's prediction), ``passes`` (kernel passes of all starts
        together), ``starts``, ``start_inertias``, ``best_start``, ``empty_clusters_reseeded`` (clusters that
        fell empty and took the points farthest from their centroids), ``converged``, ``variance``, the
        operator's ``storage`` and ``kernel_bytes``, ``init_kernel_columns``, ``seconds`` per stage.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import KernelKMeans
    >>> rng = np.random.default_rng(0)
    >>> angle = rng.uniform(0, 2 * np.pi, 400)
    >>> radius = np.repeat([1.0, 3.0], 200)
    >>> X = np.c_[radius * np.cos(angle), radius * np.sin(angle)] + 0.1 * rng.standard_normal((400, 2))
    >>> labels = KernelKMeans(2, kernel="rbf", gamma=1.0, random_state=0).fit_predict(X)
    >>> bool((labels[:200] == labels[0]).all() and (labels[200:] != labels[0]).all())
    True
    """

    def __init__(self, n_clusters: int = 8, *, kernel: str | Callable[..., Any] | Any = "rbf",
                 gamma: float | None = None, degree: float = 3, coef0: float = 1, kernel_params: dict | None = None,
                 init: str | Any = "k-means++", n_init: str | int = "auto", max_iter: int = 300, tol: float = 1e-4,
                 solver: str = "auto", n_components: int | None = None, memory_limit: int | str | None = None,
                 random_state: int | np.random.RandomState | None = None, n_jobs: int | None = None,
                 verbose: int = 0, callback: Callable[[str, dict], Any] | None = None):
        self.n_clusters = n_clusters
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.solver = solver
        self.n_components = n_components
        self.memory_limit = memory_limit
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.callback = callback

    def fit(self, X, y=None, sample_weight=None):
        """Cluster X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Samples, or the (n_samples, n_samples) kernel matrix with kernel="precomputed".
        y : ignored
        sample_weight : float or array-like of shape (n_samples,), default=None
            Non-negative weights (not all zero).

        Returns
        -------
        self : KernelKMeans
        """
        v.check_params(self, _CONSTRAINTS)
        limit = v.memory_limit(self.memory_limit)
        engine = engines.select(X)
        samples, _ = engine.fit_samples(self, X, accept_sparse=("csr", "csc"))
        self._engine = samples.engine
        n, d = samples.shape
        if self.n_clusters > n:
            raise ValueError(f"n_samples={n} should be >= n_clusters={self.n_clusters}.")
        kernel = samples.bind(kernels.make(self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                                           kernel_params=self.kernel_params, n_features=d, n_jobs=self.n_jobs))
        w = v.nonnegative_weights(engine.gather(sample_weight, "sample_weight"), n)
        init = self.init if isinstance(self.init, str) else _initial_labels(self.init, n, self.n_clusters)
        n_init = self.n_init
        if n_init == "auto":
            n_init = 1 if not isinstance(init, str) else AUTO_STARTS[init]
        elif not isinstance(init, str) and n_init != 1:
            raise ValueError(f"n_init={n_init} with initial labels: one start is given, so n_init must be 1 "
                             "(or 'auto')")
        settings = kernel_kmeans_solvers.KMeansSettings(
            n_clusters=self.n_clusters, init=init, n_init=int(n_init), max_iter=self.max_iter, tol=float(self.tol),
            limit=limit, memory_limit=self.memory_limit, n_components=self.n_components,
            random_state=self.random_state, n_jobs=self.n_jobs)
        solver, choice = kernel_kmeans_solvers.make_solver(self.solver, samples, kernel, settings)
        progress = None
        if self._wants_progress():
            def progress(iteration, labels, inertia, passes):
                self._report("iteration", iteration=iteration, labels=labels, inertia=inertia, passes=passes)
        start = time.perf_counter()
        fit = solver.fit(samples, kernel, w, report=self._report, progress=progress)
        self.labels_ = fit.labels
        self.inertia_ = fit.inertia
        self.n_iter_ = fit.n_iter
        self._distances_map, self._diagonal_map = fit.distances_map, fit.diagonal_map
        self.solver_info_ = {**fit.info, "solver": solver.name, "choice": choice,
                             "seconds_total": time.perf_counter() - start}
        self._report("done", solver=solver.name, inertia=fit.inertia, iterations=fit.n_iter,
                     seconds=self.solver_info_["seconds_total"])
        return self

    def predict(self, X):
        """The nearest fitted centroid in feature space of every row of X (one cross-kernel pass against the
        training samples, or the landmarks with ``solver="nystrom"``).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Samples, or the (n_samples, n_samples_fitted) kernel with kernel="precomputed".

        Returns
        -------
        labels : ndarray (a dask array for a dask X) of shape (n_samples,)
        """
        return self._apply_fitted(getattr(self, "_distances_map", None), X, accept_sparse=("csr", "csc")).argmin(
            axis=1)

    def transform(self, X):
        """Squared feature-space distances ‖φ(x) − μ_j‖² of every row of X to every centroid.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)

        Returns
        -------
        distances : ndarray (a dask array for a dask X) of shape (n_samples, n_clusters)
        """
        check_is_fitted(self)
        if self._diagonal_map is None:
            raise ValueError("transform and score need k(x, x) of the new samples, which kernel='precomputed' does "
                             "not give (its X is K(X, X_fit)); predict works")
        distances = self._apply_fitted(self._distances_map, X, accept_sparse=("csr", "csc"))
        diagonal = self._apply_fitted(self._diagonal_map, X, accept_sparse=("csr", "csc"))
        out = distances + diagonal[:, None]
        return out.clip(min=0.0)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the weighted objective of X against the fitted centroids (scikit-learn's KMeans.score).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : ignored
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        distances = np.asarray(self.transform(X))
        w = v.nonnegative_weights(sample_weight, distances.shape[0])
        return -float(w @ distances.min(axis=1))

    def _line(self, stage: str, info: dict) -> str:
        # the printed line leaves out the labels (the callback gets them)
        return super()._line(stage, {key: value for key, value in info.items() if key != "labels"})


def _initial_labels(init, n: int, k: int) -> np.ndarray:
    """init as initial labels: integers in [0, k), one per sample."""
    labels = np.asarray(init)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"init as initial labels must have shape ({n},), got {labels.shape}")
    if labels.dtype.kind == "f" and np.isfinite(labels).all() and (labels == np.round(labels)).all():
        labels = labels.astype(np.int64)
    if labels.dtype.kind not in "iu" and not all(isinstance(x, numbers.Integral) for x in labels.tolist()):
        raise ValueError("init as initial labels must hold integers")
    labels = labels.astype(np.int64)
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"init holds labels outside [0, n_clusters={k}): from {labels.min()} to {labels.max()}")
    return labels
