"""Centering in feature space: double centering of kernel and distance matrices (in place by default), and
the centering of kernels between new samples and training samples, applied to a whole cross kernel or to
its product with a block of vectors."""

from __future__ import annotations

import functools

import numpy as np

from .. import _native, _threads
from .. import _validation as v

__all__ = ["double_center", "double_center_distances", "KernelCentering"]


def _square_work_array(K, name: str, copy: bool) -> tuple[np.ndarray, np.ndarray]:
    """(array returned to the caller, C-contiguous square view the core works on)."""
    if copy:
        arr = v.as_float_array(K, name)
        v.check_square(arr, name)
        arr = np.array(arr, order="C", copy=True)
        return arr, arr
    if not isinstance(K, np.ndarray):
        raise ValueError(
            f"{name} is a {type(K).__name__}, not a NumPy array, so it cannot be centered in place; "
            "pass copy=True to get a centered copy"
        )
    if K.dtype not in (np.float32, np.float64):
        raise ValueError(
            f"{name} has dtype {K.dtype}; in-place centering needs float32 or float64 (or pass copy=True)"
        )
    v.check_square(K, name)
    if not K.flags.writeable:
        raise ValueError(f"{name} is read-only, so it cannot be centered in place; pass copy=True")
    v.check_in_place(K, name)
    if K.flags.c_contiguous:
        return K, K
    if K.flags.f_contiguous:
        # H Kᵀ H = (H K H)ᵀ: centering the C-ordered transpose view in place centers K itself.
        return K, K.T
    raise ValueError(f"{name} is not contiguous, so it cannot be centered in place; pass copy=True")


def _center(K, name: str, what: str, alpha: float, copy: bool, n_jobs) -> np.ndarray:
    result, work = _square_work_array(K, name, copy)
    threads = v.n_threads(n_jobs)
    # The core reads K once for its row and column means before writing anything; non-finite means
    # (NaN/inf in K, or overflow) leave K untouched and are reported here.
    ok, _, _ = _native.core.double_center_inplace(work, what, alpha, _threads.array_threads(threads, work.size))
    if not ok:
        raise ValueError(f"{name} contains NaN or infinity (or its sums overflow); nothing was changed")
    return result


def double_center(K: np.ndarray, *, copy: bool = False, n_jobs: int | None = None) -> np.ndarray:
    """Doubly centered kernel matrix ``H K H`` with ``H = I - 11ᵀ/N``.

    Parameters
    ----------
    K : ndarray of shape (N, N)
        Kernel (Gram) matrix. With ``copy=False`` it must be a writable, C- or Fortran-contiguous float32 or
        float64 NumPy array; it is overwritten with the result.
    copy : bool, default=False
        Return a new array and leave ``K`` untouched (any array-like is accepted then).
    n_jobs : int, default=None
        Threads, as in :func:`fastkpca.gram`.

    Returns
    -------
    Kc : ndarray of shape (N, N)
        ``K`` itself when ``copy=False``. Exactly symmetric when ``K`` is symmetric.

    Raises
    ------
    ValueError
        ``K`` is not square, has NaN/inf, or (``copy=False``) cannot be centered in place: wrong dtype,
        read-only, not contiguous, or not a NumPy array. fastkpca never makes a silent copy here.

    Notes
    -----
    ``(HKH)_ij = K_ij - r_i - c_j + m`` (row means r, column means c, grand mean m). Two passes over K
    (one read for the means, one rewrite) and O(N) extra memory; the row and column sums are
    accumulated in the same order so a symmetric K stays symmetric bit for bit.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> K = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> fastkpca.double_center(K)
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    """
    return _center(K, "K", "kernel", 1.0, copy, n_jobs)


def double_center_distances(D: np.ndarray, *, squared: bool = False, copy: bool = False,
                            n_jobs: int | None = None) -> np.ndarray:
    """Classical scaling: ``B = -½ H D⁽²⁾ H`` from a distance matrix (PCA's dual on distances).

    For Euclidean distances between the rows of X, B equals the Gram matrix of the column-centered X, so
    its top eigenvectors scaled by the square roots of the eigenvalues are the PCA scores of X.

    Parameters
    ----------
    D : ndarray of shape (N, N)
        Distances (``squared=False``) or squared distances (``squared=True``). Same in-place rules as
        :func:`double_center`.
    squared : bool, default=False
        Whether D already holds squared distances.
    copy : bool, default=False
        Return a new array and leave ``D`` untouched.
    n_jobs : int, default=None
        Threads.

    Returns
    -------
    B : ndarray of shape (N, N)
        ``D`` itself when ``copy=False``.

    Examples
    --------
    >>> import numpy as np, fastkpca
    >>> D = np.array([[0.0, 2.0], [2.0, 0.0]])
    >>> fastkpca.double_center_distances(D, copy=True)
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    return _center(D, "D", "squared_distances" if squared else "distances", -0.5, copy, n_jobs)


def _centered_product(W: np.ndarray, ones_M: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """center(K)·M from W = K·[M, 1/N] (see KernelCentering.product_correction)."""
    k = ones_M.shape[0]
    return W[:, :k] - W[:, k:] * ones_M - shift


class KernelCentering:
    """The centering a training kernel K defines, applied to kernels between new samples and the training
    samples: feature vectors φ(x) centered by the training mean (1/N) Σ φ(x_j).

    With μ the column means of K (``column_means``, scikit-learn's ``K_fit_rows_``) and m̄ their mean
    (``grand_mean``, ``K_fit_all_``), a new row's centered kernel is K_c[i, j] = K[i, j] − r_i − μ_j + m̄,
    r_i the mean of its own row (scikit-learn's KernelCenterer.transform).
    """

    def __init__(self, column_means: np.ndarray, grand_mean: float):
        self.column_means = np.asarray(column_means, dtype=np.float64)
        self.grand_mean = float(grand_mean)

    @classmethod
    def from_row_sums(cls, sums: np.ndarray) -> KernelCentering:
        """From K·1 of a symmetric training kernel (its row sums are its column sums)."""
        n = sums.shape[0]
        return cls(sums / n, float(sums.sum()) / (float(n) * float(n)))

    def center(self, K: np.ndarray, threads: int = 0) -> np.ndarray:
        """K centered in place (a C-contiguous, writable float array) and returned."""
        _native.core.center_cross_inplace(K, self.column_means, self.grand_mean,
                                          _threads.array_threads(threads, K.size))
        return K

    def product_correction(self, M: np.ndarray):
        """(V = [M, 1/N], f) with f(K·V) = center(K)·M row by row, for products that never build K:

            center(K) M = K M − r (1ᵀM) − 1 (μᵀM) + m̄ 1 (1ᵀM),

        r = K·1/N the new rows' kernel means (V's last column gives them). f is picklable (an engine may
        ship it with its tasks)."""
        n, k = M.shape
        V = np.empty((n, k + 1))
        V[:, :k] = M
        V[:, k] = 1.0 / n
        ones_M = V[:, :k].sum(axis=0)
        shift = self.column_means @ V[:, :k] - self.grand_mean * ones_M
        return V, functools.partial(_centered_product, ones_M=ones_M, shift=shift)

