"""Support vector machines (SVC, NuSVC, SVR, NuSVR, OneClassSVM): the dual's KKT conditions and optimum against a
dense reference, LIBSVM's answers (scikit-learn's classes in the same process) for every formulation, kernel,
weight, dtype and layout, the batched solver against the whole-problem one, multi-class shapes, probabilities,
pickling, scikit-learn's estimator checks, and bad input (its own test modules: test_sklearn_suites.py)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse
from sklearn import svm as sk
from sklearn.datasets import make_blobs, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import fastkpca
from fastkpca import _native
from fastkpca.solvers import svm as solvers

TIGHT = 1e-6


def _classification(n=300, d=6, classes=2, seed=0):
    X, y = make_classification(n, d, n_informative=min(d, 4), n_redundant=0, n_classes=classes,
                               n_clusters_per_class=1, flip_y=0.05, random_state=seed)
    return (X - X.mean(0)) / X.std(0), y


def _relative(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


# ------------------------------------------------------------------------------ the dual, from first principles

def _reference_dual(K, y, C):
    """The C-SVC dual min ½αᵀQα - 1ᵀα, yᵀα = 0, 0 <= α <= C solved tightly by SLSQP (an independent method)."""
    from scipy.optimize import minimize

    Q = (y[:, None] * y[None, :]) * K
    n = y.shape[0]
    result = minimize(lambda a: 0.5 * a @ Q @ a - a.sum(), np.zeros(n), jac=lambda a: Q @ a - 1,
                      bounds=[(0, C)] * n, constraints=[{"type": "eq", "fun": lambda a: y @ a, "jac": lambda a: y}],
                      method="SLSQP", options={"ftol": 1e-14, "maxiter": 2000})
    return result.x, 0.5 * result.x @ Q @ result.x - result.x.sum()


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_kkt_and_optimum_against_a_dense_reference(kernel):
    X, y = _classification(60, 3, seed=1)
    model = fastkpca.SVC(kernel=kernel, C=2.0, tol=1e-8, degree=2, gamma=0.3, coef0=1.0).fit(X, y)
    signs = np.where(y == model.classes_[1], 1.0, -1.0)
    alpha = np.zeros(len(y))
    alpha[model.support_] = np.abs(model.dual_coef_[0])
    assert np.all(np.sign(model.dual_coef_[0]) == signs[model.support_])
    K = {"linear": X @ X.T, "rbf": np.exp(-0.3 * ((X[:, None] - X[None]) ** 2).sum(-1)),
         "poly": (0.3 * X @ X.T + 1.0) ** 2}[kernel]
    # KKT from the fitted attributes: y f(x) >= 1 at α = 0, = 1 when free, <= 1 at C; Σ y α = 0.
    margin = signs * model.decision_function(X)
    assert abs(signs @ alpha) < 1e-9
    at_zero, at_c = alpha == 0, alpha >= 2.0 - 1e-12
    free = ~at_zero & ~at_c
    assert np.all(margin[at_zero] >= 1 - 1e-6)
    assert np.all(margin[at_c] <= 1 + 1e-6)
    assert np.abs(margin[free] - 1).max() < 1e-6
    reference, objective = _reference_dual(K, signs, 2.0)
    Q = (signs[:, None] * signs[None, :]) * K
    assert 0.5 * alpha @ Q @ alpha - alpha.sum() <= objective + 1e-6 * abs(objective)
    assert np.abs(K[:, model.support_] @ model.dual_coef_[0] * -1 - (K @ (reference * signs)) * -1).max() < 1e-3


# ----------------------------------------------------------------------------------- LIBSVM's answers

ESTIMATORS = {
    "SVC": (fastkpca.SVC, sk.SVC, {"C": 3.0}),
    "SVC-weighted": (fastkpca.SVC, sk.SVC, {"C": 1.0, "class_weight": {0: 0.3, 1: 2.0}}),
    "NuSVC": (fastkpca.NuSVC, sk.NuSVC, {"nu": 0.3}),
    "SVR": (fastkpca.SVR, sk.SVR, {"C": 3.0, "epsilon": 0.05}),
    "NuSVR": (fastkpca.NuSVR, sk.NuSVR, {"C": 3.0, "nu": 0.4}),
    "OneClassSVM": (fastkpca.OneClassSVM, sk.OneClassSVM, {"nu": 0.2}),
}


def _data(name, n=240, d=5, classes=2, seed=0):
    if name in ("SVR", "NuSVR"):
        X, y = make_regression(n, d, noise=5.0, random_state=seed)
        return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()
    X, y = _classification(n, d, classes, seed)
    return (X + 1.5 if name == "OneClassSVM" else X), y  # a one-class model of centred data is degenerate


def _values(model, X):
    return model.predict(X) if hasattr(model, "epsilon") or isinstance(model, (fastkpca.SVR, fastkpca.NuSVR)) \
        else model.decision_function(X)


@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid"])
def test_decision_function_equals_libsvm(name, kernel):
    ours_cls, theirs_cls, params = ESTIMATORS[name]
    X, y = _data(name)
    extra = {"gamma": 0.1, "coef0": 0.5, "degree": 3} if kernel in ("poly", "sigmoid") else {}
    ours = ours_cls(kernel=kernel, tol=TIGHT, **params, **extra).fit(X, y)
    theirs = theirs_cls(kernel=kernel, tol=TIGHT, **params, **extra).fit(X, y)
    Xt = _data(name, 80, seed=7)[0]
    scale = np.std(y) if name in ("SVR", "NuSVR") else None
    if scale is not None:
        assert np.abs(ours.predict(Xt) - theirs.predict(Xt)).max() <= 1e-4 * scale
    elif kernel == "sigmoid" and name == "NuSVC":
        # An indefinite kernel (this one's least eigenvalue is -4.5) makes the dual non-convex: a kernel entry
        # rounded differently (Eigen's tanh against the C library's) leads LIBSVM's iteration to another
        # stationary point. The same predictions, nearly.
        assert np.mean(ours.predict(Xt) == theirs.predict(Xt)) >= 0.95
        return
    elif name == "NuSVC":
        _assert_nu_svc_is_libsvms(ours, theirs, X, y, Xt, kernel, extra)
    else:
        assert _relative(ours.decision_function(Xt), theirs.decision_function(Xt)) < 1e-4
        assert np.array_equal(ours.predict(Xt), theirs.predict(Xt))
    # The same support set, but for vectors on the border (α within 1e-4·C of a bound).
    assert len(set(ours.support_) ^ set(theirs.support_)) <= max(2, 0.02 * len(theirs.support_))


def _assert_nu_svc_is_libsvms(ours, theirs, X, y, Xt, kernel, extra):
    """A binary ν-SVC against LIBSVM's: the same optimum, offsets that meet the KKT conditions, the same predictions.

    Its decision function is (Σ α_t y_t k(x_t, x) - ρ)/r, where each sign's offset r_± is the mean gradient of its
    free variables, or, where a sign has none, the middle of the interval its variables at their bounds leave
    (LIBSVM's rule). Which of the two applies can turn on one rounding: on the linear kernel here, LIBSVM's
    iteration leaves one variable of the positive sign at 1 - 1.1e-16, free, which alone sets r_+; an iteration whose
    multiply-adds round otherwise (this library's baseline build, without FMA) puts it on its bound, and r_+ is then
    the middle of [1.6797, 1.6993]: a decision function 0.2% from LIBSVM's, and as optimal."""
    from sklearn.metrics.pairwise import pairwise_kernels

    K = pairwise_kernels(X, metric=kernel, filter_params=True, **{"gamma": theirs._gamma, **extra})
    nu_l = ours.nu * len(X)  # Σ α_t of LIBSVM's problem (0 <= α_t <= 1), whose solution is divided by r

    def alpha_of(model):  # α_t y_t from the coefficients α_t y_t / r
        coef = np.zeros(len(X))
        coef[model.support_] = model.dual_coef_[0]
        return coef * nu_l / np.abs(coef).sum()

    a_ours, a_theirs = alpha_of(ours), alpha_of(theirs)
    assert 0.5 * a_ours @ K @ a_ours == pytest.approx(0.5 * a_theirs @ K @ a_theirs, rel=1e-6)
    # ours meets the KKT conditions on its margins y_t f(x_t): 1 for the free variables, at most 1 at the upper
    # bound, at least 1 at zero (a variable within 1e-9 of a bound counts as on it: an inequality it meets too)
    margin = np.where(y == ours.classes_[1], 1.0, -1.0) * ours.decision_function(X)
    alpha = np.abs(a_ours)
    at_zero, at_upper = alpha <= 1e-9, alpha >= 1 - 1e-9
    free = ~at_zero & ~at_upper
    assert free.any() and np.all(np.abs(margin[free] - 1) <= 1e-5)
    assert np.all(margin[at_upper] <= 1 + 1e-5) and np.all(margin[at_zero] >= 1 - 1e-5)
    # the same predictions where both decision functions are clear of the boundary
    f_ours, f_theirs = ours.decision_function(Xt), theirs.decision_function(Xt)
    clear = np.minimum(np.abs(f_ours), np.abs(f_theirs)) > 1e-2
    assert clear.mean() > 0.9 and np.array_equal(ours.predict(Xt)[clear], theirs.predict(Xt)[clear])


@pytest.mark.parametrize("shape", ["ovo", "ovr"])
@pytest.mark.parametrize("cls", ["SVC", "NuSVC"])
def test_multiclass_equals_libsvm(shape, cls):
    ours_cls, theirs_cls, params = ESTIMATORS[cls]
    X, y = _classification(300, 5, classes=4, seed=3)
    ours = ours_cls(tol=TIGHT, decision_function_shape=shape, **params).fit(X, y)
    theirs = theirs_cls(tol=TIGHT, decision_function_shape=shape, **params).fit(X, y)
    Xt = _classification(100, 5, classes=4, seed=4)[0]
    assert ours.decision_function(Xt).shape == theirs.decision_function(Xt).shape
    assert _relative(ours.decision_function(Xt), theirs.decision_function(Xt)) < 1e-4
    assert np.array_equal(ours.predict(Xt), theirs.predict(Xt))
    assert np.array_equal(ours.n_support_, theirs.n_support_) or \
        np.abs(ours.n_support_ - theirs.n_support_).max() <= 2
    assert ours.dual_coef_.shape[0] == 3 and ours.intercept_.shape == (6,) and ours.n_iter_.shape == (6,)


@pytest.mark.parametrize("kernel", ["laplacian", "matern32", "cosine"])
def test_fastkpca_kernels_equal_libsvm_on_their_matrix(kernel):
    X, y = _classification(200, 4, seed=5)
    Xt = _classification(60, 4, seed=6)[0]
    ours = fastkpca.SVC(kernel=kernel, gamma=0.4, tol=TIGHT).fit(X, y)
    K = fastkpca.gram(X, kernel=kernel, gamma=0.4)
    theirs = sk.SVC(kernel="precomputed", tol=TIGHT).fit(K, y)
    Kt = fastkpca.gram(Xt, X, kernel=kernel, gamma=0.4)
    assert _relative(ours.decision_function(Xt), theirs.decision_function(Kt)) < 1e-4


def test_precomputed_callable_and_kernel_object_agree():
    from sklearn.gaussian_process.kernels import RBF

    X, y = _classification(150, 4, seed=8)
    Xt = _classification(40, 4, seed=9)[0]
    rbf = fastkpca.SVC(kernel="rbf", gamma=0.5, tol=TIGHT).fit(X, y)
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    Kt = np.exp(-0.5 * ((Xt[:, None] - X[None]) ** 2).sum(-1))
    pre = fastkpca.SVC(kernel="precomputed", tol=TIGHT).fit(K, y)
    fun = fastkpca.SVC(kernel=lambda a, b: np.exp(-0.5 * ((a[:, None] - b[None]) ** 2).sum(-1)), tol=TIGHT).fit(X, y)
    obj = fastkpca.SVC(kernel=RBF(length_scale=1.0), tol=TIGHT).fit(X, y)
    expected = rbf.decision_function(Xt)
    assert _relative(pre.decision_function(Kt), expected) < 1e-4
    assert _relative(fun.decision_function(Xt), expected) < 1e-4
    assert _relative(obj.decision_function(Xt), expected) < 1e-4


@pytest.mark.parametrize("name", ["SVC", "SVR", "OneClassSVM"])
@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_sparse_equals_dense(name, layout):
    ours_cls, _, params = ESTIMATORS[name]
    X, y = _data(name, 200, 6, seed=2)
    X[np.abs(X) < 0.7] = 0.0
    dense = ours_cls(tol=TIGHT, gamma=0.2, **params).fit(X, y)
    sp = ours_cls(tol=TIGHT, gamma=0.2, **params).fit(sparse.csr_matrix(X).asformat(layout), y)
    assert sparse.issparse(sp.support_vectors_) and sparse.issparse(sp.dual_coef_)
    assert np.array_equal(dense.support_, sp.support_)
    assert _relative(sp.dual_coef_.toarray(), dense.dual_coef_) < 1e-6
    assert _relative(_values(sp, sparse.csr_matrix(X)), _values(dense, X)) < 1e-6


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), dtype=st.sampled_from(["float64", "float32"]), order=st.sampled_from("CF"),
       C=st.sampled_from([0.05, 1.0, 30.0]), weighted=st.booleans())
def test_dtypes_layouts_and_weights_match_libsvm(seed, dtype, order, C, weighted):
    X, y = _classification(120, 4, seed=seed)
    X = np.asarray(X, dtype=dtype, order=order)
    w = np.random.default_rng(seed).uniform(0.2, 3.0, y.shape[0]) if weighted else None
    before = X.copy()
    ours = fastkpca.SVC(C=C, tol=TIGHT).fit(X, y, sample_weight=w)
    theirs = sk.SVC(C=C, tol=TIGHT).fit(X.astype(np.float64), y, sample_weight=w)
    assert np.array_equal(X, before)  # the user's array untouched
    tolerance = 1e-4 if dtype == "float64" else 2e-3  # float32 samples: the kernel evaluated in float32
    assert _relative(ours.decision_function(X), theirs.decision_function(X.astype(np.float64))) < tolerance


def test_batched_float32_columns_match_libsvm():
    """A problem too large to be taken whole (6,000 samples): working sets, shrinking and columns evaluated in
    float32 from a copy of the float64 samples; at tol 1e-6 the decision function is still LIBSVM's."""
    X, y = make_classification(6500, 32, n_informative=16, flip_y=0.05, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    ours = fastkpca.SVC(tol=TIGHT).fit(X[:6000], y[:6000])
    theirs = sk.SVC(tol=TIGHT).fit(X[:6000], y[:6000])
    info = ours.solver_info_["pairs"][0]
    assert info["columns_dtype"] == "float32" and info["working_set"] < 6000 and info["reconstructions"] >= 1
    assert info["choice"]["picked"] == "batched" and ours.solver_info_["choice"] == info["choice"]
    assert _relative(ours.decision_function(X[6000:]), theirs.decision_function(X[6000:])) < 1e-4
    assert set(ours.support_) == set(theirs.support_)


def test_batched_solve_is_the_same_on_one_thread_and_two():
    """20,000 samples: large enough that the solver's team splits every stage (the kernel columns, the sweeps,
    shrinking's test, the cache's compaction in waves, the working set's block), small enough for a test. Every
    stage's rounding is fixed by its blocks, so two threads give one thread's solution bit for bit; a race in
    any of them would show here."""
    X, y = make_classification(20_000, 20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a corrupted column stalls the solve: fail, never hang
        one = fastkpca.SVC(n_jobs=1, max_iter=200_000).fit(X, y)
        two = fastkpca.SVC(n_jobs=2, max_iter=200_000).fit(X, y)
    info = two.solver_info_["pairs"][0]
    assert info["choice"]["picked"] == "batched" and info["min_rows"] < 20_000 // 4  # shrunk, compacted twice
    assert np.array_equal(one.dual_coef_, two.dual_coef_) and np.array_equal(one.support_, two.support_)
    assert one.intercept_[0] == two.intercept_[0]
    assert one.solver_info_["pairs"][0]["iterations"] == info["iterations"]


def test_progress_reports_and_verbose(capsys):
    X, y = _classification(5000, 4, seed=18)
    seen = []
    model = fastkpca.SVC(verbose=True)
    model.callback = lambda stage, info: seen.append((stage, info))
    model.fit(X, y)
    assert "[LibSVM]" in capsys.readouterr().out
    steps = [info for stage, info in seen if stage == "iteration"]
    assert steps and steps[-1]["passes"] == model.solver_info_["pairs"][0]["outer_steps"]
    assert seen[-1][0] == "done" and seen[-1][1]["support_vectors"] == len(model.support_)


def test_zero_weights_leave_samples_out_and_support_indexes_the_input():
    X, y = _classification(100, 3, seed=11)
    w = np.ones(100)
    w[::7] = 0.0
    ours = fastkpca.SVC(kernel="linear", tol=TIGHT).fit(X, y, sample_weight=w)
    kept = w > 0
    reference = fastkpca.SVC(kernel="linear", tol=TIGHT).fit(X[kept], y[kept])
    assert np.array_equal(ours.support_, np.flatnonzero(kept)[reference.support_])
    assert np.array_equal(ours.support_vectors_, X[ours.support_])
    assert _relative(ours.dual_coef_, reference.dual_coef_) < 1e-9


# --------------------------------------------------------------------- the batched solver and its settings

#: Each formulation (C = 2 for C-SVC and the regressions, and their bounds) and its problem on the samples below.
FORMULATIONS = {
    "c_svc": (lambda: solvers.CClassification(2.0, np.ones(2)), lambda X, y: dict(y=np.where(y > 0, 1, -1),
                                                                                 upper=np.full(700, 2.0))),
    "nu_svc": (lambda: solvers.NuClassification(0.3), lambda X, y: dict(y=np.where(y > 0, 1, -1), upper=np.ones(700))),
    "one_class": (lambda: solvers.OneClass(0.2), lambda X, y: dict(upper=np.ones(700))),
    "epsilon_svr": (lambda: solvers.EpsilonRegression(2.0, 0.1),
                    lambda X, y: dict(upper=np.full(700, 2.0), targets=X[:, 0] + 0.3 * X[:, 1] ** 2)),
    "nu_svr": (lambda: solvers.NuRegression(2.0, 0.3),
               lambda X, y: dict(upper=np.full(700, 2.0), targets=X[:, 0] + 0.3 * X[:, 1] ** 2)),
}


@pytest.mark.parametrize("formulation", list(FORMULATIONS))
@pytest.mark.parametrize("shrinking", [True, False])
def test_batched_solver_equals_the_whole_problem(formulation, shrinking):
    """Working sets of 16 variables with a cache of 40 columns (evictions, shrinking with rebuilt gradients)
    reach the whole-problem solution (LIBSVM's iteration) to the tolerance."""
    X, y = _classification(700, 5, seed=12)
    X = np.ascontiguousarray(X)
    columns = _native.core.svm_dense_columns(X, "rbf", 0.2, 3, 0, 0)
    samples = np.arange(700, dtype=np.int64)
    make, problem_of = FORMULATIONS[formulation]
    problem = problem_of(X, y)
    whole = solvers.solve(columns, make(), samples, solvers.DualSettings(tol=1e-8, shrinking=False, solver="whole"),
                          **problem)
    small = solvers.DualSettings(tol=1e-8, shrinking=shrinking, working_set=16, solver="batched",
                                 cache_bytes=40 * 700 * 4)
    batched = solvers.solve(columns, make(), samples, small, **problem)
    assert whole.stats["choice"]["picked"] == "whole" and batched.stats["choice"]["picked"] == "batched"
    assert whole.stats["working_set"] == (1400 if "svr" in formulation else 700)
    assert batched.stats["working_set"] == 16 and batched.stats["outer_steps"] > 10
    assert batched.stats["columns"] > 40  # the cache evicted and evaluated again
    assert abs(batched.stats["gap"]) < 1e-8 and batched.status == 0
    f_whole = K_product(X, whole.coef) - whole.rho
    f_batched = K_product(X, batched.coef) - batched.rho
    assert _relative(f_batched, f_whole) < 1e-5


def test_gradients_rebuilt_after_shrinking_give_the_objective():
    """Rows dropped by shrinking keep the gradients they had, brought up to date by the moves since their drop when
    every row comes back: the solve's objective (½αᵀQα + pᵀα, read from every variable's gradient) equals the one
    NumPy computes from its solution in float64."""
    X, y = _classification(700, 5, seed=12)
    X = np.ascontiguousarray(X)
    columns = _native.core.svm_dense_columns(X, "rbf", 0.2, 3, 0, 0)
    settings = solvers.DualSettings(tol=1e-8, shrinking=True, working_set=16, solver="batched",
                                    cache_bytes=40 * 700 * 4)
    solution = solvers.solve(columns, solvers.CClassification(2.0, np.ones(2)), np.arange(700, dtype=np.int64),
                             settings, y=np.where(y > 0, 1, -1), upper=np.full(700, 2.0))
    # two drops at least (each takes half the rows or more), and every one's gradients by the moves since: fewer
    # kernel entries than a product over every nonzero α for the dropped rows
    stats = solution.stats
    assert stats["reconstructions"] >= 1 and stats["min_rows"] < 175 and stats["rows"] == 700
    coef = solution.coef  # y_t α_t per sample
    assert stats["product_entries"] < (700 - stats["min_rows"]) * np.count_nonzero(coef)
    exact = 0.5 * coef @ K_product(X, coef) - np.abs(coef).sum()
    assert abs(stats["obj"] - exact) <= 1e-7 * abs(exact)
    # every variable's gradient, α = 0 ones included: the float64 gradient has no violating pair beyond the float32
    # columns' rounding
    sign = np.where(y > 0, 1.0, -1.0)
    alpha = np.abs(coef)
    s = -sign * (sign * K_product(X, coef) - 1.0)  # s_t = -y_t G_t, G = Qα - 1
    up = np.where(sign > 0, alpha < 2.0, alpha > 0)
    low = np.where(sign > 0, alpha > 0, alpha < 2.0)
    assert s[up].max() - s[low].min() < 1e-5


def K_product(X, coef):
    return np.exp(-0.2 * ((X[:, None] - X[None]) ** 2).sum(-1)) @ coef


def test_the_duals_sweeps_are_priced_at_the_cores_peak(monkeypatch):
    """An SMO sweep runs in the core's vectors: its seconds are SVM_SWEEP_FLOPS at the one-thread FMA peak, so a core
    twice as wide takes half of them on either candidate, and the choice between them does not move."""
    from fastkpca.solvers import choice

    priced = {}
    for peak in (4e10, 8e10):
        monkeypatch.setattr(choice, "machine", lambda peak=peak: choice.Machine(2e10, 2, 2, peak, 0.0))
        record = choice.support_vector_machine("auto", variables=20_000, whole_bytes=10, batched_bytes=5,
                                               every_column_cached=True, memory_limit=100)
        priced[peak] = (record.picked, {c.name: c.seconds for c in record.candidates})
    assert priced[4e10][0] == priced[8e10][0] == "batched"
    assert priced[4e10][1]["whole"] == pytest.approx(20_000**2 * choice.SVM_SWEEP_FLOPS / 4e10)
    for name in ("whole", "batched"):
        assert priced[4e10][1][name] == pytest.approx(2 * priced[8e10][1][name])


def test_whole_or_batched_is_the_cost_models_choice():
    """solvers/choice.py decides whether a solve takes the whole problem as one working set: up to 1,024 variables
    where every column fits the cache and the limit, else working sets; a name forces it; the fit records it."""
    from fastkpca.solvers import choice

    def pick(requested="auto", variables=1024, whole_bytes=10, cached=True):
        return choice.support_vector_machine(requested, variables=variables, whole_bytes=whole_bytes, batched_bytes=5,
                                             every_column_cached=cached, memory_limit=100).picked

    assert pick() == "whole" and pick(variables=1025) == "batched"
    # the crossover is where SVM_BATCHED_SWEEPS·v + SVM_BATCHED_SHARE·v² meets v², and it stays there
    assert choice.SVM_BATCHED_SWEEPS / (1 - choice.SVM_BATCHED_SHARE) == 1024
    priced = choice.support_vector_machine("auto", variables=10**6, whole_bytes=10, batched_bytes=5,
                                           every_column_cached=True, memory_limit=100).as_dict()["candidates"]
    ratio = priced["batched"]["seconds"] / priced["whole"]["seconds"]
    assert ratio == pytest.approx(choice.SVM_BATCHED_SHARE, abs=1e-3)
    assert pick(cached=False) == "batched" and pick(whole_bytes=101) == "batched"
    assert pick("whole", variables=10**6) == "whole" and pick("batched", variables=10) == "batched"
    X, y = _classification(300, 4, seed=26)
    record = fastkpca.SVC().fit(X, y).solver_info_["choice"]
    assert record["picked"] == "whole" and set(record["candidates"]) == {"whole", "batched"}
    assert fastkpca.SVC(cache_size=0.01).fit(X, y).solver_info_["choice"]["picked"] == "batched"
    assert fastkpca.NuSVR().fit(X, X[:, 0]).solver_info_["choice"]["picked"] == "whole"


def test_columns_equal_numpy_on_any_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 7))
    rows = np.sort(rng.choice(300, 120, replace=False)).astype(np.int64)
    cols = rng.choice(300, 40, replace=False).astype(np.int64)
    for kernel, reference in (("rbf", lambda a, b: np.exp(-0.3 * ((a[:, None] - b[None]) ** 2).sum(-1))),
                              ("poly", lambda a, b: (0.3 * a @ b.T + 1.0) ** 3),
                              ("laplacian", lambda a, b: np.exp(-0.3 * np.abs(a[:, None] - b[None]).sum(-1)))):
        for source in (_native.core.svm_dense_columns(X, kernel, 0.3, 3, 1.0, 0),
                       _native.core.svm_sparse_columns(fastkpca.kernels.native.native_operand(sparse.csr_matrix(X)),
                                                       kernel, 0.3, 3, 1.0, 0)):
            out = np.empty((40, 120), dtype=np.float32)
            _native.core.svm_kernel_columns(source, rows, cols, out, 0)
            expected = reference(X[cols], X[rows])
            assert np.abs(out - expected).max() <= 1e-6 * max(1.0, np.abs(expected).max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_column_passes_equal_small_ones(dtype):
    """A pass of 2 MiB of columns or more is written by non-temporal stores (SVM_STREAM_COLUMN_BYTES), each column
    from an unaligned start here (11,999 rows): the same floats as the passes of a few columns each, written by plain
    stores."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((12_000, 5)).astype(dtype)
    rows = np.sort(rng.choice(12_000, 11_999, replace=False)).astype(np.int64)
    cols = rng.choice(12_000, 50, replace=False).astype(np.int64)
    source = _native.core.svm_dense_columns(X, "rbf", 0.3, 3, 1.0, 0)
    whole = np.empty((50, 11_999), dtype=np.float32)
    _native.core.svm_kernel_columns(source, rows, cols, whole, 0)
    assert whole.nbytes >= _native.core.SVM_STREAM_COLUMN_BYTES > 5 * 11_999 * 4
    for c0 in range(0, 50, 5):
        part = np.empty((5, 11_999), dtype=np.float32)
        _native.core.svm_kernel_columns(source, rows, cols[c0:c0 + 5], part, 0)
        np.testing.assert_array_equal(whole[c0:c0 + 5], part)
    x = X.astype(np.float64)
    expected = np.exp(-0.3 * ((x[cols][:, None] - x[rows][None]) ** 2).sum(-1))
    assert np.abs(whole - expected).max() <= (1e-6 if dtype == np.float64 else 1e-5)


def test_nu_problem_with_a_tiny_working_set_still_converges():
    """A ν problem needs both ends of both signs' violations in its working set: asked for 2 variables, the solver
    takes 4, and converges (a working set without them would make no progress)."""
    X, y = _classification(400, 4, seed=21)
    columns = _native.core.svm_dense_columns(np.ascontiguousarray(X), "rbf", 0.3, 3, 0, 0)
    settings = solvers.DualSettings(tol=1e-6, working_set=2, solver="batched", cache_bytes=16 * 400 * 4)
    nu = solvers.NuClassification(0.3)
    small = solvers.solve(columns, nu, np.arange(400), settings, y=np.where(y > 0, 1, -1), upper=np.ones(400))
    whole = solvers.solve(columns, nu, np.arange(400), solvers.DualSettings(tol=1e-6), y=np.where(y > 0, 1, -1),
                          upper=np.ones(400))
    assert small.stats["working_set"] == 4 and small.status == 0
    assert abs(small.rho - whole.rho) < 1e-4 * max(1.0, abs(whole.rho))


def test_a_python_kernel_is_evaluated_once():
    """A callable (and any kernel evaluated in Python) gives its whole matrix once, also for a problem too large to be
    taken whole: its columns are read from it, never evaluated again in float32."""
    X, y = _classification(4500, 3, seed=22)
    calls = []

    def linear(a, b):
        calls.append((len(a), len(b)))
        return a @ b.T

    model = fastkpca.SVC(kernel=linear, C=0.1).fit(X, y)
    assert calls == [(4500, 4500)]
    assert model.solver_info_["pairs"][0]["columns_dtype"] == "float64"


def test_weights_that_empty_a_class_are_refused_by_name():
    X, y = _classification(120, 3, classes=3, seed=23)
    w = np.where(y == 2, 0.0, 1.0)
    with pytest.raises(ValueError, match="class 2 has no sample with a positive weight"):
        fastkpca.SVC().fit(X, y, sample_weight=w)
    Xb, yb = _classification(80, 3, seed=24)
    with pytest.raises(ValueError, match="belong to the same class"):
        fastkpca.SVC(class_weight={0: 0.0}).fit(Xb, yb)


def test_a_callable_on_sparse_samples_keeps_dense_coefficients():
    """scikit-learn's convention: a callable kernel's model is not a sparse model, whatever X is."""
    X, y = _classification(60, 4, seed=25)
    model = fastkpca.SVC(kernel=lambda a, b: (a @ b.T).toarray()).fit(sparse.csr_matrix(X), y)
    assert isinstance(model.dual_coef_, np.ndarray)
    assert np.array_equal(model.predict(sparse.csr_matrix(X)), fastkpca.SVC(kernel="linear").fit(X, y).predict(X))


def test_max_iter_warns_and_reports():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _classification(200, 4, seed=13)
    with pytest.warns(ConvergenceWarning, match=r"Solver terminated early \(max_iter=5\)"):
        model = fastkpca.SVC(max_iter=5).fit(X, y)
    assert model.fit_status_ == 1 and model.n_iter_[0] == 5


def test_memory_limit_too_small_names_the_size():
    X, y = _classification(2000, 4, seed=14)
    with pytest.raises(MemoryError, match="GiB"):
        fastkpca.SVC(memory_limit=20_000).fit(X, y)


def test_cache_size_and_memory_limit_bound_the_cache():
    """1,000 samples: taken whole where every column fits (the cache then holds them all), in working sets within
    a 1 MB cache."""
    X, y = _classification(1000, 4, seed=15)
    small = fastkpca.SVC(cache_size=1, tol=TIGHT).fit(X, y)
    large = fastkpca.SVC(cache_size=None, memory_limit="1GB", tol=TIGHT).fit(X, y)
    assert small.solver_info_["pairs"][0]["cache_slots"] <= 2**20 // (4 * 1000)
    assert small.solver_info_["pairs"][0]["choice"]["picked"] == "batched"
    assert large.solver_info_["pairs"][0]["choice"]["picked"] == "whole"
    assert large.solver_info_["pairs"][0]["cache_slots"] >= 1000
    assert _relative(small.decision_function(X), large.decision_function(X)) < 1e-4


# ---------------------------------------------------------------------------------- classes and shapes

def test_multiclass_pairs_side_by_side_equal_one_at_a_time():
    X, y = _classification(400, 5, classes=5, seed=16)
    together = fastkpca.SVC(n_jobs=2, tol=TIGHT).fit(X, y)
    alone = fastkpca.SVC(n_jobs=1, tol=TIGHT).fit(X, y)
    assert together.solver_info_["side_by_side"] == 2
    assert np.array_equal(together.dual_coef_, alone.dual_coef_)
    assert np.array_equal(together.intercept_, alone.intercept_)


def test_break_ties_and_ovr_shape():
    X, y = make_blobs(120, centers=4, random_state=0)
    model = fastkpca.SVC(decision_function_shape="ovr", break_ties=True).fit(X, y)
    dec = model.decision_function(X)
    assert dec.shape == (120, 4)
    assert np.array_equal(model.predict(X), np.argmax(dec, axis=1))
    with pytest.raises(ValueError, match="break_ties must be False"):
        fastkpca.SVC(decision_function_shape="ovo", break_ties=True).fit(X, y).predict(X)


# -------------------------------------------------------------------------------------- probabilities

@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("classes", [2, 3])
def test_probabilities_log_loss_within_five_percent(classes):
    from sklearn.metrics import log_loss

    X, y = _classification(600, 6, classes=classes, seed=17)
    Xt, yt = X[400:], y[400:]
    X, y = X[:400], y[:400]
    ours = fastkpca.SVC(probability=True, random_state=0).fit(X, y)
    theirs = sk.SVC(probability=True, random_state=0).fit(X, y)
    p = ours.predict_proba(Xt)
    assert p.shape == (Xt.shape[0], classes) and np.allclose(p.sum(1), 1)
    assert np.allclose(np.exp(ours.predict_log_proba(Xt)), p)
    assert log_loss(yt, p) <= 1.05 * log_loss(yt, theirs.predict_proba(Xt))
    assert ours.probA_.shape == (classes * (classes - 1) // 2,)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_coupling_is_scikit_learns(k):
    """The core's coupling (svm/coupling.hpp) gives scikit-learn's probabilities: a fitted scikit-learn classifier's
    Platt sigmoids of its decision values, coupled, are its own predict_proba."""
    from sklearn.svm import SVC as SkSVC

    from fastkpca.solvers.svm import probability

    rng = np.random.default_rng(k)
    X = rng.standard_normal((60 * k, k))
    y = np.argmax(X + 0.5 * rng.standard_normal((60 * k, k)), axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # scikit-learn 1.9 deprecates probability=True
        theirs = SkSVC(probability=True, decision_function_shape="ovo", random_state=0).fit(X, y)
        expected = theirs.predict_proba(X[:20])
        A, B = theirs._probA, theirs._probB
    decisions = theirs.decision_function(X[:20]).reshape(20, -1)
    if k == 2:
        decisions = -decisions  # scikit-learn's binary decision is LIBSVM's negated
    got = probability.class_probabilities(decisions, A, B, k)
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_platt_and_coupling_against_their_definitions():
    from fastkpca.solvers.svm import probability

    rng = np.random.default_rng(0)
    f = rng.standard_normal(400)
    positive = rng.random(400) < 1 / (1 + np.exp(-3 * f))
    A, B = probability.sigmoid_fit(f, positive)
    n1, n0 = positive.sum(), (~positive).sum()
    t = np.where(positive, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    p = 1 / (1 + np.exp(A * f + B))
    assert abs(np.sum((t - p) * f)) < 1e-4 and abs(np.sum(t - p)) < 1e-4  # the gradient vanishes
    r = np.array([[[0, 0.7, 0.6], [0.3, 0, 0.55], [0.4, 0.45, 0]]])
    q = probability.couple(r)[0]
    Q = np.array([[r[0, 1, 0] ** 2 + r[0, 2, 0] ** 2, -r[0, 1, 0] * r[0, 0, 1], -r[0, 2, 0] * r[0, 0, 2]],
                  [-r[0, 0, 1] * r[0, 1, 0], r[0, 0, 1] ** 2 + r[0, 2, 1] ** 2, -r[0, 2, 1] * r[0, 1, 2]],
                  [-r[0, 0, 2] * r[0, 2, 0], -r[0, 1, 2] * r[0, 2, 1], r[0, 0, 2] ** 2 + r[0, 1, 2] ** 2]])
    exact = np.linalg.solve(np.block([[Q, np.ones((3, 1))], [np.ones((1, 3)), np.zeros((1, 1))]]),
                            np.r_[0, 0, 0, 1])[:3]
    assert np.abs(q - exact).max() < 5e-3


# --------------------------------------------------------------------------------- pickling, patching

@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_pickle_round_trip(name):
    ours_cls, _, params = ESTIMATORS[name]
    X, y = _data(name, 150, 4)
    model = ours_cls(**params).fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(_values(again, X), _values(model, X))


def test_patch_sklearn_covers_the_five_classes():
    with fastkpca.sklearn_patched():
        from sklearn import svm

        for name in ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"):
            assert getattr(svm, name) is getattr(fastkpca, name)
    from sklearn import svm

    assert svm.SVC is not fastkpca.SVC


#: scikit-learn declares these checks expected failures of its own five classes (PER_ESTIMATOR_XFAIL_CHECKS):
#: sample weights rescale C, which is not removing or repeating samples to 1e-7; ν-SVC ignores class weights.
EXPECTED = {"check_sample_weight_equivalence_on_dense_data": "weights rescale C (as scikit-learn's own class)",
            "check_sample_weight_equivalence_on_sparse_data": "weights rescale C (as scikit-learn's own class)"}


@pytest.mark.parametrize("estimator", [fastkpca.SVC(), fastkpca.NuSVC(), fastkpca.SVR(), fastkpca.NuSVR(),
                                       fastkpca.OneClassSVM()], ids=lambda e: type(e).__name__)
def test_check_estimator(estimator):
    from sklearn.utils.estimator_checks import check_estimator

    expected = dict(EXPECTED)
    if isinstance(estimator, fastkpca.NuSVC):
        expected["check_class_weight_classifiers"] = "class_weight does not enter ν-SVC's dual (LIBSVM's too)"
    check_estimator(estimator, expected_failed_checks=expected)


# ------------------------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("make, match", [
    (lambda: fastkpca.SVC(C=0), "C must be > 0"),
    (lambda: fastkpca.SVC(C=-1.0), "C must be > 0"),
    (lambda: fastkpca.NuSVC(nu=0.0), "nu must be in"),
    (lambda: fastkpca.NuSVR(nu=1.5), "nu must be in"),
    (lambda: fastkpca.OneClassSVM(nu=-0.1), "nu must be in"),
    (lambda: fastkpca.SVR(epsilon=-1), "epsilon must be >= 0"),
    (lambda: fastkpca.SVC(tol=0), "tol must be > 0"),
    (lambda: fastkpca.SVC(gamma="wide"), "gamma must be one of"),
    (lambda: fastkpca.SVC(kernel="nope"), "kernel must be one of"),
    (lambda: fastkpca.SVC(max_iter=-2), "max_iter must be >= -1"),
    (lambda: fastkpca.SVC(decision_function_shape="ova"), "decision_function_shape must be one of"),
])
def test_bad_parameters_name_the_argument(make, match):
    X, y = _classification(40, 3)
    with pytest.raises(ValueError, match=match):
        make().fit(X, y)


def test_bad_data_raise_clear_errors():
    X, y = _classification(40, 3)
    with pytest.raises(ValueError, match="greater than one"):
        fastkpca.SVC().fit(X, np.zeros(40))
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fastkpca.SVC().fit(bad, y)
    with pytest.raises(ValueError, match="sample_weight"):
        fastkpca.SVC().fit(X, y, sample_weight=np.full(40, np.nan))
    with pytest.raises(ValueError, match="zero or negative weights"):
        fastkpca.SVC().fit(X, y, sample_weight=-np.ones(40))
    with pytest.raises(ValueError, match="square"):
        fastkpca.SVC(kernel="precomputed").fit(X, y)
    with pytest.raises(TypeError, match="Sparse precomputed"):
        fastkpca.SVC(kernel="precomputed").fit(sparse.csr_matrix(X @ X.T), y)
    with pytest.raises(ValueError, match="returned an array of shape"):
        fastkpca.SVR(kernel=lambda a, b: np.ones((1, 1))).fit(X, y)
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        fastkpca.NuSVC(nu=0.95).fit(X, np.r_[np.zeros(35), np.ones(5)])
    model = fastkpca.SVC().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="sparse input"):
        model.predict(sparse.csr_matrix(X))
    pre = fastkpca.SVC(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="40"):
        pre.predict(X @ X[:10].T)
