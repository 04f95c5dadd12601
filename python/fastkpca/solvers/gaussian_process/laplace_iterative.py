"""The Laplace approximation by products with the kernel only (``solver="cg"``): no n × n array.

At every θ a randomly pivoted Cholesky factor of the kernel, K ≈ K̃ = F Fᵀ + D (preconditioner.py: rank r, D
the residual diagonal, its pivots drawn at the first evaluation and held; by default r stops where
¼ tr(K − F Fᵀ) ≤ 1e-3, newton_cg.sufficient_rank), gives for each Newton step the preconditioner of
B = I + S K S (S = W^½)

    P = (S F)(S F)ᵀ + diag(1 + W D) = I + S K̃ S,

applied by Woodbury. Each Newton step a = (I + W K)⁻¹ b, f = K a is a correction S x from the current
iterate (a, K a), with g its gradient and B x = S⁻¹g solved by CG preconditioned with P (newton_cg.py: one
product per CG iteration, K a from those products; one or two products a step where K̃ explains K; B x = S K g,
a product more, where S⁻¹g is badly scaled), to ``newton_tol`` times ‖g‖. An evaluation's first step starts
from the last mode's a (one product for its K a: a θ nearby has its mode nearby), a fit's first from zero with
the tolerance squared. laplace.settled_mode runs the steps, to a step of 1e-5·max|f| within an evaluation and
the exact solver's 1e-9 for the fitted mode; it stops without the last step where :meth:`predicted_move`
bounds that step's move below the tolerance. At the mode:

    log det B ≈ log det P + (1/p) Σ_i (z_iᵀP⁻¹z_i) e₁ᵀ log(T_i) e₁          (SLQ; z_i = P^½ ξ_i, ξ_i fixed signs)
    tr(R C_j) ≈ (1/p) Σ_i (S P⁻¹z_i)ᵀ C_j (S B⁻¹z_i)                        (Hutchinson, E[z zᵀ] = P)
    diag B⁻¹ ≈ diag P⁻¹ + (1/p) Σ_i (B⁻¹z_i − P⁻¹z_i) ∘ P⁻¹z_i              (P⁻¹ as its control variate)

from one block CG run on the p probes, and u = (I − R K) s₂ = (I + W K)⁻¹ s₂ (laplace.py) as a Newton step
is. The gradient is tr(Ω C_j) with Ω = ½(A Bᵀ + B Aᵀ), A = [a/2, u, S B⁻¹Z], B = [a, y − π, −S P⁻¹Z / (2p)]:
one pass over the kernel's tiles (kernels.DifferentiableKernel.gradient_traces_low_rank) forms Ω's tiles where it reads
them. Memory: the factor (n × r, twice: F and S F), the probes' CG blocks (n × p, a few), the kernel's storage within
what is left of ``memory_limit``: the plan and the preconditioner's rank rule are the regression's (memory.py).

The trace is the regression's: R = (K + W⁻¹)⁻¹ = K̂⁻¹ for the noise W⁻¹, and with ẑ = S⁻¹z (covariance
P̂ = S⁻¹ P S⁻¹ = F Fᵀ + D + W⁻¹, the regression's preconditioner for that noise) the estimate above is
(1/p) Σ (P̂⁻¹ẑ)ᵀ C_j (K̂⁻¹ẑ). So the regression's control variate (control_variate.py) applies as it is, with
P̂ on the same pivots: it cancels the part of the probes' noise that the factor explains.

The estimate is a smooth function of θ (fixed probes and pivots), and its value and gradient are separate
estimates, so the optimiser sees values integrated from the gradient (objective.py), as the regression's.
A likelihood a user asks for (refined_estimate.py, on a copy from :meth:`IterativeLaplace.with_probes`) also
reports the gradient's standard error: the gradient from each of GRADIENT_GROUPS groups of the probes alone,
each with its own estimate of diag B⁻¹ and the u it gives (a u solve and a gradient pass per group), whose
scatter over the groups, divided by √groups, is the full estimate's (the gradient is linear in the probes' terms:
the full one is the groups' mean, for groups of equal size).

Predictions: the latent mean K*ᵀ(y − π); its variance k** − (S k*)ᵀ B⁻¹ (S k*) by block CG on chunks of test
points within the memory limit.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ..krylov.cg import pcg
from ..krylov.lanczos_cg import quadrature_log
from ..dense.threads import on_one_blas_thread, solve_lower_triangular
from ..low_rank import CHUNK_ROWS
from .control_variate import control_variate_traces
from .laplace import SETTLED_TOL, LaplaceMode, mode_from, second_term
from .memory import IterativeMemory, PlannedMemory, largest
from .objective import Objective
from .refined_estimate import GRADIENT_GROUPS, batch_standard_error, probe_groups
from .subset_start import subset_start
from .newton_cg import newton_cg_step, newton_cg_update, step_gradient, step_preconditioner, sufficient_rank
from .preconditioner import NystromDiagonalPreconditioner, kernel_factor

if TYPE_CHECKING:
    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.operator import KernelOperator
    from ...operators.samples import SolverSamples

__all__ = ["LaplaceSettings", "IterativeLaplace", "laplace_memory"]

#: L-BFGS-B runs again from where its line search ended ABNORMAL at most this many times (optimiser.py).
CG_RESTARTS = 3
#: L-BFGS-B stops where two iterations in a row after the first each raise the likelihood per sample by less
#: than this (gain_stop.py: scipy's ftol test with its default asks of an iteration a gain that at a hundred
#: thousand samples costs tens of evaluations creeping along flat length scales).
CG_GAIN = 1e-6
#: The subset start goes through a cg fit on √(subset_start·n) samples where n exceeds this many times
#: subset_start (subset_start.py).
SUBSET_CHAIN = 10

#: Newton's stopping tolerance on f within an evaluation (_IterativeNewton.settled_tol).
EVALUATION_SETTLED_TOL = 1e-5

#: W below this is taken as this in the control variate's K̂ = K + W⁻¹ (its rows of K̂⁻¹ are then below
#: 1e-12 of the others: the variate's bias is that small).
_SMALLEST_W = 1e-12


@dataclass(frozen=True)
class LaplaceSettings:
    """cg's controls (GaussianProcessClassifier's parameters)."""

    probes: int = 32
    tol: float = 1e-2  # the probes' CG (log det B and the traces)
    newton_tol: float = 1e-3  # each Newton step's CG residual, relative to the step's gradient (inexact Newton)
    u_tol: float = 1e-4  # u's, relative to ‖s₂‖ (u enters the gradient's third term only)
    final_tol: float = 1e-6  # the predictive variances' solves
    rank: int | None = None
    max_iter: int = 1000


def laplace_memory(samples: SolverSamples | tuple[int, ...], settings: LaplaceSettings, memory_limit: int,
                   copies: int = 1, threads: int = 0) -> IterativeMemory:
    """The memory plan of the Laplace approximation by CG (memory.py) on ``samples`` (an engine's, or their
    shape) and ``threads`` (0: the default team): beside pcg's blocks on the probes, the probes, B⁻¹Z and P⁻¹Z (a
    Newton step's few vectors come and go before them); the factor F and S F, both float64; the control
    variate's pass."""
    return IterativeMemory(samples, memory_limit, entry_bytes=2 * 8, vectors=3, control_variate=True,
                           copies=copies, threads=threads)


def _inverse_diagonal(pre: NystromDiagonalPreconditioner) -> np.ndarray:
    """diag P⁻¹ = 1/d − Σ_k Q_ik² for Q = D⁻¹ G L_C⁻ᵀ (P = G Gᵀ + D, C = I + GᵀD⁻¹G = L_C L_Cᵀ), by blocks of
    rows: no n × r array beside G."""
    out = pre.inverse_d.copy()
    if not pre.rank:
        return out
    for begin in range(0, out.shape[0], CHUNK_ROWS):
        block = pre.F[begin:begin + CHUNK_ROWS] * pre.inverse_d[begin:begin + CHUNK_ROWS, None]
        Qt = solve_lower_triangular(pre.L, block.T.copy(), overwrite_b=True)
        out[begin:begin + CHUNK_ROWS] -= np.einsum("ij,ij->j", Qt, Qt)
    return out


class _IterativeNewton:
    """laplace.NewtonSystem by products with the kernel (the module's documentation)."""

    def __init__(self, matmat: Callable[[np.ndarray], np.ndarray], F: np.ndarray, d: np.ndarray,
                 owner: IterativeLaplace, threads: int = 0) -> None:
        self.matmat, self.F, self.d, self.owner, self.threads = matmat, F, d, owner, threads
        self.S = np.zeros(F.shape[0])
        self.pre: NystromDiagonalPreconditioner | None = None
        self.probes: tuple | None = None

    #: Newton's iteration stops when a step moves f by at most this, relative to max|f| (laplace.settled_mode):
    #: within an evaluation EVALUATION_SETTLED_TOL (the probes' estimates carry errors of 1e-4 and more; f's
    #: error enters the value at second order), for the fitted mode the exact solver's.
    settled_tol = SETTLED_TOL

    def kernel_times(self, x: np.ndarray) -> np.ndarray:
        self.owner.figures["products"] += 1
        return self.matmat(x[:, None])[:, 0]

    def b_times(self, V: np.ndarray) -> np.ndarray:
        """B V = V + S K (S V)."""
        return V + self.S[:, None] * self.matmat(self.S[:, None] * V)

    def prepare(self, W_sr: np.ndarray) -> None:
        self.S = np.asarray(W_sr, dtype=np.float64)
        self.pre = self.probes = None  # the last step's S F goes before the next is made
        self.pre = step_preconditioner(self.S, self.F, self.d, self.threads)

    def newton_update(self, W_sr: np.ndarray, b: np.ndarray, current: tuple | None) -> tuple:
        """(a, K a) with (I + W K) a = b by CG on B (newton_cg.py), from ``current`` = (a₀, K a₀), else from
        the last mode's a, else from zero (module documentation)."""
        assert self.pre is not None
        a, Ka, info = newton_cg_update(self.kernel_times, W_sr, b, current, pre=self.pre,
                                       forcing=self.owner.settings.newton_tol, guess=self.owner.last_a)
        self._record(info)
        return a, Ka

    def predicted_move(self, W_sr: np.ndarray, b: np.ndarray, current: tuple) -> float:
        """A bound on the largest move of f that the next Newton step from ``current`` = (a, K a) would make,
        without a product (laplace.settled_mode): with the step's gradient g = b − (I + W K) a, the step is
        δf = K (I + W K)⁻¹ g; with K̃ = F Fᵀ + diag(D) for K it is δf̃ = K̃ (g − S P⁻¹ S K̃ g) (P for this W,
        prepared: CG's first preconditioned step), and what K̃ misses adds about ‖E‖·‖g‖ ≤ tr(E)·‖g‖ (E =
        K − F Fᵀ, positive semi-definite, tr E = Σ D; a white noise's share of D counts whole): the bound is
        max|δf̃| + tr(E)·‖g‖."""
        assert self.pre is not None
        g = step_gradient(W_sr, b, current)
        F, d = self.F, self.d

        def approximate(v: np.ndarray) -> np.ndarray:  # K̃ v
            return F @ (F.T @ v) + d * v

        step = g - W_sr * self.pre.solve((W_sr * approximate(g))[:, None])[:, 0]
        return float(np.max(np.abs(approximate(step)), initial=0.0)) + float(d.sum()) * float(np.linalg.norm(g))

    def u_solve(self, s2: np.ndarray) -> np.ndarray:
        """u = (I + W K)⁻¹ s₂ = (I − R K) s₂ (laplace.py) by the same step from zero, to ``u_tol``·‖s₂‖."""
        assert self.pre is not None
        u, _, info = newton_cg_step(self.kernel_times, self.S, s2, None, pre=self.pre, tol=self.owner.settings.u_tol)
        self._record(info)
        return u

    def _record(self, info: dict) -> None:
        self.owner.figures["iterations"].append(info["iterations"])
        if not info["converged"]:
            self.owner.figures["unconverged_steps"] = self.owner.figures.get("unconverged_steps", 0) + 1

    def half_logdet(self) -> float:
        """½ log det B by SLQ on the fixed probes (kept for the gradient)."""
        pre = self.pre
        assert pre is not None
        Z = pre.sample(self.owner.signs)
        p = Z.shape[1]
        U, info = pcg(self.b_times, Z, precondition=pre, tol=self.owner.settings.tol,
                      maxiter=self.owner.settings.max_iter, verify=False, record=True)
        self.owner.count(info)
        per_probe = np.array([info["start_norms"][i] * quadrature_log(info["steps"][i], info["ratios"][i])
                              for i in range(p)])
        self.probes = (Z, U)
        self.owner.figures["standard_error"] = 0.5 * float(per_probe.std(ddof=1)) / math.sqrt(p)
        return 0.5 * (pre.logdet + float(per_probe.mean()))


class IterativeLaplace(PlannedMemory):
    """The binary Laplace approximation by conjugate gradients (module documentation), for one set of
    training samples and labels; after :meth:`fit_final` it keeps the mode's S and preconditioner for the
    predictions.

    Parameters
    ----------
    samples : an engine's Samples (engines/base.py)
    y : ndarray (n,)
        Labels, 0 or 1 (float64).
    settings : LaplaceSettings
    memory_limit : int
    n_jobs : int or None
    random_state : RandomState
    """

    name = "cg"
    per_sample_objective = True
    stop_gain: float | None = CG_GAIN
    abnormal_restarts = CG_RESTARTS
    #: Groups of probes whose batch means give the gradient's standard error (0: none; with_probes sets it).
    gradient_groups = 0

    def __init__(self, samples: SolverSamples, y: np.ndarray, settings: LaplaceSettings, *, memory_limit: int,
                 n_jobs: int | None = None, random_state: Any = None, copies: int = 1) -> None:
        self.samples, self.y, self.settings, self.n_jobs = samples, y, settings, n_jobs
        n = y.shape[0]
        self.memory = laplace_memory(samples, settings, memory_limit, copies, v.n_threads(n_jobs))
        self.rank = self.memory.start_rank(settings.rank, settings.probes,
                                           f"the Laplace approximation by conjugate gradients on {n} samples")
        rng = v.check_random_state(random_state)
        self.signs = rng.choice(np.array([-1.0, 1.0]), size=(n, settings.probes))
        self.seed = int(rng.randint(2**31 - 1))
        self.pivots: np.ndarray | None = None
        self.figures: dict = {"products": 0, "iterations": [], "seconds": {}}
        self.S: np.ndarray | None = None
        self.pi: np.ndarray | None = None
        self.pre: NystromDiagonalPreconditioner | None = None
        self.F: np.ndarray | None = None
        self.d: np.ndarray | None = None
        self.a: np.ndarray | None = None
        #: the last mode's a: the first Newton step's starting guess (a θ nearby has its mode nearby)
        self.last_a: np.ndarray | None = None

    @property
    def probes(self) -> int:
        """The probes held (refined_estimate.py)."""
        return self.settings.probes

    def most_probes(self, wanted: int) -> int:
        """Up to ``wanted`` probes, as many as the memory limit holds (refined_estimate.py)."""
        now = self.settings.probes
        return largest(now, max(now, wanted), lambda probes: self.memory.working_bytes(self.rank, probes)
                       <= self.memory.room)

    def with_probes(self, probes: int) -> IterativeLaplace:
        """A copy that holds ``probes`` probes: those held, then new signs drawn from a generator seeded by the
        fit's seed and the count (the same refinement gives the same value again), and that reports the
        gradient's standard error (GRADIENT_GROUPS batch means; refined_estimate.py)."""
        twin = copy.copy(self)
        twin.figures = copy.deepcopy(self.figures)
        twin.gradient_groups = GRADIENT_GROUPS
        now = self.settings.probes
        if probes > now:
            extra = np.random.RandomState([self.seed, probes]).choice(np.array([-1.0, 1.0]),
                                                                      size=(self.y.shape[0], probes - now))
            twin.signs = np.hstack([self.signs, extra])
            twin.settings = dataclasses.replace(self.settings, probes=probes)
        return twin

    def _working_bytes(self, columns: int | None = None) -> int:
        """What an evaluation holds beside the kernel (memory.py): CG on the probes, or on ``columns`` right-hand
        sides (the predictive variances' chunk)."""
        return self.memory.working_bytes(self.rank, self.settings.probes if columns is None else columns)

    def count(self, info: dict) -> None:
        self.figures["products"] += info["iterations"]
        self.figures["iterations"].append(int(info["column_iterations"].max(initial=0)))

    def _factor(self, kernel: DifferentiableKernel) -> tuple[np.ndarray, np.ndarray]:
        """(F, D) with K ≈ F Fᵀ + diag(D), on the held pivots after the first evaluation (preconditioner.py)."""
        F, d, drawn = kernel_factor(kernel, self.samples, self.rank, seed=self.seed, pivots=self.pivots)
        pivots = np.zeros(0, dtype=np.int64) if drawn is None else drawn
        if self.pivots is None or not np.array_equal(pivots, self.pivots):
            if self.settings.rank is None:  # the default rank: no more pivots than B's preconditioner needs
                pivots = pivots[:sufficient_rank(F, d)]
            self.pivots = pivots
            self.figures["pivot_draws"] = self.figures.get("pivot_draws", 0) + 1
            if F.shape[1]:  # the factor by the formula every later evaluation uses
                F, d, _ = kernel_factor(kernel, self.samples, self.rank, seed=self.seed, pivots=self.pivots)
        return np.asarray(F, dtype=np.float64), d

    def _plan(self, kernel: DifferentiableKernel, columns: int | None = None) -> Any:
        """The kernel's storage beside the solver's working memory (memory.py): the probes' by default, else that
        of CG on ``columns`` right-hand sides held beside it (the predictive variances); MemoryError where even
        matrix-free it does not fit."""
        held = 0 if columns is None else 8 * self.y.shape[0] * columns
        width = self.settings.probes if columns is None else columns
        return self.memory.kernel_plan(kernel, width, self._working_bytes(columns) + held)

    def _operator(self, kernel: DifferentiableKernel) -> AbstractContextManager[KernelOperator]:
        """The kernel operator as :meth:`_plan` holds it for the probes (a context manager)."""
        return self.samples.kernel_of(kernel).operator(self._plan(kernel), self.n_jobs)

    def _system(self, op: KernelOperator, F: np.ndarray, d: np.ndarray) -> _IterativeNewton:
        """Newton's system over the kernel operator ``op`` (held by the caller) and the factor (F, d)."""
        native, threads = op.native, op.threads
        return _IterativeNewton(lambda V: native.matmat(np.asfortranarray(V, dtype=np.float64), threads), F, d, self,
                                threads)

    @on_one_blas_thread
    def evaluate(self, kernel: DifferentiableKernel, start: tuple, max_iter: int,
                 eval_gradient: bool) -> tuple[float, np.ndarray | None, LaplaceMode]:
        """(log q(y | θ) estimated, its gradient estimated with ``eval_gradient`` else None, the mode); ``start``
        as ExactLaplace.evaluate's."""
        begin = time.perf_counter()
        self.figures["gradient_standard_error"] = None
        F, d = self._factor(kernel)
        with self._operator(kernel) as op:
            system = self._system(op, F, d)
            system.settled_tol = EVALUATION_SETTLED_TOL
            mode = mode_from(system, self.y, start, max_iter)
            self.last_a = mode.a
            if not eval_gradient:
                self._stage("evaluations", begin)
                return mode.log_marginal_likelihood, None, mode
            if system.probes is None:  # scikit-learn's rule asked for log det B at every step; the last is kept
                system.half_logdet()
            assert system.probes is not None and system.pre is not None
            Z, U = system.probes
            pre, S = system.pre, mode.W_sr
            PZ = pre.solve(Z)
            p = Z.shape[1]
            base_diagonal = _inverse_diagonal(pre)
            # the probes as one set, then (where the gradient's standard error is asked for) as groups, each alone
            sets = [slice(0, p)] + probe_groups(p, self.gradient_groups)
            parts = []
            for probes in sets:
                inverse_diagonal = base_diagonal + np.mean((U[:, probes] - PZ[:, probes]) * PZ[:, probes], axis=1)
                s2, residual = second_term(mode, inverse_diagonal, self.y)
                parts.append((probes, system.u_solve(s2)))
        # the operator's storage (the kernel's cached tiles) goes before the gradient's passes, which the plan
        # did not leave room for beside it (the system's products hold it too)
        del op, system
        pre_K = None
        if F.shape[1] and kernel.cross_gradients:
            noise = 1.0 / np.maximum(S**2, _SMALLEST_W)
            pre_K = NystromDiagonalPreconditioner(F, d + noise, self.pivots, kernel.threads)
        gradients = [self._gradient(kernel, mode, pre_K, u, residual, U[:, probes], PZ[:, probes])
                     for probes, u in parts]
        gradient = gradients[0]
        if len(gradients) > 2:  # batch means: the groups' gradients scatter as the probes' part does
            self.figures["gradient_standard_error"] = batch_standard_error(gradients[1:])
        self._stage("evaluations", begin)
        return mode.log_marginal_likelihood, gradient, mode

    def _gradient(self, kernel: DifferentiableKernel, mode: LaplaceMode, pre_K: NystromDiagonalPreconditioner | None,
                  u: np.ndarray, residual: np.ndarray, U: np.ndarray,
                  PZ: np.ndarray) -> np.ndarray:
        """tr(Ω C_j) for every θ_j (module documentation) from the probes given (B⁻¹Z = U, P⁻¹Z = PZ) and u from
        their diagonal of B⁻¹: one pass over the kernel's tiles, and the control variate's with ``pre_K``."""
        S, p = mode.W_sr, U.shape[1]
        Omega = S[:, None] * PZ  # P̂⁻¹ ẑ in the regression's terms (module documentation)
        A = np.column_stack([0.5 * mode.a, u, S[:, None] * U])
        B = np.column_stack([mode.a, residual, Omega * (-0.5 / p)])
        gradient = np.asarray(self.samples.kernel_of(kernel).gradient_traces(A, B), dtype=np.float64)
        self.figures["products"] += 1
        if pre_K is not None:
            gradient -= 0.5 * control_variate_traces(kernel, self.samples, pre_K, Omega)
        return gradient

    def start(self, theta: np.ndarray, fit_subset: Callable[..., Any], size: int,
              random_state: Any) -> tuple[np.ndarray, dict | None]:
        """θ of a fit on a subset of the samples (subset_start.py: exact on ``size`` samples, or where n is more
        than SUBSET_CHAIN times that, cg on √(size·n) samples, itself started so), where that is fewer than the
        training samples; else the kernel's θ."""
        return subset_start(theta, fit_subset, self.y.shape[0], size, random_state, chain=SUBSET_CHAIN)

    def objective(self, func: Callable[..., Any]) -> Objective:
        """The value integrated from the gradient's estimate (objective.py: the two are separate estimates, and
        L-BFGS-B's line search needs them to agree)."""
        return Objective(func, integrate=True)

    def settle(self, optimum: tuple, minimise: Callable[..., Any], func: Callable[..., Any],
               bounds: np.ndarray) -> tuple[np.ndarray, float, dict | None]:
        """The optimum as found (the fit's probes are fixed; the likelihood's standard error is reported)."""
        return optimum[0], optimum[1], None

    def _stage(self, name: str, begin: float) -> None:
        seconds = self.figures["seconds"]
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - begin

    @on_one_blas_thread
    def fit_final(self, kernel: DifferentiableKernel, start: tuple, max_iter: int) -> LaplaceMode:
        """The mode at the fitted kernel; its S, π and B's preconditioner kept for the predictions."""
        F, d = self._factor(kernel)
        with self._operator(kernel) as op:
            system = self._system(op, F, d)
            mode = mode_from(system, self.y, start, max_iter)
        self.S, self.pi, self.pre, self.F, self.d, self.a = mode.W_sr, mode.pi, system.pre, F, d, mode.a
        self.last_a = mode.a
        return mode

    def latent_mean(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """K(X_new, X)·a, a = K⁻¹f̂ from Newton's last step. At the mode a = y − π (Algorithm 3.2's form, the
        exact solver's), but CG's mode is off by its tolerance, and y − π carries that error multiplied by the
        amplitude and n (at thousands of samples and an amplitude of thousands, f̂ 1e-5 off moved K*ᵀ(y − π) by
        units, tests/test_gaussian_process_classifier.py's large amplitude), against K*ᵀa, whose error is
        f̂'s."""
        assert self.a is not None
        return np.asarray(kernel.product(X_new, self.samples.fitted(), self.a), dtype=np.float64)

    def latent_variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """k(x, x) − (S k*)ᵀ B⁻¹ (S k*) by block CG on chunks of test points within the memory limit."""
        assert self.S is not None and self.pre is not None and self.F is not None and self.d is not None
        n, n_new = self.y.shape[0], X_new.shape[0]
        out = kernel.diagonal(X_new).astype(np.float64)
        chunk = 1
        while chunk < n_new and self._working_bytes(2 * chunk) + 8 * n * 2 * chunk <= self.limit:
            chunk *= 2
        S, X = self.S, self.samples.fitted()
        while True:  # the kernel's plan counts the samples' copies too: fewer columns where they do not fit
            try:
                plan = self._plan(kernel, chunk)
                break
            except MemoryError:
                if chunk == 1:
                    raise
                chunk //= 2
        with self.samples.kernel_of(kernel).operator(plan, self.n_jobs) as op:
            system = self._system(op, self.F, self.d)
            system.S, system.pre = S, self.pre
            for begin in range(0, n_new, chunk):
                Kt = S[:, None] * np.asarray(kernel.cross(X, X_new[begin:begin + chunk]), dtype=np.float64)
                V, info = pcg(system.b_times, Kt, precondition=self.pre, tol=self.settings.final_tol,
                              maxiter=self.settings.max_iter)
                self.count(info)
                out[begin:begin + Kt.shape[1]] -= np.einsum("ij,ij->j", Kt, V)
        return out

    def fitted_attributes(self) -> dict:
        return {"W_sr_": self.S, "pi_": self.pi}

    def info(self) -> dict:
        f = self.figures
        return {"products": f["products"], "iterations": list(f["iterations"]), "probes": self.settings.probes,
                "preconditioner": {"kind": "rpcholesky+diagonal",
                                   "rank": self.rank if self.pivots is None else len(self.pivots)},
                "pivot_draws": f.get("pivot_draws", 0), "standard_error": f.get("standard_error"),
                "unconverged_newton_steps": f.get("unconverged_steps", 0),
                "stages": dict(f["seconds"])}
