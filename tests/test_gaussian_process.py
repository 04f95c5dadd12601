"""GaussianProcessRegressor: scikit-learn's answers (the likelihood and every gradient entry, the fitted
hyperparameters, the predictions), from the native kernels and the gradient pass that never holds ∂K/∂θ, or from
a kernel object's own __call__; check_estimator (scikit-learn's test module: test_sklearn_suites.py); bad
input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.gaussian_process import GaussianProcessRegressor as SkGPR
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel as C,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

from sklearn.base import clone

import fastkpca
from fastkpca import GaussianProcessRegressor
from fastkpca.kernels import make
from fastkpca.kernels.gaussian_process import GaussianProcessKernel

D = 4


def data(n=120, d=D, seed=0, targets=None):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] + 0.1 * rng.standard_normal(n)
    if targets:
        y = np.column_stack([y * (t + 1) + t for t in range(targets)])
    return X, y


#: The forms evaluated natively (kernels/gaussian_process.py).
NATIVE = {
    "C*RBF+White": C(1.5) * RBF(0.8) + WhiteKernel(0.1),
    "C*RBF(ARD)+White": C(1.5) * RBF([0.8, 1.3, 0.6, 2.0]) + WhiteKernel(0.1),
    "C*Matern12(ARD)+White": C(0.7) * Matern([0.8, 1.3, 0.6, 2.0], nu=0.5) + WhiteKernel(0.05),
    "C*Matern32+White": C(0.7) * Matern(1.1, nu=1.5) + WhiteKernel(0.05),
    "C*Matern52(ARD)+White": C(2.0) * Matern([0.8, 1.3, 0.6, 2.0], nu=2.5) + WhiteKernel(0.2),
    "C1*RBF+C2*Matern+White": C(1.0) * RBF(0.7) + C(0.5) * Matern([1.0, 2.0, 1.5, 0.9], nu=2.5) + WhiteKernel(0.1),
    "RBF": RBF(1.2),
    "Matern12": Matern(0.9, nu=0.5),
    "RBF*C+C": RBF([1.0, 1.2, 0.8, 1.1]) * C(2.0) + C(0.3),
    "Matern(inf)": Matern(1.0, nu=np.inf),
    "fixed length": C(1.0) * RBF(1.0, length_scale_bounds="fixed") + WhiteKernel(0.1),
}
#: Forms evaluated by the object's own __call__.
FALLBACK = {
    "RationalQuadratic": C(1.0) * RationalQuadratic(1.0, 1.5) + WhiteKernel(0.1),
    "C*RBF*DotProduct+White": C(1.0) * RBF(1.5) * DotProduct(0.5) + WhiteKernel(0.1),
    "White": WhiteKernel(1.0),
    "DotProduct": DotProduct(1.0) + WhiteKernel(0.5),
    "Matern(nu=1)": Matern(1.0, nu=1.0),
}


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_native_forms_are_recognised(name):
    assert isinstance(make(NATIVE[name], n_features=D), GaussianProcessKernel)


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_other_kernels_use_their_own_call(name):
    assert not isinstance(make(FALLBACK[name], n_features=D), GaussianProcessKernel)


def smooth_data(n, seed=0, d=D):
    """A target whose hyperparameters the data determine (the optimiser's path is well conditioned: from the
    same start, numbers equal to rounding give the same optimum)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    return X, (np.sin(2 * X[:, 0]) + np.cos(1.5 * X[:, 1]) + 0.3 * X[:, 2] + 0.5 * np.sin(X[:, 3])
               + 0.1 * rng.standard_normal(n))


def lml_pair(kernel, X, y, theta, alpha=1e-2, normalize_y=False):
    ours = GaussianProcessRegressor(kernel, alpha=alpha, optimizer=None, normalize_y=normalize_y).fit(X, y)
    theirs = SkGPR(kernel, alpha=alpha, optimizer=None, normalize_y=normalize_y).fit(X, y)
    return ours.log_marginal_likelihood(theta, eval_gradient=True), theirs.log_marginal_likelihood(
        theta, eval_gradient=True)


def test_a_fit_without_optimiser_factors_once(monkeypatch):
    """Without an optimiser the exact fit factors K̂ once (scikit-learn factors it twice: once for the
    likelihood, once for L_): the likelihood comes from the final factor, equal to an evaluation's and to
    scikit-learn's value."""
    from fastkpca.solvers.gaussian_process import exact

    calls = []
    factor = exact.factor
    monkeypatch.setattr(exact, "factor", lambda *args, **kwargs: calls.append(1) or factor(*args, **kwargs))
    X, y = data()
    Y = np.column_stack([y, np.cos(y)])  # two targets: the sums over them too
    kernel = C(2.0) * RBF([1.0, 2.0, 0.5, 1.5]) + WhiteKernel(0.1)
    ours = GaussianProcessRegressor(kernel, alpha=1e-2, optimizer=None, solver="cholesky").fit(X, Y)
    assert len(calls) == 1 and ours.solver_info_["evaluations"] == 1 == ours.n_iter_
    evaluated = ours.log_marginal_likelihood(ours.kernel_.theta)
    assert len(calls) == 2  # the evaluation asked for factors again
    assert ours.log_marginal_likelihood_value_ == pytest.approx(evaluated, rel=1e-13)
    theirs = SkGPR(kernel, alpha=1e-2, optimizer=None).fit(X, Y)
    assert ours.log_marginal_likelihood_value_ == pytest.approx(theirs.log_marginal_likelihood_value_, rel=1e-10)


@pytest.mark.parametrize("n, targets, threads", [(1, 1, 1), (63, 1, 2), (64, 2, 1), (130, 3, 2)])
def test_the_gradient_weights_equal_their_formula(n, targets, threads):
    """exact.weights_in_place: W = c_outer α αᵀ + c_inverse K̂⁻¹ from K̂⁻¹ in the upper triangle (the strict lower
    one garbage), whole and exactly symmetric, on any thread count (tile edges at 64); α as dpotrs leaves it
    (Fortran-ordered)."""
    from fastkpca.solvers.gaussian_process import exact

    rng = np.random.default_rng(n)
    B = rng.standard_normal((n, n))
    inverse = B @ B.T
    A = np.asfortranarray(rng.standard_normal((n, targets)))
    W = np.triu(inverse) + np.tril(rng.standard_normal((n, n)), -1)  # only the upper triangle is read
    out = exact.weights_in_place(W, A, -0.5, 0.75, threads)
    assert out is W
    np.testing.assert_allclose(W, -0.5 * A @ A.T + 0.75 * inverse, rtol=1e-13, atol=1e-13 * np.abs(inverse).max())
    assert np.array_equal(W, W.T)


@pytest.mark.parametrize("name", sorted({**NATIVE, **FALLBACK}))
def test_likelihood_and_gradient_equal_scikit_learns(name):
    """At random hyperparameters within the bounds, value and every gradient entry to 1e-9 relative."""
    kernel = {**NATIVE, **FALLBACK}[name]
    X, y = data()
    rng = np.random.default_rng(1)
    for _ in range(3):
        theta = kernel.theta + rng.uniform(-0.7, 0.7, kernel.theta.shape)
        (ours, grad), (theirs, expected) = lml_pair(kernel, X, y, theta)
        assert ours == pytest.approx(theirs, rel=1e-9)
        scale = np.abs(expected).max()
        np.testing.assert_allclose(grad, expected, rtol=1e-9, atol=1e-9 * scale)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 60), st.integers(1, 5), st.sampled_from(sorted(NATIVE)), st.integers(0, 2**31 - 1),
       st.booleans())
def test_likelihood_against_finite_differences_and_scikit_learn(n, d, name, seed, normalize):
    """Any size and width (the ARD forms take d's length scales), per-sample noise, normalize_y."""
    rng = np.random.default_rng(seed)
    kernel = NATIVE[name]
    params = {key: np.full(d, 1.0) for key, value in kernel.get_params().items()
              if key.endswith("length_scale") and np.iterable(value)}
    kernel = clone(kernel).set_params(**params) if params else kernel  # set_params changes the object itself
    X, y = rng.uniform(-2, 2, (n, d)), rng.standard_normal(n)
    alpha = rng.uniform(0.05, 0.2, n)
    theta = kernel.theta + rng.uniform(-0.5, 0.5, kernel.theta.shape)
    (value, grad), (expected, expected_grad) = lml_pair(kernel, X, y, theta, alpha=alpha, normalize_y=normalize)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-8, atol=1e-8 * max(1.0, np.abs(expected_grad).max()))
    model = GaussianProcessRegressor(kernel, alpha=alpha, optimizer=None, normalize_y=normalize).fit(X, y)
    step = 1e-6
    for j in range(theta.shape[0]):
        e = np.zeros_like(theta)
        e[j] = step
        fd = (model.log_marginal_likelihood(theta + e) - model.log_marginal_likelihood(theta - e)) / (2 * step)
        assert grad[j] == pytest.approx(fd, rel=1e-4, abs=1e-5 * max(1.0, abs(value)))


@pytest.mark.parametrize("name", ["C*RBF(ARD)+White", "C*Matern52(ARD)+White", "C1*RBF+C2*Matern+White"])
def test_fit_equals_scikit_learns(name):
    """From the same start the optimiser sees the same numbers: the same hyperparameters, predictions and
    standard deviations."""
    kernel = NATIVE[name]
    X, y = smooth_data(150)
    new = smooth_data(40, seed=5)[0]
    ours = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0).fit(X, y)
    theirs = SkGPR(kernel, normalize_y=True, random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.kernel_.theta, theirs.kernel_.theta, rtol=1e-5, atol=1e-5)
    assert ours.log_marginal_likelihood_value_ == pytest.approx(theirs.log_marginal_likelihood_value_, rel=1e-8)
    mean, std = ours.predict(new, return_std=True)
    expected_mean, expected_std = theirs.predict(new, return_std=True)
    # the optima agree to ~1e-10 in theta (5e-6 for the two-term form): the fitted predictions to 1e-6
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-6, atol=1e-6 * np.abs(expected_mean).max())
    np.testing.assert_allclose(std, expected_std, rtol=1e-6, atol=1e-6 * np.abs(expected_std).max())
    np.testing.assert_allclose(ours.L_, theirs.L_, rtol=1e-6, atol=1e-6 * np.abs(theirs.L_).max())
    assert ours.solver_info_["evaluations"] > 1 and ours.solver_info_["kernel"] == "native"


def test_predictions_with_fixed_hyperparameters_equal_to_rounding():
    kernel = NATIVE["C1*RBF+C2*Matern+White"]
    X, y = data(200, targets=2)
    new = data(60, seed=7)[0]
    ours = GaussianProcessRegressor(kernel, alpha=1e-3, optimizer=None).fit(X, y)
    theirs = SkGPR(kernel, alpha=1e-3, optimizer=None).fit(X, y)
    for kwargs in ({}, {"return_std": True}, {"return_cov": True}):
        a, b = ours.predict(new, **kwargs), theirs.predict(new, **kwargs)
        for got, expected in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ours.sample_y(new[:10], 3, random_state=1), theirs.sample_y(new[:10], 3, random_state=1),
                               rtol=1e-6, atol=1e-8)


def test_restarts_and_callable_optimizer():
    kernel = C(1.0, (1e-2, 1e2)) * RBF(1.0, (1e-2, 1e2)) + WhiteKernel(0.1, (1e-4, 1e1))
    X, y = data(80)
    ours = GaussianProcessRegressor(kernel, n_restarts_optimizer=3, random_state=4).fit(X, y)
    theirs = SkGPR(kernel, n_restarts_optimizer=3, random_state=4).fit(X, y)
    np.testing.assert_allclose(ours.kernel_.theta, theirs.kernel_.theta, rtol=1e-5, atol=1e-5)

    def optimizer(obj_func, initial_theta, bounds):
        value, grad = obj_func(initial_theta)
        assert grad.shape == initial_theta.shape
        return initial_theta, value

    model = GaussianProcessRegressor(kernel, optimizer=optimizer).fit(X, y)
    np.testing.assert_allclose(model.kernel_.theta, kernel.theta)


def test_a_kernel_that_is_not_positive_definite_says_what_to_do():
    X = np.ones((5, 2))
    with pytest.raises(np.linalg.LinAlgError, match="increasing the 'alpha' parameter"):
        GaussianProcessRegressor(RBF(1.0, "fixed"), alpha=0.0, optimizer=None).fit(X, np.arange(5.0))
    gpr = GaussianProcessRegressor(RBF(1.0), alpha=1e-10, optimizer=None).fit(X[:1], [1.0])
    gpr.X_train_ = X  # the likelihood of a singular K is -inf with a zero gradient, as scikit-learn's
    gpr.y_train_ = np.arange(5.0)
    gpr.alpha = 0.0
    value, grad = gpr.log_marginal_likelihood(np.array([0.0]), eval_gradient=True)
    assert value == -np.inf and np.array_equal(grad, [0.0])


def test_bad_input_names_the_argument():
    X, y = data(30)
    with pytest.raises(ValueError, match="alpha must be a scalar or an array with same number of entries as y"):
        GaussianProcessRegressor(alpha=np.ones(7)).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        GaussianProcessRegressor().fit(np.where(X > 1.9, np.nan, X), y)
    with pytest.raises(ValueError, match="30 samples but y has 29|inconsistent numbers of samples"):
        GaussianProcessRegressor().fit(X, y[:-1])
    with pytest.raises(ValueError, match="n_targets"):
        GaussianProcessRegressor(n_targets=2).fit(X, y)
    with pytest.raises(TypeError, match="kernel"):
        GaussianProcessRegressor(kernel="rbf").fit(X, y)
    with pytest.raises(ValueError, match="optimizer"):
        GaussianProcessRegressor(optimizer="bfgs").fit(X, y)
    with pytest.raises(ValueError, match="requires that all bounds are finite"):
        GaussianProcessRegressor(C(1.0, (1e-2, np.inf)) * RBF(), n_restarts_optimizer=1).fit(X, y)
    with pytest.raises(MemoryError, match="the exact Gaussian process with 30 samples"):
        GaussianProcessRegressor(memory_limit=100, solver="cholesky").fit(X, y)
    with pytest.raises(MemoryError, match="with 30 samples .* needs .* but the memory limit is"):
        GaussianProcessRegressor(memory_limit=100).fit(X, y)  # auto, where no solver fits: the fewest bytes
    with pytest.raises(MemoryError, match="conjugate gradients on 30 samples"):
        GaussianProcessRegressor(memory_limit=100, solver="cg").fit(X, y)
    model = GaussianProcessRegressor(RBF(1.0, "fixed")).fit(X, y)
    with pytest.raises(ValueError, match="Gradient can only be evaluated for theta!=None"):
        model.log_marginal_likelihood(eval_gradient=True)
    with pytest.raises(RuntimeError, match="At most one of return_std or return_cov"):
        model.predict(X, return_std=True, return_cov=True)
    X0, y0 = X.copy(), y.copy()
    model.predict(X, return_std=True)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_the_other_estimators_take_the_native_gaussian_process_kernels():
    X, y = data(300)
    kernel = C(2.0) * Matern([0.8, 1.3, 0.6, 2.0], nu=1.5) + C(0.5) * RBF(1.5)
    Kx = kernel(X)
    kpca = fastkpca.KernelPCA(4, kernel=kernel, eigen_solver="lanczos", random_state=0, tol=1e-12).fit(X)
    pre = fastkpca.KernelPCA(4, kernel="precomputed", eigen_solver="lanczos", random_state=0, tol=1e-12).fit(Kx)
    np.testing.assert_allclose(kpca.eigenvalues_, pre.eigenvalues_, rtol=1e-10)
    ridge = fastkpca.KernelRidge(alpha=0.1, kernel=kernel, solver=fastkpca.CG(tol=1e-12)).fit(X, y)
    expected = kernel(X[:20], X) @ np.linalg.solve(Kx + 0.1 * np.eye(300), y)
    np.testing.assert_allclose(ridge.predict(X[:20]), expected, rtol=0, atol=1e-8)
    assert ridge.solver_info_["storage"] in ("packed", "full")


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    check_estimator(GaussianProcessRegressor())
    check_estimator(GaussianProcessRegressor(C(1.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.1)))


def test_patch_sklearn_covers_it():
    import sklearn.gaussian_process as skgp

    with fastkpca.sklearn_patched():
        assert skgp.GaussianProcessRegressor is GaussianProcessRegressor
    assert skgp.GaussianProcessRegressor is SkGPR


def test_structured_samples_go_through_the_kernel_object():
    from sklearn.gaussian_process.tests._mini_sequence_kernel import MiniSeqKernel

    X = ["AGCT", "AGC", "AACT", "TAA", "AAA", "GAACA"]
    y = np.array([1.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = GaussianProcessRegressor(MiniSeqKernel(baseline_similarity_bounds="fixed")).fit(X, y)
        theirs = SkGPR(MiniSeqKernel(baseline_similarity_bounds="fixed")).fit(X, y)
    np.testing.assert_allclose(ours.predict(X, return_std=True), theirs.predict(X, return_std=True), atol=1e-10)


def test_factorisations_of_any_size_run_on_every_blas_thread():
    """OpenBLAS's threaded dpotrf crashes on large matrices (solvers/dense/threads.py); the library's blocked
    factorisations do not call it on them, so they keep every BLAS thread at any size; only a small one runs on one
    thread (its work below BLAS_TEAM_MIN_SECONDS)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from fastkpca.solvers.dense.threads import blocked_threads

    def blas_threads():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    with threadpool_limits(2, user_api="blas"):  # whatever the run's own count (one in the suite's workers)
        before = blas_threads()
        if set(before) != {2}:
            pytest.skip(f"this BLAS does not take two threads ({before})")
        for n in (16_000, 17_000, 40_000):  # past the sizes where the threaded dpotrf crashed
            with blocked_threads(n):
                assert blas_threads() == before
        with blocked_threads(100):
            assert set(blas_threads()) == {1}
        assert blas_threads() == before


def test_predictions_solve_small_algebra_on_one_blas_thread():
    """A prediction's triangular solves run on one BLAS thread where they are small algebra (beside another
    process's work a second BLAS thread waits a scheduler's slice for a core: 8 ms for a 0.2 ms solve), on every
    BLAS thread where they are large; the classifier's latent variances likewise."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from fastkpca.solvers.gaussian_process import laplace_exact
    from fastkpca.solvers.gaussian_process.exact import prediction_threads

    def blas_threads():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        if set(before) != {2}:
            pytest.skip(f"this BLAS does not take two threads ({before})")
        with prediction_threads(1000, 10):  # 10⁷ flops
            assert set(blas_threads()) == {1}
        with prediction_threads(5000, 20_000):  # 5·10¹¹ flops
            assert blas_threads() == before
        assert blas_threads() == before
        seen = []
        original = laplace_exact.posterior_variance
        X, y = np.random.default_rng(0).standard_normal((60, 3)), np.arange(60) % 2
        model = fastkpca.GaussianProcessClassifier(optimizer=None).fit(X, y)
        try:
            laplace_exact.posterior_variance = lambda *a, **k: (seen.append(blas_threads()), original(*a, **k))[1]
            model.predict_proba(X[:5])
        finally:
            laplace_exact.posterior_variance = original
        assert seen and all(set(threads) == {1} for threads in seen)


@pytest.mark.parametrize("name", sorted(NATIVE) + sorted(FALLBACK))
def test_with_theta_reads_the_object_once(name):
    """A kernel at another θ (what every likelihood evaluation makes) has the terms' values of the object's
    clone_with_theta to the bit, without cloning or parsing the object; its object, names, bounds and θ are the
    clone's, and survive pickling."""
    import pickle

    from fastkpca.kernels.gaussian_process import terms_of

    kernel = NATIVE.get(name, FALLBACK.get(name))
    native = make(kernel, n_features=0)
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta = kernel.theta + rng.uniform(-2, 2, kernel.theta.shape)
        moved = native.with_theta(theta - 0.1).with_theta(theta)
        clone_ = kernel.clone_with_theta(theta)
        assert moved.hyperparameters == native.hyperparameters
        np.testing.assert_array_equal(moved.bounds, np.asarray(kernel.bounds).reshape(-1, 2))
        np.testing.assert_array_equal(moved.theta, theta)
        assert repr(pickle.loads(pickle.dumps(moved)).kernel) == repr(clone_)
        if name in NATIVE:
            ours, theirs = moved.terms, terms_of(clone_)
            assert (ours.white, ours.white_at) == (theirs.white, theirs.white_at)
            assert len(ours.terms) == len(theirs.terms)
            for a, b in zip(ours.terms, theirs.terms):
                assert (a.kind, a.constant, a.constant_at, a.length_at) == (b.kind, b.constant, b.constant_at,
                                                                            b.length_at)
                assert (a.length_scale is None) == (b.length_scale is None)
                assert a.length_scale is None or np.array_equal(a.length_scale, b.length_scale)
    with pytest.raises(ValueError, match="free hyperparameters"):
        native.with_theta(np.zeros(kernel.theta.size + 1))
