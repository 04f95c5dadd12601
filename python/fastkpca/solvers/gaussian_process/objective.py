"""What the hyperparameters' optimiser minimises: the negative log marginal likelihood as the solver answers it,
or, where the solver's value and gradient are separate estimates, a value integrated from the gradient.

The iterative solver's value (stochastic Lanczos quadrature of log det K̂) and its gradient (Hutchinson's
estimates of the traces) are each smooth in θ with the probes held, but the gradient is not the value's
derivative: for one set of probes, d/dθ zᵀ log(M(θ)) z ≠ zᵀ M⁻¹ (dM/dθ) z, equal only in expectation. On the
hard data of bench/gaussian_process.py (500 samples, rank 64, 16 probes, tests/test_gaussian_process_cg.py) the
value's slope along a direction was 0.8 nats per unit of log θ off the gradient's, everywhere along it: near the
optimum, where the slope is of that size, L-BFGS-B's line search asks for a decrease the value does not show
and ends ABNORMAL, a slope away from the optimum the gradient points to.

Integrated, the optimiser sees one function. At each call after the first, from the point evaluated before
nearest to θ (the anchor a, with the value f(a) given there and gradient g(a)),

    f(θ) = f(a) + ½ (g(a) + g(θ))ᵀ (θ − a)            (the trapezoid rule)       where ‖θ − a‖ ≤ LONG_STEP,
    f(θ) = f(a) + v(θ) − v(a)                          (the solver's values v)     beyond it,

f at the first call the solver's value there. A line search's trial points lie on one line through its
iterate, each nearest to an earlier point of that line, so along it f is the integral of the gradient's
component to the trapezoid rule's error, and the search ends where the gradient's estimate says the optimum
is. A long step is far from where the two estimates' disagreement matters (its slope against the likelihood's
changes there), and the trapezoid rule's error grows as its length cubed: on the hard data it put a trial point
2 nats per sample above the value there, and the points after it, integrated from it, above the iterate they
returned to, where L-BFGS-B then stopped. The values depend on the path (the estimated gradient field is not
exactly conservative), so they only compare points of one run: the optimum's value, and the value that
compares restarts, is the solver's own estimate there (:meth:`Objective.optimum_value`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["LONG_STEP", "Objective", "restart_thetas"]

#: The longest step (Euclidean, in log-hyperparameters) over which the value is integrated from the
#: gradient; beyond it the solver's values are differenced.
LONG_STEP = 1.0


class Objective:
    """``func(theta, eval_gradient)`` (the estimator's negative log marginal likelihood, returning the value or
    (value, gradient)) as the optimiser should see it: itself where ``integrate`` is false, the trapezoid rule
    on its gradient where it is true (the module's documentation)."""

    def __init__(self, func: Callable[..., Any], integrate: bool) -> None:
        self.func, self.integrate = func, integrate
        #: The optimiser's inverse Hessian at the optimum it found, as a function of a vector, where it has one
        #: (the estimator's L-BFGS-B sets it; the iterative solver's settling steps with it).
        self.inverse_hessian: Callable[[np.ndarray], np.ndarray] | None = None
        self._points: list[tuple[np.ndarray, float, float, np.ndarray]] = []  # (θ, value given, v(θ), gradient)
        self._estimates: dict[bytes, float] = {}

    def __call__(self, theta: ArrayLike, eval_gradient: bool = True) -> float | tuple[float, np.ndarray]:
        theta = np.array(theta, dtype=np.float64)
        if not eval_gradient:
            return self.estimate(theta)
        value, gradient = self.func(theta, True)
        gradient = np.asarray(gradient, dtype=np.float64)
        self._estimates[theta.tobytes()] = float(value)
        if not self.integrate or not np.isfinite(value):
            return value, gradient
        given = float(value)
        if self._points:
            distances = [float(np.linalg.norm(theta - point[0])) for point in self._points]
            nearest = int(np.argmin(distances))
            anchor, anchor_given, anchor_value, anchor_gradient = self._points[nearest]
            if distances[nearest] <= LONG_STEP:
                given = anchor_given + 0.5 * float((anchor_gradient + gradient) @ (theta - anchor))
            else:
                given = anchor_given + float(value) - anchor_value
        self._points.append((theta, given, float(value), gradient))
        return given, gradient

    def optimum_value(self, theta: ArrayLike, value: float) -> float:
        """The value of the optimum ``theta`` the optimiser reported as ``value``: that one where it is the solver's
        own, else the solver's estimate there."""
        return self.estimate(theta) if self.integrate else value

    def estimate(self, theta: ArrayLike) -> float:
        """The solver's own value at ``theta`` (evaluated again where this run has not)."""
        theta = np.array(theta, dtype=np.float64)
        key = theta.tobytes()
        if key not in self._estimates:
            self._estimates[key] = float(self.func(theta, False))
        return self._estimates[key]


def restart_thetas(bounds: np.ndarray, restarts: int, rng: Any) -> list[np.ndarray]:
    """The optimiser's further starts (``n_restarts_optimizer``): uniform within the (log) bounds, drawn from
    ``rng``; scikit-learn's ValueError where a bound is infinite."""
    if restarts <= 0:
        return []
    if not np.isfinite(bounds).all():
        raise ValueError("Multiple optimizer restarts (n_restarts_optimizer>0) requires that all bounds are finite.")
    return [rng.uniform(bounds[:, 0], bounds[:, 1]) for _ in range(restarts)]
