"""GaussianProcessRegressor(solver="cg"): the likelihood by conjugate gradients, stochastic Lanczos quadrature and
Hutchinson probes, checked against the exact (Cholesky) quantities with tolerances from the probes' own
standard errors."""

import _thread
import os
import sys
import threading
import time

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C, DotProduct, Matern, WhiteKernel

from fastkpca import CG, GaussianProcessRegressor, kernels
from fastkpca.engines.local import LOCAL
from fastkpca.solvers import gaussian_process as gp
from fastkpca.solvers.gaussian_process import ExactSolver, IterativeSettings, IterativeSolver
from fastkpca.solvers.gaussian_process.iterative import preconditioner_rank
from fastkpca.solvers.gaussian_process.preconditioner import NystromDiagonalPreconditioner, build_preconditioner
from fastkpca.solvers.gaussian_process.rank import SEARCH_EVALUATIONS, RankSearch
from fastkpca.solvers.krylov.cg import pcg
from fastkpca.solvers.krylov.lanczos_cg import quadrature_log


def data(n, d=4, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 + 0.1 * rng.randn(n)
    return X, y


KERNELS = [C(1.0) * RBF(np.full(4, 1.5)) + WhiteKernel(0.05), C(2.0) * Matern(1.2, nu=2.5) + WhiteKernel(0.1)]


def dense(kernel_object, X, noise=1e-10):
    K = kernel_object(X)
    K[np.diag_indices_from(K)] += noise
    return K


def likelihood(solver, kernel, eval_gradient):
    """The regression's likelihood from a solver, for the targets it was made with."""
    return gp.log_marginal_likelihood(solver, kernel, solver.Y, eval_gradient)


def exact_likelihood(kernel, X, y, noise, eval_gradient):
    """The exact solver's (value, gradient, 0.0): the reference."""
    return gp.log_marginal_likelihood(ExactSolver(LOCAL.samples(X), noise, memory_limit=2**30), kernel, y[:, None],
                                      eval_gradient)


def root_of(pre: NystromDiagonalPreconditioner) -> np.ndarray:
    """The factor M (M Mᵀ = P) the preconditioner samples with, as a dense matrix."""
    return pre.sample(np.eye(pre.d.shape[0]))


# -------------------------------------------------------------------------------------- preconditioner

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_preconditioner_against_dense(dtype):
    rng = np.random.RandomState(1)
    n, r = 60, 7
    F = rng.randn(n, r).astype(dtype)
    d = rng.uniform(0.1, 2.0, n)
    pre = NystromDiagonalPreconditioner(F, d)
    P = F.astype(np.float64) @ F.astype(np.float64).T + np.diag(d)
    V = rng.randn(n, 3)
    np.testing.assert_allclose(pre.solve(V), np.linalg.solve(P, V), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pre.multiply(V), P @ V, rtol=1e-12)
    assert pre.logdet == pytest.approx(np.linalg.slogdet(P)[1], rel=1e-12)
    M = root_of(pre)
    np.testing.assert_allclose(M @ M.T, P, rtol=1e-10, atol=1e-10)


def test_the_preconditioner_keeps_the_diagonal_and_is_exact_at_full_rank():
    X, _ = data(80)
    kobj = KERNELS[0]
    kernel = kernels.make(kobj, n_features=0)
    K = dense(kobj, X, 1e-3)
    pre = build_preconditioner(kernel, LOCAL.samples(X), 1e-3, 20, seed=0)
    P = pre.F @ pre.F.T + np.diag(pre.d)
    np.testing.assert_allclose(np.diag(P), np.diag(K), rtol=1e-10)
    full = build_preconditioner(kernel, LOCAL.samples(X), 1e-3, 80, seed=0)
    np.testing.assert_allclose(full.F @ full.F.T + np.diag(full.d), K, atol=1e-8)


# ----------------------------------------------------------------------------------- quadrature, CG

def test_quadrature_is_exact_when_lanczos_exhausts_the_space():
    rng = np.random.RandomState(2)
    n = 25
    A = rng.randn(n, n)
    K = A @ A.T + n * np.eye(n)
    pre = NystromDiagonalPreconditioner(rng.randn(n, 3), rng.uniform(1, 3, n))
    z = rng.randn(n, 1)
    _, info = pcg(lambda V: K @ V, z, precondition=pre, tol=1e-14, maxiter=n, verify=False, record=True)
    estimate = info["start_norms"][0] * quadrature_log(info["steps"][0], info["ratios"][0])
    P = pre.multiply(np.eye(n))
    w, U = np.linalg.eigh(P)
    inverse_root = U @ np.diag(w ** -0.5) @ U.T
    values, vectors = np.linalg.eigh(inverse_root @ K @ inverse_root)
    q = vectors.T @ (inverse_root @ z[:, 0])
    assert estimate == pytest.approx(float(q @ (np.log(values) * q)), rel=1e-9)


def test_recorded_scalars_give_the_quadrature_beside_a_warm_started_column():
    """pcg(record=True) with a block whose first column starts at a guess (one product for it) and whose
    second starts at zero: the second's scalars are still its own Lanczos process (quadrature exact once it
    exhausts the space), and the first converges from its guess."""
    rng = np.random.RandomState(3)
    n = 20
    A = rng.randn(n, n)
    K = A @ A.T + n * np.eye(n)
    pre = NystromDiagonalPreconditioner(rng.randn(n, 2), rng.uniform(1, 3, n))
    b, z = rng.randn(n), rng.randn(n)
    guess = np.linalg.solve(K, b) + 1e-3 * rng.randn(n)
    X, info = pcg(lambda V: K @ V, np.c_[b, z], precondition=pre, tol=1e-14, maxiter=4 * n,
                  x0=np.c_[guess, np.zeros(n)], verify=False, record=True)
    np.testing.assert_allclose(K @ X, np.c_[b, z], atol=1e-10 * np.abs(K).max())
    assert info["iterations"] == 1 + info["column_iterations"].max()  # the guess's product counted
    assert len(info["ratios"][1]) == len(info["steps"][1]) - 1  # converged: its last ratio never formed
    w, U = np.linalg.eigh(pre.multiply(np.eye(n)))
    inverse_root = U @ np.diag(w ** -0.5) @ U.T
    values, vectors = np.linalg.eigh(inverse_root @ K @ inverse_root)
    q = vectors.T @ (inverse_root @ z)
    estimate = info["start_norms"][1] * quadrature_log(info["steps"][1], info["ratios"][1])
    assert estimate == pytest.approx(float(q @ (np.log(values) * q)), rel=1e-9)


def test_cg_reports_a_matrix_that_is_not_positive_definite():
    K = np.diag([1.0, -1.0, 2.0])
    # recording Lanczos's scalars (the likelihood's quadrature): CG stops at the first such direction
    _, info = pcg(lambda V: K @ V, np.ones((3, 1)), tol=1e-12, maxiter=10, verify=False, record=True)
    assert info["indefinite"] is not None and info["indefinite"] <= 0 and not info["converged"]
    # a plain solve goes on (the symmetric system's iterates, judged by the true residual) and says it met one
    X, info = pcg(lambda V: K @ V, np.ones((3, 1)), tol=1e-12, maxiter=10)
    assert info["converged"] and info["residuals_are_true"] and info["indefinite"] <= 0
    np.testing.assert_allclose(X[:, 0], [1.0, -1.0, 0.5], rtol=1e-12)


@pytest.mark.parametrize("kobj", KERNELS)
def test_likelihood_and_gradient_within_their_standard_errors(kobj):
    """Value: within 4 of its reported standard errors (SLQ's spread over the probes). Gradient: each entry
    within 4 standard errors of Hutchinson's estimator, computed from the dense matrices for the probes' law
    (random signs ξ, z = Mξ: var ξᵀAξ = ½ Σ_{i≠k} (A_ik + A_ki)² with A = M⁻¹ ∂K_j K̂⁻¹ M)."""
    X, y = data(300)
    noise = 1e-6
    p = 24
    kernel = kernels.make(kobj, n_features=0)
    solver = IterativeSolver(LOCAL.samples(X), y[:, None], noise,
                                      IterativeSettings(probes=p, tol=1e-10, rank=20), memory_limit=2**30,
                                      random_state=3)
    value, gradient, error = likelihood(solver, kernel, True)
    K = dense(kobj, X, noise)
    ref_value, ref_gradient, _ = exact_likelihood(kernel, X, y, noise, True)
    assert abs(value - ref_value) <= 4 * error
    pre = build_preconditioner(kernel, LOCAL.samples(X), noise, 20, seed=solver.seed)
    M = root_of(pre)
    M_inv = np.linalg.inv(M)
    K_inv = np.linalg.inv(K)
    _, dK = kobj.clone_with_theta(kobj.theta)(X, eval_gradient=True)
    for j in range(dK.shape[2]):
        A = M_inv @ dK[:, :, j] @ K_inv @ M
        S = A + A.T
        np.fill_diagonal(S, 0.0)
        stderr = 0.5 * np.sqrt(0.5 * (S ** 2).sum() / p)  # the gradient carries ½ of the trace
        assert abs(gradient[j] - ref_gradient[j]) <= 4 * stderr + 1e-8 * abs(ref_gradient[j]), j


def test_the_estimate_is_a_function_of_theta_alone():
    """The same θ evaluated again, after another θ, gives the same value and gradient to the last digit: the
    targets' columns start from zero (no warm start) and the preconditioner keeps its pivots (drawn once), so
    L-BFGS-B's line searches see one smooth surrogate. The pivots held at another θ give the preconditioner
    on them (F_S lower triangular, FFᵀ = K_nS K_SS⁻¹ K_Sn)."""
    X, y = data(400)
    kobj = C(2.0) * RBF(np.full(4, 0.8)) + WhiteKernel(1e-3)
    kernel = kernels.make(kobj, n_features=0)
    other = kernels.make(kobj.clone_with_theta(kobj.theta + 0.3), n_features=0)
    solver = IterativeSolver(LOCAL.samples(X), y[:, None], 1e-6, IterativeSettings(probes=4, rank=40),
                             memory_limit=2**30, random_state=0)
    first = likelihood(solver, kernel, True)
    pivots = solver.pivots.copy()
    likelihood(solver, other, True)
    second = likelihood(solver, kernel, True)
    assert second[0] == first[0] and np.array_equal(second[1], first[1])
    assert np.array_equal(solver.pivots, pivots) and solver.info()["pivot_draws"] == 1
    pre = build_preconditioner(other, LOCAL.samples(X), 1e-6, 40, seed=0, pivots=pivots)
    assert np.array_equal(pre.pivots, pivots) and np.allclose(np.triu(pre.F[pivots], 1), 0.0)
    K = kobj.clone_with_theta(kobj.theta + 0.3).k1(X)
    Q = K[:, pivots] @ np.linalg.solve(K[np.ix_(pivots, pivots)], K[pivots])
    np.testing.assert_allclose(pre.F @ pre.F.T, Q, atol=1e-8 * np.abs(K).max())


# ------------------------------------------------------------------------------------------ estimator

def split(n, seed=0):
    X, y = data(n + 200, seed=seed)
    return X[:n], y[:n], X[n:]


@pytest.mark.parametrize("kobj", KERNELS)
def test_cg_fit_agrees_with_the_cholesky_fit(kobj):
    X, y, Xt = split(400)
    ref = GaussianProcessRegressor(kobj, solver="cholesky").fit(X, y)
    fit = GaussianProcessRegressor(kobj, solver="cg", random_state=0).fit(X, y)
    assert fit.solver_info_["solver"] == "cg" and not hasattr(fit, "L_")
    m0, s0 = ref.predict(Xt, return_std=True)
    m1, s1 = fit.predict(Xt, return_std=True)
    assert np.sqrt(np.mean((m1 - m0) ** 2)) <= 0.01 * np.std(m0)
    np.testing.assert_allclose(s1, s0, rtol=0.05)
    error = fit.solver_info_["standard_error"]
    assert abs(fit.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) <= \
        max(4 * error, 1e-3 * abs(ref.log_marginal_likelihood_value_))
    info = fit.solver_info_
    assert info["products"] > 0 and info["final_residuals"].max() <= 1e-6
    assert set(info["stages"]) >= {"preconditioner", "cg", "gradient", "final_solve"}


def test_cg_covariance_and_samples():
    X, y, Xt = split(200)
    kobj = KERNELS[0]
    ref = GaussianProcessRegressor(kobj, optimizer=None, solver="cholesky").fit(X, y)
    fit = GaussianProcessRegressor(kobj, optimizer=None, solver="cg").fit(X, y)
    np.testing.assert_allclose(fit.predict(Xt[:20], return_cov=True)[1], ref.predict(Xt[:20], return_cov=True)[1],
                               atol=1e-6)
    assert fit.sample_y(Xt[:5], 3).shape == (5, 3)


@pytest.mark.parametrize("blas_threads", [1, 2])
def test_variances_where_the_amplitude_dwarfs_them(blas_threads):
    """k** − k*ᵀK̂⁻¹k* with k** 10⁸ times the variance: CG's k*ᵀv at final_tol 1e-6 put the standard deviations
    2.0% off here (1.3% from the covariance's diagonal); vᵀ(k* + r), second order in the residual, left 0.13%
    at the columns CG stopped just under final_tol (on one BLAS thread: points 27 and 77), 1e-7 at the others;
    CG taken further where rᵀP⁻¹r says that error is large against the variance: 1.4e-7 at every point."""
    from threadpoolctl import threadpool_limits

    X, y, Xt = split(800)
    kobj = C(1e4) * RBF(np.full(4, 3.0)) + WhiteKernel(1e-4)
    with threadpool_limits(blas_threads, user_api="blas"):
        ref = GaussianProcessRegressor(kobj, optimizer=None, solver="cholesky").fit(X, y)
        fit = GaussianProcessRegressor(kobj, optimizer=None, solver="cg", random_state=0).fit(X, y)
        std = ref.predict(Xt, return_std=True)[1]
        np.testing.assert_allclose(fit.predict(Xt, return_std=True)[1], std, rtol=1e-5)
        cov = fit.predict(Xt[:30], return_cov=True)[1]
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), std[:30], rtol=1e-5)
    np.testing.assert_allclose(cov, ref.predict(Xt[:30], return_cov=True)[1], atol=1e-3 * std.min() ** 2)


def test_variances_in_chunks_under_a_small_limit(monkeypatch):
    """Where the limit leaves room for a few test points at a time (the kernel recomputed: its packed triangle
    does not fit beside them), the variances come chunk by chunk and equal the Cholesky fit's."""
    from fastkpca.operators.storage import PLAN_SLACK_BYTES
    from fastkpca.solvers.gaussian_process import iterative as gpcg

    X, y, Xt = split(600)
    Xt = Xt[:70]  # three chunks of the variances under the limit below (26, 26, 18)
    kobj = KERNELS[0]
    std = GaussianProcessRegressor(kobj, optimizer=None, solver="cholesky").fit(X, y).predict(Xt, return_std=True)[1]
    fit = GaussianProcessRegressor(kobj, optimizer=None, solver="cg", random_state=0,
                                   memory_limit=PLAN_SLACK_BYTES + 4 * 2**20).fit(X, y)
    widths, plans, solve, prediction_plan = [], [], gpcg.pcg, gpcg.IterativeSolver._prediction_plan
    monkeypatch.setattr(gpcg, "pcg", lambda matmat, B, **kw: (widths.append(B.shape[1]), solve(matmat, B, **kw))[1])
    monkeypatch.setattr(gpcg.IterativeSolver, "_prediction_plan",
                        lambda self, *a: (plans.append(prediction_plan(self, *a)), plans[-1])[1])
    np.testing.assert_allclose(fit.predict(Xt, return_std=True)[1], std, rtol=1e-5)
    assert len(widths) > 2 and sum(widths) == len(Xt) and len(set(widths[:-1])) == 1, widths
    assert plans[0][1].storage != "packed"
    # the default limit holds the 600-sample kernel whole, every test point in one solve
    fit = GaussianProcessRegressor(kobj, optimizer=None, solver="cg", random_state=0).fit(X, y)
    widths.clear(), plans.clear()
    fit.predict(Xt, return_std=True)
    assert widths == [len(Xt)] and plans[0][1].storage in ("packed", "full")


def test_a_small_limit_counts_every_kernel_terms_copies():
    """Two radial terms keep two scaled copies of the samples: the fit's rank and the predictions' chunk are
    planned with both counted (with one counted, the plan found no room left and raised MemoryError)."""
    from fastkpca.operators.storage import PLAN_SLACK_BYTES

    X, y, Xt = split(600)
    Xt = Xt[:70]  # three chunks of the variances under the limit below (25, 25, 20)
    kobj = C(1.0) * RBF(np.full(4, 1.5)) + C(0.5) * RBF(0.7) + WhiteKernel(0.05)
    std = GaussianProcessRegressor(kobj, optimizer=None, solver="cholesky").fit(X, y).predict(Xt, return_std=True)[1]
    fit = GaussianProcessRegressor(kobj, optimizer=None, solver="cg", random_state=0,
                                   memory_limit=PLAN_SLACK_BYTES + 4 * 2**20).fit(X, y)
    np.testing.assert_allclose(fit.predict(Xt, return_std=True)[1], std, rtol=1e-5)


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="resets and reads the peak RSS in /proc")
def test_predictions_stay_within_the_memory_limit():
    """Peak RSS from before fit to after predict(return_std=True) grows by less than memory_limit: the
    variances' chunks are sized with pcg's blocks and the kernel pass's working memory counted beside the
    stored kernel and the fitted preconditioner (they grew 313 MiB under this 286 MiB limit when a chunk was
    sized as eight n-vectors a column within a quarter of it). final_tol=1e-2: CG holds the same blocks whatever
    its iteration count, which sets only the time (12 iterations a chunk here, 35 at the default 1e-6)."""
    import subprocess
    import textwrap

    limit = 300 * 10**6
    code = f"""
        import resource, numpy as np
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
        from fastkpca import GaussianProcessRegressor
        rng = np.random.default_rng(0)
        X = rng.standard_normal((4000, 8))
        y = np.sin(X).sum(1) + 0.1 * rng.standard_normal(4000)
        Xt = rng.standard_normal((150, 8))  # two chunks: 138 points, then 12
        kernel = C(1.0) * RBF(np.ones(8))
        GaussianProcessRegressor(kernel, alpha=0.1, optimizer=None, solver="cg").fit(X[:300], y[:300]).predict(
            Xt[:10], return_std=True)
        with open("/proc/self/clear_refs", "w") as f:  # the peak (VmHWM) from here on
            f.write("5")
        with open("/proc/self/statm") as f:
            before = int(f.read().split()[1]) * resource.getpagesize()
        model = GaussianProcessRegressor(kernel, alpha=0.1, optimizer=None, solver="cg", random_state=0,
                                         memory_limit={limit}, final_tol=1e-2).fit(X, y)
        model.predict(Xt, return_std=True)
        with open("/proc/self/status") as f:
            peak = int(next(line for line in f if line.startswith("VmHWM:")).split()[1]) * 1024
        print(peak - before)
        """
    threads = {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"}  # BLAS's per-thread buffers: as on 2 cores
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         env={**os.environ, **threads})
    assert out.returncode == 0, out.stderr
    growth = int(out.stdout)
    assert growth <= limit, f"fit and predict grew peak RSS by {growth / 2**20:.0f} MiB, over {limit / 2**20:.0f} MiB"


def test_multi_output_and_per_sample_noise():
    X, y, Xt = split(200)
    Y = np.column_stack([y, -2 * y + 1])
    alpha = np.linspace(1e-3, 1e-2, 200)
    kobj = KERNELS[0]
    ref = GaussianProcessRegressor(kobj, alpha=alpha, optimizer=None, solver="cholesky").fit(X, Y)
    fit = GaussianProcessRegressor(kobj, alpha=alpha, optimizer=None, solver="cg").fit(X, Y)
    np.testing.assert_allclose(fit.predict(Xt), ref.predict(Xt), atol=1e-5)
    np.testing.assert_allclose(fit.alpha_, ref.alpha_, rtol=1e-4, atol=1e-6 * np.abs(ref.alpha_).max())


def test_a_kernel_evaluated_in_python_works_with_cg():
    X, y, Xt = split(150)
    kobj = DotProduct(1.0) + WhiteKernel(0.5)
    ref = GaussianProcessRegressor(kobj, solver="cholesky").fit(X, y)
    # (theta_tol=None: σ₀ of DotProduct is weakly determined here, and 512 probes leave its error about 0.017)
    fit = GaussianProcessRegressor(kobj, solver=CG(n_probes=32, theta_tol=None), random_state=0).fit(X, y)
    assert fit.solver_info_["kernel"] == "python"
    np.testing.assert_allclose(fit.predict(Xt), ref.predict(Xt), rtol=0.02, atol=0.02 * np.std(y))


def test_reproducible_with_random_state():
    X, y, _ = split(150)
    a = GaussianProcessRegressor(KERNELS[0], solver="cg", random_state=5).fit(X, y)
    b = GaussianProcessRegressor(KERNELS[0], solver="cg", random_state=5).fit(X, y)
    c = GaussianProcessRegressor(KERNELS[0], solver="cg", random_state=6).fit(X, y)
    np.testing.assert_array_equal(a.kernel_.theta, b.kernel_.theta)
    assert a.log_marginal_likelihood_value_ == b.log_marginal_likelihood_value_
    assert a.log_marginal_likelihood_value_ != c.log_marginal_likelihood_value_


@pytest.mark.filterwarnings("ignore:The optimal value found:sklearn.exceptions.ConvergenceWarning")
def test_cg_optimises_the_likelihood_per_sample(monkeypatch):
    """L-BFGS-B's first trial point is θ − ∇f on the bounds: per sample a step of the gradient's size, where the
    sum over n samples reaches a corner of the box (as the Cholesky solver's scikit-learn optimizer does)."""
    X, y, _ = split(400)
    kobj = C(1.0) * RBF(np.ones(4)) + WhiteKernel(0.1)
    seen, fits = {}, {}
    for solver in ("cholesky", "cg"):
        thetas = seen[solver] = []
        original = GaussianProcessRegressor._likelihood  # the fit's evaluations

        def logged(self, theta, eval_gradient, *, refine, thetas=thetas, original=original):
            thetas.append(np.array(theta))
            return original(self, theta, eval_gradient, refine=refine)

        monkeypatch.setattr(GaussianProcessRegressor, "_likelihood", logged)
        fits[solver] = GaussianProcessRegressor(kobj, solver=solver, random_state=0).fit(X, y)
        monkeypatch.undo()
        assert fits[solver].n_iter_ == len(thetas)
    bounds = kobj.bounds
    at_bound = lambda theta: np.isclose(theta, bounds[:, 0]) | np.isclose(theta, bounds[:, 1])  # noqa: E731
    assert at_bound(seen["cholesky"][1]).all()  # the summed likelihood's first step (scikit-learn's)
    step = seen["cg"][1] - seen["cg"][0]
    assert not at_bound(seen["cg"][1]).any() and 0 < np.abs(step).max() < 5
    # and both reach the same optimum
    ref, fit = fits["cholesky"], fits["cg"]
    assert abs(fit.log_marginal_likelihood_value_ - ref.log_marginal_likelihood_value_) <= \
        max(4 * fit.solver_info_["standard_error"], 1e-3 * abs(ref.log_marginal_likelihood_value_))


def test_auto_chooses_by_memory():
    X, y, _ = split(100)
    assert GaussianProcessRegressor(KERNELS[0]).fit(X, y).solver_info_["solver"] == "cholesky"
    X, y, _ = split(3300)
    # 3300² · 8 = 87 MB: a limit below it gives cg (whose plan keeps 64 MiB of slack)
    fit = GaussianProcessRegressor(KERNELS[0], optimizer=None, memory_limit=86_000_000).fit(X, y)
    assert fit.solver_info_["solver"] == "cg"


def test_a_fit_without_an_optimiser_is_priced_as_such(monkeypatch):
    """Without an optimiser a fit evaluates the likelihood once, without its gradient, and solves: the model prices
    the exact fit's one factor (no inverse) and cg's evaluation and final solve (choice.gp_cg_fit_seconds), so the
    prediction is of the fit it chooses for; with one, an evaluation with the gradient."""
    from fastkpca.solvers import choice as model

    monkeypatch.setattr(model, "machine", lambda: model.Machine(4e10, 2, 2, 4e10, 0.0))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(300)
    priced = {}
    for optimizer in (None, "fmin_l_bfgs_b"):
        fit = GaussianProcessRegressor(RBF(1.0) + WhiteKernel(0.1), optimizer=optimizer, random_state=0).fit(X, y)
        priced[optimizer] = {name: c["seconds"] for name, c in fit.solver_info_["choice"]["candidates"].items()}
    rank, columns = 300, 1 + IterativeSettings().probes
    assert priced[None]["cholesky"] == pytest.approx(model.gp_exact_passes_seconds(300, 4, gradient=False)
                                                     + model.cholesky_seconds(300))
    assert priced[None]["cg"] == pytest.approx(model.gp_cg_fit_seconds(300, 4, columns, 1, rank))
    assert priced["fmin_l_bfgs_b"]["cholesky"] == pytest.approx(model.gp_exact_passes_seconds(300, 4)
                                                                + model.cholesky_seconds(300, inverse=True))
    # the gradient's passes over the n × n array are priced beside the matrix's
    assert model.gp_exact_passes_seconds(300, 4) > 2 * model.gp_exact_passes_seconds(300, 4, gradient=False)
    evaluation = model.gp_cg_serial_seconds(300, rank) + model.GP_CG_OVERHEAD * (
        (model.GP_PRODUCTS_PER_EVALUATION + 1) * model.kernel_pass_seconds(300, 300, 4, columns)
        + model.kernel_pass_seconds(300, rank, 4, 0) + 10 * 300 * rank * rank / model.kernel_rate())
    assert priced["fmin_l_bfgs_b"]["cg"] == pytest.approx(evaluation)


def test_auto_chooses_by_cost_within_memory(monkeypatch):
    """The cost model (solvers/choice.py): the exact evaluation's n³ against cg's products, whatever the
    machine's rate (it divides both, beyond cg's fixed seconds): the exact solver at 5,000 samples, cg at 40,000
    where its 12.8 GB array fits; every candidate's predicted seconds and bytes recorded."""
    from fastkpca.solvers import choice as model

    def seconds(n, rate):
        monkeypatch.setattr(model, "machine", lambda: model.Machine(rate, 1, 1, rate, 0.0))
        picked = model.gaussian_process_regression("auto", n=n, d=8, columns=17, rank=1024, exact_possible=True,
                                                   memory_limit=10**11)
        return {c.name: c.seconds for c in picked.candidates}, picked.picked

    for n, chosen in ((5000, "cholesky"), (40_000, "cg")):
        (slow, picked_slow), (fast, picked_fast) = seconds(n, 1e9), seconds(n, 1e11)
        assert picked_slow == picked_fast == chosen
        assert slow["cholesky"] / (slow["cg"] - model.GP_CG_SECONDS) == pytest.approx(
            fast["cholesky"] / (fast["cg"] - model.GP_CG_SECONDS))  # cg's seconds that do not depend on the rate
    monkeypatch.undo()
    settings = IterativeSettings()
    for n, limit, chosen in ((5000, 10**9, "cholesky"), (40_000, 20 * 10**9, "cg"), (40_000, 10**10, "cg")):
        solver, choice = gp.make_solver("auto", LOCAL.samples(np.zeros((n, 8))), np.zeros((n, 1)), 0.1, settings,
                                        memory_limit=limit)
        assert solver.name == chosen and choice["requested"] == "auto" and choice["picked"] == chosen
        assert set(choice["candidates"]) == {"cholesky", "cg"}
        assert choice["candidates"]["cholesky"]["fits"] == (n * n * 8 <= limit)
        assert all(c["seconds"] > 0 and c["bytes"] > 0 for c in choice["candidates"].values())


def test_a_cg_fit_starts_from_an_exact_fit_on_a_subset():
    """solver="cg" with the default optimizer: L-BFGS-B starts from an exact fit on ``subset_start`` samples
    drawn from random_state (solver_info_["start"] reports it), the same every time; none where the subset
    would be all the samples, with subset_start=0, or with the exact solver. (From the kernel's θ the cg fit
    takes 45 evaluations here, from the subset's 14.)"""
    X, y, _ = split(500)
    kobj = C(1.0) * RBF(np.ones(4)) + WhiteKernel(0.1)
    fits = [GaussianProcessRegressor(kobj, solver=CG(subset_start=250, theta_tol=None), random_state=0).fit(X, y)
            for _ in range(2)]
    start = fits[0].solver_info_["start"]
    assert start["samples"] == 250 and start["evaluations"] > 1 and start["seconds"] > 0
    assert not np.allclose(start["theta"], kobj.theta, atol=0.1)  # it moved from the kernel's θ
    assert fits[1].solver_info_["start"]["theta"] == start["theta"]
    np.testing.assert_array_equal(fits[0].kernel_.theta, fits[1].kernel_.theta)
    assert fits[0].solver_info_["evaluations"] < 40
    single = C(1.0) * RBF(1.0) + WhiteKernel(0.1)  # (one length scale: fewer evaluations)
    for solver in (CG(subset_start=0, theta_tol=None), CG(subset_start=100, theta_tol=None), "cholesky"):
        fit = GaussianProcessRegressor(single, random_state=0, solver=solver).fit(X[:100], y[:100])
        assert fit.solver_info_["start"] is None, solver


def test_preconditioner_rank_counts_the_float64_build():
    """The default rank fits half the limit beyond the plan's slack at 8 bytes an entry (the float64 build),
    12 with a float32 copy beside it; a rank asked for is kept (at most n − 1)."""
    from fastkpca.operators.storage import PLAN_SLACK_BYTES

    limit = 2 * 10**9
    assert preconditioner_rank(None, 100_000, 8, limit) == 1024
    assert preconditioner_rank(None, 100_000, 4, limit) == (limit - PLAN_SLACK_BYTES) // 2 // (12 * 100_000)
    assert preconditioner_rank(None, 100_000, 8, 10**9) == (10**9 - PLAN_SLACK_BYTES) // 2 // (8 * 100_000)
    assert preconditioner_rank(None, 500, 8, limit) == 499
    assert preconditioner_rank(3000, 100_000, 8, 10**8) == 3000
    with pytest.raises(MemoryError, match="conjugate gradients"):  # and the rank asked for must fit the limit
        IterativeSolver(LOCAL.samples(np.zeros((100_000, 2))), np.zeros((100_000, 1)), 0.1,
                                 IterativeSettings(rank=3000), memory_limit=10**9)


def test_rank_search_follows_the_work_model():
    """Many iterations at a large n: the rank doubles while the model's work falls, a move whose observed work
    rises is undone and the rank frozen; few iterations at a small n: it halves; a rank asked for never moves."""
    search = RankSearch(1024, 8192, n=100_000, d=8, columns=17)
    assert search.observe(40) == 2048  # 40 products of n²·70 flops against 4·n·r² more for P
    assert search.observe(30) == 4096  # still falling
    assert search.observe(40) == 2048 and search.frozen  # rose: undone
    assert search.observe(5) == 2048
    assert [rank for rank, _ in search.history] == [1024, 2048, 4096, 2048]
    small = RankSearch(1024, 1999, n=2000, d=4, columns=5)
    assert small.observe(3) == 512  # P of rank 1024 costs more than 30 of its iterations
    assert small.observe(4) == 256
    assert small.work(256, 4) < small.work(512, 3)
    fixed = RankSearch(300, 300, n=100_000, d=8, columns=17, fixed=True)
    assert fixed.observe(500) == 300 and fixed.observe(1) == 300
    held = RankSearch(1024, 8192, n=100_000, d=8, columns=17)
    assert held.observe(40, held=0.6) == 1024 and held.frozen  # most of the kernel held in memory: no search
    capped = RankSearch(1024, 1500, n=100_000, d=8, columns=17)
    assert capped.observe(40) == 1500 and capped.observe(35) == 1500  # the bound, then nothing to try
    assert capped.frozen
    many = RankSearch(64, 1 << 20, n=10**7, d=8, columns=17)
    for _ in range(SEARCH_EVALUATIONS + 2):
        many.observe(1000 - len(many.history))
    assert many.frozen and len({rank for rank, _ in many.history}) == SEARCH_EVALUATIONS


def test_the_rank_search_runs_when_products_recompute_the_kernel():
    """Products that evaluate the kernel (matrix-free) and few iterations at 1,500 samples: the rank halves
    while the work falls, every value stays within its standard errors of the exact one, and the final solve
    freezes the rank; a plan holding the kernel keeps it."""
    X, y = data(1500)
    kernel = kernels.make(KERNELS[0], n_features=0)
    ref, _, _ = exact_likelihood(kernel, X, y, 1e-6, False)

    def solver(storage):
        return IterativeSolver(LOCAL.samples(X), y[:, None], 1e-6, IterativeSettings(storage=storage),
                                        memory_limit=2**30, random_state=0)

    free = solver("matrix_free")
    for _ in range(3):
        value, _, error = likelihood(free, kernel, False)
        assert abs(value - ref) <= 4 * error
    assert free.ranks.held == 0.0
    ranks = [rank for rank, _ in free.ranks.history]
    assert ranks[:2] == [1024, 512] and free.rank < 512
    alpha = free.solve(kernel, free.Y)
    assert free.ranks.frozen and free.preconditioner.rank == free.rank
    assert np.linalg.norm(dense(KERNELS[0], X, 1e-6) @ alpha[:, 0] - y) <= 1.01e-6 * np.linalg.norm(y)
    assert free.info()["preconditioner"]["ranks"] == ranks + [free.rank] * (len(free.ranks.history) - len(ranks))
    kept = solver("auto")
    for _ in range(2):
        likelihood(kept, kernel, False)
    assert kept.ranks.held == 1.0 and [rank for rank, _ in kept.ranks.history] == [1024, 1024]


def test_solves_that_stop_short_say_so():
    """max_iter too small for final_tol: the final solve and the predictive variances warn, naming the
    residual reached; solver_info_ reports the final residuals."""
    from fastkpca.exceptions import ConvergenceWarning

    X, y, Xt = split(300)
    est = GaussianProcessRegressor(C(1.0) * RBF(1.0) + WhiteKernel(1e-4), solver=CG(preconditioner_rank=0, max_iter=3),
                                   optimizer=None, random_state=0)
    with pytest.warns(ConvergenceWarning, match="final conjugate gradients stopped at relative residual"):
        est.fit(X, y)
    assert est.solver_info_["final_residuals"].max() > est.solver.final_tol
    with pytest.warns(ConvergenceWarning, match="predictive variances' conjugate gradients stopped"):
        est.predict(Xt[:5], return_std=True)
    with pytest.warns(ConvergenceWarning, match="posterior covariance's conjugate gradients stopped"):
        est.predict(Xt[:5], return_cov=True)


@pytest.mark.parametrize("name, value, error", [
    ("solver", "lu", ValueError), ("n_probes", 1, ValueError), ("n_probes", 2.5, TypeError), ("tol", 0.0, ValueError),
    ("final_tol", -1.0, ValueError), ("preconditioner_rank", -1, ValueError), ("max_iter", 0, ValueError),
    ("preconditioner_dtype", "float16", ValueError), ("subset_start", -1, ValueError),
    ("subset_start", 1.5, TypeError), ("theta_tol", 0.0, ValueError), ("theta_tol", "0.1", TypeError)])
def test_bad_input_names_the_argument(name, value, error):
    X, y, _ = split(20)
    with pytest.raises(error, match=name):
        GaussianProcessRegressor(solver=value if name == "solver" else CG(**{name: value})).fit(X, y)


@pytest.fixture
def sigint_raises():
    """SIGINT as Python's default handler makes it (KeyboardInterrupt): a process started in the background by
    a non-interactive shell inherits SIGINT ignored, and _thread.interrupt_main() then does nothing at all."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.threads  # times the latency of an interrupt
@pytest.mark.parametrize("delay", [0.3, 1.2, 2.5])
def test_an_interrupt_stops_a_long_fit(sigint_raises, delay):
    """Wherever it lands (the delays sweep the preconditioner's build, CG, the gradient's passes and the
    control variate's r × r algebra at rank 1024), Ctrl-C stops a cg fit within 2 s of its request (the
    target, 1 s on an idle machine, is the suite's bound less its load)."""
    X, y, _ = split(3000)
    fired = []
    timer = threading.Timer(delay, lambda: (fired.append(time.perf_counter()), _thread.interrupt_main()))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            GaussianProcessRegressor(C(1.0) * RBF(np.ones(4)) + WhiteKernel(1e-3), solver=CG(tol=1e-10),
                                     n_restarts_optimizer=5, random_state=0).fit(X, y)
    finally:
        timer.cancel()
    assert fired and time.perf_counter() - fired[0] < 2.0
    # the estimator is usable afterwards
    after = GaussianProcessRegressor(KERNELS[0], solver="cg", optimizer=None).fit(X[:100], y[:100])
    assert after.predict(X[:3]).shape == (3,)


def _radial_reference(kind: str, r2: np.ndarray):
    """κ(r) and G(r) from r² (gp_gradient.hpp's table), in NumPy."""
    r = np.sqrt(r2)
    if kind == "rbf":
        k = np.exp(-0.5 * r2)
        return k, k
    if kind == "matern12":
        e = np.exp(-r)
        return e, np.divide(e, r, out=np.zeros_like(r), where=r > 0)
    if kind == "matern32":
        s = np.sqrt(3.0) * r
        return (1 + s) * np.exp(-s), 3 * np.exp(-s)
    s = np.sqrt(5.0) * r
    return (1 + s + s * s / 3) * np.exp(-s), 5 / 3 * (1 + s) * np.exp(-s)


@pytest.mark.parametrize("kind", ["rbf", "matern12", "matern32", "matern52"])
@pytest.mark.parametrize("threads", [1, 2])
def test_gradient_passes_against_numpy(kind, threads):
    """The tile passes (dense W and W = ½(ABᵀ + BAᵀ)) against the sums written out in NumPy, on 301 samples:
    two tiles, a partial one, rows whose stretches are not whole SIMD vectors."""
    from fastkpca import _native

    rng = np.random.default_rng(4)
    n, d, m = 301, 3, 5
    x = rng.standard_normal((n, d))
    A, B = rng.standard_normal((n, m)), rng.standard_normal((n, m))
    W = 0.5 * (A @ B.T + B @ A.T)
    r2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    kappa, G = _radial_reference(kind, r2)
    expected = ((W * kappa).sum(), (W * G * r2).sum(), (W * G) @ np.column_stack([np.ones(n), x]))
    for got in (_native.core.gp_gradient_pass(x, np.ascontiguousarray(W), kind, True, threads),
                _native.core.gp_gradient_pass_low_rank(x, A, B, kind, True, threads)):
        for k in (0, 1):
            assert got[k] == pytest.approx(expected[k], rel=1e-11, abs=1e-11 * np.abs(W).sum())
        np.testing.assert_allclose(got[2], expected[2], rtol=1e-11, atol=1e-11 * np.abs(expected[2]).max())


@pytest.mark.parametrize("kind", ["rbf", "matern12", "matern32", "matern52"])
def test_cross_gradient_pass_against_numpy(kind):
    """The pass over a rectangular block given whole (301 × 77: partial tiles both ways) against NumPy."""
    from fastkpca import _native

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((301, 3)), rng.standard_normal((77, 3))
    M = rng.standard_normal((301, 77))
    r2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    kappa, G = _radial_reference(kind, r2)
    MG = M * G
    expected = ((M * kappa).sum(), (MG * r2).sum(),
                np.vstack([MG @ np.column_stack([np.ones(77), y]), MG.T @ np.column_stack([np.ones(301), x])]))
    got = _native.core.gp_gradient_cross_pass(x, y, M, kind, True)
    for k in (0, 1):
        assert got[k] == pytest.approx(expected[k], rel=1e-11, abs=1e-11 * np.abs(M).sum())
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-11, atol=1e-11 * np.abs(expected[2]).max())
    with pytest.raises(ValueError, match="w must be"):
        _native.core.gp_gradient_cross_pass(x, y, M[:, :76].copy(), kind, False)


CROSS_FORMS = [C(1.3) * RBF([1.5, 0.7, 2.0]) + WhiteKernel(0.05), C(2.0) * Matern(1.2, nu=2.5) + WhiteKernel(0.1),
               C(1.0) * Matern([1.0, 2.0, 0.5], nu=0.5) + C(0.3) * RBF(0.9) + WhiteKernel(0.1),
               C(0.7) * Matern([1.0, 2.0, 0.5], nu=1.5)]


@pytest.mark.parametrize("kobj", CROSS_FORMS)
def test_cross_and_diagonal_gradient_traces_against_finite_differences(kobj):
    """tr(Mᵀ ∂K(X, Y)/∂θ_j) and Σ δ_k ∂K̂_kk/∂θ_j against central differences of the kernel's own blocks
    (the cross block without white noise, the diagonal with it)."""
    rng = np.random.default_rng(0)
    X, Y, M = rng.standard_normal((300, 3)), rng.standard_normal((70, 3)), rng.standard_normal((300, 70))
    delta = rng.standard_normal(300)
    k = kernels.make(kobj, n_features=0)
    cross, diagonal = k.cross_gradient_traces(X, Y, M), k.diagonal_gradient_traces(X, delta)
    h = 1e-6
    for j in range(k.theta.shape[0]):
        step = np.zeros_like(k.theta)
        step[j] = h
        up, down = k.with_theta(k.theta + step), k.with_theta(k.theta - step)
        expected = ((up.cross(X, Y) - down.cross(X, Y)) * M).sum() / (2 * h)
        assert cross[j] == pytest.approx(expected, rel=1e-7, abs=1e-7 * np.abs(M).sum()), j
        expected = ((np.diag(up.cross(X)) - np.diag(down.cross(X))) * delta).sum() / (2 * h)
        assert diagonal[j] == pytest.approx(expected, rel=1e-7, abs=1e-7 * np.abs(delta).sum()), j


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rank, dtype", [(25, np.float64), (25, np.float32), (0, np.float64)])
def test_control_variate_against_dense(rank, dtype, threads, monkeypatch):
    """tr(Ŵ ∂P̃_j), Ŵ = P⁻¹ − ΩΩᵀ/p, against the dense matrices: P̃(θ) = Q + diag(K̂ − Q) with
    Q = K_nS K_SS⁻¹ K_Sn at the preconditioner's pivots S, differentiated by central differences. On one thread
    the chunks' products are BLAS's; on two, the core's (its native factor products, all three of them)."""
    from fastkpca import _native
    from fastkpca.solvers.gaussian_process.control_variate import control_variate_traces

    rng = np.random.default_rng(1)
    n, p, noise = 250, 7, 1e-3
    X = rng.standard_normal((n, 3))
    kobj = C(1.3) * Matern([1.5, 0.7, 2.0], nu=2.5) + WhiteKernel(0.05)
    k = kernels.make(kobj, n_features=0, n_jobs=threads)
    pre = build_preconditioner(k, LOCAL.samples(X), noise, rank, seed=5, dtype=dtype)
    S = pre.pivots
    assert S.shape == (rank,)
    Omega = rng.standard_normal((n, p))
    seen = []
    for name in ("factor_product_into", "factor_t_product_into"):
        native = getattr(_native.core, name)

        def recording(*args, native=native, name=name):
            seen.append((name, args[-1]))
            return native(*args)

        monkeypatch.setattr(_native.core, name, recording)
    got = control_variate_traces(k, LOCAL.samples(X), pre, Omega)
    # Fᵀ Ω on the team at any count; the chunk's F C⁻¹, T F_S⁻¹ and Fᵀ T only on a team of two
    assert len(seen) == 1 + (3 if threads > 1 and rank else 0), seen
    assert {t for _, t in seen[1:]} <= {threads}

    def p_tilde(kk):
        K0, K_hat = kk.cross(X, X), kk.cross(X) + noise * np.eye(n)
        Q = K0[:, S] @ np.linalg.solve(K0[np.ix_(S, S)], K0[S, :]) if rank else np.zeros((n, n))
        return Q + np.diag(np.diag(K_hat) - np.diag(Q))

    if dtype == np.float64:  # the preconditioner is P̃ itself (a float32 factor rounds it)
        np.testing.assert_allclose(pre.multiply(np.eye(n)), p_tilde(k), rtol=0, atol=1e-12)
    W_hat = np.linalg.inv(pre.multiply(np.eye(n))) - Omega @ Omega.T / p
    h = 1e-6
    expected = np.empty_like(got)
    for j in range(k.theta.shape[0]):
        step = np.zeros_like(k.theta)
        step[j] = h
        expected[j] = (W_hat * (p_tilde(k.with_theta(k.theta + step)) - p_tilde(k.with_theta(k.theta - step)))).sum() \
            / (2 * h)
    # float32: F_S⁻¹ from the rounded factor, so ∂P̃ is another matrix near P's derivative (any ∂P̃ leaves the
    # estimate unbiased: only the agreement's tolerance differs)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float64 else 1e-3,
                               atol=(1e-6 if dtype == np.float64 else 1e-3) * np.abs(expected).max())


def test_control_variate_sums_its_chunks(monkeypatch):
    """The pass over several row chunks (each adding its share of Fᵀ diag(Δ) F, upper triangle) gives the one
    chunk's traces."""
    from fastkpca.solvers.gaussian_process import control_variate as cv

    rng = np.random.default_rng(1)
    X = rng.standard_normal((250, 3))
    k = kernels.make(C(1.3) * Matern([1.5, 0.7, 2.0], nu=2.5) + WhiteKernel(0.05), n_features=0)
    pre = build_preconditioner(k, LOCAL.samples(X), 1e-3, 25, seed=5)
    Omega = rng.standard_normal((250, 7))
    whole = cv.control_variate_traces(k, LOCAL.samples(X), pre, Omega)
    monkeypatch.setattr(cv, "CONTROL_VARIATE_ROWS", 64)  # 4 chunks, the last short
    np.testing.assert_allclose(cv.control_variate_traces(k, LOCAL.samples(X), pre, Omega), whole, rtol=1e-10,
                               atol=1e-10 * np.abs(whole).max())


def test_the_control_variate_cuts_the_gradients_noise_and_keeps_it_unbiased():
    """24 probe sets (random_state) at θ where P (rank 60 of 600) captures most of K̂: with the control
    variate every gradient entry's spread over the sets is at most a quarter of Hutchinson's alone (17–36
    times smaller when this was written), and both means lie within 4 standard errors (their own spread over
    √24) of the exact gradient. (The gain is what P explains of K̂: far less with a lower rank or shorter
    length scales.)"""
    X, y = data(600)
    kobj = C(5.0) * RBF([3.0, 5.0, 10.0, 10.0]) + WhiteKernel(0.01)
    kernel = kernels.make(kobj, n_features=0)
    _, ref, _ = exact_likelihood(kernel, X, y, 1e-6, True)
    spread = {}
    for control_variate in (False, True):
        settings = IterativeSettings(probes=8, tol=1e-8, rank=60, control_variate=control_variate)
        gradients = np.array([
            likelihood(IterativeSolver(LOCAL.samples(X), y[:, None], 1e-6, settings, memory_limit=2**30,
                                       random_state=seed), kernel, True)[1]
            for seed in range(24)])
        spread[control_variate] = gradients.std(axis=0, ddof=1)
        np.testing.assert_array_less(np.abs(gradients.mean(axis=0) - ref), 4 * spread[control_variate] / np.sqrt(24))
    np.testing.assert_array_less(spread[True], 0.25 * spread[False])


def hard_data(n, seed=0):
    """Data whose kernel keeps many eigenvalues above a small noise (bench/gaussian_process.py's hard_data,
    smaller): a Matérn-5/2 random field with length scales 0.3 and 0.25 along x₀, x₁ and 4 along x₂, x₃, plus
    noise of 1% of its variance."""
    field = np.random.RandomState(7)
    omega = field.standard_normal((1000, 4)) / np.array([0.3, 0.25, 4.0, 4.0]) * np.sqrt(
        5.0 / field.chisquare(5.0, size=(1000, 1)))
    phase, weights = field.uniform(0, 2 * np.pi, 1000), field.standard_normal(1000)
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 4))
    return X, np.sqrt(2.0 / 1000) * np.cos(X @ omega.T + phase) @ weights + 0.1 * rng.standard_normal(n)


@pytest.mark.filterwarnings("ignore:The optimal value found:sklearn.exceptions.ConvergenceWarning")
def test_a_cg_fit_on_hard_data_follows_the_exact_one():
    """Short length scales on two features and a small noise, and a preconditioner of rank 64 that leaves most
    of the kernel's eigenvalues above the noise to CG (as at scale): the cg fit repeats itself exactly, every
    L-BFGS-B run converges (its ABNORMAL line-search failure is a warning, made an error here), the probes
    multiply until the optimum's move says its error is at most theta_tol/4 (theta_tol 0.1 here: 0.05 asks
    for more than 256 probes), and the fit lands near the exact one (θ within 0.08 in log space: 0.017 when
    written, settled at 128 probes; 0.081 with 16 probes and the solver's values given to L-BFGS-B, which
    ended ABNORMAL; predictions within 1% of y's spread)."""
    import warnings

    X, y = hard_data(500)
    Xt = hard_data(200, seed=1)[0]
    kobj = C(1.0) * Matern(np.ones(4), nu=2.5) + WhiteKernel(0.1)
    exact = GaussianProcessRegressor(kobj, normalize_y=True, solver="cholesky").fit(X, y)
    assert exact.kernel_.k1.k2.length_scale[:2].max() < 0.5 and exact.kernel_.k2.noise_level < 0.02
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="lbfgs failed to converge")
        warnings.filterwarnings("error", message="Gaussian process: the cg estimate's optimum is not settled")
        fits = [GaussianProcessRegressor(kobj, normalize_y=True, solver=CG(preconditioner_rank=64, theta_tol=0.1),
                                         random_state=0).fit(X, y) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].kernel_.theta, fits[1].kernel_.theta)
    settle = fits[0].solver_info_["settle"]
    assert settle["settled"] and settle["rounds"][-1]["error"] <= 0.025
    assert all(r["error"] > 0.025 for r in settle["rounds"][:-1]) and settle["rounds"][0]["probes"] == 32
    assert fits[0].solver_info_["probes"] == settle["rounds"][-1]["probes"]
    assert np.abs(fits[0].kernel_.theta - exact.kernel_.theta).max() <= 0.08
    assert np.sqrt(np.mean((fits[0].predict(Xt) - exact.predict(Xt)) ** 2)) <= 0.01 * np.std(y)
    # the likelihood reported is the solver's estimate at the fitted θ (with the probes the fit ended with; the
    # kernel's θ read back, log(exp(θ)), may differ in the last bit, where a CG iteration count can change)
    fits[0].set_params(solver__likelihood_rtol=None)  # the fit's probes, not refined
    assert fits[0].log_marginal_likelihood_value_ == pytest.approx(
        fits[0].log_marginal_likelihood(fits[0].kernel_.theta), rel=1e-5)


def test_a_fit_that_cannot_settle_says_so(monkeypatch):
    """theta_tol below what the probes reach within SETTLE_ROUNDS rounds (two here): a ConvergenceWarning
    naming theta_tol, and solver_info_ says the optimum is not settled; theta_tol=None: no rounds."""
    from fastkpca.exceptions import ConvergenceWarning
    from fastkpca.solvers.gaussian_process import iterative

    monkeypatch.setattr(iterative, "SETTLE_ROUNDS", 2)
    X, y = hard_data(200)
    kobj = C(1.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.1)  # one length scale: a fifth of the ARD form's products
    est = GaussianProcessRegressor(kobj, normalize_y=True, solver=CG(preconditioner_rank=16, theta_tol=1e-9),
                                   random_state=0)
    with pytest.warns(ConvergenceWarning, match="not settled within theta_tol=1e-09: θ's error is about"):
        est.fit(X, y)
    assert not est.solver_info_["settle"]["settled"] and len(est.solver_info_["settle"]["rounds"]) == 2
    assert est.solver_info_["probes"] == 16 * 2 * 8  # doubled, then eight times: the most a round takes
    unchecked = GaussianProcessRegressor(kobj, normalize_y=True, solver=CG(preconditioner_rank=16, theta_tol=None),
                                         random_state=0).fit(X, y)
    assert unchecked.solver_info_["settle"] is None and unchecked.solver_info_["probes"] == 16


def test_a_memory_limit_without_room_for_more_probes_stops_the_settling(monkeypatch):
    from fastkpca.exceptions import ConvergenceWarning
    from fastkpca.solvers.gaussian_process import iterative

    monkeypatch.setattr(iterative.IterativeSolver, "_more_probes", lambda self, wanted: self.settings.probes)
    X, y = hard_data(200)
    with pytest.warns(ConvergenceWarning, match="leaves no room for more than 16 probes"):
        est = GaussianProcessRegressor(C(1.0) * RBF(np.ones(4)) + WhiteKernel(0.1), solver="cg",
                                       random_state=0).fit(X, y)
    assert est.solver_info_["settle"] == {"theta_tol": 0.05, "settled": False, "rounds": []}


def test_a_settling_round_by_quasi_newton_steps():
    """_newton_round on a quadratic f = ½ (θ − c)ᵀ A (θ − c): with the exact inverse Hessian one step reaches c;
    with a half or three times the true inverse curvature BFGS's updates bring the steps in; steps that do not
    shrink below tol/4 in NEWTON_STEPS, or a start beyond NEWTON_RANGE, give up; the bounds clip the steps."""
    from fastkpca.solvers.gaussian_process.iterative import NEWTON_RANGE, _newton_round

    rng = np.random.RandomState(0)
    Q = np.linalg.qr(rng.randn(4, 4))[0]
    A = Q @ np.diag([1.0, 3.0, 10.0, 30.0]) @ Q.T
    c = np.array([0.02, -0.01, 0.03, 0.0])
    evaluations = []

    def func(theta, eval_gradient=True):
        evaluations.append(theta)
        return 0.5 * (theta - c) @ A @ (theta - c), A @ (theta - c)

    bounds = np.array([[-5.0, 5.0]] * 4)
    exact = lambda v: np.linalg.solve(A, v)  # noqa: E731
    point, value = _newton_round(np.zeros(4), exact, func, bounds, tol=0.05)
    np.testing.assert_allclose(point, c, atol=1e-12)
    assert len(evaluations) == 3  # the start, the step, and the step that is below tol/4
    evaluations.clear()
    point, _ = _newton_round(np.zeros(4), lambda v: 0.5 * exact(v), func, bounds, tol=0.05)
    assert np.abs(point - c).max() <= 0.05 / 4 and len(evaluations) <= 9
    point, _ = _newton_round(np.zeros(4), lambda v: 3.0 * exact(v), func, bounds, tol=0.05)
    assert np.abs(point - c).max() <= 0.05 / 4  # the first step overshoots threefold, BFGS corrects it
    slope = np.full(4, 0.01)  # a gradient that does not change: equal steps, never below tol/4, then None
    assert _newton_round(np.zeros(4), lambda v: v, lambda t, g=True: (slope @ t, slope), bounds, tol=0.01) is None
    far = c + NEWTON_RANGE * 1.5
    assert _newton_round(far, exact, func, np.array([[-5.0, 5.0]] * 4), tol=0.05) is None
    point, _ = _newton_round(np.zeros(4), exact, func, np.array([[-5.0, 5.0], [0.0, 5.0], [-5.0, 5.0], [-5.0, 5.0]]),
                             tol=0.05)
    assert point[1] == 0.0  # its optimum −0.01 lies beyond the bound


def test_a_custom_optimizer_settles_by_running_again():
    """Without the optimiser's inverse Hessian (a callable optimizer) each settling round runs it again (three
    rounds here: 32, 128 and 256 probes)."""
    import scipy.optimize

    def optimizer(obj_func, initial_theta, bounds):
        result = scipy.optimize.minimize(lambda t: obj_func(t, True), initial_theta, jac=True, bounds=bounds,
                                         method="L-BFGS-B")
        return result.x, result.fun

    X, y = hard_data(200)
    est = GaussianProcessRegressor(C(1.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.1), normalize_y=True,
                                   solver=CG(preconditioner_rank=32, theta_tol=0.1), optimizer=optimizer,
                                   random_state=0).fit(X, y)
    rounds = est.solver_info_["settle"]["rounds"]
    assert rounds and all(r["by"] == "optimiser" for r in rounds)
    est.set_params(solver__likelihood_rtol=None)  # the fit's probes, not refined
    assert est.log_marginal_likelihood_value_ == pytest.approx(est.log_marginal_likelihood(est.kernel_.theta),
                                                                rel=1e-5)


def test_a_settled_cg_fit_pickles():
    """Nothing the settling used (L-BFGS-B's inverse Hessian, a closure) stays on the fitted estimator."""
    import pickle

    X, y, Xt = split(200)
    fit = GaussianProcessRegressor(C(1.0) * RBF(1.0) + WhiteKernel(0.05), solver="cg", random_state=0).fit(X, y)
    assert fit.solver_info_["settle"]["rounds"][0]["by"] == "newton"
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fit)).predict(Xt), fit.predict(Xt))


def test_the_optimisers_value_is_the_gradients_integral():
    """Objective with integrate: along a line the values are the trapezoid rule on the gradient (here of a
    function whose own values are off by a slope, as the estimates' disagreement), from the nearest point
    evaluated before; past LONG_STEP the function's own differences; an optimum's value is the function's."""
    from fastkpca.solvers.gaussian_process.objective import LONG_STEP, Objective

    def func(theta, eval_gradient=True):
        value = float(theta @ theta) + 0.3 * theta[0]  # the value's slope disagrees with the gradient's by 0.3
        return (value, 2.0 * theta) if eval_gradient else value

    objective = Objective(func, integrate=True)
    assert objective(np.array([1.0, 0.0]))[0] == func(np.array([1.0, 0.0]), False)
    for t in np.linspace(1.0, 0.0, 11)[1:]:  # a line search stepping towards 0: the integral of 2t dt exactly
        value, gradient = objective(np.array([t, 0.0]))
        np.testing.assert_allclose(value, 1.3 + t * t - 1.0, atol=1e-12)
    # a far point: its value differs from the nearest one's as the function's values do
    far = np.array([0.0, 1.0 + 2 * LONG_STEP])
    assert objective(far)[0] == pytest.approx(1.3 - 1.0 + func(far, False) - func(np.array([0.0, 0.0]), False))
    assert objective.optimum_value(np.array([0.5, 0.0]), -1.0) == func(np.array([0.5, 0.0]), False)
    assert Objective(func, integrate=False).optimum_value(np.array([0.5, 0.0]), -1.0) == -1.0
    assert Objective(func, integrate=False)(np.array([0.5, 0.0]))[0] == func(np.array([0.5, 0.0]), False)


# ------------------------------------------------------------------------- the likelihood's standard error

HARD_KERNEL = C(1.0) * RBF(np.full(4, 0.4)) + WhiteKernel(1e-3)  # many eigenvalues above a small noise


def test_a_users_likelihood_is_refined_to_its_tolerance():
    """log_marginal_likelihood(θ) by cg: with the fit's 16 probes its standard error is far above the tolerance
    asked for, so more probes are taken until it is within it; the value is then within three standard errors
    of the exact one, and the fitted solver keeps its probes (the same θ gives the same value again)."""
    X, y = data(400)
    theta = HARD_KERNEL.theta + 0.2
    exact = GaussianProcessRegressor(HARD_KERNEL, optimizer=None, solver="cholesky").fit(X, y)
    expected, expected_gradient = exact.log_marginal_likelihood(theta, eval_gradient=True)
    assert exact.log_marginal_likelihood_info_["standard_error"] == 0.0
    assert exact.log_marginal_likelihood_info_["reached"]
    model = GaussianProcessRegressor(HARD_KERNEL, optimizer=None,
                                     solver=CG(preconditioner_rank=20, likelihood_rtol=None), random_state=0).fit(X, y)
    once = model.log_marginal_likelihood(theta)
    first = model.log_marginal_likelihood_info_
    assert first["probes"] == 16 and len(first["rounds"]) == 1 and first["standard_error"] > 0
    rtol = first["relative_standard_error"] / 5  # 25 times the probes, or more
    model.set_params(solver__likelihood_rtol=rtol)
    value, gradient = model.log_marginal_likelihood(theta, eval_gradient=True)
    info = model.log_marginal_likelihood_info_
    assert info["reached"] and len(info["rounds"]) > 1 and info["probes"] >= 25 * 16
    assert info["standard_error"] <= rtol * abs(value)
    assert [r["probes"] for r in info["rounds"]] == sorted(r["probes"] for r in info["rounds"])
    assert abs(value - expected) <= 3 * info["standard_error"], (value, expected, info["standard_error"])
    errors = info["gradient_standard_error"]
    assert errors.shape == theta.shape and np.all(errors > 0)
    assert np.all(np.abs(gradient - expected_gradient) <= 5 * errors), (gradient, expected_gradient, errors)
    assert model.solver_info_["probes"] == 16  # the fitted solver's probes, untouched
    model.set_params(solver__likelihood_rtol=None)
    assert model.log_marginal_likelihood(theta) == once


def test_a_likelihood_short_of_its_tolerance_says_so(monkeypatch):
    """Where the most probes allowed leave the standard error above the tolerance, a ConvergenceWarning says so
    and the info says it was not reached."""
    from fastkpca.exceptions import ConvergenceWarning
    from fastkpca.solvers.gaussian_process import refined_estimate

    monkeypatch.setattr(refined_estimate, "REFINE_MOST_PROBES", 48)
    X, y = data(400)
    model = GaussianProcessRegressor(HARD_KERNEL, optimizer=None,
                                     solver=CG(preconditioner_rank=20, likelihood_rtol=1e-9), random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="standard error.* above the tolerance 1e-09 after 48 probes"):
        model.log_marginal_likelihood(HARD_KERNEL.theta)
    info = model.log_marginal_likelihood_info_
    assert not info["reached"] and info["probes"] == 48 and info["rtol"] == 1e-9


@pytest.mark.parametrize("bad", [0.0, -1e-3, np.nan])
def test_likelihood_rtol_is_checked(bad):
    X, y = data(50)
    with pytest.raises(ValueError, match="likelihood_rtol"):
        GaussianProcessRegressor(HARD_KERNEL, optimizer=None, solver=CG(likelihood_rtol=bad)).fit(X, y)


def test_a_fits_own_evaluations_are_not_refined():
    """The optimiser's evaluations use the fit's probes on the fitted solver (its standard error reported in
    solver_info_), never the refinement a user's call gets."""
    X, y = data(150)
    model = GaussianProcessRegressor(KERNELS[0], solver=CG(theta_tol=None, likelihood_rtol=1e-9),
                                     random_state=0).fit(X, y)
    assert model.solver_info_["probes"] == 16
    assert isinstance(model.solver_info_["standard_error"], float) and model.solver_info_["standard_error"] > 0
    assert not hasattr(model, "log_marginal_likelihood_info_")


def test_the_preconditioner_products_run_on_the_fits_threads(monkeypatch):
    """The products with the preconditioner's factor run on the core's team with the fit's n_jobs: every call of
    the native products gets n_jobs=1's one thread (a thread count of 0 would be the whole default team)."""
    from fastkpca import _native

    seen = []
    for name in ("factor_product_into", "factor_t_product_into", "factor_gram_into"):
        native = getattr(_native.core, name)

        def recording(*args, native=native):
            seen.append(args[-1])
            return native(*args)

        monkeypatch.setattr(_native.core, name, recording)
    X, y, _ = split(1500)
    GaussianProcessRegressor(KERNELS[0], optimizer=None, solver="cg", n_jobs=1, random_state=0).fit(X, y)
    assert seen and set(seen) == {1}, seen
