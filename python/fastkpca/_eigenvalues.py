"""Post-processing of kernel eigenvalues, with scikit-learn's rules (sklearn.utils.validation's
_check_psd_eigenvalues): a kernel matrix is positive semi-definite, so eigenvalues that come out negative
or tiny are rounding noise, unless they are too large to be, which means the kernel is not PSD."""

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
