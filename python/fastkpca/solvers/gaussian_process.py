"""Exact Gaussian process regression from one Cholesky factor: the log marginal likelihood and its gradient,
and the posterior's mean, variances and covariance.

With K̂ = K + diag(a) (a: the noise ``alpha``, scalar or per sample) and targets Y (n × t, one GP per column
sharing K),

    log p(Y | θ) = Σ_k [−½ y_kᵀ α_k − Σ_i log L_ii − (n/2) log 2π],   α = K̂⁻¹ Y,  K̂ = L Lᵀ,
    ∂ log p / ∂θ_j = ½ tr((A Aᵀ − t K̂⁻¹) ∂K/∂θ_j),                   A = [α_1 … α_t],

scikit-learn's formulas (Rasmussen and Williams, eqs. 2.30 and 5.9). One n × n array holds K̂, then its factor
(LAPACK potrf, in place), then K̂⁻¹ (potri, in place over the factor), then the weights W = AAᵀ − tK̂⁻¹; the
traces tr(W ∂K/∂θ_j) come from the kernel (kernels.Kernel.gradient_traces), which reads W tile by tile and
never holds ∂K/∂θ_j. Memory: n²·8 bytes and O(n·(d + t)); flops: n³/3 for the factor, 2n³/3 for the inverse.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _validation as v
from .lapack_threads import factorisation_threads

__all__ = ["factor", "log_marginal_likelihood", "weights_in_place", "posterior_variance", "posterior_covariance"]

_LOG_2PI = math.log(2.0 * math.pi)
#: Rows per block of the in-place passes over an n × n array.
_BLOCK = 256


def factor(K: np.ndarray, noise) -> np.ndarray:
    """The lower Cholesky factor L of K + diag(noise), computed in place: K (C-contiguous, symmetric, float64,
    the caller's to overwrite) becomes Lᵀ; L, returned, is its Fortran-ordered view, zero above the diagonal
    (scipy.linalg.cholesky's lower factor). np.linalg.LinAlgError if K + diag(noise) is not positive definite."""
    from scipy.linalg import lapack

    K[np.diag_indices_from(K)] += noise
    with factorisation_threads(K.shape[0]):
        L, info = lapack.dpotrf(K.T, lower=1, clean=1, overwrite_a=1)  # K.T is Fortran-ordered: in place
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:  # pragma: no cover - an argument LAPACK refuses
        raise ValueError(f"dpotrf: illegal value in argument {-info}")
    return L


def log_marginal_likelihood(K: np.ndarray, Y: np.ndarray, noise, traces=None):
    """(log p(Y | θ), its gradient or None, α) from the kernel matrix K (overwritten, see :func:`factor`).

    ``traces(W)`` gives tr(W ∂K/∂θ_j) for every hyperparameter (the kernel's gradient_traces) for the
    symmetric weight matrix W, formed in K's memory; without it no gradient is computed. A K̂ that is not
    positive definite gives (−inf, zeros, None), as scikit-learn's likelihood does.
    """
    from scipy.linalg import lapack

    n, t = Y.shape
    try:
        L = factor(K, noise)
    except np.linalg.LinAlgError:
        return -np.inf, None, None
    alpha, info = lapack.dpotrs(L, Y, lower=1)
    # scikit-learn's order of the sums, output by output
    dims = -0.5 * np.einsum("ik,ik->k", Y, alpha)
    dims -= np.log(np.diag(L)).sum()
    dims -= n / 2 * _LOG_2PI
    value = dims.sum(axis=-1)  # a NumPy float64, as scikit-learn's (a Python float would take float32 arithmetic)
    if traces is None:
        return value, None, alpha
    _, info = lapack.dpotri(L, lower=1, overwrite_c=1)  # K̂⁻¹ in the factor's triangle
    if info != 0:  # pragma: no cover - a factor with a zero diagonal entry cannot come from potrf
        raise np.linalg.LinAlgError(f"dpotri: info {info}")
    W = weights_in_place(K, alpha)
    return value, 0.5 * np.asarray(traces(W), dtype=np.float64), alpha


def weights_in_place(K: np.ndarray, A: np.ndarray) -> np.ndarray:
    """W = A Aᵀ − t K̂⁻¹ (t = A's columns), whole and symmetric, in K's memory, where K holds K̂⁻¹ in its upper
    triangle (row-major; the lower triangle of the Fortran-ordered factor that potri wrote). Row blocks: the
    upper part of each is formed, its lower part copied from the rows above."""
    n, t = A.shape
    for i0 in range(0, n, _BLOCK):
        i1 = min(n, i0 + _BLOCK)
        rows = K[i0:i1, i0:]
        rows *= -float(t)
        rows += A[i0:i1] @ A[i0:].T
        K[i0:i1, :i0] = K[:i0, i0:i1].T
        block = K[i0:i1, i0:i1]
        lower = np.tril_indices(i1 - i0, -1)
        block[lower] = block.T[lower]
    return K


def _test_chunks(n_train: int, n_test: int, memory_limit: int) -> int:
    """Test points per chunk of the cross kernel and its triangular solve (two n_train × chunk arrays)."""
    return int(max(1, min(n_test, (memory_limit // 4) // max(1, 16 * n_train))))


def posterior_variance(kernel, X_new, X_train, L: np.ndarray, memory_limit: int) -> np.ndarray:
    """k(x, x) − v·v with v = L⁻¹ K(X_train, x) for every new point, in chunks of new points that fit a quarter
    of the memory limit (scikit-learn's formula, without its n_train × n_new array)."""
    from scipy.linalg import solve_triangular

    n_new = X_new.shape[0]
    rows = _test_chunks(L.shape[0], n_new, memory_limit)
    out = kernel.diagonal(X_new).astype(np.float64)
    for start in range(0, n_new, rows):
        part = X_new[start:start + rows]
        V = solve_triangular(L, kernel.cross(part, X_train).T, lower=True, check_finite=False)
        out[start:start + part.shape[0]] -= np.einsum("ij,ij->j", V, V)
    return out


def posterior_covariance(kernel, X_new, X_train, L: np.ndarray, memory_limit: int) -> np.ndarray:
    """K(X_new, X_new) − Vᵀ V, V = L⁻¹ K(X_train, X_new) (scikit-learn's formula), after a memory check."""
    from scipy.linalg import solve_triangular

    n_new, n_train = X_new.shape[0], L.shape[0]
    v.check_within(8 * n_new * (2 * n_train + n_new), memory_limit,
                   f"the posterior covariance of {n_new} points (a {n_train}×{n_new} solve)")
    V = solve_triangular(L, kernel.cross(X_new, X_train).T, lower=True, check_finite=False)
    return kernel.cross(X_new) - V.T @ V
