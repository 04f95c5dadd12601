"""Lanczos's tridiagonal matrices from preconditioned conjugate gradients' scalars, and stochastic Lanczos
quadrature (SLQ) from them: GPyTorch's modified batched CG (Gardner et al. 2018) on a CPU, with the CG of
cg.py (``pcg(..., record=True)`` keeps each column's scalars).

PCG on K̂x = b with preconditioner P is the Lanczos process on Â = P^-½ K̂ P^-½ started at P^-½ r₀, written
with other variables: with CG's step lengths a_j and direction ratios b_j = (r_{j+1}ᵀz_{j+1})/(r_jᵀz_j),
Lanczos's tridiagonal T has

    T_00 = 1/a_0,   T_jj = 1/a_j + b_{j-1}/a_{j-1},   T_{j,j+1} = √b_j / a_j

(Saad, "Iterative Methods for Sparse Linear Systems", §6.7.3). For a start x₀ = 0 and b = z,
‖P^-½ z‖² e₁ᵀ log(T) e₁ is the Gauss quadrature of (P^-½z)ᵀ log(Â) (P^-½z); with z ~ N(0, P), P^-½z is
standard normal and its mean over probes estimates tr log Â = log det K̂ − log det P (Ubaru, Chen and Saad 2017).

Every column runs its own CG (its own scalars) and leaves the block when ‖b − K̂x‖ ≤ tol‖b‖ by the
recurrence's residual; one product by K̂ per iteration serves all the columns still running. A column that
converged at iteration m has m steps and m − 1 ratios (its last ratio is never formed; T needs only m − 1).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["quadrature_log"]


def quadrature_log(steps: ArrayLike, ratios: ArrayLike) -> float:
    """e₁ᵀ log(T) e₁ for Lanczos's T from one column's CG step lengths and ratios (module documentation): the
    Gauss quadrature nodes are T's eigenvalues, the weights the squared first entries of its eigenvectors."""
    from scipy.linalg import eigh_tridiagonal

    a = np.asarray(steps, dtype=np.float64)
    b = np.asarray(ratios, dtype=np.float64)[:max(a.size - 1, 0)]  # b_0 … b_{m-2}
    if a.size == 0:
        return 0.0
    diagonal = 1.0 / a
    diagonal[1:] += b / a[:-1]
    off = np.sqrt(b) / a[:-1]
    nodes, vectors = eigh_tridiagonal(diagonal, off)
    return float(np.sum(vectors[0] ** 2 * np.log(np.maximum(nodes, np.finfo(np.float64).tiny))))
