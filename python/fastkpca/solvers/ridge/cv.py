"""Cross-validation of kernel ridge regression over many alphas from one factorisation per kernel.

- :func:`loo_errors`: leave-one-out errors of every alpha from one eigendecomposition K = V Λ Vᵀ: the hat
  matrix is V Λ(Λ + α)⁻¹ Vᵀ, so the LOO residuals (y − ŷ)/(1 − h_ii) cost O(N²) per alpha;
- :func:`kfold_errors_dense`: k-fold errors, each fold's training kernel a block of the one kernel,
  eigendecomposed once for all alphas;
- :func:`kfold_errors_krylov`: k-fold errors matrix-free: each fold's systems for all alphas from one
  multi-shift CG run (cg.cg_shifted) on the fold's kernel operator, held-out predictions tile by tile.

Errors are mean squared errors, weighted by ``weights`` (sample weights) when given. :func:`cross_validate`
chooses among them by the library's cost model (solvers/choice.py).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from ... import _validation as v
from ...exceptions import ConvergenceWarning
from ...operators import build, plan_for
from .. import choice
from ..krylov import cg
from ..dense.eigh import symmetric_eigh
from ..rows import as_rows

if TYPE_CHECKING:
    from ...kernels.kernel import Kernel
    from ...operators.samples import SolverSamples
    from ..rows import ArrayRows

__all__ = ["cross_validate", "loo_errors", "kfold_errors_dense", "kfold_errors_krylov", "folds"]


def mean_squared(residuals: np.ndarray, weights: np.ndarray | None) -> float:
    sq = residuals**2
    if weights is None:
        return float(sq.mean())
    return float((weights[:, None] * sq).sum() / (weights.sum() * sq.shape[1]))


def folds(n: int, k: int) -> list[np.ndarray]:
    """k contiguous folds (scikit-learn's KFold without shuffling)."""
    bounds = np.linspace(0, n, k + 1).astype(int)
    return [np.arange(bounds[f], bounds[f + 1]) for f in range(k)]


def cross_validate(samples: SolverSamples, kernel: Kernel, Y: np.ndarray, alphas: np.ndarray, cv: int | None,
                   weights: np.ndarray | None = None, *, tol: float | None = None, maxiter: int | None = None,
                   memory_limit: int, n_jobs: int | None = None) -> tuple[list[float], str, dict]:
    """(validation error of every alpha, the method, how it was chosen) for the kernel of an engine's samples
    (engines/base.py): leave-one-out (``cv=None``) from one eigendecomposition of the whole kernel matrix;
    k-fold from it or, for a native kernel, matrix-free by multi-shift CG, as the library's cost model picks
    (solvers/choice.py)."""
    n, d = samples.shape
    picked = choice.kernel_ridge_cv("auto", n=n, d=choice.evaluated_features(kernel, samples), targets=Y.shape[1],
                                    folds=cv, native=kernel.native, memory_limit=memory_limit,
                                    matrix_possible=bool(samples.holds_matrix))
    if cv is None:
        v.check_within(3 * n * n * 8, memory_limit, f"leave-one-out with three {n}×{n} matrices",
                       "use cv=k (k-fold), which runs matrix-free")
        K = samples.kernel_of(kernel).matrix(what="leave-one-out", memory_limit=memory_limit, writable=True,
                                             dtype=np.float64)
        return loo_errors(K, Y, alphas, weights), "loo-eigh", picked.as_dict()
    if picked.picked == "eigh":
        K = samples.kernel_of(kernel).matrix(what=f"cv={cv}", memory_limit=memory_limit, writable=True,
                                             dtype=np.float64)
        return kfold_errors_dense(K, Y, alphas, cv, weights), "kfold-eigh", picked.as_dict()
    from .systems import DEFAULT_MAX_ITER, DEFAULT_TOL

    errors = kfold_errors_krylov(samples, Y, kernel, alphas, cv, weights, tol=DEFAULT_TOL if tol is None else tol,
                                 maxiter=DEFAULT_MAX_ITER if maxiter is None else maxiter, memory_limit=memory_limit,
                                 n_jobs=n_jobs)
    return errors, "kfold-multishift-cg", picked.as_dict()


def loo_errors(K: np.ndarray, Y: np.ndarray, alphas: np.ndarray, weights: np.ndarray | None = None) -> list[float]:
    """Leave-one-out errors of every alpha from one eigendecomposition of K (overwritten): ŷ = H y with
    H = V Λ(Λ + α)⁻¹ Vᵀ, and the LOO residual of sample i is (y_i − ŷ_i)/(1 − H_ii)."""
    values, V = symmetric_eigh(K, overwrite_a=True)
    values = np.maximum(values, 0.0)
    projected = V.T @ Y
    squares = V * V
    errors = []
    for alpha in alphas:
        shrink = values / (values + alpha)
        fitted = V @ (shrink[:, None] * projected)
        leverage = squares @ shrink
        errors.append(mean_squared((Y - fitted) / (1 - leverage)[:, None], weights))
    return errors


def kfold_errors_dense(K: np.ndarray, Y: np.ndarray, alphas: np.ndarray, k: int,
                       weights: np.ndarray | None = None) -> list[float]:
    """k-fold errors of every alpha from the one kernel K: per fold one eigendecomposition of its training
    block."""
    n = Y.shape[0]
    residuals = np.empty((len(alphas), n, Y.shape[1]))
    for held in folds(n, k):
        train = np.setdiff1d(np.arange(n), held)
        values, V = symmetric_eigh(K[np.ix_(train, train)], overwrite_a=True)
        values = np.maximum(values, 0.0)
        projected = V.T @ Y[train]
        cross = K[np.ix_(held, train)] @ V
        for a, alpha in enumerate(alphas):
            residuals[a, held] = Y[held] - cross @ (projected / (values + alpha)[:, None])
    return [mean_squared(residuals[a], weights) for a in range(len(alphas))]


def kfold_errors_krylov(X: np.ndarray | SolverSamples | ArrayRows, Y: np.ndarray, kernel: Kernel, alphas: np.ndarray,
                        k: int, weights: np.ndarray | None = None, *, tol: float, maxiter: int, memory_limit: int,
                        n_jobs: int | None = None) -> list[float]:
    """k-fold errors matrix-free: per fold and target, one multi-shift CG run on the training rows' kernel
    operator gives β for every alpha; held-out predictions K(X_val, X_train)·β tile by tile. X: an array or
    a row source (an engine's samples), whose folds' rows are gathered here."""
    n = Y.shape[0]
    threads = v.n_threads(n_jobs)
    residuals = np.empty((len(alphas), n, Y.shape[1]))
    X = as_rows(X)
    for held in folds(n, k):
        train = np.setdiff1d(np.arange(n), held)
        Xt, Xh = kernel.check_samples(X.rows(train)), kernel.check_samples(X.rows(held))
        plan = plan_for(kernel, Xt, block_size=1, memory_limit=memory_limit,
                        other_bytes=8 * train.size * (len(alphas) + 4))
        with build(Xt, kernel, plan, n_jobs) as op:
            for j in range(Y.shape[1]):
                betas, info = cg.cg_shifted(lambda V, op=op: op.native.matmat(np.asfortranarray(V), threads),
                                            Y[train, j], alphas, tol=tol, maxiter=maxiter)
                if not info["converged"]:
                    warnings.warn(f"KernelRidgeCV: multi-shift CG stopped after {info['iterations']} products with "
                                  f"relative residual {info['residuals'].max():.2e} > tol={tol:g}",
                                  ConvergenceWarning, stacklevel=4)
                predictions = kernel.product(Xh, Xt, betas)
                residuals[:, held, j] = (Y[held, j][:, None] - predictions).T
    return [mean_squared(residuals[a], weights) for a in range(len(alphas))]
