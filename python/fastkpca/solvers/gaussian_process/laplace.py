"""The Laplace approximation of binary Gaussian process classification, written once over the system that solves
with B (Rasmussen and Williams, "Gaussian Processes for Machine Learning", 2006, Algorithms 3.1, 3.2 and 5.1).

Labels y ∈ {0, 1}, a latent f ~ N(0, K) and the logistic likelihood p(y_i | f_i) = σ((2y_i − 1) f_i). With
π = σ(f), W = diag(π(1 − π)) (the likelihood's curvature), S = W^½ and B = I + S K S (eigenvalues in
[1, 1 + λ_max(K)/4]: well conditioned whatever K is), Newton's iteration for the posterior mode is

    b = W f + (y − π),   a = b − S B⁻¹ S K b,   f ← K a,

and the approximate log marginal likelihood at the mode

    log q(y | θ) = −½ aᵀf + Σ log p(y_i | f_i) − ½ log det B.

Its gradient (Algorithm 5.1), with R = S B⁻¹ S = (K + W⁻¹)⁻¹, C_j = ∂K/∂θ_j, Σ = K − K R K (the Laplace
posterior's covariance) and v = y − π:

    ∂/∂θ_j = ½ aᵀC_j a − ½ tr(R C_j) + s₂ᵀ (I − K R) C_j v,   s₂ = −½ diag(Σ) ∘ π(1 − π)(1 − 2π).

The last term is s₂ᵀ(I − KR) C_j v = uᵀ C_j v with u = (I − R K) s₂ (K and R are symmetric), and uᵀC_j v =
tr(C_j · ½(u vᵀ + v uᵀ)) since C_j is symmetric: the whole gradient is tr(Ω C_j) for one weight matrix

    Ω = ½(a aᵀ − R) + ½(u vᵀ + v uᵀ),

every θ_j from one pass over the kernel's tiles (kernels.DifferentiableKernel.gradient_traces), where scikit-learn
builds the n × n × p array of every C_j and two products with it per θ_j. The diagonal of Σ needs no product either:
S(K R K)S = (B − I)B⁻¹(B − I) = B − 2I + B⁻¹ gives W_i Σ_ii = 1 − (B⁻¹)_ii, so

    s₂_i = −½ (1 − (B⁻¹)_ii)(1 − 2π_i),

exact where W_i underflows (B⁻¹_ii = 1, s₂_i = 0, as scikit-learn's product with π(1 − π) gives).

Predictions (Algorithm 3.2): the latent mean f* = K*ᵀ(y − π) and variance k** − ‖L⁻¹ S k*‖² (B = L Lᵀ), and
the class probability ∫ σ(z) N(z | f*, var) dz by scikit-learn's approximation of σ with five error functions
(Williams and Barber 1998, appendix A), whose Gaussian integrals are closed forms.

Which system solves with B (exact: its Cholesky factor, laplace_exact.py) is the solver's; this module is the
algorithm on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["LaplaceMode", "NewtonSystem", "update_by_solve", "posterior_mode", "settled_mode", "mode_from",
           "log_likelihood_terms", "second_term", "latent_probability"]

#: Newton stops when the likelihood grows by less than this (scikit-learn's criterion).
NEWTON_TOL = 1e-10
#: settled_mode stops when a step moves no f_i by more than this, relative to max|f| (a system's
#: ``settled_tol`` replaces it).
SETTLED_TOL = 1e-9
#: ... and halves a step that lowers Newton's objective down to this fraction of it at most,
_SMALLEST_STEP = 2.0**-10
#: ... where it lowers it by more than this, relative to its size.
_PSI_ROUNDING = 1e-12

#: The approximation σ(z) ≈ ½ Σ_k c_k erf(λ_k z) + ½ Σ_k c_k (Williams and Barber 1998, appendix A; the values
#: scikit-learn uses).
_LAMBDAS = np.array([0.41, 0.4, 0.37, 0.44, 0.39])[:, np.newaxis]
_COEFS = np.array([-1854.8214151, 3516.89893646, 221.29346712, 128.12323805, -2010.49422654])[:, np.newaxis]


@dataclass
class LaplaceMode:
    """Newton's last iterate and the quantities of the step that made it (scikit-learn's temporaries: the
    gradient and the predictions use them)."""

    #: log q(y | θ) at the iterate before the last (scikit-learn's value: the last step did not raise it by
    #: NEWTON_TOL), or at the last one where max_iter stopped the iteration. A NumPy float64, as scikit-learn's:
    #: ``value - np.float32(x)`` with a Python float would be float32 arithmetic (NEP 50).
    log_marginal_likelihood: np.float64
    #: The last iterate f = K a.
    f: np.ndarray
    #: π, √W at the iterate the last step started from (at the last iterate where settled_mode settled by a
    #: predicted step), and that step's a.
    pi: np.ndarray
    W_sr: np.ndarray
    a: np.ndarray
    #: Newton steps taken.
    iterations: int


class NewtonSystem(Protocol):
    """What Newton's iteration asks of a solver (laplace_exact.py)."""

    def kernel_times(self, x: np.ndarray) -> np.ndarray:
        """K x."""

    def prepare(self, W_sr: np.ndarray) -> None:
        """Make B = I + S K S for S = diag(W_sr) the matrix :meth:`solve` and :meth:`half_logdet` answer for."""

    def newton_update(self, W_sr: np.ndarray, b: np.ndarray, current: tuple | None) -> tuple:
        """(a, K a) with a = (I + W K)⁻¹ b for the B prepared (W = W_sr²); ``current``: (a, K a) of the iterate
        the step starts from, a solver's starting guess, or None (:func:`update_by_solve` is the direct form,
        newton_cg.py the one by products)."""

    def half_logdet(self) -> float:
        """½ log det B (for the last B prepared)."""


class SolvingSystem(Protocol):
    """What :func:`update_by_solve` asks of a system: products with K and solves with B."""

    def kernel_times(self, x: np.ndarray) -> np.ndarray:
        """K x."""

    def solve(self, r: np.ndarray) -> np.ndarray:
        """B⁻¹ r (for the B prepared)."""


def log_likelihood_terms(y: np.ndarray, f: np.ndarray) -> float:
    """Σ log p(y_i | f_i) = −Σ log(1 + exp(−(2y_i − 1) f_i)), without overflow for large |f_i|."""
    return -float(np.logaddexp(0.0, -(2.0 * y - 1.0) * f).sum())


def _sigmoid(f: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(f)


def update_by_solve(system: SolvingSystem, W_sr: np.ndarray, b: np.ndarray) -> tuple:
    """(a, K a) with a = (I + W K)⁻¹ b = b − S B⁻¹ S K b (lines 6–8 of Algorithm 3.1) for a system that also
    has ``solve(r)`` = B⁻¹ r: two products and a solve with B."""
    a = b - W_sr * system.solve(W_sr * system.kernel_times(b))
    return a, system.kernel_times(a)


def _curvature(f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(π, √W) at f."""
    pi = _sigmoid(f)
    return pi, np.sqrt(pi * (1.0 - pi))


def _newton_rhs(f: np.ndarray, y: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """b = W f + (y − π) at f (W = π(1 − π), scikit-learn's product)."""
    return pi * (1.0 - pi) * f + (y - pi)


def _newton_step(system: NewtonSystem, y: np.ndarray, f: np.ndarray, current: tuple | None = None,
                 prepared: tuple | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(π, √W at f, Newton's a and f = K a from f): lines 4–8 of Algorithm 3.1, a = (I + W K)⁻¹(W f + y − π)
    (``current``: (a, f) where f = K a is known, a solver's guess); the system is left prepared for B at f
    (``prepared``: (π, √W) at f for which it already is)."""
    if prepared is None:
        pi, W_sr = _curvature(f)
        system.prepare(W_sr)
    else:
        pi, W_sr = prepared
    a, f_new = system.newton_update(W_sr, _newton_rhs(f, y, pi), current)
    return pi, W_sr, a, f_new


def posterior_mode(system: NewtonSystem, y: np.ndarray, f0: np.ndarray, max_iter: int) -> LaplaceMode:
    """scikit-learn's Newton iteration for the Laplace mode from ``f0`` (Algorithm 3.1): at most ``max_iter``
    steps, until a step raises log q(y | θ) by less than NEWTON_TOL (which also stops at the first step that
    lowers it); the value returned is the one before that step, as scikit-learn's. The system is left prepared
    for the last step's B."""
    f = np.array(f0, dtype=np.float64, copy=True)
    value = -np.inf
    pi = W_sr = a = np.zeros_like(f)
    steps = 0
    for _ in range(max_iter):
        steps += 1
        pi, W_sr, a, f = _newton_step(system, y, f, None if steps == 1 else (a, f))
        step_value = -0.5 * float(a @ f) + log_likelihood_terms(y, f) - system.half_logdet()
        if step_value - value < NEWTON_TOL:
            break
        value = step_value
    return LaplaceMode(np.float64(value), f, pi, W_sr, a, steps)


def settled_mode(system: NewtonSystem, y: np.ndarray, f0: np.ndarray | None, max_iter: int) -> LaplaceMode:
    """The Laplace mode by Newton's iteration from ``f0`` (another θ's mode; None: zero): every step after the
    first halved until it does not lower Ψ(a) = −½ aᵀK a + Σ log p(y_i | f_i) (the concave objective Newton
    climbs, f = K a; aᵀK a = aᵀf costs nothing, and a fall within Ψ's rounding is no fall), until a step moves
    no f_i by more than SETTLED_TOL·max(1, max|f|), or two steps in a row change Ψ by no more than its
    rounding. SETTLED_TOL is the system's ``settled_tol`` where it has one (an iterative system's steps are no
    finer than its solves). A system with ``predicted_move(W_sr, b, (a, K a))`` (a bound on the next step's
    largest move of f, from the preconditioner's K̃ for K: no product) also settles where that bound is below
    the tolerance, without the step that would confirm it; W and B are then the last iterate's own, as the
    iterative solver's log det B and gradient take them. The value returned is the last step's, at the a, W
    and B the gradient uses;
    log det B is asked for once, there (an estimate of its own for an iterative system). Ψ's change is no
    test: Ψ is stationary at the mode, and a step of 1e-5 changes it by about 1e-10, while log det B, first
    order in W, moves the value by more.

    An undamped step can overshoot, and did here from another θ's mode (100 steps without converging at
    L-BFGS-B's first trial θ, N = 2,000); the first step cannot be checked (Ψ at f0 needs K⁻¹f0), the others
    are. Starting from K a of the last mode instead, whose Ψ is known (GPML's Laplace inference does), took
    more steps here. The stopping rule saves scikit-learn's last two steps: Newton's quadratic convergence takes
    f from 1e-6 off the mode to 1e-11 in one step, after which scikit-learn's rule takes two more to see that
    the value has stopped moving."""
    n = y.shape[0]
    tol = getattr(system, "settled_tol", SETTLED_TOL)
    predicted_move = getattr(system, "predicted_move", None)
    f = np.zeros(n) if f0 is None else np.array(f0, dtype=np.float64, copy=True)
    a = np.zeros(n)
    objective = -np.inf  # the first step is taken whole
    flat = 0  # steps in a row that changed Ψ by no more than its rounding
    pi = W_sr = np.zeros(n)
    prepared = None  # (π, √W) at f where the system is prepared for B there (a predicted step's)
    steps = 0
    for _ in range(max_iter):
        steps += 1
        pi, W_sr, a_full, f_full = _newton_step(system, y, f, None if steps == 1 else (a, f), prepared)
        prepared = None
        step, a_new, f_new = 1.0, a_full, f_full
        new_objective = -0.5 * float(a_new @ f_new) + log_likelihood_terms(y, f_new)
        # a step is halved only where Ψ falls by more than its rounding (near the mode Ψ's gain is second order
        # in the step and below it: halving there took up to max_iter steps of 2⁻¹⁰ each)
        while new_objective < objective - _PSI_ROUNDING * max(1.0, abs(objective)) and step > _SMALLEST_STEP:
            step *= 0.5
            a_new, f_new = a + step * (a_full - a), f + step * (f_full - f)
            new_objective = -0.5 * float(a_new @ f_new) + log_likelihood_terms(y, f_new)
        moved = float(np.max(np.abs(f_full - f), initial=0.0))  # the whole step's: a halved one is no test
        flat = flat + 1 if abs(new_objective - objective) <= _PSI_ROUNDING * max(1.0, abs(objective)) else 0
        a, f, objective = a_new, f_new, new_objective
        # settled: the step is below SETTLED_TOL, or Ψ has changed by no more than its rounding twice running
        # (where K is ill conditioned, at θ far from the optimum, f's rounding stays above SETTLED_TOL: such
        # an evaluation ran to max_iter)
        limit = tol * max(1.0, float(np.max(np.abs(f), initial=0.0)))
        if moved <= limit or flat >= 2:
            break
        if predicted_move is not None:  # the next step predicted without a product: settled if it is below tol
            prepared = _curvature(f)
            system.prepare(prepared[1])
            if predicted_move(prepared[1], _newton_rhs(f, y, prepared[0]), (a, f)) <= limit:
                break
    if prepared is not None:  # B is prepared at f's W: the value, π and √W are f's
        pi, W_sr = prepared
    value = objective - system.half_logdet()
    return LaplaceMode(np.float64(value), f, pi, W_sr, a, steps)


def mode_from(system: NewtonSystem, y: np.ndarray, start: tuple, max_iter: int) -> LaplaceMode:
    """The mode by ``start``'s rule: ("f", f0) scikit-learn's iteration from f0 (:func:`posterior_mode`), or
    ("settled", f0 or None) :func:`settled_mode`."""
    kind, vector = start
    return posterior_mode(system, y, vector, max_iter) if kind == "f" else settled_mode(system, y, vector, max_iter)


def second_term(mode: LaplaceMode, inverse_diagonal: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s₂, v = y − π) of the gradient (module documentation), from the diagonal of B⁻¹."""
    pi = mode.pi
    s2 = -0.5 * (1.0 - inverse_diagonal) * (1.0 - 2.0 * pi)
    return s2, y - pi


def latent_probability(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """∫ σ(z) N(z | mean, variance) dz for every point, by the error-function approximation of σ (module
    documentation): with α = 1/(2 var), ∫ erf(λz) N(z | m, var) dz = erf(λ m √(α/(α + λ²)))."""
    from scipy.special import erf

    alpha = 1.0 / (2.0 * variance)
    integrals = 0.5 * erf(_LAMBDAS * mean * np.sqrt(alpha / (alpha + _LAMBDAS**2)))
    return (_COEFS * integrals).sum(axis=0) + 0.5 * _COEFS.sum()
