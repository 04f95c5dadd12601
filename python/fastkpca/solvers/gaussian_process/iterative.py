"""The iterative Gaussian process solver: products with the kernel only, no n × n array, past the Cholesky wall.

With K̂ = K + diag(a) (a: the noise ``alpha``), targets Y (n × s), a preconditioner P ≈ K̂ (preconditioner.py)
and p probes z_i ~ N(0, P), one preconditioned CG run on the block [Y, z_1 … z_p] (cg.pcg, keeping its
scalars: krylov/lanczos_cg.py) gives

    α = K̂⁻¹Y,  u_i = K̂⁻¹z_i,
    log det K̂ ≈ log det P + (1/p) Σ_i (z_iᵀP⁻¹z_i) e₁ᵀ log(T_i) e₁          (SLQ on P^-½ K̂ P^-½),
    quad_k = y_kᵀα_k,
    ∇_θ[w_q Σ quad + w_l log det K̂]_j ≈ −w_q Σ_k α_kᵀ∂K_jα_k + (w_l/p) Σ_i (P⁻¹z_i)ᵀ ∂K_j u_i + w_l tr(Ŵ ∂P̃_j)
                                                                           (Hutchinson: E[z zᵀ] = P),

the interface's inv_quad_logdet (interface.py; the regression's weights are (−½, −s/2)): the first two terms
are tr(W ∂K_j) for W = ½(A Bᵀ + B Aᵀ), A = [α, u], B = [−w_q α, (w_l/p)P⁻¹z], which the kernel computes
in one pass per term with W's tiles formed where they are read
(kernels.DifferentiableKernel.gradient_traces_low_rank); the last, of expectation zero, is the preconditioner's
control variate (control_variate.py): with ∂P̃ the derivative of P at its pivots it cancels most of the probes'
noise, what P explains of the trace computed exactly. An evaluation costs the CG's block products, one gradient
pass and the control variate's O(n·r²) pass over the factor; memory O(n·(p + s + r)).

The estimate is a smooth function of θ alone, so that L-BFGS-B's line searches compare values of one surrogate
instead of noisy ones. The probes' signs are drawn once per fit from ``random_state`` (common random numbers).
The preconditioner's pivots are drawn once too, by RPCholesky at the first evaluation (and at each rank the
rank search tries), and held: P at another θ is the Nyström factor on the same pivots (preconditioner.py).
RPCholesky at every θ would draw its pivots from that θ's residual diagonal, and a neighbouring θ could draw
others, moving the estimate by its own error's size; on data whose kernel keeps many eigenvalues above the
noise (bench/gaussian_process.py --hard) that stopped L-BFGS-B's line search (ABNORMAL) away from the optimum.
Every column starts from zero (no warm start: from the last evaluation's α the value at θ would depend on the
path to it), the probes' at ``tol`` and the targets' at ``target_tol`` (1e-4): yᵀα's error is ‖α* − α‖²_K̂
(CG's Galerkin condition), which at tol 1e-2 and a small noise was many nats and moved the optimum.

The estimate's optimum is off the likelihood's by the probes' error (on the hard data of
bench/gaussian_process.py, a tenth of a unit of log θ with 16 probes). After the optimiser (given values
integrated from the gradient: objective.py), ``settle`` multiplies the probes, keeping those held, and runs it
again from the optimum, until the error the optimum's move stands for is within ``theta_tol``/4: from p to k·p
probes the move has k − 1 times the variance of the new optimum's own error (settle's documentation), so each
round measures the error of the optimum it ends at. Up to SETTLE_ROUNDS rounds, SETTLE_PROBES times the first
probes and within the memory limit; a ConvergenceWarning where it stops short.

The preconditioner's rank starts at rank.DEFAULT_RANK within the memory limit and may move during the first
evaluations, as their iteration counts say pays (rank.py); the final solve fixes it.

Predictions: the mean is K(X*, X)α; the variances k** − k*ᵀK̂⁻¹k* by block CG on the test points' kernel
columns, in chunks, with the fit's preconditioner, each quadratic form taken as vᵀ(k* + r) from CG's
v ≈ K̂⁻¹k* and its true residual r (error −rᵀK̂⁻¹r, second order in r: _with_residual), and CG goes on for
the columns where that error, estimated as rᵀP⁻¹r, is still above ``final_tol`` of the variance it leaves
(_quadratic_form_solve: where the amplitude is many times the variance, a residual within final_tol alone can
leave a large part of it). A chunk of c points holds
pcg's blocks (cg.pcg_bytes) and the kernel pass's working memory (operators.pass_bytes: about 15 n-vectors
a column for wide chunks, more for narrow ones, its widths rounded up to 8), beside the preconditioner and
the kernel's storage; the chunk and the storage are planned together within the memory limit
(_prediction_plan). (A factor cached in the manner of LOVE, Pleiss et al. 2018, K̂⁻¹ ≈ P⁻¹ + U(T⁻¹ − I)Uᵀ
from block Lanczos on the pencil (K̂, P), was measured against these and not offered: its standard deviations
were off by a large part of themselves at noise 0.1 of the signal, and useless below, where k*ᵀK̂⁻¹k* nearly
cancels k**.)
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
import warnings
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ... import _validation as v
from ...exceptions import ConvergenceWarning
from ...operators.storage import pass_bytes
from .objective import Objective
from .interface import InvQuadLogdet
from .control_variate import CONTROL_VARIATE_SQUARES, control_variate_traces
from .preconditioner import NystromDiagonalPreconditioner, build_preconditioner
from .refined_estimate import GRADIENT_GROUPS, batch_standard_error, probe_groups
from .subset_start import subset_start
from .memory import IterativeMemory, PlannedMemory, largest
from .rank import RankSearch, factor_bytes_per_entry, preconditioner_rank
from ..krylov.cg import PCG_BLOCKS, pcg, pcg_bytes
from ..dense.threads import on_one_blas_thread
from ..krylov.lanczos_cg import quadrature_log
from ..low_rank import CHUNK_ROWS

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...kernels.differentiable import DifferentiableKernel
    from ...operators.operator import KernelOperator
    from ...operators.samples import SolverSamples

__all__ = ["IterativeSettings", "IterativeSolver", "preconditioner_rank"]


def _cross_columns(rows: Any, X_new: Any, kernel: DifferentiableKernel) -> np.ndarray:
    return kernel.cross(rows, X_new)


def _with_residual(K_cross: np.ndarray, R: np.ndarray | None) -> np.ndarray:
    """K* + R in K*'s memory, R = K* − K̂V the true residual pcg checked (K* alone where it has none: None),
    so that (K* + R)ᵀV stands for K*ᵀK̂⁻¹K*. With K̂V = K* − R,
    (K* + R)ᵀV = (K* + R)ᵀK̂⁻¹(K* − R) = K*ᵀK̂⁻¹K* − RᵀK̂⁻¹R + (RᵀK̂⁻¹K* − K*ᵀK̂⁻¹R): its diagonal's error,
    −rᵀK̂⁻¹r, is second order in r where K*ᵀV's, −rᵀK̂⁻¹k*, is first order, and the off-diagonal's first-order
    part is antisymmetric, which symmetrising removes. The variance k** − k*ᵀK̂⁻¹k* is a small difference of
    large numbers when the amplitude is many times the posterior variance (the RBF fit of
    bench/gaussian_process.py at 20,000 samples), where K*ᵀV at final_tol 1e-6 put the standard deviations far
    further off the Cholesky fit's than this form does."""
    if R is not None:
        K_cross += R
    return K_cross


#: Rounds at most of the predictive variances' further CG (IterativeSolver._quadratic_form_solve), and how far
#: below its target each round aims the quadratic form's estimated error (a residual's square: its tolerance
#: falls by the square root of the ratio).
QUADRATIC_FORM_ROUNDS = 2
QUADRATIC_FORM_MARGIN = 0.25

#: Rounds at most while the optimum settles (IterativeSolver.settle), and how many times the fit's first probes
#: they may take (16 probes become 256 at most).
SETTLE_ROUNDS = 4
SETTLE_PROBES = 16

#: A settling round's quasi-Newton steps (IterativeSolver.settle) stay within this distance of where they start
#: (largest change of one log-hyperparameter) and take at most NEWTON_STEPS evaluations; beyond either the
#: optimiser runs again.
NEWTON_RANGE = 0.5
NEWTON_STEPS = 8


def _move(a: np.ndarray, b: ArrayLike) -> float:
    """The largest change of one coordinate from ``a`` to ``b`` (log-hyperparameters)."""
    return float(np.max(np.abs(np.asarray(b, dtype=np.float64) - a), initial=0.0))


def _newton_round(theta: np.ndarray, inverse_hessian: Callable[[np.ndarray], np.ndarray], func: Callable[..., Any],
                  bounds: np.ndarray, tol: float) -> tuple[np.ndarray, float] | None:
    """(θ, the value there) where the gradient of ``func`` (the objective on the probes now held) vanishes, by
    quasi-Newton steps θ ← clip(θ − H⁻¹g(θ)) from ``theta``, H⁻¹ the optimiser's inverse Hessian, updated by
    BFGS's formula with each step's change of gradient (where the curvature along it is positive), until a step
    is below ``tol``/4; None where a step leaves NEWTON_RANGE, a gradient is not finite, or the steps do not
    shrink (H⁻¹ does not describe the objective here: the optimiser must run again)."""
    lower, upper = np.asarray(bounds, dtype=np.float64).T
    size = theta.shape[0]
    H = np.column_stack([np.asarray(inverse_hessian(e), dtype=np.float64) for e in np.eye(size)])
    H = 0.5 * (H + H.T)
    value, gradient = func(theta, True)
    point, last = theta, math.inf
    for _ in range(NEWTON_STEPS):
        if not np.all(np.isfinite(gradient)):
            return None
        moved = np.clip(point - H @ gradient, lower, upper)
        step = _move(point, moved)
        if step > last or _move(theta, moved) > NEWTON_RANGE:
            return None
        new_value, new_gradient = func(moved, True)
        s_k, y_k = moved - point, np.asarray(new_gradient) - gradient
        curvature = float(y_k @ s_k)
        if curvature > 0:  # BFGS on H⁻¹: (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ, ρ = 1/(yᵀs)
            left = np.eye(size) - np.outer(s_k, y_k) / curvature
            H = left @ H @ left.T + np.outer(s_k, s_k) / curvature
        point, last, value, gradient = moved, step, new_value, np.asarray(new_gradient)
        if step <= tol / 4:
            return point, value
    return None


#: The predictive variances hold the kernel whole only beside chunks of at least this many test points
#: (IterativeSolver._prediction_plan): narrower blocks waste the pass's reads of the stored kernel.
PREDICTION_MIN_CHUNK = 16


@dataclass(frozen=True)
class IterativeSettings:
    """cg's controls (GaussianProcessRegressor's parameters)."""

    probes: int = 16
    tol: float = 1e-2
    final_tol: float = 1e-6
    rank: int | None = None
    max_iter: int = 1000
    dtype: type = np.float64
    storage: str = "auto"  # the kernel operator's storage (operators.storage): "matrix_free" holds no tiles
    control_variate: bool = True  # the preconditioner's control variate in the gradient (control_variate.py)
    target_tol: float = 1e-4  # the targets' columns in the likelihood's evaluations (the probes' stop at tol)
    theta_tol: float | None = 0.05  # the error in the fitted log θ the settling aims for (None: no settling)


def _not_positive_definite(info: dict) -> bool:
    """Whether pcg's run showed K̂ is not positive definite (a non-positive or non-finite curvature)."""
    return info["indefinite"] is not None or bool(info["broken_down"].size)


class IterativeSolver(PlannedMemory):
    """The interface's iterative solver (interface.py): its estimates, the final solve and the predictive
    variances of one fit (module documentation). Holds the fixed draws, the warm start and the figures
    ``info()`` reports.

    Parameters
    ----------
    samples : an engine's Samples (engines/base.py)
        Training samples, wherever they are: the products, the preconditioner's columns and the gradient's
        passes run there.
    Y : ndarray (n, s)
        The right-hand sides it will be asked about (the targets): its blocks are sized for them.
    noise : float or ndarray (n,)
        ``alpha``.
    settings : IterativeSettings
    memory_limit : int
    n_jobs : int or None
    random_state : int, RandomState or None
    copies : int
        The kernel's working copies of the samples (kernels.Kernel.copies), counted beside the memory limit.
    """

    name = "cg"
    likelihood_from_solve = False
    per_sample_objective = True
    stop_gain: float | None = None
    abnormal_restarts = 0
    #: Groups of probes whose batch means give the gradient's standard error (0: none; with_probes sets it).
    gradient_groups = 0

    def __init__(self, samples: SolverSamples, Y: np.ndarray, noise: float | np.ndarray, settings: IterativeSettings,
                 *, memory_limit: int, n_jobs: int | None = None, random_state: Any = None, copies: int = 1) -> None:
        self.samples, self.Y, self.settings, self.copies = samples, Y, settings, copies
        n, s = Y.shape
        self.noise = np.broadcast_to(np.asarray(noise, dtype=np.float64), (n,)).copy()
        self.n_jobs = n_jobs
        width = s + settings.probes
        # beside pcg's blocks the probes and the warm start (the gradient's factors A, B and P⁻¹Z come after
        # pcg's); the factor at its peak (a float32 factor is a copy made beside the float64 one)
        itemsize = np.dtype(settings.dtype).itemsize
        self.memory = IterativeMemory(samples, memory_limit, entry_bytes=factor_bytes_per_entry(itemsize),
                                      vectors=2, control_variate=settings.control_variate, factor_itemsize=itemsize,
                                      copies=copies, storage=settings.storage, threads=v.n_threads(n_jobs))
        start = self.memory.start_rank(settings.rank, width, f"conjugate gradients on {n} samples")
        self.ranks = RankSearch(start, self.memory.rank_ceiling(settings.rank, start, width), n=n,
                                d=samples.shape[1], columns=width, fixed=settings.rank is not None,
                                squares=4 + (CONTROL_VARIATE_SQUARES if settings.control_variate else 0))
        rng = v.check_random_state(random_state)
        self.signs = rng.choice(np.array([-1.0, 1.0]), size=(n, settings.probes))
        self.seed = int(rng.randint(2**31 - 1))
        self.rng = rng  # the further probes' signs (settle)
        self.warm: np.ndarray | None = None
        self.pivots: np.ndarray | None = None
        self.figures: dict[str, Any] = {"products": 0, "iterations": [], "max_residual": 0.0,
                        "seconds": {"preconditioner": 0.0, "cg": 0.0, "gradient": 0.0}}
        self.preconditioner: NystromDiagonalPreconditioner | None = None

    @property
    def room(self) -> int:
        """What the memory limit leaves beside the samples' working copies and the plan's slack (memory.py)."""
        return self.memory.room

    @property
    def rank(self) -> int:
        """The preconditioner's rank now (RankSearch moves it during the first evaluations)."""
        return self.ranks.rank

    def _working_bytes(self, rank: int, probes: int | None = None) -> int:
        """What an evaluation holds beside the kernel (memory.py) with CG on the targets and the probes
        (``probes``: that many; by default the fit's)."""
        return self.memory.working_bytes(rank, self.Y.shape[1] + (self.settings.probes if probes is None
                                                                   else probes))

    # ---------------------------------------------------------------------------------------- pieces

    def _matmat(self, op: KernelOperator) -> Callable[[np.ndarray], np.ndarray]:
        native, threads = op.native, op.threads

        def matmat(V: np.ndarray) -> np.ndarray:
            V = np.array(V, dtype=np.float64, order="F")  # the native product's layout, then the noise term's
            out = native.matmat(V, threads)
            V *= self.noise[:, None]
            out += V
            return out

        return matmat

    def _plan(self, kernel: DifferentiableKernel, width: int, other_bytes: int | None = None) -> Any:
        """The kernel's storage for CG on ``width`` columns within the memory limit less ``other_bytes`` (by
        default the fit's: _working_bytes), memory.py's plan."""
        return self.memory.kernel_plan(kernel, width, self._working_bytes(self.rank) if other_bytes is None
                                       else other_bytes)

    def _operator(self, kernel: DifferentiableKernel, plan: Any) -> AbstractContextManager[KernelOperator]:
        """The kernel operator held as ``plan`` says (a context manager)."""
        return self.samples.kernel_of(kernel).operator(plan, self.n_jobs)

    def _held(self, plan: Any) -> float:
        """The share of the kernel's entries ``plan`` holds in memory."""
        return self.memory.held(plan)

    def _cross(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """K(X, X_new), n × len(X_new), by row blocks where the samples are."""
        return np.asarray(self.samples.map(_cross_columns, X_new, kernel, rows=self.Y.shape[0]), dtype=np.float64)

    def _preconditioner(self, kernel: DifferentiableKernel, fresh: bool = False) -> NystromDiagonalPreconditioner:
        """P at this θ on the fit's pivots: RPCholesky's at the first evaluation (and at each rank the search
        tries), held after it, so that P and the likelihood's estimate move smoothly with θ (preconditioner.py;
        new pivots only where the held ones are degenerate at this θ, counted in ``info()``). ``fresh``: RPCholesky
        at this θ, its own factor (the final solve's and the predictions' P, adapted to the fitted kernel and
        not part of the estimate)."""
        start = time.perf_counter()
        if fresh:
            pre = build_preconditioner(kernel, self.samples, self.noise, self.rank, seed=self.seed,
                                       dtype=self.settings.dtype)
            self.figures["seconds"]["preconditioner"] += time.perf_counter() - start
            return pre
        held = self.pivots if self.pivots is not None and self.pivots.shape[0] == self.rank else None
        pre = build_preconditioner(kernel, self.samples, self.noise, self.rank, seed=self.seed,
                                   dtype=self.settings.dtype, pivots=held)
        if held is None or not np.array_equal(pre.pivots, held):
            self.pivots = pre.pivots
            self.figures["pivot_draws"] = self.figures.get("pivot_draws", 0) + 1
            if pre.rank:  # the factor by the formula every later evaluation uses (RPCholesky's rounds otherwise)
                pre = build_preconditioner(kernel, self.samples, self.noise, self.rank, seed=self.seed,
                                           dtype=self.settings.dtype, pivots=self.pivots)
        self.figures["seconds"]["preconditioner"] += time.perf_counter() - start
        return pre

    # ------------------------------------------------------------------------------------ likelihood

    @on_one_blas_thread
    def inv_quad_logdet(self, kernel: DifferentiableKernel, Y: np.ndarray, eval_gradient: bool, *, quad_weight: float,
                        logdet_weight: float) -> InvQuadLogdet:
        """The interface's estimate (interface.py; this module's documentation says how) for the kernel (a
        kernels.DifferentiableKernel with the hyperparameters to evaluate). A kernel matrix CG finds not positive
        definite has no answer (``positive_definite`` false)."""
        n, s = Y.shape
        p = self.settings.probes
        pre = self._preconditioner(kernel)
        Z = pre.sample(self.signs)
        # the targets' columns to target_tol from zero: yᵀK̂⁻¹y's error is ‖α − α*‖²_K̂ (CG's Galerkin
        # condition), and a warm start would make the estimate depend on the path to θ
        tol = np.r_[np.full(s, min(self.settings.target_tol, self.settings.tol)), np.full(p, self.settings.tol)]
        start = time.perf_counter()
        plan = self._plan(kernel, s + p)
        with self._operator(kernel, plan) as op:
            solution, info = pcg(self._matmat(op), np.hstack([Y, Z]), precondition=pre, tol=tol,
                                 maxiter=self.settings.max_iter, verify=False, record=True)
        self._count(info, start, "cg")
        if _not_positive_definite(info):
            return InvQuadLogdet(None, math.nan, None)
        self.ranks.observe(info["iterations"], held=self._held(plan))
        alpha, U = solution[:, :s], solution[:, s:]
        self.warm = alpha
        per_probe = np.array([info["start_norms"][s + i] * quadrature_log(info["steps"][s + i], info["ratios"][s + i])
                              for i in range(p)])
        logdet = pre.logdet + per_probe.mean()
        error = float(per_probe.std(ddof=1)) / math.sqrt(p) if p > 1 else math.inf
        self.figures["standard_error"] = abs(logdet_weight) * error  # the weighted objective's
        quad = np.einsum("ik,ik->k", Y, alpha)
        if not eval_gradient:
            return InvQuadLogdet(quad, logdet, alpha, None, error)
        # −w_q Σ αᵀ∂Kα + w_l tr(K̂⁻¹∂K), the trace by Hutchinson: E[(P⁻¹z)ᵀ ∂K K̂⁻¹z] = tr(K̂⁻¹∂K) for z ~ N(0, P)
        start = time.perf_counter()
        Omega = pre.solve(Z)
        A = np.hstack([alpha, U])
        B = np.hstack([alpha * -quad_weight, Omega * (logdet_weight / p)])
        gradient = self.samples.kernel_of(kernel).gradient_traces(A, B)
        self.figures["seconds"]["gradient"] += time.perf_counter() - start
        self.figures["products"] += 1  # the gradient's pass over the kernel's tiles
        if self.settings.control_variate and kernel.cross_gradients:
            start = time.perf_counter()
            gradient += logdet_weight * control_variate_traces(kernel, self.samples, pre, Omega)
            seconds = self.figures["seconds"]
            seconds["control_variate"] = seconds.get("control_variate", 0.0) + time.perf_counter() - start
        gradient_error = None
        groups = probe_groups(p, self.gradient_groups)
        if groups:  # batch means of the probes' part, one group at a time
            start = time.perf_counter()
            gradient_error = batch_standard_error(
                [self._probes_part(kernel, pre, U[:, g], Omega[:, g], logdet_weight) for g in groups])
            seconds = self.figures["seconds"]
            seconds["gradient_error"] = seconds.get("gradient_error", 0.0) + time.perf_counter() - start
        return InvQuadLogdet(quad, logdet, alpha, gradient, error, gradient_error)

    def _probes_part(self, kernel: DifferentiableKernel, pre: NystromDiagonalPreconditioner, U: np.ndarray,
                     Omega: np.ndarray, logdet_weight: float) -> np.ndarray:
        """The probes' part of the gradient from the probes given alone: w_l times their mean of
        (P⁻¹z)ᵀ ∂K K̂⁻¹z and of the control variate's terms (one gradient pass)."""
        traces = np.asarray(self.samples.kernel_of(kernel).gradient_traces(U, Omega * (logdet_weight / Omega.shape[1])),
                            dtype=np.float64)
        self.figures["products"] += 1
        if self.settings.control_variate and kernel.cross_gradients:
            traces = traces + logdet_weight * control_variate_traces(kernel, self.samples, pre, Omega)
        return traces

    def _count(self, info: dict, start: float, stage: str) -> None:
        f = self.figures
        f["products"] += info["iterations"]
        f["iterations"].append(int(info["column_iterations"].max(initial=0)))
        f["max_residual"] = max(f["max_residual"], float(info["residuals"].max(initial=0.0)))
        f["seconds"][stage] = f["seconds"].get(stage, 0.0) + time.perf_counter() - start

    # ------------------------------------------------------------------------------------------ start

    def start(self, theta: np.ndarray, fit_subset: Callable[[np.ndarray, str], tuple[np.ndarray, dict]], size: int,
              random_state: Any) -> tuple[np.ndarray, dict | None]:
        """θ for the optimiser to start from: that of an exact fit on ``size`` samples (subset_start.py) where
        that is fewer than the training samples; else the kernel's θ."""
        theta, record = subset_start(theta, fit_subset, self.Y.shape[0], size, random_state)
        if record is not None:
            self.figures["seconds"]["start"] = record["seconds"]
        return theta, record

    # ----------------------------------------------------------------------------------------- settle

    def objective(self, func: Callable[..., Any]) -> Objective:
        """The value integrated from the gradient's estimate (objective.py: the two are separate estimates, and
        L-BFGS-B's line search needs them to agree)."""
        return Objective(func, integrate=True)

    def settle(self, optimum: tuple,
               minimise: Callable[[np.ndarray], tuple[np.ndarray, float, Callable[[np.ndarray], np.ndarray] | None]],
               func: Callable[..., Any], bounds: np.ndarray) -> tuple[np.ndarray, float, dict | None]:
        """The optimum once the estimate's own error in it is within ``theta_tol``. In rounds, the probes are
        multiplied (those held kept, new ones drawn) and the optimum found again from the last one; it is
        accepted when the error its move stands for is at most ``theta_tol``/4 in every coordinate (log space).
        At most SETTLE_ROUNDS rounds, SETTLE_PROBES times the first probes and within the memory limit; a
        ConvergenceWarning where it stopped short.

        With p probes the optimum's error is e_p ≈ H⁻¹ḡ_p, ḡ_p the mean of the probes' gradient errors (H the
        likelihood's curvature; on the hard data of the tests the optimum sat where the estimated gradient
        vanished, and its error was this linear prediction's to 0.001; over twelve draws of 64 probes the
        gradient's error averaged zero within its standard error: noise, not bias). From p to kp probes, the
        first p kept, ḡ_kp = (ḡ_p + (k − 1) ḡ'_p)/k with ḡ'_p the new probes' mean (independent, of variance
        σ²/((k − 1)p)), so the move e_kp − e_p has (k − 1) times the variance of e_kp: move/√(k − 1) is one draw
        of the size of the new optimum's error (the move itself for a doubling). Accepting at a quarter of
        ``theta_tol`` leaves that error, another draw of the same size, room to be larger (on the hard data a
        round accepted at half left an error above ``theta_tol``). The error falls as 1/√p, so
        the next round takes p·(error / (theta_tol/4))² probes: at least twice and at most eight times those
        held.

        The move is small and the curvature the optimiser's: where it gave its inverse Hessian, a round takes
        quasi-Newton steps θ ← θ − H⁻¹g(θ) on the new estimate's gradient (_newton_round: two or three
        evaluations, where the optimiser run again took fifteen or more on the hard data); the optimiser runs
        again where it gave none, or where the steps leave NEWTON_RANGE or stop shrinking."""
        theta, value, inverse_hessian = optimum
        tol = self.settings.theta_tol
        if tol is None or not np.isfinite(value):
            return theta, value, None
        rounds: list[dict] = []
        moved: tuple[np.ndarray, float] | np.ndarray | None  # the Newton round's (θ, value), then θ
        most, factor = SETTLE_PROBES * self.settings.probes, 2
        for _ in range(SETTLE_ROUNDS):
            probes = self._more_probes(min(factor * self.settings.probes, most))
            if probes == self.settings.probes:
                break
            held = self.settings.probes
            self._add_probes(probes)
            begin, evaluations = time.perf_counter(), len(self.figures["iterations"])
            moved = None if inverse_hessian is None else _newton_round(theta, inverse_hessian, func, bounds, tol)
            how = "newton"
            if moved is None:
                moved, value, inverse_hessian = minimise(theta)
                how = "optimiser"
            else:
                moved, value = moved
            change = _move(theta, moved)
            error = change / math.sqrt(probes / held - 1.0)
            theta = np.asarray(moved)
            rounds.append({"probes": probes, "by": how, "theta_change": change, "error": error,
                           "evaluations": len(self.figures["iterations"]) - evaluations,
                           "seconds": time.perf_counter() - begin})
            if error <= tol / 4:
                return theta, value, {"theta_tol": tol, "settled": True, "rounds": rounds}
            factor = int(min(8, max(2, 2 ** math.ceil(math.log2((4 * error / tol) ** 2)))))
        last = (f"θ's error is about {rounds[-1]['error']:.3g} (log space) with {self.settings.probes} probes"
                if rounds else f"the memory limit leaves no room for more than {self.settings.probes} probes")
        warnings.warn(f"Gaussian process: the cg estimate's optimum is not settled within theta_tol={tol:g}: {last}; "
                      "its hyperparameters may be that far from the exact likelihood's optimum. Raise n_probes or "
                      "memory_limit, or fit with solver='cholesky' where it fits", ConvergenceWarning, stacklevel=4)
        return theta, value, {"theta_tol": tol, "settled": False, "rounds": rounds}

    @property
    def probes(self) -> int:
        """The probes held (refined_estimate.py)."""
        return self.settings.probes

    def most_probes(self, wanted: int) -> int:
        """Up to ``wanted`` probes, as many as the memory limit holds (refined_estimate.py)."""
        return self._more_probes(wanted)

    def with_probes(self, probes: int) -> IterativeSolver:
        """A copy that holds ``probes`` probes (those held, then new ones drawn from a copy of the random state:
        this solver's draws are not consumed) and reports the gradient's standard error (GRADIENT_GROUPS batch
        means). The likelihood a user asks for is evaluated on such a copy (refined_estimate.py)."""
        twin = copy.copy(self)
        twin.ranks, twin.rng = copy.copy(self.ranks), copy.deepcopy(self.rng)
        twin.figures = copy.deepcopy(self.figures)
        twin.gradient_groups = GRADIENT_GROUPS
        if probes > self.settings.probes:
            twin._add_probes(probes)
        return twin

    def _more_probes(self, wanted: int) -> int:
        """``wanted`` probes, or as many as fit the memory limit beside the fit's rank (no fewer than now)."""
        now = self.settings.probes
        return largest(now, max(now, wanted), lambda probes: self._working_bytes(self.rank, probes) <= self.room)

    def _add_probes(self, probes: int) -> None:
        """Hold ``probes`` probes: those held and new ones drawn from the fit's random state."""
        n, now = self.Y.shape[0], self.settings.probes
        extra = self.rng.choice(np.array([-1.0, 1.0]), size=(n, probes - now))
        self.signs = np.hstack([self.signs, extra])
        self.settings = dataclasses.replace(self.settings, probes=probes)
        self.ranks.columns = self.Y.shape[1] + probes

    # ----------------------------------------------------------------------------------- final solve

    def solved_inv_quad_logdet(self, Y: np.ndarray) -> InvQuadLogdet:
        """Not held: the final solve keeps α to final_tol but no estimate of log det K̂ (likelihood_from_solve)."""
        raise NotImplementedError("the iterative solver evaluates the likelihood (likelihood_from_solve is False)")

    def solve(self, kernel: DifferentiableKernel, Y: np.ndarray) -> np.ndarray:
        """α = K̂⁻¹Y to ``final_tol`` (started from the last evaluation's), its true residual checked (CG
        resumes from it if the recurrence's drifted); the preconditioner is kept for the predictive variances."""
        self.ranks.frozen = True  # the fit's rank from here on (predictions use this preconditioner)
        pre = self._preconditioner(kernel, fresh=True)
        start = time.perf_counter()
        with self._operator(kernel, self._plan(kernel, Y.shape[1])) as op:
            alpha, info = pcg(self._matmat(op), Y, precondition=pre, tol=self.settings.final_tol,
                              maxiter=self.settings.max_iter, x0=self.warm if self.warm is not None
                              and self.warm.shape == Y.shape else None)
        self._count(info, start, "final_solve")
        self.figures["final_residuals"] = info["residuals"]
        self._check(info, "the final conjugate gradients", stacklevel=5)
        self.preconditioner = pre
        return alpha

    def _check(self, info: dict, what: str, stacklevel: int) -> None:
        """After a solve to ``final_tol`` (pcg's info): LinAlgError if CG found K̂ not positive definite (as the
        Cholesky solver would), a ConvergenceWarning if it stopped short; ``stacklevel`` points at the user."""
        if _not_positive_definite(info):
            curvature = "" if info["indefinite"] is None else f" of curvature {info['indefinite']:.3g}"
            raise np.linalg.LinAlgError(f"Gaussian process: {what} met a direction{curvature} that shows the "
                                        "kernel matrix with its noise is not positive definite; raise alpha or "
                                        "the kernel's noise level")
        if not info["converged"]:
            kind = "" if info["residuals_are_true"] else " (the recurrence's)"
            advice = ("rounding allows no smaller residual: raise final_tol" if info["stalled"]
                      else "raise max_iter or the preconditioner's rank")
            warnings.warn(f"Gaussian process: {what} stopped at relative residual {info['residuals'].max():.2e}"
                          f"{kind} > final_tol={self.settings.final_tol:g} after {info['iterations']} products; "
                          f"{advice}", ConvergenceWarning, stacklevel=stacklevel)

    # ------------------------------------------------------------------------------------ predictions

    def _prediction_bytes(self, columns: int) -> int:
        """What a solve for ``columns`` test points holds beside the kernel's storage and the samples: the
        fitted preconditioner, pcg's blocks (the test points' kernel columns its right-hand sides; their
        concatenation by row blocks, two blocks, comes before) and the kernel pass's working memory."""
        n, pre = self.Y.shape[0], self.preconditioner
        assert pre is not None
        scratch = 0 if pre.F.dtype == np.float64 else 8 * CHUNK_ROWS * pre.rank  # a float32 F's rows in float64
        return pre.nbytes + scratch + pcg_bytes(n, columns, pre.rank) + pass_bytes(columns, n)

    def _prediction_plan(self, kernel: DifferentiableKernel, n_test: int) -> tuple[int, Any]:
        """(test points per solve, the kernel's storage) within the memory limit; MemoryError when not even one
        point fits.

        A pass costs (1 − f)·e per kernel entry for its share f held in memory (e: an evaluation) plus c·g
        for its c columns, and n_test/c chunks take a pass each per iteration, so the predictions cost about
        n_test·[(1 − f)·e/c + g] per entry and iteration. Memory S given to storage raises f by S/K (K the
        stored kernel's size) and takes S/q columns from c (q a column's bytes): with K beyond the memory
        left, (1 − S/K)/(B − S) grows with S, and the best use of it is the chunk's width. So the kernel is
        held whole when it fits beside a chunk of PREDICTION_MIN_CHUNK points (f = 1: the product's cost
        alone), the chunk then as wide as fits beside it; otherwise the chunk as wide as fits, with what storage
        the plan finds beside it (a few tile rows at most)."""
        v.check_within(self._prediction_bytes(1) + self.limit - self.room, self.limit,
                       f"the predictive variances' conjugate gradients on {self.Y.shape[0]} training samples")

        def plan(columns: int) -> Any | None:
            """The storage beside a chunk of that many points; None where it does not fit (the plan also counts
            the samples' copies of every kernel term, and a storage asked for may not fit at all)."""
            if self._prediction_bytes(columns) > self.room:
                return None
            try:
                return self._plan(kernel, columns, self._prediction_bytes(columns))
            except MemoryError:
                return None

        def whole(columns: int) -> bool:
            chosen = plan(columns)
            return chosen is not None and self._held(chosen) >= 1.0

        n_test = max(1, n_test)
        floor = min(n_test, PREDICTION_MIN_CHUNK)
        columns = largest(floor, n_test, whole) if whole(floor) else largest(1, n_test, lambda c: plan(c) is not None)
        chosen = plan(columns)
        # not even one point beside the samples' copies: the plan's own MemoryError says what it needs
        return columns, self._plan(kernel, 1, self._prediction_bytes(1)) if chosen is None else chosen

    def mean_and_variance(self, kernel: DifferentiableKernel, X_new: Any,
                          mean_map: Callable[[Any], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The posterior mean by ``mean_map`` (tile by tile where the samples are) and :meth:`variance`."""
        return mean_map(X_new), self.variance(kernel, X_new)

    def variance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """k(x, x) − k*ᵀK̂⁻¹k* for every new point, by block CG on the test points' kernel columns in chunks
        within the memory limit (_prediction_plan)."""
        n_new = X_new.shape[0]
        out = kernel.diagonal(X_new).astype(np.float64)
        pre = self.preconditioner
        assert pre is not None
        if not n_new:
            return out
        rows, plan = self._prediction_plan(kernel, n_new)
        with self._operator(kernel, plan) as op:
            matmat = self._matmat(op)
            for start in range(0, n_new, rows):
                Kt = self._cross(kernel, X_new[start:start + rows])  # n × c
                chunk = slice(start, start + Kt.shape[1])
                V, R = self._quadratic_form_solve(matmat, Kt, out[chunk],
                                                  "the predictive variances' conjugate gradients")
                out[chunk] -= np.einsum("ij,ij->j", _with_residual(Kt, R), V)
                del Kt, V, R  # the next chunk's blocks replace these, not join them
        return out

    def _quadratic_form_solve(self, matmat: Callable[[np.ndarray], np.ndarray], Kt: np.ndarray, prior: np.ndarray,
                              what: str) -> tuple[np.ndarray, np.ndarray | None]:
        """(V, R): V ≈ K̂⁻¹K* by pcg to ``final_tol``, R = K* − K̂V its true residual (None where pcg has none),
        for the quadratic forms (k* + r)ᵀv ≈ k*ᵀK̂⁻¹k* subtracted from ``prior`` (k** per column).

        A form's error is −rᵀK̂⁻¹r (_with_residual): at final_tol it is final_tol²·‖k*‖²/λ at worst, which
        matters where k** is many times the variance k** − k*ᵀK̂⁻¹k* (a large amplitude over a small noise). The
        error is estimated as rᵀP⁻¹r (P the fit's preconditioner, close to K̂ where it helps CG most), and CG
        goes on from V, up to QUADRATIC_FORM_ROUNDS times, for the columns whose estimate is above
        ``final_tol`` of their variance (or of a few ulps of k**, the subtraction's own rounding), each to a
        residual QUADRATIC_FORM_MARGIN of the way there; a round's columns at most 6/10 of the chunk's, so that
        V, K* and R beside pcg's blocks and its copy of the start stay within the PCG_BLOCKS blocks planned for
        the chunk. Only after a first solve that converged (one that did not has its ConvergenceWarning, and
        more of the same iterations would not help); the rounds go further than final_tol and warn of
        nothing."""
        pre, settings = self.preconditioner, self.settings
        assert pre is not None
        V, info = pcg(matmat, Kt, precondition=pre, tol=settings.final_tol, maxiter=settings.max_iter)
        self._check(info, what, stacklevel=5)
        R, residuals, converged = info["residual_block"], info["residuals"], info["converged"]
        del info
        if R is None or not converged:
            return V, R
        columns = Kt.shape[1]
        width = max(1, (PCG_BLOCKS - 3) * columns // (PCG_BLOCKS + 1))
        for _ in range(QUADRATIC_FORM_ROUNDS):
            error = np.einsum("ij,ij->j", R, pre(R))  # rᵀP⁻¹r ≈ rᵀK̂⁻¹r
            variance = prior - np.einsum("ij,ij->j", Kt, V) - np.einsum("ij,ij->j", R, V)
            target = settings.final_tol * np.maximum(variance, 16 * np.finfo(np.float64).eps * np.abs(prior))
            short = np.flatnonzero(error > target)
            if not short.size:
                break
            tol = residuals[short] * np.sqrt(QUADRATIC_FORM_MARGIN * target[short] / error[short])
            for part in range(0, short.size, width):
                group = short[part:part + width]
                further, info = pcg(matmat, Kt[:, group], precondition=pre, tol=tol[part:part + width],
                                    maxiter=settings.max_iter, x0=V[:, group])
                if info["residual_block"] is not None:  # else no true residual: these columns stay as they were
                    V[:, group], R[:, group], residuals[group] = further, info["residual_block"], info["residuals"]
                del further, info
        return V, R

    def covariance(self, kernel: DifferentiableKernel, X_new: Any) -> np.ndarray:
        """K(X*, X*) − K*ᵀK̂⁻¹K* by block CG (a small test set: n × n_new arrays)."""
        n_new = X_new.shape[0]
        pre = self.preconditioner
        assert pre is not None
        if not n_new:
            return np.zeros((0, 0))
        # beside pcg's: K(X*, X*), (K* + R)ᵀV, their difference and its symmetrisation's two
        other = self._prediction_bytes(n_new) + 5 * 8 * n_new * n_new
        v.check_within(other + self.limit - self.room, self.limit,
                       f"the posterior covariance of {n_new} points by conjugate gradients",
                       "predict return_std=True takes any number of points")
        plan = self._plan(kernel, n_new, other)
        Kt = self._cross(kernel, X_new)
        prior = np.asarray(kernel.cross(X_new), dtype=np.float64)
        with self._operator(kernel, plan) as op:
            V, R = self._quadratic_form_solve(self._matmat(op), Kt, np.diagonal(prior).copy(),
                                              "the posterior covariance's conjugate gradients")
        cov = prior - _with_residual(Kt, R).T @ V
        return 0.5 * (cov + cov.T)  # symmetrising also removes the first-order error (_with_residual)

    def fitted_attributes(self) -> dict:
        return {}

    def localised(self) -> IterativeSolver:
        """The same state over the samples brought into this process (a fitted model pickled without its
        cluster)."""
        out = copy.copy(self)
        out.samples = self.samples.local()
        out.memory = copy.copy(self.memory)  # the plan reads the samples it was made for
        out.memory.samples = out.samples
        return out

    def info(self) -> dict:
        f = self.figures
        return {"products": f["products"], "iterations": list(f["iterations"]), "probes": self.settings.probes,
                "preconditioner": {"kind": "rpcholesky+diagonal", "rank": self.rank,
                                   "dtype": np.dtype(self.settings.dtype).name,
                                   "ranks": [rank for rank, _ in self.ranks.history]},
                "pivot_draws": self.figures.get("pivot_draws", 0),
                "tol": self.settings.tol, "target_tol": self.settings.target_tol, "final_tol": self.settings.final_tol,
                "max_training_residual": f["max_residual"], "final_residuals": f.get("final_residuals"),
                "standard_error": f.get("standard_error"), "stages": dict(f["seconds"])}
