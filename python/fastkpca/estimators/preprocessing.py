"""KernelCenterer: scikit-learn's estimator, centering on fastkpca's native core."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from .. import _validation as v
from .._sklearn_compat import check_is_fitted, validate_data
from ..kernels import KernelCentering
from ._base import parameter_defaults

__all__ = ["KernelCenterer"]


@parameter_defaults
class KernelCenterer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Center an arbitrary kernel matrix K: the API of sklearn.preprocessing.KernelCenterer.

    Centering K is centering the (implicit) feature vectors φ(x) of the training samples: fit learns the
    column means of the training kernel, transform centers a training or out-of-sample kernel against
    them, in place on a (copied by default) C-contiguous array, with OpenMP threads.

    Attributes
    ----------
    K_fit_rows_ : ndarray of shape (n_samples,)
        Column means of the training kernel.
    K_fit_all_ : float
        Mean of the training kernel.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the features seen during fit, when X has feature names that are all strings.
        Only when fitted on a DataFrame with string column names.

    Examples
    --------
    >>> import numpy as np
    >>> from fastkpca import KernelCenterer, gram
    >>> X = np.array([[1.0, -2.0, 2.0], [-2.0, 1.0, 3.0], [4.0, 1.0, -2.0]])
    >>> K = gram(X)
    >>> KernelCenterer().fit_transform(K).round(6)
    array([[  5.,   0.,  -5.],
           [  0.,  14., -14.],
           [ -5., -14.,  19.]])
    """

    @classmethod
    def _from_means(cls, column_means, grand_mean) -> KernelCenterer:
        """A centerer fitted to a kernel matrix with these column means and grand mean (what KernelPCA's
        ``_centerer`` is), without the matrix; private, as scikit-learn's class has no such constructor."""
        centerer = cls()
        centerer.K_fit_rows_ = np.asarray(column_means)
        centerer.K_fit_all_ = grand_mean
        centerer.n_features_in_ = centerer.K_fit_rows_.shape[0]
        return centerer

    def fit(self, K, y=None):
        """Learn the column means and the grand mean of the training kernel.

        Parameters
        ----------
        K : array-like of shape (n_samples, n_samples)
            The training kernel matrix.
        y : None
            Ignored.

        Returns
        -------
        self : KernelCenterer
            The fitted centerer.
        """
        K = validate_data(self, K, dtype=[np.float64, np.float32])
        if K.shape[0] != K.shape[1]:
            raise ValueError(f"Kernel matrix must be a square matrix. Input is a {K.shape[0]}x{K.shape[1]} matrix.")
        n = K.shape[0]
        self.K_fit_rows_ = np.sum(K, axis=0) / n
        self.K_fit_all_ = self.K_fit_rows_.sum() / n
        return self

    def transform(self, K, copy=True):
        """Center a kernel K (n_new, n_samples) between new samples and the training samples.

        ``K' = K - 1 K_fit_rows_ᵀ - rowmean(K) 1ᵀ + K_fit_all_``.

        Parameters
        ----------
        K : array-like of shape (n_new, n_samples)
            Kernel between new samples (rows) and the training samples (columns).
        copy : bool, default=True
            With ``copy=False`` a C-contiguous, writeable float K is centered in place.

        Returns
        -------
        K_new : ndarray of shape (n_new, n_samples)
            The centered kernel.
        """
        check_is_fitted(self)
        K = validate_data(self, K, copy=copy, dtype=[np.float64, np.float32], reset=False)
        if not (K.flags.c_contiguous and K.flags.writeable and K.flags.aligned):
            K = np.array(K, order="C")
        return KernelCentering(self.K_fit_rows_, self.K_fit_all_).center(K, v.n_threads(None))

    @property
    def _n_features_out(self):
        return self.n_features_in_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"pairwise": True}
