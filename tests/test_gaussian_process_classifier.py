"""GaussianProcessClassifier: the Laplace mode, likelihood and gradient against the book's algorithms written here
in NumPy from the formulas, against finite differences and against scikit-learn (value, every gradient entry,
probabilities, fitted likelihood, one-vs-rest and one-vs-one); warm start; check_estimator (scikit-learn's test
module: test_sklearn_suites.py); bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.gaussian_process import GaussianProcessClassifier as SkGPC
from sklearn.gaussian_process.kernels import (
    RBF,
    CompoundKernel,
    ConstantKernel as C,
    DotProduct,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)

import fastkpca
from fastkpca import CG, GaussianProcessClassifier
from fastkpca.solvers.gaussian_process import laplace

D = 3


def data(n=80, d=D, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, d))
    latent = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] ** 2 - X[:, 2] + 0.3 * rng.standard_normal(n)
    if classes == 2:
        return X, (latent > 0.5).astype(int)
    return X, np.digitize(latent, np.quantile(latent, np.linspace(0, 1, classes + 1)[1:-1]))


#: The forms evaluated natively (kernels/gaussian_process.py), with every hyperparameter free.
NATIVE = {
    "C*RBF(ARD)": C(1.5) * RBF([0.8, 1.3, 0.6]),
    "C*RBF+White": C(1.5) * RBF(0.8) + WhiteKernel(0.1),
    "C*Matern12": C(0.7) * Matern(0.8, nu=0.5),
    "C*Matern32(ARD)": C(0.7) * Matern([1.1, 0.7, 1.4], nu=1.5),
    "C*Matern52+White": C(2.0) * Matern(1.0, nu=2.5) + WhiteKernel(0.2),
    "C1*RBF+C2*Matern52(ARD)": C(1.0) * RBF(0.7) + C(0.5) * Matern([1.0, 2.0, 1.5], nu=2.5),
    "RBF": RBF(1.2),
}
#: Forms evaluated by the object's own __call__.
FALLBACK = {
    "RationalQuadratic": C(1.0) * RationalQuadratic(1.0, 1.5),
    "C*RBF*DotProduct": C(1.0) * RBF(1.5) * DotProduct(0.5),
}


# ------------------------------------------------------------------------- the book's algorithms in NumPy

def book_laplace(K, dK, y, max_iter=100):
    """Rasmussen and Williams, Algorithms 3.1 (mode) and 5.1 (likelihood and gradient), written from the formulas
    with explicit inverses: a reference independent of both implementations. Newton stops when log q stops
    rising by 1e-10 (the value of the iterate before, scikit-learn's rule)."""
    n = len(y)
    f = np.zeros(n)
    value = -np.inf
    for _ in range(max_iter):
        pi = expit(f)
        W = pi * (1 - pi)
        S = np.sqrt(W)
        B = np.eye(n) + S[:, None] * K * S[None, :]
        b = W * f + (y - pi)
        a = b - S * np.linalg.solve(B, S * (K @ b))
        f = K @ a
        step = -0.5 * a @ f - np.log1p(np.exp(-(2 * y - 1) * f)).sum() - 0.5 * np.linalg.slogdet(B)[1]
        if step - value < 1e-10:
            break
        value = step
    # gradient at the last step's quantities
    R = S[:, None] * np.linalg.inv(B) * S[None, :]
    Sigma = K - K @ R @ K  # (K⁻¹ + W)⁻¹
    s2 = -0.5 * np.diag(Sigma) * (pi * (1 - pi) * (1 - 2 * pi))
    grad = np.empty(dK.shape[2])
    for j in range(dK.shape[2]):
        Cj = dK[:, :, j]
        s1 = 0.5 * a @ Cj @ a - 0.5 * np.trace(R @ Cj)
        bj = Cj @ (y - pi)
        s3 = bj - K @ (R @ bj)
        grad[j] = s1 + s2 @ s3
    return value, grad, f


def random_thetas(kernel, count, seed):
    rng = np.random.default_rng(seed)
    return [kernel.theta + rng.uniform(-0.7, 0.7, kernel.theta.shape) for _ in range(count)]


@pytest.mark.parametrize("name", [*NATIVE, *FALLBACK])
def test_likelihood_and_gradient_equal_the_book_and_scikit_learn(name):
    kernel = {**NATIVE, **FALLBACK}[name]
    X, y = data()
    ours = GaussianProcessClassifier(kernel, optimizer=None).fit(X, y)
    assert ours.base_estimator_.solver_info_["kernel"] == ("native" if name in NATIVE else "python")
    theirs = SkGPC(kernel, optimizer=None).fit(X, y)
    for theta in random_thetas(kernel, 3, seed=len(name)):
        value, gradient = ours.log_marginal_likelihood(theta, eval_gradient=True)
        sk_value, sk_gradient = theirs.log_marginal_likelihood(theta, eval_gradient=True)
        K, dK = kernel.clone_with_theta(theta)(X, eval_gradient=True)
        book_value, book_gradient, _ = book_laplace(K, dK, y.astype(float))
        np.testing.assert_allclose(value, book_value, rtol=1e-9)
        np.testing.assert_allclose(gradient, book_gradient, rtol=1e-7, atol=1e-9 * np.abs(book_gradient).max())
        np.testing.assert_allclose(value, sk_value, rtol=1e-9)
        np.testing.assert_allclose(gradient, sk_gradient, rtol=1e-9, atol=1e-12 * np.abs(sk_gradient).max())
        # the same θ, fixed: the probabilities scikit-learn's approximation gives
        ours_at = GaussianProcessClassifier(kernel.clone_with_theta(theta), optimizer=None).fit(X, y)
        theirs_at = SkGPC(kernel.clone_with_theta(theta), optimizer=None).fit(X, y)
        X_new = data(40, seed=7)[0]
        np.testing.assert_allclose(ours_at.predict_proba(X_new), theirs_at.predict_proba(X_new), atol=1e-6, rtol=0)
        np.testing.assert_array_equal(ours_at.predict(X_new), theirs_at.predict(X_new))
        mean, var = ours_at.latent_mean_and_variance(X_new)
        sk_mean, sk_var = theirs_at.latent_mean_and_variance(X_new)
        np.testing.assert_allclose(mean, sk_mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(var, sk_var, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", ["C*RBF(ARD)", "C*Matern52+White", "C1*RBF+C2*Matern52(ARD)"])
def test_gradient_against_finite_differences(name):
    kernel = NATIVE[name]
    X, y = data(60, seed=3)
    model = GaussianProcessClassifier(kernel, optimizer=None).fit(X, y)
    theta = kernel.theta + 0.2
    _, gradient = model.log_marginal_likelihood(theta, eval_gradient=True)
    step = 1e-5
    lml = model.log_marginal_likelihood
    numeric = np.array([(lml(theta + step * e) - lml(theta - step * e)) / (2 * step) for e in np.eye(theta.size)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-4, atol=1e-6)


def test_mode_from_another_start_is_scikit_learns_mode():
    """The fit's Newton (laplace.settled_mode, started at another θ's mode and halving steps) finds the mode
    scikit-learn's iteration finds from zero, and the same likelihood."""
    from fastkpca.solvers.gaussian_process.laplace_exact import ExactLaplace
    from fastkpca.kernels import make

    X, y = data(100, seed=5)
    kernel = C(3.0) * RBF([0.5, 1.0, 2.0])
    solver = ExactLaplace(X, y.astype(float), memory_limit=10**8)
    native = make(kernel, n_features=0)
    far = native.with_theta(kernel.theta + np.log([30.0, 0.1, 0.1, 0.1]))  # a distant θ: its mode is a poor start
    _, _, far_mode = solver.evaluate(far, ("f", np.zeros(100)), 100, False)
    reference, reference_gradient, ref_mode = solver.evaluate(native, ("f", np.zeros(100)), 100, True)
    value, gradient, mode = solver.evaluate(native, ("settled", far_mode.f), 100, True)
    np.testing.assert_allclose(mode.f, ref_mode.f, atol=1e-8)
    np.testing.assert_allclose(value, reference, rtol=1e-10)
    np.testing.assert_allclose(gradient, reference_gradient, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["C*RBF(ARD)", "C*Matern52+White", "C*Matern12"])
def test_newton_steps_by_cg_find_the_factored_mode(monkeypatch, name):
    """settled_mode's steps by CG on the held K (laplace_exact, where the cost model picks them; here asked for)
    give the mode, likelihood and gradient the factored steps give, from another θ's mode and from the last
    mode's a; a step whose CG stops short is taken by the factor."""
    from fastkpca.kernels import make
    from fastkpca.solvers.gaussian_process import laplace_exact, newton_cg

    X, y = data(300, seed=21)
    kernel = NATIVE[name]
    native = make(kernel, n_features=0)
    far = native.with_theta(kernel.theta + 0.3)
    results = {}
    for steps in ("factor", "cg"):
        solver = laplace_exact.ExactLaplace(X, y.astype(float), memory_limit=10**8, newton_steps=steps)
        _, _, far_mode = solver.evaluate(far, ("settled", None), 100, False)
        results[steps] = solver.evaluate(native, ("settled", far_mode.f), 100, True), solver.info()["newton"]
    (value, gradient, mode), factored = results["factor"]
    (value_g, gradient_g, mode_g), counts = results["cg"]
    assert factored["cg_steps"] == 0 and counts["cg_steps"] > 0 and counts["factored_steps"] == 0
    assert counts["cg_products"] <= 6 * counts["cg_steps"]  # the Nyström factor explains K: few products a step
    np.testing.assert_allclose(mode_g.f, mode.f, atol=1e-8 * np.abs(mode.f).max())
    np.testing.assert_allclose(value_g, value, rtol=1e-11)
    np.testing.assert_allclose(gradient_g, gradient, rtol=1e-7, atol=1e-9)
    monkeypatch.setattr(newton_cg, "NEWTON_CG_ITERATIONS", 0)  # every CG stops short
    solver = laplace_exact.ExactLaplace(X, y.astype(float), memory_limit=10**8, newton_steps="cg")
    value_f, _, _ = solver.evaluate(native, ("settled", None), 100, False)
    assert solver.info()["newton"]["factored_steps"] > 0
    np.testing.assert_allclose(value_f, value, rtol=1e-9)  # from zero: another path to the mode


@pytest.mark.parametrize("saturated", [False, True])
def test_newton_cg_step_forms_solve_the_step(saturated):
    """newton_cg_step's two right-hand sides (S⁻¹g, saving K g's product, and S K g) give (I + W K)⁻¹ b and
    its K a as a dense solve does, from zero and from an iterate; where W underflows (|f| > 37: π rounds to
    0 or 1) S⁻¹g is not finite and the product form is taken; the step's residual meets the forcing term."""
    from fastkpca.solvers.gaussian_process import newton_cg

    rng = np.random.default_rng(3)
    n = 200
    X = rng.uniform(-2, 2, (n, 3))
    K = 300.0 * np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 0.8**2)
    f = rng.normal(scale=4, size=n)
    y = (rng.random(n) < 0.5).astype(float)
    if saturated:
        f[:5], y[:5] = 60.0, 0.0  # π = 1 exactly, W = 0, and misclassified: g ≠ 0 there
    pi = expit(f)
    W = pi * (1 - pi)
    S, b = np.sqrt(W), W * f + (y - pi)
    pivots = rng.choice(n, 40, replace=False)
    F = np.linalg.solve(np.linalg.cholesky(K[np.ix_(pivots, pivots)]), K[pivots]).T
    pre = newton_cg.step_preconditioner(S, F, np.maximum(np.diag(K) - (F**2).sum(1), 0.0))
    exact = np.linalg.solve(np.eye(n) + W[:, None] * K, b)
    near = exact + 1e-2 * rng.standard_normal(n)
    near[:5] += 0.5 if saturated else 0.0
    for start in (None, (near, K @ near)):
        g = b if start is None else b - start[0] - W * start[1]
        products: list = []

        def times(v, products=products):
            products.append(1)
            return K @ v

        a, Ka, info = newton_cg.newton_cg_step(times, S, b, start, pre=pre, tol=1e-9)
        assert info["form"] == ("product" if saturated else "scaled")
        assert info["converged"] and info["iterations"] == len(products)
        np.testing.assert_allclose(Ka, K @ a, rtol=1e-12, atol=1e-12 * np.abs(K @ a).max())
        residual = np.linalg.norm(a + W * Ka - b)
        floor = newton_cg.RESIDUAL_FLOOR * np.linalg.norm(W * (K @ g))  # the product form's start: S (S K g)
        assert residual <= 1.01 * max(1e-9 * np.linalg.norm(g), floor if info["form"] == "product" else 0.0)
        np.testing.assert_allclose(a, exact, atol=1e-6 * np.abs(exact).max())


@pytest.mark.parametrize("name", ["C*RBF(ARD)", "C*Matern52+White"])
def test_fit_is_at_least_as_good_as_scikit_learns(name):
    kernel = NATIVE[name]
    X, y = data(120, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = GaussianProcessClassifier(kernel, random_state=0).fit(X, y)
        theirs = SkGPC(kernel, random_state=0).fit(X, y)
    assert ours.log_marginal_likelihood_value_ >= theirs.log_marginal_likelihood_value_ - 1e-6 * abs(
        theirs.log_marginal_likelihood_value_)
    # the reported value is the likelihood of the fitted θ (scikit-learn's evaluation there)
    np.testing.assert_allclose(ours.log_marginal_likelihood_value_,
                               theirs.log_marginal_likelihood(ours.kernel_.theta), rtol=1e-8)
    X_new = data(50, seed=12)[0]
    np.testing.assert_allclose(ours.predict_proba(X_new), theirs.predict_proba(X_new), atol=1e-3)


@pytest.mark.parametrize("multi_class", ["one_vs_rest", "one_vs_one"])
def test_multi_class_as_scikit_learns(multi_class):
    X, y = data(90, seed=2, classes=3)
    kernel = C(1.0) * RBF(1.0)
    ours = GaussianProcessClassifier(kernel, optimizer=None, multi_class=multi_class).fit(X, y)
    theirs = SkGPC(kernel, optimizer=None, multi_class=multi_class).fit(X, y)
    X_new = data(30, seed=4)[0]
    np.testing.assert_array_equal(ours.predict(X_new), theirs.predict(X_new))
    np.testing.assert_allclose(ours.log_marginal_likelihood_value_, theirs.log_marginal_likelihood_value_, rtol=1e-9)
    assert isinstance(ours.kernel_, CompoundKernel) and ours.n_classes_ == 3
    theta = ours.kernel_.theta
    np.testing.assert_allclose(ours.log_marginal_likelihood(theta), theirs.log_marginal_likelihood(theta), rtol=1e-9)
    if multi_class == "one_vs_rest":
        np.testing.assert_allclose(ours.predict_proba(X_new), theirs.predict_proba(X_new), atol=1e-6, rtol=0)
    else:
        with pytest.raises(ValueError, match="one_vs_one multi-class mode does not support"):
            ours.predict_proba(X_new)
    with pytest.raises(NotImplementedError):
        ours.log_marginal_likelihood(theta, eval_gradient=True)
    # fitted hyperparameters, side by side (n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = GaussianProcessClassifier(kernel, multi_class=multi_class, n_jobs=2).fit(X, y)
        sk_fitted = SkGPC(kernel, multi_class=multi_class).fit(X, y)
    np.testing.assert_allclose(fitted.log_marginal_likelihood_value_, sk_fitted.log_marginal_likelihood_value_,
                               rtol=1e-6)
    # the estimator records its fit, as the other families do: each binary model's record, their sums
    models = fitted.base_estimator_.estimators_
    assert fitted.solver_info_["models"] == [model.solver_info_ for model in models] and len(models) == 3
    assert fitted.solver_info_["solver"] == "cholesky"
    assert fitted.solver_info_["evaluations"] == sum(model.solver_info_["evaluations"] for model in models) > 3


def test_solver_info_of_a_binary_fit_is_its_models():
    X, y = data(60, seed=3)
    model = GaussianProcessClassifier(C(1.0) * RBF(1.0), random_state=0).fit(X, y)
    assert model.solver_info_["models"] == [model.base_estimator_.solver_info_]
    assert model.solver_info_["solver"] == model.base_estimator_.solver_info_["solver"] == "cholesky"
    assert model.solver_info_["seconds"] == model.base_estimator_.solver_info_["seconds"] > 0


def test_warm_start_reuses_the_mode():
    """warm_start: scikit-learn's meaning, Newton from the last mode found (f_cached) at every evaluation and
    at the start of the next fit; the same likelihood, in fewer steps near the last θ."""
    X, y = data(100, seed=8)
    kernel = C(1.0) * RBF([1.0, 1.0, 1.0])
    warm = GaussianProcessClassifier(kernel, warm_start=True, random_state=0).fit(X, y)
    cold = GaussianProcessClassifier(kernel, random_state=0).fit(X, y)
    np.testing.assert_allclose(warm.log_marginal_likelihood_value_, cold.log_marginal_likelihood_value_, rtol=1e-8)
    theta = cold.kernel_.theta + 0.01

    def steps(model):
        before = model.base_estimator_._newton_steps
        value = model.log_marginal_likelihood(theta)
        return model.base_estimator_._newton_steps - before, value

    (warm_steps, warm_value), (cold_steps, cold_value) = steps(warm), steps(cold)
    assert warm_steps < cold_steps
    np.testing.assert_allclose(warm_value, cold_value, rtol=1e-9)
    np.testing.assert_allclose(warm.base_estimator_.f_cached, cold.base_estimator_.f_cached, atol=1e-6)
    # a refit starts from the last mode and finds the same model
    binary = warm.base_estimator_
    binary.fit(X, y)
    np.testing.assert_allclose(binary.log_marginal_likelihood_value_, cold.log_marginal_likelihood_value_, rtol=1e-8)
    binary.fit(X[:60], y[:60])  # other samples: the last mode does not fit them and is not used
    assert binary.f_cached.shape == (60,)


def test_bad_input_names_the_argument():
    X, y = data(30)
    with pytest.raises(ValueError, match="requires 2 or more distinct classes; got 1 class"):
        GaussianProcessClassifier().fit(X, np.ones(30))
    with pytest.raises(ValueError, match="NaN"):
        GaussianProcessClassifier().fit(np.where(X > 1.9, np.nan, X), y)
    with pytest.raises(ValueError, match="30 samples but y has 29|inconsistent numbers of samples"):
        GaussianProcessClassifier().fit(X, y[:-1])
    with pytest.raises(ValueError, match="multi_class"):
        GaussianProcessClassifier(multi_class="crammer_singer").fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        GaussianProcessClassifier(solver="lu").fit(X, y)
    with pytest.raises(ValueError, match="max_iter_predict"):
        GaussianProcessClassifier(max_iter_predict=0).fit(X, y)
    with pytest.raises(TypeError, match="kernel"):
        GaussianProcessClassifier(kernel="rbf").fit(X, y)
    with pytest.raises(ValueError, match="kernel cannot be a CompoundKernel"):
        GaussianProcessClassifier(kernel=CompoundKernel([RBF(), RBF()])).fit(X, y)
    with pytest.raises(ValueError, match="optimizer"):
        GaussianProcessClassifier(optimizer="bfgs").fit(X, y)
    with pytest.raises(ValueError, match="requires that all bounds are finite"):
        GaussianProcessClassifier(C(1.0, (1e-2, np.inf)) * RBF(), n_restarts_optimizer=1).fit(X, y)
    with pytest.raises(MemoryError, match="the exact Laplace approximation with 30 samples"):
        GaussianProcessClassifier(memory_limit=100, solver="cholesky").fit(X, y)
    # auto where no solver fits: the one the cost model says needs the fewest bytes (solvers/choice.py)
    with pytest.raises(MemoryError, match="the exact Laplace approximation with 30 samples|conjugate gradients on 30"):
        GaussianProcessClassifier(memory_limit=100).fit(X, y)
    model = GaussianProcessClassifier(RBF(1.0, "fixed")).fit(X, y)
    with pytest.raises(ValueError, match="Gradient can only be evaluated for theta!=None"):
        model.log_marginal_likelihood(eval_gradient=True)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    X0, y0 = X.copy(), y.copy()
    model.predict_proba(X)
    GaussianProcessClassifier(copy_X_train=False).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_restarts_and_callable_optimizer():
    X, y = data(40, seed=9)
    kernel = C(1.0, (1e-2, 1e2)) * RBF([1.0] * D, (1e-2, 1e2))
    values = []
    for restarts in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = GaussianProcessClassifier(kernel, n_restarts_optimizer=restarts, random_state=0).fit(X, y)
        values.append(model.log_marginal_likelihood_value_)
        lower, upper = kernel.bounds.T
        assert np.all(model.kernel_.theta >= lower - 1e-12) and np.all(model.kernel_.theta <= upper + 1e-12)
    assert values[1] >= values[0] - 1e-7 and values[2] >= values[1] - 1e-7

    calls = []

    def optimizer(obj_func, initial_theta, bounds):
        calls.append(obj_func(initial_theta))
        return initial_theta, obj_func(initial_theta, eval_gradient=False)

    model = GaussianProcessClassifier(kernel, optimizer=optimizer).fit(X, y)
    assert calls and len(calls[0]) == 2
    np.testing.assert_allclose(model.kernel_.theta, kernel.theta)


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(GaussianProcessClassifier())


def test_patch_sklearn_covers_it():
    import sklearn.gaussian_process as skgp

    with fastkpca.sklearn_patched():
        assert skgp.GaussianProcessClassifier is GaussianProcessClassifier
    assert skgp.GaussianProcessClassifier is SkGPC


def test_latent_probability_is_the_integral():
    """scikit-learn's error-function approximation of ∫ σ(z) N(z | m, v) dz, against quadrature."""
    from scipy import integrate
    from scipy.stats import norm

    for mean, var in [(0.0, 1.0), (1.5, 0.3), (-2.0, 4.0), (0.3, 1e-4)]:
        sd = np.sqrt(var)
        density = norm(mean, sd).pdf
        exact = integrate.quad(lambda z, p=density: expit(z) * p(z), mean - 12 * sd, mean + 12 * sd)[0]
        np.testing.assert_allclose(laplace.latent_probability(np.array([mean]), np.array([var]))[0], exact,
                                   atol=2e-3)


# ----------------------------------------------------------------------------------------- solver="cg"

def test_cg_estimates_the_exact_likelihood_gradient_and_probabilities():
    """The iterative solver against the exact one through the same interface: the likelihood within its
    standard error's few multiples, the gradient's direction, the mode (probabilities) to CG's tolerance."""
    X, y = data(500, seed=13)
    kernel = C(1.0) * RBF([1.0, 1.5, 0.8])
    exact = GaussianProcessClassifier(kernel, optimizer=None, solver="cholesky").fit(X, y)
    cg = GaussianProcessClassifier(kernel, optimizer=None, solver="cg", random_state=0).fit(X, y)
    assert cg.base_estimator_.solver_info_["solver"] == "cg" and not hasattr(cg.base_estimator_, "L_")
    for theta in random_thetas(kernel, 3, seed=1):
        value, gradient = exact.log_marginal_likelihood(theta, eval_gradient=True)
        estimate, estimated = cg.log_marginal_likelihood(theta, eval_gradient=True)
        error = cg.base_estimator_._solver.info()["standard_error"]  # this evaluation's (solver_info_ is the fit's)
        assert abs(estimate - value) <= max(5 * error, 1e-5 * abs(value)), (estimate, value, error)
        cosine = gradient @ estimated / np.linalg.norm(gradient) / np.linalg.norm(estimated)
        assert cosine > 0.995, cosine
    X_new = data(100, seed=14)[0]
    np.testing.assert_allclose(cg.predict_proba(X_new), exact.predict_proba(X_new), atol=1e-6)
    np.testing.assert_array_equal(cg.predict(X_new), exact.predict(X_new))
    mean, var = cg.latent_mean_and_variance(X_new)
    exact_mean, exact_var = exact.latent_mean_and_variance(X_new)
    np.testing.assert_allclose(var, exact_var, rtol=1e-5, atol=1e-8)


def test_cg_settles_by_the_predicted_step(monkeypatch):
    """cg's Newton iteration settles where the next step, predicted with the preconditioner's K̃ (no product),
    is below the tolerance: the same likelihood and gradient as the iteration that takes the confirming step,
    in fewer steps and products, from a nearby θ's mode as the optimiser's evaluations start."""
    from fastkpca.solvers.gaussian_process import laplace_iterative

    X, y = data(300, seed=24)
    kernel = C(50.0) * RBF([1.0, 1.5, 0.8])
    figures = {}
    for predicted in (True, False):
        if not predicted:
            monkeypatch.delattr(laplace_iterative._IterativeNewton, "predicted_move")
        model = GaussianProcessClassifier(kernel, optimizer=None, solver=CG(likelihood_rtol=None), random_state=0,
                                          warm_start=True)  # the fitted solver's probes, its products
        binary = model.fit(X, y).base_estimator_
        steps, products, values = binary._newton_steps, binary._solver.info()["products"], []
        for shift in (0.02, 0.0, -0.01):  # warm_start: each from the last evaluation's mode (settled_mode)
            values.append(model.log_marginal_likelihood(kernel.theta + shift, eval_gradient=True))
        figures[predicted] = (values, binary._newton_steps - steps, binary._solver.info()["products"] - products)
    (predicted_values, predicted_steps, predicted_products), (values, steps, products) = figures.values()
    for (value, gradient), (expected, expected_gradient) in zip(predicted_values, values):
        np.testing.assert_allclose(value, expected, rtol=1e-9)
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-4, atol=1e-6 * np.abs(gradient).max())
    assert predicted_steps < steps and predicted_products < products


def test_gain_stop_skips_the_first_iteration_and_stops_a_creeping_fit():
    """GainStop (cg's L-BFGS-B stopping rule): a first iteration whose gain is tiny only because L-BFGS-B's
    first step on a box is the gradient itself does not stop the fit (scipy's ftol at the same level does);
    a fit whose gains keep falling stops where two in a row are below the level."""
    import scipy.optimize

    from fastkpca.solvers.gaussian_process.gain_stop import GainStop

    def minimise(func, x0, bounds, **kwargs):
        stop = GainStop(1e-6)

        def objective(x):
            value, gradient = func(x)
            stop.record(x, value)
            return value, gradient

        try:
            result = scipy.optimize.minimize(objective, x0, method="L-BFGS-B", jac=True, bounds=bounds,
                                             callback=stop, **kwargs)
        except StopIteration:  # scipy before 1.11
            result = None
        return stop, result

    def shallow(x):  # a minimum at 5 with a gradient of 1e-4 at the start
        return 1e-5 * float(np.sum((x - 5.0) ** 2)), 2e-5 * (x - 5.0)

    _, ftol = minimise(shallow, np.zeros(2), [(-10, 10)] * 2, options={"ftol": 1e-6})
    assert ftol.nit == 1 and np.abs(ftol.x - 5.0).max() > 4.9  # scipy's test stops at the first step
    stop, result = minimise(shallow, np.zeros(2), [(-10, 10)] * 2)
    found = stop.last[0] if stop.stopped else result.x
    np.testing.assert_allclose(found, 5.0, atol=1e-3)

    def creeping(x):  # gains that fall geometrically along a flat direction, towards the bound 50
        return float(np.exp(-x[0])), np.array([-np.exp(-x[0])])

    stop, result = minimise(creeping, np.array([1.0]), [(-1.0, 50.0)], options={"gtol": 1e-12})  # cg's gtol/n
    assert stop.stopped and stop.last[1] < 1e-5
    gains = -np.diff(stop.values)
    assert (gains[-2:] < 1e-6).all() and (gains[1:-2] >= 1e-6).any()


def test_cg_fit_finds_the_exact_fit():
    X, y = data(400, seed=15)
    kernel = C(1.0) * RBF([1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = GaussianProcessClassifier(kernel, solver="cholesky").fit(X, y)
        cg = GaussianProcessClassifier(kernel, solver=CG(n_probes=64), random_state=0).fit(X, y)
    np.testing.assert_allclose(cg.kernel_.theta, exact.kernel_.theta, atol=0.1)
    X_new = data(200, seed=16)[0]
    np.testing.assert_allclose(cg.predict_proba(X_new), exact.predict_proba(X_new), atol=0.01)
    # the subset start: an exact fit on part of the data first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = GaussianProcessClassifier(kernel, solver=CG(subset_start=150), random_state=0).fit(X, y)
    start = started.base_estimator_.solver_info_["start"]
    assert start["samples"] == 150 and len(start["theta"]) == kernel.theta.size
    # the amplitude is nearly flat here (the classes almost separate): the exact likelihood at cg's θ is
    # within a fraction of a nat of the optimum's, and the probabilities close
    best = exact.log_marginal_likelihood_value_
    assert exact.log_marginal_likelihood(started.kernel_.theta) >= best - 0.2
    np.testing.assert_allclose(started.predict_proba(X_new), exact.predict_proba(X_new), atol=0.03)


def test_auto_chooses_cg_where_the_exact_arrays_do_not_fit():
    X, y = data(3000, seed=17)
    model = GaussianProcessClassifier(RBF(1.0, "fixed"), memory_limit="140MB").fit(X, y)
    info = model.base_estimator_.solver_info_  # the exact solver's two 3000 × 3000 arrays: 144 MB
    assert info["solver"] == "cg" and not info["choice"]["candidates"]["cholesky"]["fits"]
    small = GaussianProcessClassifier(RBF(1.0, "fixed")).fit(X[:300], y[:300])
    assert small.base_estimator_.solver_info_["solver"] == "cholesky"
    with pytest.raises(MemoryError, match="conjugate gradients on 300 samples"):
        GaussianProcessClassifier(RBF(1.0, "fixed"), solver="cg", memory_limit=1000).fit(X[:300], y[:300])


def test_cg_kernel_plan_leaves_headroom_but_never_fails_for_it(monkeypatch):
    """The cg Laplace's kernel storage leaves HEADROOM_SHARE of the limit free beside its estimates where cached
    tiles would take it, and plans without it (fewer or no cached tiles) where the limit has no more room (the
    iterative solvers' memory plan, solvers/gaussian_process/memory.py)."""
    from fastkpca.engines.local import LocalSamples
    from fastkpca.operators.storage import fixed_bytes
    from fastkpca.solvers.gaussian_process import memory

    X, y = data(1200, seed=4)
    plans = []
    plan = LocalSamples.plan

    def spy(self, kernel, **kwargs):
        plans.append((kwargs["other_bytes"], plan(self, kernel, **kwargs)))
        return plans[-1][1]

    monkeypatch.setattr(LocalSamples, "plan", spy)
    kernel = RBF(1.0, "fixed")
    fixed = fixed_bytes(X.shape[0], X.shape[1], 8)
    share = memory.HEADROOM_SHARE
    limit = 400 * 2**20
    for roomy in (True, False):
        plans.clear()
        model = GaussianProcessClassifier(kernel, solver=CG(n_probes=8, preconditioner_rank=512), memory_limit=limit,
                                          random_state=0)  # a rank that does not move with the limit
        model.fit(X, y)
        working = model.base_estimator_._solver._working_bytes()
        headroom = int(share * limit)
        assert plans
        for other, chosen in plans:
            assert other == working + (headroom if roomy else 0)
            assert chosen.kernel_bytes <= limit - fixed - other
        if roomy:
            assert plans[0][1].storage == "packed"
            # next: a limit with room for half the headroom beside the estimates (at the same rank)
            limit = int((fixed + working) / (1 - share / 2))
        else:
            assert plans[0][1].storage == "cached" and working + headroom + fixed > limit


def test_cg_variances_plan_the_kernel_beside_their_own_blocks(monkeypatch):
    """The predictive variances' kernel plan counts CG's blocks on the chunk of test points and the chunk itself
    (the probes' blocks are the fit's), and under a limit too small for a wide chunk beside the kernel's
    working copies the chunk narrows; the variances are the same either way."""
    from fastkpca.engines.local import LocalSamples
    from fastkpca.operators.storage import fixed_bytes
    from fastkpca.solvers.gaussian_process import laplace_iterative

    X, y = data(500, seed=6)
    X_new = data(100, seed=7)[0]  # two chunks under the 100MB limit (64, 36), fifty under the tight one
    model = GaussianProcessClassifier(RBF(1.0, "fixed"), solver=CG(n_probes=8), memory_limit="100MB",
                                      random_state=0).fit(X, y)
    solver = model.base_estimator_._solver
    reference = model.predict_proba(X_new)
    plans, widths = [], []
    plan, pcg = LocalSamples.plan, laplace_iterative.pcg

    def plan_spy(self, kernel, **kwargs):
        plans.append(kwargs["other_bytes"])
        return plan(self, kernel, **kwargs)

    def pcg_spy(operator, B, **kwargs):
        widths.append(B.shape[1])
        return pcg(operator, B, **kwargs)

    monkeypatch.setattr(LocalSamples, "plan", plan_spy)
    monkeypatch.setattr(laplace_iterative, "pcg", pcg_spy)
    n = len(X)

    def loop_chunk(limit):  # latent_variance's first choice, which does not count the samples' copies
        chunk = 1
        while chunk < len(X_new) and solver._working_bytes(2 * chunk) + 8 * n * 2 * chunk <= limit:
            chunk *= 2
        return chunk

    fixed = fixed_bytes(n, X.shape[1], 8)
    tight = next(limit for limit in range(64 * 2**20, 200 * 2**20, 2**20)
                 if solver._working_bytes(loop_chunk(limit)) + 8 * n * loop_chunk(limit) + fixed > limit
                 and solver._working_bytes(1) + 8 * n + fixed <= limit)
    for limit in (solver.limit, tight):
        plans.clear()
        widths.clear()
        solver.limit = limit
        np.testing.assert_allclose(model.predict_proba(X_new), reference, atol=1e-6)
        chunk = widths[0]
        assert all(w <= chunk for w in widths) and sum(widths) == len(X_new)
        assert plans[-1] >= solver._working_bytes(chunk) + 8 * n * chunk
        assert solver._working_bytes(chunk) + 8 * n * chunk + fixed <= limit
        if limit == tight:
            assert chunk < loop_chunk(limit)


@pytest.mark.parametrize("n", [1, 63, 130])
def test_native_passes_equal_their_formulas(n):
    """laplace_system_into: B = I + S K S; laplace_weights_in_place: Ω from B⁻¹ in the upper triangle, whole and
    symmetric (tile edges at 64)."""
    from fastkpca import _native

    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    K = A @ A.T
    s, a, u, v = (rng.uniform(0, 0.5, n) if i == 0 else rng.standard_normal(n) for i in range(4))
    B = np.empty_like(K)
    _native.core.laplace_system_into(K, s, B, 2)
    np.testing.assert_allclose(B, np.eye(n) + s[:, None] * K * s[None, :], rtol=1e-15, atol=1e-15)
    inverse = np.linalg.inv(B)
    W = np.triu(inverse) + np.tril(rng.standard_normal((n, n)), -1)  # only the upper triangle is read
    _native.core.laplace_weights_in_place(W, s, a, u, v, 2)
    expected = 0.5 * (np.outer(a, a) - s[:, None] * inverse * s[None, :]) + 0.5 * (np.outer(u, v) + np.outer(v, u))
    np.testing.assert_allclose(W, expected, rtol=1e-13, atol=1e-15)
    assert np.array_equal(W, W.T)


def test_cg_subset_start_with_a_rare_class():
    """A subset that misses the rare class gives no exact fit to start from: the kernel's θ is used instead,
    and the start says why (a crash before: 'requires 2 classes')."""
    X, _ = data(400, seed=18)
    y = np.zeros(400, dtype=int)
    y[[5, 250]] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GaussianProcessClassifier(C(1.0) * RBF(1.0), solver=CG(subset_start=100, n_probes=8),
                                          random_state=0).fit(X, y)
    start = model.base_estimator_.solver_info_["start"]
    assert start == {"samples": 100, "skipped": "the subset holds one class"}  # random_state 0 draws no 1
    assert np.all(np.isfinite(model.predict_proba(X)))


def test_cg_subset_start_through_a_cg_subset():
    """Where n exceeds SUBSET_CHAIN times subset_start, the start is a cg fit on √(subset_start·n) samples, itself
    started from an exact fit on subset_start; the fit climbs from there (the exact likelihood of its θ above
    the start's)."""
    X, y = data(500, seed=23)
    kernel = C(1.0) * RBF([1.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GaussianProcessClassifier(kernel, solver=CG(subset_start=45, n_probes=16), random_state=0).fit(X, y)
    start = model.base_estimator_.solver_info_["start"]
    assert start["samples"] == int(np.sqrt(45 * 500)) and start["solver"] == "cg"
    assert start["start"]["samples"] == 45 and start["start"]["solver"] == "cholesky"
    exact = GaussianProcessClassifier(kernel, solver="cholesky", optimizer=None).fit(X, y)
    assert exact.log_marginal_likelihood(model.kernel_.theta) > exact.log_marginal_likelihood(start["theta"])


def test_cg_predictions_at_a_large_amplitude():
    """At a large amplitude K*ᵀ(y − π) multiplies the mode's error by the amplitude and n: the cg model's mean
    is K*ᵀa (with y − π this case was 0.28 off the exact model in probability)."""
    X, y = data(1500, seed=19)
    kernel = C(5000.0, "fixed") * RBF([2.0, 3.0, 2.5], "fixed")
    exact = GaussianProcessClassifier(kernel, solver="cholesky").fit(X, y)
    cg = GaussianProcessClassifier(kernel, solver="cg", random_state=0).fit(X, y)
    X_new = data(200, seed=20)[0]
    mean, _ = cg.latent_mean_and_variance(X_new)
    exact_mean, _ = exact.latent_mean_and_variance(X_new)
    np.testing.assert_allclose(mean, exact_mean, atol=1e-3 * np.abs(exact_mean).max())
    np.testing.assert_allclose(cg.predict_proba(X_new), exact.predict_proba(X_new), atol=1e-4)


def test_a_users_likelihood_reports_its_standard_error():
    """log_marginal_likelihood(θ) by cg reports the value's standard error (the probes' of log det B), and is
    within three of them of the exact value; more probes where the tolerance asks for them; the gradient's
    standard errors (batch means), within five of which it is of the exact gradient; the exact solver's are 0
    and None."""
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    y = np.sin(3 * X[:, 0]) + 0.3 * rng.standard_normal(300) > 0
    kernel = ConstantKernel(4.0) * RBF(np.full(3, 0.3))
    theta = kernel.theta + 0.1
    exact = GaussianProcessClassifier(kernel, optimizer=None, solver="cholesky").fit(X, y)
    expected, expected_gradient = exact.log_marginal_likelihood(theta, eval_gradient=True)
    assert exact.base_estimator_.log_marginal_likelihood_info_["standard_error"] == 0.0
    assert exact.base_estimator_.log_marginal_likelihood_info_["gradient_standard_error"] is None
    model = GaussianProcessClassifier(kernel, optimizer=None, solver=CG(preconditioner_rank=16, likelihood_rtol=None),
                                      random_state=0).fit(X, y)
    model.log_marginal_likelihood(theta)
    first = model.base_estimator_.log_marginal_likelihood_info_
    assert first["probes"] == 32 and first["standard_error"] > 0
    model.set_params(solver__likelihood_rtol=first["relative_standard_error"] / 3)
    model.base_estimator_.set_params(likelihood_rtol=first["relative_standard_error"] / 3)
    value, gradient = model.log_marginal_likelihood(theta, eval_gradient=True)
    info = model.base_estimator_.log_marginal_likelihood_info_
    assert info["reached"] and info["probes"] > 32
    assert abs(value - expected) <= 3 * info["standard_error"], (value, expected, info["standard_error"])
    errors = info["gradient_standard_error"]
    assert errors.shape == theta.shape and np.all(errors > 0)
    assert np.all(np.abs(gradient - expected_gradient) <= 5 * errors), (gradient, expected_gradient, errors)
    # the groups' errors are the probes' scatter, falling as 1/√p: with the fit's 32 probes alone (a sixteenth or
    # less of the above) they are larger, and still cover the gradient's error
    model.base_estimator_.set_params(likelihood_rtol=1.0)
    few_value, few_gradient = model.log_marginal_likelihood(theta, eval_gradient=True)
    few = model.base_estimator_.log_marginal_likelihood_info_
    assert few["probes"] == 32 and info["probes"] >= 16 * 32
    assert few["gradient_standard_error"].sum() > 2 * errors.sum(), (few["gradient_standard_error"], errors)
    assert np.all(np.abs(few_gradient - expected_gradient) <= 5 * few["gradient_standard_error"])


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan])
def test_likelihood_rtol_is_checked(bad):
    X = np.random.default_rng(0).standard_normal((20, 2))
    with pytest.raises(ValueError, match="likelihood_rtol"):
        GaussianProcessClassifier(solver=CG(likelihood_rtol=bad)).fit(X, X[:, 0] > 0)
