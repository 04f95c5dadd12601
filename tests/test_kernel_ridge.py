"""fastkpca.KernelRidge: scikit-learn's results from every solver, the conjugate gradients' own figures,
the Nyström restricted problem, multi-shift CG and the bad-input rules."""

import warnings

import numpy as np
import pytest
from sklearn import kernel_ridge as skr

import reference as ref
from fastkpca import CG, ConvergenceWarning, KernelPCA, KernelRidge, Nystrom, SingularKernelWarning
from fastkpca.solvers.krylov.cg import LowRankPreconditioner, cg_shifted, pcg


@pytest.fixture
def data(rng):
    X = rng.standard_normal((700, 5))
    Y = np.c_[np.sin(X[:, 0]) + 0.1 * rng.standard_normal(700), X[:, 1] ** 2 - X[:, 2]]
    X_new = rng.standard_normal((120, 5))
    return X, Y, X_new


def _close(a, b, rel):
    np.testing.assert_allclose(a, b, rtol=0, atol=rel * np.abs(b).max())


@pytest.mark.parametrize("solver", ["cholesky", "cg"])
@pytest.mark.parametrize("kernel,params", [("rbf", {"gamma": 0.2}), ("laplacian", {"gamma": 0.1}),
                                           ("poly", {"degree": 2, "coef0": 1.0, "gamma": 0.2}), ("linear", {})])
@pytest.mark.parametrize("alpha", [1.0, 1e-3, "per-target"])
def test_same_predictions_as_sklearn(solver, kernel, params, alpha, data, rng):
    X, Y, X_new = data
    alpha = [1.0, 0.01] if alpha == "per-target" else alpha
    sw = rng.random(X.shape[0]) + 0.1
    ours = KernelRidge(alpha=alpha, kernel=kernel, solver=CG(tol=1e-10) if solver == "cg" else solver,
                       **params).fit(X, Y, sample_weight=sw)
    theirs = skr.KernelRidge(alpha=alpha, kernel=kernel, **params).fit(X, Y, sample_weight=sw)
    _close(ours.predict(X), theirs.predict(X), 1e-7)
    _close(ours.predict(X_new), theirs.predict(X_new), 1e-7)
    assert ours.solver_info_["solver"] == solver
    if solver == "cg":
        assert ours.solver_info_["converged"] and ours.solver_info_["residuals_are_true"]
        assert ours.n_iter_ == ours.solver_info_["iterations"] >= 1


def test_one_target_ravels_and_float32(data):
    X, Y, X_new = data
    ours = KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-10)).fit(X, Y[:, 0])
    theirs = skr.KernelRidge(alpha=0.1, kernel="rbf").fit(X, Y[:, 0])
    assert ours.dual_coef_.shape == (700,) and ours.predict(X_new).shape == (120,)
    _close(ours.predict(X_new), theirs.predict(X_new), 1e-8)
    ours32 = KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-10)).fit(X.astype(np.float32), Y[:, 0])
    _close(ours32.predict(X_new.astype(np.float32)), theirs.predict(X_new), 1e-4)


def test_cg_reports_the_true_residual(data):
    X, Y, _ = data
    model = KernelRidge(alpha=[0.5, 1e-3], kernel="rbf", gamma=0.3, solver=CG(tol=1e-9)).fit(X, Y)
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    for j, alpha in enumerate([0.5, 1e-3]):
        r = np.linalg.norm((K + alpha * np.eye(700)) @ model.dual_coef_[:, j] - Y[:, j]) / np.linalg.norm(Y[:, j])
        assert r <= 1e-9
        assert model.solver_info_["residuals"][j] == pytest.approx(r, rel=1e-3, abs=1e-13)


@pytest.mark.parametrize("storage", ["packed", "cached", "matrix_free"])
def test_cg_gives_the_same_answer_in_every_storage(storage, data):
    from sklearn_swap import force_storage

    X, Y, X_new = data
    reference = KernelRidge(alpha=0.1, kernel="rbf", solver="cholesky").fit(X, Y).predict(X_new)
    undo = force_storage(storage) if storage != "packed" else (lambda: None)
    try:
        model = KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-11, precision="float64")).fit(X, Y)
        auto = KernelRidge(alpha=0.1, kernel="rbf", solver=CG(tol=1e-11)).fit(X, Y)
    finally:
        undo()
    assert model.solver_info_["storage"] == storage
    _close(model.predict(X_new), reference, 1e-8)
    # cg_precision="auto": float32 products where the kernel is recomputed on every pass, not where it is stored
    recomputed = storage != "packed"
    assert ("fast_products" in auto.solver_info_) == recomputed
    assert auto.solver_info_["storage"] == ("matrix_free" if recomputed else "packed")
    _close(auto.predict(X_new), reference, 1e-8)


def test_mixed_precision_cg_meets_tol_for_the_float64_system(data):
    """cg_precision="mixed": the iterations' products by the float32 kernel, the true float64 residual at every
    100-fold fall (reliable updates) and at the end: the residuals reported are the float64 system's and meet
    tol, and the coefficients equal float64 cg's to what tol allows (‖Δβ‖ ≤ ‖(K + αI)⁻¹‖·2·tol·‖y‖)."""
    X, Y, _ = data
    alphas = [0.5, 1e-3]
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    for tol in (1e-6, 1e-11):
        mixed = KernelRidge(alpha=alphas, kernel="rbf", gamma=0.3, solver=CG(tol=tol, precision="mixed")).fit(X, Y)
        exact = KernelRidge(alpha=alphas, kernel="rbf", gamma=0.3, solver=CG(tol=tol, precision="float64")).fit(X, Y)
        info = mixed.solver_info_
        assert info["converged"] and not info["fast_dropped"]
        assert 0 < info["fast_products"] < info["iterations"]
        assert info["fast_storage"] in ("full", "packed") and info["storage"] == "matrix_free"
        for j, alpha in enumerate(alphas):
            r = np.linalg.norm((K + alpha * np.eye(700)) @ mixed.dual_coef_[:, j] - Y[:, j]) / np.linalg.norm(Y[:, j])
            assert r <= tol and info["residuals"][j] == pytest.approx(r, rel=1e-3, abs=1e-13)
            bound = 2 * tol * np.linalg.norm(Y[:, j]) / alpha
            assert np.linalg.norm(mixed.dual_coef_[:, j] - exact.dual_coef_[:, j]) <= bound


def test_pcg_with_fast_products_falls_back_when_they_cannot_reach_tol(rng):
    """A K̃ whose error is far above the shift: the restart from the true residual does not halve it, so pcg goes
    on with K alone (fast_dropped) and still converges; with a close K̃ the fast products do the work."""
    A = rng.standard_normal((150, 150))
    K = A @ A.T / 150
    E = rng.standard_normal((150, 150)) * 1e-2
    K_far = K + (E + E.T)
    b = rng.standard_normal((150, 1))
    X, info = pcg(lambda V: K @ V, b, [1e-3], tol=1e-8, maxiter=5000, fast_matmat=lambda V: K_far @ V)
    assert info["fast_dropped"] and info["converged"]
    assert np.linalg.norm((K + 1e-3 * np.eye(150)) @ X - b) <= 1e-8 * np.linalg.norm(b)
    K_near = K + (E + E.T) * 1e-7
    X, info = pcg(lambda V: K @ V, b, [1e-3], tol=1e-8, maxiter=5000, fast_matmat=lambda V: K_near @ V)
    assert not info["fast_dropped"] and info["converged"] and info["fast_products"] > 0.8 * info["iterations"]
    assert np.linalg.norm((K + 1e-3 * np.eye(150)) @ X - b) <= 1e-8 * np.linalg.norm(b)


def test_mixed_precision_refuses_what_it_cannot_evaluate(data):
    X, Y, _ = data
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    for kernel, Xfit in (("precomputed", K), (lambda a, b: float(np.exp(-np.sum((a - b) ** 2))), X[:50])):
        with pytest.raises(ValueError, match="CG\\(precision='mixed'\\)"):
            KernelRidge(kernel=kernel, solver=CG(precision="mixed")).fit(Xfit, Y[:len(Xfit), 0])
    with pytest.raises(ValueError, match="CG's precision"):
        KernelRidge(kernel="rbf", solver=CG(precision="half")).fit(X, Y)
    with pytest.raises(ValueError, match="preconditioner_dtype"):
        KernelRidge(kernel="rbf", solver=CG(preconditioner_dtype="float16")).fit(X, Y)
    # float32 samples: the kernel is float32 already, mixed has nothing to add
    with pytest.raises(ValueError, match="float32 samples"):
        KernelRidge(kernel="rbf", solver=CG(precision="mixed")).fit(X.astype(np.float32), Y)


def test_preconditioner_cuts_iterations(data):
    X, Y, _ = data
    plain = KernelRidge(alpha=1e-2, kernel="rbf", gamma=0.2, solver=CG(preconditioner_rank=0)).fit(X, Y)
    ranked = KernelRidge(alpha=1e-2, kernel="rbf", gamma=0.2,
                         solver=CG(preconditioner_rank=150, random_state=0)).fit(X, Y)
    assert ranked.solver_info_["preconditioner_rank"] == 150
    assert ranked.solver_info_["iterations"] * 2 < plain.solver_info_["iterations"]
    _close(ranked.predict(X), plain.predict(X), 1e-6)


def test_low_rank_preconditioner_is_the_inverse_on_the_factors_range(rng):
    """P⁻¹ (F Fᵀ + αI) v = v for v in range(F), and P⁻¹ v = v/(λ̂_r + α) off it (the scaled complement)."""
    F = rng.standard_normal((200, 12))
    pre = LowRankPreconditioner(F.copy(), [0.3])
    v = F @ rng.standard_normal(12)
    np.testing.assert_allclose(pre(((F @ F.T) @ v + 0.3 * v)[:, None], np.array([0]))[:, 0], v, atol=1e-10)
    w = rng.standard_normal(200)
    w -= pre.U @ (pre.U.T @ w)
    np.testing.assert_allclose(pre(w[:, None], np.array([0]))[:, 0], w / (pre.values[-1] + 0.3), atol=1e-12)


def test_low_rank_preconditioner_from_a_float32_factor(rng):
    """A float32 F (more rows than one of its float32 row blocks) is the preconditioner of the float64 matrix
    F Fᵀ to float32's accuracy: P⁻¹ (F Fᵀ + αI) v = v on range(F) within 1e-5, U kept in float32."""
    F = rng.standard_normal((20_000, 40)).astype(np.float32)
    pre = LowRankPreconditioner(F.copy(), [0.3])
    assert pre.U.dtype == np.float32
    F64 = F.astype(np.float64)
    V = F64 @ rng.standard_normal((40, 2))
    np.testing.assert_allclose(pre(F64 @ (F64.T @ V) + 0.3 * V, np.array([0, 0])), V, rtol=0,
                               atol=1e-5 * np.abs(V).max())


def test_pcg_handles_zero_columns_and_reports_non_convergence(rng):
    A = rng.standard_normal((80, 80))
    K = A @ A.T
    B = np.c_[rng.standard_normal(80), np.zeros(80)]
    X, info = pcg(lambda V: K @ V, B, [1e-3, 1.0], tol=1e-12, maxiter=3)
    # two iterations and the final check (maxiter keeps one product for it): the residuals are true ones
    assert not info["converged"] and info["iterations"] == 3 and info["residuals_are_true"]
    assert info["column_iterations"].tolist() == [2, 0]
    np.testing.assert_allclose(info["residuals"][0], np.linalg.norm(B[:, 0] - K @ X[:, 0] - 1e-3 * X[:, 0])
                               / np.linalg.norm(B[:, 0]), rtol=1e-10)
    # a tol below what rounding allows: CG restarts from the true residual once, sees no progress, stops
    X, info = pcg(lambda V: K @ V, B, [1e-3, 1.0], tol=1e-30, maxiter=10_000)
    assert info["stalled"] and not info["converged"] and info["residuals_are_true"] and info["iterations"] < 10_000
    assert info["residuals"][1] == 0 and (X[:, 1] == 0).all()


def test_pcg_leaves_a_broken_down_column_and_solves_the_others():
    """K = diag(1, 0, 2): b = e₂ meets a zero curvature at once (K is singular there), and CG leaves that
    column where it was and says so; b = (1, 0, 1) is solved; an indefinite K is still solved, and reported."""
    K = np.diag([1.0, 0.0, 2.0])
    X, info = pcg(lambda V: K @ V, np.c_[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], tol=1e-12, maxiter=20)
    assert info["broken_down"].tolist() == [1] and not info["converged"] and info["indefinite"] == 0.0
    np.testing.assert_allclose(X[:, 0], [1.0, 0.0, 0.5], rtol=1e-12)
    assert info["residuals"][0] <= 1e-12 and (X[:, 1] == 0).all()


def test_pcg_resumes_a_warm_start_whose_recurrence_drifts(rng):
    """x0 near the solution, verify=True: the recurrence starts from the true residual of x0, and the answer
    meets tol by its true residual."""
    A = rng.standard_normal((60, 60))
    K = A @ A.T + np.eye(60)
    b = rng.standard_normal((60, 1))
    exact = np.linalg.solve(K + 0.1 * np.eye(60), b)
    X, info = pcg(lambda V: K @ V, b, [0.1], tol=1e-10, maxiter=500, x0=exact + 1e-4 * rng.standard_normal((60, 1)))
    true = np.linalg.norm(b - K @ X - 0.1 * X) / np.linalg.norm(b)
    assert info["converged"] and info["residuals_are_true"] and true <= 1e-10
    assert info["residuals"][0] == pytest.approx(true, rel=1e-6)
    cold = pcg(lambda V: K @ V, b, [0.1], tol=1e-10, maxiter=500)[1]
    assert info["iterations"] < cold["iterations"]


def test_multishift_cg_solves_every_shift(rng):
    X = rng.standard_normal((300, 3))
    K = ref.kernel(X, kernel="rbf", gamma=0.5)
    b = rng.standard_normal(300)
    shifts = [1e-2, 0.1, 1.0, 10.0]
    Xs, info = cg_shifted(lambda V: K @ V, b, shifts, tol=1e-10, maxiter=2000)
    assert info["converged"]
    for j, s in enumerate(shifts):
        expected = np.linalg.solve(K + s * np.eye(300), b)
        np.testing.assert_allclose(Xs[:, j], expected, rtol=0, atol=1e-7 * np.abs(expected).max())
    plain = pcg(lambda V: K @ V, b[:, None], [1e-2], tol=1e-10, maxiter=2000)[1]["iterations"]
    assert info["iterations"] <= plain  # all four for the price of the hardest one


def test_nystrom_with_every_sample_as_centre_is_exact(data, rng):
    X, Y, X_new = data
    sw = rng.random(700) + 0.1
    ours = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.3, solver=Nystrom(n_landmarks=700, random_state=0)).fit(X, Y,
                                                                                                                sample_weight=sw)
    theirs = skr.KernelRidge(alpha=0.1, kernel="rbf", gamma=0.3).fit(X, Y, sample_weight=sw)
    assert ours.X_fit_.shape == (700, 5) and ours.dual_coef_.shape == (700, 2)
    _close(ours.predict(X_new), theirs.predict(X_new), 1e-6)


def test_nystrom_restricted_problem_matches_its_normal_equations(data):
    """β = (CᵀC + αW)⁻¹ Cᵀy on the chosen centres, solved in NumPy."""
    X, Y, X_new = data
    model = KernelRidge(alpha=0.05, kernel="rbf", gamma=0.3, solver=Nystrom(n_landmarks=60, random_state=1)).fit(X,
                                                                                                                 Y[:,
                                                                                                                   0])
    S = model.X_fit_
    C = ref.kernel(X, S, kernel="rbf", gamma=0.3)
    W = ref.kernel(S, kernel="rbf", gamma=0.3)
    beta = np.linalg.solve(C.T @ C + 0.05 * W, C.T @ Y[:, 0])
    expected = ref.kernel(X_new, S, kernel="rbf", gamma=0.3) @ beta
    _close(model.predict(X_new), expected, 1e-7)
    assert model.solver_info_["landmarks"] == "rpcholesky" and model.solver_info_["n_landmarks"] == 60


def test_precomputed_kernel_is_used_in_place_and_not_modified(data):
    X, Y, _ = data
    K = ref.kernel(X, kernel="rbf", gamma=0.2)
    K0 = K.copy()
    for solver in ("cholesky", "cg"):
        model = KernelRidge(alpha=0.1, kernel="precomputed", solver=CG(tol=1e-11) if solver == "cg" else solver).fit(K,
                                                                                                                     Y)
        theirs = skr.KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2).fit(X, Y)
        _close(model.predict(K), theirs.predict(X), 1e-8)
        np.testing.assert_array_equal(K, K0)
    assert model.solver_info_["storage"] == "full" and model.solver_info_["kernel_bytes"] == 0


def test_predict(data):
    """Native kernels: the cross kernel multiplied into β tile by tile equals K(X_new, X) β; float32 data
    with a float64 fit is evaluated in float64. Other kernels: the cross kernel in bounded chunks."""
    X, Y, X_new = data
    model = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2, solver="cholesky").fit(X, Y)
    expected = ref.kernel(X_new, X, kernel="rbf", gamma=0.2) @ model.dual_coef_
    _close(model.predict(X_new), expected, 1e-13)
    _close(model.predict(X_new.astype(np.float32)), ref.kernel(X_new.astype(np.float32).astype(np.float64), X,
                                                               kernel="rbf", gamma=0.2) @ model.dual_coef_, 1e-13)
    one = KernelRidge(alpha=0.1, kernel="rbf", gamma=0.2, solver="cholesky").fit(X, Y[:, 0])
    assert one.predict(X_new).shape == (120,)
    chi2 = KernelRidge(alpha=0.1, kernel="chi2", gamma=1.0, solver="cholesky").fit(np.abs(X), Y)
    whole = chi2.predict(np.abs(X_new))
    chi2.set_params(memory_limit=4 * 8 * 700 * 16)  # 16 rows per chunk
    _close(chi2.predict(np.abs(X_new)), whole, 1e-14)


def test_singular_kernel_falls_back_to_least_squares(rng):
    """alpha = 0 with a rank-3 linear kernel: Cholesky fails; like scikit-learn, a least-squares solution
    (and a warning that says so)."""
    X = rng.standard_normal((60, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    with pytest.warns(SingularKernelWarning, match="least-squares"):
        model = KernelRidge(alpha=0, kernel="linear").fit(X, y)
    assert model.solver_info_["singular"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = skr.KernelRidge(alpha=0, kernel="linear").fit(X, y)
    _close(model.predict(X), theirs.predict(X), 1e-8)


def test_cg_stopping_short_warns_and_says_so(data):
    X, Y, _ = data
    with pytest.warns(ConvergenceWarning, match="stopped after 3"):
        model = KernelRidge(alpha=1e-6, kernel="rbf", solver=CG(preconditioner_rank=0, max_iter=3)).fit(X, Y)
    assert not model.solver_info_["converged"] and model.n_iter_ == 3


def test_bad_input_names_the_argument_and_modifies_nothing(data):
    X, Y, _ = data
    y = Y[:, 0].copy()
    X0, y0 = X.copy(), y.copy()
    bad_y = y.copy()
    bad_y[3] = np.nan
    with pytest.raises(ValueError, match="y"):
        KernelRidge().fit(X, bad_y)
    bad_y[3] = np.inf
    with pytest.raises(ValueError, match="y"):
        KernelRidge().fit(X, bad_y)
    with pytest.raises(ValueError, match="X has 700 samples but y has 699"):
        KernelRidge().fit(X, y[:-1])
    with pytest.raises(ValueError, match="alpha must be finite and >= 0"):
        KernelRidge(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="alpha has 3 values but y has 2 targets"):
        KernelRidge(alpha=[1.0, 2.0, 3.0]).fit(X, Y)
    with pytest.raises(TypeError, match="alpha"):
        KernelRidge(alpha="big").fit(X, y)
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(700,\)"):
        KernelRidge().fit(X, y, sample_weight=np.ones(5))
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        KernelRidge().fit(X, y, sample_weight=-np.ones(700))
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        KernelRidge().fit(X, y, sample_weight=np.full(700, np.nan))
    with pytest.raises(ValueError, match="square"):
        KernelRidge(kernel="precomputed").fit(X @ X[:600].T, y)
    with pytest.raises(ValueError, match="solver must be one of"):
        KernelRidge(solver="lsqr").fit(X, y)
    with pytest.raises(ValueError, match="Cannot use solver='nystrom' with a precomputed kernel"):
        KernelRidge(kernel="precomputed", solver="nystrom").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="n_landmarks=701 is larger than the number of samples"):
        KernelRidge(kernel="rbf", solver=Nystrom(n_landmarks=701)).fit(X, y)
    with pytest.raises(MemoryError, match="solver='cholesky'"):
        KernelRidge(solver="cholesky", memory_limit=2**20).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_kernel_pca_inverse_transform_uses_kernel_ridge(rng, monkeypatch):
    """The pre-image map is fastkpca.KernelRidge on the library's solver choice: where the cost model predicts
    cg cheaper (here made so, by predicting CG to converge in one iteration with a preconditioner for free) it is
    solved by cg on a kernel operator, with the same answer as scikit-learn's dense solve."""
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    from fastkpca.solvers import choice

    monkeypatch.setattr(choice, "RIDGE_CG_ITERATIONS", 1)
    monkeypatch.setattr(choice, "ridge_preconditioner_seconds", lambda n, rank: 0.0)
    X = rng.standard_normal((2400, 4))
    ours = KernelPCA(n_components=3, kernel="rbf", gamma=0.2, fit_inverse_transform=True, alpha=0.1,
                     random_state=0).fit(X)
    theirs = SkKernelPCA(n_components=3, kernel="rbf", gamma=0.2, fit_inverse_transform=True, alpha=0.1,
                         eigen_solver="arpack", random_state=0).fit(X)
    assert ours.inverse_solver_info_["solver"] == "cg" and ours.inverse_solver_info_["converged"]
    Z = theirs.transform(X[:50])
    signs = np.sign(np.sum(ours.transform(X[:50]) * Z, axis=0))
    _close(ours.inverse_transform(Z * signs), theirs.inverse_transform(Z), 1e-5)


@pytest.mark.parametrize("estimator", [KernelRidge(), KernelRidge(kernel="rbf", solver="cg"),
                                       KernelRidge(kernel="rbf", solver="nystrom"),
                                       KernelRidge(kernel="rbf", solver=CG(tol=1e-6, preconditioner_rank=20)),
                                       KernelRidge(kernel="precomputed", solver="cg")],
                         ids=["auto", "cg", "nystrom", "cg-object", "precomputed-cg"])
# scikit-learn's checks set every parameter named random_state (set_random_state): KernelRidge's is deprecated
@pytest.mark.filterwarnings("ignore:KernelRidge\\(random_state=...\\) is deprecated:FutureWarning")
def test_check_estimator(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(estimator)


# ---------------------------------------------------------------------------------------------- KernelRidgeCV


def _loo_reference(K, y, alpha):
    """Leave-one-out MSE by refitting n times (NumPy)."""
    n = K.shape[0]
    errs = []
    for i in range(n):
        keep = np.arange(n) != i
        beta = np.linalg.solve(K[np.ix_(keep, keep)] + alpha * np.eye(n - 1), y[keep])
        errs.append(y[i] - K[i, keep] @ beta)
    return float(np.mean(np.square(errs)))


def test_cv_leave_one_out_matches_refitting(rng):
    from fastkpca import KernelRidgeCV

    X = rng.standard_normal((80, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(80)
    model = KernelRidgeCV(alphas=[0.01, 0.1, 1.0], kernel="rbf", gammas=[0.2, 1.0]).fit(X, y)
    res = model.cv_results_
    assert res["method"] == "loo-eigh" and res["mean_squared_error"].shape == (6,)
    for alpha, gamma, mse in zip(res["alpha"], res["gamma"], res["mean_squared_error"]):
        K = ref.kernel(X, kernel="rbf", gamma=gamma)
        assert mse == pytest.approx(_loo_reference(K, y, alpha), rel=1e-8)
    best = np.argmin(res["mean_squared_error"])
    assert model.alpha_ == res["alpha"][best] and model.gamma_ == res["gamma"][best]
    refit = KernelRidge(alpha=model.alpha_, kernel="rbf", gamma=model.gamma_).fit(X, y)
    _close(model.predict(X[:10]), refit.predict(X[:10]), 1e-12)


@pytest.mark.parametrize("matrix_free", [False, True])
def test_cv_kfold_dense_and_matrix_free_agree_with_refitting(matrix_free, rng, monkeypatch):
    from fastkpca import KernelRidgeCV

    X = rng.standard_normal((150, 3))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]
    alphas = [0.05, 0.5, 5.0]
    if matrix_free:  # as if the cost model predicted multi-shift CG cheaper
        from fastkpca.solvers import choice

        monkeypatch.setattr(choice, "MULTISHIFT_ITERATIONS", 0)
    model = KernelRidgeCV(alphas=alphas, kernel="rbf", gammas=[0.3], cv=3, tol=1e-12).fit(X, Y)
    assert model.cv_results_["method"] == ("kfold-multishift-cg" if matrix_free else "kfold-eigh")
    assert model.solver_info_["choice"]["picked"] == ("multishift-cg" if matrix_free else "eigh")
    K = ref.kernel(X, kernel="rbf", gamma=0.3)
    folds = np.array_split(np.arange(150), 3)
    for alpha, mse in zip(alphas, model.cv_results_["mean_squared_error"]):
        sq = []
        for held in folds:
            train = np.setdiff1d(np.arange(150), held)
            beta = np.linalg.solve(K[np.ix_(train, train)] + alpha * np.eye(train.size), Y[train])
            sq.append((Y[held] - K[np.ix_(held, train)] @ beta) ** 2)
        assert mse == pytest.approx(float(np.mean(np.vstack(sq))), rel=1e-6)


def test_cv_bad_input(rng):
    from fastkpca import KernelRidgeCV

    X = rng.standard_normal((20, 2))
    y = X[:, 0]
    with pytest.raises(ValueError, match="alphas"):
        KernelRidgeCV(alphas=[0.1, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="gammas"):
        KernelRidgeCV(gammas=[0.0]).fit(X, y)
    with pytest.raises(ValueError, match="cv=30 folds need at least 30 samples"):
        KernelRidgeCV(cv=30).fit(X, y)
    with pytest.raises(TypeError, match="cv"):
        KernelRidgeCV(cv=2.5).fit(X, y)
    with pytest.raises(MemoryError, match="use cv=k"):
        KernelRidgeCV(memory_limit=1000).fit(X, y)


def test_default_preconditioner_rank_follows_the_cost_of_a_pass():
    """A stored kernel (cheap passes): rank 500 within a quarter of the limit; a recomputed one (dear
    passes): up to 1000 within 60% of it; a float32 factor doubles both."""
    from fastkpca.solvers.ridge.systems import preconditioner_rank

    def fits(rank, share, itemsize=8):  # the n × r factor and the r × r algebra
        return itemsize * 100_000 * rank + 24 * rank**2 <= share * 2**30

    for stored, share in ((True, 0.25), (False, 0.6)):
        for itemsize in (8, 4):
            r = preconditioner_rank(None, 100_000, 2**30, stored=stored, itemsize=itemsize)
            assert fits(r, share, itemsize) and not fits(r + 1, share, itemsize)
    assert preconditioner_rank(None, 100_000, 2**30, stored=False) == 786
    assert preconditioner_rank(None, 100_000, 2**30, stored=False, itemsize=4) == 1479
    assert preconditioner_rank(None, 20_000, 20 * 2**30, stored=False, itemsize=4) == 2000
    assert preconditioner_rank(None, 20_000, 20 * 2**30, stored=True) == 500
    assert preconditioner_rank(None, 20_000, 20 * 2**30, stored=False) == 1000
    assert preconditioner_rank(None, 300, 20 * 2**30, stored=True) == 299
    assert preconditioner_rank(7, 300, 2**30, stored=False) == 7


def test_preconditioner_takes_the_memory_a_sliver_of_cached_tiles_would_waste():
    """Where the 40% left beside the default share would cache under a tenth of the recomputed kernel's
    triangle, the rank takes 90% of what cg's working memory leaves; where the cache would matter (or the
    kernel is stored, or no working figure is given) the shares are unchanged."""
    from fastkpca.solvers.ridge.systems import NEGLIGIBLE_CACHE, UNCACHED_SHARE, preconditioner_rank

    limit, working = 2**30, 200 * 2**20
    n = 100_000  # float32 triangle: 20 GB, far over 10 times 40% of 1 GiB
    r = preconditioner_rank(None, n, limit, stored=False, itemsize=4, working=working, kernel_itemsize=4)
    budget = UNCACHED_SHARE * (limit - working)
    assert 4 * n * r + 24 * r**2 <= budget < 4 * n * (r + 1) + 24 * (r + 1) ** 2
    assert r > preconditioner_rank(None, n, limit, stored=False, itemsize=4)
    assert preconditioner_rank(None, n, limit, stored=True, itemsize=4, working=working, kernel_itemsize=4) == \
        preconditioner_rank(None, n, limit, stored=True, itemsize=4)
    # Either side of the n at which 40% of 256 MiB holds a tenth of the float32 triangle (0.4 L = 0.2 n²)
    limit, working = 2**28, 20 * 2**20
    edge = (0.4 * limit / (NEGLIGIBLE_CACHE * 4 / 2)) ** 0.5
    for n, switched in ((int(edge) - 10, False), (int(edge) + 10, True)):
        plain = preconditioner_rank(None, n, limit, stored=False, itemsize=4)
        r = preconditioner_rank(None, n, limit, stored=False, itemsize=4, working=working, kernel_itemsize=4)
        assert plain < 2000 and (r > plain) == switched


def test_mixed_precision_accounting_counts_one_pass_and_one_slack():
    """The two operators' passes never overlap and share one process: mixed precision's fixed bytes are the
    two operators' working copies of X (three each: the core's copy and its two packed operands), their
    norms, the float32 copy of X and one plan slack."""
    from fastkpca.operators.storage import PLAN_SLACK_BYTES
    from fastkpca.solvers.ridge.systems import mixed_bytes

    n, d = 100_000, 64
    assert mixed_bytes(n, d) == 3 * 8 * n * d + 3 * 4 * n * d + 4 * n * d + 2 * 16 * n + PLAN_SLACK_BYTES


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_plans_count_the_working_copies_the_core_keeps(dtype, rng):
    """A native operator's own bytes (its copies of X and their norms) are what the planner sets aside for
    them, to the panels' padding."""
    from fastkpca import engines, kernels
    from fastkpca.operators.storage import PLAN_SLACK_BYTES, fixed_bytes

    n, d = 3000, 40
    X = rng.standard_normal((n, d)).astype(dtype)
    samples, _ = engines.select(X).fit_samples(KernelRidge(), X, None)
    kernel = samples.bind(kernels.make("rbf", gamma=0.1, degree=3, coef0=1, kernel_params=None, n_features=d,
                                       n_jobs=None))
    plan = samples.plan(kernel, block_size=1, memory_limit=2**30, other_bytes=0, storage="matrix_free")
    with samples.kernel_operator(kernel, plan, None) as op:
        held = op.native.nbytes
    planned = fixed_bytes(n, d, X.itemsize) - PLAN_SLACK_BYTES
    assert planned <= held <= 1.05 * planned


def test_preconditioner_dtype_float32_only_where_it_doubles_the_rank_and_alpha_allows(rng):
    """"auto": float32 where the limit holds a float64 factor below the default rank (N = 100,000 in 1 GiB, not
    N = 20,000) and float32's rounding of the factor is a thousandth of alpha or less."""
    from fastkpca.solvers.ridge.systems import preconditioner_dtype

    class Columns:
        def __init__(self, largest):
            self.largest = largest

        def diagonal(self):
            return np.full(10, self.largest)

    def choose(n, alpha, largest=1.0, requested="auto", rank=None):
        return preconditioner_dtype(requested, rank, n, 2**30, False, np.array([1.0, alpha]), Columns(largest))

    assert choose(100_000, 1e-3) == np.float32
    assert choose(100_000, 1e-6) == np.float64      # ε₃₂ = 1.2e-7 > 1e-3 · 1e-6
    assert choose(100_000, 1e-3, largest=1e5) == np.float64
    assert choose(20_000, 1e-3) == np.float64       # rank 1000 fits in float64: nothing to double
    assert choose(100_000, 1e-3, rank=300) == np.float64
    assert choose(20_000, 1e-9, requested="float32") == np.float32


def test_float32_preconditioner_factor_gives_the_same_answer(data):
    X, Y, X_new = data
    reference = KernelRidge(alpha=1e-2, kernel="rbf", solver="cholesky").fit(X, Y).predict(X_new)
    model = KernelRidge(alpha=1e-2, kernel="rbf",
                        solver=CG(tol=1e-11, preconditioner_dtype="float32", preconditioner_rank=100,
                                  random_state=0)).fit(X, Y)
    info = model.solver_info_
    assert info["preconditioner_dtype"] == "float32" and info["preconditioner_rank"] == 100 and info["converged"]
    _close(model.predict(X_new), reference, 1e-8)
    f64 = KernelRidge(alpha=1e-2, kernel="rbf",
                      solver=CG(tol=1e-11, preconditioner_dtype="float64", preconditioner_rank=100,
                                random_state=0)).fit(X, Y)
    # P⁻¹ applied to ~1e-6 costs iterations only near tight tols: 126 against 114 at 1e-11 (45 against 44 at
    # 1e-6 on N = 5,000 samples of the benchmark's data)
    assert info["iterations"] <= 1.2 * f64.solver_info_["iterations"]
