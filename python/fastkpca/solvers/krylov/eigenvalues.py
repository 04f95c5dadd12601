"""Post-processing of eigenpairs with scikit-learn's rules: the PSD check of kernel eigenvalues
(sklearn.utils.validation's _check_psd_eigenvalues: a kernel matrix is positive semi-definite, so
eigenvalues that come out negative or tiny are rounding noise, unless they are too large to be, which
means the kernel is not PSD) and the sign convention of eigenvectors (svd_flip's)."""

from __future__ import annotations

import numpy as np

# (significant negative ratio, significant negative absolute, small positive ratio) by dtype.
_THRESHOLDS = {np.dtype(np.float32): (5e-3, 1e-6, 2e-7), np.dtype(np.float64): (1e-5, 1e-10, 1e-12)}


def check_psd_eigenvalues(lambdas: np.ndarray) -> np.ndarray:
    """Raise for significant negative eigenvalues; set other negatives and tiny positives to 0."""
    lambdas = np.array(lambdas, copy=True)
    if lambdas.size == 0:
        return lambdas
    if np.iscomplexobj(lambdas):
        lambdas = np.real(lambdas)
    neg_ratio, neg_abs, small_ratio = _THRESHOLDS.get(lambdas.dtype, _THRESHOLDS[np.dtype(np.float64)])
    max_eig = lambdas.max()
    if max_eig < 0:
        raise ValueError(
            "All eigenvalues are negative (maximum is "
            f"{max_eig:g}). Either the matrix is not PSD, or there was an issue while computing the "
            "eigendecomposition of the matrix."
        )
    min_eig = lambdas.min()
    if min_eig < -neg_ratio * max_eig and min_eig < -neg_abs:
        raise ValueError(
            "There are significant negative eigenvalues "
            f"({-min_eig / max_eig:g} of the maximum positive). Either the matrix is not PSD, or there "
            "was an issue while computing the eigendecomposition of the matrix."
        )
    lambdas[lambdas < 0] = 0
    lambdas[lambdas < small_ratio * max_eig] = 0
    return lambdas


def column_signs(vectors: np.ndarray) -> np.ndarray:
    """±1 per column: the sign of its largest-magnitude entry (scikit-learn's svd_flip convention)."""
    if vectors.size == 0:
        return np.ones(vectors.shape[1])
    rows = np.argmax(np.abs(vectors), axis=0)
    signs = np.sign(vectors[rows, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1
    return signs


def sign_flip(vectors: np.ndarray) -> np.ndarray:
    """Make each column's largest-magnitude entry positive, in place."""
    if vectors.size:
        vectors *= column_signs(vectors)
    return vectors


def finish_eigenpairs(values: np.ndarray, vectors: np.ndarray, remove_zero: bool) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's KernelPCA post-processing of eigenpairs: the PSD check, the sign convention, descending
    order, and (``remove_zero``) the components with zero eigenvalue dropped."""
    values = check_psd_eigenvalues(values)
    vectors = sign_flip(np.array(vectors, copy=True))
    order = values.argsort()[::-1]
    values, vectors = values[order], vectors[:, order]
    if remove_zero:
        keep = values > 0
        values, vectors = values[keep], vectors[:, keep]
    return values, vectors


def projection(values: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """U Λ^(-½): what maps a centered kernel row to kernel PCA scores (columns with λ = 0 map to 0).

    For a training sample this gives back U Λ^½, because (H K H) U Λ^(-½) = U Λ^½."""
    non_zeros = np.flatnonzero(values)
    M = np.zeros_like(vectors)
    M[:, non_zeros] = vectors[:, non_zeros] / np.sqrt(values[non_zeros])
    return M

