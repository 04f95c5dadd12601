"""One Gaussian process family: the regressor's and the classifier's solvers on one declared interface, one
optimiser loop, one subset start, one memory plan, and the classifier's solver chosen by the library's cost
model (solvers/choice.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from fastkpca import CG, GaussianProcessClassifier, GaussianProcessRegressor
from fastkpca.solvers import choice
from fastkpca.solvers import gaussian_process as gp
from fastkpca.solvers.gaussian_process.subset_start import subset_start

GB = 10**9


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 3))
    latent = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] + 0.3 * rng.standard_normal(n)
    return X, latent


@pytest.mark.parametrize("solver", [gp.ExactSolver, gp.IterativeSolver, gp.ExactLaplace, gp.IterativeLaplace])
def test_every_solver_answers_the_optimiser(solver):
    """The optimiser's questions (interface.GaussianProcessSolver) are every solver's; mypy checks the
    signatures through make_solver's and make_laplace_solver's return types."""
    for name in ("name", "per_sample_objective", "stop_gain", "abnormal_restarts", "start", "objective", "settle",
                 "fitted_attributes", "info"):
        assert hasattr(solver, name), (solver.__name__, name)
    model = ("evaluate", "fit_final", "latent_mean", "latent_variance") if "Laplace" in solver.__name__ else (
        "inv_quad_logdet", "solve", "likelihood_from_solve", "solved_inv_quad_logdet", "variance", "covariance",
        "localised")
    assert all(hasattr(solver, name) for name in model)


def test_subset_start_draws_fits_and_chains():
    """The subset start: nothing where the subset would be all the samples; an exact fit on ``size`` drawn
    samples; past ``chain`` times ``size``, an iterative one on √(size·n); a declined fit keeps θ."""
    theta = np.zeros(2)
    calls = []

    def fit_subset(index, solver):
        calls.append((len(index), solver, bool(np.all(np.diff(index) > 0))))
        return theta + 1, {"evaluations": 3}

    assert subset_start(theta, fit_subset, 100, 0, 0) == (theta, None)
    assert subset_start(theta, fit_subset, 100, 100, 0) == (theta, None)
    found, record = subset_start(theta, fit_subset, 1000, 50, 0)
    assert np.array_equal(found, theta + 1) and calls[-1] == (50, "cholesky", True)
    assert record["samples"] == 50 and record["solver"] == "cholesky" and record["evaluations"] == 3
    assert record["seconds"] >= 0
    found, record = subset_start(theta, fit_subset, 1000, 50, 0, chain=10)
    assert calls[-1] == (int(np.sqrt(50 * 1000)), "cg", True) and record["solver"] == "cg"
    _, record = subset_start(theta, fit_subset, 1000, 50, 0, chain=30)  # 1,000 ≤ 30·50: exact
    assert calls[-1][1] == "cholesky"
    found, record = subset_start(theta, lambda index, solver: (theta + 5, {"skipped": "why"}), 1000, 50, 0)
    assert np.array_equal(found, theta) and record == {"samples": 50, "skipped": "why"}


def test_the_classification_family_crosses_over_as_its_costs_grow(monkeypatch):
    """The exact Laplace evaluation (n³) wins at small n, cg (n r²) at large n; the exact one is not taken
    where its arrays do not fit; the exact solver's Newton steps go by its factor at small n and by CG on the
    held kernel at large n."""
    monkeypatch.setattr(choice, "machine", lambda: choice.Machine(5e10, 1, 1, 5e10, 0.0))
    settings = gp.LaplaceSettings()

    def picked(n, limit=100 * GB):
        return gp.laplace_choice("auto", n, 8, settings, memory_limit=limit).picked

    assert [picked(n) for n in (300, 50_000)] == ["cholesky", "cg"]
    assert picked(3000, limit=120 * 10**6) == "cg"  # the two 3,000 × 3,000 arrays: 144 MB
    assert [choice.laplace_newton_steps(n).picked for n in (200, 5000)] == ["factor", "cg"]
    assert choice.laplace_newton_steps(5000, "factor").picked == "factor"
    assert gp.laplace_bytes("cholesky", 3000, 8, settings, memory_limit=GB) == choice.laplace_exact_bytes(3000)


def test_the_classifier_records_its_choice():
    X, latent = data(150)
    y = (latent > 0.5).astype(int)
    model = GaussianProcessClassifier(C(1.0) * RBF(1.0), optimizer=None).fit(X, y)
    info = model.base_estimator_.solver_info_
    record = info["choice"]
    assert record["family"] == "gaussian process classification" and record["requested"] == "auto"
    assert record["picked"] == info["solver"] == "cholesky"
    assert set(record["candidates"]) == {"cholesky", "cg"}
    assert all(c["seconds"] > 0 and c["bytes"] > 0 for c in record["candidates"].values())
    assert info["newton"]["choice"]["family"] == "Laplace Newton steps"
    forced = GaussianProcessClassifier(C(1.0) * RBF(1.0), optimizer=None, solver=CG(n_probes=8),
                                       random_state=0).fit(X, y)
    assert forced.base_estimator_.solver_info_["choice"]["reason"] == "asked for by name"


def test_one_optimiser_loop_for_both_models(monkeypatch):
    """Both estimators' optimisation goes through optimiser.optimise, with the solver's start, restarts from
    the random state and the solver's settling; the classifier's record of the ABNORMAL restarts is the loop's."""
    from fastkpca.solvers.gaussian_process import optimiser

    seen = []
    optimise = optimiser.optimise

    def spy(func, theta, bounds, *, solver, **kwargs):
        seen.append((type(solver).__name__, kwargs["restarts"]))
        return optimise(func, theta, bounds, solver=solver, **kwargs)

    monkeypatch.setattr(gp, "optimise", spy)
    X, latent = data(120, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GaussianProcessRegressor(C(1.0) * RBF(1.0), n_restarts_optimizer=1, random_state=0).fit(X, latent)
        model = GaussianProcessClassifier(C(1.0) * RBF(1.0), n_restarts_optimizer=1, random_state=0).fit(
            X, (latent > 0.5).astype(int))
    assert seen == [("ExactSolver", 1), ("ExactLaplace", 1)]
    assert model.base_estimator_.solver_info_["optimizer_restarts"] == 0


def test_iterative_solvers_share_one_memory_plan():
    """The Laplace approximation's cg plans its memory and its preconditioner's rank by the regression's rule
    (memory.py), with its own factors (F and S F) and vectors counted."""
    from fastkpca.engines.local import LOCAL

    X, latent = data(600)
    samples = LOCAL.samples(X)
    settings = gp.LaplaceSettings(probes=8)
    solver = gp.IterativeLaplace(samples, (latent > 0.5).astype(float), settings, memory_limit=GB, random_state=0)
    plan = gp.laplace_iterative.laplace_memory(samples, settings, GB)
    assert solver.rank == plan.planned_rank(None, 8) == 599  # DEFAULT_RANK at most, n − 1 here
    assert solver._working_bytes() == plan.working_bytes(599, 8)
    regression = gp.IterativeSolver(samples, latent[:, None], 0.1, gp.IterativeSettings(probes=8), memory_limit=GB,
                                    random_state=0)
    assert type(regression.memory) is type(solver.memory)
    assert regression.rank == regression.memory.planned_rank(None, 9)
    with pytest.raises(MemoryError, match="conjugate gradients on 600 samples"):
        gp.IterativeLaplace(samples, (latent > 0.5).astype(float), settings, memory_limit=10**6)


def test_memory_plan_counts_the_factor_products_scratch_on_every_thread():
    """The preconditioner's products run on the core's team, each thread with its scratch (a float32 factor's
    converted block, the Gram's panel: tall_products.hpp): the plan counts it once per thread, so a team of 64 has
    less room for the rank than a team of one, and a fit's plan counts its own n_jobs (0: the default team)."""
    from fastkpca import _native
    from fastkpca.engines.local import LOCAL
    from fastkpca.solvers.gaussian_process.memory import IterativeMemory

    def plan(threads, itemsize=4, limit=GB):
        return IterativeMemory((20000, 8), limit, entry_bytes=12, vectors=2, control_variate=True,
                               factor_itemsize=itemsize, threads=threads)

    per_thread = _native.core.tall_scratch_bytes(1024, 4)
    assert per_thread - _native.core.tall_scratch_bytes(1024, 8) == 256 * 1024 * 8  # the converted block
    assert plan(64).rank_bytes(1024) - plan(1).rank_bytes(1024) == 63 * per_thread
    assert plan(0).rank_bytes(1024) == plan(int(_native.core.omp_max_threads())).rank_bytes(1024)
    limit = 500 * 2**20  # the factor products' scratch of 64 threads is a share of it
    assert plan(64, limit=limit).planned_rank(None, 17) < plan(1, limit=limit).planned_rank(None, 17)
    X, latent = data(600)
    samples = LOCAL.samples(X)
    assert gp.IterativeSolver(samples, latent[:, None], 0.1, gp.IterativeSettings(probes=8), memory_limit=GB,
                              n_jobs=3, random_state=0).memory.threads == 3
    assert gp.IterativeLaplace(samples, (latent > 0.5).astype(float), gp.LaplaceSettings(probes=8), memory_limit=GB,
                               n_jobs=5, random_state=0).memory.threads == 5
