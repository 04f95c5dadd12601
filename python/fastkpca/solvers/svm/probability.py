"""Probabilities from a support vector classifier (``probability=True``), as LIBSVM computes them:

- for every class pair, decision values on held-out samples from a 5-fold cross-validation of the pair's binary
  problem (each fold refitted on the other four, over the same kernel columns);
- Platt's sigmoid P(y = +1 | f) = 1 / (1 + exp(A f + B)) fitted to them by the Newton method of Lin, Lin &
  Weng (2007, "A note on Platt's probabilistic outputs for support vector machines"): regularised targets
  (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2), a Hessian kept positive definite by σ = 1e-12, backtracking until the
  Armijo decrease, stopping at gradients below 1e-5;
- the pairwise probabilities r_ij coupled into class probabilities by the second method of Wu, Lin & Weng
  (2004, "Probability estimates for multi-class classification by pairwise coupling"): min pᵀQp over the
  simplex, Q_tt = Σ_{j≠t} r_jt², Q_tj = -r_jt r_tj, by its fixed-point iteration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _native, _threads
from .dual import solve
from .formulation import Formulation
from .settings import DualSettings

if TYPE_CHECKING:
    from .fitted import ColumnSources
    from .plan import SvmColumns

__all__ = ["FOLDS", "seed_source", "cross_validated_decisions", "sigmoid_fit", "sigmoid_predict", "couple",
           "class_probabilities"]

FOLDS = 5
#: Pairwise probabilities are kept within [MIN_PROBABILITY, 1 - MIN_PROBABILITY] before coupling.
MIN_PROBABILITY = 1e-7


def decision_values(columns: SvmColumns, targets: np.ndarray, support: np.ndarray, coef: np.ndarray, rho: float,
                    threads: int = 0) -> np.ndarray:
    """Σ_s coef_s k(x_t, x_s) - rho for target rows t (indices into ``columns``), by one fused product."""
    out = np.empty(targets.shape[0])
    if support.size:
        work = _threads.kernel_seconds(float(targets.shape[0]) * support.shape[0], int(columns.features))
        _native.core.svm_kernel_product(columns, np.ascontiguousarray(targets, dtype=np.int64),
                                        np.ascontiguousarray(support, dtype=np.int64),
                                        np.ascontiguousarray(coef, dtype=np.float64), out,
                                        _threads.pass_threads(threads, work))
    else:
        out[:] = 0.0
    return out - rho


def seed_source(random_state: Any) -> Callable[[], int]:
    """A function drawing the pairs' seeds from ``random_state`` (an estimator's): an int seeds a PCG64 generator
    (microseconds, where a RandomState's seeding takes 0.1 ms, a tenth of a small fit), a RandomState or None
    (NumPy's global one) is drawn from, so that fits that share one differ as scikit-learn's do."""
    import numbers

    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        generator = np.random.default_rng(int(random_state))
        return lambda: int(generator.integers(np.iinfo(np.int32).max))
    from ... import _validation as v

    state = v.check_random_state(random_state)
    return lambda: int(state.randint(np.iinfo(np.int32).max))


def cross_validated_decisions(sources: ColumnSources, formulation: Formulation, samples: np.ndarray, y: np.ndarray,
                              upper: np.ndarray, settings: DualSettings, rng: np.random.Generator,
                              memory_limit: int) -> np.ndarray:
    """Held-out decision values of a binary problem from a 5-fold cross-validation (LIBSVM's folds: one random
    permutation cut in five), each fold's problem whole or batched as its size calls for within the cache
    ``settings`` planned (on the columns of ``sources``, fitted.ColumnSources). A fold whose training rows are of
    one class predicts ±1 (0 with none)."""
    n = samples.shape[0]
    perm = rng.permutation(n)
    out = np.empty(n)
    plans: dict = {}  # the choice of whole or batched by the size of a fold's problem (sizes differ by one at most)
    for f in range(FOLDS):
        begin, end = f * n // FOLDS, (f + 1) * n // FOLDS
        held = perm[begin:end]
        train = np.sort(np.concatenate((perm[:begin], perm[end:])))
        positive, negative = np.count_nonzero(y[train] > 0), np.count_nonzero(y[train] < 0)
        if positive == 0 or negative == 0:
            out[held] = 0.0 if positive == negative else (1.0 if positive else -1.0)
            continue
        if train.size not in plans:
            plans[train.size] = sources.choice(settings, train.size, formulation.variables(train.size), memory_limit)
        made = plans[train.size]
        columns = sources.columns(made)
        solution = solve(columns, formulation, samples[train], settings, y=y[train], upper=upper[train], choice=made)
        sv = solution.coef != 0
        out[held] = decision_values(columns, samples[held], samples[train][sv], solution.coef[sv], solution.rho,
                                    settings.threads)
    return out


def sigmoid_fit(decisions: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """(A, B) of P(+1 | f) = 1 / (1 + exp(A f + B)) (see the module's documentation), by the core's Newton iteration
    (cpp/include/fastkpca/svm/probability.hpp)."""
    return _native.core.svm_platt(np.ascontiguousarray(decisions, dtype=np.float64),
                                  np.ascontiguousarray(positive, dtype=np.uint8))


def sigmoid_predict(decisions: np.ndarray, A: float, B: float) -> np.ndarray:
    """P(+1 | f) = 1 / (1 + exp(A f + B)), computed without overflow."""
    z = np.asarray(decisions, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1 + e), 1 / (1 + e))


def couple(r: np.ndarray) -> np.ndarray:
    """Class probabilities (n, k) from pairwise ones r (n, k, k), r_ij = P(i | i or j), by Wu, Lin & Weng's second
    method, iterated per sample until max_t |(Qp)_t - pᵀQp| < 0.005/k (at most max(100, k) sweeps): LIBSVM's
    iteration, in the core (cpp/include/fastkpca/svm/coupling.hpp)."""
    return _native.core.svm_couple(np.ascontiguousarray(r, dtype=np.float64))


def pairwise_probabilities(decisions: np.ndarray, prob_a: np.ndarray, prob_b: np.ndarray, n_classes: int) -> np.ndarray:
    """r (n, k, k) from every pair's decision values and sigmoid, clipped to [1e-7, 1 - 1e-7]."""
    n = decisions.shape[0]
    r = np.zeros((n, n_classes, n_classes))
    p = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            rij = np.clip(sigmoid_predict(decisions[:, p], prob_a[p], prob_b[p]), MIN_PROBABILITY,
                          1 - MIN_PROBABILITY)
            r[:, i, j], r[:, j, i] = rij, 1 - rij
            p += 1
    return r


def class_probabilities(decisions: np.ndarray, prob_a: np.ndarray, prob_b: np.ndarray, n_classes: int) -> np.ndarray:
    """A fitted classifier's ``predict_proba`` from its pairs' decision values."""
    return couple(pairwise_probabilities(decisions, prob_a, prob_b, n_classes))
