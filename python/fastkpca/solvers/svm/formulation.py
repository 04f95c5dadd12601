"""LIBSVM's five formulations as objects: each builds its dual for the native solver and reads the solution back.

Every formulation is  min ½ αᵀQα + pᵀα  s.t.  0 <= α_t <= C_t  and equalities on α, Q_tu = y_t y_u K(x_{s(t)},
x_{s(u)}), over variables t standing for samples s(t). A formulation object says, for the samples of one problem:

- its variables (one per sample, or two per sample for the regressions: y = +1 and -1 over the same sample),
  their signs y, the linear term p, the bounds C_t (from the samples' weights) and the feasible start α;
- its equalities, which pick the core's solver: yᵀα = Δ (LIBSVM's Solver: C-SVC, one-class, ε-SVR) or one per
  sign of y (its Solver_NU: ν-SVC, ν-SVR);
- how the solution turns into the decision function ``f(x) = Σ_i coef_i k(x_i, x) - rho`` over the samples
  (scikit-learn's ``dual_coef_`` and ``intercept_ = -rho``), and what else it reports (ν-SVR's ε).

The formulations (facts from LIBSVM 3.10 as scikit-learn ships it; sample weights scale C_t, and samples of weight
<= 0 are left out before the solve):

- C-SVC: y = ±1, p = -1, C_t = C·w_t·(class weight), α = 0 at the start; coefficients y_t α_t.
- ν-SVC: p = 0, C_t = w_t, α starts with ν·Σw/2 spread over each class in order (LIBSVM's feasible start); the
  solver's r rescales the solution (coefficients y_t α_t / r, ρ / r).
- one-class: y = +1, p = 0, C_t = w_t, α starts with ν·Σw spread over the samples in order.
- ε-SVR: two variables per sample (y = +1 and -1), p = ε ∓ z_i for targets z, C_t = C·w_t; coefficients
  α_i - α*_i.
- ν-SVR: the same with p = ∓z_i and α starting at min(C·w_i, what is left of C·ν·Σw/2) for both variables,
  under the per-sign equalities; its ε is -r.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ... import _native

__all__ = ["Dual", "Formulation", "CClassification", "NuClassification", "OneClass", "EpsilonRegression",
           "NuRegression"]


@dataclass
class Dual:
    """The arrays of one dual as the core solves it (one entry per variable).

    Attributes
    ----------
    samples : ndarray of int64
        s(t): the sample (an index into the kernel columns) each variable stands for.
    sign : ndarray of int8
        y_t = ±1.
    p : ndarray of float64
        The linear term.
    upper : ndarray of float64
        C_t > 0.
    alpha : ndarray of float64
        A feasible start; the solution once solved (in place).
    """

    samples: np.ndarray
    sign: np.ndarray
    p: np.ndarray
    upper: np.ndarray
    alpha: np.ndarray


def _greedy(total: float, upper: np.ndarray) -> np.ndarray:
    """min(upper_i, what is left of `total`) in order: LIBSVM's feasible start of the ν-problems."""
    before = np.concatenate(([0.0], np.cumsum(upper)[:-1]))
    return np.clip(total - before, 0.0, upper)


class Formulation:
    """One of LIBSVM's duals (see the module's documentation); subclasses are the five formulations."""

    #: Variables per sample: two for the regressions (α_i and α*_i over one kernel column).
    variables_per_sample = 1
    #: Whether a fit needs targets (classes or values): all but the one-class formulation.
    uses_targets = True

    def variables(self, n_samples: int) -> int:
        return self.variables_per_sample * n_samples

    def kept(self, weights: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        """Which samples enter the dual: those of a positive bound (LIBSVM leaves out the others)."""
        return weights > 0

    def bounds(self, weights: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        """C_t of every sample from its weight (and, for C-SVC, its class)."""
        return weights * 1.0

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        """The dual over ``samples`` (indices into the kernel columns) with their bounds ``upper``; ``y`` the classes
        (±1) of a classification, ``targets`` the values of a regression."""
        raise NotImplementedError

    def native_solve(self) -> Callable[..., dict]:
        """The core's solve for this formulation's equalities: yᵀα = Δ (LIBSVM's Solver)."""
        return _native.core.svm_solve

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        """(coef per sample, rho) of the solved ``dual`` (``stats``: the solver's figures, completed in place)."""
        raise NotImplementedError


class _PerSign(Formulation):
    """The ν-formulations: one equality per sign of y (LIBSVM's Solver_NU), whose offset r the solution reads."""

    def __init__(self, nu: float) -> None:
        self.nu = nu

    def native_solve(self) -> Callable[..., dict]:
        return _native.core.svm_solve_nu


class _Classification(Formulation):
    """One variable per sample of a binary problem, y = ±1 its class."""

    def check(self, labels: np.ndarray, weights: np.ndarray, kept: np.ndarray, n_classes: int) -> None:
        """Refuse classes this formulation cannot fit (LIBSVM's messages); ``kept`` is :meth:`kept`."""


class CClassification(_Classification):
    """C-SVC: C and the per-class factors of C (scikit-learn's ``class_weight_``, in the order of the classes)."""

    def __init__(self, C: float, class_weight: np.ndarray) -> None:
        self.C, self.class_weight = C, class_weight

    def kept(self, weights: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        return weights * self.class_weight[labels] > 0

    def bounds(self, weights: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        return weights * self.C * self.class_weight[labels]

    def check(self, labels: np.ndarray, weights: np.ndarray, kept: np.ndarray, n_classes: int) -> None:
        if kept.any() and np.unique(labels[kept]).shape[0] < 2:
            raise ValueError("Invalid input - all samples with positive weights belong to the same class.")

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        n = samples.shape[0]
        return Dual(samples, np.ascontiguousarray(y, dtype=np.int8), -np.ones(n), upper, np.zeros(n))

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        return dual.alpha * dual.sign, float(stats["rho"])


class NuClassification(_PerSign, _Classification):
    """ν-SVC (the class weights do not enter its dual, as in LIBSVM)."""

    def feasible(self, labels: np.ndarray, weights: np.ndarray, n_classes: int) -> bool:
        """LIBSVM's check: every pair's weight sums n1, n2 (weights <= 0 included) allow ν(n1 + n2)/2 <= min."""
        counts = np.bincount(labels, weights=weights, minlength=n_classes)
        return all(self.nu * (counts[i] + counts[j]) / 2 <= min(counts[i], counts[j])
                   for i, j in itertools.combinations(range(n_classes), 2))

    def check(self, labels: np.ndarray, weights: np.ndarray, kept: np.ndarray, n_classes: int) -> None:
        if not self.feasible(labels, weights, n_classes):
            one_class_left = kept.any() and np.unique(labels[kept]).shape[0] < 2
            raise ValueError("specified nu is infeasible" + (": all samples with positive weights belong to the same "
                                                             "class" if one_class_left else ""))

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        sign = np.ascontiguousarray(y, dtype=np.int8)
        total = self.nu * upper.sum() / 2
        alpha = np.zeros(samples.shape[0])
        for cls in (1, -1):
            mask = sign == cls
            alpha[mask] = _greedy(total, upper[mask])
        return Dual(samples, sign, np.zeros(samples.shape[0]), upper, alpha)

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        r = float(stats["r"])
        if not r > 0:
            raise ValueError("specified nu is infeasible: the solver's scale r is not positive")
        stats["obj"] = float(stats["obj"]) / (r * r)
        return dual.alpha * dual.sign / r, float(stats["rho"]) / r


class OneClass(Formulation):
    """Schölkopf's one-class dual."""

    uses_targets = False

    def __init__(self, nu: float) -> None:
        self.nu = nu

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        n = samples.shape[0]
        return Dual(samples, np.ones(n, dtype=np.int8), np.zeros(n), upper, _greedy(self.nu * upper.sum(), upper))

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        return dual.alpha, float(stats["rho"])


class _Regression(Formulation):
    """Two variables per sample (α_i with y = +1, then α*_i with y = -1), bounds C·w."""

    variables_per_sample = 2

    def __init__(self, C: float) -> None:
        self.C = C

    def bounds(self, weights: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        return weights * self.C

    def _dual(self, samples: np.ndarray, upper: np.ndarray, p: np.ndarray, alpha: np.ndarray) -> Dual:
        n = samples.shape[0]
        sign = np.concatenate((np.ones(n, dtype=np.int8), -np.ones(n, dtype=np.int8)))
        return Dual(np.concatenate((samples, samples)), sign, p, np.concatenate((upper, upper)), alpha)

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        n = dual.alpha.shape[0] // 2
        return dual.alpha[:n] - dual.alpha[n:], float(stats["rho"])


class EpsilonRegression(_Regression):
    """ε-SVR: the tube's half-width ε given."""

    def __init__(self, C: float, epsilon: float) -> None:
        super().__init__(C)
        self.epsilon = epsilon

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        z = np.asarray(targets, dtype=np.float64)
        epsilon = float(self.epsilon)
        return self._dual(samples, upper, np.concatenate((epsilon - z, epsilon + z)),
                          np.zeros(2 * samples.shape[0]))


class NuRegression(_PerSign, _Regression):
    """ν-SVR: ε learned (``stats["epsilon"]``)."""

    def __init__(self, C: float, nu: float) -> None:
        _Regression.__init__(self, C)
        _PerSign.__init__(self, nu)

    def dual(self, samples: np.ndarray, upper: np.ndarray, y: np.ndarray | None = None,
             targets: np.ndarray | None = None) -> Dual:
        z = np.asarray(targets, dtype=np.float64)
        half = _greedy(self.nu * upper.sum() / 2, upper)
        return self._dual(samples, upper, np.concatenate((-z, z)), np.concatenate((half, half)))

    def solution(self, dual: Dual, stats: dict) -> tuple[np.ndarray, float]:
        stats["epsilon"] = -float(stats["r"])
        return _Regression.solution(self, dual, stats)
