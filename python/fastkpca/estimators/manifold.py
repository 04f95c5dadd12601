"""Classical scaling (classical multidimensional scaling, principal coordinates analysis): the dual of
PCA on distances. For Euclidean distances its embedding equals the PCA scores of the centered data."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .. import _native, _threads
from .. import _validation as v
from .._sklearn_compat import validate_data
from ..exceptions import NonEuclideanWarning
from ..kernels import double_center_distances, gram
from ..operators import from_matrix
from ..solvers.krylov import lanczos
from ..solvers.krylov.eigenvalues import sign_flip
from ._base import parameter_defaults

__all__ = ["ClassicalMDS", "classical_mds"]

#: Negative eigenvalues of B beyond this fraction of the largest one mean D is not Euclidean.
NEGATIVE_EIGENVALUE_RATIO = 1e-6


def _top_and_bottom(B, n_components, random_state, n_jobs, euclidean):
    """(top eigenvalues, their vectors, smallest eigenvalue) of the symmetric B (C-contiguous)."""
    threads = v.n_threads(n_jobs)
    op = from_matrix(B)  # reads B in place, also after the negation below
    values, vectors, _ = lanczos.solve(op, n_components, tol=None, maxiter=None, block_size=None,
                                      random_state=random_state, threads=threads)
    vectors = sign_flip(np.ascontiguousarray(vectors))
    if euclidean:  # B = Xc Xcᵀ is PSD by construction
        return values, vectors, 0.0
    # The most negative eigenvalue: the largest of -B, to a loose tolerance (it only decides a warning).
    np.negative(B, out=B)
    try:
        low, _, _ = lanczos.solve(op, 1, tol=1e-4, maxiter=200, block_size=8,
                                 random_state=random_state, threads=threads)
    finally:
        np.negative(B, out=B)
    return values, vectors, -float(low[0])


def _embed(B, n_components, random_state, n_jobs, euclidean=False):
    """(embedding, eigenvalues, smallest eigenvalue, trace) from B = -½ H D² H, warning if D is not
    Euclidean."""
    n = B.shape[0]
    if not 1 <= n_components <= n:
        raise ValueError(f"n_components must be between 1 and the number of samples ({n}), got {n_components}")
    trace = float(np.trace(B, dtype=np.float64))
    values, vectors, smallest = _top_and_bottom(B, n_components, random_state, n_jobs, euclidean)
    top = max(float(values[0]), 0.0)
    if smallest < -NEGATIVE_EIGENVALUE_RATIO * top:
        warnings.warn(
            f"The dissimilarities are not Euclidean: the doubly centered matrix has a significant negative "
            f"eigenvalue ({smallest:.3g}, {-smallest / top if top > 0 else float('inf'):.2g} of the largest). "
            "Coordinates use the positive part only.",
            NonEuclideanWarning,
            stacklevel=3,
        )
    values = np.where(values > 0, values, 0.0)
    return vectors * np.sqrt(values), values, smallest, trace


def classical_mds(D: ArrayLike, n_components: int = 2, *, squared: bool = False,
                  random_state: int | np.random.RandomState | None = None,
                  n_jobs: int | None = None) -> np.ndarray:
    """Classical scaling of a distance matrix: the top principal coordinates.

    Parameters
    ----------
    D : array-like of shape (N, N)
        Symmetric distances (``squared=True``: squared distances). Not modified.
    n_components : int, default=2
        Number of coordinates.
    squared : bool, default=False
        Whether D holds squared distances.
    random_state : int, RandomState or None, default=None
        Seed of the eigensolver's random start.
    n_jobs : int, default=None
        Threads.

    Returns
    -------
    embedding : ndarray of shape (N, n_components)
        ``U Λ^½`` for the top eigenpairs of ``B = -½ H D² H``; equal, up to sign, to the PCA scores of the
        centered data when D holds Euclidean distances between its rows.

    Warns
    -----
    UserWarning
        When B has a significant negative eigenvalue: D is not Euclidean.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> X = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    >>> D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    >>> fastkpca.classical_mds(D, 2, random_state=0).shape
    (3, 2)
    """
    n_components = v.check_int(n_components, "n_components", minimum=1)
    B = double_center_distances(np.asarray(D), squared=squared, copy=True, n_jobs=n_jobs)
    _check_symmetric(B, "D", n_jobs)
    return _embed(B, n_components, random_state, n_jobs)[0]


def _check_symmetric(B, name, n_jobs):
    _, max_abs, asym = _native.core.scan_square(B, True, _threads.array_threads(v.n_threads(n_jobs), B.size))
    if asym > 1e-8 * max(max_abs, 1e-300):
        raise ValueError(f"{name} is not symmetric (its doubly centered matrix has max |B - B.T| = {asym:.3g}); "
                         "distances must be symmetric")


@parameter_defaults
class ClassicalMDS(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Classical multidimensional scaling (Torgerson–Gower principal coordinates).

    Parameters
    ----------
    n_components : int, default=2
        Number of coordinates.
    dissimilarity : {"euclidean", "precomputed"}, default="euclidean"
        ``"euclidean"``: X holds samples and the Euclidean distances between them are used;
        ``"precomputed"``: X is a symmetric distance matrix.
    random_state : int, RandomState or None, default=None
    n_jobs : int, default=None

    Attributes
    ----------
    embedding_ : ndarray of shape (n_samples, n_components)
    eigenvalues_ : ndarray of shape (n_components,)
        Top eigenvalues of ``B = -½ H D² H`` (negative ones clipped to 0).
    explained_variance_ : ndarray of shape (n_components,)
        ``eigenvalues_ / (n_samples - 1)``: for Euclidean distances, the variances PCA reports.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``eigenvalues_ / trace(B)``.
    smallest_eigenvalue_ : float
        The most negative eigenvalue of B (about 0 for Euclidean distances).

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import ClassicalMDS
    >>> X = np.random.default_rng(0).standard_normal((50, 3))
    >>> ClassicalMDS(n_components=2, random_state=0).fit_transform(X).shape
    (50, 2)
    """

    def __init__(self, n_components: int = 2, *, dissimilarity: str = "euclidean",
                 random_state: int | np.random.RandomState | None = None, n_jobs: int | None = None):
        self.n_components = n_components
        self.dissimilarity = dissimilarity
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y=None):
        """Compute the embedding of X (samples, or distances when dissimilarity="precomputed").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Samples, or the distance matrix when ``dissimilarity="precomputed"``.
        y : None
            Ignored.

        Returns
        -------
        self : ClassicalMDS
            The fitted estimator.
        """
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Compute and return the embedding.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Samples, or the distance matrix when ``dissimilarity="precomputed"``.
        y : None
            Ignored.

        Returns
        -------
        embedding : ndarray of shape (n_samples, n_components)
            The coordinates, ``embedding_``.
        """
        if self.dissimilarity not in ("euclidean", "precomputed"):
            raise ValueError(f"dissimilarity must be 'euclidean' or 'precomputed', got {self.dissimilarity!r}")
        n_components = v.check_int(self.n_components, "n_components", minimum=1)
        X = validate_data(self, X, dtype=[np.float64, np.float32])
        if self.dissimilarity == "precomputed":
            v.check_square(X, "X (the distance matrix)")
            B = double_center_distances(X, copy=True, n_jobs=self.n_jobs)
            _check_symmetric(B, "X", self.n_jobs)
        else:
            # Squared distances are the linear kernel's double-centering dual: -½ H D² H = Xc Xcᵀ.
            B = gram(X - X.mean(axis=0), kernel="linear", n_jobs=self.n_jobs)
        self.embedding_, self.eigenvalues_, self.smallest_eigenvalue_, trace = _embed(
            np.ascontiguousarray(B), n_components, self.random_state, self.n_jobs,
            euclidean=self.dissimilarity == "euclidean")
        n = X.shape[0]
        self.explained_variance_ = self.eigenvalues_ / max(n - 1, 1)
        self.explained_variance_ratio_ = self.eigenvalues_ / trace if trace > 0 else np.zeros_like(self.eigenvalues_)
        self._n_features_out = self.embedding_.shape[1]
        return self.embedding_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.dissimilarity == "precomputed"
        return tags
