"""The library's one solver choice (fastkpca/solvers/choice.py): the rule, and every family's fits recording it."""

from __future__ import annotations

import numpy as np
import pytest

from fastkpca import _threads
from fastkpca.solvers import choice
from fastkpca.solvers.choice import Candidate, choose
from fastkpca.solvers.dense import threads

GB = 10**9


def test_auto_takes_the_cheapest_automatic_candidate_that_fits():
    candidates = [Candidate("a", 3.0, 1 * GB), Candidate("b", 1.0, 5 * GB), Candidate("c", 0.1, 1, automatic=False),
                  Candidate("d", 0.5, 1, possible=False, note="cannot run here")]
    assert choose("f", "auto", candidates, 10 * GB).picked == "b"
    small = choose("f", "auto", candidates, 2 * GB)
    assert small.picked == "a" and "fit" in small.reason
    record = small.as_dict()
    assert record["picked"] == "a" and record["requested"] == "auto" and record["memory_limit"] == 2 * GB
    assert record["candidates"]["b"] == {"seconds": 1.0, "bytes": 5 * GB, "fits": False, "automatic": True}
    assert record["candidates"]["d"]["fits"] is False and record["candidates"]["d"]["note"] == "cannot run here"


def test_where_none_fits_auto_takes_the_one_needing_fewest_bytes():
    candidates = [Candidate("a", 3.0, 4 * GB), Candidate("b", 1.0, 5 * GB)]
    chosen = choose("f", "auto", candidates, GB)
    assert chosen.picked == "a" and "none fits" in chosen.reason


def test_a_named_solver_is_taken_as_asked_and_an_unknown_one_is_refused():
    candidates = [Candidate("a", 3.0, 4 * GB), Candidate("b", 1.0, 5 * GB, automatic=False)]
    assert choose("f", "b", candidates, GB).picked == "b"
    with pytest.raises(ValueError, match="no solver 'z'"):
        choose("f", "z", candidates, GB)
    with pytest.raises(ValueError, match="automatically"):
        choose("f", "auto", [Candidate("b", 1.0, 1, automatic=False)], GB)


def test_the_families_cross_over_as_their_costs_grow(monkeypatch):
    """Dense solvers win at small n, the n² ones at large n; what does not fit is not taken; approximate
    solvers are never taken by "auto"."""
    monkeypatch.setattr(choice, "machine", lambda: choice.Machine(5e10, 1, 1, 5e10, 0.0))
    pca = [choice.kernel_pca("auto", n=n, d=16, k=10, symmetric=True, all_components=False, memory_limit=100 * GB)
           for n in (50, 20_000)]
    assert [c.picked for c in pca] == ["dense", "lanczos"]
    assert choice.kernel_pca("auto", n=500, d=16, k=10, symmetric=True, all_components=True,
                             memory_limit=100 * GB).picked == "dense"
    assert choice.kernel_pca("auto", n=5000, d=16, k=5, symmetric=False, all_components=False,
                             memory_limit=100 * GB).picked == "arpack"
    ridge = [choice.kernel_ridge("auto", n=n, d=16, targets=1, singular=False, rank=500, memory_limit=100 * GB)
             for n in (500, 50_000)]
    assert [c.picked for c in ridge] == ["cholesky", "cg"]
    assert choice.kernel_ridge("auto", n=500, d=16, targets=1, singular=False, rank=50,
                               memory_limit=10**6).picked == "cg"  # 500² · 8 = 2 MB does not fit
    assert choice.kernel_ridge("auto", n=20_000, d=16, targets=1, singular=True, rank=500,
                               memory_limit=100 * GB).picked == "cholesky"  # alpha = 0: the least-squares fallback
    assert choice.spectral(None, n=10**6, d=16, k=8, memory_limit=GB).picked == "lanczos"
    cv = choice.kernel_ridge_cv("auto", n=20_000, d=16, targets=1, folds=None, native=True, memory_limit=100 * GB)
    assert cv.picked == "eigh" and not cv.as_dict()["candidates"]["multishift-cg"]["fits"]


def test_a_kernel_the_limit_lets_be_stored_is_read_by_the_later_passes(monkeypatch):
    """An iterative solver's passes after the first read the stored kernel where memory_limit leaves room for
    its packed triangle (4n² bytes), and evaluate it again where it does not; a share of it in between."""
    monkeypatch.setattr(choice, "machine", lambda: choice.Machine(5e10, 1, 1, 5e10, 0.0))
    n, d, b = 4000, 64, 20
    stored = choice.operator_passes_seconds(n, d, b, 15, memory_limit=100 * GB)
    matrix_free = choice.operator_passes_seconds(n, d, b, 15, memory_limit=0)
    set_aside = choice.PLAN_SLACK_BYTES + choice.DENSE_COPIES * 8 * n * d  # the plan's slack, the samples' copies
    half = choice.operator_passes_seconds(n, d, b, 15, memory_limit=set_aside + 2 * n * n)
    assert stored == pytest.approx(choice.kernel_pass_seconds(n, n, d, b) + 14 * choice.stored_pass_seconds(n, b))
    assert matrix_free == pytest.approx(15 * choice.kernel_pass_seconds(n, n, d, b))
    assert half == pytest.approx((stored + matrix_free) / 2)
    pca = [choice.kernel_pca("lanczos", n=n, d=d, k=10, symmetric=True, all_components=False, memory_limit=limit)
           for limit in (100 * GB, 10**8)]
    assert pca[0].candidates[1].seconds < pca[1].candidates[1].seconds


def test_sparse_samples_cost_what_their_rows_store():
    """A kernel entry of sparse rows is modelled by the values a row stores, not by its columns; a precomputed
    kernel's entries are read (d = 0)."""
    from scipy import sparse

    from fastkpca import kernels
    from fastkpca.solvers.rows import ArrayRows

    X = sparse.random(200, 40_000, density=0.0005, format="csr", random_state=0)
    rbf = kernels.make("rbf", gamma=1.0, n_features=40_000)
    per_row = X.nnz / 200
    assert ArrayRows(X).values_per_row == per_row
    assert choice.evaluated_features(rbf, ArrayRows(X)) == np.ceil(choice.SPARSE_VALUE_FLOPS * per_row)
    assert choice.evaluated_features(rbf, ArrayRows(X.toarray())) == 40_000
    precomputed = kernels.make("precomputed", n_features=200)
    assert choice.evaluated_features(precomputed, ArrayRows(np.eye(200))) == 0


def _recorded(info):
    record = info["choice"]
    assert record["picked"] == info["solver"] or record["picked"] == info.get("method")
    assert record["candidates"] and all(c["seconds"] > 0 and c["bytes"] > 0 for c in record["candidates"].values())
    return record


def test_every_fit_records_its_choice(rng):
    from sklearn.gaussian_process.kernels import RBF

    from fastkpca import GaussianProcessRegressor, KernelPCA, KernelRidge, KernelRidgeCV, SpectralEmbedding

    X = rng.standard_normal((120, 3))
    y = np.sin(X[:, 0])
    assert _recorded(KernelPCA(n_components=3, kernel="rbf").fit(X).solver_info_)["requested"] == "auto"
    assert _recorded(KernelPCA(n_components=3, kernel="rbf", eigen_solver="lanczos").fit(X).solver_info_)[
        "reason"] == "asked for by name"
    assert _recorded(KernelRidge(kernel="rbf").fit(X, y).solver_info_)["family"] == "kernel ridge"
    assert _recorded(SpectralEmbedding(n_components=2).fit(X).solver_info_)["picked"] == "dense"  # few samples
    assert _recorded(GaussianProcessRegressor(RBF(), optimizer=None).fit(X, y).solver_info_)["family"] == \
        "gaussian process regression"
    cv = KernelRidgeCV(alphas=[0.1, 1.0], kernel="rbf", cv=3).fit(X, y)
    assert cv.solver_info_["choice"]["picked"] == "eigh" and cv.solver_info_["method"] == "kfold-eigh"


# ------------------------------------------------------------------ the model on other machines (1 to 64 cores)

CORES = (1, 2, 4, 16, 64)
ONE_THREAD = 2e10  # DGEMM's flops per second on one thread, injected
PEAK = 4e10  # the core's vectors' FMA peak on one thread, injected: twice DGEMM's (wider vectors than the BLAS's)
FRESH = 0.5 / 2**30  # seconds a byte of fresh memory costs, injected (a virtual machine's)


def _on(monkeypatch, cores):
    """The cost model as if the machine had ``cores`` cores: NumPy's BLAS and the core's team on all of them."""
    monkeypatch.setattr(choice, "machine", lambda: choice.Machine(ONE_THREAD, cores, cores, PEAK, FRESH))
    monkeypatch.setattr(threads, "gemm_rate_one_thread", lambda: ONE_THREAD)


def test_thread_rate_is_the_threads_times_their_efficiency():
    assert choice.thread_rate(1.0, 1) == 1.0
    assert choice.thread_rate(1.0, 2) == pytest.approx(2 * choice.THREAD_EFFICIENCY)
    assert choice.thread_rate(1.0, 16) == pytest.approx(16 * choice.THREAD_EFFICIENCY**4)
    rates = [choice.thread_rate(1.0, c) for c in CORES]
    assert all(a < b <= c_ for a, b, c_ in zip(rates, rates[1:], CORES[1:]))


@pytest.mark.parametrize("cores", CORES)
def test_every_rate_is_the_rate_of_the_threads_the_call_gets(monkeypatch, cores):
    """The kernel pass on the core's team, a large factorisation or eigensolver on BLAS's threads, a small one on
    one thread (dense.threads.small_algebra) at every core count; no rate halved or scaled for a matrix's size."""
    _on(monkeypatch, cores)
    speedup = choice.thread_rate(1.0, cores)
    n, d, b = 20_000, 16, 8
    assert choice.kernel_pass_seconds(n, n, d, b) == pytest.approx(
        n * n * (choice.kernel_entry_flops(d) + 2 * b) / (choice.KERNEL_PEAK_SHARE * PEAK * speedup))
    assert choice.stored_pass_seconds(n, b) == pytest.approx(
        n * n * (choice.STORED_ENTRY_FLOPS + 2 * b) / (choice.KERNEL_PEAK_SHARE * PEAK * speedup))
    for rows in (5000, 20_000, 40_000):  # 40,000 rows: 12.8 GB, past the 2-GiB matrices OpenBLAS crashed on
        assert choice.cholesky_seconds(rows) == pytest.approx(
            rows**3 / 3 / (choice.CHOLESKY_SHARE * ONE_THREAD * speedup))
        assert choice.eigh_seconds(rows) == pytest.approx(
            choice.EIGH_FLOPS_PER_CUBE * rows**3 / (choice.EIGH_SHARE * ONE_THREAD * speedup))
    small = 200  # 2.7 Mflop: far below BLAS_TEAM_MIN_SECONDS of one thread's work
    assert choice.cholesky_seconds(small) == pytest.approx(small**3 / 3 / (choice.CHOLESKY_SHARE * ONE_THREAD))


@pytest.mark.parametrize("cores", CORES)
def test_the_thread_rules_are_costs_not_core_counts(monkeypatch, cores):
    """One BLAS thread for a call whose work on one thread is below BLAS_TEAM_MIN_SECONDS, whatever the cores."""
    lt = threads
    _on(monkeypatch, cores)
    threshold = lt.BLAS_TEAM_MIN_SECONDS * ONE_THREAD
    assert lt.small_algebra(0.9 * threshold) and not lt.small_algebra(1.1 * threshold)
    # a pass over stored entries (a triangular solve's over its factor) counts at the memory rate, not its flops'
    entries = lt.BLAS_TEAM_MIN_SECONDS / _threads.ARRAY_ENTRY_SECONDS
    assert lt.small_algebra(0.1 * threshold, 0.9 * entries) and not lt.small_algebra(0.1 * threshold, 1.1 * entries)


def _large_problems():
    """Every family's candidates on problems large enough that their fixed overheads are negligible."""
    return [choice for choice, _ in _large_problems_and_sizes()]


def _large_problems_and_sizes():
    """(choice, n) of :func:`_large_problems`."""
    limit = 10**12
    yield choice.kernel_pca("auto", n=40_000, d=16, k=10, symmetric=True, all_components=False,
                            memory_limit=limit), 40_000
    yield choice.kernel_ridge("auto", n=40_000, d=16, targets=1, singular=False, rank=500, memory_limit=limit), 40_000
    yield choice.kernel_ridge_cv("auto", n=20_000, d=16, targets=1, folds=None, native=True,
                                 memory_limit=limit), 20_000
    yield choice.gaussian_process_regression("auto", n=40_000, d=8, columns=17, rank=1024, exact_possible=True,
                                             memory_limit=limit), 40_000
    yield choice.gaussian_process_regression("auto", n=40_001, d=8, columns=17, rank=1024, exact_possible=True,
                                             memory_limit=limit, gradient=False), 40_001  # without an optimiser


#: The seconds of a candidate of :func:`_large_problems` that the model keeps on one thread whatever the cores (its
#: serial part; the iterations' r × r solves are below the tolerance).
SERIAL_SECONDS = {("kernel ridge", "cholesky", 40_000): lambda: choice.RIDGE_FIT_SECONDS,
                  ("kernel ridge", "cg", 40_000): lambda: choice.ridge_preconditioner_seconds(40_000, 500),
                  ("gaussian process regression", "cholesky", 40_000):
                      lambda: choice.gp_exact_passes_seconds(40_000, 8),
                  ("gaussian process regression", "cg", 40_000): lambda: choice.gp_cg_serial_seconds(40_000, 1024),
                  ("gaussian process regression", "cholesky", 40_001):
                      lambda: choice.gp_exact_passes_seconds(40_001, 8, gradient=False),
                  ("gaussian process regression", "cg", 40_001): lambda: choice.gp_cg_fit_serial_seconds(40_001, 1024)}


def test_each_candidate_speeds_up_as_its_parallel_work_does(monkeypatch):
    """On a large problem every candidate's predicted seconds, less its serial part, fall by the threads' speedup
    from 1 core to c."""
    _on(monkeypatch, 1)
    one = [{c.name: c.seconds for c in family.candidates} for family in _large_problems()]
    problems = [(family.family, n) for family, n in _large_problems_and_sizes()]
    for cores in CORES[1:]:
        _on(monkeypatch, cores)
        speedup = choice.thread_rate(1.0, cores)
        many = [{c.name: c.seconds for c in family.candidates} for family in _large_problems()]
        for (family, n), before, after in zip(problems, one, many):
            for name, seconds in before.items():
                serial = SERIAL_SECONDS.get((family, name, n), lambda: 0.0)()
                assert (seconds - serial) / (after[name] - serial) == pytest.approx(speedup, rel=0.02), (name, cores)


@pytest.mark.parametrize("cores", CORES)
def test_no_decision_flips_with_the_core_count(monkeypatch, cores):
    """The picks far from every crossover are the same on 1 to 64 cores: the candidates' costs scale together."""
    _on(monkeypatch, cores)
    limit = 100 * GB
    assert [choice.kernel_pca("auto", n=n, d=16, k=10, symmetric=True, all_components=False,
                              memory_limit=limit).picked for n in (50, 20_000)] == ["dense", "lanczos"]
    assert [choice.kernel_ridge("auto", n=n, d=16, targets=1, singular=False, rank=500,
                                memory_limit=limit).picked for n in (500, 50_000)] == ["cholesky", "cg"]
    assert [choice.gaussian_process_regression("auto", n=n, d=8, columns=17, rank=1024, exact_possible=True,
                                               memory_limit=10**11).picked
            for n in (2000, 40_000)] == ["cholesky", "cg"]
    assert [c.picked for c in _large_problems()] == ["lanczos", "cg", "eigh", "cg", "cg"]


@pytest.mark.parametrize("cores", CORES)
def test_a_stored_kernels_fresh_memory_is_priced_once_on_the_team(monkeypatch, cores):
    """The stored share of the packed triangle (4n² bytes) is fresh memory the first pass writes on the core's team:
    its page faults are priced once per solve, at the machine's measured cost per byte, shared by the team's
    threads; a kernel evaluated on every pass holds nothing and pays nothing."""
    _on(monkeypatch, cores)
    n, d, b = 20_000, 16, 8
    stored = choice.operator_passes_seconds(n, d, b, 10, memory_limit=100 * GB)
    passes = choice.kernel_pass_seconds(n, n, d, b) + 9 * choice.stored_pass_seconds(n, b)
    assert stored == pytest.approx(FRESH * 4 * n * n / choice.thread_rate(1.0, cores) + passes)
    assert choice.operator_passes_seconds(n, d, b, 10, memory_limit=0) == pytest.approx(
        10 * choice.kernel_pass_seconds(n, n, d, b))
    # a block below glibc's largest mmap threshold may reuse pages an earlier fit touched: not priced
    assert choice.fresh_memory_seconds(choice.FRESH_MEMORY_MIN_BYTES - 1) == 0
    assert choice.fresh_memory_seconds(choice.FRESH_MEMORY_MIN_BYTES) == FRESH * choice.FRESH_MEMORY_MIN_BYTES
    per_byte = choice.fresh_memory_seconds_per_byte()
    assert per_byte > 0 and choice.fresh_memory_seconds_per_byte() == per_byte  # measured once


def test_the_kernel_passes_run_at_the_cores_own_peak_not_at_the_blas_rate(monkeypatch):
    """The kernel pass's rate is a share of the FMA peak of the core's own vectors (measured once per process,
    from registers alone), whatever DGEMM's rate: a BLAS whose kernels use half the core's vector width (OpenBLAS's
    AVX2 kernels on an AVX-512 core) moves the dense algebra's predictions, not the kernel passes'."""
    peak = choice.fma_rate_one_thread()
    assert peak > 0 and choice.fma_rate_one_thread() == peak  # measured once
    passes = []
    for gemm in (PEAK, PEAK / 2):
        monkeypatch.setattr(choice, "machine", lambda gemm=gemm: choice.Machine(gemm, 1, 1, PEAK, FRESH))
        monkeypatch.setattr(threads, "gemm_rate_one_thread", lambda gemm=gemm: gemm)
        passes.append((choice.kernel_pass_seconds(4000, 4000, 64, 0), choice.cholesky_seconds(4000)))
    assert passes[0][0] == passes[1][0] == pytest.approx(4000**2 * choice.kernel_entry_flops(64)
                                                         / (choice.KERNEL_PEAK_SHARE * PEAK))
    assert passes[1][1] == pytest.approx(2 * passes[0][1])


def test_the_model_reads_the_blas_threads_outside_one_thread_contexts():
    """A fit in another Python thread holding one BLAS thread (dense.threads.one_blas_thread, process-wide) does
    not change what the model predicts for this one: it reads the count from before the context."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(2, user_api="blas"):
        if threads.blas_threads() != 2:
            pytest.skip("this BLAS does not take two threads")
        with threads.one_blas_thread():
            assert threads.blas_threads() == 1
            assert threads.default_blas_threads() == 2 == choice.machine().blas_threads
        assert threads.default_blas_threads() == 2


def test_the_eigensolver_is_modelled_on_the_threads_it_runs_on(monkeypatch):
    """Above WHOLE_ROWS rows the blocked eigensolver runs on every BLAS thread, whatever its work."""
    from fastkpca.solvers.dense import eigh

    _on(monkeypatch, 64)
    n = eigh.WHOLE_ROWS + 100
    assert not eigh.on_one_blas_thread(n)
    assert choice.eigh_seconds(n) == pytest.approx(
        choice.EIGH_FLOPS_PER_CUBE * n**3 / (choice.EIGH_SHARE * choice.thread_rate(ONE_THREAD, 64)))
    assert eigh.on_one_blas_thread(100)
